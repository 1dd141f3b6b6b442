"""The gateway's wire format, and nothing else: what the bytes of both API variants mean.

Every other module speaks to the gateway's JSON through this one:

- list envelopes: variant A ``{"data": [...], "meta": {...}}`` (page numbers, totals),
  variant B ``{"object": "list", "data": [...], "has_more": ...}`` (cursors); a body that
  is neither raises :class:`MalformedResponseError` saying what was expected;
- :func:`page_info`: what paging needs from one list body (variant, counts, each record's
  id, the first and last ids and creation times), read in one pass over the body;
- variants of single objects: a retrieved object carrying B's creation field ``created``
  is variant B, else A (:func:`object_variant`, :func:`read_object`);
- creation fields (:data:`CREATION_FIELDS`) and their time formats (ISO 8601 or Unix
  seconds: :func:`to_timestamps`);
- ids: the documented format per resource (:data:`ID_PREFIX`, :data:`ID_PATTERN`,
  :func:`malformed_id_reason`) and ids damaged in transit (:func:`has_damaged_id`);
- REST paths of both variants (:func:`list_path`, :func:`object_path`, :func:`is_list_path`).

Record shapes (which fields a payment or refund carries) are in :mod:`gwtools.normalize._decode`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Literal
from urllib.parse import quote

import msgspec
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gwtools import _schema

Variant = Literal["A", "B"]

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.large_string()
#: Unix seconds of 0001-01-01 and 9999-12-31T23:59:59, the range a timestamp column holds.
_MIN_UNIX, _MAX_UNIX = -62135596800, 253402300799
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


# --------------------------------------------------------------------------- paths


def list_path(resource: str) -> str:
    """The list endpoint of a resource, relative to ``/v1`` (the same in both variants)."""
    return resource


def is_list_path(path: str) -> bool:
    """Whether ``path`` (relative to ``/v1``) is a list endpoint, not one object's: a list is
    always there, so a 404 for one means the base URL is wrong, not an id."""
    return "/" not in path.strip("/")


def object_path(resource: str, ident: str) -> str:
    """The endpoint of one object by id, relative to ``/v1`` (the same in both variants)."""
    return f"{resource}/{quote(ident, safe='')}"


# --------------------------------------------------------------------------- ids

#: The documented id format: the resource's prefix, then letters and digits (the sandbox uses
#: 24 base-62 characters; other lengths are accepted, anything else in an id is damage).
ID_PREFIX: Final[dict[str, str]] = {"payments": "pay_", "refunds": "rfnd_"}
ID_PATTERN: Final[dict[str, str]] = {r: f"^{p}[A-Za-z0-9]+$" for r, p in ID_PREFIX.items()}
_ID_RE = {r: re.compile(p) for r, p in ID_PATTERN.items()}
#: The reject kind of a record whose id is outside the documented format.
MALFORMED_ID: Final = "malformed id"
#: An id beginning with its resource's prefix, then a character outside the id alphabet.
_DAMAGED_ID = {
    r: re.compile(rb'"id"\s*:\s*"' + p.encode() + rb'[A-Za-z0-9]*[^A-Za-z0-9"]')
    for r, p in ID_PREFIX.items()
}


def malformed_id_reason(resource: str, ident: str) -> str | None:
    """Why ``ident`` is not a well-formed id of ``resource`` (None when it is)."""
    if _ID_RE[resource].fullmatch(ident):  # (match would let "pay_1\n" through: $ and \n)
        return None
    return (
        f"malformed id {ident!r}: {resource} ids are {ID_PREFIX[resource]!r} followed by "
        "letters and digits (damaged in transit?); the next sync fetches it again"
    )


def malformed_ids(resource: str, ids: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Which of a column of ids are outside the documented format (nulls are not: a missing id
    is judged elsewhere), vectorised; :func:`malformed_id_reason` says why for one."""
    return pc.invert(pc.fill_null(pc.match_substring_regex(ids, ID_PATTERN[resource]), True))


def has_damaged_id(resource: str, body: bytes) -> bool:
    """Whether an id in a body starts with the resource's prefix and then holds a character
    ids never hold (a byte changed in transit): such a page is worth fetching again."""
    pattern = _DAMAGED_ID.get(resource)
    return pattern is not None and pattern.search(body) is not None


# --------------------------------------------------------------------------- envelopes


