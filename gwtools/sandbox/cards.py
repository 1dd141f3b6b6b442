"""Test cards (docs/sandbox.md, Test cards and FPX banks): number -> outcome, brands, Luhn and expiry checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

Outcome = Literal["succeed", "three_d_secure", "processing", "decline", "refund_fails"]


@dataclass(frozen=True, slots=True)
class TestCard:
    number: str
    outcome: Outcome
    code: str | None = None  # error code of a decline
    decline_code: str | None = None
    token: str | None = None  # the ``tok_`` alias of the card


def _d(number: str, code: str, decline: str, token: str) -> TestCard:
    return TestCard(number, "decline", code, decline, token)


TEST_CARDS: Final[dict[str, TestCard]] = {
    c.number: c
    for c in (
        TestCard("4242424242424242", "succeed", token="tok_visa"),
        TestCard("5555555555554444", "succeed", token="tok_mastercard"),
        TestCard("378282246310005", "succeed", token="tok_amex"),
        TestCard("6011111111111117", "succeed", token="tok_discover"),
        TestCard("3566002020360505", "succeed", token="tok_jcb"),
        TestCard("4000002500003155", "three_d_secure", token="tok_threeDSecure"),
        TestCard("4000000000001018", "processing", token="tok_processing"),
        # The sandbox's own: the payment succeeds, each refund of it stays pending one day, then fails.
        TestCard("4000000000005126", "refund_fails", token="tok_refundFail"),
        _d("4000000000000002", "card_declined", "generic_decline", "tok_chargeDeclined"),
        _d("4000000000009995", "card_declined", "insufficient_funds", "tok_insufficientFunds"),
        _d("4000000000009987", "card_declined", "lost_card", "tok_lostCard"),
        _d("4000000000009979", "card_declined", "stolen_card", "tok_stolenCard"),
        _d("4000000000000069", "expired_card", "expired_card", "tok_expiredCard"),
        _d("4000000000000127", "incorrect_cvc", "incorrect_cvc", "tok_incorrectCvc"),
        _d("4000000000000119", "processing_error", "processing_error", "tok_processingError"),
    )
}
#: The sandbox's own declining numbers of the other brands: a brand prefix followed by the last
#: four digits of the Visa number with the same decline (``5100000030000002`` is Mastercard's
#: ``generic_decline``). Declines happen on every brand; with Visa-only declining numbers a
#: history or a demo could only ever show one brand declined.
BRAND_DECLINE_PREFIXES: Final[dict[str, str]] = {
    "mastercard": "510000003000",
    "amex": "37000000000",
    "discover": "601100001000",
    "jcb": "356600004000",
}
_VISA_DECLINES: Final = [c for c in TEST_CARDS.values() if c.outcome == "decline"]
for _prefix in BRAND_DECLINE_PREFIXES.values():
    for _visa in _VISA_DECLINES:
        _number = _prefix + _visa.number[-4:]
        TEST_CARDS[_number] = TestCard(_number, "decline", _visa.code, _visa.decline_code)
TOKENS: Final[dict[str, TestCard]] = {c.token: c for c in TEST_CARDS.values() if c.token}

DECLINE_MESSAGES: Final[dict[str, str]] = {
    "generic_decline": "Your card was declined.",
    "insufficient_funds": "Your card has insufficient funds.",
    "lost_card": "Your card was declined (reported lost).",
    "stolen_card": "Your card was declined (reported stolen).",
    "expired_card": "Your card has expired.",
    "incorrect_cvc": "Your card's security code is incorrect.",
    "processing_error": "An error occurred while processing your card. Try again in a little bit.",
    "live_mode_test_card": "Your card was declined: a test card was used with a live key.",
    "authentication_failed": "The customer did not authenticate the payment (3-D Secure).",
}


def luhn_ok(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def brand(number: str) -> str:
    """Card brand from the number's prefix (the five brands the sandbox knows)."""
    if number.startswith(("34", "37")):
        return "amex"
    if number.startswith("4"):
        return "visa"
    if number[:2] in {"51", "52", "53", "54", "55"} or "2221" <= number[:4] <= "2720":
        return "mastercard"
    if number.startswith(("6011", "65", "644", "645", "646", "647", "648", "649")):
        return "discover"
    if "3528" <= number[:4] <= "3589":
        return "jcb"
    return "unknown"
