"""The payment and refund state machine, as pure functions on internal records.

A record is a plain dict (stored as JSON) in one vocabulary for both variants; ``render``
turns it into the served variant's object. The API and the history generator both call these
functions, so generated histories obey exactly the rules the API enforces.

Internal payment statuses: ``pending`` (variant A, awaiting the customer at checkout),
``requires_action`` (3-D Secure or bank page), ``processing``, ``authorized``, ``succeeded``,
``failed``, ``canceled``, ``expired``.
"""

from __future__ import annotations

import base64
import random
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from gwtools.sandbox.cards import DECLINE_MESSAGES
from gwtools.sandbox.fpx import TEST_BANKS

#: seconds a processing card, or an FPX bank page ending late (TEST0003, TEST0004, ``timeout``),
#: takes to settle
PROCESSING_DELAY: Final = 30
#: seconds until a refund of the refund-failing test card fails
REFUND_FAIL_DELAY: Final = 86_400

Record = dict[str, Any]


BASE62: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # ASCII order
#: prefixes whose ids start with a sequence number, so that id order is creation order
SEQUENTIAL: Final = ("pay", "rfnd", "evt")


class Sequence:
    """A counter shared by the id factories of one store."""

    def __init__(self, start: int = 0) -> None:
        self.value = start

    def next(self) -> int:
        self.value += 1
        return self.value


