"""The engine layer: one analysis, three kinds of table, written once against Narwhals.

Every analysis takes a *table*: a pandas DataFrame, a lazy DuckDB table
(:func:`gwtools.scan_cache`, :meth:`gwtools.Gateway.scan`), a PySpark DataFrame with the canonical
columns, or a Narwhals frame over any of them. It runs its filters, group-bys and joins where
the data lives and returns a small pandas DataFrame, the same for the same data whatever the
input. How an analysis function is written against this layer::

    from gwtools.analysis import _engine as E

    def failed_by_brand(payments: E.Table) -> pd.DataFrame:
        lf = E.lazy(payments)                           # nw.LazyFrame over the native table
        lf = lf.with_columns(failed=E.flag(nw.col("outcome") == "failed"))
        out = lf.group_by("card_brand").agg(nw.len(), nw.col("failed").sum())
        small = E.to_pandas(out)                        # runs in the engine; canonical dtypes
        return small.sort_values("card_brand")          # finish the small frame in pandas

Rules (each one is a difference between pandas, DuckDB and Spark that bit us):

- Only Narwhals expressions, never SQL text. Aggregate in the engine, then finish the
  *aggregated* frame in pandas (Wilson intervals, reindexing, Babel formatting, ordering).
- Comparisons with a null are null in SQL engines and False in pandas: wrap predicates in
  :func:`truthy` (or :func:`flag` for a 0/1 column to sum). Aggregate flags with a plain
  ``nw.col(...).sum()`` after ``with_columns``: pandas runs simple aggregations fast and warns
  about complex ones.
- Narwhals cannot convert time zones on DuckDB or Spark, so local time is built here, as
  integers: :func:`local_us` adds the zone's offsets over the data's range (exact, DST
  included) to the instant's epoch microseconds, :func:`with_period` floors that to a local
  hour, day, week (Monday) or month; :func:`finish_period` turns the collected values into
  aware local timestamps, exactly as ``gwtools.analysis.bucket`` does in pandas. (On DuckDB
  anything that goes through a time zone, a cast to naive time, ``date_trunc`` of an aware
  time, an interval between two instants, runs ICU's calendar per row: 5-25x the cost.)
- Durations: :func:`seconds_between` (Spark has no ``total_seconds``; the frame picks the
  cheapest exact form: epoch microseconds on DuckDB, calendar arithmetic on Spark).
- Two tables in one analysis (payments and refunds) must live in the same engine:
  :func:`lazy_pair` checks, and says what to do.
- :func:`to_pandas` collects and restores the canonical dtypes (UTC timestamps, pyarrow
  strings, ``Int64``, ``boolean``); Spark hands back naive times, DuckDB its own dtypes.

A Spark session must use UTC (``spark.sql.session.timeZone``), as the scan's DuckDB
connection does, so its truncation and collected times are UTC.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import functools
import json
import re
import zoneinfo
from collections.abc import Callable, Sequence
from typing import Any, Final, ParamSpec, TypeVar, cast

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools import _schema
from gwtools._errors import ConfigurationError, GatewayError
from gwtools._memory import ResultMeter

P = ParamSpec("P")
R = TypeVar("R")

#: Anything an analysis accepts: pandas DataFrame, DuckDB relation, PySpark DataFrame, or a
#: Narwhals DataFrame/LazyFrame over one of them.
Table = Any

#: Canonical column -> pandas dtype, for both resources (shared names agree).
_CANONICAL: dict[str, Any] = {**_schema.REFUND_COLUMNS, **_schema.PAYMENT_COLUMNS}

#: Beyond this many offset changes (in 1970-2100), local time is built for the data's range only.
_MAX_PIECES = 8


def lazy(table: Table) -> nw.LazyFrame[Any]:
    """``table`` as a Narwhals LazyFrame on its own engine (pandas stays pandas)."""
    from gwtools.analysis._time import refuse_naive_columns

    if isinstance(table, nw.DataFrame | nw.LazyFrame) and _in_memory(table.to_native()):
        # A pandas frame in a Narwhals one is read as the bare frame is (its categories, id
        # index and pyarrow dtypes made plain); Narwhals' wrapper is no copy.
        table = table.to_native()
    if _in_memory(table) and not isinstance(table, pd.DataFrame):
        # A pyarrow Table (pq.read_table, a DuckDB result's .arrow()) is analysed as pandas,
        # the in-memory engine the analyses are proven on, not on Narwhals' pyarrow backend
        # (half of the analyses failed there). Arrow-backed columns cost no copy; the
        # canonical ones take their canonical dtypes below.
        table = table.to_pandas(types_mapper=pd.ArrowDtype)
    if isinstance(table, nw.LazyFrame):
        # A Narwhals frame over Spark reads its times in the session's zone all the same.
        _check_spark(table)
        refuse_naive_columns(table)
        return table
    if isinstance(table, nw.DataFrame):
        out = table.lazy()
        refuse_naive_columns(out)
        return out
    if isinstance(table, pd.DataFrame):
        table = _plain_pandas(table)
    try:
        frame = nw.from_native(table)
    except TypeError:
        raise ConfigurationError(
            f"cannot analyse a {type(table).__module__}.{type(table).__name__}: pass a pandas "
            "DataFrame, a lazy table from gwtools.scan_cache()/Gateway.scan(), or a PySpark "
            "DataFrame with the canonical columns"
        ) from None
    if isinstance(frame, nw.DataFrame):
        out = frame.lazy()
    else:
        _check_spark(frame)
        out = cast(nw.LazyFrame[Any], frame)
    refuse_naive_columns(out)
    return out


def _in_memory(native: Any) -> bool:
    """Whether ``native`` is a table held in this process: a pandas DataFrame or a pyarrow
    Table (checked by module name, so that no pyarrow import is paid for other inputs)."""
    if isinstance(native, pd.DataFrame):
        return True
    kind = type(native)
    return kind.__module__ == "pyarrow.lib" and kind.__name__ == "Table"


def _plain_pandas(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without what Narwhals' pandas backend trips on, as a new frame (the user's is
    never changed; unchanged columns are shared, not copied).

    A notebook's frame may hold category columns (a group-by's ``max`` and a ``fill_null``
    fail on them), an index made from a column (``set_index("id", drop=False)``: every sort
    by that column is ambiguous) or pyarrow-backed columns (``dtype_backend="pyarrow"``: a
    time difference overflows). Categories become their values' dtype, such index levels lose
    their name, and canonical pyarrow columns take their canonical dtype (but naive times,
    which :func:`lazy` refuses on every engine).
    """
    if frame.columns.has_duplicates:
        return frame  # Narwhals refuses it, naming the columns
    columns = set(frame.columns)
    changed: dict[Any, pd.Series] = {}
    for name, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.CategoricalDtype):
            changed[name] = frame[name].astype(dtype.categories.dtype)
        elif isinstance(dtype, pd.ArrowDtype) and name in _CANONICAL and not _naive(dtype):
            # Naive times are left as they are, for lazy() to refuse: the cast would read
            # them as UTC unasked.
            with contextlib.suppress(TypeError, ValueError):
                changed[name] = frame[name].astype(_CANONICAL[name])
    named = [n is not None and n in columns for n in frame.index.names]
    if not changed and not any(named):
        return frame
    out = frame.copy(deep=False)  # copy-on-write: setting a column leaves the user's alone
    for name, col in changed.items():
        out[name] = col
    if any(named):
        out.index = out.index.set_names(
            [None if clash else n for n, clash in zip(frame.index.names, named, strict=True)]
        )
    return out


