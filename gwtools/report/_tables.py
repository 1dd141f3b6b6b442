"""What the notebooks analyse: the chosen payments and refunds as lazy tables, where they came
from (sandbox data or not), and the tables they save as CSV and Parquet."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import re
import sys
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import narwhals as nw
import pandas as pd

from gwtools import ConfigurationError, open_source, write_table
from gwtools._embedded import REGISTRY
from gwtools.analysis import _engine as E
from gwtools.analysis import between, resolve_tz
from gwtools.analysis._money import exponent
from gwtools.analysis._monitor import RATE_KINDS
from gwtools.analysis._quality import judge_completeness
from gwtools.analysis._rates import is_fraction
from gwtools.analysis._rates import percent as _percent
from gwtools.analysis._time import as_utc, to_timestamp
from gwtools.cache._source import SPARK, named_source
from gwtools.plots import SANDBOX_NOTE
from gwtools.sync._result import hold_back_incompleteness


@E.names_missing_columns
def refunds_of(payments: Any, refunds: Any, *, orphans: bool = False) -> Any:
    """The refunds of the payments in ``payments``, of the refunds' kind (a semi-join on
    ``payment_id`` in the tables' engine: a lazy table stays lazy); with ``orphans``, the
    refunds whose payment is *not* in ``payments`` instead (an anti-join). Both tables must
    be on one engine. Example: ``refunds_of(failed_fpx_payments, refunds)``."""
    lp, lr = E.lazy_pair(payments, refunds)
    ids = lp.select(nw.col("id").alias("payment_id")).unique()
    return E.native_like(lr.join(ids, on="payment_id", how="anti" if orphans else "semi"), refunds)


@dataclass
class Tables:
    """What a notebook analyses: canonical payments and refunds, filtered, and where they came from.

    ``payments``/``refunds`` are lazy tables (DuckDB, or Spark DataFrames for a Spark source;
    pandas if given pandas): pass them to :mod:`gwtools.analysis`, which returns small
    DataFrames. ``source`` names the data's origin without key, port or path; ``as_of`` is the
    time ages are measured at (the sandbox clock on the embedded sandbox, so outputs are
    reproducible). ``sandbox_data``: the data is sandbox data, so the notebook's outputs say
    so (its first line here, and figures and dashboards given ``origin=`` this object: see
    :func:`gwtools.plots.is_sandbox_data`). ``states``: what the cache's last sync said about
    itself ({resource: its ``_state.json``}; empty when the tables came from no cache), for
    ``analysis.quality(..., completeness=t.states)``.

    With ``since``/``until``, ``refunds`` are the chosen payments' refunds, whenever they were
    made (the payment cohort: refund rates, partial or full, time to refund), and
    ``refunds_made`` the refunds made on the chosen days, whichever payment they belong to
    (the refund-date view: refunds per week of refund, their reasons, refund spikes).
    Without days both are every refund (of the currency).
    """

    payments: Any
    refunds: Any
    source: str
    tz: str
    as_of: pd.Timestamp
    since: str | None = None
    until: str | None = None
    currency: str | None = None
    sandbox_data: bool = False
    states: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    refunds_made: Any = None  # (None: the same as refunds)

    def __post_init__(self) -> None:
        if self.refunds_made is None:
            self.refunds_made = self.refunds

    def __repr__(self) -> str:
        # A notebook's first output: sandbox data says so on its first line.
        banner = f"{SANDBOX_NOTE}\n" if self.sandbox_data else ""
        n, coverage = self._span()
        head = (
            f"{banner}{n:,} payments and {count_rows(self.refunds):,} refunds "
            f"from {self.source}, {self._chosen()}"
        )
        return head + (f"\n{coverage}" if coverage else "")

    def _chosen(self) -> str:
        currency = f", {self.currency} only" if self.currency else ""
        return f"{self.since or 'start'} to {self.until or 'now'} ({self.tz}){currency}"

    def selection(self) -> str:
        """The local days and currency chosen, as the first output says them (``2026-11-01
        to now (UTC), MYR only``); empty when every payment was chosen."""
        return self._chosen() if self.since or self.until or self.currency else ""

    def coverage(self, *, zoned: bool = False) -> str:
        """What the payments span (first and last local day) and how the cache's last sync
        went, e.g. ``payments created 2026-08-22 to 2026-11-20; last sync 2026-11-21 08:30
        UTC, complete``; empty for no payments from no cache. ``zoned``: the days' zone is
        named after them (``… to 2026-11-20 Asia/Kuala_Lumpur; …``), for a line read away
        from the notebooks that say their zone."""
        return self._span(zoned=zoned)[1]

    def _span(self, *, zoned: bool = False) -> tuple[int, str]:
        # One query for the count and the span: what the figures cover, and how current.
        span = E.to_pandas(
            E.lazy(self.payments).select(
                nw.len().alias("n"),
                nw.col("created_at").min().alias("first"),
                nw.col("created_at").max().alias("last"),
            )
        ).iloc[0]
        facts = []
        if int(span["n"]) and pd.notna(span["first"]):
            first, last = (as_utc(span[k]).tz_convert(self.tz) for k in ("first", "last"))
            zone = f" {self.tz}" if zoned else ""
            facts.append(f"payments created {first:%Y-%m-%d} to {last:%Y-%m-%d}{zone}")
        synced = sync_summary(self.states)
        if synced:
            facts.append(synced)
        return int(span["n"]), "; ".join(facts)


def _utc(value: Any) -> pd.Timestamp | None:
    """A state's time in UTC; None for none, or for one a hand-edited file made unreadable
    (the summary then leaves the time out rather than failing a notebook's first cell)."""
    if not isinstance(value, str):
        return None
    try:
        stamp = as_utc(value)
    except ValueError:
        return None
    return None if pd.isna(stamp) else stamp


def sync_summary(states: Mapping[str, Mapping[str, Any]]) -> str:
    """What the cache's last syncs said about themselves, in a few words: when (UTC) and
    whether they read every page, or which table is incomplete and what to do, and how many
    cached files cannot be read (their rows are missing). Empty when the tables came from no
    cache."""
    if not states:
        return ""
    said = _sync_said(states)
    # Part files the readers leave out (dataset_state's unreadable_files): whatever the sync
    # said, rows are missing. Counted, not named: a page shows no local path.
    damaged = [
        f"{n} cached {name} file{'' if n == 1 else 's'}"
        for name, s in states.items()
        if (n := len(s.get("unreadable_files") or {}))
    ]
    if not damaged:
        return said
    lost = (
        f"{' and '.join(damaged)} cannot be read, so rows are missing: run gwtools sync, "
        "which fetches those months again"
    )
    return "; ".join([said.removesuffix(", complete"), lost] if said else [lost])


def _sync_said(states: Mapping[str, Mapping[str, Any]]) -> str:
    times = [t for s in states.values() if (t := _utc(s.get("last_sync"))) is not None]
    when = f" {max(times):%Y-%m-%d %H:%M} UTC" if times else ""
    judged = judge_completeness(states)
    if judged is None:
        return f"last sync{when}" if when else ""
    bad, names, _ = judged
    if not bad:
        return f"last sync{when}, complete"
    which = " and ".join(names)
    if not times:
        return f"no sync of the {which} has completed: rows may be missing; run gwtools sync"
    return (
        f"last sync{when} INCOMPLETE for the {which}: rows may be missing; run gwtools sync "
        "again to finish it"
    )


def count_rows(table: Any) -> int:
    """How many rows ``table`` has, counted in its engine (a lazy table is not loaded)."""
    if isinstance(table, pd.DataFrame):
        return len(table)
    return int(E.to_pandas(E.lazy(table).select(nw.len().alias("n")))["n"].iloc[0])


def _number(value: float) -> str:
    # Other fractions (below 1) need 4 decimals; days and counts read best with 2. Money
    # has its currency's own decimals, rates and shares are percentages (see _money_view).
    return f"{value:.4f}" if abs(value) < 1 and value != 0 else f"{value:,.2f}"


#: ``amount_<CUR>``: a total in one currency (``totals_by_currency``'s wide columns).
_AMOUNT_IN = re.compile(r"amount_([A-Z]{3})")


def _money(value: Any, digits: int | None) -> Any:
    """``value`` with ``digits`` decimals and thousands separators; as :func:`_number` shows
    it for an unknown currency (``None``); a missing value stays missing (shown blank)."""
    if pd.isna(value):
        return value
    return _number(value) if digits is None else f"{value:,.{digits}f}"


def _money_view(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the notebooks show it: each money column's amounts as text with their
    currency's own decimals (Babel's, as :func:`gwtools.analysis.to_major` divides by) and
    thousands separators, e.g. KWD ``1.234``, JPY ``1,234``, MYR ``1,234.50``, BHD ``0.005``;
    rates, shares and their intervals as percentages (``62.5%``), as the dashboards show
    them. Only the display: ``frame`` is returned as it is when it holds neither, and is never
    changed (what :func:`save_tables` writes keeps its numbers).

    Money columns are float columns (major units) named ``amount``, ``amount_major`` or
    ending in ``_amount`` (``captured_amount``, ``refunded_amount``), in the currency of
    each row's ``currency`` column (a table without one keeps them as numbers), and
    ``amount_<CUR>`` (``amount_JPY``: totals in that currency); the ``amount`` text beside such
    totals, which spells the same figures, is left out of the view. Fractions are the columns
    :func:`gwtools.analysis._rates.is_fraction` names (``rate``, ``ci_low``, ``share``,
    ``amount_rate``, ``*_rate``...). Everything else is shown by pandas' float format
    (:func:`_number`): days, counts, other fractions; integer columns, such as the canonical
    tables' minor units, stay integers."""
    currency = frame.get("currency")  # a Series when there is one such column
    digits_of: dict[Any, int | None] = {}

    def digits(code: Any) -> int | None:
        code = code if isinstance(code, str) else None  # a missing currency
        if code not in digits_of:  # one Babel lookup per currency, not per row
            known = code is not None and len(code) == 3 and code.isalpha()
            digits_of[code] = exponent(code) if known else None
        return digits_of[code]

    view = _alerts_view(frame)
    for i, name in enumerate(frame.columns):
        if not isinstance(name, str) or not pd.api.types.is_float_dtype(frame.dtypes.iloc[i]):
            continue
        if is_fraction(name, frame):
            view = frame.copy() if view is None else view
            view.isetitem(i, pd.array([_percent(v) for v in frame.iloc[:, i]], dtype=object))
            continue
        named = _AMOUNT_IN.fullmatch(name)
        if named:
            codes: list[Any] = [named.group(1)] * len(frame)
        elif (name in ("amount", "amount_major") or name.endswith("_amount")) and isinstance(
            currency, pd.Series
        ):
            codes = list(currency.astype("string").str.upper().astype(object))
        else:
            continue
        shown = [_money(v, digits(c)) for v, c in zip(frame.iloc[:, i], codes, strict=True)]
        view = frame.copy() if view is None else view
        view.isetitem(i, pd.array(shown, dtype=object))
    if view is not None and _spelled_totals(frame):
        view = view.drop(columns="amount")
    return frame if view is None else view


def _spelled_totals(frame: pd.DataFrame) -> bool:
    """Whether ``frame``'s ``amount`` is the text ``totals_by_currency`` spells its
    ``amount_<CUR>`` totals in (``RM6,513.00``): the same figures as those columns, which the
    view shows at each currency's decimals, so shown once."""
    columns = list(frame.columns)
    if columns.count("amount") != 1:
        return False
    text = pd.api.types.is_string_dtype(frame["amount"].dtype)
    return text and any(isinstance(c, str) and _AMOUNT_IN.fullmatch(c) for c in columns)


#: The figures of an alert (:func:`gwtools.analysis.monitor`), in the unit of its kind.
_ALERT_FIGURES = ("observed", "expected", "limit")


def _alerts_view(frame: pd.DataFrame) -> pd.DataFrame | None:
    """A copy of ``frame`` showing an alerts table's figures in each row's unit: a rate kind's
    as percentages (``35.0%``), a count kind's as counts (``120``; an expected rate of them,
    ``3.50``); None for any other table. One column holds both units, which pandas' float
    format showed alike (``0.3500`` beside ``120.00``)."""
    columns = list(frame.columns)
    if any(columns.count(c) != 1 for c in ("kind", *_ALERT_FIGURES)):
        return None
    rates = frame["kind"].isin(RATE_KINDS).fillna(False).to_numpy(dtype=bool)
    view = frame.copy()
    for name in _ALERT_FIGURES:
        i = columns.index(name)
        if not pd.api.types.is_float_dtype(frame.dtypes.iloc[i]):
            return None
        shown = [
            _percent(v) if rate else _count(v)
            for v, rate in zip(frame.iloc[:, i], rates, strict=True)
        ]
        view.isetitem(i, pd.array(shown, dtype=object))
    return view


def _count(value: Any) -> Any:
    """A count as a whole number (``120``); an average of counts as :func:`_number` shows it."""
    if pd.isna(value):
        return value
    return f"{value:,.0f}" if float(value).is_integer() else _number(value)


def _frame_html(frame: pd.DataFrame) -> str | None:
    """A notebook's HTML of ``frame``: pandas' own, of :func:`_money_view`."""
    html: str | None = _money_view(frame)._repr_html_()  # type: ignore[operator]
    return html


def _frame_text(frame: pd.DataFrame, printer: Any, cycle: bool) -> None:
    """A notebook's plain text of ``frame`` (IPython's pretty-printer hook)."""
    printer.text(repr(_money_view(frame)))


def notebook_display() -> None:
    """pandas display options the notebooks share (wide tables, readable numbers, money at
    its currency's decimals: :func:`_money_view`), and warnings shown as their sentence
    alone: a kernel's warning names its cell's temporary file and repeats the line, which
    tell a report's reader nothing. The warnings that the cache is partial are held back:
    they name the cache's local folder, and the notebooks' first output (:class:`Tables`)
    says the same."""
    pd.set_option("display.width", 140)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.max_colwidth", 90)  # retry advice reads as a sentence
    pd.set_option("display.float_format", _number)
    ipython = sys.modules.get("IPython")  # in a kernel; elsewhere pandas' options alone
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None:  # money at its currency's decimals: see _money_view
        formatters = shell.display_formatter.formatters
        formatters["text/html"].for_type(pd.DataFrame, _frame_html)
        formatters["text/plain"].for_type(pd.DataFrame, _frame_text)
    warnings.formatwarning = _plain_warning
    hold_back_incompleteness(sync=False)


def _plain_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    line: str | None = None,
) -> str:
    return f"{category.__name__}: {message}\n"


