"""The C scanner (gwtools._fastjson) gives exactly what the msgspec fast path gives.

normalize_bodies hands payment list bodies to the scanner first; a body it does not fully
understand goes back to the msgspec path, and rows whose ``extra`` it cannot write byte
for byte are rendered by Python. Whatever the body, the frame, the rejects and the unknown
statuses must be those of the msgspec path (``_fastjson`` switched off), and the scanner
must never crash, whatever the bytes.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import gwtools._normalize as normalize
from gwtools._normalize import NormalizedBatch, Resource, _normalize_bodies

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "data" / "recorded"


def test_the_extension_is_built() -> None:
    # An install without a C compiler still works (the msgspec path), but CI must build it.
    from gwtools import _fastjson

    assert normalize._fastjson is _fastjson


@contextmanager
def msgspec_path() -> Iterator[None]:
    saved = normalize._fastjson
    normalize._fastjson = None
    try:
        yield
    finally:
        normalize._fastjson = saved


def scanned(bodies: Sequence[bytes], resource: str = "payments") -> list[str]:
    """Per body: the variant the scanner read it as, or "" if it handed it back."""
    from gwtools import _fastjson

    variants, *_ = _fastjson.scan(resource, list(bodies))
    return [chr(v) if v else "" for v in variants]


def assert_same(
    bodies: Sequence[bytes], livemode: bool | None = False, resource: Resource = "payments"
) -> NormalizedBatch:
    fast = _normalize_bodies(resource, bodies, livemode, fast=True)
    with msgspec_path():
        slow = _normalize_bodies(resource, bodies, livemode, fast=True)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
    assert fast.rejects == slow.rejects
    assert fast.unknown_statuses == slow.unknown_statuses
    return fast


# --------------------------------------------------------------------------- real shapes


@pytest.mark.parametrize("variant", ["A", "B"])
def test_recorded_pages(variant: str) -> None:
    names = ["payments_page1", "payments_page2", "payment_failed", "payment_fpx"]
    bodies = [(RECORDED / "sandbox" / variant / f"{n}.json").read_bytes() for n in names]
    bodies = [b for b in bodies if b.lstrip().startswith(b'{"') and b'"data"' in b]
    assert scanned(bodies[:2]) == [variant, variant]
    batch = assert_same(bodies)
    assert len(batch.frame) >= 200


def test_tricky_recorded_bodies() -> None:
    bodies = [p.read_bytes() for p in sorted((RECORDED / "tricky").iterdir())]
    assert_same(bodies)


def _bench_bodies(variant: str, rows: int) -> list[bytes]:
    spec = importlib.util.spec_from_file_location(
        "bench_normalize", ROOT / "benchmarks" / "normalize.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    bodies: list[bytes] = module.make_bodies(variant, rows, seed=3)
    return bodies


@pytest.mark.parametrize("variant", ["A", "B"])
def test_benchmark_bodies(variant: str) -> None:
    bodies = _bench_bodies(variant, 3000)
    assert set(scanned(bodies)) == {variant}
    batch = assert_same(bodies)
    assert len(batch.frame) == 3000
    if variant == "B":  # next_action, re-encoded with sorted keys
        assert batch.frame["extra"].str.contains('"next_action"').any()


@pytest.mark.parametrize("threads", [1, 2])
def test_mixed_variants_and_refused_bodies_keep_their_order(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(normalize, "_SCAN_THREADS", threads)
    monkeypatch.setattr(normalize, "_SCAN_PARALLEL_FROM", 2)
    a, b = _bench_bodies("A", 300), _bench_bodies("B", 300)
    odd = b[1].replace(b'"currency":"myr"', b'"currency":5', 1)  # wrong type: refused
    bodies = [a[0], b[0], odd, a[1], b"<html>", a[2], b[2]]
    assert scanned(bodies) == ["A", "B", "", "A", "", "A", "B"]
    batch = assert_same(bodies)
    assert len(batch.rejects) == 1
    assert batch.frame["api_variant"].tolist() == list(
        "A" * 100 + "B" * 200 + "A" * 200 + "B" * 100
    )


# --------------------------------------------------------------------------- edge cases by hand


def pay(**fields: Any) -> dict[str, Any]:
    return {"id": "pay_1", "object": "payment", "amount": 1000, "currency": "myr",
            "status": "succeeded", "created": 1767225600, "livemode": False, **fields}  # fmt: skip


def b_body(*records: Any, ascii: bool = False) -> bytes:
    env = {"object": "list", "data": list(records), "has_more": False}
    return json.dumps(env, ensure_ascii=ascii).encode()


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
    pay(statement_descriptor="SHOP", review=None, payment_method_types=["card"]),
    pay(amount=-(10**17), refunded_amount=0, amount_captured=10**17),
    pay(status="weird", currency="xqq"),
]


@pytest.mark.parametrize("ascii", [False, True])  # True: non-ASCII text as \u escapes
@pytest.mark.parametrize("record", ACCEPTED, ids=range(len(ACCEPTED)))
def test_accepted_shapes(record: dict[str, Any], ascii: bool) -> None:
    body = b_body(record, pay(id="pay_2"), ascii=ascii)
    assert scanned([body]) == ["B"]
    assert_same([body])


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
    assert scanned([body]) == ["B"]
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
def test_refused_bodies_still_normalise(body: bytes) -> None:
    assert scanned([body]) == [""]
    good = b_body(pay(id="pay_ok"))
    batch = assert_same([body, good])
    assert "pay_ok" in batch.frame["id"].tolist()


def test_ints_beyond_int64_are_refused() -> None:
    # (the msgspec and tolerant paths cannot hold them either: a known limit of both)
    assert scanned([b_body(pay(amount=10**19)), b_body(pay(amount=-(10**19)))]) == ["", ""]


def test_whitespace_anywhere_is_read() -> None:
    records = [pay(id=f"pay_{i}", metadata={"k": i}, payment_method_details={"type": "fpx"})
               for i in range(3)]  # fmt: skip
    body = json.dumps({"object": "list", "data": records, "has_more": True}, indent=3).encode()
    body = b" \r\n\t" + body.replace(b": ", b" \t: \n") + b"\n"
    assert scanned([body]) == ["B"]
    frame = assert_same([body]).frame
    # metadata is kept as sent, whitespace and all
    assert [json.loads(m) for m in frame["metadata"]] == [{"k": i} for i in range(3)]
    assert frame["metadata"].str.contains(" \t: \n").all()


# --------------------------------------------------------------------------- generated bodies

TEXT = st.one_of(
    st.sampled_from(["", "Order #1", 'say "hi"', "back\\slash", "a/b", "line\nbreak", "ünï ✓",
                     "\x00\x1f\x7f", "\u2028😀"]),
    st.text(max_size=6),
)  # fmt: skip
MAYBE_TEXT = st.one_of(st.none(), TEXT)
ISO = st.builds(
    lambda y, rest, frac, zone: f"{y:04d}-{rest}{frac}{zone}",
    st.sampled_from([1, 1677, 1900, 1970, 2026, 2199, 2262, 9999]),
    st.sampled_from(["01-01T00:00:00", "02-29T23:59:59", "12-31T12:30:45", "13-01T00:00:00",
                     "01-01 00:00:00", "01-01T24:00:00"]),
    st.sampled_from(["", ".5", ".123456", ".1234567", "."]),
    st.sampled_from(["Z", "+08:00", "-05:30", "+0800", "+24:00", "", "z"]),
)  # fmt: skip
GOOD_ISO = st.builds(
    lambda y, rest, frac, zone: f"{y:04d}-{rest}{frac}{zone}",
    st.integers(1900, 2199),
    st.sampled_from(["01-01T00:00:00", "02-28T23:59:59", "12-31T12:30:45", "06-15T07:08:09"]),
    st.sampled_from(["", ".5", ".123456", ".000001"]),
    st.sampled_from(["Z", "+08:00", "-05:30", "+00:00", "-00:00", "+23:59"]),
)  # fmt: skip
GOOD_TIME = st.one_of(
    st.none(), GOOD_ISO, st.integers(-62135596800, 253402300799),
    st.integers(1_600_000_000, 1_900_000_000),
)  # fmt: skip
TIME = st.one_of(
    GOOD_TIME, ISO, st.integers(-(2**40), 2**40), st.just(1.5e9), st.just("junk"), st.just(True)
)
GOOD_INT = st.one_of(st.none(), st.integers(-(10**18) + 1, 10**18 - 1))
INT = st.one_of(GOOD_INT, st.integers(-(2**63), 2**63 - 1), st.just(1.0), TEXT)
GOOD_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(),
              st.floats(allow_nan=False, allow_infinity=False), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)  # fmt: skip
JSON = st.one_of(GOOD_JSON, st.just(float("inf")))


def details(good: bool) -> st.SearchStrategy[Any]:
    num = GOOD_INT if good else INT
    card = {"brand": MAYBE_TEXT, "last4": MAYBE_TEXT, "exp_month": num, "exp_year": num,
            "funding": MAYBE_TEXT, "country": MAYBE_TEXT}  # fmt: skip
    if not good:
        card["wallet"] = TEXT  # unknown in a sub-object: refused
    flat = {k: v for k, v in card.items() if k != "wallet"}
    fpx = st.fixed_dictionaries({}, optional={"bank_code": MAYBE_TEXT, "bank": MAYBE_TEXT})
    obj = st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(["card", "fpx", "CARD", ""]),
            **flat,
            "bank_code": MAYBE_TEXT,
            "bank": MAYBE_TEXT,
            "card": st.one_of(st.none(), st.fixed_dictionaries({}, optional=card)),
            "fpx": st.one_of(st.none(), fpx),
        },
    )
    return st.one_of(st.none(), obj) if good else st.one_of(obj, TEXT)


ERROR = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={name: MAYBE_TEXT for name in
                  ("code", "decline_code", "message", "type", "param", "doc_url")},
    ),
)  # fmt: skip
GOOD_FIELDS = {
    "object": st.one_of(st.just("payment"), st.none()),
    "amount": GOOD_INT,
    "amount_captured": GOOD_INT,
    "currency": st.one_of(st.sampled_from(["MYR", "myr", "JPY", "XQQ", ""]), st.none()),
    "status": st.one_of(st.sampled_from(["succeeded", "captured", "pending", "failed", "odd"]),
                        st.none()),
    "description": MAYBE_TEXT,
    "payment_method": st.one_of(st.sampled_from(["card", "fpx", "pm_1", "PM_2"]), st.none()),
    "payment_method_details": details(good=True),
    "customer": MAYBE_TEXT,
    "capture_method": MAYBE_TEXT,
    "captured": st.one_of(st.none(), st.booleans()),
    "captured_at": GOOD_TIME,
    "refunded": st.one_of(st.none(), st.booleans()),
    "refunded_amount": GOOD_INT,
    "metadata": st.one_of(st.none(), st.just({}), st.dictionaries(TEXT, GOOD_JSON, max_size=2),
                          GOOD_JSON),
    "failure_code": MAYBE_TEXT,
    "failure_message": MAYBE_TEXT,
    "decline_code": MAYBE_TEXT,
    "last_payment_error": ERROR,
    "receipt_email": MAYBE_TEXT,
    "receipt_url": MAYBE_TEXT,
    "client_secret": st.one_of(st.just("pay_x_secret_y"), GOOD_JSON),
    "next_action": st.one_of(st.none(), st.dictionaries(TEXT, GOOD_JSON, max_size=2)),
    "redirect_url": MAYBE_TEXT,
    "success_url": MAYBE_TEXT,
    "cancel_url": MAYBE_TEXT,
    "created_at": GOOD_TIME,
    "updated_at": GOOD_TIME,
    "expires_at": GOOD_TIME,
    "livemode": st.one_of(st.none(), st.booleans()),
    "surprise": GOOD_JSON,  # an unknown top-level field: a row whose extra Python renders
}  # fmt: skip
ODD_FIELDS = {
    **GOOD_FIELDS,
    **{k: INT for k in ("amount", "amount_captured", "refunded_amount")},
    **{k: TIME for k in ("captured_at", "created_at", "updated_at", "expires_at")},
    "payment_method": st.one_of(st.sampled_from(["card", "pm_1"]), JSON),
    "payment_method_details": details(good=False),
    "refunded": st.one_of(st.none(), st.booleans(), st.just(0)),
    "metadata": JSON,
    "next_action": JSON,
    "surprise": JSON,
}


def record(variant: str, odd: bool) -> st.SearchStrategy[Any]:
    ident = st.one_of(st.text(alphabet="abc012", min_size=1, max_size=4).map("pay_".__add__),
                      st.just(""), st.none())  # fmt: skip

    def shape(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
        created = {"created_at": fields["created_at"]} if variant == "A" else {
            "created": fields["created_at"]}  # fmt: skip
        optional = {**fields, "created": fields["created_at"]}
        optional = {k: v for k, v in optional.items() if k not in created}
        return st.fixed_dictionaries({"id": ident, **created}, optional=optional)

    good = shape(GOOD_FIELDS)
    return st.one_of(good, shape(ODD_FIELDS), st.just("not an object")) if odd else good


@st.composite
def body(draw: st.DrawFn, odd: bool) -> bytes:
    """A list body: well-typed records in a proper envelope (the scanner should take most of
    them), or with ``odd`` also wrong types, non-objects, odd envelopes and damaged bytes."""
    variant = draw(st.sampled_from("AB"))
    records = draw(st.lists(record(variant, odd), min_size=1, max_size=4))
    if variant == "A":
        meta = st.just({"total": 1, "page": 1, "limit": 100, "totalPages": 1})
        env: dict[str, Any] = {"data": records, "meta": draw(
            st.one_of(meta, st.just({}), st.none()) if odd else meta)}  # fmt: skip
    else:
        env = {"object": draw(st.sampled_from(["list", None, "lis"] if odd else ["list"])),
               "data": records,
               "has_more": draw(st.one_of(st.booleans(), st.none()) if odd else st.booleans()),
               "url": "/v1/payments"}  # fmt: skip
    keys = draw(st.permutations(list(env)))
    env = {k: env[k] for k in keys}
    text = json.dumps(
        env,
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, None, 1])),
        separators=draw(st.sampled_from([(",", ":"), (", ", ": "), None])),
    )
    if draw(st.booleans()):
        text = text.replace("/", "\\/")  # the same JSON, escaped otherwise
    raw = text.encode("utf-8", errors="surrogatepass")
    damage = draw(st.sampled_from(["none", "cut", "byte", "insert"] if odd else ["none"]))
    if damage != "none" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        if damage == "cut":
            raw = raw[:at]
        elif damage == "byte":
            raw = raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1 :]
        else:
            raw = raw[:at] + draw(st.binary(min_size=1, max_size=3)) + raw[at:]
    return raw


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(body(odd=False), body(odd=True)), min_size=1, max_size=4))
@example(
    [
        b'{"object":"list","data":[{"id":"p","created":1,"description":"\\ud83d\\ude00"}],"has_more":false}'
    ]
)
def test_generated_bodies(bodies: list[bytes]) -> None:
    assert_same(bodies)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_never_crashes_the_scanner(raw: bytes) -> None:
    from gwtools import _fastjson

    prefix = b'{"object":"list","has_more":false,"data":[{"id":"p","created":1,"description":"'
    for candidate in (raw, prefix + raw, prefix + raw + b'"}]}'):
        variants, counts, n, columns, patch = _fastjson.scan("payments", [candidate])
        assert n == int(np.frombuffer(counts, np.int64).sum())
        assert n == 0 or variants in (b"A", b"B")
        assert len(memoryview(patch)) <= n * 32
        assert set(columns) >= {"id", "extra", "metadata", "created"}


# --------------------------------------------------------------------------- refunds


@pytest.mark.parametrize("variant", ["A", "B"])
def test_recorded_refunds(variant: str) -> None:
    bodies = [(RECORDED / "sandbox" / variant / "refunds_page1.json").read_bytes(),
              (RECORDED / "tricky" / "refunds_mixed.json").read_bytes()]  # fmt: skip
    assert scanned(bodies, "refunds") == [variant, "B"]
    batch = assert_same(bodies, resource="refunds")
    assert len(batch.frame) > 2


REFUND_FIELDS = {
    "object": st.one_of(st.just("refund"), st.none()),
    "payment_id": MAYBE_TEXT,
    "payment": st.one_of(MAYBE_TEXT, st.just({"id": "pay_x"})),
    "amount": GOOD_INT,
    "currency": st.one_of(st.sampled_from(["MYR", "myr", "JPY", ""]), st.none()),
    "reason": MAYBE_TEXT,
    "status": st.one_of(st.sampled_from(["pending", "succeeded", "failed", "canceled", "odd"]),
                        st.none()),
    "metadata": st.one_of(st.none(), st.just({}), st.dictionaries(TEXT, GOOD_JSON, max_size=2)),
    "created_at": GOOD_TIME,
    "livemode": st.one_of(st.none(), st.booleans()),
    "note": GOOD_JSON,  # unknown: the msgspec path reads refunds strictly, so the scanner refuses
}  # fmt: skip


@st.composite
def refund_body(draw: st.DrawFn) -> bytes:
    variant = draw(st.sampled_from("AB"))
    ident = st.one_of(st.just("rfnd_1"), st.just(""), st.none())
    created = {"created_at": GOOD_TIME} if variant == "A" else {"created": GOOD_TIME}
    optional = {**REFUND_FIELDS, "created": GOOD_TIME}
    optional = {k: v for k, v in optional.items() if k not in created}
    records = draw(st.lists(st.fixed_dictionaries({"id": ident, **created}, optional=optional),
                            min_size=1, max_size=4))  # fmt: skip
    env: dict[str, Any] = (
        {"data": records, "meta": {"total": 1}} if variant == "A"
        else {"object": "list", "data": records, "has_more": False}
    )  # fmt: skip
    return json.dumps(env, ensure_ascii=draw(st.booleans())).encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(refund_body(), min_size=1, max_size=3))
def test_generated_refund_bodies(bodies: list[bytes]) -> None:
    assert_same(bodies, resource="refunds")


def test_refund_bodies_the_scanner_refuses_still_normalise() -> None:
    good = {"id": "rfnd_ok", "payment_id": "pay_1", "amount": 5, "currency": "MYR",
            "status": "succeeded", "created": 1767225600}  # fmt: skip
    odd = [{**good, "id": "r2", "note": "x"}, {**good, "id": "r3", "amount": "5"},
           {**good, "id": "r4", "payment": {"id": "pay_2"}}]  # fmt: skip
    bodies = [json.dumps({"object": "list", "data": [r], "has_more": False}).encode()
              for r in [good, *odd]]  # fmt: skip
    assert scanned(bodies, "refunds") == ["B", "", "", ""]
    batch = assert_same(bodies, resource="refunds")
    assert batch.frame["id"].tolist() == ["rfnd_ok", "r2", "r3", "r4"]
