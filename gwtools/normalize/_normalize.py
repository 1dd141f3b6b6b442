"""Raw API objects and list bodies of either variant -> the canonical tables.

Use :func:`normalize_payments` / :func:`normalize_refunds` on objects you already
hold (parsed JSON, webhook payloads), and :func:`normalize_bodies` on list response
bodies exactly as received (a retrieved single object as ``(variant, body)``). Envelopes, variants and ids are :mod:`gwtools.http._wire`'s;
columns, order and dtypes are those of :mod:`gwtools._schema`.

Decisions where the spec is silent (docs/tables.md gives the rest):

- A record is variant B when it carries B's creation field ``created``, else A;
  list bodies take the variant of their envelope (``meta`` -> A, ``has_more`` -> B).
- A ``payment_method`` string starting with ``pm_`` is a payment method id, any
  other string is the method type (variant A's ``card``/``fpx``); an expanded
  method object gives its id, type, card brand and FPX bank. When no other source
  gives the type, the creation data's (``payment_method_data.type``) does; that
  object stays whole in ``extra``, and the bank columns never come from it. The details
  beat an expanded method: a value of the method that differs from theirs stays in ``extra``.
- An amount sent as an integral JSON number (``1000.0``, as a proxy re-encoding numbers as
  doubles sends it) is that integer, up to 2**53; beyond, a double may not be the integer meant.
- ``status`` maps the raw status in the vocabulary of the record's variant
  (:data:`gwtools._schema.PAYMENT_STATUS_BY_VARIANT`, case as sent): the other
  variant's word (A's ``succeeded``, B's ``captured``) is ``unknown``, warned once.
- ``metadata`` is the object's JSON text as the gateway sent it (from a dict: compact
  JSON in the dict's order); an empty object (``{}``, ``{ }``) or no metadata is null.
  Re-encoding it would cost more than the rest of normalisation, and the same body
  always gives the same text.
- ``extra`` is compact JSON text, sorted keys, of every raw field without a column,
  and of the unmapped remainder of partly mapped objects (e.g.
  ``{"payment_method_details": {"last4": "4242"}}``). A value of the wrong type for
  its column (an amount sent as text, an unparsable ``updated_at``) leaves the
  column null and is kept in ``extra`` under its own name. Null values carry no
  information and are left out; ``extra`` is null when nothing is left.
- Intentionally dropped, at the top level of a record only: ``object`` when it is
  ``payment``/``refund`` as the table says (any other value is kept in ``extra``) and ``client_secret`` (a secret that lets a
  browser confirm the payment; it must not reach a cache, a CSV or a notebook). Inside an
  expanded object (``payment_method``, ``customer``) ``object`` says what it is: kept.
- Card data is never kept: a ``card`` object anywhere in ``extra`` (creation data a gateway
  echoes back, ``payment_method_data.card``) has its ``number`` shown as its last four
  digits (``…4242``) and its ``cvc`` as ``…``, so a cache never holds what PCI DSS forbids
  storing.
- Refunds have no ``status_raw`` column, so an unknown refund status is kept in
  ``extra`` as ``{"status": ...}``.
- Unusable records (not an object, no id, no parsable creation time) become
  :class:`Reject` s with a reason; :func:`normalize_bodies` returns them, the dict
  functions raise (or warn with ``on_reject="warn"``), as a list the caller built by
  hand is better fixed than silently shortened.

How it is fast: list bodies are decoded by msgspec into strict structs of the documented
fields (:mod:`gwtools.normalize._decode`; objects already held are converted to the same structs, with
no detour through JSON text) and turned into Arrow columns a few thousand records at a
time, then finished column-wise with pyarrow.compute. A body the strict shapes reject, or
a page holding a record that needs a judgement (no id, an unparsable time, two sources for
one column), is read record by record by the tolerant path, which gives the same rows for
the same input (tests compare the two on generated pages). It runs in the calling
process: no forking, so it is safe in a Jupyter kernel and in the sync's threads.
"""

from __future__ import annotations

import functools
import gc
import itertools
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import babel.numbers
import msgspec
import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gwtools import _schema
from gwtools._errors import ConfigurationError, InvalidRecordError
from gwtools.http._wire import (
    CREATION_FIELDS,
    INT64_MAX,
    INT64_MIN,
    MALFORMED_ID,
    MalformedResponseError,
    Variant,
    decode_raw_records,
    decode_value,
    malformed_id_reason,
    malformed_ids,
    object_variant,
    snippet,
    to_timestamps,
)
from gwtools.normalize._decode import (
    DROPPED,
    RECORD_SHAPES,
    Columns,
    Decoded,
    Kind,
    Spec,
    column_spec,
    decode_fast,
    decode_object,
    decode_object_body,
    direct_columns,
    fields_with_role,
    payment_extras,
    raw_metadata,
    transpose,
)

__all__ = [
    "NormalizedBatch",
    "Reject",
    "normalize_bodies",
    "normalize_payments",
    "normalize_refunds",
]

Resource = Literal["payments", "refunds"]

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.large_string()
#: Raw fields that are dropped on purpose (see the module docstring).
_DROPPED = fields_with_role(DROPPED)
#: What a record's own ``object`` says it is, per resource (dropped when it says so).
_KIND: dict[str, str] = {"payments": "payment", "refunds": "refund"}


# --------------------------------------------------------------------------- public types


@dataclass
class Reject:
    """A record (or body) that could not become a row, and why."""

    resource: str
    reason: str
    record: str  # the raw object as JSON text, or the start of an unusable body
    kind: str = ""  # a short category for counting (e.g. MALFORMED_ID); "" when unset


@dataclass
class NormalizedBatch:
    """The canonical rows of some list bodies, their rejects and unknown statuses."""

    frame: pd.DataFrame
    rejects: list[Reject] = field(default_factory=list)
    unknown_statuses: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------- small helpers


class _NoGC:
    """Pause the cyclic garbage collector while millions of short-lived objects are made.

    The records hold no reference cycles; without this the collector rescans the growing
    heap again and again, which more than doubles the time of a large batch.
    """

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def _record_text(obj: Any) -> str:
    """A record as JSON text for a reject (raw records pass through as sent)."""
    if isinstance(obj, msgspec.Raw | bytes):
        return bytes(obj).decode("utf-8", errors="replace")
    try:
        return orjson.dumps(obj, default=str).decode()
    except TypeError:  # e.g. non-string keys
        return repr(obj)


