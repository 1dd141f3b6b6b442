"""Record the raw responses under data/recorded/ from a seeded sandbox, byte for byte.

Deterministic: a frozen sandbox clock, a seeded history and a fixed base URL, served
in-process (no port in any URL). Run from the repository root::

    python data/record.py

``sandbox/``: bodies exactly as the sandbox answered (variants A and B: list pages,
single objects, error bodies). ``tricky/``: small bodies written here by hand in each
variant's envelope for what the sandbox never sends (mixed offsets, naive timestamps,
an unknown status, a record without an id, JPY and KWD amounts, the refund alias
``payment``, a body that is not JSON). The normalisation tests read both.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient  # in-process: no port in any recorded URL

from gwtools.sandbox import Gateway, create_app, generate_history
from gwtools.sandbox.clock import Clock
from gwtools.sandbox.store import Store

OUT = Path(__file__).resolve().parent / "recorded"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
BASE_URL = "http://sandbox.test"


def _save(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(body)


def _first(records: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    for rec in records:
        if all(rec.get(k) == v for k, v in match.items()):
            return rec
    raise LookupError(f"no record with {match} in the seeded history; change the seed")


def record_sandbox(variant: str) -> None:
    gateway = Gateway(Store(None), Clock(NOW), variant, base_url=BASE_URL)
    generate_history(gateway, payments=240, days=30, seed=7)
    app = create_app(variant, gateway=gateway, rate_limits=False)
    key = gateway.default_account["secret_key"]
    out = OUT / "sandbox" / variant
    with TestClient(app, base_url=BASE_URL) as client:
        client.headers["Authorization"] = f"Bearer {key}"

        def get(path: str, **params: Any) -> bytes:
            return client.get(path, params=params).content

        first = get("/v1/payments", limit=100)
        _save(out / "payments_page1.json", first)
        page1 = json.loads(first)["data"]
        if variant == "A":
            second = get("/v1/payments", limit=100, page=2)
        else:
            second = get("/v1/payments", limit=100, starting_after=page1[-1]["id"])
        _save(out / "payments_page2.json", second)
        refunds = get("/v1/refunds", limit=100)
        _save(out / "refunds_page1.json", refunds)

        records = page1 + json.loads(second)["data"]
        failed = _first(records, status="failed")
        _save(out / "payment_failed.json", get(f"/v1/payments/{failed['id']}"))
        fpx = (
            _first(records, payment_method="fpx")
            if variant == "A"
            else next(
                r for r in records if (r.get("payment_method_details") or {}).get("type") == "fpx"
            )
        )
        _save(out / "payment_fpx.json", get(f"/v1/payments/{fpx['id']}"))
        if variant == "B":
            card = next(r for r in records if r.get("payment_method"))
            _save(
                out / "payment_expanded.json",
                get(f"/v1/payments/{card['id']}", **{"expand[]": "payment_method"}),
            )
        refund_id = json.loads(refunds)["data"][0]["id"]
        _save(out / "refund.json", get(f"/v1/refunds/{refund_id}"))
        _save(out / "error_404.json", get("/v1/payments/pay_doesnotexist"))
        _save(out / "error_400.json", get("/v1/payments", limit=1000))
        client.headers["Authorization"] = "Bearer sk_test_not_a_real_key_0000"
        _save(out / "error_401.json", get("/v1/payments"))


def _a_page(records: list[Any]) -> bytes:
    meta = {"total": len(records), "page": 1, "limit": 100, "totalPages": 1}
    return json.dumps({"data": records, "meta": meta}, ensure_ascii=False).encode()


def _b_page(records: list[Any], path: str) -> bytes:
    envelope = {"object": "list", "data": records, "has_more": False, "url": path}
    return json.dumps(envelope, ensure_ascii=False).encode()


def record_tricky() -> None:
    out = OUT / "tricky"
    a_payments = [
        {"id": "pay_a_offset", "object": "payment", "amount": 12345, "currency": "MYR",
         "status": "captured", "payment_method": "fpx",
         "payment_method_details": {"bank_code": "MB2U0227", "bank": "Maybank2u"},
         "captured": True, "captured_at": "2026-01-01T08:05:00+08:00",
         "created_at": "2026-01-01T08:00:00+08:00", "updated_at": "2025-12-31T19:05:00-05:00",
         "metadata": {"order": "A-1", "note": "gift \"wrap\"\n2nd line"}},
        {"id": "pay_a_naive", "object": "payment", "amount": 1000, "currency": "jpy",
         "status": "authorized", "payment_method": "card",
         "payment_method_details": {"card": {"brand": "jcb", "last4": "0505"}},
         "created_at": "2026-01-01T00:00:00", "expires_at": "2026-01-01 01:00:00"},
        {"id": "pay_a_kwd", "object": "payment", "amount": 1500, "currency": "KWD",
         "status": "on_hold", "created_at": "2026-01-01T00:00:00.250Z", "risk_score": 12},
        {"object": "payment", "amount": 500, "currency": "MYR", "status": "failed",
         "created_at": "2026-01-01T00:00:00Z"},
        {"id": "pay_a_badtime", "object": "payment", "amount": 500, "currency": "MYR",
         "status": "failed", "created_at": "yesterday"},
        "not an object",
    ]  # fmt: skip
    _save(out / "payments_A.json", _a_page(a_payments))
    b_payments = [
        {"id": "pay_b_iso_capture", "object": "payment", "amount": 2000, "currency": "myr",
         "status": "requires_capture", "payment_method": "pm_b1",
         "payment_method_details": {"type": "card", "brand": "visa", "last4": "4242"},
         "captured": False, "captured_at": "2026-01-01T00:10:00Z", "created": 1767225600,
         "livemode": True, "client_secret": "pay_b_iso_capture_secret_x",
         "last_payment_error": None, "metadata": {}},
        {"id": "pay_b_expanded", "object": "payment", "amount": 999, "currency": "usd",
         "status": "canceled", "created": 1767225601, "livemode": False,
         "payment_method": {"id": "pm_b2", "object": "payment_method", "type": "card",
                            "card": {"brand": "amex", "last4": "0005"}}},
        {"id": "pay_b_no_time", "object": "payment", "amount": 1, "currency": "myr",
         "status": "succeeded", "livemode": False},
    ]  # fmt: skip
    _save(out / "payments_B.json", _b_page(b_payments, "/v1/payments"))
    refunds = [
        {"id": "rfnd_alias", "object": "refund", "payment": "pay_a_offset", "amount": 345,
         "currency": "MYR", "reason": "requested_by_customer", "status": "pending",
         "created_at": "2026-01-02T10:00:00+08:00", "metadata": {"ticket": "T-9"}},
        {"id": "rfnd_odd", "object": "refund", "payment_id": "pay_b_iso_capture",
         "amount": 2000, "currency": "myr", "status": "canceled", "created": 1767312000,
         "livemode": True},
    ]  # fmt: skip
    _save(out / "refunds_mixed.json", _b_page(refunds, "/v1/refunds"))
    _save(out / "not_json.html", b"<html><body><h1>502 Bad Gateway</h1></body></html>\n")


if __name__ == "__main__":
    for variant in ("A", "B"):
        record_sandbox(variant)
    record_tricky()
    print(f"recorded into {OUT}")