def _naive(dtype: pd.ArrowDtype) -> bool:
    """Whether a pyarrow-backed dtype holds times without a zone."""
    import pyarrow as pa

    arrow = dtype.pyarrow_dtype
    return bool(pa.types.is_timestamp(arrow) and arrow.tz is None)


def user_index(out: pd.DataFrame, table: Any) -> pd.DataFrame:
    """``out`` (rows of pandas ``table``) with the names of ``table``'s index levels, which
    :func:`lazy` may have dropped."""
    if isinstance(table, pd.DataFrame) and out.index.nlevels == table.index.nlevels:
        out.index = out.index.set_names(table.index.names)
    return out


def _check_spark(lf: nw.LazyFrame[Any]) -> None:
    if lf.implementation not in (nw.Implementation.PYSPARK, nw.Implementation.PYSPARK_CONNECT):
        return
    native = lf.to_native()
    zone = native.sparkSession.conf.get("spark.sql.session.timeZone")
    if not _is_utc(zone):
        raise ConfigurationError(
            f"the Spark session's time zone is {zone!r}: gwtools reads timestamps as UTC; set "
            "spark.conf.set('spark.sql.session.timeZone', 'UTC') (or builder.config(...)), or "
            "read the cache with gwtools.open_source('spark', spark_path=...), which reads it "
            "in UTC and leaves your session's zone alone"
        )


#: A fixed offset of zero as Spark takes it: "Z", "+00:00", "UTC+0", "GMT+00:00"...
_ZERO_OFFSET: Final = re.compile(r"(?:Z|(?:UTC|GMT|UT)?[+-]?0{1,2}(?::?00)?)")


@functools.lru_cache(maxsize=16)
def _is_utc(zone: str) -> bool:
    """Whether a Spark session time zone is UTC under any of its names (Etc/GMT, Zulu,
    Universal, UTC+0...): an offset of zero at every time a canonical table can hold."""
    if zone in ("UTC", "GMT") or _ZERO_OFFSET.fullmatch(zone):
        return True
    try:
        info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return False
    # Years 1 to 9999: a zone on GMT only since some date (Africa/Abidjan, 1912) is not UTC.
    moments = [dt.datetime(y, m, 1) for y in (1, 1900, 1970, 2026, 9999) for m in (1, 7)]
    return all(info.utcoffset(moment) == dt.timedelta(0) for moment in moments)


def lazy_pair(a: Table, b: Table) -> tuple[nw.LazyFrame[Any], nw.LazyFrame[Any]]:
    """Two tables as LazyFrames on one engine, for analyses that join them."""
    la, lb = lazy(a), lazy(b)
    if la.implementation is not lb.implementation:
        raise ConfigurationError(
            f"payments and refunds are on different engines ({la.implementation.name.lower()} "
            f"and {lb.implementation.name.lower()}): pass both the same kind, e.g. both from "
            "gwtools.scan_cache() or both from spark.read.parquet()"
        )
    return la, lb


def native_like(lf: nw.LazyFrame[Any], table: Table) -> Any:
    """``lf`` in the same kind as ``table`` (for functions that filter: a lazy table stays lazy)."""
    if isinstance(table, nw.DataFrame | nw.LazyFrame) and _in_memory(table.to_native()):
        # Read as its bare frame (lazy()), given back as that frame's rows would be.
        given = nw.from_native(native_like(lf, table.to_native()), eager_only=True)
        return given.lazy() if isinstance(table, nw.LazyFrame) else given
    if isinstance(table, nw.LazyFrame):
        return lf
    if isinstance(table, nw.DataFrame):
        return lf.collect()
    if lf.implementation.is_pandas_like():
        rows = lf.collect().to_native()
        if isinstance(table, pd.DataFrame) or not _in_memory(table):
            return _as_given(rows, table)
        # A pyarrow Table's rows, analysed as pandas, go back to its own schema.
        return type(table).from_pandas(rows, schema=table.schema, preserve_index=False)
    return lf.to_native()


def _as_given(out: pd.DataFrame, table: Any) -> pd.DataFrame:
    """Rows of pandas ``table`` (as :func:`lazy` read them) with ``table``'s own dtypes and
    index names again: a filter hands back the user's rows as they were."""
    if not isinstance(table, pd.DataFrame):
        return out
    given = table.dtypes
    for name in out.columns:
        if name in given.index and out[name].dtype != given[name]:
            out[name] = out[name].astype(given[name])
    return user_index(out, table)