_SORTED_JSON = msgspec.json.Encoder(order="sorted", enc_hook=str)
_JSON = msgspec.json.Encoder(enc_hook=str)


def _json_text(obj: Any) -> str:
    """Compact JSON text with sorted keys: the form of ``extra``.

    The fast path encodes its views of the records with the same msgspec settings
    (:func:`gwtools.normalize._decode.payment_extras`), so both paths write the same bytes.
    """
    return _SORTED_JSON.encode(obj).decode()


@functools.lru_cache(maxsize=512)
def _exponent(currency: str) -> int | None:
    """Minor-unit exponent of an ISO 4217 code from Babel/CLDR; None when Babel does not know it."""
    if not babel.numbers.is_currency(currency):
        return None
    return int(babel.numbers.get_currency_precision(currency))


def _payment_statuses(variant: pa.Array, status_raw: pa.Array) -> pa.Array:
    """Canonical payment statuses of (api_variant, raw status): each variant has its own
    vocabulary (:data:`gwtools._schema.PAYMENT_STATUS_BY_VARIANT`); anything else, a status
    of the other variant or none, is ``unknown``."""
    enc = pc.dictionary_encode(status_raw)
    raws = enc.dictionary.to_pylist()
    status: pa.Array | None = None
    for name, vocabulary in _schema.PAYMENT_STATUS_BY_VARIANT.items():
        mapped = pa.array([vocabulary.get(r, "unknown") for r in raws], _STR).take(enc.indices)
        status = mapped if status is None else pc.if_else(pc.equal(variant, name), mapped, status)
    assert status is not None
    return pc.fill_null(status, "unknown")


_REFUND_KNOWN = frozenset(_schema.REFUND_STATUSES) - {"unknown"}


def _canonical_refund_status(raw: str) -> str:
    return raw if raw in _REFUND_KNOWN else "unknown"


def _map_unique(arr: pa.Array, fn: Callable[[Any], Any], out_type: pa.DataType) -> pa.Array:
    """Apply ``fn`` to each distinct value of ``arr`` (nulls stay null): vectorised lookups."""
    enc = pc.dictionary_encode(arr)
    mapped = pa.array([fn(v) for v in enc.dictionary.to_pylist()], type=out_type)
    return mapped.take(enc.indices)


# --------------------------------------------------------------------------- timestamps


# --------------------------------------------------------------------------- JSON text columns


def _metadata_texts(text: pa.Array) -> tuple[pa.Array, pa.Array | None]:
    """Raw ``metadata`` texts -> the JSON object text as sent, and the rows that are not objects.

    Absent, ``null`` and an empty object (``{}``, or with JSON whitespace inside, ``{ }``)
    are null. The text is kept as the gateway sent it (key order and all): re-encoding a
    million small objects would cost more than the rest of normalisation, and the same body
    always gives the same text.
    """
    empty = pc.or_(
        pc.is_in(text, pa.array(["", "null", "{}"], _STR)),
        pc.match_substring_regex(text, r"^\{[ \t\n\r]+\}$"),  # (JSON's whitespace only)
    )
    not_object = pc.and_(pc.invert(empty), pc.invert(pc.starts_with(text, "{")))
    bad = not_object if pc.any(not_object).as_py() else None
    return pc.if_else(empty, pa.scalar(None, _STR), text), bad


