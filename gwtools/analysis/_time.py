"""Time zones and calendar buckets for the analyses.

Canonical timestamps are UTC; analysts think in their local day. Every bucketing
and date filter here converts to a named time zone first (``tz`` argument, else
``GW_TIMEZONE``, else UTC), so a payment at 23:30 UTC lands on the next day in
Asia/Kuala_Lumpur, as it should.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import os
import re
import zoneinfo
from typing import Any, Final, NoReturn

import numpy as np
import pandas as pd

from gwtools import _schema
from gwtools._config import refuse_guessed_date
from gwtools._errors import ConfigurationError

#: Accepted ``freq`` values -> pandas period codes (weeks start on Monday, ISO 8601).
FREQS: Final[dict[str, str]] = {
    "day": "D",
    "D": "D",
    "week": "W-SUN",
    "W": "W-SUN",
    "month": "M",
    "M": "M",
}

DateLike = str | dt.date | dt.datetime | pd.Timestamp | None


def resolve_tz(tz: str | None = None) -> str:
    """The time zone name to use: ``tz``, else ``GW_TIMEZONE``, else ``"UTC"`` (blank text,
    spaces or not, is no value).

    Raises ``ValueError`` for a name the IANA database does not know.

    Example: ``resolve_tz()``: the zone analyses will bucket in, to say it beside their
    results.
    """
    if isinstance(tz, zoneinfo.ZoneInfo):
        tz = tz.key  # the zone itself, as from ZoneInfo("Asia/Kuala_Lumpur")
    elif tz is not None and not isinstance(tz, str):
        raise ConfigurationError(
            f"tz={tz!r} is not a zone name: give an IANA name (text) such as "
            "'Asia/Kuala_Lumpur' or 'UTC'",
            param="tz",
        )
    # Blank text is no value, spaces or not, as since=" " is no bound (docs/decisions.md).
    tz = tz if tz and tz.strip() else None
    name = tz or (os.environ.get("GW_TIMEZONE") or "").strip() or "UTC"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
        from gwtools.analysis._engine import did_you_mean

        # Given as tz= (param says so), or as --tz, which the CLI names: only the variable
        # needs naming, as nobody passed it.
        where = "" if tz else " in GW_TIMEZONE"
        raise ConfigurationError(
            f"unknown time zone {name!r}{where}: use an IANA name such as "
            f"'Asia/Kuala_Lumpur' or 'UTC'{did_you_mean(name, _zone_names())}",
            param="tz",
        ) from None
    return name


@functools.cache
def _zone_names() -> tuple[str, ...]:
    """The IANA zone names (for a did-you-mean), read once."""
    return tuple(sorted(zoneinfo.available_timezones()))


def _aware(ts: pd.Series) -> pd.Series:
    if not isinstance(ts.dtype, pd.DatetimeTZDtype):
        _refuse_naive(ts.name, f" ({ts.dtype})")
    return ts


#: How each engine's table takes naive times as the UTC times they are (``{c}``: the column).
_AS_UTC: Final = {
    "pandas": "frame[{c!r}] = frame[{c!r}].dt.tz_localize('UTC')",
    "duckdb": "rel = rel.project(\"* REPLACE (timezone('UTC', {c}) AS {c})\")",
    "spark": "df = df.withColumn({c!r}, F.col({c!r}).cast('timestamp')) in a session in UTC",
}


class NaiveTimesError(ConfigurationError):
    """A canonical time column holds naive times; the public analyses' wrapper names the
    table argument that holds it (payments and refunds both have a ``created_at``)."""


def _refuse_naive(column: Any, dtype: str = "", engine: str = "pandas") -> NoReturn:
    fix = _AS_UTC.get(engine, "make the column's times UTC-aware").format(c=column)
    raise NaiveTimesError(
        f"column {column!r} holds naive timestamps{dtype}; canonical tables hold UTC-aware "
        f"times (as gwtools.read_cache/scan_cache give them): if they are UTC times, say so "
        f"first: {fix}"
    )


def engine_name(impl: Any) -> str:
    """``"pandas"``, ``"duckdb"`` or ``"spark"`` for a Narwhals implementation (else its name)."""
    import narwhals as nw

    if impl in (nw.Implementation.PYSPARK, nw.Implementation.PYSPARK_CONNECT):
        return "spark"
    return "pandas" if impl.is_pandas_like() else str(impl.name).lower()


def refuse_naive_columns(lf: Any) -> None:
    """Refuse a Narwhals frame whose canonical time columns hold naive times, any engine:
    pandas' are refused, and DuckDB's TIMESTAMP or Spark's TIMESTAMP_NTZ were read as UTC by
    every analysis but ``between`` and the ``freq=`` rates, unasked."""
    import narwhals as nw

    if lf.implementation is nw.Implementation.DUCKDB:
        # Narwhals' schema of a DuckDB table asks the connection for its time zone, a query
        # (7 ms, ten times in an overview): DuckDB's own types say it without one.
        native = lf.to_native()
        types = dict(zip(native.columns, map(str, native.types), strict=True))
        if not any(
            types[c].startswith("TIMESTAMP") and "TIME ZONE" not in types[c]
            for c in _TIME_COLUMNS & set(types)
        ):
            return
    schema = lf.collect_schema()
    for name in sorted(_TIME_COLUMNS & set(schema.names())):
        dtype = schema[name]
        if isinstance(dtype, nw.Datetime) and dtype.time_zone is None:
            # pandas users know their dtype's own name (datetime64[ns], timestamp[us][pyarrow]).
            pandas = lf.implementation.is_pandas_like()
            shown = lf.to_native()[name].dtype if pandas else dtype
            _refuse_naive(name, f" ({shown})", engine_name(lf.implementation))


def _refuse_text(column: str, dtype: Any, param: str | None = None, others: str = "") -> NoReturn:
    raise ConfigurationError(
        f"{param or 'column'}={column!r} holds {dtype}, not times: {others}read text as "
        f"times first: frame[{column!r}] = pd.to_datetime(frame[{column!r}], utc=True)",
        param=param,
    )


def as_utc(stamp: Any) -> pd.Timestamp:
    """One time as an aware UTC timestamp; a naive one is taken as UTC (what Spark gives for
    the canonical tables' times, and what a hand-edited state may hold)."""
    out = pd.Timestamp(stamp)
    return out.tz_localize("UTC") if out.tzinfo is None else out.tz_convert("UTC")


#: The canonical time columns of either table.
_TIME_COLUMNS: Final = frozenset(
    name
    for columns in _schema.COLUMNS.values()
    for name, dtype in columns.items()
    if dtype == _schema.TIMESTAMP
)


def check_aware(table: Any, column: str, *, param: str | None = None) -> None:
    """Refuse a table whose ``column`` holds naive timestamps, or no times at all (then
    naming ``param``, the argument that chose the column, and the time columns), any engine."""
    import narwhals as nw

    from gwtools.analysis._engine import lazy

    lf = lazy(table)
    schema = lf.collect_schema()
    dtype = schema.get(column)
    if isinstance(dtype, nw.Datetime) and dtype.time_zone is None:
        _refuse_naive(column, engine=engine_name(lf.implementation))
    if (
        param is not None
        and column not in _TIME_COLUMNS
        and dtype is not None
        and not isinstance(dtype, nw.Datetime)
    ):  # a column that holds no times; a canonical time column held as text (a CSV read
        # back) is said by the analyses' wrapper, naming every such column of the table
        times = [name for name, kind in schema.items() if isinstance(kind, nw.Datetime)]
        others = f"use a time column of the table ({', '.join(times) or 'it has none'}), or "
        _refuse_text(column, dtype, param, others)


def local_time(ts: pd.Series, tz: str | None = None) -> pd.Series:
    """``ts`` converted to the analysis time zone.

    Example: ``local_time(payments.created_at, "Asia/Kuala_Lumpur").dt.hour``: hours of the day
    as customers lived them.
    """
    out: pd.Series = _aware(ts).dt.tz_convert(resolve_tz(tz))
    return out


def period_code(freq: str) -> str:
    """The pandas period code of ``freq`` (``day``, ``week`` or ``month``)."""
    try:
        return FREQS[freq]
    except KeyError:
        from gwtools.analysis._engine import did_you_mean

        raise ConfigurationError(
            f"unknown freq {freq!r}: use 'day', 'week' or 'month'"
            f"{did_you_mean(freq, ['day', 'week', 'month'])}",
            param="freq",
        ) from None


def bucket(ts: pd.Series, freq: str, tz: str | None = None) -> pd.Series:
    """Start of the local day/week/month each timestamp falls in, as an aware timestamp.

    Example: ``bucket(payments.created_at, "day", "Asia/Kuala_Lumpur")``.
    """
    zone = resolve_tz(tz)
    code = period_code(freq)
    wall = local_time(ts, zone).dt.tz_localize(None)
    start = wall.dt.to_period(code).dt.start_time.astype("datetime64[us]")
    # A local midnight can be ambiguous or missing on a DST change: take the first.
    ambiguous = np.ones(len(start), dtype=bool)
    out: pd.Series = start.dt.tz_localize(zone, ambiguous=ambiguous, nonexistent="shift_forward")
    return out.rename("period")


def period_range(start: pd.Timestamp, end: pd.Timestamp, freq: str, tz: str) -> pd.DatetimeIndex:
    """Every bucket start from ``start``'s bucket to ``end``'s (both already bucketed)."""
    code = period_code(freq)
    periods = pd.period_range(
        start.tz_localize(None).to_period(code), end.tz_localize(None).to_period(code), freq=code
    )
    naive = pd.DatetimeIndex(periods.to_timestamp(how="start").astype("datetime64[us]"))
    return naive.tz_localize(
        tz, ambiguous=np.ones(len(naive), dtype=bool), nonexistent="shift_forward"
    )


def _is_date(value: DateLike) -> bool:
    if isinstance(value, str):
        return len(value.strip()) <= 10
    return isinstance(value, dt.date) and not isinstance(value, dt.datetime)


#: A year or a month alone (``2026``, ``2026-10``): pandas reads it as its first day.
_YEAR_OR_MONTH = re.compile(r"\s*\d{4}(-\d{1,2})?\s*")


def to_timestamp(
    value: DateLike, tz: str | None = None, *, end: bool = False, param: str | None = None
) -> pd.Timestamp | None:
    """A date filter bound as an aware UTC timestamp.

    A date (or a ``YYYY-MM-DD`` string) means that whole local day: as an ``end``
    bound it becomes the start of the next local day, to be used exclusively.
    A naive date-time is read as local time in ``tz``. A year or month alone is refused
    (``param`` names the argument): read as its first day, ``"2026-10"`` to ``"2026-10"``
    would be 1 October, not October.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    zone = resolve_tz(tz)
    if isinstance(value, str) and _YEAR_OR_MONTH.fullmatch(value):
        raise ConfigurationError(
            f"{value!r} is a year or month, not a day: give days, e.g. since='2026-10-01', "
            "until='2026-10-31' for October (both whole local days)",
            param=param,
        )
    refuse_guessed_date(value, param)
    given = f"{param}={value!r}" if param else repr(value)
    read: Any = pd.NaT
    # A number would pass as nanoseconds since 1970.
    if isinstance(value, str | dt.date | np.datetime64):
        with contextlib.suppress(TypeError, ValueError):
            read = pd.Timestamp(value)
    if pd.isna(read):  # NaT compares false with every time: no row would match
        raise ConfigurationError(
            f"cannot read {given} as a date: use YYYY-MM-DD, ISO 8601 or a datetime.date",
            param=param,
        )
    parsed: pd.Timestamp = read
    if parsed.tzinfo is None:
        if end and _is_date(value):
            # The next calendar day, not 24 hours: a day is 23 or 25 on a clock change.
            parsed = parsed + pd.Timedelta(days=1)
        parsed = localize(parsed, zone)
    return parsed.tz_convert("UTC")


def localize(wall: pd.Timestamp, zone: str | dt.tzinfo) -> pd.Timestamp:
    """Wall-clock time ``wall`` in ``zone``. A time a clock change repeats reads as its first
    occurrence and one it skips as the change's instant, as period starts do (a local
    midnight is both in some zones, e.g. America/Havana and America/Santiago)."""
    return wall.tz_localize(zone, ambiguous=True, nonexistent="shift_forward")


def next_day(start: pd.Timestamp) -> pd.Timestamp:
    """The start of the local day after the one ``start`` (an aware local midnight) begins."""
    if start.tzinfo is None:
        return start + pd.Timedelta(days=1)
    return localize(start.tz_localize(None) + pd.Timedelta(days=1), start.tzinfo)


def between(
    frame: Any,
    since: DateLike = None,
    until: DateLike = None,
    *,
    tz: str | None = None,
    column: str = "created_at",
) -> Any:
    """Rows whose ``column`` falls in ``[since, until]``, dates read as local days in ``tz``.

    Example: ``between(payments, "2026-11-01", "2026-11-07", tz="Asia/Kuala_Lumpur")``: one
    week's payments, the whole of 7 November included, Malaysian time; an analysis of it
    answers for that week only. Rows with no timestamp are left out. Returns the
    same kind of table it is given: a lazy table stays lazy, the filter runs in its engine.
    """
    import narwhals as nw

    from gwtools.analysis._engine import lazy, native_like

    check_aware(frame, column, param="column")
    lf = lazy(frame)
    ts = nw.col(column)
    lo = to_timestamp(since, tz, param="since")
    hi = to_timestamp(until, tz, end=True, param="until")
    # A date ``until`` ends where its next day starts (exclusive); a time is kept itself.
    if lo is not None and hi is not None and (lo >= hi if _is_date(until) else lo > hi):
        raise ConfigurationError(
            f"since={since!r} is after until={until!r}, so no row can match: swap them "
            "(a date is a whole local day, so since and until may be the same day)",
            param="since",
        )
    # Plain comparisons, no fill_null: DuckDB pushes them into the Parquet scan and skips
    # row groups outside the range. A null timestamp compares null (SQL) or False (pandas):
    # left out either way.
    keep: list[nw.Expr] = []
    if lo is not None:
        keep.append(ts >= lo.to_pydatetime())
    if hi is not None:
        keep.append((ts < hi.to_pydatetime()) if _is_date(until) else (ts <= hi.to_pydatetime()))
    return native_like(lf.filter(*(keep or [~ts.is_null()])), frame)


def business_days_between(
    start: pd.Series,
    end: DateLike,
    tz: str | None = None,
    holidays: list[dt.date] | None = None,
) -> pd.Series:
    """Whole business days (Monday to Friday, minus ``holidays``) from each local start date to ``end``'s.

    The start day does not count, so a refund made on Friday is 1 business day old on Monday.

    Example: ``business_days_between(refunds.created_at, "2026-11-20",
    tz="Asia/Kuala_Lumpur")``: how long refunds have waited, counted as banks count.
    """
    zone = resolve_tz(tz)
    starts = local_time(start, zone).dt.tz_localize(None).dt.normalize()
    # Any date the library takes (a day is that local day; a naive time is local time).
    stamp = to_timestamp(end, zone, param="end")
    if stamp is None:
        raise ConfigurationError(
            "business_days_between needs an end, e.g. '2026-11-30'", param="end"
        )
    end_day = stamp.tz_convert(zone).tz_localize(None).normalize()
    valid = starts.notna()
    days = np.full(len(starts), np.nan)
    if valid.any():
        begin = starts[valid].to_numpy().astype("datetime64[D]")
        finish = np.datetime64(end_day.date(), "D")
        hol = np.array(holidays or [], dtype="datetime64[D]")
        # busday_count counts [begin, finish); shifting both by one day drops the start
        # day and includes the end day.
        days[valid.to_numpy()] = np.busday_count(begin + 1, finish + 1, holidays=hol)
    return pd.Series(days, index=start.index, dtype="Float64")
