"""The fast path (strict decoding, vectorised) gives exactly what the tolerant path gives.

normalize_bodies reads well-formed bodies with strictly typed structs and Arrow, and hands
any page it cannot judge column-wise to the record-by-record tolerant path. Generated
pages of both variants, with the oddities a gateway may send, must come out the same
either way: same frame, same rejects, same unknown statuses.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gwtools.normalize._normalize as normalize
from gwtools.http._wire import read_object
from gwtools.normalize._normalize import _normalize_bodies

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
METHOD_DATA = st.one_of(  # variant B's creation data: its type is the last method source
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["card", "fpx", "FPX", ""]),
            "card": st.just({"token": "tok_1"}),
            "fpx": st.one_of(st.none(), st.just({"bank_code": "TEST0001"})),
        },
    ),
    st.just({"type": "fpx", "object": "payment_method_data"}),  # unknown nested: tolerant
)
OPTIONAL_B = {
    "payment_method": st.one_of(st.none(), st.just("pm_1"), st.just("card")),
    "payment_method_data": METHOD_DATA,
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


OBJECTS = st.lists(st.one_of(record("A"), record("B")), max_size=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OBJECTS)
def test_objects_fast_and_tolerant_paths_agree(objects: list[Any]) -> None:
    fast = normalize._normalize_object_list("payments", objects, False, fast=True)
    tolerant = normalize._normalize_object_list("payments", objects, False, fast=False)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert fast.rejects == tolerant.rejects
    assert fast.unknown_statuses == tolerant.unknown_statuses


def test_objects_are_converted_not_encoded_as_bodies(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [{"id": f"pay_{i}", "amount": 100 + i, "currency": "MYR", "status": "captured",
                "metadata": {"order": i}, "created_at": f"2026-01-01T00:00:0{i}Z",
                "statement_descriptor": "SHOP"} for i in range(3)]  # fmt: skip

    def refuse(*_args: Any) -> Any:
        raise AssertionError("objects went through JSON bodies or the tolerant path")

    for name in ("decode_fast", "decode_raw_records"):
        monkeypatch.setattr(normalize, name, refuse)
    monkeypatch.setattr(normalize._Collector, "add", refuse)
    frame = normalize.normalize_payments(objects, livemode=False)
    assert frame["amount"].tolist() == [100, 101, 102]
    assert frame["metadata"].tolist() == ['{"order":0}', '{"order":1}', '{"order":2}']
    assert frame["extra"].tolist() == ['{"statement_descriptor":"SHOP"}'] * 3


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(OBJECTS)
def test_retrieved_object_bodies_read_as_the_records_they_are(objects: list[Any]) -> None:
    # A retrieved object is given with the variant _wire.read_object tells; it is decoded as
    # one record (no list envelope around it), alike on both paths and as its dict reads.
    objects = [o for o in objects if isinstance(o, dict)]  # (read_object refuses the others)
    # (compact JSON in the dict's order: the metadata text a dict gives, see _normalize)
    parts = [read_object(msgspec.json.encode(o)) for o in objects]
    fast = _normalize_bodies("payments", parts, False, fast=True)
    tolerant = _normalize_bodies("payments", parts, False, fast=False)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert fast.rejects == tolerant.rejects
    from_dicts = normalize._normalize_object_list("payments", objects, False)
    pd.testing.assert_frame_equal(fast.frame, from_dicts.frame)
    assert [r.reason for r in fast.rejects] == [r.reason for r in from_dicts.rejects]


def test_retrieved_objects_and_list_bodies_mix_in_one_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed = json.dumps({"object": "list", "data": [pay(id="pay_1")], "has_more": True}).encode()
    got_a = json.dumps({"id": "pay_2", "amount": 5, "currency": "MYR", "status": "captured",
                        "created_at": "2026-01-01T00:00:00Z", "surprise": 1}).encode()  # fmt: skip
    got_b = json.dumps(pay(id="pay_3", amount=7)).encode()
    decoded: list[bytes] = []
    real = normalize.decode_fast
    monkeypatch.setattr(
        normalize, "decode_fast", lambda r, body: decoded.append(body) or real(r, body)
    )
    batch = normalize.normalize_bodies(
        "payments", [("A", got_a), listed, ("B", got_b)], livemode=False, check_ids=True
    )
    assert decoded == [listed]  # the objects were never wrapped into list bodies
    frame = batch.frame
    assert frame["id"].tolist() == ["pay_2", "pay_1", "pay_3"]
    assert frame["api_variant"].tolist() == ["A", "B", "B"]
    assert frame["amount"].tolist() == [5, 1000, 7]
    assert frame["extra"].fillna("").tolist() == ['{"surprise":1}', "", ""]
    damaged = normalize.normalize_bodies("payments", [("B", b'{"id":"pay_x!","created":1}')],
                                         check_ids=True)  # fmt: skip
    assert [r.kind for r in damaged.rejects] == [normalize.MALFORMED_ID]
    broken = normalize.normalize_bodies("payments", [("B", b'{"id":"pay_y",')])
    assert broken.rejects[0].reason.startswith("record is not valid JSON")


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


def read_on_the_fast_path(page: bytes, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The page normalised without the tolerant path, checked equal to the tolerant path's."""
    tolerant = _normalize_bodies("payments", [page], None, fast=False)

    def no_tolerant_path(body: bytes) -> Any:
        raise AssertionError("the page went to the tolerant path")

    monkeypatch.setattr(normalize, "decode_raw_records", no_tolerant_path)
    fast = _normalize_bodies("payments", [page], None, fast=True)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    return fast


