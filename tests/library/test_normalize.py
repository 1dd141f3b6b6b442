"""Normalisation: raw objects and list bodies of both variants -> the canonical tables.

Expected values are worked out by hand from the inputs written next to them; the
recorded bodies come from a seeded sandbox (data/record.py).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gwtools import _schema
from gwtools.http._wire import MalformedResponseError, page_info
from gwtools.normalize._normalize import (
    _normalize_bodies,
    normalize_bodies,
    normalize_payments,
    normalize_refunds,
)

RECORDED = Path(__file__).resolve().parents[2] / "data" / "recorded"
UTC = "UTC"


def body(path: str) -> bytes:
    return (RECORDED / path).read_bytes()


def a_page(records: list[Any]) -> bytes:
    meta = {"total": len(records), "page": 1, "limit": 100, "totalPages": 1}
    return json.dumps({"data": records, "meta": meta}).encode()


def b_page(records: list[Any], has_more: bool = False) -> bytes:
    return json.dumps(
        {"object": "list", "data": records, "has_more": has_more, "url": "/v1/payments"}
    ).encode()


def ts(text: str) -> pd.Timestamp:
    return pd.Timestamp(text).tz_convert(UTC) if "+" in text[10:] else pd.Timestamp(text, tz=UTC)


def pay_a(**fields: Any) -> dict[str, Any]:
    return {"id": "pay_a", "object": "payment", "amount": 1000, "currency": "MYR",
            "status": "captured", "created_at": "2026-01-01T00:00:00Z", **fields}  # fmt: skip


def pay_b(**fields: Any) -> dict[str, Any]:
    return {"id": "pay_b", "object": "payment", "amount": 1000, "currency": "myr",
            "status": "succeeded", "created": 1767225600, "livemode": False, **fields}  # fmt: skip


def one(record: dict[str, Any], **kwargs: Any) -> pd.Series:
    frame = normalize_payments([record], **kwargs)
    assert len(frame) == 1
    return frame.iloc[0]


def assert_schema(frame: pd.DataFrame, resource: _schema.Resource) -> None:
    expected = pd.Series(_schema.columns(resource))
    assert list(frame.columns) == list(expected.index)
    assert frame.dtypes.to_dict() == expected.to_dict()


# --------------------------------------------------------------------------- recorded bodies


@pytest.mark.parametrize("variant", ["A", "B"])
def test_recorded_payment_pages_give_the_canonical_table(variant: str) -> None:
    bodies = [body(f"sandbox/{variant}/payments_page{i}.json") for i in (1, 2)]
    raw = [r for b in bodies for r in json.loads(b)["data"]]
    batch = normalize_bodies("payments", bodies, livemode=False)
    frame = batch.frame
    assert_schema(frame, "payments")
    assert batch.rejects == [] and batch.unknown_statuses == set()
    assert frame["id"].tolist() == [r["id"] for r in raw]  # every record, in page order
    assert set(frame["api_variant"]) == {variant}
    assert set(frame["currency"]) == {"MYR"}
    assert (frame["amount_major"] * 100).round().astype("Int64").tolist() == [
        r["amount"] for r in raw
    ]
    assert set(frame["status"]) <= set(_schema.PAYMENT_STATUSES) - {"unknown"}
    assert not frame["livemode"].any() and frame["livemode"].notna().all()
    # No secret and no empty string anywhere; `object` and client_secret are not in extra.
    for name, dtype in _schema.PAYMENT_COLUMNS.items():
        if dtype is _schema.STRING:
            values = frame[name].dropna()
            assert not (values == "").any(), name
            assert not values.str.contains("_secret_").any(), name
            assert not values.str.contains('"object"').any(), name


@pytest.mark.parametrize("variant", ["A", "B"])
@pytest.mark.parametrize("resource", ["payments", "refunds"])
def test_fast_path_equals_tolerant_path_on_recorded_pages(variant: str, resource: str) -> None:
    names = ["payments_page1", "payments_page2"] if resource == "payments" else ["refunds_page1"]
    bodies = [body(f"sandbox/{variant}/{n}.json") for n in names]
    fast = _normalize_bodies(resource, bodies, False, fast=True)  # type: ignore[arg-type]
    tolerant = _normalize_bodies(resource, bodies, False, fast=False)  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert len(fast.frame) == sum(len(json.loads(b)["data"]) for b in bodies)


def test_recorded_failed_payments_carry_their_codes() -> None:
    a = json.loads(body("sandbox/A/payment_failed.json"))
    b = json.loads(body("sandbox/B/payment_failed.json"))
    row_a = one(a, livemode=False)
    row_b = one(b)
    assert (row_a["status"], row_a["outcome"]) == ("failed", "failed")
    assert row_a["failure_code"] == a["failure_code"]
    assert json.loads(row_a["extra"])["failure_message"] == a["failure_message"]
    assert row_b["failure_code"] == b["last_payment_error"]["code"]
    assert row_b["decline_code"] == b["last_payment_error"]["decline_code"]
    assert json.loads(row_b["extra"])["last_payment_error"] == {
        "message": b["last_payment_error"]["message"]
    }


def test_recorded_expanded_payment_method() -> None:
    raw = json.loads(body("sandbox/B/payment_expanded.json"))
    row = one(raw)
    pm = raw["payment_method"]
    assert row["payment_method_id"] == pm["id"]
    assert row["method_type"] == pm["type"] == "card"
    assert row["card_brand"] == pm["card"]["brand"]
    extra = json.loads(row["extra"])
    assert "id" not in extra["payment_method"]  # (in payment_method_id)
    assert extra["payment_method"]["object"] == "payment_method"  # only the record's is dropped
    assert extra["payment_method"]["card"]["last4"] == pm["card"]["last4"]


@pytest.mark.parametrize("variant", ["A", "B"])
def test_recorded_fpx_payment(variant: str) -> None:
    raw = json.loads(body(f"sandbox/{variant}/payment_fpx.json"))
    row = one(raw, livemode=False)
    assert row["method_type"] == "fpx"
    assert row["fpx_bank_code"] == raw["payment_method_details"]["bank_code"]
    assert row["fpx_bank"] == raw["payment_method_details"]["bank"]
    assert pd.isna(row["card_brand"])


@pytest.mark.parametrize("variant", ["A", "B"])
def test_recorded_refund(variant: str) -> None:
    raw = json.loads(body(f"sandbox/{variant}/refund.json"))
    frame = normalize_refunds([raw], livemode=False)
    assert_schema(frame, "refunds")
    row = frame.iloc[0]
    assert (row["id"], row["payment_id"], row["amount"]) == (
        raw["id"], raw["payment_id"], raw["amount"]
    )  # fmt: skip
    assert row["api_variant"] == variant and row["currency"] == "MYR"


# --------------------------------------------------------------------------- statuses

STATUS_TABLE = [
    # raw, variant, canonical, outcome (docs/tables.md)
    ("pending", "A", "pending", "open"),
    ("requires_action", "B", "requires_action", "open"),
    ("processing", "B", "processing", "open"),
    ("authorized", "A", "authorized", "open"),
    ("authorized", "B", "authorized", "open"),
    ("requires_capture", "B", "authorized", "open"),
    ("captured", "A", "succeeded", "succeeded"),
    ("succeeded", "B", "succeeded", "succeeded"),
    ("failed", "A", "failed", "failed"),
    ("failed", "B", "failed", "failed"),
    ("cancelled", "A", "canceled", "abandoned"),
    ("canceled", "B", "canceled", "abandoned"),
    ("cancelled", "B", "canceled", "abandoned"),
    ("expired", "A", "expired", "abandoned"),
]


@pytest.mark.parametrize(("raw", "variant", "status", "outcome"), STATUS_TABLE)
def test_status_table(raw: str, variant: str, status: str, outcome: str) -> None:
    record = pay_a(status=raw) if variant == "A" else pay_b(status=raw)
    for fast in (True, False):
        page = a_page([record]) if variant == "A" else b_page([record])
        row = _normalize_bodies("payments", [page], False, fast=fast).frame.iloc[0]
        assert (row["status"], row["status_raw"], row["outcome"]) == (status, raw, outcome)


def test_unknown_status_maps_to_unknown_and_warns_once_per_value() -> None:
    records = [pay_a(id="p1", status="on_hold"), pay_b(id="p2", status="on_hold"),
               pay_b(id="p3", status="disputed"), pay_a(id="p4", status=None)]  # fmt: skip
    with pytest.warns(UserWarning) as caught:
        frame = normalize_payments(records)
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2
    assert "'disputed'" in messages[0] and "'on_hold'" in messages[1]
    assert frame["status"].tolist() == ["unknown"] * 4
    assert frame["outcome"].tolist() == ["unknown"] * 4
    assert frame["status_raw"].tolist()[:3] == ["on_hold", "on_hold", "disputed"]
    assert pd.isna(frame["status_raw"].iloc[3])
    batch = normalize_bodies("payments", [a_page(records[:1]), b_page(records[1:3])])
    assert batch.unknown_statuses == {"on_hold", "disputed"}


#: Statuses only the other variant uses (docs/tables.md): unknown in this one.
OTHER_VARIANTS_STATUSES = [
    ("succeeded", "A"), ("canceled", "A"), ("requires_action", "A"), ("processing", "A"),
    ("requires_capture", "A"), ("captured", "B"), ("pending", "B"), ("expired", "B"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "variant"), OTHER_VARIANTS_STATUSES)
def test_a_status_of_the_other_variant_is_unknown_and_warned_once(raw: str, variant: str) -> None:
    record = pay_a(status=raw) if variant == "A" else pay_b(status=raw)
    page = a_page([record]) if variant == "A" else b_page([record])
    for fast in (True, False):
        batch = _normalize_bodies("payments", [page], False, fast=fast)
        row = batch.frame.iloc[0]
        assert (row["api_variant"], row["status"], row["status_raw"], row["outcome"]) == (
            variant, "unknown", raw, "unknown"
        )  # fmt: skip
        assert batch.unknown_statuses == {raw}
    with pytest.warns(UserWarning) as caught:
        frame = normalize_payments([record, {**record, "id": "pay_2"}])
    assert [str(w.message) for w in caught] == [
        f"unknown payment status {raw!r} mapped to 'unknown' (the raw value is kept)"
    ]
    assert frame["status"].tolist() == ["unknown"] * 2


def test_a_status_is_read_in_the_vocabulary_of_the_records_variant() -> None:
    records = [pay_a(id="a1", status="succeeded"), pay_b(id="b1", status="succeeded"),
               pay_a(id="a2", status="captured"), pay_b(id="b2", status="captured")]  # fmt: skip
    bodies = [a_page(records[:1]), b_page(records[1:2]), a_page(records[2:3]), b_page(records[3:])]
    for fast in (True, False):
        batch = _normalize_bodies("payments", bodies, False, fast=fast)
        assert batch.frame["status"].tolist() == ["unknown", "succeeded", "succeeded", "unknown"]
        assert batch.unknown_statuses == {"succeeded", "captured"}
    with pytest.warns(UserWarning) as caught:
        frame = normalize_payments(records, livemode=False)
    assert frame["status"].tolist() == ["unknown", "succeeded", "succeeded", "unknown"]
    assert len(caught) == 2  # one per value


def test_every_status_the_sandbox_sends_maps_without_a_warning() -> None:
    from gwtools.sandbox.render import PAYMENT_STATUSES

    for variant, statuses in PAYMENT_STATUSES.items():
        make = pay_a if variant == "A" else pay_b
        records = [make(id=f"pay_{i}", status=raw) for i, raw in enumerate(statuses)]
        page = a_page(records) if variant == "A" else b_page(records)
        for fast in (True, False):
            batch = _normalize_bodies("payments", [page], False, fast=fast)
            assert batch.unknown_statuses == set(), variant
            assert "unknown" not in set(batch.frame["status"]), variant
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            normalize_payments(records, livemode=False)


def test_refund_statuses_and_unknown_refund_status_kept_in_extra() -> None:
    base = {"payment_id": "pay_1", "amount": 100, "currency": "MYR",
            "created_at": "2026-01-01T00:00:00Z"}  # fmt: skip
    records = [{"id": f"r{i}", "status": s, **base}
               for i, s in enumerate(["pending", "succeeded", "failed", "canceled"])]  # fmt: skip
    with pytest.warns(UserWarning, match="'canceled'"):
        frame = normalize_refunds(records)
    assert frame["status"].tolist() == ["pending", "succeeded", "failed", "unknown"]
    assert frame["extra"].iloc[:3].isna().all()
    assert json.loads(frame["extra"].iloc[3]) == {"status": "canceled"}
    for fast in (True, False):
        batch = _normalize_bodies("refunds", [b_page(records)], None, fast=fast)
        expected = frame.assign(api_variant=pd.Series(["B"] * 4, dtype=_schema.STRING))
        pd.testing.assert_frame_equal(batch.frame, expected)
        assert batch.unknown_statuses == {"canceled"}


# --------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-01-01T08:00:00+08:00", "2026-01-01T00:00:00"),
        ("2025-12-31T19:00:00-05:00", "2026-01-01T00:00:00"),
        ("2026-01-01T00:00:00Z", "2026-01-01T00:00:00"),
        ("2026-01-01T00:00:00.123456Z", "2026-01-01T00:00:00.123456"),
        ("2026-01-01T05:30:00.5+0530", "2026-01-01T00:00:00.5"),
        ("2026-01-01T00:00:00", "2026-01-01T00:00:00"),  # naive = UTC
        ("2026-01-01 00:00:00", "2026-01-01T00:00:00"),
        (1767225600, "2026-01-01T00:00:00"),  # Unix seconds
        (1767225600.25, "2026-01-01T00:00:00.25"),
        ("1767225600", "2026-01-01T00:00:00"),
        ("20260101", "2026-01-01T00:00:00"),  # ISO 8601 basic date, not seconds of 1970
        ("2026-01-01t08:00:00z", "2026-01-01T08:00:00"),  # RFC 3339 allows lower case
        ("2026-01-01T08:00:00,25+08:00", "2026-01-01T00:00:00.25"),  # ISO 8601's comma
    ],
)
def test_timestamps_of_every_form(raw: Any, expected: str) -> None:
    want = pd.Timestamp(expected, tz=UTC)
    row = one(pay_a(created_at=raw, updated_at=raw, expires_at=raw, captured_at=raw))
    assert [row[c] for c in ("created_at", "updated_at", "expires_at", "captured_at")] == [want] * 4
    row_b = one(pay_b(created=raw, captured_at=raw))
    assert (row_b["created_at"], row_b["captured_at"]) == (want, want)


def test_mixed_offsets_in_one_column_and_both_paths_agree() -> None:
    page = body("tricky/payments_A.json")
    for fast in (True, False):
        frame = _normalize_bodies("payments", [page], False, fast=fast).frame.set_index("id")
        assert frame.loc["pay_a_offset", "created_at"] == pd.Timestamp("2026-01-01", tz=UTC)
        assert frame.loc["pay_a_offset", "updated_at"] == pd.Timestamp(
            "2026-01-01T00:05:00", tz=UTC
        )
        assert frame.loc["pay_a_naive", "expires_at"] == pd.Timestamp("2026-01-01T01:00", tz=UTC)
        assert frame.loc["pay_a_kwd", "created_at"] == pd.Timestamp(
            "2026-01-01T00:00:00.250", tz=UTC
        )


def test_unparsable_timestamp_outside_creation_is_null_and_kept_in_extra() -> None:
    row = one(pay_a(updated_at="not a time", captured_at=True))
    assert pd.isna(row["updated_at"]) and pd.isna(row["captured_at"])
    assert json.loads(row["extra"]) == {"updated_at": "not a time", "captured_at": True}


@pytest.mark.parametrize("fast", [True, False])
def test_an_int_beyond_int64_beside_floats_and_text_in_a_timestamp_column(fast: bool) -> None:
    # Arrow cannot hold such an int beside a float in one column: it is out of range, so bad
    # like any other (a null column and the raw value in extra; a creation time: a reject).
    records = [
        pay_b(id="pay_1", captured_at=1709287201.5),
        pay_b(id="pay_2", captured_at=10**20),
        pay_b(id="pay_3", created=1709287200.5, captured_at="2026-01-01T00:00:00Z"),
        pay_b(id="pay_4", created=10**20),
        pay_b(id="pay_5", captured_at=10**400),  # (float() of it raises)
    ]
    batch = _normalize_bodies("payments", [b_page(records)], False, fast=fast)
    frame = batch.frame.set_index("id")
    assert list(frame.index) == ["pay_1", "pay_2", "pay_3", "pay_5"]
    assert frame.loc["pay_1", "captured_at"] == pd.Timestamp("2024-03-01T10:00:01.5", tz=UTC)
    assert frame.loc["pay_3", "created_at"] == pd.Timestamp("2024-03-01T10:00:00.5", tz=UTC)
    assert frame.loc["pay_3", "captured_at"] == pd.Timestamp("2026-01-01", tz=UTC)
    for ident, huge in (("pay_2", 10**20), ("pay_5", 10**400)):
        assert pd.isna(frame.loc[ident, "captured_at"])
        assert json.loads(frame.loc[ident, "extra"]) == {"captured_at": huge}
    assert len(batch.rejects) == 1 and f"`created` = {10**20} is not" in batch.rejects[0].reason
    with pytest.warns(UserWarning, match="1 payments record"):
        from_dicts = normalize_payments(records, livemode=False, on_reject="warn")
    pd.testing.assert_frame_equal(from_dicts, batch.frame)


# --------------------------------------------------------------------------- amounts, currencies


@pytest.mark.parametrize(
    ("currency", "amount", "major", "upper"),
    [("jpy", 1000, 1000.0, "JPY"), ("MYR", 12345, 123.45, "MYR"), ("kwd", 1500, 1.5, "KWD"),
     ("XQQ", 100, None, "XQQ"), (" myr ", 12345, 123.45, "MYR")],
)  # fmt: skip
def test_currency_exponents(currency: str, amount: int, major: float | None, upper: str) -> None:
    for record in (
        pay_a(currency=currency, amount=amount),
        pay_b(currency=currency, amount=amount),
    ):
        row = one(record)
        assert row["currency"] == upper and row["amount"] == amount
        assert pd.isna(row["amount_major"]) if major is None else row["amount_major"] == major


# Where CLDR's digits (Babel's currency precision, which DESIGN.md chooses) and ISO 4217's
# minor units disagree, amounts are read by CLDR's: IDR, HUF and COP amounts are whole units,
# as a real gateway counting ISO minor units would not send them. Pinned, so that a Babel
# upgrade that changes one shows here rather than as amounts off by 100.
@pytest.mark.parametrize(
    ("currency", "amount", "major"),
    [("IDR", 150_000, 150_000.0), ("HUF", 2_500, 2_500.0), ("COP", 9_900, 9_900.0),
     ("JPY", 500, 500.0), ("KRW", 15_000, 15_000.0), ("CLP", 990, 990.0),
     ("ISK", 100, 100.0), ("UGX", 5_000, 5_000.0), ("TWD", 1_050, 10.5),
     ("BHD", 1_234, 1.234), ("SGD", 1_050, 10.5)],
)  # fmt: skip
def test_exponents_where_cldr_and_iso_4217_disagree(
    currency: str, amount: int, major: float
) -> None:
    from gwtools.analysis._money import exponent  # the analyses' figures must agree

    for record in (
        pay_a(currency=currency, amount=amount),
        pay_b(currency=currency.lower(), amount=amount),
    ):
        assert one(record)["amount_major"] == major
    assert 10 ** exponent(currency) * major == amount


def test_a_blank_currency_is_missing_not_empty_text() -> None:
    row = one(pay_b(currency="  "))
    assert pd.isna(row["currency"]) and pd.isna(row["amount_major"])


def test_amount_of_the_wrong_type_is_null_and_kept_in_extra() -> None:
    row = one(pay_a(amount="10.00"))
    assert pd.isna(row["amount"]) and pd.isna(row["amount_major"])
    assert json.loads(row["extra"]) == {"amount": "10.00"}


@pytest.mark.parametrize("field", ["amount", "refunded_amount", "captured_at"])
@pytest.mark.parametrize("fast", [True, False])
def test_integers_too_big_for_int64_are_null_and_kept_in_extra(field: str, fast: bool) -> None:
    huge = 2**70 + 1  # (not a double: a float of it would not compare equal)
    batch = _normalize_bodies("payments", [b_page([pay_b(**{field: huge}), pay_b(id="pay_c")])],
                              False, fast=fast)  # fmt: skip
    assert not batch.rejects
    first, second = batch.frame.iloc[0], batch.frame.iloc[1]
    assert pd.isna(first[field]) and json.loads(first["extra"]) == {field: huge}
    assert second["id"] == "pay_c" and second["amount"] == 1000


@pytest.mark.parametrize("fast", [True, False])
def test_creation_time_too_big_for_int64_is_rejected_with_its_value(fast: bool) -> None:
    batch = _normalize_bodies("payments", [b_page([pay_b(created=2**70), pay_b(id="pay_c")])],
                              False, fast=fast)  # fmt: skip
    assert list(batch.frame["id"]) == ["pay_c"]
    assert len(batch.rejects) == 1 and str(2**70) in batch.rejects[0].reason


# --------------------------------------------------------------------------- columns


def test_variant_a_columns_by_hand() -> None:
    record = pay_a(
        status="captured", payment_method="fpx", description="Order 7",
        payment_method_details={"bank_code": "MB2U0227", "bank": "Maybank2u"},
        captured=True, captured_at="2026-01-01T00:01:00Z", refunded=True, refunded_amount=250,
        metadata={"order_id": "7"}, updated_at="2026-01-01T00:02:00Z",
        expires_at="2026-01-01T01:00:00Z", success_url="https://shop.example/ok",
        redirect_url="https://gw.example/pay/pay_a", failure_code=None,
    )  # fmt: skip
    row = one(record, livemode=True)
    assert row.to_dict() == {
        "id": "pay_a", "api_variant": "A", "livemode": True, "status": "succeeded",
        "status_raw": "captured", "outcome": "succeeded", "amount": 1000, "currency": "MYR",
        "amount_major": 10.0, "method_type": "fpx", "payment_method_id": None,
        "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u", "card_brand": None,
        "failure_code": None, "decline_code": None, "captured": True,
        "captured_at": pd.Timestamp("2026-01-01T00:01", tz=UTC), "refunded": True,
        "refunded_amount": 250, "description": "Order 7", "customer_id": None,
        "receipt_email": None, "metadata": '{"order_id":"7"}',
        "created_at": pd.Timestamp("2026-01-01", tz=UTC),
        "updated_at": pd.Timestamp("2026-01-01T00:02", tz=UTC),
        "expires_at": pd.Timestamp("2026-01-01T01:00", tz=UTC),
        "extra": '{"redirect_url":"https://gw.example/pay/pay_a",'
                 '"success_url":"https://shop.example/ok"}',
    }  # fmt: skip


def test_variant_b_columns_by_hand() -> None:
    record = pay_b(
        status="failed", payment_method="pm_123", customer="cus_9",
        payment_method_details={"type": "card", "brand": "visa", "last4": "0002",
                                "exp_month": 12, "exp_year": 2030},
        last_payment_error={"code": "card_declined", "decline_code": "insufficient_funds",
                            "message": "Insufficient funds."},
        receipt_email="a@b.example", client_secret="pay_b_secret_zzz", next_action=None,
        metadata={}, livemode=True, description="",
    )  # fmt: skip
    row = one(record, livemode=False)  # the record's own livemode wins for B
    assert row["livemode"] is True or row["livemode"] == True  # noqa: E712 - pandas scalar
    assert (row["method_type"], row["payment_method_id"], row["card_brand"]) == (
        "card", "pm_123", "visa"
    )  # fmt: skip
    assert (row["failure_code"], row["decline_code"]) == ("card_declined", "insufficient_funds")
    assert (row["customer_id"], row["receipt_email"]) == ("cus_9", "a@b.example")
    assert pd.isna(row["metadata"]) and pd.isna(row["description"])  # {} and "" are null
    assert pd.isna(row["updated_at"]) and pd.isna(row["expires_at"])
    assert json.loads(row["extra"]) == {
        "last_payment_error": {"message": "Insufficient funds."},
        "payment_method_details": {"exp_month": 12, "exp_year": 2030, "last4": "0002"},
    }
    assert "secret" not in row.to_string()


@pytest.mark.parametrize(
    ("fields", "method_type", "brand", "bank_code"),
    [
        ({"payment_method": "card"}, "card", None, None),
        ({"payment_method_details": {"card": {"brand": "amex"}}}, "card", "amex", None),
        ({"payment_method_details": {"fpx": {"bank_code": "BCBB0235"}}}, "fpx", None, "BCBB0235"),
        ({"payment_method_details": {"bank_code": "PBB0233"}}, "fpx", None, "PBB0233"),
        ({"payment_method_details": {"brand": "visa"}}, "card", "visa", None),
        ({"payment_method": {"id": "pm_9", "type": "fpx", "fpx": {"bank_code": "RHB0218"}}},
         "fpx", None, "RHB0218"),
        ({"payment_method": "pm_1"}, None, None, None),
        ({}, None, None, None),
    ],
)  # fmt: skip
def test_method_from_every_source(
    fields: dict[str, Any], method_type: str | None, brand: str | None, bank_code: str | None
) -> None:
    row = one(pay_b(**fields))
    got = [row["method_type"], row["card_brand"], row["fpx_bank_code"]]
    assert [None if pd.isna(v) else v for v in got] == [method_type, brand, bank_code]


@pytest.mark.parametrize(
    ("fields", "method_type"),
    [
        ({"payment_method": "pm_1",
          "payment_method_data": {"type": "fpx", "fpx": {"bank_code": "TEST0001"}}}, "fpx"),
        ({"payment_method": None,
          "payment_method_data": {"type": "card", "card": {"token": "tok_1"}}}, "card"),
        ({"payment_method_data": {"type": "FPX"}}, "fpx"),
        # the lowest source: the details, an expanded method or a method type string win
        ({"payment_method_details": {"type": "card"},
          "payment_method_data": {"type": "fpx"}}, "card"),
        ({"payment_method_details": {"bank_code": "X"},
          "payment_method_data": {"type": "card"}}, "fpx"),
        ({"payment_method": {"id": "pm_2", "type": "card"},
          "payment_method_data": {"type": "fpx"}}, "card"),
        ({"payment_method": "card", "payment_method_data": {"type": "fpx"}}, "card"),
        ({"payment_method_data": {"type": ""}}, None),
    ],
)  # fmt: skip
def test_method_type_from_the_creation_data_last(
    fields: dict[str, Any], method_type: str | None
) -> None:
    record = pay_b(**fields)
    frames = [_normalize_bodies("payments", [b_page([record])], None, fast=fast).frame
              for fast in (True, False)]  # fmt: skip
    frames.append(normalize_payments([record]))
    for frame in frames:
        pd.testing.assert_frame_equal(frame, frames[0])
    row = frames[0].iloc[0]
    assert (None if pd.isna(row["method_type"]) else row["method_type"]) == method_type
    # The creation data is kept whole; the bank columns come from the details only.
    assert json.loads(row["extra"])["payment_method_data"] == fields["payment_method_data"]
    if "payment_method_details" not in fields:
        assert pd.isna(row["fpx_bank_code"]) and pd.isna(row["fpx_bank"])


def test_card_numbers_and_cvcs_never_reach_extra() -> None:
    """A gateway echoing the creation data would put a card number and CVC in extra, and so
    in the cache: they are masked (last four digits), on every path; the rest is kept."""
    card = {"number": "4242 4242 4242 4242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
    record = pay_b(
        payment_method_data={"type": "card", "card": card},
        shipping={"address": {"number": "12"}},  # a "number" outside a card is left alone
    )
    frames = [_normalize_bodies("payments", [b_page([record])], None, fast=fast).frame
              for fast in (True, False)]  # fmt: skip
    frames.append(normalize_payments([record]))
    for frame in frames:
        pd.testing.assert_frame_equal(frame, frames[0])
    extra = frames[0].iloc[0]["extra"]
    assert "4242 4242" not in extra and "123" not in extra
    assert json.loads(extra) == {
        "payment_method_data": {"type": "card", "card": {
            "number": "…4242", "exp_month": 12, "exp_year": 2030, "cvc": "…"}},
        "shipping": {"address": {"number": "12"}},
    }  # fmt: skip
    assert frames[0].iloc[0]["method_type"] == "card"


@pytest.mark.parametrize("fast", [True, False])
def test_masking_card_data_keeps_the_rest_of_extra_exactly(fast: bool) -> None:
    """Rows whose extra may hold card data are parsed and re-encoded: the other values must
    come out as they went in (an int beyond 64 bits became a float: 2**70 + 1 -> 1.18e+21)."""
    huge = 2**70 + 1  # (not a double: a float of it would not compare equal)
    records = [
        pay_b(id="pay_1", amount=huge, shipping={"address": {"number": "12"}}),
        pay_b(id="pay_2", invoice={"number": "INV-1", "total": -huge}),
        pay_b(id="pay_3", amount=huge),  # no "number": never re-encoded
    ]
    frame = _normalize_bodies("payments", [b_page(records)], None, fast=fast).frame
    assert [json.loads(e) for e in frame["extra"]] == [
        {"amount": huge, "shipping": {"address": {"number": "12"}}},
        {"invoice": {"number": "INV-1", "total": -huge}},
        {"amount": huge},
    ]
    assert frame["extra"][0] == f'{{"amount":{huge},"shipping":{{"address":{{"number":"12"}}}}}}'
    pd.testing.assert_frame_equal(normalize_payments(records), frame)


def test_the_object_of_an_expanded_object_is_kept_in_extra() -> None:
    record = pay_b(
        payment_method={"id": "pm_3", "object": "payment_method", "type": "card",
                        "card": {"brand": "mastercard", "last4": "4444", "object": "card"}},
        customer={"id": "cus_1", "object": "customer", "email": "a@b.example"},
        client_secret="pay_b_secret_zzz",
    )  # fmt: skip
    frames = [_normalize_bodies("payments", [b_page([record])], None, fast=fast).frame
              for fast in (True, False)]  # fmt: skip
    frames.append(normalize_payments([record]))
    for frame in frames:
        pd.testing.assert_frame_equal(frame, frames[0])
    row = frames[0].iloc[0]
    assert (row["payment_method_id"], row["customer_id"], row["card_brand"]) == (
        "pm_3", "cus_1", "mastercard"
    )  # fmt: skip
    # The record's own `object` and its client_secret are dropped; nested ones are not.
    assert json.loads(row["extra"]) == {
        "customer": {"email": "a@b.example", "object": "customer"},
        "payment_method": {"card": {"last4": "4444", "object": "card"},
                           "object": "payment_method"},
    }  # fmt: skip
    refund = {"id": "r1", "object": "refund", "amount": 5, "currency": "myr",
              "status": "pending", "created": 1767225600,
              "payment": {"id": "pay_2", "object": "payment", "amount": 9}}  # fmt: skip
    for fast in (True, False):
        got = _normalize_bodies("refunds", [b_page([refund])], None, fast=fast).frame.iloc[0]
        assert json.loads(got["extra"]) == {"payment": {"amount": 9, "object": "payment"}}


def test_nulls_are_never_empty_strings() -> None:
    record = pay_a(description="", currency="", status="", payment_method="",
                   payment_method_details={"bank_code": "", "bank": ""})  # fmt: skip
    for frame in (
        normalize_payments([record]),
        _normalize_bodies("payments", [a_page([record])], None, fast=True).frame,
    ):
        row = frame.iloc[0]
        for name in ("description", "currency", "status_raw", "method_type", "fpx_bank_code"):
            assert pd.isna(row[name]), name
        assert row["status"] == "unknown"


def test_metadata_text_and_extra_json() -> None:
    metadata = {"z": "1", "a": {"nested": [1, 2]}, "quote": 'say "hi"\n'}
    row = one(pay_b(metadata=metadata, receipt_url="https://r.example/1", capture_method="manual"))
    assert json.loads(row["metadata"]) == metadata
    assert row["extra"] == (
        '{"capture_method":"manual","receipt_url":"https://r.example/1"}'
    )  # sorted keys, compact
    # From a body the metadata is the object as the gateway sent it.
    page = (
        b'{"object":"list","has_more":false,"data":['
        + json.dumps(pay_b(metadata=metadata)).encode()
        + b"]}"
    )
    for fast in (True, False):
        got = _normalize_bodies("payments", [page], None, fast=fast).frame["metadata"].iloc[0]
        assert got == json.dumps(metadata)


@pytest.mark.parametrize("empty", [b"{ }", b"{\n}", b"{\r\n\t }", b"{}", b"null"])
@pytest.mark.parametrize("resource", ["payments", "refunds"])
def test_empty_metadata_with_whitespace_is_null(empty: bytes, resource: str) -> None:
    kind = b"payment" if resource == "payments" else b"refund"
    record = (
        b'{"id":"x_1","object":"' + kind + b'","amount":5,"currency":"myr","status":"failed",'
        b'"created":1767225600,"metadata":' + empty + b"}"
    )
    page = b'{"object":"list","has_more":false,"data":[' + record + b"]}"
    for fast in (True, False):
        batch = _normalize_bodies(resource, [page], None, fast=fast)  # type: ignore[arg-type]
        row = batch.frame.iloc[0]
        assert pd.isna(row["metadata"]) and pd.isna(row["extra"]), fast


def test_strings_needing_escapes_render_the_same_on_both_paths() -> None:
    tricky = ['quote " and \\ backslash', "new\nline\ttab\x01", "ünïcødé ✓ \u2028", ""]
    records = [pay_b(id=f"p{i}", receipt_url=s, capture_method=s,
                     last_payment_error={"code": "x", "message": s})
               for i, s in enumerate(tricky)]  # fmt: skip
    page = b_page(records)
    fast = _normalize_bodies("payments", [page], None, fast=True).frame
    tolerant = _normalize_bodies("payments", [page], None, fast=False).frame
    pd.testing.assert_frame_equal(fast, tolerant)
    for s, extra in zip(tricky, fast["extra"], strict=True):
        assert json.loads(extra)["receipt_url"] == s


def test_refund_payment_alias_and_expanded_payment() -> None:
    frame = normalize_refunds(
        [{"id": "r1", "payment": "pay_1", "amount": 5, "currency": "myr", "status": "pending",
          "created_at": "2026-01-01T00:00:00Z"},
         {"id": "r2", "payment": {"id": "pay_2", "object": "payment", "amount": 9},
          "amount": 5, "currency": "myr", "status": "succeeded", "created": 1767225600},
         {"id": "r3", "payment_id": "pay_3", "payment": "pay_other", "amount": 5,
          "currency": "myr", "status": "failed", "created": 1767225600}]
    )  # fmt: skip
    assert frame["payment_id"].tolist() == ["pay_1", "pay_2", "pay_3"]
    assert json.loads(frame["extra"].iloc[1]) == {"payment": {"amount": 9, "object": "payment"}}
    assert json.loads(frame["extra"].iloc[2]) == {"payment": "pay_other"}  # not lost
    refund = {"amount": 5, "currency": "myr", "status": "pending", "created": 1767225600}
    page = b_page([
        {"id": "rf0", "payment": "pay_1", **refund},
        {"id": "rf1", "payment_id": "pay_1", **refund},
        {"id": "rf2", "payment_id": "pay_3", "payment": "pay_x", **refund},  # both: tolerant
    ])  # fmt: skip
    fast = _normalize_bodies("refunds", [page], None, fast=True).frame
    pd.testing.assert_frame_equal(
        fast, _normalize_bodies("refunds", [page], None, fast=False).frame
    )
    assert fast["payment_id"].tolist() == ["pay_1", "pay_1", "pay_3"]  # from bodies too
    assert json.loads(fast["extra"].iloc[2]) == {"payment": "pay_x"}
    recorded = normalize_bodies("refunds", [body("tricky/refunds_mixed.json")]).frame
    assert recorded["payment_id"].tolist() == ["pay_a_offset", "pay_b_iso_capture"]


# --------------------------------------------------------------------------- variants, livemode


def test_mixed_variants_in_one_call() -> None:
    frame = normalize_payments([pay_a(id="a1"), pay_b(id="b1"), pay_a(id="a2")], livemode=False)
    assert frame["api_variant"].tolist() == ["A", "B", "A"]
    assert frame["currency"].tolist() == ["MYR"] * 3
    assert frame["created_at"].tolist() == [pd.Timestamp("2026-01-01", tz=UTC)] * 3
    bodies = [a_page([pay_a(id="a1")]), b_page([pay_b(id="b1")]), a_page([pay_a(id="a2")])]
    batch = normalize_bodies("payments", bodies, livemode=False)
    pd.testing.assert_frame_equal(batch.frame, frame)  # page order kept


def test_livemode_comes_from_the_key_for_a_and_the_record_for_b() -> None:
    frame = normalize_payments([pay_a(), pay_b(livemode=True), pay_b(livemode=None)],
                               livemode=False)  # fmt: skip
    assert frame["livemode"].tolist() == [False, True, False]
    assert normalize_payments([pay_a()])["livemode"].isna().all()


# --------------------------------------------------------------------------- bad data


def test_rejects_from_bodies_keep_the_good_rows() -> None:
    bodies = [body("tricky/payments_A.json"), body("tricky/not_json.html"),
              b'{"meta": {"total": 0}}', body("tricky/payments_B.json")]  # fmt: skip
    batch = normalize_bodies("payments", bodies, livemode=False)
    assert batch.frame["id"].tolist() == [
        "pay_a_offset", "pay_a_naive", "pay_a_kwd", "pay_b_iso_capture", "pay_b_expanded"
    ]  # fmt: skip

    def reject(prefix: str) -> Any:
        (found,) = [r for r in batch.rejects if r.reason.startswith(prefix)]
        return found

    assert len(batch.rejects) == 6
    reject("record has no `id`")
    reject("creation time `created_at` = 'yesterday' is not an ISO 8601 timestamp")
    reject("record is not a JSON object (got str)")
    reject("response body is not a list envelope of either API variant (no `data` list)")
    reject("record has no usable creation time")
    assert json.loads(reject("record has no `id`").record)["amount"] == 500  # as sent
    assert reject("response body is not JSON").record.startswith("<html>")
    assert batch.unknown_statuses == {"on_hold"}
    assert {r.resource for r in batch.rejects} == {"payments"}


def test_dict_api_raises_on_rejects_unless_asked_to_warn() -> None:
    records = [pay_a(id="ok"), pay_a(id=None), pay_a(id="late", created_at="soon"), 7]
    with pytest.raises(ValueError, match=r"3 payments record\(s\) cannot become rows") as exc:
        normalize_payments(records)
    assert "record has no `id`" in str(exc.value) and "on_reject='warn'" in str(exc.value)
    with pytest.warns(UserWarning, match="3 payments record"):
        frame = normalize_payments(records, on_reject="warn")
    assert frame["id"].tolist() == ["ok"]
    assert [r.reason.split(" ")[0] for r in frame.attrs["rejects"]] == [
        "record", "record", "creation"
    ]  # fmt: skip


def test_bad_arguments_say_what_to_do() -> None:
    with pytest.raises(ValueError, match="iterable of API objects"):
        normalize_payments(pay_a())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'payments' or 'refunds'"):
        normalize_bodies("charges", [])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="on_reject"):
        normalize_refunds([], on_reject="ignore")  # type: ignore[arg-type]


def test_empty_input_gives_empty_typed_tables() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_schema(normalize_payments([]), "payments")
        assert_schema(normalize_refunds([]), "refunds")
        assert_schema(normalize_bodies("payments", []).frame, "payments")
        assert_schema(normalize_bodies("refunds", [b_page([])]).frame, "refunds")
        assert len(normalize_bodies("payments", [a_page([])]).frame) == 0


def test_conform_reads_numeric_times_as_unix_seconds() -> None:
    """conform (hand-made frames) reads a number as the library reads one everywhere: Unix
    seconds; pandas alone reads it as nanoseconds, so 1767225600 became 1970-01-01 00:00:01."""
    frame = _schema.conform(
        pd.DataFrame({"id": ["pay_1", "pay_2"], "created_at": [1767225600, 1767225600.5],
                      "captured_at": pd.array([1767225660, None], dtype="Int64")}),
        "payments",
    )  # fmt: skip
    assert_schema(frame, "payments")
    assert frame["created_at"].tolist() == [
        pd.Timestamp("2026-01-01", tz=UTC), pd.Timestamp("2026-01-01T00:00:00.5", tz=UTC)
    ]  # fmt: skip
    assert frame["captured_at"][0] == pd.Timestamp("2026-01-01T00:01:00", tz=UTC)
    assert pd.isna(frame["captured_at"][1])


# --------------------------------------------------------------------------- bodies that are not envelopes


def test_recorded_error_bodies_are_not_envelopes() -> None:
    for variant in ("A", "B"):
        for status in (400, 401, 404):
            raw = body(f"sandbox/{variant}/error_{status}.json")
            with pytest.raises(MalformedResponseError):
                page_info(raw)
            batch = normalize_bodies("payments", [raw])
            assert len(batch.frame) == 0 and len(batch.rejects) == 1


def test_dict_api_takes_datetime_objects_and_odd_keys() -> None:
    from datetime import datetime, timedelta, timezone

    plus8 = timezone(timedelta(hours=8))
    frame = normalize_payments(
        [pay_a(id="naive", created_at=datetime(2026, 1, 1)),
         pay_a(id="aware", created_at=datetime(2026, 1, 1, 8, tzinfo=plus8))]
    )  # fmt: skip
    assert frame["created_at"].tolist() == [pd.Timestamp("2026-01-01", tz=UTC)] * 2
    odd = normalize_payments([pay_a(metadata={1: "int key"})])
    assert odd["id"].tolist() == ["pay_a"] and json.loads(odd["metadata"].iloc[0]) == {
        "1": "int key"
    }