class Ids:
    """Identifier factory: ``pay_`` etc. + 24 characters of [A-Za-z0-9].

    Payment, refund and event ids begin with 8 base-62 digits of a sequence, so objects
    created in the same second sort newest first by id (lists order by created, then id).
    Seeded, the random part is reproducible (history generator).
    """

    def __init__(self, seed: int | None = None, sequence: Sequence | None = None) -> None:
        self._rng: random.Random | None = None if seed is None else random.Random(seed)
        self.sequence = sequence or Sequence()

    def token(self, n: int = 24) -> str:
        """``n`` characters of [A-Za-z0-9] (n a multiple of 4)."""
        raw = (
            secrets.token_bytes(n * 3 // 4)
            if self._rng is None
            else self._rng.randbytes(n * 3 // 4)
        )
        # base64 with two letters standing in for "+" and "/": fast and still [A-Za-z0-9]
        return base64.b64encode(raw, altchars=b"xZ").decode()

    def new(self, prefix: str) -> str:
        if prefix not in SEQUENTIAL:
            return f"{prefix}_{self.token()}"
        n, digits = self.sequence.next(), []
        for _ in range(8):
            n, r = divmod(n, 62)
            digits.append(BASE62[r])
        return f"{prefix}_{''.join(reversed(digits))}{self.token(16)}"


def decode_sequence(ident: str | None) -> int:
    """The sequence number at the start of a sequential id (0 if there is none)."""
    if not ident or "_" not in ident:
        return 0
    n = 0
    for ch in ident.split("_", 1)[1][:8]:
        if ch not in BASE62:
            return 0
        n = n * 62 + BASE62.index(ch)
    return n


@dataclass(frozen=True, slots=True)
class Method:
    """A resolved payment method and what it does when used.

    ``outcome``: card ``succeed``/``three_d_secure``/``processing``/``decline``/``refund_fails``;
    fpx ``bank`` (every bank sends the customer to its bank page; test banks end it their way).
    """

    type: str
    details: dict[str, Any]
    outcome: str
    pm_id: str | None = None
    code: str | None = None
    decline_code: str | None = None


def method_record(
    method: Method, pm_id: str, created: float, livemode: bool, customer: str | None
) -> Record:
    """The stored record of a saved payment method (the one shape, for the API and history)."""
    return {
        "id": pm_id,
        "type": method.type,
        "details": method.details,
        "outcome": method.outcome,
        "code": method.code,
        "decline_code": method.decline_code,
        "created": int(created),
        "livemode": livemode,
        "customer": customer,
    }


Event = tuple[str, Record]  # (event type, the record it is about)


def business_days_later(ts: float, days: int) -> float:
    """``ts`` moved ``days`` business days (Monday to Friday) ahead, same time of day."""
    dt = datetime.fromtimestamp(ts, UTC)
    while days:
        dt += timedelta(days=1)
        if dt.weekday() < 5:
            days -= 1
    return dt.timestamp()


def new_payment(
    ident: str,
    account: str,
    livemode: bool,
    params: dict[str, Any],
    now: float,
    *,
    client_secret: str,
    expiry_seconds: float | None,
) -> Record:
    """A fresh payment record: variant A ``pending`` until checkout, B awaiting ``attempt``."""
    now_i = int(now)
    return {
        "id": ident,
        "account": account,
        "livemode": livemode,
        "amount": params["amount"],
        "currency": params["currency"].upper(),
        "description": params.get("description"),
        "metadata": params.get("metadata") or {},
        "status": "pending",
        "stage": "checkout",
        "method": None,
        "pm": None,
        "details": None,
        "capture_method": params.get("capture_method", "automatic"),
        "captured": False,
        "captured_at": None,
        "amount_captured": 0,
        "refunded_amount": 0,
        "created": now_i,
        "updated": now_i,
        "expires_at": None if expiry_seconds is None else now_i + int(expiry_seconds),
        "success_url": params.get("success_url"),
        "cancel_url": params.get("cancel_url"),
        "callback_url": params.get("callback_url"),
        "customer": params.get("customer"),
        "receipt_email": params.get("receipt_email"),
        "return_url": params.get("return_url"),
        "client_secret": client_secret,
        "error": None,
        "refund_fails": False,
        "due_at": None if expiry_seconds is None else now_i + int(expiry_seconds),
        "due": None if expiry_seconds is None else "expire",
    }


def _touch(rec: Record, now: float) -> None:
    rec["updated"] = int(now)


def _authorize_or_capture(rec: Record, now: float) -> list[Event]:
    rec["stage"] = None
    if rec["capture_method"] == "manual":
        rec["status"] = "authorized"
        rec["due_at"] = rec["due"] = None
        return []
    return capture(rec, None, now)


def _fail(rec: Record, code: str, decline_code: str | None, message: str) -> list[Event]:
    rec.update(
        status="failed",
        stage=None,
        due_at=None,
        due=None,
        error={"code": code, "decline_code": decline_code, "message": message},
    )
    return [("payment.failed", rec)]


def _cancel(rec: Record) -> list[Event]:
    rec.update(status="canceled", stage=None, due_at=None, due=None)
    return [("payment.canceled", rec)]


def attempt(rec: Record, method: Method, now: float) -> list[Event]:
    """The customer's (or the caller's) payment method is used on ``rec``."""
    _touch(rec, now)
    rec["method"] = method.type
    rec["details"] = method.details
    rec["pm"] = method.pm_id
    rec["refund_fails"] = method.outcome == "refund_fails"
    outcome = method.outcome
    if method.type == "fpx":
        # FPX always goes through the bank page, test banks too (payment methods stored before
        # test banks did so may carry an older outcome: the bank page decides now)
        rec.update(status="requires_action", stage="bank")
        return []
    if outcome in ("succeed", "refund_fails"):
        return _authorize_or_capture(rec, now)
    if outcome == "decline":
        code = method.code or "card_declined"
        decline = method.decline_code or "generic_decline"
        return _fail(rec, code, decline, DECLINE_MESSAGES.get(decline, "Your card was declined."))
    if outcome == "processing":
        return _processing(rec, now, "succeed")
    # three_d_secure: the customer acts on the page at /pay/{id}
    rec.update(status="requires_action", stage="3ds")
    return []


def _processing(rec: Record, now: float, due: str) -> list[Event]:
    """Waiting for an answer that comes (or fails to) ``PROCESSING_DELAY`` later."""
    rec.update(status="processing", stage=None, due_at=now + PROCESSING_DELAY, due=due)
    return []


#: What the customer (or the tester) can do on each customer page.
ACTIONS: Final[dict[str, tuple[str, ...]]] = {
    "3ds": ("complete", "fail", "cancel"),
    # ``timeout``: the customer approved, but the bank's answer never reaches the gateway
    # (what TEST0004 does): processing, then failed with processing_error.
    "bank": ("complete", "fail", "cancel", "timeout"),
}


def test_bank_ending(rec: Record) -> str | None:
    """How the bank page of a test bank ends (``fpx.TEST_BANKS``); None for any other page."""
    if rec["stage"] != "bank":
        return None
    return TEST_BANKS.get((rec["details"] or {}).get("bank_code", ""))


def page_actions(rec: Record) -> tuple[str, ...]:
    """The actions the customer page of ``rec`` offers: a test bank's page has one button,
    ``complete``, which ends the page the test bank's way."""
    return ("complete",) if test_bank_ending(rec) else ACTIONS[rec["stage"]]


def customer_action(rec: Record, action: str, now: float) -> list[Event]:
    """The customer completes, fails or cancels on the 3-D Secure or bank page; on the bank
    page the bank may also not answer (``timeout``). ``action`` is one of ``page_actions(rec)``;
    on a test bank's page ``complete`` ends it the test bank's way (``fpx.TEST_BANKS``)."""
    _touch(rec, now)
    action = test_bank_ending(rec) or action
    if action == "delayed":  # the bank answers late (TEST0003): processing, then succeeded
        return _processing(rec, now, "succeed")
    if action == "complete":
        return _authorize_or_capture(rec, now)
    if action == "cancel":
        return _cancel(rec)
    if action == "timeout":
        return _processing(rec, now, "fail_timeout")
    if rec["stage"] == "3ds":
        return _fail(
            rec, "card_declined", "authentication_failed", DECLINE_MESSAGES["authentication_failed"]
        )
    return _fail(
        rec, "payment_method_not_available", None, "The customer's bank rejected the payment."
    )


def checkout_cancel(rec: Record, now: float) -> list[Event]:
    _touch(rec, now)
    return _cancel(rec)


def capture(rec: Record, amount: int | None, now: float) -> list[Event]:
    _touch(rec, now)
    rec.update(
        status="succeeded",
        stage=None,
        captured=True,
        captured_at=int(now),
        amount_captured=rec["amount"] if amount is None else amount,
        due_at=None,
        due=None,
    )
    return [("payment.succeeded", rec)]


def void(rec: Record, now: float) -> list[Event]:
    _touch(rec, now)
    return _cancel(rec)


def due_transition(rec: Record, now: float) -> list[Event]:
    """Apply the transition scheduled on a payment (its ``due`` at ``due_at``)."""
    due, when = rec["due"], rec["due_at"]
    rec["due_at"] = rec["due"] = None
    if due == "expire":
        rec.update(status="expired", stage=None, updated=int(when))
        return []
    if due == "succeed":
        return _authorize_or_capture(rec, when) or _touched(rec, when)
    if due == "fail_timeout":
        _touch(rec, when)
        return _fail(
            rec, "processing_error", None, "The bank did not answer in time (connection timeout)."
        )
    return []


def _touched(rec: Record, when: float) -> list[Event]:
    _touch(rec, when)
    return []


def refundable(rec: Record) -> int:
    return int(rec["amount_captured"]) - int(rec["refunded_amount"])


def new_refund(
    payment: Record,
    ident: str,
    amount: int,
    reason: str | None,
    metadata: dict[str, Any],
    now: float,
) -> tuple[Record, list[Event]]:
    """A refund of ``payment`` (already checked refundable); updates the payment record too."""
    now_i = int(now)
    refund: Record = {
        "id": ident,
        "account": payment["account"],
        "livemode": payment["livemode"],
        "payment_id": payment["id"],
        "amount": amount,
        "currency": payment["currency"],
        "reason": reason,
        "metadata": metadata,
        "created": now_i,
        "updated": now_i,
        "status": "pending",
        "due_at": None,
        "due": None,
        "method": payment["method"],
    }
    if payment["refund_fails"]:
        refund.update(due_at=now + REFUND_FAIL_DELAY, due="fail")
    elif payment["method"] == "fpx":
        # 3 to 5 business days, fixed per refund so a rerun gives the same history
        days = 3 + sum(ident.encode()) % 3
        refund.update(due_at=business_days_later(now, days), due="succeed")
    elif payment["livemode"]:
        refund.update(due_at=business_days_later(now, 1), due="succeed")
    else:
        refund["status"] = "succeeded"
    payment["refunded_amount"] += amount
    _touch(payment, now)
    return refund, [("refund.created", refund)]


def refund_due(refund: Record, payment: Record | None, now: float) -> list[Event]:
    """Settle a pending refund at its ``due_at``; a failure gives the amount back to the payment."""
    due, when = refund["due"], refund["due_at"]
    refund["due_at"] = refund["due"] = None
    refund["updated"] = int(when)
    if due == "fail":
        refund["status"] = "failed"
        if payment is not None:
            payment["refunded_amount"] -= refund["amount"]
            _touch(payment, when)
        return [("refund.failed", refund)]
    refund["status"] = "succeeded"
    return []