def to_pandas(frame: Any, *, keep_index: bool = False) -> pd.DataFrame:
    """Collect a (small, aggregated) result to pandas with the canonical dtypes.

    Timestamps become ``datetime64[us, UTC]``, text the pyarrow string dtype, canonical
    columns their canonical dtype (``Int64`` amounts, ``boolean`` flags). ``keep_index``
    keeps a pandas table's own row labels (a filter of a pandas table keeps its index).

    Example: ``to_pandas(between(payments, "2026-09-01", "2026-09-07"))``: a lazy or Spark
    result as a pandas table.
    """
    if isinstance(frame, nw.DataFrame):
        out = frame.to_pandas()
    else:
        out = _collect(frame if isinstance(frame, nw.LazyFrame) else lazy(frame))
    out = out if keep_index else out.reset_index(drop=True)
    for name in out.columns:
        col = out[name]
        if name in _CANONICAL and col.dtype == object and not col.notna().any():
            # Nothing to infer from (an empty or all-null Spark result comes back as object):
            # the canonical dtype, as the other engines give.
            out[name] = col.astype(_CANONICAL[name])
            continue
        if _holds(col, decimal.Decimal):
            # Spark's decimals (a warehouse's DECIMAL(38,0) amounts) come as Decimal objects:
            # float64, as DuckDB's decimals come (from_arrow); a canonical amount then Int64.
            out[name] = col.astype("float64")
        elif isinstance(col.dtype, pd.DatetimeTZDtype):
            out[name] = col.dt.tz_convert("UTC").astype(_schema.TIMESTAMP)
        elif pd.api.types.is_datetime64_dtype(col.dtype):
            out[name] = col.astype("datetime64[us]").dt.tz_localize("UTC")
        elif pd.api.types.is_string_dtype(col.dtype) and not _is_bool_object(col):
            out[name] = col.astype(_schema.STRING)
        if _fits(out[name], _CANONICAL.get(name)):
            out[name] = out[name].astype(_CANONICAL[name])
    return out


def _collect(lf: nw.LazyFrame[Any]) -> pd.DataFrame:
    """``lf``'s rows as pandas. DuckDB's and Spark's through Arrow: DuckDB's ``.df()`` makes a
    Python object of every text value, which for row-level results (``orders`` of 1M payments)
    took half again the memory and 1.6x the time. Arrow types are mapped to the dtypes
    ``.df()`` gives."""
    if _is_spark(lf):
        from gwtools._pyspark import quiet_pyspark

        # Through Arrow as Spark gives it: its toPandas casts every time to nanoseconds,
        # which fails on a time past 2262 (a gateway's "never", expires_at 9999-12-31).
        with quiet_pyspark():
            return from_arrow(lf.collect("pyarrow").to_native())
    if lf.implementation is not nw.Implementation.DUCKDB:
        return cast(pd.DataFrame, lf.collect("pandas").to_native())
    from gwtools.cache._scan import metered_arrow

    # Batch by batch, so that a row-level result too large for this machine stops with a
    # clear error (streaming measured no slower: classify_declines of 10M, 3.8-4.0 s either way).
    meter = ResultMeter("A lazy table's rows collected to pandas", _TOO_LARGE_ADVICE)
    return from_arrow(metered_arrow(lf.to_native(), meter))


_TOO_LARGE_ADVICE: Final = (
    "Ask for fewer rows: narrow the table first (analysis.between(table, start, end), or a "
    "filter on it), or use an analysis that aggregates in the engine (decline_rate, "
    "acceptance, refund_rate, ...), which returns one row per group."
)


@functools.cache
def _nullable() -> dict[Any, Any]:
    """Arrow integer and boolean types -> pandas nullable dtypes."""
    import pyarrow as pa

    out: dict[Any, Any] = {pa.bool_(): pd.BooleanDtype()}
    for bits in (8, 16, 32, 64):
        out[getattr(pa, f"int{bits}")()] = pd.api.types.pandas_dtype(f"Int{bits}")
        out[getattr(pa, f"uint{bits}")()] = pd.api.types.pandas_dtype(f"UInt{bits}")
    return out


def from_arrow(table: Any) -> pd.DataFrame:
    """An Arrow table as pandas with DuckDB's ``.df()`` dtypes: integers and flags holding a
    null nullable (``Int64``, ``boolean``; Arrow would give float64 and object), decimals
    (DuckDB's sums of integers) float64, dates naive datetime64."""
    import pyarrow as pa

    fields = []
    for field in table.schema:
        kind = field.type
        if pa.types.is_decimal(kind):
            kind = pa.float64()
        elif pa.types.is_date(kind):
            kind = pa.timestamp("us")
        fields.append(field.with_type(kind))
    schema = pa.schema(fields)
    if schema != table.schema:
        table = table.cast(schema)
    out = table.to_pandas()
    for i, column in enumerate(table.columns):
        if column.null_count and column.type in _nullable():
            out.isetitem(i, column.to_pandas(types_mapper=_nullable().get))
    return cast(pd.DataFrame, out)


def _fits(col: pd.Series, canonical: Any) -> bool:
    """Whether ``col`` holds the kind of values of its canonical namesake (a count named like
    a flag keeps its integers)."""
    if canonical is None or canonical == _schema.FLOAT:
        return False
    if canonical == _schema.BOOL:
        return pd.api.types.is_bool_dtype(col.dtype) or _is_bool_object(col)
    if canonical == _schema.INT:
        return pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(
            col.dtype
        )
    return True


def _is_bool_object(col: pd.Series) -> bool:
    return _holds(col, bool | np.bool_)


def _holds(col: pd.Series, kind: Any) -> bool:
    """Whether ``col`` is an object column of ``kind`` values (and nulls), at least one."""
    if col.dtype != object:
        return False
    values = col.dropna()
    return len(values) > 0 and all(isinstance(v, kind) for v in values)


def truthy(expr: nw.Expr) -> nw.Expr:
    """A predicate that is False (not null) where its input is null, as in pandas."""
    return expr.fill_null(False)


def flag(expr: nw.Expr) -> nw.Expr:
    """A predicate as a 0/1 ``Int64`` column, to sum in a group-by."""
    return truthy(expr).cast(nw.Int64)


def _whole_seconds(expr: nw.Expr) -> nw.Expr:
    """Whole seconds since 1970-01-01 of a UTC timestamp column (``Int64``), on every engine.

    Narwhals has no portable epoch or ``total_seconds`` (Spark lacks both); the calendar's
    arithmetic is portable: days before the year (Gregorian leap rules), the day of the year.
    """
    y = expr.dt.year().cast(nw.Int64)
    days = (
        (y - 1970) * 365
        + (y - 1969) // 4
        - (y - 1901) // 100
        + (y - 1601) // 400
        + expr.dt.ordinal_day().cast(nw.Int64)
        - 1
    )
    return (
        days * 86_400
        + expr.dt.hour().cast(nw.Int64) * 3_600
        + expr.dt.minute().cast(nw.Int64) * 60
        + expr.dt.second().cast(nw.Int64)
    )


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _is_spark(lf: nw.LazyFrame[Any]) -> bool:
    return lf.implementation in (nw.Implementation.PYSPARK, nw.Implementation.PYSPARK_CONNECT)


