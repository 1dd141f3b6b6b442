"""History generator: deterministic, every status present, consistent with the API's rules."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

import pytest

from gwtools.sandbox import Sandbox, create_app, generate_history
from gwtools.sandbox.render import PAYMENT_STATUSES
from tests.sandbox.conftest import Payer, error_of

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)


def _rows(target: Any) -> list[tuple[Any, ...]]:
    gw = target.state.gateway if hasattr(target, "state") else target.gateway
    return gw.store.db.execute(
        "SELECT id, created, status, body FROM payments ORDER BY created, id"
    ).fetchall()


@pytest.mark.parametrize("variant", ["A", "B"])
def test_same_seed_same_history(variant: str) -> None:
    first, second, other = (create_app(variant, now=NOW) for _ in range(3))  # type: ignore[arg-type]
    for app in (first, second):
        generate_history(app, payments=150, days=30, seed=11)
    generate_history(other, payments=150, days=30, seed=12)
    assert _rows(first) == _rows(second)
    assert _rows(first) != _rows(other)


def _all(payer: Payer, path: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if payer.variant == "A":
        page = 1
        while True:
            body = payer.http.get(path, params={"limit": 100, "page": page}).json()
            out += body["data"]
            if page >= body["meta"]["totalPages"]:
                return out
            page += 1
    after = None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if after:
            params["starting_after"] = after
        body = payer.http.get(path, params=params).json()
        out += body["data"]
        if not body["has_more"]:
            return out
        after = body["data"][-1]["id"]


def test_history_over_the_admin_api(payer: Payer) -> None:
    r = payer.http.post("/_sandbox/history", json={"payments": 400, "days": 30, "seed": 5})
    assert r.status_code == 201, r.text
    summary = r.json()
    payments = _all(payer, "/v1/payments")
    refunds = _all(payer, "/v1/refunds")
    assert len(payments) == summary["payments"] == 400
    assert len(refunds) == summary["refunds"]
    # every payment status of the served variant occurs (A's "expired" included)
    assert {p["status"] for p in payments} == set(PAYMENT_STATUSES[payer.variant])
    assert {r["status"] for r in refunds} == {"pending", "succeeded", "failed"}
    # the payments' refund fields agree with their refunds
    by_payment: dict[str, int] = defaultdict(int)
    for refund in refunds:
        if refund["status"] != "failed":
            by_payment[refund["payment_id"]] += refund["amount"]
    for p in payments:
        assert p["refunded_amount"] == by_payment.get(p["id"], 0)
        assert p["captured"] == (p["status"] == payer.status("succeeded"))
        assert p["refunded"] == (p["captured"] and p["refunded_amount"] >= p["amount_captured"])
        assert p["amount"] > 0
    # the history lies in the 30 days before the sandbox clock
    clock = payer.http.get("/_sandbox/clock").json()["unix"]
    key = "created" if payer.variant == "B" else None
    for p in payments:
        ts = p[key] if key else datetime.fromisoformat(p["created_at"]).timestamp()
        assert clock - 30 * 86400 <= ts <= clock
    # authorized payments awaiting capture can be captured through the API
    authorized = next(p for p in payments if p["status"] == "authorized")
    cap = payer.http.post(f"/v1/payments/{authorized['id']}/capture")
    assert cap.status_code == 200
    # seeding the same account with the same seed again is refused, not duplicated
    again = payer.http.post("/_sandbox/history", json={"payments": 400, "days": 30, "seed": 5})
    assert again.status_code == 409 and error_of(again)["code"] == "invalid_state"


def test_sandbox_seeds_at_start() -> None:
    with Sandbox("B", seed_payments=60, days=10, seed=2, now=NOW) as sb:
        rows = _rows(sb)
        assert len(rows) == 60
        assert all(NOW.timestamp() - 10 * 86400 <= r[1] <= NOW.timestamp() for r in rows)


#: The reason each declining test card's last four digits stand for (DESIGN.md section 4), on
#: every brand: (error code, decline code).
REASON_BY_LAST4 = {
    "0002": ("card_declined", "generic_decline"),
    "9995": ("card_declined", "insufficient_funds"),
    "9987": ("card_declined", "lost_card"),
    "9979": ("card_declined", "stolen_card"),
    "0069": ("expired_card", "expired_card"),
    "0127": ("incorrect_cvc", "incorrect_cvc"),
    "0119": ("processing_error", "processing_error"),
}


def _failure(payer: Payer, p: dict[str, Any]) -> tuple[str | None, str | None]:
    """(error code, decline code) of a payment; variant A gives no decline code."""
    if payer.variant == "A":
        return p["failure_code"], None
    err = p["last_payment_error"] or {}
    return err.get("code"), err.get("decline_code")


def _fpx_outcome(payer: Payer, p: dict[str, Any]) -> str:
    code, _ = _failure(payer, p)
    if p["status"] == "failed":
        return "timed_out" if code == "processing_error" else "failed"
    neutral = {"captured": "succeeded", "cancelled": "canceled", "requires_action": "open"}
    if payer.variant == "A" and p["status"] == "pending":
        return "open"
    return neutral.get(p["status"], p["status"])


def test_history_declines_every_brand_and_fpx_banks_time_out(payer: Payer) -> None:
    r = payer.http.post("/_sandbox/history", json={"payments": 1500, "days": 60, "seed": 3})
    assert r.status_code == 201, r.text
    payments = _all(payer, "/v1/payments")
    cards = [p for p in payments if (p["payment_method_details"] or {}).get("type") == "card"]
    fpx = [p for p in payments if (p["payment_method_details"] or {}).get("type") == "fpx"]

    # Card declines: spread over brands and reasons, each the reason its test card stands for.
    declined = [p for p in cards if p["status"] == "failed"]
    by_brand: dict[str, set[str | None]] = defaultdict(set)
    for p in declined:
        details = p["payment_method_details"]
        code, decline = _failure(payer, p)
        if details["last4"] == "3155":  # the 3-D Secure card, not authenticated
            assert code == "card_declined" and decline in (None, "authentication_failed")
            continue
        expected = REASON_BY_LAST4[details["last4"]]
        assert code == expected[0]
        assert decline in (None, expected[1])
        by_brand[details["brand"]].add(code if decline is None else decline)
    assert len(by_brand) >= 2, by_brand
    non_visa = sum(1 for p in declined if p["payment_method_details"]["brand"] != "visa")
    assert non_visa >= len(declined) // 5, (non_visa, len(declined))
    # more than one reason on a brand other than Visa
    assert any(len(reasons) >= 2 for b, reasons in by_brand.items() if b != "visa"), by_brand

    # FPX: every outcome occurs, and real banks time out too (not only the test bank).
    outcomes: dict[str, set[str]] = defaultdict(set)
    for p in fpx:
        outcomes[_fpx_outcome(payer, p)].add(p["payment_method_details"]["bank_code"])
    assert {"succeeded", "failed", "timed_out", "canceled", "open"} <= set(outcomes), outcomes
    assert any(not bank.startswith("TEST") for bank in outcomes["timed_out"]), outcomes
    # success rates differ between banks
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in fpx:
        counts = tally[p["payment_method_details"]["bank_code"]]
        counts[0] += _fpx_outcome(payer, p) == "succeeded"
        counts[1] += 1
    assert len({won / n for won, n in tally.values()}) > 2, tally
    # test banks appear in a test-mode history, each with the outcome DESIGN.md gives it
    spec = {
        "TEST0001": {"succeeded"},
        "TEST0002": {"failed"},
        "TEST0003": {"succeeded", "processing"},
        "TEST0004": {"timed_out", "processing"},
        "TEST0005": {"canceled"},
    }
    seen = {p["payment_method_details"]["bank_code"] for p in fpx} & set(spec)
    assert seen, "no FPX test bank in a test-mode history"
    for p in fpx:
        bank = p["payment_method_details"]["bank_code"]
        if bank in spec:
            outcome = _fpx_outcome(payer, p)
            assert outcome in spec[bank] or (payer.variant == "A" and outcome == "open"), (
                bank,
                p,
            )


def test_live_history_uses_no_test_banks(payer_b: Payer) -> None:
    live = {"Authorization": f"Bearer {payer_b.account['live_secret_key']}"}
    r = payer_b.http.post(
        "/_sandbox/history", json={"payments": 600, "days": 30, "seed": 4}, headers=live
    )
    assert r.status_code == 201, r.text
    payer_b.http.headers.update(live)
    banks = {
        p["payment_method_details"]["bank_code"]
        for p in _all(payer_b, "/v1/payments")
        if (p["payment_method_details"] or {}).get("type") == "fpx"
    }
    assert banks and not any(b.startswith("TEST") for b in banks), banks