def test_unknown_top_level_fields_stay_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [
        {"id": f"pay_{i}", "status": "succeeded", "created": 1767225600 + i, "livemode": False,
         "statement_descriptor": f"SHOP {i}", "payment_method_types": ["card"],
         "review": None, "receipt_url": "https://r.example/x"}
        for i in range(5)
    ]  # fmt: skip
    page = json.dumps({"object": "list", "data": records, "has_more": False}).encode()
    fast = read_on_the_fast_path(page, monkeypatch)
    assert json.loads(fast.frame["extra"].iloc[3]) == {
        "payment_method_types": ["card"],
        "receipt_url": "https://r.example/x",
        "statement_descriptor": "SHOP 3",
    }


def test_an_error_object_gives_the_failure_codes_on_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = [{"id": "pay_1", "status": "failed", "created_at": "2026-01-01T00:00:00Z",
                "error": {"code": "card_declined", "decline_code": "lost_card", "message": "m"}}]  # fmt: skip
    page = json.dumps({"data": records, "meta": {"totalPages": 1}}).encode()
    row = read_on_the_fast_path(page, monkeypatch).frame.iloc[0]
    assert (row["failure_code"], row["decline_code"]) == ("card_declined", "lost_card")
    assert row["extra"] == '{"error":{"message":"m"}}'


def test_the_creation_datas_method_type_is_read_on_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = {"type": "FPX", "fpx": {"bank_code": "TEST0001"}}
    records = [
        {"id": "pay_1", "status": "requires_action", "created": 1767225600,
         "payment_method": "pm_1", "payment_method_data": data},
        {"id": "pay_2", "status": "succeeded", "created": 1767225601, "payment_method": None,
         "payment_method_data": {"type": "card", "card": {"token": "tok_1"}},
         "payment_method_details": {"type": "fpx", "bank_code": "MB2U0227"}},
        {"id": "pay_3", "status": "succeeded", "created": 1767225602,
         "payment_method_data": {"type": "card"}},
    ]  # fmt: skip
    page = json.dumps({"object": "list", "data": records, "has_more": False}).encode()
    frame = read_on_the_fast_path(page, monkeypatch).frame
    assert frame["method_type"].fillna("").tolist() == ["fpx", "fpx", "card"]
    assert frame["payment_method_id"].tolist()[0] == "pm_1"
    assert frame["fpx_bank_code"].fillna("").tolist() == ["", "MB2U0227", ""]  # details only
    assert [json.loads(e)["payment_method_data"] for e in frame["extra"]] == [
        r["payment_method_data"] for r in records
    ]


def test_empty_metadata_with_whitespace_is_null_on_the_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    page = (
        b'{"object":"list","has_more":false,"data":['
        b'{"id":"pay_1","created":1767225600,"metadata":{ }},'
        b'{"id":"pay_2","created":1767225600,"metadata":{\n\t}},'
        b'{"id":"pay_3","created":1767225600,"metadata":{ "a" : 1 }}]}'
    )
    frame = read_on_the_fast_path(page, monkeypatch).frame
    assert frame["metadata"].fillna("").tolist() == ["", "", '{ "a" : 1 }']


