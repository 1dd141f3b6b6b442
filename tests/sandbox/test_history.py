"""History generator: deterministic, every status present, consistent with the API's rules."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gwtools.sandbox import Sandbox, create_app, generate_history
from gwtools.sandbox.render import PAYMENT_STATUSES
from tests.sandbox.conftest import Payer, error_of

NOW = datetime(2026, 1, 15, 12, 0, tzinfo=UTC)
DEMO_NOW = datetime(2024, 6, 30, 12, 0, tzinfo=UTC)  # the embedded demo's clock


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


def _all(payer: Payer, path: str, query: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every object of a list (matching ``query``, e.g. ``from``), following either envelope."""
    out: list[dict[str, Any]] = []
    params: dict[str, Any] = {**(query or {}), "limit": 100}
    while True:
        body = payer.http.get(path, params=params).json()
        out += body["data"]
        if payer.variant == "A":
            if body["meta"]["page"] >= body["meta"]["totalPages"]:
                return out
            params["page"] = body["meta"]["page"] + 1
        elif not body["has_more"]:
            return out
        else:
            params["starting_after"] = body["data"][-1]["id"]


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


#: The reason each declining test card's last four digits stand for (docs/sandbox.md), on
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
    # test banks appear in a test-mode history, each with the outcome docs/sandbox.md gives it
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
            # "open": a customer still on the bank page (only the last minutes' payments)
            assert _fpx_outcome(payer, p) in spec[bank] | {"open"}, (bank, p)


#: What each test bank's page ends in (docs/sandbox.md), as (status, failure code).
TEST_BANK_ENDINGS = {
    "TEST0001": ("succeeded", None),
    "TEST0002": ("failed", "payment_method_not_available"),
    "TEST0003": ("succeeded", None),
    "TEST0004": ("failed", "processing_error"),
    "TEST0005": ("canceled", None),
}


@pytest.fixture(scope="module", params=["A", "B"])
def demo(request: pytest.FixtureRequest) -> Iterator[Payer]:
    """The embedded demo's history (5,000 payments over 90 days, seed 20240601) on a private
    sandbox with its fixed clock, so what it holds never depends on other tests."""
    with (
        Sandbox(request.param, now=DEMO_NOW, seed_payments=5000, days=90, seed=20240601) as sb,
        httpx.Client(base_url=sb.base_url, verify=False, timeout=10, headers=sb.headers()) as http,
    ):
        yield Payer(sb, http)


def test_history_test_banks_end_their_bank_pages_their_way(demo: Payer) -> None:
    """Test banks go through the bank page like real ones (every FPX creation in B needs
    the customer); a history still shows each test bank's fixed ending."""
    neutral = {"captured": "succeeded", "cancelled": "canceled"}
    endings: dict[str, set[tuple[str, str | None]]] = defaultdict(set)
    for p in _all(demo, "/v1/payments"):
        bank = (p["payment_method_details"] or {}).get("bank_code")
        if bank in TEST_BANK_ENDINGS:
            status = neutral.get(p["status"], p["status"])
            endings[bank].add((status, _failure(demo, p)[0]))
    assert {bank: {TEST_BANK_ENDINGS[bank]} for bank in TEST_BANK_ENDINGS} == endings


def test_recent_history_holds_authorized_payments_to_capture_and_void(demo: Payer) -> None:
    """Authorizations are captured or voided within 7 days, so at least 1 % of the last
    week's payments still await it, for capture and void to be tried on."""
    since = int(DEMO_NOW.timestamp()) - 7 * 86400
    recent = _all(demo, "/v1/payments", {"from": since})
    authorized = [p for p in recent if p["status"] == "authorized"]
    assert len(recent) >= 300 and len(authorized) >= len(recent) / 100, (
        len(authorized),
        len(recent),
    )
    first, second = authorized[:2]
    captured = demo.http.post(f"/v1/payments/{first['id']}/capture", json={})
    assert captured.status_code == 200 and captured.json()["status"] == demo.status("succeeded")
    voided = demo.http.post(f"/v1/payments/{second['id']}/void")
    assert voided.status_code == 200 and voided.json()["status"] == demo.status("canceled")


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
