"""Normalisation reviewed field by field against DESIGN.md section 2 and docs/tables.md.

Each test pins one documented rule (or a fix found by the review) on every path: list
bodies read fast and tolerantly, and objects held as dicts.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pandas as pd
import pytest

from gwtools.normalize._normalize import _normalize_bodies, normalize_payments, normalize_refunds
from tests.library.test_normalize import pay_a, pay_b

UTC = "UTC"


def a_page(records: list[Any]) -> bytes:
    meta = {"total": len(records), "page": 1, "limit": 100, "totalPages": 1}
    return json.dumps({"data": records, "meta": meta}).encode()


def b_page(records: list[Any]) -> bytes:
    return json.dumps({"object": "list", "data": records, "has_more": False}).encode()


def refund_b(**fields: Any) -> dict[str, Any]:
    return {"id": "rfnd_1", "object": "refund", "payment_id": "pay_1", "amount": 500,
            "currency": "myr", "status": "succeeded", "created": 1767225600, **fields}  # fmt: skip


def frames(record: dict[str, Any], resource: str = "payments") -> list[pd.DataFrame]:
    """The record read from a body (fast, tolerant) and as a dict; all three must agree."""
    page = (b_page if "created" in record else a_page)([record])
    out = [_normalize_bodies(resource, [page], False, fast=f).frame for f in (True, False)]  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = normalize_payments if resource == "payments" else normalize_refunds
        out.append(read([record], livemode=False))
    for frame in out[1:]:
        pd.testing.assert_frame_equal(frame, out[0])
    return out


def row(record: dict[str, Any], resource: str = "payments") -> pd.Series:
    return frames(record, resource)[0].iloc[0]


def extra(r: pd.Series) -> Any:
    return None if pd.isna(r["extra"]) else json.loads(r["extra"])


def na(v: Any) -> Any:
    return None if pd.isna(v) else v


# --------------------------------------------------------------------------- amounts


@pytest.mark.parametrize("field", ["amount", "refunded_amount"])
def test_an_integral_json_number_is_the_amount(field: str) -> None:
    """JSON does not tell 1000 from 1000.0 (a proxy re-encoding numbers as doubles sends the
    latter); the amount is known, so it is kept, not left null."""
    r = row(pay_b(**{field: 1000.0}))
    assert r[field] == 1000 and extra(r) is None
    if field == "amount":
        assert r["amount_major"] == 10.0


def test_an_integral_json_number_is_a_refunds_amount() -> None:
    r = row(refund_b(amount=500.0), "refunds")
    assert (r["amount"], r["amount_major"], extra(r)) == (500, 5.0, None)


@pytest.mark.parametrize("value", [1000.5, "1000", True, 2.0**64, 1e300])
def test_an_amount_that_is_not_an_integer_is_null_and_kept_in_extra(value: Any) -> None:
    r = row(pay_b(amount=value))
    assert pd.isna(r["amount"]) and pd.isna(r["amount_major"])
    assert extra(r) == {"amount": value}


def test_negative_amounts_are_kept_as_sent() -> None:
    r = row(pay_b(amount=-500, refunded_amount=-1))
    assert (r["amount"], r["amount_major"], r["refunded_amount"]) == (-500, -5.0, -1)


# --------------------------------------------------------------------------- currencies


@pytest.mark.parametrize(
    ("currency", "major"),
    [("bhd", 1.0), ("Myr", 10.0), ("isk", 1000.0), ("clf", 0.1)],  # 3, 2, 0 and 4 digits
)
def test_currency_is_upper_case_and_babel_gives_the_exponent(currency: str, major: float) -> None:
    r = row(pay_a(currency=currency, amount=1000))
    assert (r["currency"], r["amount_major"]) == (currency.upper(), major)


def test_a_currency_that_is_not_text_is_null_and_kept_in_extra() -> None:
    r = row(pay_a(currency=458))
    assert pd.isna(r["currency"]) and pd.isna(r["amount_major"])
    assert extra(r) == {"currency": 458}


# --------------------------------------------------------------------------- statuses


@pytest.mark.parametrize(("raw", "make"), [("CAPTURED", pay_a), ("Succeeded", pay_b),
                                           ("Cancelled", pay_a), ("CANCELED", pay_b)])  # fmt: skip
def test_a_status_is_read_case_as_sent(raw: str, make: Any) -> None:
    r = row(make(status=raw))
    assert (r["status"], r["status_raw"], r["outcome"]) == ("unknown", raw, "unknown")


def test_a_status_that_is_not_text_is_unknown_and_kept_in_extra() -> None:
    r = row(pay_b(status=5))
    assert (r["status"], na(r["status_raw"]), r["outcome"], extra(r)) == (
        "unknown", None, "unknown", {"status": 5}
    )  # fmt: skip


@pytest.mark.parametrize("raw", ["SUCCEEDED", "canceled"])
def test_an_unknown_refund_status_is_unknown_and_kept_in_extra(raw: str) -> None:
    r = row(refund_b(status=raw), "refunds")
    assert (r["status"], extra(r)) == ("unknown", {"status": raw})


# --------------------------------------------------------------------------- method


@pytest.mark.parametrize(
    ("details", "expanded", "kept"),
    [
        # the details win; the expanded method's differing value stays in extra
        ({"type": "card", "brand": "mastercard"},
         {"id": "pm_1", "type": "card", "card": {"brand": "visa"}},
         {"payment_method": {"card": {"brand": "visa"}}}),
        ({"type": "fpx", "bank_code": "MB2U0227"},
         {"id": "pm_1", "type": "fpx", "fpx": {"bank_code": "BCBB0235", "bank": "CIMB Clicks"}},
         {"payment_method": {"fpx": {"bank_code": "BCBB0235"}}}),
        ({"type": "card", "brand": "visa"},
         {"id": "pm_1", "type": "fpx"},
         {"payment_method": {"type": "fpx"}}),
        # the same value twice says nothing more: taken from both
        ({"type": "card", "brand": "visa"},
         {"id": "pm_1", "type": "card", "card": {"brand": "visa"}},
         None),
    ],
)  # fmt: skip
def test_a_value_the_details_override_stays_in_extra(
    details: dict[str, Any], expanded: dict[str, Any], kept: Any
) -> None:
    r = row(pay_b(payment_method=expanded, payment_method_details=details))
    assert r["payment_method_id"] == "pm_1"
    assert r["method_type"] == details["type"]
    assert na(r["card_brand"]) == details.get("brand")
    assert na(r["fpx_bank_code"]) == details.get("bank_code")
    if details["type"] == "fpx":
        assert r["fpx_bank"] == "CIMB Clicks"  # (the details give none)
    assert extra(r) == kept


def test_variant_a_method_kind_is_lower_cased() -> None:
    r = row(pay_a(payment_method="FPX", payment_method_details={"bank_code": "MB2U0227",
                                                                 "bank": "Maybank2u"}))  # fmt: skip
    assert (r["method_type"], na(r["payment_method_id"]), r["fpx_bank"]) == (
        "fpx", None, "Maybank2u"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("record", "method_type", "kept"),
    [
        # the details' type (given, or told by their fields) wins; the kind that differs
        # stays in extra rather than being dropped
        (pay_a(payment_method="card", payment_method_details={"type": "fpx", "bank_code": "X"}),
         "fpx", {"payment_method": "card"}),
        (pay_a(payment_method="card", payment_method_details={"bank_code": "X"}),
         "fpx", {"payment_method": "card"}),
        (pay_a(payment_method="fpx", payment_method_details={"brand": "visa"}),
         "card", {"payment_method": "fpx"}),
        (pay_b(payment_method="fpx", payment_method_details={"card": {"brand": "visa"}}),
         "card", {"payment_method": "fpx"}),
        # the same kind says nothing more, whatever its case
        (pay_a(payment_method="FPX", payment_method_details={"type": "fpx", "bank_code": "X"}),
         "fpx", None),
    ],
)  # fmt: skip
def test_a_method_kind_the_details_contradict_stays_in_extra(
    record: dict[str, Any], method_type: str, kept: Any
) -> None:
    r = row(record)
    assert r["method_type"] == method_type
    assert extra(r) == kept


def test_a_method_field_of_the_wrong_type_is_null_and_kept_in_extra() -> None:
    r = row(pay_b(payment_method_details={"type": "card", "brand": 5}))
    assert r["method_type"] == "card" and pd.isna(r["card_brand"])
    assert extra(r) == {"payment_method_details": {"brand": 5}}


# --------------------------------------------------------------------------- failure codes


def test_variant_a_error_object_gives_the_codes_and_keeps_the_rest() -> None:
    r = row(pay_a(status="failed", error={"type": "card_error", "code": "card_declined",
                                          "decline_code": "lost_card", "message": "m"}))  # fmt: skip
    assert (r["failure_code"], r["decline_code"]) == ("card_declined", "lost_card")
    assert extra(r) == {"error": {"message": "m", "type": "card_error"}}


def test_a_top_level_failure_code_wins_and_the_error_objects_stays_in_extra() -> None:
    r = row(pay_b(failure_code="expired_card", last_payment_error={"code": "card_declined"}))
    assert r["failure_code"] == "expired_card"
    assert extra(r) == {"last_payment_error": {"code": "card_declined"}}


# --------------------------------------------------------------------------- flags, others


@pytest.mark.parametrize("value", ["true", 1])
def test_a_flag_that_is_not_a_boolean_is_null_and_kept_in_extra(value: Any) -> None:
    r = row(pay_b(captured=value, refunded=value))
    assert pd.isna(r["captured"]) and pd.isna(r["refunded"])
    assert extra(r) == {"captured": value, "refunded": value}


def test_variant_b_may_give_updated_and_expiry_times() -> None:
    r = row(pay_b(updated_at=1767225660, expires_at="2026-01-01T01:00:00+01:00"))
    assert r["updated_at"] == pd.Timestamp("2026-01-01T00:01", tz=UTC)
    assert r["expires_at"] == pd.Timestamp("2026-01-01T00:00", tz=UTC)


def test_the_creation_field_of_the_other_variant_is_kept_in_extra() -> None:
    r = row(pay_b(created_at="2026-01-02T00:00:00Z"))
    assert r["created_at"] == pd.Timestamp("2026-01-01", tz=UTC)
    assert extra(r) == {"created_at": "2026-01-02T00:00:00Z"}


@pytest.mark.parametrize("metadata", [[], "{}", 5])
def test_metadata_that_is_not_an_object_is_null_and_kept_in_extra(metadata: Any) -> None:
    r = row(pay_b(metadata=metadata))
    assert pd.isna(r["metadata"]) and extra(r) == {"metadata": metadata}


def test_metadata_keeps_non_string_and_nested_values() -> None:
    metadata = {"n": 1, "f": 1.5, "b": True, "z": None, "l": [1, "x"], "o": {"p": {"q": "r"}}}
    record = pay_b(metadata=metadata)
    got = [
        _normalize_bodies("payments", [b_page([record])], False, fast=f).frame
        for f in (True, False)
    ]
    got.append(normalize_payments([record]))  # (a dict's text is compact JSON)
    for frame in got:
        assert json.loads(frame["metadata"].iloc[0]) == metadata and frame["extra"].isna().all()


def test_unknown_refund_fields_are_kept_in_extra() -> None:
    r = row(refund_b(charge="ch_1", reason="duplicate", receipt_number=None), "refunds")
    assert (r["reason"], extra(r)) == ("duplicate", {"charge": "ch_1"})


# --------------------------------------------------------------------------- rejects


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (pay_b(created=1767225600000), ["`created` = 1767225600000", "milliseconds"]),
        (pay_b(created=-(10**13)), ["`created` = -10000000000000", "years 1 to 9999"]),
        (pay_b(created="1767225600000"), ["'1767225600000'", "milliseconds"]),
        (pay_a(created_at="yesterday"), ["`created_at` = 'yesterday' is not an ISO 8601"]),
        (pay_b(created=True), ["`created` = true", "Unix seconds"]),
        (pay_a(created_at={"at": 1}), ['`created_at` = {"at":1}', "ISO 8601"]),
        (pay_a(created_at=""), ["`created_at` is empty"]),
    ],
)
def test_a_rejected_creation_time_says_what_is_wrong(
    record: dict[str, Any], words: list[str]
) -> None:
    page = (b_page if "created" in record else a_page)([record])
    for fast in (True, False):
        (reject,) = _normalize_bodies("payments", [page], False, fast=fast).rejects
        for w in words:
            assert w in reject.reason, (w, reject.reason)


@pytest.mark.parametrize(
    ("record", "resource", "other"),
    [
        (pay_a(object="refund"), "payments", "refund"),
        (pay_b(object="payment_intent"), "payments", "payment_intent"),
        (refund_b(object="payment"), "refunds", "payment"),
    ],
)
def test_a_record_whose_object_is_another_kind_keeps_it_in_extra(
    record: dict[str, Any], resource: str, other: str
) -> None:
    got = row(record, resource)
    assert json.loads(got["extra"]) == {"object": other}


@pytest.mark.parametrize(
    ("record", "resource"), [(pay_a(), "payments"), (pay_b(), "payments"), (refund_b(), "refunds")]
)
def test_a_record_whose_object_is_its_own_kind_drops_it(
    record: dict[str, Any], resource: str
) -> None:
    assert pd.isna(row(record, resource)["extra"])