class MalformedResponseError(ValueError):
    """A response body is not JSON, or not a list envelope of either API variant.

    ``why`` is the reason alone, without the body snippet the message ends with.
    """

    def __init__(self, message: str, *, why: str | None = None) -> None:
        super().__init__(message)
        self.why = why or message


class EnvelopeMeta(msgspec.Struct, gc=False):
    # Any-typed so that a gateway sending e.g. a string page number is reported, not crashed on.
    total: Any = None
    page: Any = None
    limit: Any = None
    totalPages: Any = None


class _RawEnvelope(msgspec.Struct, gc=False):
    """An envelope whose records stay undecoded (cheap: page_info needs only two of them)."""

    data: list[msgspec.Raw] | None = None
    meta: EnvelopeMeta | None = None
    has_more: Any = None
    object: Any = None


_raw_envelope_decoder = msgspec.json.Decoder(_RawEnvelope)
_any_decoder = msgspec.json.Decoder()


def snippet(body: bytes, limit: int = 200) -> str:
    """The start of a body as text, for error messages and reject records."""
    text = body[:limit].decode("utf-8", errors="replace")
    return text + ("…" if len(body) > limit else "")


def envelope_variant(meta: object, has_more: object, obj: object) -> Variant | None:
    if isinstance(meta, dict | EnvelopeMeta):
        return "A"
    if (has_more is not msgspec.UNSET and has_more is not None) or obj == "list":
        return "B"
    return None


def _not_envelope(body: bytes, why: str) -> MalformedResponseError:
    reason = (
        f"response body is not a list envelope of either API variant ({why}); expected "
        f'{{"data": [...], "meta": {{...}}}} (variant A) or {{"object": "list", "data": [...], '
        f'"has_more": ...}} (variant B)'
    )
    return MalformedResponseError(f"{reason}; body starts: {snippet(body)!r}", why=reason)


def _not_json(body: bytes, exc: Exception) -> MalformedResponseError:
    reason = f"response body is not JSON ({exc})"
    return MalformedResponseError(f"{reason}; body starts: {snippet(body)!r}", why=reason)


def decode_raw_envelope(body: bytes) -> tuple[Variant, _RawEnvelope]:
    """Decode a list body keeping its records as raw JSON; raise if it is not an envelope."""
    try:
        env = _raw_envelope_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise _not_envelope(body, str(exc)) from None
    except msgspec.DecodeError as exc:
        raise _not_json(body, exc) from None
    if env.data is None:
        raise _not_envelope(body, "no `data` list")
    variant = envelope_variant(env.meta, env.has_more, env.object)
    if variant is None:
        raise _not_envelope(body, "neither `meta` nor `has_more`/`object: list`")
    return variant, env


def decode_value(raw: bytes | str | msgspec.Raw) -> Any:
    """Decode one JSON value (a record kept raw)."""
    return _any_decoder.decode(raw)


def decode_raw_records(body: bytes) -> tuple[Variant, list[msgspec.Raw]]:
    """A list body's variant and its records kept as raw JSON (for the tolerant path)."""
    variant, env = decode_raw_envelope(body)
    return variant, env.data or []


# --------------------------------------------------------------------------- variants of objects

#: Creation fields in the order each variant prefers them (A: ISO 8601, B: Unix seconds).
CREATION_FIELDS: Final[dict[str, tuple[str, str]]] = {
    "A": ("created_at", "created"),
    "B": ("created", "created_at"),
}


def object_variant(obj: Mapping[str, Any], envelope: Variant | None = None) -> Variant:
    """An object's variant: its envelope's, else B when it carries ``created``, else A."""
    if envelope is not None:
        return envelope
    return "B" if "created" in obj else "A"


class _Head(msgspec.Struct, gc=False):
    """What paging needs of one record; UNSET tells an absent ``created`` from a null one."""

    id: Any = None
    created: Any = msgspec.UNSET
    created_at: Any = None


_head_decoder = msgspec.json.Decoder(_Head)


def read_object(body: bytes) -> tuple[Variant, bytes]:
    """A retrieved single object's variant, and its body (raises ValueError if not an object)."""
    try:
        head = _head_decoder.decode(body)
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not a JSON object ({exc})") from None
    return ("A" if head.created is msgspec.UNSET else "B"), body


# --------------------------------------------------------------------------- times


