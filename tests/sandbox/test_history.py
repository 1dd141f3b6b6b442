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