def epoch_us(lf: nw.LazyFrame[Any], expr: nw.Expr) -> nw.Expr:
    """Microseconds since 1970-01-01 UTC of a UTC timestamp expression (null stays null).

    The cheap form of every engine: DuckDB's ``epoch_us`` reads a TIMESTAMPTZ as the integer
    it stores (anything that goes through the time zone, a cast to naive time, an interval
    between two instants, ``date_trunc`` on an aware time, runs ICU's calendar per row and
    cost 5-25x more at 10M rows); pandas subtracts the epoch; Spark, which has no duration
    to take microseconds of, uses the calendar's arithmetic (exact).
    """
    impl = lf.implementation
    if impl is nw.Implementation.DUCKDB:
        # Narwhals maps total_microseconds to DuckDB's epoch_us, which takes the instant
        # itself as well as a duration: no interval is built.
        return expr.dt.total_microseconds()
    if not _is_spark(lf):
        return (expr - _EPOCH).dt.total_microseconds()
    # Integer casts fail on pandas' NaT (not here, but the form stays portable): compute on
    # filled values, then put the nulls back.
    filled = expr.fill_null(_EPOCH)
    micros = _whole_seconds(filled) * 1_000_000 + filled.dt.microsecond().cast(nw.Int64)
    return nw.when(~expr.is_null()).then(micros)


def seconds_between(lf: nw.LazyFrame[Any], end: nw.Expr, start: nw.Expr) -> nw.Expr:
    """``end - start`` in seconds (float), exact to the microsecond on every engine; null
    where either is null. ``lf`` is the frame the expressions run on (it picks the form)."""
    if lf.implementation.is_pandas_like():
        return (end - start).dt.total_microseconds().cast(nw.Float64) / 1e6
    # DuckDB: the difference of the two instants' epoch microseconds (an interval between two
    # TIMESTAMPTZ goes through the calendar: ~12x the CPU). Spark: the same, by arithmetic.
    return (epoch_us(lf, end) - epoch_us(lf, start)).cast(nw.Float64) / 1e6


# -- local time ----------------------------------------------------------------------------
Piece = tuple[dt.datetime | None, int]  # (first UTC instant, naive; offset in seconds)


@functools.lru_cache(maxsize=64)
def zone_pieces(tz: str) -> tuple[Piece, ...]:
    """The zone's UTC offsets from 1970 to 2100 as (start, seconds) pieces, from tzdata."""
    zone = zoneinfo.ZoneInfo(tz)
    if tz in ("UTC", "Etc/UTC"):
        return ((None, 0),)
    days = pd.date_range("1970-01-01", "2100-01-01", freq="D", tz="UTC")
    shifted = days.tz_convert(tz).tz_localize(None) - days.tz_localize(None)
    offsets = np.asarray(shifted.total_seconds(), dtype=np.int64)
    pieces: list[Piece] = [(None, int(offsets[0]))]
    start = dt.datetime(1970, 1, 1)

    def offset(t: dt.datetime) -> int:
        delta = t.replace(tzinfo=dt.UTC).astimezone(zone).utcoffset()
        return int(delta.total_seconds()) if delta is not None else 0

    for i in np.flatnonzero(np.diff(offsets)).tolist():
        # Only the days around a change become datetimes (all 47,000 cost a start-up).
        lo, hi = start + dt.timedelta(days=i), start + dt.timedelta(days=i + 1)
        while hi - lo > dt.timedelta(seconds=1):  # the first second of the new offset
            mid = (lo + (hi - lo) / 2).replace(microsecond=0)
            if offset(mid) == offsets[i]:
                lo = mid
            else:
                hi = mid
        pieces.append((hi, offset(hi)))
    return tuple(pieces)


def _pieces_for(lf: nw.LazyFrame[Any], column: str, tz: str) -> list[Piece]:
    pieces = list(zone_pieces(tz))
    if len(pieces) <= _MAX_PIECES:
        return pieces
    # A zone with daylight saving: only the offsets over the data's range (one small query).
    bounds = to_pandas(lf.select(lo=nw.col(column).min(), hi=nw.col(column).max()))
    lo, hi = bounds["lo"].iloc[0], bounds["hi"].iloc[0]
    if pd.isna(lo):
        return pieces[:1]
    lo_n = lo.tz_convert("UTC").tz_localize(None).to_pydatetime()
    hi_n = hi.tz_convert("UTC").tz_localize(None).to_pydatetime()
    kept = [
        p
        for k, p in enumerate(pieces)
        if (k + 1 == len(pieces) or _after(pieces[k + 1][0], lo_n))
        and (p[0] is None or p[0] <= hi_n)
    ]
    return [(None, kept[0][1]), *kept[1:]]


def _after(start: dt.datetime | None, t: dt.datetime) -> bool:
    return start is None or start > t


_US_SECOND: Final = 1_000_000
_US_HOUR: Final = 3_600 * _US_SECOND
_US_DAY: Final = 24 * _US_HOUR


def local_us(lf: nw.LazyFrame[Any], column: str, tz: str, name: str) -> nw.LazyFrame[Any]:
    """``lf`` with ``name``: the local wall-clock time in ``tz`` of UTC column ``column``, as
    microseconds since 1970-01-01 00:00 wall time (null where the column is null).

    The zone's offset over the data's range (exact, daylight saving included) is added to
    the instant's epoch microseconds: integer arithmetic only, the cheapest form on every
    engine (:func:`epoch_us`). :func:`with_period` buckets it; :func:`finish_period` and
    :func:`wall_time` turn collected values back into times.
    """
    us = epoch_us(lf, nw.col(column))
    pieces = _pieces_for(lf, column, tz)
    if len(pieces) == 1:
        return lf.with_columns((us + pieces[0][1] * _US_SECOND).alias(name))
    # Several offsets: the instant once, as a column (on Spark its formula is large), then a
    # balanced tree of comparisons picks its offset. A chain of one `when` per change nested
    # as deep as the changes are many: a payment dated decades ahead (some 150 changes in New
    # York) ran Spark's driver out of memory, and 1970 to 2099 passed Python's recursion limit.
    lf = lf.with_columns(us.alias(name))
    offset = _offset_us(nw.col(name), pieces)
    return lf.with_columns((nw.col(name) + offset).alias(name))