def _raw_texts(raws: Sequence[bytes | msgspec.Raw]) -> pa.Array:
    """Raw JSON slices (valid UTF-8, as msgspec checked) -> a string array, without per-value copies."""
    lengths = np.fromiter(map(len, raws), np.int64, len(raws))
    offsets = np.zeros(len(raws) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(raws)
    return pa.LargeStringArray.from_buffers(len(raws), pa.py_buffer(offsets), pa.py_buffer(data))


def _lit(text: str) -> pa.Scalar:
    return pa.scalar(text, _STR)


def _nullify_empty(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """Empty strings -> null (the tables hold no empty strings)."""
    empty = pc.equal(arr, "")
    return pc.if_else(empty, pa.scalar(None, _STR), arr) if pc.any(empty).as_py() else arr


def _lines_to_texts(lines: bytes, n: int) -> pa.Array:
    """Newline-terminated JSON texts (newlines inside JSON are escaped) -> a string array."""
    ends = np.flatnonzero(np.frombuffer(lines, np.uint8) == 10)
    if len(ends) != n:
        raise AssertionError(f"expected {n} JSON lines, found {len(ends)}")
    offsets = np.empty(n + 1, np.int64)
    offsets[0] = 0
    offsets[1:] = ends - np.arange(n)  # where each text ends once the newlines are gone
    data = lines.replace(b"\n", b"")
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


# --------------------------------------------------------------------------- tolerant record reading


_EXACT_FLOAT = 2**53


class _Fields:
    """Takes typed values out of a raw object; what is left becomes ``extra``.

    A value of the wrong type is not taken, so it stays in the remainder (and so in
    ``extra``) while its column is null.
    """

    __slots__ = ("rest",)

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self.rest: dict[str, Any] = dict(obj)

    def _take(self, key: str, kinds: type | tuple[type, ...]) -> Any:
        rest = self.rest
        v = rest.get(key)
        if v is None or (v.__class__ is str and not v):  # absent, null or "": nothing to keep
            rest.pop(key, None)
            return None
        if isinstance(v, kinds) and (v.__class__ is not bool or kinds is bool):
            del rest[key]
            return v
        return None  # the wrong type (a bool is no number here): left for extra

    def text(self, key: str) -> str | None:
        v: str | None = self._take(key, str)
        return v

    def integer(self, key: str) -> int | None:
        v = self.rest.get(key)
        if v.__class__ is float and v.is_integer() and abs(v) <= _EXACT_FLOAT:
            # JSON does not tell 1000 from 1000.0 (a proxy re-encoding numbers as doubles
            # sends the latter): the value is that integer. Beyond 2**53 a double may no
            # longer be the integer that was meant, so it stays in extra.
            del self.rest[key]
            return int(v)
        got: int | None = self._take(key, int)  # never a bool
        if got is not None and not INT64_MIN <= got <= INT64_MAX:
            self.rest[key] = got  # too big for an int64 column: kept in extra
            return None
        return got

    def flag(self, key: str) -> bool | None:
        v: bool | None = self._take(key, bool)
        return v

    def ts(self, key: str) -> Any:
        """A raw timestamp (parsed later, vectorised); the caller puts it back if unparsable."""
        return self._take(key, (str, int, float, datetime))

    def obj(self, key: str) -> _Fields | None:
        v = self.rest.get(key)
        if v is None and key in self.rest:
            del self.rest[key]
        return _Fields(v) if v.__class__ is dict or isinstance(v, Mapping) else None

    def put_back(self, key: str, sub: _Fields | None) -> None:
        """Replace a partly read sub-object by its unread remainder (or drop it)."""
        if sub is None:
            return
        left = sub.remainder()
        if left:
            self.rest[key] = left
        else:
            del self.rest[key]

    def metadata(self, raw: bytes | None) -> bytes:
        """The metadata as sent (``raw``, from a body) or as JSON of the dict; b"" if unusable."""
        v = self.rest.get("metadata")
        if v is None or isinstance(v, Mapping):
            self.rest.pop("metadata", None)
            if raw is not None:
                return raw
            return _JSON.encode(v) if v else b""
        return b""  # not an object: stays in extra

    def remainder(self) -> dict[str, Any]:
        """The unread fields with a value (a sub-object's ``object`` is kept: it says what
        the expanded object is; only a record's own is dropped, see :meth:`record_rest`)."""
        return {k: v for k, v in self.rest.items() if v is not None}

    def record_rest(self, kind: str) -> dict[str, Any]:
        """A record's unread fields for ``extra``: the remainder less the dropped fields.

        ``object`` is dropped only when it is ``kind`` (``payment``/``refund``), which the
        table already says; any other value is news (a refund in a payments list) and kept.
        """
        return {
            k: v
            for k, v in self.rest.items()
            if v is not None and (k not in _DROPPED or (k == "object" and v != kind))
        }

    def read(self, key: str, kind: Kind, raw_meta: bytes | None) -> Any:
        """The value of a field read as its declaration says (see :class:`Column`)."""
        if kind == "s":
            return self.text(key)
        if kind == "i":
            return self.integer(key)
        if kind == "b":
            return self.flag(key)
        if kind == "t":
            return self.ts(key)
        if kind == "id":
            return _id_of(self, key)
        return self.metadata(raw_meta)


def _id_of(f: _Fields, key: str) -> str | None:
    """An id given as a string or as an expanded object; the object's remainder stays in extra."""
    v = f.text(key)
    if v is not None:
        return v
    sub = f.obj(key)
    if sub is None:
        return None
    ident = sub.text("id")
    f.put_back(key, sub)
    return ident


def _creation(f: _Fields, variant: Variant) -> tuple[str | None, Any]:
    """(field name, raw value) of the creation time; B prefers ``created``, A ``created_at``."""
    for key in CREATION_FIELDS[variant]:
        v = f.ts(key)
        if v is not None:
            return key, v
    return None, None


def _pick(name: str, have: str | None, *places: _Fields | None) -> str | None:
    """Text ``name`` from the first of ``places`` giving it; when a better source already
    gave ``have``, only an equal value is taken (a differing one stays in extra)."""
    for place in places:
        if place is None:
            continue
        if have is not None and place.rest.get(name) != have:
            continue
        got = place.text(name)
        if got is not None:
            return got
    return None


_NO_CREATION = "(`created_at` ISO 8601 or `created` Unix seconds)"
_SECONDS_RANGE = "Unix seconds must fall in the years 1 to 9999"


def _no_creation_reason(obj: Mapping[str, Any], variant: Variant) -> str:
    """Why a record gives no creation time: the field it has is named with its value."""
    for key in CREATION_FIELDS[variant]:
        v = obj.get(key)
        if v == "":
            return f"creation time `{key}` is empty {_NO_CREATION}"
        if v is not None:
            return f"creation time `{key}` = {_record_text(v)} is not a timestamp {_NO_CREATION}"
    return f"record has no usable creation time {_NO_CREATION}"


def _outside_years(text: str) -> str | None:
    """Why an ISO 8601 time with an offset was refused when its UTC time is outside the years
    a timestamp holds (``0001-01-01T00:00:00+08:00``); None for any other text."""
    try:
        parsed = datetime.fromisoformat(text.strip())
        if parsed.tzinfo is None:
            return None
        parsed.astimezone(UTC)
    except ValueError:
        return None
    except OverflowError:
        return "falls outside the years 1 to 9999 in UTC"
    return None


def _bad_creation_reason(key: str | None, value: Any) -> str:
    """Why a creation time that looked like one was refused; a number is out of range."""
    reason = f"creation time `{key}` = {value!r} is not an ISO 8601 timestamp or Unix seconds"
    if isinstance(value, str) and (outside := _outside_years(value)):
        return f"creation time `{key}` = {value!r} {outside}"
    try:
        seconds = float(value) if isinstance(value, int | float | str) else None
    except (ValueError, OverflowError):
        seconds = None
    if seconds is None or seconds != seconds:  # (NaN)
        return reason
    # Only a number reaches here out of range: 1e11 s is the year 5138, while milliseconds
    # of the years 1973 to 5138 (a common mistake) are 1e11 to 1e14.
    hint = "; this looks like milliseconds (divide by 1000)" if 1e11 <= seconds < 1e14 else ""
    return f"{reason}: {_SECONDS_RANGE}{hint}"


def _method(f: _Fields) -> tuple[str | None, ...]:
    """(method_type, payment_method_id, fpx_bank_code, fpx_bank, card_brand) of a payment.

    Sources, best first: the details (flat, or nested under ``card``/``fpx``), an
    expanded method object, the ``payment_method`` string (``pm_…`` is an id, anything
    else the method type), and for the type last the creation data's ``type``
    (``payment_method_data``, which stays whole in extra).
    """
    method_type = pm_id = None
    pm_str = f.text("payment_method")
    if pm_str is not None:
        if pm_str.startswith("pm_"):
            pm_id = pm_str
        else:
            method_type = pm_str.lower()
    brand = bank_code = bank = found_type = None
    # The details first, then an expanded method: a value the better source already gave
    # is not taken from the other one when it differs, so it stays in extra (not lost).
    for key in ("payment_method_details", "payment_method"):
        src = f.obj(key)
        if src is None:
            continue
        if key == "payment_method":
            pm_id = src.text("id") or pm_id
        card, fpx = src.obj("card"), src.obj("fpx")
        s_brand = _pick("brand", brand, src, card)
        s_code = _pick("bank_code", bank_code, src, fpx)
        s_bank = _pick("bank", bank, src, fpx)
        raw_kind = src.rest.get("type")
        if found_type is None or (raw_kind.__class__ is str and raw_kind.lower() == found_type):
            kind = src.text("type")
            inferred = "fpx" if fpx or s_code else "card" if card or s_brand else None
            found_type = found_type or (kind.lower() if kind else None) or inferred
        src.put_back("card", card)
        src.put_back("fpx", fpx)
        f.put_back(key, src)
        brand, bank_code, bank = brand or s_brand, bank_code or s_code, bank or s_bank
    if found_type is not None and method_type not in (None, found_type):
        f.rest["payment_method"] = pm_str  # a kind the details contradict: kept in extra
    method_type = found_type or method_type
    data = f.obj("payment_method_data")
    if data is not None:
        data_type = data.rest.get("type")  # read, not taken: the object stays whole in extra
        if method_type is None and data_type.__class__ is str and data_type:
            method_type = data_type.lower()
        f.put_back("payment_method_data", data)
    return method_type, pm_id, bank_code, bank, brand


# The rules: columns combined from several fields (the columns filled by one field as it is
# are read from the declaration, :func:`gwtools.normalize._decode.direct_columns`).


def _payment_rules(f: _Fields, row: dict[str, Any]) -> None:
    """The method and failure columns of one payment object; f keeps the rest."""
    method_type, pm_id, bank_code, bank, brand = _method(f)
    # A top-level code (variant A) wins; the error object's code then stays in extra.
    failure_code = f.text("failure_code")
    decline_code = f.text("decline_code")
    for key in ("last_payment_error", "error"):
        err = f.obj(key)
        if err is not None:
            failure_code = failure_code or err.text("code")
            decline_code = decline_code or err.text("decline_code")
            f.put_back(key, err)
    row.update(
        method_type=method_type, payment_method_id=pm_id, fpx_bank_code=bank_code,
        fpx_bank=bank, card_brand=brand, failure_code=failure_code, decline_code=decline_code,
    )  # fmt: skip


def _refund_rules(f: _Fields, row: dict[str, Any]) -> None:
    """The payment id of one refund object (``payment_id`` or its alias ``payment``)."""
    row["payment_id"] = _id_of(f, "payment_id") or _id_of(f, "payment")
    status = row["status_raw"]
    if status is not None and _canonical_refund_status(status) == "unknown":
        f.rest["status"] = status  # no status_raw column for refunds: keep it in extra


_RULES = {"payments": _payment_rules, "refunds": _refund_rules}


@functools.cache
def _pre_schema(resource: Resource) -> pa.Schema:
    """The intermediate table both paths build: the canonical columns less those computed at
    completion (a raw status in place of the canonical one), then ``extra`` and ``_page``."""
    fields: dict[str, pa.Field] = {}
    for f in _schema.arrow_schema(resource):
        if f.name == "status":
            f = f.with_name("status_raw")  # (payments have that column too: the same one)
        elif f.name in _schema.COMPUTED:
            continue
        fields[f.name] = f
    return pa.schema([*fields.values(), ("extra", _STR), ("_page", pa.int64())])


class _Collector:
    """The tolerant path: reads any object one by one, collecting rows and rejects."""

    def __init__(self, resource: Resource, check_ids: bool = False) -> None:
        self.resource = resource
        self.check_ids = check_ids
        self.direct = direct_columns(resource)
        self.raw_json = {c for c, (_, kind) in self.direct.items() if kind == "r"}
        self.rules = _RULES[resource]
        self.rows: list[dict[str, Any]] = []
        self.rests: list[_Fields] = []
        self.created_keys: list[str | None] = []
        self.sources: list[Any] = []
        self.pages: list[int] = []
        self.rejects: list[Reject] = []

    def reject(self, reason: str, record: Any, kind: str = "") -> None:
        text = record if isinstance(record, str) else _record_text(record)
        self.rejects.append(Reject(self.resource, reason, text, kind))

    def add(
        self, obj: Any, envelope: Variant | None, page: int = 0, raw: msgspec.Raw | None = None
    ) -> None:
        """Read one record (``raw``: its JSON as sent, when it came from a body)."""
        source = obj if raw is None else raw
        if not isinstance(obj, Mapping):
            kind = "null" if obj is None else type(obj).__name__
            self.reject(f"record is not a JSON object (got {kind})", source)
            return
        ident = obj.get("id")
        if not isinstance(ident, str) or not ident:
            why = (
                "record has no `id`"
                if ident is None or ident == ""
                else f"record `id` is not a string (got {ident!r})"
            )
            self.reject(why, source)
            return
        if self.check_ids and (malformed := malformed_id_reason(self.resource, ident)):
            self.reject(malformed, source, MALFORMED_ID)
            return
        f = _Fields(obj)
        meta_raw = raw_metadata(raw) if raw is not None else None
        row = {column: f.read(key, kind, meta_raw) for column, (key, kind) in self.direct.items()}
        self.rules(f, row)
        variant = object_variant(obj, envelope)
        row["api_variant"] = variant
        created_key, row["created_at"] = _creation(f, variant)
        if created_key is None:
            self.reject(_no_creation_reason(obj, variant), source)
            return
        self.rows.append(row)
        self.rests.append(f)
        self.created_keys.append(created_key)
        self.sources.append(source)
        self.pages.append(page)

    def table(self) -> pa.Table:
        """The intermediate table (timestamps parsed, extra rendered) of the rows read."""
        schema = _pre_schema(self.resource)
        if not self.rows:
            return schema.empty_table()
        keep = [True] * len(self.rows)
        cols: dict[str, pa.Array] = {}
        for name, kind in zip(schema.names, schema.types, strict=True):
            if name in ("extra", "_page"):
                continue
            values = [row[name] for row in self.rows]
            if kind == _TS:
                arr, bad = to_timestamps(values)
                for i in bad:
                    if name == "created_at":
                        keep[i] = False
                        reason = _bad_creation_reason(self.created_keys[i], values[i])
                        self.reject(reason, self.sources[i])
                    else:  # unusable: a null column, the raw value kept in extra
                        self.rests[i].rest[name] = values[i]
                cols[name] = arr
            elif name in self.raw_json:
                cols[name], not_object = _metadata_texts(_raw_texts(values))
                assert not_object is None  # non-objects were left in extra by _Fields.metadata
            else:
                cols[name] = pa.array(values, kind)
        cols["extra"] = pa.array(
            [
                _json_text(r) if r else None
                for r in (f.record_rest(_KIND[self.resource]) for f in self.rests)
            ],
            _STR,
        )
        cols["_page"] = pa.array(self.pages, pa.int64())
        table = pa.Table.from_pydict(cols, schema=schema)
        return table if all(keep) else table.filter(pa.array(keep))


# --------------------------------------------------------------------------- fast path


# How each field of the strict shapes becomes an Arrow column in stage 1 of the fast path,
# derived from the shapes' declarations (gwtools.normalize._decode.column_spec). Fields without a
# column are rendered into ``extra`` separately.
_FAST_SPEC: dict[str, tuple[type[msgspec.Struct], Spec]] = {
    r: (kind, column_spec(kind)) for r, kind in RECORD_SHAPES.items()
}


#: Records turned into Arrow per step: small enough that the Python objects of one step
#: stay in the CPU caches and reuse freed memory (fresh pages are costly), large enough
#: to spread the fixed cost of each Arrow call.
_CHUNK = 2000


class _FastColumns:
    """Stage 1 of the fast path: strictly decoded records -> Arrow arrays, chunk by chunk."""

    def __init__(self, resource: Resource, variant: Variant) -> None:
        self.resource = resource
        self.variant = variant
        self.kind, self.spec = _FAST_SPEC[resource]
        self.arrays: dict[str, list[pa.Array]] = {}
        self.pages: list[int] = []
        self.bad_rows: list[int] = []
        self.pending: list[Any] = []
        #: unknown top-level fields of pending records, by position (few records have any)
        self.unknown: dict[int, dict[str, Any]] = {}
        self.n = 0

    def add(self, records: list[Any], page: int, unknown: list[dict[str, Any] | None]) -> None:
        start = len(self.pending)
        self.pending.extend(records)
        if unknown:
            self.unknown.update((start + i, u) for i, u in enumerate(unknown) if u)
        self.pages.extend(itertools.repeat(page, len(records)))
        if len(self.pending) >= _CHUNK:
            self.flush()

    def flush(self) -> None:
        if self.pending:
            n = len(self.pending)
            cols = transpose(self.pending, self.kind)
            self._convert(cols, self.spec, "", n)
            if self.resource == "payments":
                extra = _payment_extra(cols, n, self.unknown)
                self.arrays.setdefault("extra", []).append(extra)
            self.n += n
            self.pending = []
            self.unknown = {}

    def _convert(self, cols: Columns, spec: Spec, prefix: str, n: int) -> None:
        """Append one chunk's arrays of the fields in ``spec``."""
        for name, kind in spec.items():
            if isinstance(kind, tuple):
                self._convert(cols, kind[1], f"{prefix}{name}.", n)
                continue
            values = cols.get(prefix + name.rstrip("?"))  # None: its sub-object is absent
            # values[0] first: a column that is usually there is rarely counted
            absent = values is None or (values[0] is None and values.count(None) == n)
            if kind == "p":
                arr = (
                    pa.nulls(n, pa.bool_()).fill_null(False)
                    if absent or values is None
                    else pa.array([v is not None for v in values], pa.bool_())
                )
            elif absent or values is None:
                arr = pa.nulls(n, _TS if kind == "t" else _FAST_TYPES.get(kind, _STR))
            elif kind == "t":
                arr, bad = to_timestamps(values)
                self.bad_rows.extend(self.n + i for i in bad)
            elif kind == "r":
                if values[0].__class__ is msgspec.Raw:
                    arr = _raw_texts(values)
                else:  # from objects: the JSON of the dicts
                    arr = _raw_texts([_JSON.encode(v) if v else b"" for v in values])
            else:
                arr = pa.array(values, _FAST_TYPES[kind])
            self.arrays.setdefault(prefix + name, []).append(arr)

    def table(self) -> tuple[pa.Table, set[int]]:
        """Stage 2: the intermediate table, and the pages to redo with the tolerant path."""
        self.flush()
        col = {k: pa.chunked_array(v) for k, v in self.arrays.items()}
        return _fast_table(self.resource, self.variant, col, self)


_FAST_TYPES = {"s": _STR, "id": _STR, "i": pa.int64(), "b": pa.bool_()}


def _payment_extra(cols: Columns, n: int, unknown: dict[int, dict[str, Any]]) -> pa.Array:
    """The ``extra`` column of strictly decoded payments, given their unknown top-level fields."""
    lines, merged = payment_extras(cols, n, unknown)
    extra = _lines_to_texts(lines, n)
    if merged:  # few records carry unknown fields: theirs are encoded on their own
        mask = np.zeros(n, np.bool_)
        mask[list(merged)] = True
        texts = pa.array([t.decode() for t in merged.values()], _STR)
        extra = pc.replace_with_mask(extra, pa.array(mask), texts)
    return pc.if_else(pc.equal(extra, "{}"), pa.scalar(None, _STR), extra)


def _fast_table(
    resource: Resource,
    variant: Variant,
    col: dict[str, pa.ChunkedArray],
    acc: _FastColumns,
) -> tuple[pa.Table, set[int]]:
    """Stage 2 of the fast path: whole Arrow columns -> (intermediate table, pages to redo).

    Vectorised over the batch. A page whose records need a judgement the tolerant path
    makes one record at a time (no id, an unparsable time, two sources for one
    column...) is returned for the tolerant path instead.
    """
    n = acc.n
    cols: dict[str, pa.Array | pa.ChunkedArray] = {}
    bad: pa.Array | pa.ChunkedArray | None = None

    def flag(mask: pa.Array | pa.ChunkedArray | None) -> None:
        nonlocal bad
        if mask is not None and pc.any(mask).as_py():
            bad = mask if bad is None else pc.or_(bad, mask)

    def text(name: str) -> pa.ChunkedArray:
        return _nullify_empty(col[name])

    for column, (name, kind) in direct_columns(resource).items():
        if kind == "r":  # (metadata)
            cols[column], not_object = _metadata_texts(col[name])
            flag(not_object)
        else:
            cols[column] = text(name) if col[name].type == _STR else col[name]
    flag(pc.is_null(cols["id"]))
    cols["api_variant"] = pa.array(itertools.repeat(variant, n), _STR)
    used, other = CREATION_FIELDS[variant]
    flag(pc.is_valid(col[other]))
    cols["created_at"] = col[used]
    flag(pc.is_null(col[used]))

    if resource == "refunds":
        flag(pc.and_(pc.is_valid(col["payment_id"]), pc.is_valid(col["payment"])))
        cols["payment_id"] = pc.coalesce(text("payment_id"), text("payment"))
        # No status_raw column for refunds: an unknown status is kept in extra.
        extra = [
            None if v is None or v in _REFUND_KNOWN else _json_text({"status": v})
            for v in cols["status_raw"].to_pylist()
        ]
        cols["extra"] = pa.array(extra, _STR)
    else:
        # The method: details (type, brand, bank), then the payment_method string.
        pm = text("payment_method")
        is_id = pc.starts_with(pm, "pm_")
        cols["payment_method_id"] = pc.if_else(is_id, pm, pa.scalar(None, _STR))
        pm_type = pc.utf8_lower(pc.if_else(is_id, pa.scalar(None, _STR), pm))
        d = "payment_method_details."
        # Flat (the sandbox) or nested per method; given both ways, the tolerant path decides.
        flat_or_nested = {}
        for name, nested in (("brand", "card.brand"), ("bank_code", "fpx.bank_code"),
                             ("bank", "fpx.bank")):  # fmt: skip
            flag(pc.and_(pc.is_valid(col[d + name]), pc.is_valid(col[d + nested])))
            flat_or_nested[name] = pc.coalesce(text(d + name), text(d + nested))
        brand, bank_code = flat_or_nested["brand"], flat_or_nested["bank_code"]
        inferred = pc.if_else(
            pc.or_(pc.is_valid(bank_code), col[d + "fpx?"]),
            _lit("fpx"),
            pc.if_else(
                pc.or_(pc.is_valid(brand), col[d + "card?"]), _lit("card"), pa.scalar(None, _STR)
            ),
        )
        found_type = pc.coalesce(pc.utf8_lower(text(d + "type")), inferred)
        # A kind the details contradict stays in extra: the tolerant path puts it there.
        flag(pc.fill_null(pc.not_equal(pm_type, found_type), False))
        cols.update(
            method_type=pc.coalesce(
                found_type,
                pm_type,
                pc.utf8_lower(text("payment_method_data.type")),  # the creation data's
            ),
            fpx_bank_code=bank_code,
            fpx_bank=flat_or_nested["bank"],
            card_brand=brand,
        )
        # Failure codes: top level (variant A), or an error object (B's last_payment_error,
        # A's error); given more than once, the tolerant path decides.
        for name, sub in (("failure_code", "code"), ("decline_code", "decline_code")):
            sources = (name, f"last_payment_error.{sub}", f"error.{sub}")
            given = [pc.is_valid(col[s]) for s in sources]
            for i, j in itertools.combinations(range(len(given)), 2):
                flag(pc.and_(given[i], given[j]))
            cols[name] = pc.coalesce(*map(text, sources))
        cols["extra"] = col["extra"]
    cols["_page"] = pa.array(acc.pages, pa.int64())
    table = pa.Table.from_pydict(cols, schema=_pre_schema(resource))
    bad_rows = set(acc.bad_rows)
    if bad is not None:
        bad_rows.update(pc.indices_nonzero(pc.fill_null(bad, False)).to_pylist())
    redo = {int(acc.pages[i]) for i in bad_rows}
    if redo:
        table = table.filter(pc.invert(pc.is_in(table["_page"], pa.array(sorted(redo)))))
    return table, redo


# --------------------------------------------------------------------------- completion


def _complete(
    resource: Resource, tables: list[pa.Table], livemode: bool | None
) -> tuple[pd.DataFrame, set[str]]:
    """Intermediate tables -> the canonical frame, in page order; and the unknown statuses.

    ``livemode`` fills the column where a record does not say (variant A)."""
    tables = [t for t in tables if t.num_rows] or tables[:1]
    table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    if table.num_rows == 0:
        return _schema.empty(resource), set()
    if len(tables) > 1 and not _ascending(table["_page"]):
        # Rows of one page stay together and in order: the sort is stable.
        table = table.take(pc.sort_indices(table["_page"]))
    cols = {name: table[name] for name in table.column_names}
    status_raw = cols["status_raw"].combine_chunks()
    # Case and padding carry no meaning in an ISO 4217 code (B sends "myr"); left as sent,
    # " MYR" would be a second currency that Babel does not know, so no amount_major.
    currency = pc.utf8_upper(pc.utf8_trim_whitespace(cols["currency"].combine_chunks()))
    currency = pc.if_else(pc.equal(currency, ""), pa.scalar(None, currency.type), currency)
    amount = cols["amount"].combine_chunks()
    exponent = _map_unique(currency, _exponent, pa.int64())
    scale = pc.power(pa.scalar(10.0), pc.cast(exponent, pa.float64()))
    cols.update(
        livemode=pc.coalesce(cols["livemode"], pa.scalar(livemode, pa.bool_())),
        currency=currency,
        # unsafe: an amount beyond 2**53 becomes the nearest float rather than an error
        amount_major=pc.divide(pc.cast(amount, pa.float64(), safe=False), scale),
    )
    if resource == "payments":
        status = _payment_statuses(cols["api_variant"].combine_chunks(), status_raw)
        cols.update(
            status=status,
            outcome=_map_unique(status, _schema.PAYMENT_OUTCOME.__getitem__, _STR),
        )
    else:
        status = pc.fill_null(_map_unique(status_raw, _canonical_refund_status, _STR), "unknown")
        cols["status"] = status
    cols["extra"] = _without_card_data(cols["extra"].combine_chunks())
    unmapped = status_raw.filter(pc.equal(status, "unknown"))
    unknown = {s for s in pc.unique(unmapped).to_pylist() if s is not None}
    final = pa.table({name: cols[name] for name in _schema.columns(resource)})
    return _to_pandas(final), unknown


_CARD_DATA = r'"(number|cvc)"'


def _masked_card(value: Any, in_card: bool = False) -> Any:
    """``value`` with each ``card`` object's number and CVC masked (see the module's notes)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if in_card and k == "number" and isinstance(v, str | int):
                digits = "".join(c for c in str(v) if c.isdigit())
                out[k] = f"…{digits[-4:]}"
            elif in_card and k == "cvc":
                out[k] = "…"
            else:
                out[k] = _masked_card(v, k == "card")
        return out
    if isinstance(value, list):
        return [_masked_card(v) for v in value]
    return value


def _without_card_data(extra: pa.Array) -> pa.Array:
    """``extra`` texts with card numbers and CVCs masked; the rare rows that may hold one
    (a ``"number"`` or ``"cvc"`` key) are parsed, the rest left as they are."""
    suspect = pc.fill_null(pc.match_substring_regex(extra, _CARD_DATA), False)
    if not pc.any(suspect).as_py():
        return extra
    texts = extra.to_pylist()
    for i in np.flatnonzero(suspect.to_numpy(zero_copy_only=False)):
        # msgspec, as extra was written: orjson reads an int beyond 64 bits as a float
        texts[i] = _json_text(_masked_card(decode_value(texts[i])))
    return pa.array(texts, extra.type)


def _ascending(values: pa.ChunkedArray) -> bool:
    flat = values.combine_chunks()
    return len(flat) < 2 or bool(pc.all(pc.less_equal(flat[:-1], flat[1:])).as_py())


#: Arrow -> pandas types of the canonical columns (timestamps and floats convert as they are).
_PANDAS_TYPES = {
    field.type: dtype
    for resource, columns in _schema.COLUMNS.items()
    for field, dtype in zip(_schema.arrow_schema(resource), columns.values(), strict=True)
    if isinstance(dtype, pd.StringDtype | pd.Int64Dtype | pd.BooleanDtype)
}


def _to_pandas(table: pa.Table) -> pd.DataFrame:
    # float64 nulls become NaN; timestamps keep their unit and zone.
    frame: pd.DataFrame = table.to_pandas(types_mapper=_PANDAS_TYPES.get, self_destruct=True)
    return frame


# --------------------------------------------------------------------------- public functions


def normalize_bodies(
    resource: Resource,
    bodies: Sequence[bytes | tuple[Variant, bytes]],
    *,
    livemode: bool | None = None,
    check_ids: bool = False,
) -> NormalizedBatch:
    """List response bodies, as received, of either variant -> one canonical frame.

    A retrieved single object is given as ``(variant, body)``, as
    :func:`gwtools.http._wire.read_object` reads it; it is decoded as the one record it is.
    Never raises for bad data: an unusable body or record becomes a :class:`Reject`
    with its reason; unknown statuses map to ``unknown`` and are listed in
    ``unknown_statuses`` for the caller to warn about once. ``check_ids`` also rejects
    records whose id is not in the documented format (kind :data:`MALFORMED_ID`), as a
    sync does. Rows keep the order of the bodies and of the records in them::

        batch = normalize_bodies("payments", [r.content for r in responses], livemode=False)
        batch.frame, batch.rejects, batch.unknown_statuses
    """
    return _normalize_bodies(resource, bodies, livemode, fast=True, check_ids=check_ids)


#: Reads part ``i`` of a batch strictly: (variant, typed records, unknown fields per
#: record, or [] when none), or None when the part needs the tolerant path.
_StrictReader = Callable[[int], "tuple[Variant, list[Any], list[dict[str, Any] | None]] | None"]
#: Reads part ``i`` of a batch record by record into a collector.
_TolerantReader = Callable[[int, "_Collector"], None]


def _normalize_parts(
    resource: Resource,
    parts: int,
    strict: _StrictReader,
    tolerant: _TolerantReader,
    livemode: bool | None,
    *,
    fast: bool,
    check_ids: bool = False,
) -> NormalizedBatch:
    """Parts (list bodies, single objects) -> one canonical batch, in part order.

    Each part is read strictly (the fast path) unless ``fast`` is false; a part it cannot
    read, or that holds a record needing a judgement, is read by the tolerant path.
    """
    _schema.columns(resource)  # a clear error for a bad resource name
    with _NoGC():
        if not fast:
            tables: list[pa.Table] = []
            redo = list(range(parts))
        else:
            tables, redo = _strict_share(resource, range(parts), strict)
            if check_ids:
                tables, damaged = _without_malformed_ids(resource, tables)
                redo = sorted(set(redo) | damaged)
        collector = _Collector(resource, check_ids)
        for i in sorted(redo):
            tolerant(i, collector)
        tables.append(collector.table())
        frame, unknown = _complete(resource, tables, livemode)
    return NormalizedBatch(frame, collector.rejects, unknown)


def _with_variant(
    variant: Variant, got: Decoded | None
) -> tuple[Variant, list[Any], list[dict[str, Any] | None]] | None:
    return None if got is None else (variant, *got)


def _normalize_bodies(
    resource: Resource,
    bodies: Sequence[bytes | tuple[Variant, bytes]],
    livemode: bool | None,
    *,
    fast: bool,
    check_ids: bool = False,
) -> NormalizedBatch:
    """normalize_bodies; ``fast=False`` reads every body with the tolerant path (tests compare)."""

    def strict(i: int) -> tuple[Variant, list[Any], list[dict[str, Any] | None]] | None:
        part = bodies[i]
        if isinstance(part, tuple):
            return _with_variant(part[0], decode_object_body(resource, part[1]))
        return decode_fast(resource, part)

    def tolerant(i: int, collector: _Collector) -> None:
        part = bodies[i]
        if isinstance(part, tuple):
            variant, body = part
            raws = [msgspec.Raw(body)]
        else:
            try:
                variant, raws = decode_raw_records(part)
            except MalformedResponseError as exc:
                collector.reject(exc.why, snippet(part, 1000))
                return
        for raw in raws:
            try:
                obj = decode_value(raw)
            except (msgspec.DecodeError, UnicodeDecodeError) as exc:
                collector.reject(f"record is not valid JSON ({exc})", raw)
                continue
            collector.add(obj, variant, i, raw)

    return _normalize_parts(
        resource, len(bodies), strict, tolerant, livemode, fast=fast, check_ids=check_ids
    )


def _without_malformed_ids(
    resource: Resource, tables: list[pa.Table]
) -> tuple[list[pa.Table], set[int]]:
    """The fast path's tables without the pages holding an id outside the documented format,
    and those pages (the tolerant path rejects their damaged records). Only syncs check:
    the regex costs about a fifth of the fast path's time."""
    damaged: set[int] = set()
    for t in tables:
        bad = malformed_ids(resource, t["id"])
        if pc.any(bad).as_py():
            damaged.update(pc.unique(t["_page"].filter(bad)).to_pylist())
    if not damaged:
        return tables, damaged
    drop = pa.array(sorted(damaged), pa.int64())
    return [t.filter(pc.invert(pc.is_in(t["_page"], value_set=drop))) for t in tables], damaged


def _strict_share(
    resource: Resource, share: Sequence[int], strict: _StrictReader
) -> tuple[list[pa.Table], list[int]]:
    """The fast path over parts ``share``: tables, and the parts left to the tolerant path."""
    columns = {"A": _FastColumns(resource, "A"), "B": _FastColumns(resource, "B")}
    tolerant: list[int] = []
    tables: list[pa.Table] = []
    for i in share:
        got = strict(i)
        if got is None:
            tolerant.append(i)
        else:
            variant, records, unknown = got
            columns[variant].add(records, i, unknown)
    for acc in columns.values():
        if acc.pages:
            table, redo = acc.table()
            tables.append(table)
            tolerant.extend(redo)
    return tables, tolerant


def _normalize_object_list(
    resource: Resource, objects: Sequence[Any], livemode: bool | None, *, fast: bool = True
) -> NormalizedBatch:
    """Objects (dicts) -> a canonical batch: each converted to its record shape directly (no
    JSON text), its variant told by :func:`gwtools.http._wire.object_variant`."""

    def strict(i: int) -> tuple[Variant, list[Any], list[dict[str, Any] | None]] | None:
        obj = objects[i]
        if not isinstance(obj, Mapping):
            return None  # the tolerant path rejects it, saying what it is
        return _with_variant(object_variant(obj), decode_object(resource, obj))

    def tolerant(i: int, collector: _Collector) -> None:
        collector.add(objects[i], None, i)

    return _normalize_parts(resource, len(objects), strict, tolerant, livemode, fast=fast)


def _normalize_objects(
    resource: Resource,
    records: Iterable[Mapping[str, Any]],
    livemode: bool | None,
    on_reject: Literal["raise", "warn"],
) -> pd.DataFrame:
    if on_reject not in ("raise", "warn"):
        raise ConfigurationError(f"on_reject must be 'raise' or 'warn', not {on_reject!r}")
    if isinstance(records, Mapping | str | bytes) or not isinstance(records, Iterable):
        raise ConfigurationError(
            f"normalize_{resource} takes an iterable of API objects (e.g. a list of dicts), "
            f"not a single {type(records).__name__}; for list response bodies use normalize_bodies"
        )
    batch = _normalize_object_list(resource, list(records), livemode)
    for status in sorted(batch.unknown_statuses):
        warnings.warn(
            f"unknown {resource[:-1]} status {status!r} mapped to 'unknown' "
            "(the raw value is kept)",
            UserWarning,
            stacklevel=3,
        )
    if batch.rejects:
        listed = "; ".join(f"{r.reason}: {r.record[:120]}" for r in batch.rejects[:5])
        more = f" (and {len(batch.rejects) - 5} more)" if len(batch.rejects) > 5 else ""
        if on_reject == "raise":
            raise InvalidRecordError(
                f"{len(batch.rejects)} {resource} record(s) cannot become rows: {listed}{more}. "
                "Fix them, or pass on_reject='warn' to keep the usable rows (the rejects are "
                "then in frame.attrs['rejects'])"
            )
        warnings.warn(
            f"{len(batch.rejects)} {resource} record(s) left out: {listed}{more}; "
            "see frame.attrs['rejects']",
            UserWarning,
            stacklevel=3,
        )
        batch.frame.attrs["rejects"] = batch.rejects
    return batch.frame


def normalize_payments(
    records: Iterable[Mapping[str, Any]],
    *,
    livemode: bool | None = None,
    on_reject: Literal["raise", "warn"] = "raise",
) -> pd.DataFrame:
    """Payment objects of either API variant (mixed is fine) -> the canonical payments table.

    ``livemode`` fills the column for variant A objects, which do not carry it (it is
    the mode of the key they were fetched with). A record without an id or a usable
    creation time raises ``ValueError`` naming it, unless ``on_reject="warn"``, which
    keeps the usable rows and lists the rest in ``frame.attrs["rejects"]``. Each
    unknown status value is warned about once::

        import gwtools
        df = gwtools.normalize_payments([
            {"id": "pay_1", "amount": 1000, "currency": "MYR", "status": "captured",
             "payment_method": "fpx", "created_at": "2024-03-01T10:00:00+08:00"},
            {"id": "pay_2", "amount": 500, "currency": "myr", "status": "succeeded",
             "created": 1709287200, "livemode": False},
        ], livemode=False)
    """
    return _normalize_objects("payments", records, livemode, on_reject)


def normalize_refunds(
    records: Iterable[Mapping[str, Any]],
    *,
    livemode: bool | None = None,
    on_reject: Literal["raise", "warn"] = "raise",
) -> pd.DataFrame:
    """Refund objects of either API variant -> the canonical refunds table.

    Same rules as :func:`normalize_payments`; the payment id is read from
    ``payment_id`` or its alias ``payment``::

        df = gwtools.normalize_refunds([{"id": "rfnd_1", "payment": "pay_1", "amount": 500,
                                         "currency": "MYR", "status": "pending",
                                         "created_at": "2024-03-02T09:00:00Z"}])
    """
    return _normalize_objects("refunds", records, livemode, on_reject)