def _ts_from_seconds(values: Sequence[Any]) -> tuple[pa.Array, list[int]]:
    """Unix seconds (int/float/None) -> timestamps; indexes out of range are bad."""
    try:
        secs = pa.array(values)
    except (OverflowError, pa.ArrowInvalid):
        # An int beyond int64 (OverflowError), or beside floats one a double cannot hold
        # exactly (ArrowInvalid: from 2**53, e.g. nanoseconds): far out of range, bad like
        # the others. (Every int in range is far below 2**53.)
        huge = [i for i, v in enumerate(values)
                if v.__class__ is int and not _MIN_UNIX <= v <= _MAX_UNIX]  # fmt: skip
        if not huge:
            raise
        kept = list(values)
        for i in huge:
            kept[i] = None
        arr, other_bad = _ts_from_seconds(kept)
        return arr, sorted({*other_bad, *huge})
    if pa.types.is_null(secs.type):
        return pa.nulls(len(values), _TS), []
    secs = pc.cast(secs, pa.float64()) if pa.types.is_floating(secs.type) else secs
    in_range = pc.and_(pc.greater_equal(secs, _MIN_UNIX), pc.less_equal(secs, _MAX_UNIX))
    bad: list[int] = []
    if not pc.all(in_range).as_py():  # NaN compares false, so it is bad too
        bad = pc.indices_nonzero(pc.invert(pc.fill_null(in_range, True))).to_pylist()
        secs = pc.if_else(in_range, secs, pa.scalar(None, secs.type))
    if pa.types.is_floating(secs.type):
        micros = pc.cast(pc.round(pc.multiply(secs, 1_000_000.0)), pa.int64())
    else:
        micros = pc.multiply(pc.cast(secs, pa.int64()), 1_000_000)
    return micros.cast(_TS), bad


def _in_range(stamps: pa.Array) -> pa.Array:
    """``stamps`` with the times outside the years 1 to 9999 (UTC) as nulls: an offset can
    carry ISO 8601 text of those years out of them (.NET's ``0001-01-01T00:00:00+08:00``),
    and a signed year is outside; neither fits a timestamp column or a Python datetime."""
    micros = stamps.cast(pa.int64())
    in_range = pc.and_(
        pc.greater_equal(micros, _MIN_UNIX * 1_000_000),
        pc.less_equal(micros, _MAX_UNIX * 1_000_000 + 999_999),
    )
    if pc.all(in_range).as_py():
        return stamps
    return pc.if_else(in_range, stamps, pa.scalar(None, _TS))


def _ts_from_strings(values: Sequence[str | None]) -> tuple[pa.Array, list[int]]:
    """ISO 8601 strings (any offset; naive = UTC; Unix seconds as digits, except eight
    digits, which are a basic-format date) -> timestamps."""
    arr = pa.array(values, _STR)
    try:
        # Arrow's parser is fast but needs an offset on every value.
        cast = arr.cast(_TS)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    else:
        kept = _in_range(cast)
        if kept is cast:
            return cast, []
        return kept, pc.indices_nonzero(pc.and_(pc.is_valid(arr), pc.is_null(kept))).to_pylist()
    # RFC 3339 allows a lower-case "t" and "z", ISO 8601 a comma before the fraction; both
    # parsers below want "T", "Z" and ".". Nothing else in a timestamp has a case or a comma.
    arr = pc.replace_substring(pc.utf8_upper(arr), ",", ".")
    digits = pc.fill_null(pc.match_substring_regex(arr, r"^\s*-?\d+(\.\d+)?\s*$"), False)
    # Eight bare digits are ISO 8601's basic date (20260101), not Unix seconds of 1970-08:
    # read as seconds, a proxy's date would land silently in the wrong half century.
    basic_date = pc.fill_null(pc.match_substring_regex(arr, r"^\s*\d{8}\s*$"), False)
    digits = pc.and_(digits, pc.invert(basic_date))
    series = pd.Series(pc.if_else(digits, pa.scalar(None, _STR), arr).to_pylist(), dtype=object)
    parsed = pd.to_datetime(series, format="ISO8601", utc=True, errors="coerce")
    out = _in_range(pa.array(parsed.astype(_schema.TIMESTAMP), _TS))
    if pc.any(digits).as_py():
        as_secs = pc.cast(pc.utf8_trim_whitespace(pc.if_else(digits, arr, None)), pa.float64())
        secs, _ = _ts_from_seconds(as_secs.to_pylist())
        out = pc.if_else(digits, secs, out)
    bad_mask = pc.and_(pc.is_valid(arr), pc.is_null(out))
    return out, pc.indices_nonzero(bad_mask).to_pylist()


