"""FPX banks: the test bank codes and the real bank codes the sandbox simulates."""

from __future__ import annotations

from typing import Final

#: Test bank codes (DESIGN.md section 4) -> their fixed outcome.
TEST_BANKS: Final[dict[str, str]] = {
    "TEST0001": "succeed",
    "TEST0002": "fail",
    "TEST0003": "delayed_success",  # processing, succeeds after 30 s of sandbox clock
    "TEST0004": "timeout",  # processing, fails with processing_error after 30 s
    "TEST0005": "cancel",  # the customer cancels at the bank
}

#: Bank code -> display name. Real codes send the customer to a simulated bank page.
BANKS: Final[dict[str, str]] = {
    "TEST0001": "Test Bank (succeeds)",
    "TEST0002": "Test Bank (fails)",
    "TEST0003": "Test Bank (delayed success)",
    "TEST0004": "Test Bank (timeout)",
    "TEST0005": "Test Bank (customer cancels)",
    "MB2U0227": "Maybank2u",
    "BCBB0235": "CIMB Clicks",
    "PBB0233": "Public Bank",
    "RHB0218": "RHB Now",
    "HLB0224": "Hong Leong Connect",
    "AMBB0209": "AmBank",
    "BIMB0340": "Bank Islam",
    "ABB0233": "Affin Bank",
    "BKRM0602": "Bank Rakyat",
    "BSN0601": "BSN",
    "OCBC0229": "OCBC Bank",
    "UOB0226": "UOB Bank",
    "SCB0216": "Standard Chartered",
}

REAL_BANKS: Final[tuple[str, ...]] = tuple(code for code in BANKS if code not in TEST_BANKS)