# --------------------------------------------------------------------------- edge cases by hand
# (kept from the retired C scanner's tests: escapes, free-form and unknown fields, damaged
# bodies, invalid UTF-8, 1e400, ints beyond int64; both paths must read them alike)


def pay(**fields: Any) -> dict[str, Any]:
    return {"id": "pay_1", "object": "payment", "amount": 1000, "currency": "myr",
            "status": "succeeded", "created": 1767225600, "livemode": False, **fields}  # fmt: skip


def b_body(*records: Any, ascii: bool = False) -> bytes:
    env = {"object": "list", "data": list(records), "has_more": False}
    return json.dumps(env, ensure_ascii=ascii).encode()


def assert_same(bodies: list[bytes], resource: Any = "payments") -> Any:
    fast = _normalize_bodies(resource, bodies, False, fast=True)
    tolerant = _normalize_bodies(resource, bodies, False, fast=False)
    pd.testing.assert_frame_equal(fast.frame, tolerant.frame)
    assert fast.rejects == tolerant.rejects
    assert fast.unknown_statuses == tolerant.unknown_statuses
    return fast


ACCEPTED = [
    pay(description='café "q" \\ tab\t ✓ 😀 \\u00e9'),  # escapes in a column
    pay(failure_message='a/b "c" \n \u0001 ünï'),  # extra kept as sent
    pay(receipt_url="x\u2028y\x7f"),
    pay(payment_method_details={"type": "card", "card": {"brand": "visa", "last4": "4242"}}),
    pay(payment_method_details={"card": {}, "fpx": None}),
    pay(payment_method_details={}),
    pay(payment_method_details={"fpx": {"bank_code": "X", "bank": None}, "exp_month": -0}),
    pay(last_payment_error={"code": "c", "message": "m", "doc_url": None}),
    pay(last_payment_error={}),
    pay(error={"code": "c", "decline_code": "d", "message": "m"}),  # variant A's error object
    pay(failure_code="f", error={"code": "c"}),  # two sources: the top level wins
    pay(error={}, last_payment_error={"decline_code": "d"}),
    pay(metadata={"b": 1, "a": [1.5, {"x": None}], "": True}),
    pay(metadata=None),
    pay(metadata={}),
    pay(metadata="text"),  # not an object: the page is redone by the tolerant path
    pay(id=""),
    pay(id=None),
    pay(created=None, created_at="2026-01-01T00:00:00Z"),
    pay(created_at="2026-01-01T00:00:00Z"),  # two creation fields
    pay(created="2026-03-01T10:00:00.123456+08:00"),
    pay(created="2024-02-29T23:59:59.5-05:30", captured_at=0),
    pay(next_action={"type": "redirect_to_url", "b": [1, None], "a": "x"}),
    pay(next_action={}),
    pay(payment_method_data={"type": "fpx", "fpx": {"bank_code": "TEST0001"}}),
    pay(payment_method="pm_1", payment_method_data={"type": "card", "card": {"token": "t"}}),
    pay(payment_method_data={}),
    pay(payment_method_data={"type": None, "card": None}),
    pay(payment_method_data={"card": {}}),
    pay(payment_method_data={"type": 5}),  # not a type: tolerant, kept in extra
    pay(payment_method={"id": "pm_1", "object": "payment_method", "type": "card"}),
    pay(customer={"id": "cus_1", "object": "customer"}),
    pay(metadata={}, description="x"),
    pay(statement_descriptor="SHOP", review=None, payment_method_types=["card"]),
    pay(amount=-(10**17), refunded_amount=0, amount_captured=10**17),
    pay(status="weird", currency="xqq"),
]


@pytest.mark.parametrize("ascii", [False, True])  # True: non-ASCII text as \u escapes
@pytest.mark.parametrize("record", ACCEPTED, ids=range(len(ACCEPTED)))
def test_edge_records_read_alike(record: dict[str, Any], ascii: bool) -> None:
    assert_same([b_body(record, pay(id="pay_2"), ascii=ascii)])


def raw_b(record: str) -> bytes:
    return (
        b'{"object":"list","data":[{"id":"p","created":1,'
        + record.encode()
        + b'}],"has_more":false}'
    )


