"""Raw API objects and list bodies of either variant -> the canonical tables.

Use :func:`normalize_payments` / :func:`normalize_refunds` on objects you already
hold (parsed JSON, webhook payloads), and :func:`normalize_bodies` on list response
bodies exactly as received; the pager uses :func:`page_info` to read one body's
envelope cheaply. Columns, order and dtypes are those of :mod:`gwtools._schema`.

Decisions where the spec is silent (DESIGN.md section 2 fixes the rest):

- A record is variant B when it carries B's creation field ``created``, else A;
  list bodies take the variant of their envelope (``meta`` -> A, ``has_more`` -> B).
- A ``payment_method`` string starting with ``pm_`` is a payment method id, any
  other string is the method type (variant A's ``card``/``fpx``); an expanded
  method object gives its id, type, card brand and FPX bank.
- ``metadata`` is the object as compact JSON text with sorted keys; ``{}`` or no
  metadata is null.
- ``extra`` is compact JSON text, sorted keys, of every raw field without a column,
  and of the unmapped remainder of partly mapped objects (e.g.
  ``{"payment_method_details": {"last4": "4242"}}``). A value of the wrong type for
  its column (an amount sent as text, an unparsable ``updated_at``) leaves the
  column null and is kept in ``extra`` under its own name. Null values carry no
  information and are left out; ``extra`` is null when nothing is left.
- Intentionally dropped: ``object`` (always ``payment``/``refund``: the table says
  it) and ``client_secret`` (a secret that lets a browser confirm the payment; it
  must not reach a cache, a CSV or a notebook).
- Refunds have no ``status_raw`` column, so an unknown refund status is kept in
  ``extra`` as ``{"status": ...}``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import babel.numbers
import msgspec
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gwtools import _schema
from gwtools._decode import (
    MalformedResponseError,
    Variant,
    decode_raw_envelope,
    decode_records,
    decode_value,
    snippet,
)

__all__ = [
    "MalformedResponseError",
    "NormalizedBatch",
    "PageInfo",
    "Reject",
    "normalize_bodies",
    "normalize_payments",
    "normalize_refunds",
    "page_info",
]

Resource = Literal["payments", "refunds"]

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.large_string()
#: Raw fields that are dropped on purpose (see the module docstring).
_DROPPED = frozenset({"object", "client_secret"})
#: Unix seconds of 0001-01-01 and 9999-12-31T23:59:59, the range a timestamp column holds.
_MIN_UNIX, _MAX_UNIX = -62135596800, 253402300799


# --------------------------------------------------------------------------- public types


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


@dataclass
class Reject:
    """A record (or body) that could not become a row, and why."""

    resource: str
    reason: str
    record: str  # the raw object as JSON text, or the start of an unusable body


@dataclass
class NormalizedBatch:
    """The canonical rows of some list bodies, their rejects and unknown statuses."""

    frame: pd.DataFrame
    rejects: list[Reject] = field(default_factory=list)
    unknown_statuses: set[str] = field(default_factory=set)


# --------------------------------------------------------------------------- small helpers


def _record_text(obj: Any) -> str:
    """A record as JSON text for a reject (raw records pass through as sent)."""
    if isinstance(obj, msgspec.Raw | bytes):
        return bytes(obj).decode("utf-8", errors="replace")
    try:
        return orjson.dumps(obj, default=str).decode()
    except TypeError:  # e.g. non-string keys
        return repr(obj)


def _json_text(obj: Any) -> str:
    return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS, default=str).decode()


@functools.lru_cache(maxsize=512)
def _exponent(currency: str) -> int | None:
    """Minor-unit exponent of an ISO 4217 code from Babel/CLDR; None when Babel does not know it."""
    if not babel.numbers.is_currency(currency):
        return None
    return int(babel.numbers.get_currency_precision(currency))


def _canonical_status(raw: str) -> str:
    return _schema.PAYMENT_STATUS.get(raw, "unknown")


def _canonical_refund_status(raw: str) -> str:
    return raw if raw in _schema.REFUND_STATUSES and raw != "unknown" else "unknown"


def _map_unique(arr: pa.Array, fn: Callable[[Any], Any], out_type: pa.DataType) -> pa.Array:
    """Apply ``fn`` to each distinct value of ``arr`` (nulls stay null): vectorised lookups."""
    enc = pc.dictionary_encode(arr)
    mapped = pa.array([fn(v) for v in enc.dictionary.to_pylist()], type=out_type)
    return mapped.take(enc.indices)


# --------------------------------------------------------------------------- timestamps


def _ts_from_seconds(seconds: list[Any]) -> tuple[pa.Array, list[int]]:
    """Unix seconds (int/float/None) -> timestamps; indexes out of range are bad."""
    bad = [
        i
        for i, s in enumerate(seconds)
        if s is not None and not (_MIN_UNIX <= s <= _MAX_UNIX and s == s)  # s == s: not NaN
    ]
    if bad:
        seconds = list(seconds)
        for i in bad:
            seconds[i] = None
    micros = [None if s is None else round(s * 1_000_000) for s in seconds]
    return pa.array(micros, pa.int64()).cast(_TS), bad


def _ts_from_strings(values: list[str | None]) -> tuple[pa.Array, list[int]]:
    """ISO 8601 strings (any offset; naive = UTC; Unix seconds as digits) -> timestamps."""
    try:
        # Arrow's parser is fast but needs an offset on every value.
        return pa.array(values, _STR).cast(_TS), []
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    series = pd.Series(values, dtype=object)
    digits = series.str.fullmatch(r"\s*-?\d+(\.\d+)?\s*").fillna(False).astype(bool)
    parsed = pd.to_datetime(series.where(~digits), format="ISO8601", utc=True, errors="coerce")
    if digits.any():
        secs, _ = _ts_from_seconds(
            [float(v) if d and v is not None else None for v, d in zip(values, digits, strict=True)]
        )
        parsed = parsed.where(~digits, pd.Series(secs.to_pandas(), dtype=parsed.dtype))
    arr = pa.array(parsed.astype(_schema.TIMESTAMP), _TS)
    bad = [
        i
        for i, (v, p) in enumerate(zip(values, arr.is_null().to_pylist(), strict=True))
        if v is not None and p
    ]
    return arr, bad


def _to_timestamps(values: list[Any]) -> tuple[pa.Array, list[int]]:
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
            seconds[i] = v
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


# --------------------------------------------------------------------------- tolerant record reading


class _Fields:
    """Takes typed values out of a raw object; what is left becomes ``extra``.

    A value of the wrong type is not taken, so it stays in the remainder (and so in
    ``extra``) while its column is null.
    """

    __slots__ = ("rest",)

    def __init__(self, obj: Mapping[str, Any]) -> None:
        self.rest: dict[str, Any] = dict(obj)

    def _take(self, key: str, ok: Callable[[Any], bool]) -> Any:
        rest = self.rest
        if key not in rest:
            return None
        v = rest[key]
        if v is None or v == "":
            del rest[key]
            return None
        if ok(v):
            del rest[key]
            return v
        return None

    def text(self, key: str) -> str | None:
        return self._take(key, lambda v: isinstance(v, str))

    def integer(self, key: str) -> int | None:
        v = self._take(
            key,
            lambda v: (
                (isinstance(v, int) and not isinstance(v, bool))
                or (isinstance(v, float) and v.is_integer())
            ),
        )
        return None if v is None else int(v)

    def flag(self, key: str) -> bool | None:
        return self._take(key, lambda v: isinstance(v, bool))

    def ts(self, key: str) -> Any:
        """A raw timestamp (parsed later, vectorised); the caller puts it back if unparsable."""
        return self._take(
            key, lambda v: isinstance(v, str | int | float | datetime) and not isinstance(v, bool)
        )

    def obj(self, key: str) -> _Fields | None:
        v = self.rest.get(key)
        if v is None and key in self.rest:
            del self.rest[key]
        return _Fields(v) if isinstance(v, Mapping) else None

    def put_back(self, key: str, sub: _Fields | None) -> None:
        """Replace a partly read sub-object by its unread remainder (or drop it)."""
        if sub is None:
            return
        left = sub.remainder()
        if left:
            self.rest[key] = left
        else:
            del self.rest[key]

    def metadata(self, key: str = "metadata") -> str | None:
        v = self.rest.get(key)
        if v is None or isinstance(v, Mapping):
            self.rest.pop(key, None)
            return _json_text(v) if v else None
        return None

    def remainder(self) -> dict[str, Any]:
        return {k: v for k, v in self.rest.items() if v is not None and k not in _DROPPED}


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


def _variant_of(obj: Mapping[str, Any], envelope: Variant | None) -> Variant:
    if envelope is not None:
        return envelope
    return "B" if "created" in obj else "A"


def _creation(f: _Fields, variant: Variant) -> tuple[str | None, Any]:
    """(field name, raw value) of the creation time; B prefers ``created``, A ``created_at``."""
    order = ("created", "created_at") if variant == "B" else ("created_at", "created")
    for key in order:
        v = f.ts(key)
        if v is not None:
            return key, v
    return None, None


# Column order of the intermediate rows (before vectorised finishing).
_P_ROW = (
    "id", "api_variant", "livemode", "status_raw", "amount", "currency",
    "method_type", "payment_method_id", "fpx_bank_code", "fpx_bank", "card_brand",
    "failure_code", "decline_code", "captured", "captured_at", "refunded", "refunded_amount",
    "description", "customer_id", "receipt_email", "metadata",
    "created_at", "updated_at", "expires_at",
)  # fmt: skip
_R_ROW = (
    "id", "api_variant", "livemode", "payment_id", "status_raw", "reason", "amount",
    "currency", "metadata", "created_at",
)  # fmt: skip
_P_TS = ("created_at", "captured_at", "updated_at", "expires_at")


def _payment_row(
    f: _Fields, variant: Variant, livemode: bool | None
) -> tuple[tuple[Any, ...], dict[str, Any], str | None]:
    """One payment object -> (intermediate row, extra, name of its creation field)."""
    ident = f.text("id")
    live = f.flag("livemode")
    status = f.text("status")
    amount = f.integer("amount")
    currency = f.text("currency")

    # Method: details (flat or nested per method) > expanded method > the payment_method string.
    method_type = pm_id = bank_code = bank = brand = None
    pm_str = f.text("payment_method")
    if pm_str is not None:
        if pm_str.startswith("pm_"):
            pm_id = pm_str
        else:
            method_type = pm_str.lower()
    details = f.obj("payment_method_details")
    pm_obj = f.obj("payment_method")
    for src in (details, pm_obj):
        if src is None:
            continue
        if src is pm_obj:
            pm_id = pm_id or src.text("id")
        kind = src.text("type")
        card = src.obj("card")
        fpx = src.obj("fpx")
        brand = brand or src.text("brand") or (card.text("brand") if card else None)
        bank_code = bank_code or src.text("bank_code") or (fpx.text("bank_code") if fpx else None)
        bank = bank or src.text("bank") or (fpx.text("bank") if fpx else None)
        src.put_back("card", card)
        src.put_back("fpx", fpx)
        inferred = "fpx" if fpx or bank_code else "card" if card or brand else None
        method_type = (kind.lower() if kind else None) or method_type or inferred
    f.put_back("payment_method_details", details)
    f.put_back("payment_method", pm_obj)

    failure_code = f.text("failure_code")
    decline_code = f.text("decline_code")
    for key in ("last_payment_error", "error"):
        err = f.obj(key)
        if err is not None:
            failure_code = failure_code or err.text("code")
            decline_code = decline_code or err.text("decline_code")
            f.put_back(key, err)

    created_key, created = _creation(f, variant)
    row = (
        ident, variant, live if live is not None else livemode, status, amount, currency,
        method_type, pm_id, bank_code, bank, brand, failure_code, decline_code,
        f.flag("captured"), f.ts("captured_at"), f.flag("refunded"), f.integer("refunded_amount"),
        f.text("description"), _id_of(f, "customer"), f.text("receipt_email"), f.metadata(),
        created, f.ts("updated_at"), f.ts("expires_at"),
    )  # fmt: skip
    return row, f.remainder(), created_key


def _refund_row(
    f: _Fields, variant: Variant, livemode: bool | None
) -> tuple[tuple[Any, ...], dict[str, Any], str | None]:
    """One refund object -> (intermediate row, extra, name of its creation field)."""
    ident = f.text("id")
    live = f.flag("livemode")
    payment_id = _id_of(f, "payment_id") or _id_of(f, "payment")
    status = f.text("status")
    if status is not None and _canonical_refund_status(status) == "unknown":
        f.rest["status"] = status  # no status_raw column for refunds: keep it in extra
    created_key, created = _creation(f, variant)
    row = (
        ident, variant, live if live is not None else livemode, payment_id, status,
        f.text("reason"), f.integer("amount"), f.text("currency"), f.metadata(), created,
    )  # fmt: skip
    return row, f.remainder(), created_key


_ROW_READERS = {"payments": (_payment_row, _P_ROW), "refunds": (_refund_row, _R_ROW)}


class _Collector:
    """Accumulates intermediate rows of one resource, and the rejects found on the way."""

    def __init__(self, resource: Resource, livemode: bool | None) -> None:
        self.resource = resource
        self.livemode = livemode
        self.read, self.names = _ROW_READERS[resource]
        self.rows: list[tuple[Any, ...]] = []
        self.extras: list[dict[str, Any]] = []
        self.created_keys: list[str | None] = []
        self.sources: list[Any] = []
        self.rejects: list[Reject] = []

    def reject(self, reason: str, record: Any) -> None:
        text = record if isinstance(record, str) else _record_text(record)
        self.rejects.append(Reject(self.resource, reason, text))

    def add(self, obj: Any, envelope: Variant | None) -> None:
        if not isinstance(obj, Mapping):
            kind = "null" if obj is None else type(obj).__name__
            self.reject(f"record is not a JSON object (got {kind})", obj)
            return
        ident = obj.get("id")
        if not isinstance(ident, str) or not ident:
            why = (
                "record has no `id`"
                if ident is None or ident == ""
                else f"record `id` is not a string (got {ident!r})"
            )
            self.reject(why, obj)
            return
        f = _Fields(obj)
        row, extra, created_key = self.read(f, _variant_of(obj, envelope), self.livemode)
        if created_key is None:
            self.reject(
                "record has no usable creation time (`created_at` ISO 8601 or `created` Unix "
                "seconds)",
                obj,
            )
            return
        self.rows.append(row)
        self.extras.append(extra)
        self.created_keys.append(created_key)
        self.sources.append(obj)

    def finish(self) -> NormalizedBatch:
        return _finish(self)


# --------------------------------------------------------------------------- vectorised finishing


def _finish(c: _Collector) -> NormalizedBatch:
    """Intermediate rows -> canonical frame: typed Arrow columns, one pass per column."""
    resource = c.resource
    if not c.rows:
        return NormalizedBatch(_schema.empty(resource), c.rejects, set())
    raw = dict(zip(c.names, zip(*c.rows, strict=True), strict=True))
    n = len(c.rows)
    extras = c.extras
    keep = [True] * n

    cols: dict[str, pa.Array] = {}
    ts_names = _P_TS if resource == "payments" else ("created_at",)
    for name in ts_names:
        arr, bad = _to_timestamps(list(raw[name]))
        for i in bad:
            if name == "created_at":
                key = c.created_keys[i]
                keep[i] = False
                c.reject(
                    f"creation time `{key}` = {raw[name][i]!r} is not an ISO 8601 timestamp "
                    "or Unix seconds",
                    c.sources[i],
                )
            else:
                extras[i][name] = raw[name][i]  # unusable: null column, raw value kept in extra
        cols[name] = arr

    def strings(name: str) -> pa.Array:
        return pa.array(raw[name], _STR)

    status_raw = strings("status_raw")
    currency = pc.utf8_upper(strings("currency"))
    amount = pa.array(raw["amount"], pa.int64())
    exponent = _map_unique(currency, _exponent, pa.int64())
    scale = pc.power(pa.scalar(10.0), pc.cast(exponent, pa.float64()))
    cols.update(
        id=strings("id"),
        api_variant=strings("api_variant"),
        livemode=pa.array(raw["livemode"], pa.bool_()),
        amount=amount,
        currency=currency,
        amount_major=pc.divide(pc.cast(amount, pa.float64()), scale),
        metadata=strings("metadata"),
    )
    if resource == "payments":
        status = pc.fill_null(_map_unique(status_raw, _canonical_status, _STR), "unknown")
        cols.update(
            status=status,
            status_raw=status_raw,
            outcome=_map_unique(status, _schema.PAYMENT_OUTCOME.__getitem__, _STR),
            captured=pa.array(raw["captured"], pa.bool_()),
            refunded=pa.array(raw["refunded"], pa.bool_()),
            refunded_amount=pa.array(raw["refunded_amount"], pa.int64()),
        )
        for name in (
            "method_type", "payment_method_id", "fpx_bank_code", "fpx_bank", "card_brand",
            "failure_code", "decline_code", "description", "customer_id", "receipt_email",
        ):  # fmt: skip
            cols[name] = strings(name)
        known = _schema.PAYMENT_STATUS
    else:
        status = pc.fill_null(_map_unique(status_raw, _canonical_refund_status, _STR), "unknown")
        cols.update(status=status, payment_id=strings("payment_id"), reason=strings("reason"))
        known = {s: s for s in _schema.REFUND_STATUSES if s != "unknown"}
    unknown = {s for s in pc.unique(status_raw).to_pylist() if s is not None and s not in known}

    cols["extra"] = pa.array([_json_text(e) if e else None for e in extras], _STR)
    spec = _schema.columns(resource)
    table = pa.table({name: cols[name] for name in spec})
    if not all(keep):
        table = table.filter(pa.array(keep))
    return NormalizedBatch(_to_pandas(table, resource), c.rejects, unknown)


def _to_pandas(table: pa.Table, resource: Resource) -> pd.DataFrame:
    mapping = {
        pa.large_string(): _schema.STRING,
        pa.string(): _schema.STRING,
        pa.int64(): _schema.INT,
        pa.bool_(): _schema.BOOL,
    }
    frame = table.to_pandas(types_mapper=mapping.get)
    # Arrow float64 nulls arrive as NaN already; timestamps keep unit and zone.
    return frame


# --------------------------------------------------------------------------- public functions


def page_info(body: bytes) -> PageInfo:
    """Read what paging needs from one list response body, without normalising it.

    Raises :class:`MalformedResponseError` (a ``ValueError``) when the body is not
    JSON or not a list envelope of either variant::

        info = page_info(response.content)
        if info.variant == "B" and info.has_more:
            next_params = {"starting_after": info.last_id}
    """
    variant, env = decode_raw_envelope(body)
    records = env.data or []

    def ints(v: Any) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def probe(raw: msgspec.Raw) -> tuple[str | None, datetime | None]:
        try:
            obj = decode_value(raw)
        except msgspec.DecodeError:
            return None, None
        if not isinstance(obj, dict):
            return None, None
        ident = obj.get("id") if isinstance(obj.get("id"), str) and obj.get("id") else None
        f = _Fields(obj)
        _, created = _creation(f, _variant_of(obj, variant))
        if created is None:
            return ident, None
        arr, bad = _to_timestamps([created])
        return ident, None if bad else arr[0].as_py()

    def first_of(indexes: Iterable[int]) -> tuple[str | None, datetime | None]:
        ident: str | None = None
        created: datetime | None = None
        for i in indexes:
            got = probe(records[i])
            ident = ident or got[0]
            created = created or got[1]
            if ident is not None and created is not None:
                break
        return ident, created

    first_id, first_created = first_of(range(len(records)))
    last_id, last_created = first_of(range(len(records) - 1, -1, -1))
    meta = env.meta
    has_more = env.has_more if isinstance(env.has_more, bool) else None
    return PageInfo(
        variant=variant,
        count=len(records),
        has_more=has_more,
        total=ints(meta.total) if meta else None,
        total_pages=ints(meta.totalPages) if meta else None,
        page=ints(meta.page) if meta else None,
        limit=ints(meta.limit) if meta else None,
        first_id=first_id,
        last_id=last_id,
        first_created=first_created,
        last_created=last_created,
    )


def normalize_bodies(
    resource: Resource, bodies: Sequence[bytes], *, livemode: bool | None = None
) -> NormalizedBatch:
    """List response bodies, as received, of either variant -> one canonical frame.

    Never raises for bad data: an unusable body or record becomes a :class:`Reject`
    with its reason; unknown statuses map to ``unknown`` and are listed in
    ``unknown_statuses`` for the caller to warn about once::

        batch = normalize_bodies("payments", [r.content for r in responses], livemode=False)
        batch.frame, batch.rejects, batch.unknown_statuses
    """
    _schema.columns(resource)  # a clear error for a bad resource name
    collector = _Collector(resource, livemode)
    for body in bodies:
        try:
            variant, records = decode_records(body)
        except MalformedResponseError as exc:
            collector.reject(exc.why, snippet(body, 1000))
            continue
        for obj in records:
            collector.add(obj, variant)
    return collector.finish()


def _normalize_objects(
    resource: Resource,
    records: Iterable[Mapping[str, Any]],
    livemode: bool | None,
    on_reject: Literal["raise", "warn"],
) -> pd.DataFrame:
    if on_reject not in ("raise", "warn"):
        raise ValueError(f"on_reject must be 'raise' or 'warn', not {on_reject!r}")
    if isinstance(records, Mapping | str | bytes):
        raise TypeError(
            f"normalize_{resource} takes an iterable of API objects (e.g. a list of dicts), "
            f"not a single {type(records).__name__}; for list response bodies use normalize_bodies"
        )
    collector = _Collector(resource, livemode)
    for obj in records:
        collector.add(obj, None)
    batch = collector.finish()
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
            raise ValueError(
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