def describe_source(base_url: str | None, *, embedded: bool) -> str:
    """A gateway's name for outputs: scheme and host only (no port, path or key)."""
    if embedded or not base_url:
        return "the embedded sandbox (seeded demo history)"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.hostname}" if parts.hostname else "the configured gateway"


@contextlib.contextmanager
def quiet_embedded_notice() -> Iterator[None]:
    """Hold back the library's one-time 'using the embedded sandbox at <url>' notice, where a
    report or notebook says "sandbox data" itself: the notice names a loopback port, which
    outputs must not. Example::

        with gwtools.report.quiet_embedded_notice():
            gw = gwtools.connect()
    """
    logger = logging.getLogger("gwtools")

    def drop(record: logging.LogRecord) -> bool:
        return "embedded sandbox" not in record.getMessage()

    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _select(
    payments: Any,
    refunds: Any,
    since: str | None,
    until: str | None,
    tz: str,
    currency: str | None,
) -> tuple[Any, Any, Any]:
    """The chosen currency and local days, as filters in the tables' engine (lazy stays lazy):
    the payments, their refunds, and the refunds made on those days (see :class:`Tables`).
    A currency the payments do not hold is refused, naming those they do: a typo would
    otherwise read as a report of no payments; so is an empty one, which would otherwise read
    as all currencies under the name of one."""
    if currency is not None and not currency.strip():
        held = E.distinct(E.lazy(payments), nw.col("currency").str.to_uppercase())
        raise ConfigurationError(
            f"currency={currency!r} is empty: give a currency code, e.g. "
            f"{', '.join(held) or 'MYR'}, or leave the currency out for all (kept apart)",
            param="currency",
        )
    if currency:
        held = E.distinct(E.lazy(payments), nw.col("currency").str.to_uppercase())
        if held and currency.upper() not in held:
            raise ConfigurationError(
                f"currency={currency!r}: the payments are in {', '.join(held)}; pick one of "
                "them, or leave the currency out for all (kept apart)",
                param="currency",
            )
    if isinstance(payments, pd.DataFrame) and isinstance(refunds, pd.DataFrame):
        return _select_pandas(payments, refunds, since, until, tz, currency)
    if currency:
        keep = E.truthy(nw.col("currency") == currency.upper())
        payments = E.native_like(E.lazy(payments).filter(keep), payments)
        refunds = E.native_like(E.lazy(refunds).filter(keep), refunds)
    if since or until:
        chosen = between(payments, since, until, tz=tz)
        return chosen, refunds_of(chosen, refunds), between(refunds, since, until, tz=tz)
    return payments, refunds, refunds