RAW_ACCEPTED = [
    raw_b('"next_action":{"z":1,"a":"x","\u00e9":2,"m":[1,{"b":2,"a":1}],"n":null}'),
    raw_b('"next_action":{"b":1,"a":2,"b":3}'),  # a duplicate key: the last one counts
    raw_b('"next_action":{"a":-0,"b":1.50,"c":"\\/\\u0041","é":true,"e":false}'),
    raw_b('"next_action":{"k":"\\u001f\\n"},"extra_field":{"y":1,"x":null}'),
    raw_b('"next_action":{' + ",".join(f'"k{i:02d}":{i}' for i in range(20)) + "}"),
    raw_b('"failure_message":"\\u001F","cancel_url":"a\\/b"'),
    raw_b('"unknown":null,"other":[]'),
]


@pytest.mark.parametrize("body", RAW_ACCEPTED, ids=range(len(RAW_ACCEPTED)))
def test_free_form_and_unknown_fields(body: bytes) -> None:
    assert_same([body])


REFUSED = [
    b_body(pay(amount=1.0)),
    b_body(pay(amount="1")),
    b_body(pay(amount=True)),
    b_body(pay(livemode=1)),
    b_body(pay(created=1.5e9)),
    b_body(pay(created=99999999999999)),
    b_body(pay(created="2026-01-01T00:00:00")),  # naive
    b_body(pay(created="2026-01-01 00:00:00Z")),
    b_body(pay(created="2026-02-30T00:00:00Z")),
    b_body(pay(created="2026-01-01T00:00:00.1234567Z")),
    b_body(pay(created="1600-01-01T00:00:00Z")),
    b_body(pay(payment_method={"id": "pm_1"})),
    b_body(pay(payment_method_details={"card": {"wallet": "x"}})),
    b_body(pay(last_payment_error="x")),
    b_body(pay(next_action=[1])),
    b'{"object":"list","data":[{"id":"a","created":1,"d":"\\ud800"}],"has_more":false}',
    b_body("not an object"),
    b_body(None),
    b'{"object":"list","data":[{"id":"a","id":"b","created":1}],"has_more":false}',
    b'{"object":"list","data":[{"i\\u0064":"a","created":1}],"has_more":false}',
    b'{"object":"list","data":[],"has_more":false} x',
    b'{"object":"list","data":[],"has_more":false,"has_more":true}',
    b'{"object":"list","data":[{"id":"a","created":1,}],"has_more":false}',
    b'{"object":"list","data":[{"id":"\xff","created":1}],"has_more":false}',
    b'{"object":"list","data":[{"id":"a\x01","created":1}],"has_more":false}',
    b'{"object":"list","data":[{"id":"a","created":01}],"has_more":false}',
    b'{"object":"list","data":[{"id":"a","created":1,"x":1e400}],"has_more":false}',
    b'{"object":"list","data":[{"id":"a","created":1}],"meta":5}',
    b'{"data":[{"id":"a","created":1}]}',
    b'{"object":"list","data":null,"has_more":false}',
    b'{"object":"list","data":[{"id":"a","created":1,"metadata":'
    + b"[" * 100
    + b"]" * 100
    + b"}]}",
    b"\xef\xbb\xbf" + b_body(pay()),
    b"",
    b"[]",
]


@pytest.mark.parametrize("body", REFUSED, ids=range(len(REFUSED)))
def test_damaged_bodies_keep_the_good_bodies_rows(body: bytes) -> None:
    batch = assert_same([body, b_body(pay(id="pay_ok"))])
    assert "pay_ok" in batch.frame["id"].tolist()


def test_ints_beyond_int64_never_reach_an_int64_column() -> None:
    batch = assert_same([b_body(pay(amount=10**19)), b_body(pay(id="pay_2", amount=-(10**19)))])
    assert batch.frame["amount"].isna().all()
    assert [json.loads(e) for e in batch.frame["extra"]] == [{"amount": 10**19},
                                                              {"amount": -(10**19)}]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_never_raises(raw: bytes) -> None:
    prefix = b'{"object":"list","has_more":false,"data":[{"id":"p","created":1,"description":"'
    for candidate in (raw, prefix + raw, prefix + raw + b'"}]}'):
        batch = assert_same([candidate])
        assert len(batch.frame) + len(batch.rejects) >= 1 or candidate == prefix + raw + b'"}]}'
