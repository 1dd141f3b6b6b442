"""The fast path (strict decoding, vectorised) gives exactly what the tolerant path gives.

normalize_bodies reads well-formed bodies with strictly typed structs and Arrow, and hands
any page it cannot judge column-wise to the record-by-record tolerant path. Generated
pages of both variants, with the oddities a gateway may send, must come out the same
either way: same frame, same rejects, same unknown statuses.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gwtools._normalize as normalize
from gwtools._normalize import _normalize_bodies

TEXT = st.one_of(
    st.sampled_from(["", "Order #1", 'say "hi"', "back\\slash", "line\nbreak", "ünï ✓"]),
    st.text(max_size=8),
)
MAYBE_TEXT = st.one_of(st.none(), TEXT)
TIME_A = st.sampled_from(
    ["2026-01-01T00:00:00Z", "2026-01-01T08:00:00+08:00", "2026-01-01T00:00:00",
     "2026-01-01 00:00:00.5", "junk", ""]
)  # fmt: skip
TIME_B = st.one_of(st.integers(1_600_000_000, 1_900_000_000), st.just(1.5e9), TIME_A)
STATUS = st.sampled_from(
    ["pending", "captured", "succeeded", "failed", "cancelled", "canceled", "requires_action",
     "processing", "requires_capture", "authorized", "expired", "on_hold", ""]
)  # fmt: skip
CURRENCY = st.sampled_from(["MYR", "myr", "JPY", "kwd", "XQQ", ""])
DETAILS = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["card", "fpx", "CARD"]),
            "brand": MAYBE_TEXT,
            "last4": MAYBE_TEXT,
            "exp_month": st.integers(1, 12),
            "bank_code": MAYBE_TEXT,
            "bank": MAYBE_TEXT,
        },
    ),
    st.fixed_dictionaries(  # nested per method, as some gateways send it
        {},
        optional={
            "type": st.sampled_from(["card", "fpx"]),
            "brand": MAYBE_TEXT,
            "bank_code": MAYBE_TEXT,
            "card": st.fixed_dictionaries(
                {}, optional={"brand": MAYBE_TEXT, "last4": MAYBE_TEXT, "exp_year": st.integers()}
            ),
            "fpx": st.one_of(
                st.none(),
                st.fixed_dictionaries({}, optional={"bank_code": MAYBE_TEXT, "bank": MAYBE_TEXT}),
            ),
        },
    ),
    st.just({"card": {"brand": "visa", "wallet": "apple_pay"}}),  # unknown nested: tolerant
)
ERROR = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {}, optional={"code": MAYBE_TEXT, "decline_code": MAYBE_TEXT, "message": MAYBE_TEXT}
    ),
)
COMMON = {
    "object": st.just("payment"),
    "amount": st.one_of(st.none(), st.integers(0, 10**9)),
    "currency": CURRENCY,
    "status": STATUS,
    "description": MAYBE_TEXT,
    "payment_method_details": DETAILS,
    "captured": st.one_of(st.none(), st.booleans()),
    "refunded_amount": st.integers(0, 100),
    "metadata": st.one_of(st.none(), st.just({}), st.dictionaries(TEXT, TEXT, max_size=2)),
    "failure_code": MAYBE_TEXT,
}
OPTIONAL_A = {
    "payment_method": st.sampled_from(["card", "fpx", None]),
    "captured_at": st.one_of(st.none(), TIME_A),
    "updated_at": TIME_A,
    "expires_at": st.one_of(st.none(), TIME_A),
    "success_url": MAYBE_TEXT,
    "amount_captured": st.integers(0, 5),
    "created": st.just(1_767_225_600),  # a second creation field: the tolerant path decides
    "surprise": st.integers(),  # an unknown field: the tolerant path
}
OPTIONAL_B = {
    "payment_method": st.one_of(st.none(), st.just("pm_1"), st.just("card")),
    "captured_at": st.one_of(st.none(), TIME_B),
    "livemode": st.booleans(),
    "last_payment_error": ERROR,
    "receipt_email": MAYBE_TEXT,
    "receipt_url": MAYBE_TEXT,
    "client_secret": st.just("pay_x_secret_y"),
    "next_action": st.one_of(st.none(), st.just({"type": "redirect_to_url", "b": [1, None]})),
    "customer": MAYBE_TEXT,
}


def record(variant: str) -> st.SearchStrategy[Any]:
    ident = st.one_of(st.text(alphabet="abcdef0123456789", min_size=1, max_size=6), st.none())
    created = {"created_at": TIME_A} if variant == "A" else {"created": TIME_B}
    obj = st.fixed_dictionaries(
        {"id": ident.map(lambda s: s if s is None else f"pay_{s}"), **created},
        optional=COMMON | (OPTIONAL_A if variant == "A" else OPTIONAL_B),
    )
    return st.one_of(obj, obj, obj, obj, st.just("not an object"))


def page(variant: str) -> st.SearchStrategy[bytes]:
    def dump(records: list[Any]) -> bytes:
        if variant == "A":
            meta = {"total": 1, "page": 1, "limit": 100, "totalPages": 1}
            return json.dumps({"data": records, "meta": meta}).encode()
        return json.dumps({"object": "list", "data": records, "has_more": False}).encode()

    return st.lists(record(variant), max_size=6).map(dump)


PAGES = st.lists(st.one_of(page("A"), page("B"), st.just(b"<html>oops</html>")), max_size=6)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PAGES)
def test_fast_and_tolerant_paths_agree(bodies: list[bytes]) -> None:
    fast = _normalize_bodies("payments", bodies, False, fast=True)
    tolerant = _normalize_bodies("payments", bodies, False, fast=False)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert fast.rejects == tolerant.rejects
    assert fast.unknown_statuses == tolerant.unknown_statuses


def test_pages_redone_across_chunks_keep_their_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(normalize, "_CHUNK", 3)  # many stage-1 chunks for few records

    def rec(i: int, **extra: Any) -> dict[str, Any]:
        return {"id": f"pay_{i}", "amount": i, "currency": "MYR", "status": "captured",
                "created_at": f"2026-01-01T00:00:{i:02d}Z", **extra}  # fmt: skip

    bodies = []
    for p in range(6):
        records = [rec(p * 4 + j) for j in range(4)]
        if p == 2:
            records[1]["created_at"] = "2026-01-01T00:00:09"  # naive: still fast, parsed as UTC
        if p == 3:
            records[2]["id"] = ""  # no id: this page is redone record by record
        if p == 4:
            records[0]["weird"] = 1  # unknown field: this page is never fast
        bodies.append(json.dumps({"data": records, "meta": {"totalPages": 6}}).encode())
    fast = _normalize_bodies("payments", bodies, None, fast=True)
    tolerant = _normalize_bodies("payments", bodies, None, fast=False)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert fast.frame["id"].tolist() == [f"pay_{i}" for i in range(24) if i != 14]
    assert [r.reason for r in fast.rejects] == ["record has no `id`"]
    assert json.loads(fast.frame.set_index("id").loc["pay_16", "extra"]) == {"weird": 1}


def test_unknown_top_level_fields_stay_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [
        {"id": f"pay_{i}", "status": "succeeded", "created": 1767225600 + i, "livemode": False,
         "statement_descriptor": f"SHOP {i}", "payment_method_types": ["card"],
         "review": None, "receipt_url": "https://r.example/x"}
        for i in range(5)
    ]  # fmt: skip
    page = json.dumps({"object": "list", "data": records, "has_more": False}).encode()
    tolerant = _normalize_bodies("payments", [page], None, fast=False)

    def no_tolerant_path(body: bytes) -> Any:
        raise AssertionError("the page went to the tolerant path")

    monkeypatch.setattr(normalize, "decode_raw_records", no_tolerant_path)
    fast = _normalize_bodies("payments", [page], None, fast=True)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert json.loads(fast.frame["extra"].iloc[3]) == {
        "payment_method_types": ["card"],
        "receipt_url": "https://r.example/x",
        "statement_descriptor": "SHOP 3",
    }
