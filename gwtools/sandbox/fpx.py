"""FPX banks: the test bank codes and the real bank codes the sandbox simulates."""

from __future__ import annotations

from typing import Final

#: Test bank codes (docs/sandbox.md, Test cards and FPX banks) -> how their bank page ends. Like a real bank, a test
#: bank sends the customer to the bank page; there its one button ends the page this way (a
#: customer action of ``domain.customer_action``).
TEST_BANKS: Final[dict[str, str]] = {
    "TEST0001": "complete",  # succeeds
    "TEST0002": "fail",  # fails: payment_method_not_available
    "TEST0003": "delayed",  # processing, succeeds 30 s of sandbox clock later
    "TEST0004": "timeout",  # processing, fails with processing_error 30 s later
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