def _offset_us(us: nw.Expr, pieces: Sequence[Piece]) -> nw.Expr:
    """The UTC offset (microseconds) of the piece holding each ``us`` (epoch microseconds):
    pieces sorted by start, the first from any time; a tree of depth log2(len(pieces))."""
    if len(pieces) == 1:
        return nw.lit(pieces[0][1] * _US_SECOND)
    middle = len(pieces) // 2
    start = pieces[middle][0]
    assert start is not None  # only the first piece starts at any time
    split = (start - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    early, late = _offset_us(us, pieces[:middle]), _offset_us(us, pieces[middle:])
    return nw.when(us < split).then(early).otherwise(late)


def _floor_div(expr: nw.Expr, divisor: int) -> nw.Expr:
    """``floor(expr / divisor)`` as a float holding a whole number.

    True division and ``floor``: one cheap operation on every engine (Narwhals' ``//`` is a
    CASE over types and signs on DuckDB). Exact here: dividends are whole numbers below 2**53
    (microseconds up to year 2255), so a quotient just under a whole number stays under it.
    """
    return (expr / divisor).floor()


#: Bucket units of :func:`with_period` besides ``freq`` names: the local hour.
_HOUR: Final = "h"


def with_period(
    lf: nw.LazyFrame[Any], column: str, tz: str, freq: str, name: str = "period"
) -> nw.LazyFrame[Any]:
    """``lf`` with ``name``: the start of the local hour (``freq="h"``), day, week (Monday) or
    month of each row's ``column`` in ``tz``, as local wall-clock microseconds since 1970 (a
    number holding a whole value; group by it, then :func:`finish_period` or
    :func:`wall_time` the collected values).

    Built in steps, one column each: a step reads the previous one's column rather than
    repeating its expression (Spark's division repeats its operands, so a nested formula
    grows fourfold per level).
    """
    from gwtools.analysis._time import period_code

    tmp = [f"_{name}_{k}" for k in ("local", "day", "doe", "yoe", "doy")]
    local, day, doe, yoe, doy = (nw.col(t) for t in tmp)
    lf = local_us(lf, column, tz, tmp[0])
    if freq == _HOUR:
        return lf.with_columns((_floor_div(local, _US_HOUR) * _US_HOUR).alias(name)).drop(tmp[0])
    code = period_code(freq)
    lf = lf.with_columns(_floor_div(local, _US_DAY).alias(tmp[1]))  # local days since 1970
    if code == "D":
        first = day
    elif code == "W-SUN":
        # 1970-01-01 was a Thursday: day + 3 counts from Monday 1969-12-29.
        first = _floor_div(day + 3, 7) * 7 - 3
    else:
        # The first of the month: Howard Hinnant's civil_from_days (proleptic Gregorian, any
        # date): years counted from 1 March so the leap day ends the year, 400-year eras.
        z = day + 719_468  # days since 0000-03-01
        lf = lf.with_columns((z - _floor_div(z, 146_097) * 146_097).alias(tmp[2]))  # 0..146096
        years = doe - _floor_div(doe, 1_460) + _floor_div(doe, 36_524) - _floor_div(doe, 146_096)
        lf = lf.with_columns(_floor_div(years, 365).alias(tmp[3]))  # year of the era
        since_march = doe - (yoe * 365 + _floor_div(yoe, 4) - _floor_div(yoe, 100))
        lf = lf.with_columns(since_march.alias(tmp[4]))  # day of the year from 1 March
        month = _floor_div(doy * 5 + 2, 153)  # 0 = March
        first = day - doy + _floor_div(month * 153 + 2, 5)
    made = tmp[:2] if code in ("D", "W-SUN") else tmp
    return lf.with_columns((first * _US_DAY).alias(name)).drop(*made)


def wall_time(values: pd.Series) -> pd.Series:
    """Collected :func:`with_period` (or :func:`local_us`) values -> naive wall-clock times
    (``datetime64[us]``, NaT for null)."""
    numbers = pd.to_numeric(pd.Series(values), errors="coerce")
    missing = numbers.isna().to_numpy()
    # Whole microseconds as integers: exact (a float's way through nanoseconds is not).
    micros = numbers.fillna(0).round().astype("int64").to_numpy()
    out = pd.Series(micros.astype("datetime64[us]"), index=values.index, name=values.name)
    out[missing] = pd.NaT
    return out


def finish_period(values: pd.Series, tz: str) -> pd.Series:
    """Collected :func:`with_period` values -> aware timestamps in ``tz`` (as ``bucket``
    gives)."""
    naive = wall_time(values)
    # A local midnight can be ambiguous or missing on a DST change: take the first.
    ambiguous = np.ones(len(naive), dtype=bool)
    out: pd.Series = naive.dt.tz_localize(tz, ambiguous=ambiguous, nonexistent="shift_forward")
    return out


def when_map(expr: nw.Expr, mapping: dict[Any, Any], default: Any = None) -> nw.Expr:
    """``mapping[expr]`` as an expression (``default`` elsewhere), for small fixed maps."""
    items = list(mapping.items())
    if not items:
        return nw.lit(default)
    chain: Any = nw.when(truthy(expr == items[0][0])).then(nw.lit(items[0][1]))
    for key, value in items[1:]:
        chain = chain.when(truthy(expr == key)).then(nw.lit(value))
    result: nw.Expr = chain.otherwise(nw.lit(default)) if default is not None else chain
    return result


def distinct(lf: nw.LazyFrame[Any], expr: nw.Expr) -> list[Any]:
    """The distinct non-null values of ``expr`` (a small query: use on low-cardinality columns)."""
    values = to_pandas(lf.select(expr.alias("v")).unique())["v"]
    return sorted(v for v in values.tolist() if not pd.isna(v))


def columns_of(lf: nw.LazyFrame[Any]) -> list[str]:
    """Column names (no data read; nor the types, which on DuckDB cost a settings query)."""
    return list(lf.columns)


def require(
    lf: nw.LazyFrame[Any], names: Sequence[str], what: str = "the table", *, param: str = "by"
) -> None:
    """Raise a clear error when ``names`` (the keys of ``param``) are not columns of ``lf``."""
    present = columns_of(lf)
    missing = [n for n in names if n not in present]
    if missing:
        raise ConfigurationError(
            f"cannot group by {missing}: not a column of {what}{did_you_mean(missing[0], present)}",
            param=param,
        )


def did_you_mean(value: object, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the choice closest to ``value``, or ``""``."""
    import difflib

    if not isinstance(value, str):
        return ""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.6)
    if not close:
        folded = {c.lower(): c for c in choices}
        close = [folded[value.lower()]] if value.lower() in folded else []
    return f"; did you mean {close[0]!r}?" if close else ""


def whole_number(value: Any, name: str, *, minimum: int = 1) -> int:
    """``value`` when it is a whole number of at least ``minimum`` (not a bool, a float or
    text), else a :class:`ConfigurationError` naming ``name`` (an analysis's count setting:
    ``top``, ``min_attempts``)."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigurationError(
            f"{name} must be a whole number of at least {minimum}, got {value!r}", param=name
        )
    return int(value)


def json_field(
    lf: nw.LazyFrame[Any], column: str, key: str, alias: str, *, where: str | None = None
) -> nw.LazyFrame[Any]:
    """``lf`` with ``alias``: top-level ``key`` of the JSON text in ``column``, as text.

    Narwhals has no JSON expression, so this dispatches on the engine to its own JSON reader
    (no SQL text): DuckDB's ``json_extract_string``, Spark's ``get_json_object``, orjson on
    pandas. A string value comes as is, a number or object as its compact JSON text; missing,
    null, empty, or text that is not a JSON object gives null. Spark's reader is held to JSON
    (RFC 8259), as orjson is (it also takes single quotes, raw control characters and text after
    the object); DuckDB's still takes trailing commas, NaN and Infinity, as holding it to JSON
    cost a third of ``acceptance``'s time (docs/decisions.md). ``where``: a boolean column;
    only its true rows are parsed (the others get null), as parsing JSON costs more than
    anything else a row goes through.
    """
    impl = lf.implementation
    if impl is nw.Implementation.DUCKDB:
        import duckdb

        col = duckdb.ColumnExpression(column)
        path = duckdb.ConstantExpression('$."' + key.replace('"', '\\"') + '"')
        value = duckdb.FunctionExpression("json_extract_string", col, path)
        # try(): text that is not JSON gives null. A json_valid() guard did the same but
        # parsed every text twice (0.75 s against 0.56 s per 10M).
        got = duckdb.FunctionExpression("try", value)
        if where is not None:
            # A CASE runs its branch on the selected rows only.
            got = duckdb.CaseExpression(duckdb.ColumnExpression(where), got)
        raw = f"_{alias}_raw"
        rel = lf.to_native().project(duckdb.StarExpression(), got.alias(raw))
        # Empty text is null, in a step of its own: nullif() would parse the JSON twice.
        text = nw.col(raw)
        out = nw.from_native(rel).with_columns(nw.when(text != "").then(text).alias(alias))
        return cast(nw.LazyFrame[Any], out.drop(raw))
    if impl in (nw.Implementation.PYSPARK, nw.Implementation.PYSPARK_CONNECT):
        from pyspark.sql import functions as F

        frame = lf.to_native()
        source = F.col(column)
        if "'" in key or key == "*" or key.strip() != key:
            # A JSON path cannot spell it (no escape in ['...'], '*' is the wildcard, outer
            # spaces are dropped): json_tuple takes the name as it is, but a repeated key's
            # last value where the path (and the other engines) take its first.
            picked = f"_{alias}_member"
            frame = frame.select("*", F.json_tuple(source, key).alias(picked))
            member = F.col(picked)
        else:
            picked = None
            member = F.get_json_object(source, "$['" + key + "']")
        # get_json_object takes single quotes and raw control characters, and stops at the
        # object's end: a strict reader must find exactly one JSON value in "[" text "]".
        values = F.from_json(F.concat(F.lit("["), source, F.lit("]")), "array<string>", _STRICT)
        kept = F.when((member != "") & (F.size(values) == 1), member)
        if where is not None:
            kept = F.when(F.col(where), kept)
        frame = frame.withColumn(alias, kept)
        return cast(nw.LazyFrame[Any], nw.from_native(frame.drop(picked) if picked else frame))
    frame = lf.collect().to_native().copy()
    texts = frame[column]
    if where is not None:
        texts = texts.where(frame[where].fillna(False).astype(bool), None)
    values = texts.map(lambda text: _json_value(text, key))
    frame[alias] = pd.array(values, dtype=_schema.STRING)
    return cast(nw.LazyFrame[Any], nw.from_native(frame).lazy())


#: Spark's JSON reader held to JSON (its defaults take single quotes and NaN).
_STRICT: Final = {"allowSingleQuotes": "false", "allowNonNumericNumbers": "false"}


def hashed(lf: nw.LazyFrame[Any], column: str, alias: str) -> tuple[nw.LazyFrame[Any], str]:
    """``lf`` with ``alias``: a 64-bit hash of ``column`` (DuckDB ``hash``, Spark
    ``xxhash64``), and the name to count distinct values on.

    For uniqueness checks over millions of ids: as many distinct hashes as rows proves every
    value distinct, and integers cost less to count than text (DuckDB, 10M ids: 0.9 s
    against 2.2 s). Fewer hashes means a repeated value or two values with one hash: count the
    values themselves then. pandas counts the values (no hash): ``(lf, column)``.
    """
    impl = lf.implementation
    if impl is nw.Implementation.DUCKDB:
        import duckdb

        value = duckdb.FunctionExpression("hash", duckdb.ColumnExpression(column))
        rel = lf.to_native().project(duckdb.StarExpression(), value.alias(alias))
        return cast(nw.LazyFrame[Any], nw.from_native(rel)), alias
    if _is_spark(lf):
        from pyspark.sql import functions as F

        frame = lf.to_native().withColumn(alias, F.xxhash64(F.col(column)))
        return cast(nw.LazyFrame[Any], nw.from_native(frame)), alias
    return lf, column


def _json_value(text: Any, key: str) -> str | None:
    import orjson

    # Most texts lack the key: no parse. One with an escape may spell the key escaped
    # ("\u00f6" for "ö", \" for a quote), as the other engines' readers understand.
    if not isinstance(text, str) or (key not in text and "\\" not in text):
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, dict) and text.count(f'"{key}"') > 1:
        # The key given twice (metadata is kept as the gateway sent it): DuckDB's and Spark's
        # readers take its first value, orjson the last; read it again keeping the first.
        data = json.loads(text, object_pairs_hook=_first_of_each)
    value = data.get(key) if isinstance(data, dict) else None
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def _first_of_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, the first value of a key given twice."""
    out: dict[str, Any] = {}
    for name, value in pairs:
        out.setdefault(name, value)
    return out


#: Plain aggregations :func:`first_last` computes beside the ends: name -> engine function.
_PLAIN: Final = ("len", "sum", "min", "max")


def first_last(
    lf: nw.LazyFrame[Any],
    by: str | Sequence[str],
    order_by: Sequence[str],
    *,
    first: dict[str, str],
    last: dict[str, str] | None = None,
    aggs: dict[str, tuple[str, str | None]] | None = None,
) -> nw.LazyFrame[Any]:
    """One row per ``by`` group (a column or several): the values of its first row
    (``first``: output name -> column) and of its last row (``last``) in ``order_by`` order
    (ascending, nulls first, as the window functions sort), and plain aggregations (``aggs``:
    name -> (``len``, ``sum``, ``min`` or ``max``, column)), in one group-by on the table's
    engine.

    Use it instead of window functions that mark each group's first/last row: the windows
    sort every row; this is one hash aggregation. A null field of the first row stays null
    (never another row's value). Order keys should not tie (``created_at`` then ``id``).

    DuckDB: ``arg_min_null``/``arg_max_null`` of the packed values, keyed by a sort key of
    ``order_by`` (``create_sort_key``: one comparison for the whole key, nulls first).
    Spark: ``min_by``/``max_by`` of a struct over a struct key (structs sort nulls first).
    pandas: a sort and the n-th row of each group (Narwhals' ordered ``first``/``last``).
    """
    last = last or {}
    aggs = aggs or {}
    bad = [fn for fn, _ in aggs.values() if fn not in _PLAIN]
    if bad:
        raise ConfigurationError(f"first_last() aggregations are {_PLAIN}, got {bad}")
    keys = [by] if isinstance(by, str) else list(by)
    impl = lf.implementation
    if impl is nw.Implementation.DUCKDB:
        import duckdb

        col, fun, const = (
            duckdb.ColumnExpression,
            duckdb.FunctionExpression,
            duckdb.ConstantExpression,
        )
        key_parts: list[Any] = []
        for c in order_by:
            key_parts += [col(c), const("ASC NULLS FIRST")]
        key = fun("create_sort_key", *key_parts)
        exprs: list[Any] = [col(k) for k in keys]
        ends = {"_first": ("arg_min_null", first), "_last": ("arg_max_null", last)}
        for packed, (fn, cols) in ends.items():
            if cols:
                values = fun("row", *(col(c) for c in cols.values()))
                exprs.append(fun(fn, values, key).alias(packed))
        for name, (fn, on) in aggs.items():
            agg = fun("count_star") if fn == "len" else fun(fn, col(str(on)))
            exprs.append(agg.alias(name))
        # No groups given: DuckDB groups by every expression that is not an aggregate (the
        # keys; its relation API takes one group expression, not a list).
        rel = lf.to_native().aggregate(exprs)
        unpacked: list[Any] = [col(k) for k in keys]
        for packed, (_, cols) in ends.items():
            for i, name in enumerate(cols, start=1):
                unpacked.append(fun("struct_extract", col(packed), const(i)).alias(name))
        unpacked += [col(name) for name in aggs]
        return cast(nw.LazyFrame[Any], nw.from_native(rel.project(*unpacked)))
    if _is_spark(lf):
        from pyspark.sql import functions as F

        skey = F.struct(*order_by)
        sexprs: list[Any] = []
        for side, pick, picks in (("_first", F.min_by, first), ("_last", F.max_by, last)):
            if picks:
                packs = F.struct(*(F.col(c).alias(name) for name, c in picks.items()))
                sexprs.append(pick(packs, skey).alias(side))
        for name, (op, on) in aggs.items():
            sexprs.append(
                (F.count(F.lit(1)) if op == "len" else getattr(F, op)(F.col(str(on)))).alias(name)
            )
        frame = lf.to_native().groupBy(*keys).agg(*sexprs)
        picked = [F.col(k) for k in keys]
        for packed, cols in (("_first", first), ("_last", last)):
            picked += [F.col(f"{packed}.{name}").alias(name) for name in cols]
        picked += [F.col(name) for name in aggs]
        return cast(nw.LazyFrame[Any], nw.from_native(frame.select(*picked)))
    order = list(order_by)
    plain = [
        (nw.len() if fn == "len" else getattr(nw.col(cast(str, c)), fn)()).alias(name)
        for name, (fn, c) in aggs.items()
    ]
    return lf.group_by(*keys).agg(
        *(nw.col(c).first(order_by=order).alias(name) for name, c in first.items()),
        *(nw.col(c).last(order_by=order).alias(name) for name, c in last.items()),
        *plain,
    )


def names_missing_columns(fn: Callable[P, R]) -> Callable[P, R]:
    """Turn "no such column" from any engine into a :class:`ConfigurationError` that says which
    column is missing and where canonical tables come from, and a lazy table's part file that a
    sync has since replaced, or that cannot be read, into a :class:`CacheError` (every public
    analysis is wrapped)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from gwtools._pyspark import spark_errors_explained
        from gwtools.analysis._time import NaiveTimesError

        with spark_errors_explained():
            try:
                out = fn(*args, **kwargs)
            except NaiveTimesError as exc:
                param = _naive_argument(fn, args, kwargs)
                if param is None:
                    raise
                raise ConfigurationError(f"{param}=: {exc}", param=param) from None
            except Exception as exc:
                from gwtools.cache._scan import read_error

                if (error := read_error(exc, "scan the cache again")) is not None:
                    raise error from None  # the engine's words name no way out
                if "relations of different connections" in str(exc):
                    # DuckDB's words name neither table nor a way out.
                    raise ConfigurationError(
                        f"{fn.__name__}() was given tables on different DuckDB connections "
                        "(e.g. gwtools.scan_cache() and duckdb.read_parquet()), which DuckDB "
                        "cannot join: read both with gwtools.scan_cache() (or Gateway.scan), "
                        "or both through one connection of yours"
                    ) from None
                if not _is_missing_column(exc):
                    if isinstance(exc, GatewayError):
                        raise
                    param, mistyped = _mistyped_argument(fn, args, kwargs)
                    if not mistyped:
                        raise
                    # The engine's error (a TypeError, DuckDB's "epoch_us(VARCHAR)") names
                    # an operation, not the column of the wrong type that caused it.
                    raise ConfigurationError(
                        f"{fn.__name__}() cannot use {mistyped}", param=param
                    ) from None
                said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                param, lacks = _lacking_argument(fn, args, kwargs)
                end = " " if lacks.endswith("?") else ". "
                raise ConfigurationError(
                    f"{fn.__name__}() needs a column the table does not have ({said}){lacks}{end}"
                    "Pass a canonical table (gwtools.read_cache/scan_cache, Gateway.payments/"
                    "scan, or a Spark DataFrame read from the cache); docs/tables.md lists its "
                    "columns.",
                    param=param,
                ) from None
        if isinstance(out, pd.DataFrame) and out.columns.has_duplicates:
            # A group key named like one of the result's own columns (by="refunded_amount").
            twice = sorted({str(c) for c in out.columns[out.columns.duplicated()]})
            raise ConfigurationError(
                f"{fn.__name__}() would give two columns named {twice}: a by= key has the "
                "name of a column it computes; group by another column",
                param="by",
            )
        return out

    return wrapper


def _is_missing_column(exc: BaseException) -> bool:
    """Whether ``exc`` is an engine's "no such column": Narwhals', a pandas ``KeyError`` of a
    name, DuckDB's binder error, Spark's unresolved column."""
    if isinstance(exc, nw.exceptions.ColumnNotFoundError):
        return True
    if isinstance(exc, KeyError):
        # pandas names one column, or a list of them (a join's keys).
        name = exc.args[0] if exc.args else None
        names = name if isinstance(name, list) else [name]
        return bool(names) and all(isinstance(n, str) for n in names)
    kind, text = type(exc).__name__, str(exc)
    if kind == "BinderException":  # duckdb
        return "not found" in text
    if kind == "AnalysisException":  # pyspark
        return "UNRESOLVED_COLUMN" in text or "cannot be resolved" in text
    return False


#: The canonical columns of each table argument of the analyses, by parameter name.
_TABLE_ARGUMENTS: Final = {
    "payments": ("payments", _schema.PAYMENT_COLUMNS, "refunds"),
    "refunds": ("refunds", _schema.REFUND_COLUMNS, "payments"),
}


#: Canonical dtype -> whether a Narwhals dtype holds that kind of values. An object column
#: may hold text or flags (pandas 2, a frame built by hand): only its values can tell.
_KINDS: Final[dict[Any, tuple[str, Callable[[Any], bool]]]] = {
    _schema.TIMESTAMP: ("times", lambda d: isinstance(d, nw.Datetime)),
    _schema.INT: ("integers", lambda d: d.is_numeric()),
    _schema.FLOAT: ("numbers", lambda d: d.is_numeric()),
    _schema.BOOL: ("flags", lambda d: isinstance(d, nw.Boolean | nw.Object)),
    _schema.STRING: ("text", lambda d: isinstance(d, nw.String | nw.Object)),
}


def _mistyped_argument(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str | None, str]:
    """The table argument whose canonical columns hold another kind of values (times as text,
    as ``pandas.read_csv`` gives them), and what to say about it; ``""`` when none does."""
    import inspect

    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None, ""
    for name, value in bound.items():
        if name in _TABLE_ARGUMENTS:
            what, canonical = _TABLE_ARGUMENTS[name][:2]
        elif name == "frame":
            what, canonical = "canonical", _CANONICAL
        else:
            continue
        try:
            schema = lazy(value).collect_schema()
        except Exception:  # only a better message is at stake
            continue
        mistyped = [
            column
            for column, kind in canonical.items()
            if column in schema and kind in _KINDS and not _KINDS[kind][1](schema[column])
        ]
        if not mistyped:
            continue
        wrong = [f"{c} ({schema[c]}, not {_KINDS[canonical[c]][0]})" for c in mistyped]
        # The times are what the analyses cannot read as text; say how (pandas, the usual
        # case of a CSV read back), creation time first.
        times = sorted(
            (c for c in mistyped if canonical[c] == _schema.TIMESTAMP),
            key=lambda c: c != "created_at",
        )
        how = (
            f"Convert the times first, e.g. frame[{times[0]!r}] = "
            f"pd.to_datetime(frame[{times[0]!r}], utc=True)"
            + (f" (and {', '.join(times[1:])})" if times[1:] else "")
            + ", "
            if times
            else "Convert them to their types (docs/tables.md), "
        )
        return name, (
            f"{name}=: its {what} columns {', '.join(wrong)} are not of the canonical types "
            f"(a CSV read back with pandas.read_csv holds times as text). {how}or read the "
            "cache or a Parquet export, which keep every type; docs/tables.md lists them."
        )
    return None, ""


def _naive_argument(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> str | None:
    """The table argument whose canonical times are naive (what :func:`lazy` refuses)."""
    import inspect

    from gwtools.analysis._time import NaiveTimesError

    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None
    for name, value in bound.items():
        if name not in _TABLE_ARGUMENTS or value is None:
            continue
        try:
            lazy(value)
        except NaiveTimesError:
            return name
        except Exception:  # only a better message is at stake
            continue
    return None


def _lacking_argument(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[str | None, str]:
    """The parameter whose table lacks canonical columns, and a clause naming them (and
    saying when the table looks like the other resource's: the two passed the wrong way)."""
    import inspect

    try:
        bound = inspect.signature(fn).bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None, ""
    for name, value in bound.items():
        if name not in _TABLE_ARGUMENTS or value is None:
            continue
        what, canonical, other = _TABLE_ARGUMENTS[name]
        try:
            present = set(columns_of(lazy(value)))
        except Exception:  # only a better message is at stake
            continue
        missing = [c for c in canonical if c not in present]
        if not missing:
            continue
        shown = ", ".join(missing[:6]) + (", ..." if len(missing) > 6 else "")
        other_cols = _TABLE_ARGUMENTS[other][1]
        looks = {c for c in other_cols if c not in canonical} <= present
        hint = (
            f": it looks like a {other} table (pass the {what} table as {name}=)" if looks else ""
        )
        return name, f"; {name}= lacks the {what} columns {shown}{hint}"
    column, first = bound.get("column"), next(iter(bound.values()), None)
    if isinstance(column, str):
        try:
            names = columns_of(lazy(first))
        except Exception:  # only a better message is at stake
            return None, ""
        if column not in names:
            return "column", f"; column={column!r} is not one{did_you_mean(column, names)}"
    return None, ""