def to_timestamps(values: Sequence[Any]) -> tuple[pa.Array, list[int]]:
    """Raw timestamp values of any accepted form -> ``timestamp[us, UTC]`` and bad indexes.

    Accepted: ISO 8601 strings with any offset (naive means UTC), Unix seconds as int,
    float or digit string, and datetime objects (naive means UTC).
    """
    kinds = set(map(type, values))
    kinds.discard(type(None))
    if kinds <= {str}:
        return _ts_from_strings(values)
    if kinds <= {int, float}:
        return _ts_from_seconds(values)
    # A mix: route each value to the parser of its kind, then put them back in place.
    strings: list[str | None] = [None] * len(values)
    seconds: list[Any] = [None] * len(values)
    bad: list[int] = []
    for i, v in enumerate(values):
        if isinstance(v, bool) or v is None:
            if v is not None:
                bad.append(i)
        elif isinstance(v, int | float):
            if v.__class__ is int and not INT64_MIN <= v <= INT64_MAX:
                bad.append(i)  # (float() of a huge int would raise): far out of range
            else:
                seconds[i] = float(v)
        elif isinstance(v, str):
            strings[i] = v
        elif isinstance(v, datetime):
            aware = v if v.tzinfo is not None else v.replace(tzinfo=UTC)
            seconds[i] = aware.timestamp()
        else:
            bad.append(i)
    s_arr, s_bad = _ts_from_strings(strings)
    n_arr, n_bad = _ts_from_seconds(seconds)
    return pc.coalesce(s_arr, n_arr), sorted({*bad, *s_bad, *n_bad})


# --------------------------------------------------------------------------- page info


@dataclass(frozen=True)
class PageInfo:
    """What a pager needs from one list response body (see :func:`page_info`)."""

    variant: Variant
    count: int
    has_more: bool | None = None
    total: int | None = None
    total_pages: int | None = None
    page: int | None = None
    limit: int | None = None
    first_id: str | None = None
    last_id: str | None = None
    first_created: datetime | None = None
    last_created: datetime | None = None
    #: each record's id, in order (None where a record has no usable id)
    ids: tuple[str | None, ...] = ()


def _first_creation(head: _Head, variant: Variant) -> Any:
    """The raw creation value a record gives in ``variant``'s order (as the tolerant reader
    takes it: a non-empty string or a number, never a bool)."""
    for key in CREATION_FIELDS[variant]:
        v = getattr(head, key)
        if v is None or v is msgspec.UNSET or v == "":
            continue
        if isinstance(v, str | int | float) and not isinstance(v, bool):
            return v
    return None


def _heads(raws: Sequence[msgspec.Raw]) -> list[_Head | None]:
    out: list[_Head | None] = []
    for raw in raws:
        try:
            out.append(_head_decoder.decode(raw))
        except (msgspec.DecodeError, UnicodeDecodeError):  # not an object, or damaged
            out.append(None)
    return out


def page_info(body: bytes) -> PageInfo:
    """Read what paging needs from one list response body, without normalising it.

    Raises :class:`MalformedResponseError` (a ``ValueError``) when the body is not
    JSON or not a list envelope of either variant::

        info = page_info(response.content)
        if info.variant == "B" and info.has_more:
            next_params = {"starting_after": info.last_id}
    """
    variant, env = decode_raw_envelope(body)
    heads = _heads(env.data or [])
    ids = tuple(h.id if h is not None and isinstance(h.id, str) and h.id else None for h in heads)

    def created_at(i: int) -> datetime | None:
        h = heads[i]
        raw = _first_creation(h, variant) if h is not None else None
        if raw is None:
            return None
        arr, bad = to_timestamps([raw])
        return None if bad else arr[0].as_py()

    def first(values: Iterable[Any]) -> Any:
        return next((v for v in values if v is not None), None)

    order = range(len(heads))
    meta = env.meta

    def ints(v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    return PageInfo(
        variant=variant,
        count=len(heads),
        has_more=env.has_more if isinstance(env.has_more, bool) else None,
        total=ints(meta.total) if meta else None,
        total_pages=ints(meta.totalPages) if meta else None,
        page=ints(meta.page) if meta else None,
        limit=ints(meta.limit) if meta else None,
        first_id=first(ids),
        last_id=first(reversed(ids)),
        first_created=first(map(created_at, order)),
        last_created=first(map(created_at, reversed(order))),
        ids=ids,
    )