def _select_pandas(
    payments: pd.DataFrame,
    refunds: pd.DataFrame,
    since: str | None,
    until: str | None,
    tz: str,
    currency: str | None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    if currency:
        payments = payments[payments["currency"].eq(currency.upper()).fillna(False).astype(bool)]
        refunds = refunds[refunds["currency"].eq(currency.upper()).fillna(False).astype(bool)]
    made = refunds
    if since or until:
        payments = between(payments, since, until, tz=tz)
        made = between(refunds, since, until, tz=tz)
        of_payments = refunds["payment_id"].isin(payments["id"]).fillna(False).to_numpy(dtype=bool)
        refunds = refunds[of_payments]
    return (
        payments.reset_index(drop=True),
        refunds.reset_index(drop=True),
        made.reset_index(drop=True),
    )


def _is_embedded(base_url: str | None) -> bool:
    from gwtools._config import resolve_settings

    return resolve_settings(None, base_url) is None


def load_tables(
    source: Any = None,
    *,
    base_url: str | None = None,
    cache: str | os.PathLike[str] | None = None,
    spark_master: str | None = None,
    spark_path: str | None = None,
    since: str | dt.date | None = None,
    until: str | dt.date | None = None,
    tz: str | None = None,
    currency: str | None = None,
    as_of: str | dt.datetime | None = None,
    source_name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    sandbox_data: bool = False,
) -> Tables:
    """Payments and refunds for a notebook, as lazy tables (see :func:`gwtools.open_source`).

    ``source``: ``None``/``"gateway"`` syncs the configured gateway (``base_url``/
    ``GW_BASE_URL`` with ``GW_API_KEY``; with neither, the embedded sandbox, synced into a
    private cache of this process unless ``cache_dir`` is given); a cache folder or URL is
    read as it is, no network (``cache`` is the same); ``"spark"`` reads ``spark_path`` (else
    the gateway's synced cache) with a Spark session on ``spark_master``. ``since``/``until``
    are local days in ``tz`` (inclusive); ``currency`` keeps one currency; ``as_of`` is when
    pending ages are measured (default: the sandbox clock on the embedded sandbox, else now);
    ``source_name`` overrides the data's description; ``sandbox_data=True`` labels the data as
    sandbox data (reports pass it for the embedded sandbox's cache they synced; the embedded
    sandbox as a source is labelled anyway). Nothing is loaded: the filters run in
    the engine with the analyses. Example::

        t = load_tables("/data/gwtools", since="2024-06-01", tz="Asia/Kuala_Lumpur")
        analysis.decline_rate(t.payments, freq="week", tz=t.tz)
    """
    zone = resolve_tz(tz)
    if as_of is not None:
        # Refused before any source is opened (or synced): text pandas would guess at, or no
        # time at all. A naive time stays UTC, as it always was.
        to_timestamp(as_of, "UTC", param="as_of")
    since_s = str(since) if since else None
    until_s = str(until) if until else None
    if source is None and cache is not None:
        source = cache
    source = named_source(source)  # "GATEWAY" is the gateway here too, as open_source reads it
    gateway_cache = (source is None or source == "gateway") or (
        source == SPARK and spark_path is None
    )
    if gateway_cache and cache_dir is None and _is_embedded(base_url):
        cache_dir = REGISTRY.private_cache_dir()
    with quiet_embedded_notice():
        src = open_source(
            source,
            base_url=base_url,
            cache_dir=cache_dir if gateway_cache else None,
            spark_master=spark_master,
            spark_path=spark_path,
        )
    if as_of is not None:
        moment = pd.Timestamp(as_of)
        moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment
    else:
        moment = pd.Timestamp(_as_of(src.embedded))
    payments, refunds, made = _select(src.payments, src.refunds, since_s, until_s, zone, currency)
    return Tables(
        payments,
        refunds,
        source_name or src.description,
        zone,
        moment,
        since_s,
        until_s,
        currency.upper() if currency else currency,  # as the data spells it, and outputs
        sandbox_data=sandbox_data or src.sandbox_data,
        states=src.states,
        refunds_made=made,
    )


#: Rows a spreadsheet opens (Excel's 1,048,576, less the header): the CSV copies are for
#: colleagues in a spreadsheet. A longer table is saved as Parquet only, every row of it.
CSV_MAX_ROWS = 1_048_575


def save_tables(
    tables: Mapping[str, Any],
    out_dir: str | os.PathLike[str] | None,
    *,
    csv_max_rows: int | None = CSV_MAX_ROWS,
) -> list[str]:
    """Write each table as ``<name>.csv`` and ``<name>.parquet`` into ``out_dir`` and return
    the file names (not paths: they end up in notebook outputs). ``out_dir=None`` writes
    nothing, so an interactive run leaves no files behind. A lazy table (a whole canonical
    table, say) is streamed in batches, never loaded whole; canonical payments and refunds
    come out in creation order (then id) on DuckDB and on Spark alike.

    A table of more than ``csv_max_rows`` rows (default: what a spreadsheet opens) gets its
    Parquet file only, with a warning naming the command that writes its CSV: 10M canonical
    payments take 4.7 GB and four and a half minutes as CSV, 1.3 GB and 26 s as Parquet. Its
    ``<name>.csv`` of an earlier run, if any, is removed (no other file is touched).
    ``csv_max_rows=None`` writes every CSV.
    """
    for name in tables:  # all checked before any file is written
        if (
            not isinstance(name, str)
            or name.strip() in ("", ".", "..")
            or any(sep in name for sep in ("/", "\\", os.sep))
        ):
            raise ConfigurationError(
                f"save_tables: table name {name!r} is not a file name: each name becomes "
                "<name>.csv and <name>.parquet inside out_dir, so give plain text without a "
                "folder (e.g. 'declines_by_brand')",
                param="tables",
            )
    if out_dir is None:
        return []
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    names = []
    for name, table in tables.items():
        frame = _in_creation_order(table)
        suffixes = ["csv", "parquet"]
        if csv_max_rows is not None and (rows := count_rows(frame)) > csv_max_rows:
            warnings.warn(_csv_skipped(name, rows, csv_max_rows), stacklevel=2)
            suffixes.remove("csv")
            # An earlier run's CSV of this table would read as current: only that file goes.
            (target / f"{name}.csv").unlink(missing_ok=True)
        for suffix in suffixes:
            path = target / f"{name}.{suffix}"
            write_table(frame, path, suffix)  # renamed into place: never half-written
            names.append(path.name)
    return names


def _in_creation_order(table: Any) -> Any:
    """A canonical table from Spark sorted as ``read_cache`` sorts it (creation time, then id):
    Spark reads the month files in no set order (the largest first), so a report's
    ``payments.csv`` would start in whichever month is busiest. DuckDB's scan already reads
    the months in order; anything else is written as given."""
    if not type(table).__module__.startswith("pyspark"):
        return table
    from gwtools.cache._export import canonical_resource

    if canonical_resource(list(table.columns)) is None:
        return table
    from pyspark.sql import functions as F

    return table.orderBy(F.col("created_at").asc_nulls_last(), F.col("id").asc_nulls_last())


def _csv_skipped(name: str, rows: int, limit: int) -> str:
    export = f"`gwtools export {name} --format csv` or " if name in ("payments", "refunds") else ""
    return (
        f"{name}: {rows:,} rows, more than a spreadsheet opens ({limit:,}), so it was saved as "
        f"{name}.parquet only (every row). For a CSV anyway: {export}"
        "save_tables(..., csv_max_rows=None)."
    )


def _as_of(embedded: bool) -> str:
    if embedded:
        from gwtools._embedded import demo_history

        return str(pd.Timestamp(demo_history().ends_at()))
    return str(pd.Timestamp.now(tz="UTC"))
