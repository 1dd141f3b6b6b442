"""The dashboards' shared machinery: :class:`Dashboard` (filters, a view selector, a chart,
a table, a drill-down, CSV/Parquet export), the table HTML and figure PNGs they show, and the
"sandbox data" header of dashboards over sandbox data."""

from __future__ import annotations

import datetime as dt
import html
import io
import os
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, Final, cast

import ipywidgets as widgets
import narwhals as nw
import pandas as pd
from matplotlib.figure import Figure

from gwtools import (
    CacheError,
    ConfigurationError,
    Gateway,
    GatewayError,
    open_source,
    write_table,
)
from gwtools.analysis import _engine as E
from gwtools.analysis import between, local_time, resolve_tz
from gwtools.analysis._money import resolve_locale
from gwtools.analysis._rates import is_fraction
from gwtools.analysis._rates import percent as _percent
from gwtools.analysis._time import DateLike, to_timestamp
from gwtools.cache._scan import read_error
from gwtools.plots import SANDBOX_COLOUR, SANDBOX_NOTE, is_sandbox_data
from gwtools.report import TABLE_CSS, count_rows, sync_summary, tidy_tables
from gwtools.report._tables import _money_view

#: A dashboard view: the filtered payments (a table of the source's kind) in, the table to
#: show and its chart out.
View = Callable[[Any], tuple[pd.DataFrame, Figure | None]]
#: The columns the filters' choices come from (one small group-by when a dashboard opens).
_FACETS = ["method_type", "currency", "status", "fpx_bank_code", "fpx_bank"]
#: Columns every dashboard reads of the payments (its filters and its date range).
_PAYMENT_KEYS: Final = ("id", "created_at", *_FACETS)

_ALL = "(all)"
#: The periods of the ``per`` control (``freq``).
_FREQS: Final = ["day", "week", "month"]
#: A multi-select filter's value as given: one value, several, or None (all).
Choice = str | Sequence[str] | None


def default_export_dir() -> Path:
    """Where dashboards export: ``GW_EXPORT_DIR``, else ``./gwtools-exports``."""
    return Path(os.environ.get("GW_EXPORT_DIR") or "gwtools-exports")


def _options(values: pd.Series) -> list[str]:
    return sorted(str(v) for v in values.dropna().unique())


def _bank_options(facets: pd.DataFrame) -> list[tuple[str, str]]:
    """``("Maybank2u (MB2U0227)", "MB2U0227")`` per FPX bank code, sorted by label."""
    banks = facets.dropna(subset=["fpx_bank_code"]).drop_duplicates("fpx_bank_code")
    return sorted(
        (f"{n if pd.notna(n) else 'unnamed'} ({c})", str(c))
        for n, c in zip(banks["fpx_bank"], banks["fpx_bank_code"], strict=True)
    )


def _local_dates(ts: pd.Series, tz: str) -> tuple[dt.date | None, dt.date | None]:
    ts = ts.dropna()
    if ts.empty:
        return None, None
    local = local_time(ts, tz)
    return local.min().date(), local.max().date()


def _for_display(frame: pd.DataFrame, tz: str, percent: Collection[str] = ()) -> pd.DataFrame:
    """As the reports show a table: money at its currency's decimals (JPY ``1,000``, BHD
    ``0.005``, not ``1,000.00`` and ``0.01``) and fractions (the analyses' rate and share
    columns, and ``percent``) as percentages, ``0.04%`` rather than ``0.0%``; timestamps in
    local time, each such column named with its zone (``created_at (UTC)``); nulls blank."""
    out = _money_view(frame).copy()
    zoned = {}
    for col in out.columns:
        series = out[col]
        if (is_fraction(col) or col in percent) and pd.api.types.is_numeric_dtype(series.dtype):
            out[col] = series.map(lambda v: "" if pd.isna(v) else _percent(v))
        elif isinstance(series.dtype, pd.DatetimeTZDtype):
            out[col] = local_time(series, tz).dt.strftime("%Y-%m-%d %H:%M").fillna("")
            zoned[col] = f"{col} ({tz})"
        elif pd.api.types.is_float_dtype(series.dtype):
            out[col] = series.map(lambda v: "" if pd.isna(v) else f"{v:,.2f}")
    return out.astype("object").where(out.notna(), "").rename(columns=zoned)


def to_html(
    frame: pd.DataFrame,
    tz: str,
    *,
    max_rows: int = 50,
    more: bool = False,
    percent: Collection[str] = (),
    empty: str = "nothing matches the filters",
) -> str:
    """A table as HTML for an ``ipywidgets.HTML``, with a row count when it is cut: no index
    column, numbers on one line, long text (retry advice) wrapping in a wide column, and a
    sideways scroll bar when the table is wider than the dashboard. ``more``: ``frame`` is
    the first rows of a longer table (a drill-down fetched with a limit); ``percent``: more
    columns of fractions to show as percentages (beside ``rate``, ``share`` and the like);
    ``empty``: what to say instead of an empty table."""
    if frame.empty:
        return f"<p><i>{html.escape(empty)}</i></p>"
    shown = _for_display(frame.head(max_rows), tz, percent)
    table = tidy_tables(shown.to_html(index=False, escape=True, border=0))
    note = ""
    if len(frame) > max_rows:
        note = f"<p><i>first {max_rows:,} of {len(frame):,} rows</i></p>"
    elif more:
        note = f"<p><i>first {len(frame):,} rows; export writes every matching row</i></p>"
    return f"<style>{TABLE_CSS}</style>{table}{note}"


def _facets(payments: Any) -> pd.DataFrame:
    """Payments per method, currency, status and bank, with the first and last creation time:
    one small query that gives every filter's choices, the dates and the total."""
    lf = E.lazy(payments)
    small = E.to_pandas(
        lf.group_by(_FACETS, drop_null_keys=False).agg(
            nw.len().alias("n"),
            nw.col("created_at").min().alias("first"),
            nw.col("created_at").max().alias("last"),
        )
    )
    for col in ("first", "last"):  # Spark gives naive UTC, DuckDB aware: both UTC here
        small[col] = pd.to_datetime(small[col], utc=True)
    return small


def _option_values(options: Sequence[Any]) -> list[Any]:
    """A control's choices as values (its options are values or (label, value) pairs)."""
    return [o[1] if isinstance(o, tuple) else o for o in options]


def _as_spelled(values: list[Any], options: list[Any]) -> list[Any]:
    """``values`` as ``options`` spell them, whatever their case, where the options differ by
    more than case (so it cannot mislead): "myr" is MYR, "FAILED" is failed."""
    folded = {str(o).casefold(): o for o in options}
    if len(folded) < len(options):
        return values
    return [folded.get(v.casefold(), v) if isinstance(v, str) else v for v in values]


def _source_tables(
    payments: Any, refunds: Any, *, need_refunds: str | None
) -> tuple[Any, Any, Any]:
    """The tables to show and where they came from: as given (the origin is the payments
    themselves), or lazy scans of the gateway's cache (given a Gateway, or nothing: the
    configured gateway, synced first), whose origin is that :class:`gwtools.Source`.
    ``need_refunds``: the name of a dashboard that cannot do without the refunds."""
    if payments is None or isinstance(payments, Gateway):
        src = open_source(payments)
        return src.payments, src.refunds, src
    if need_refunds and refunds is None:
        raise ConfigurationError(
            f"the {need_refunds} dashboard needs the refunds too: pass {need_refunds}_"
            "dashboard(payments, refunds), both from the same engine, or a Gateway / nothing "
            "for its cache"
        )
    return payments, refunds, payments


def _has_states(origin: Any) -> bool:
    states = getattr(origin, "states", None)
    return isinstance(states, Mapping) and bool(states)


def _newest_first(lf: nw.LazyFrame[Any], columns: list[str]) -> nw.LazyFrame[Any]:
    return lf.select(columns).sort(["created_at", "id"], descending=True, nulls_last=True)


@contextmanager
def _current_files() -> Iterator[None]:
    """Say a cache a sync changed since the dashboard opened (its lazy tables read files
    that are gone), or a part file that cannot be read, as a :class:`gwtools.CacheError` with
    what to do, not DuckDB's own error."""
    try:
        yield
    except Exception as exc:
        # DuckDB's own error, or an analysis' CacheError made of it (which says to scan again:
        # here, opening the dashboard again is what does that).
        for error in (exc, exc.__context__):
            if error is not None and (said := read_error(error, "open the dashboard again")):
                raise said from None
        raise


def figure_png(fig: Figure, dpi: int = 90) -> bytes:
    """A figure's PNG bytes (what the dashboard's image shows)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _link(path: Path) -> str:
    # A path relative to the notebook's directory is what JupyterLab can open.
    try:
        href = path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        href = path.resolve().as_uri()
    name = html.escape(path.name)
    return f'<a href="{html.escape(href)}" target="_blank" download="{name}">{name}</a>'


class Dashboard(widgets.VBox):
    """The shared machinery: filters, a view selector, a chart, a table, a drill-down
    and export buttons. Subclasses declare their ``views`` and drill-down.

    A dashboard over sandbox data says so in its header and on its charts
    (``sandbox_data``): known from a Gateway or Source it was opened on, from pandas tables'
    ``attrs``, or from ``origin=`` (a lazy table cannot carry the label: pass the Gateway,
    Source or the notebooks' ``load_tables`` result it came from; see
    :func:`gwtools.plots.is_sandbox_data`).

    ``since``, ``until``, ``method``, ``currency``, ``status`` and ``bank`` open it on those
    filters (as :meth:`set_filters` takes them); by default it opens on every payment, from
    the first day to the last. Over a large table, open it on the window you want: the first
    refresh then reads only that window. ``chart`` (the view: one of :meth:`views`) and
    ``freq`` (``"day"``, ``"week"``, ``"month"``) open it on that view and period; a value
    it does not offer raises :class:`~gwtools.ConfigurationError` naming the choices.
    """

    title: ClassVar[str] = "Dashboard"
    name: ClassVar[str] = "dashboard"

    def __init__(
        self,
        payments: Any = None,
        refunds: Any = None,
        *,
        tz: str | None = None,
        export_dir: str | os.PathLike[str] | None = None,
        locale: str | None = None,
        max_rows: int = 50,
        now: dt.datetime | pd.Timestamp | str | None = None,
        origin: Any = None,
        since: DateLike = None,
        until: DateLike = None,
        method: Choice = None,
        currency: Choice = None,
        status: Choice = None,
        bank: Choice = None,
        chart: str | None = None,
        freq: str | None = None,
    ) -> None:
        # The arguments first, before any data is read.
        self.tz = resolve_tz(tz)
        views = list(self.views())
        for name, value in (("chart", chart), ("freq", freq)):
            if value is not None and name in self.hidden:
                raise ConfigurationError(
                    f"the {self.name} dashboard has no {name} choice: leave {name} out"
                )
        if chart is not None:
            chart = cast(str, self._choice("chart", views, chart))
        if freq is not None:
            freq = cast(str, self._choice("freq", _FREQS, freq))
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ConfigurationError(
                f"max_rows must be a whole number of at least 1, got {max_rows!r}"
            )
        if export_dir is not None and not isinstance(export_dir, str | os.PathLike):
            raise ConfigurationError(f"export_dir must be a folder's path, got {export_dir!r}")
        if locale is not None:
            resolve_locale(locale)
        if now is not None:
            to_timestamp(now, self.tz)  # a date or time, not a number or a typo
        payments, refunds, found = _source_tables(
            payments, refunds, need_refunds=self.name if self.needs_refunds else None
        )
        where = "(gwtools.read_cache/scan_cache or a Gateway; docs/tables.md lists the columns)"
        self._require(
            payments,
            self.payment_columns,
            "payments first",
            f"pass the payments, then the refunds where asked {where}",
        )
        if refunds is not None:
            self._require(
                refunds,
                self.refund_columns,
                "refunds after the payments",
                f"pass {self.name}_dashboard(payments, refunds) with the refunds of "
                f"{where.strip('()')}",
            )
        #: Whether the data is sandbox data (the header and charts then say so).
        self.sandbox_data = any(is_sandbox_data(o) for o in (origin, found, refunds))
        #: What the cache's last syncs recorded ({resource: its _state.json}), from ``origin=``
        #: or the Source a Gateway or nothing gave; empty for tables from no cache.
        self.states: Mapping[str, Any] = next(
            (o.states for o in (origin, found) if _has_states(o)), {}
        )
        self.payments = self.prepare(payments)
        self.now = pd.Timestamp(now) if now is not None else None
        self.refunds = refunds
        self.locale = locale
        self.max_rows = max_rows
        self.export_dir = Path(export_dir) if export_dir is not None else default_export_dir()
        self.view: Any = self.payments
        self.matched = 0
        self.result: pd.DataFrame = pd.DataFrame()
        self.drilled: pd.DataFrame = pd.DataFrame()
        self.figure: Figure | None = None
        self.exported: list[Path] = []
        self._quiet = False

        facets = _facets(self.payments)
        self.total = int(facets["n"].sum())
        first, last = _local_dates(pd.concat([facets["first"], facets["last"]]), self.tz)
        #: The local days of the first and the newest payment (None when there is none).
        self.first_day, self.last_day = first, last
        layout = widgets.Layout(width="auto")
        self.since = widgets.DatePicker(description="from", value=first, layout=layout)
        self.until = widgets.DatePicker(
            description="to", value=self.opening_until(last), layout=layout
        )
        self.method = self._multi("method", facets["method_type"])
        self.currency = self._multi("currency", facets["currency"])
        self.status = self._multi("status", facets["status"])
        self.banks = _bank_options(facets)
        bank_options = self.banks
        self.bank = widgets.SelectMultiple(
            options=bank_options,
            description="bank",
            rows=4,
            layout=widgets.Layout(width="340px"),
        )
        self.chart = widgets.ToggleButtons(
            options=views, value=chart or views[0], description="show"
        )
        self.freq = widgets.Dropdown(options=_FREQS, value=freq or "week", description="per")
        self.drill = widgets.Dropdown(options=[(_ALL, None)], description="drill into")
        self.summary = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="900px"))
        self.table = widgets.HTML()
        self.drilldown = widgets.HTML()
        # No icon: ipywidgets draws icons with Font Awesome, which Voila loads from a CDN, so
        # offline the buttons would show an empty box. The arrow is plain text in any font.
        self.csv_button = widgets.Button(
            description="\u2193 Export CSV", tooltip="the table and the drill-down rows as CSV"
        )
        self.parquet_button = widgets.Button(
            description="\u2193 Export Parquet",
            tooltip="the table and the drill-down rows as Parquet",
        )
        self.links = widgets.HTML()

        self.filters: dict[str, widgets.ValueWidget] = {
            "since": self.since,
            "until": self.until,
            "method": self.method,
            "currency": self.currency,
            "status": self.status,
            "bank": self.bank,
        }
        #: The other choices :meth:`set_filters` takes: the view, the period, and this
        #: dashboard's own controls (:meth:`controls`).
        self.choices: dict[str, widgets.ValueWidget] = {"chart": self.chart, "freq": self.freq}
        self.choices |= self.controls()
        # Opening on the filters given costs one refresh, not one for the whole table first
        # (over 100M payments, most of the opening time).
        _hide(*(getattr(self, name) for name in self.hidden))
        given = {"since": since, "until": until, "method": method, "currency": currency}
        given |= {"status": status, "bank": bank}
        self._apply_filters({k: v for k, v in given.items() if v is not None})
        for control in [*self.filters.values(), *self.choices.values()]:
            control.observe(self._changed, names="value")
        self.drill.observe(self._drill_changed, names="value")
        self.csv_button.on_click(lambda _: self._export_clicked("csv"))
        self.parquet_button.on_click(lambda _: self._export_clicked("parquet"))

        hint = widgets.HTML("<small>select none to keep all; ctrl/cmd-click for several</small>")
        label = (
            f' <span style="color: {SANDBOX_COLOUR}">\u2014 {html.escape(SANDBOX_NOTE)}</span>'
            if self.sandbox_data
            else ""
        )
        # How current and complete the data is, where a cache says so: the first thing to trust.
        synced = sync_summary(self.states)
        note = f"<small>{html.escape(synced)}</small>" if synced else ""
        self.header = widgets.HTML(f"<h3>{html.escape(self.title)}{label}</h3>{note}")
        super().__init__(
            children=[
                self.header,
                widgets.HBox([self.since, self.until, self.freq]),
                widgets.HBox([self.method, self.currency, self.status, self.bank]),
                hint,
                widgets.HBox([self.chart, *self.controls().values()]),
                self.summary,
                self.image,
                self.table,
                self.drill,
                self.drilldown,
                widgets.HBox([self.csv_button, self.parquet_button, self.links]),
            ]
        )
        self.refresh()

    def _require(self, table: Any, columns: Sequence[str], what: str, then: str) -> None:
        """Refuse a table lacking one of ``columns`` by name, before any query runs."""
        missing = [c for c in columns if c not in E.columns_of(E.lazy(table))]
        if missing:
            raise ConfigurationError(
                f"{type(self).__name__} needs canonical {what} (this table has no "
                f"{', '.join(missing)}): {then}"
            )

    # ----- what subclasses provide -------------------------------------------------
    #: Whether the dashboard needs the refunds table as well.
    needs_refunds: ClassVar[bool] = False
    #: Columns of the payments (and of the refunds) its filters, views and drill-down read:
    #: checked when it opens, so a table lacking one is refused by name before any query,
    #: not met as a KeyError from inside a view.
    payment_columns: ClassVar[tuple[str, ...]] = _PAYMENT_KEYS
    refund_columns: ClassVar[tuple[str, ...]] = ()
    #: Per view, what an empty table of it means when payments do match ("no declines"),
    #: and what the drill-down lists: an empty table never says "nothing matches the
    #: filters" when payments do.
    empty_notes: ClassVar[Mapping[str, str]] = {}
    drill_name: ClassVar[str] = "payments"
    #: The payments it is about (those :meth:`prepare` keeps).
    about: ClassVar[str] = "payments"
    #: Controls this dashboard does not use: hidden, and refused as filters.
    hidden: ClassVar[tuple[str, ...]] = ()
    #: Whether ``from``/``to`` filter the payments (False: the dashboard uses them otherwise,
    #: as the monitor's window, and :meth:`matching` keeps every date).
    dates_filter: ClassVar[bool] = True

    def prepare(self, payments: Any) -> Any:
        """The payments this dashboard is about (a lazy filter; default: all of them)."""
        return payments

    def opening_until(self, last: dt.date | None) -> dt.date | None:
        """The ``to`` day it opens on when none is given: ``last``, the newest payment's."""
        return last

    def views(self) -> dict[str, View]:
        """Named views: each turns the filtered payments into (table, figure)."""
        raise NotImplementedError

    #: Per view, columns of fractions its table shows as percentages, beyond those every
    #: table does (``rate``, ``share``…): a view's own names, which other views use for counts.
    percent_columns: ClassVar[Mapping[str, Collection[str]]] = {}

    def controls(self) -> dict[str, widgets.ValueWidget]:
        """Extra controls of this dashboard, by the keyword :meth:`set_filters` sets them with
        (they refresh it like the filters)."""
        return {}

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        """(label, value) choices of the drill-down, from the table on screen."""
        return []

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        """The rows behind the table (all of them when ``choice`` is None), newest first, as
        a query on the view's engine: the dashboard fetches its first rows, export all."""
        return _newest_first(E.lazy(view), list(E.columns_of(E.lazy(view))))

    # ----- shared machinery --------------------------------------------------------
    def set_filters(self, **values: Any) -> None:
        """Set several filters and refresh once (setting the widgets one by one refreshes
        after each). Keywords: ``since``, ``until`` (dates, ``None`` for no bound), ``method``,
        ``currency``, ``status``, ``bank`` (a value or a list of values, an FPX bank by its
        code or as listed, ``"Maybank2u (MB2U0227)"``; empty for all); ``chart`` (the view), ``freq`` (``"day"``, ``"week"``,
        ``"month"``) and the dashboard's own choices (the refunds dashboard's ``cohort``).
        A value the data or the dashboard does not offer, or ``since`` after ``until``, raises
        :class:`~gwtools.ConfigurationError` naming the choices, and nothing is changed.

        Example: ``dash.set_filters(since="2026-10-01", until="2026-10-31", method="card")``.
        """
        self._apply_filters(values)
        self.refresh()

    def _changed(self, change: Any) -> None:
        if self._quiet:
            return
        try:
            self.refresh(change)
        except GatewayError as exc:  # each says what was wrong and what to do
            # A control's callback error only reaches the browser console: say it on the page.
            self.summary.value = f"<b>cannot show this selection</b>: {html.escape(str(exc))}"

    def _apply_filters(self, values: dict[str, Any]) -> None:
        """Check every given filter and choice value, then set them all without refreshing."""
        controls = {**self.filters, **self.choices}
        unknown = sorted(set(values) - set(controls))
        if unknown:
            shown = [n for n, c in controls.items() if c.layout.display != "none"]
            raise ConfigurationError(
                f"{type(self).__name__} has no filter {', '.join(unknown)}: use {', '.join(shown)}"
            )
        chosen: dict[str, Any] = {}
        for name, value in values.items():
            control = controls[name]
            if control.layout.display == "none":
                kind = "filter" if name in self.filters else "choice"
                raise ConfigurationError(
                    f"the {self.name} dashboard has no {name} {kind}: leave {name} out"
                )
            if name in ("since", "until"):
                chosen[name] = self._day(name, value)
            elif name in self.filters:
                chosen[name] = self._selection(name, control, value)
            else:
                chosen[name] = self._choice(name, control.options, value)
        selection = self._selection_values() | {
            n: v for n, v in chosen.items() if n in self.filters
        }
        self._check_days(selection["since"], selection["until"], given=chosen)
        self._check_selection(selection)
        self._quiet = True
        try:
            for name, value in chosen.items():
                controls[name].value = value
        finally:
            self._quiet = False

    def _selection_values(self) -> dict[str, Any]:
        """Every filter's value as its control holds it."""
        return {name: control.value for name, control in self.filters.items()}

    def _check_days(
        self, first: dt.date | None, last: dt.date | None, *, given: Collection[str] = ()
    ) -> None:
        """Refuse ``since`` after ``until``, with advice that fits where each day came from:
        ``given`` names those just given (none: both were picked on the page)."""
        if first is None or last is None or first <= last:
            return
        if "since" in given and "until" in given:
            message = f"since ({first}) is after until ({last}): swap them"
        elif "since" in given:  # until is the one the dashboard holds (by default the last day)
            newest = ", the newest payment's day" if last == self.last_day else ""
            message = (
                f"since ({first}) is after until ({last}{newest}), which was not given: pick "
                f"a since on or before {last}, or give until as well"
            )
        elif "until" in given:
            oldest = ", the first payment's day" if first == self.first_day else ""
            message = (
                f"until ({last}) is before since ({first}{oldest}), which was not given: pick "
                f"an until on or after {first}, or give since as well"
            )
        else:  # both picked on the page
            message = f"since ({first}) is after until ({last}): swap them, or move one"
        raise ConfigurationError(f"{message} (both days are included)")

    def _check_selection(self, selection: Mapping[str, Any]) -> None:
        """Refuse filter values the dashboard cannot show together (``selection``: every
        filter's value, as about to be set). Nothing here; the monitor checks its window."""

    @classmethod
    def _choice(cls, name: str, options: Sequence[Any], value: Any) -> Any:
        """A single-choice control's value (``options`` as the control holds them: values,
        or (label, value) pairs), any case where the choices differ by more than case."""
        values = _option_values(options)
        value = _as_spelled([value], values)[0]
        if not isinstance(value, Hashable) or value not in values:
            raise ConfigurationError(
                f"{name}={value!r}: the {cls.name} dashboard has no such {name}; "
                f"choose among {values}"
            )
        return value

    def _day(self, name: str, value: DateLike) -> dt.date | None:
        """A ``since``/``until`` value as the local day its date picker holds."""
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            return value
        try:
            stamp = to_timestamp(value, self.tz)
        except ConfigurationError:
            raise ConfigurationError(
                f"{name}={value!r} is not a date: use YYYY-MM-DD, a datetime.date, or None "
                "for no bound"
            ) from None
        if stamp is None:
            return None
        local = stamp.tz_convert(self.tz)
        if local != local.normalize():
            raise ConfigurationError(
                f"{name}={value!r} has a time of day, but the dashboard filters whole local "
                "days: give the date (YYYY-MM-DD); between() takes times"
            )
        return local.date()

    @staticmethod
    def _selection(name: str, control: Any, value: Any) -> tuple[str, ...]:
        """A multi-select's value: a value or several, each one of its choices."""
        if isinstance(value, str):
            values = [value]
        elif isinstance(value, Iterable):
            values = list(value)
        else:
            raise ConfigurationError(
                f"{name}={value!r}: give a value, a list of values, or an empty list for all"
            )
        options = _option_values(control.options)
        # A choice by its label as well (the bank's "Maybank2u (MB2U0227)", which an error
        # lists), any case: the control holds the value.
        labels = {str(o[0]).casefold(): o[1] for o in control.options if isinstance(o, tuple)}
        values = [
            labels.get(v.casefold(), v) if isinstance(v, str) and v not in options else v
            for v in values
        ]
        values = _as_spelled(values, options)
        missing = [v for v in values if v not in options]
        if missing:
            shown = [o[0] if isinstance(o, tuple) else o for o in control.options]
            raise ConfigurationError(
                f"{name}={missing!r}: the payments hold no such {name}"
                + (f"; choose among {shown}" if shown else " (they hold none at all)")
            )
        return tuple(values)

    def _multi(self, description: str, values: pd.Series) -> widgets.SelectMultiple:
        return widgets.SelectMultiple(
            options=_options(values),
            description=description,
            rows=4,
            layout=widgets.Layout(width="240px"),
        )

    def matching(self) -> Any:
        """The payments that pass every filter (an empty selection keeps all; the dates only
        when :attr:`dates_filter`), as a table of the source's kind: for a lazy table, a query
        with the filters, nothing read yet."""
        return self._matching(self._selection_values())

    def _matching(self, selection: Mapping[str, Any], *, dates: bool = True) -> Any:
        """:meth:`matching` for the filter values in ``selection`` (the controls' or not);
        ``dates=False`` leaves the dates out (every filter but ``from``/``to``)."""
        frame = self.payments
        if self.dates_filter and dates:
            frame = between(frame, selection["since"], selection["until"], tz=self.tz)
        selections = {
            "method_type": selection["method"],
            "currency": selection["currency"],
            "status": selection["status"],
            "fpx_bank_code": selection["bank"],
        }
        lf = E.lazy(frame)
        for column, chosen in selections.items():
            if chosen:
                lf = lf.filter(E.truthy(nw.col(column).is_in(list(chosen))))
        return E.native_like(lf, self.payments)

    def refresh(self, change: Any = None) -> None:
        """Recompute the table, chart and drill-down from the current filters. A selection
        it cannot show raises :class:`~gwtools.ConfigurationError` and changes nothing shown
        (a change picked on the page says so in the summary instead)."""
        self._check_days(self.since.value, self.until.value)
        shown = self.view, self.matched
        try:
            with _current_files():
                self.view = self.matching()
                self.matched = count_rows(self.view)
                self.result, figure = self.views()[self.chart.value](self.view)
        except Exception:
            self.view, self.matched = shown  # what the table on screen was made from
            raise
        self.figure = figure
        if figure is None:
            self.image.layout.display = "none"
        else:
            self.image.layout.display = None
            self.image.value = figure_png(figure)
        # Of the payments the dashboard is about (the FPX ones), not of the whole table.
        self.summary.value = f"<b>{self.matched:,}</b> of {self.total:,} {self.about} match"
        self.table.value = to_html(
            self.result,
            self.tz,
            max_rows=self.max_rows,
            percent=self.percent_columns.get(self.chart.value, ()),
            empty=self._empty_note(),
        )
        options = [(_ALL, None), *self.drill_options(self.result)]
        keep = self.drill.value if self.drill.value in [v for _, v in options] else None
        with self.drill.hold_trait_notifications():
            self.drill.options = options
            self.drill.value = keep
        self.update_drilldown()

    def update_drilldown(self, change: Any = None) -> None:
        """Show the first rows behind the selected line of the table (fetched with a limit)."""
        # Half as many rows as the table: the drill-down sits below it, export has them all.
        shown = max(1, self.max_rows // 2)
        with _current_files():
            rows = E.to_pandas(self.drill_query(self.view, self.drill.value).head(shown + 1))
        self.drilled = rows.head(shown)
        empty = self._empty_note()
        if not self.result.empty and self.matched:
            line = "the selected line" if self.drill.value is not None else "this table"
            empty = f"no {self.drill_name} behind {line}"
        self.drilldown.value = to_html(
            self.drilled, self.tz, max_rows=shown, more=len(rows) > shown, empty=empty
        )

    def _drill_changed(self, change: Any) -> None:
        try:
            self.update_drilldown(change)
        except GatewayError as exc:
            # A callback's exception only reaches the browser console: say it on the page.
            self.drilldown.value = f"<b>cannot show these rows</b>: {html.escape(str(exc))}"

    def _empty_note(self) -> str:
        """What an empty table means: no payment passes the filters (and what to do), or
        none of those that do has a row in this view (they are not "nothing")."""
        if not self.total:  # no filter to clear: there is nothing at all
            return f"nothing matches: the table holds no {self.about} at all"
        if not self.matched:
            dates = " or widen the dates" if self.dates_filter else ""  # the monitor's: a window
            return f"nothing matches the filters: no payment passes them; clear a filter{dates}"
        what = self.empty_notes.get(self.chart.value, "no rows in this view for")
        payments = "payment that passes" if self.matched == 1 else "payments that pass"
        return f"nothing matches in this view: {what} the {self.matched:,} {payments} the filters"

    def export(self, fmt: str) -> list[Path]:
        """Write the table on screen and every drill-down row (streamed from the engine in
        batches) as CSV or Parquet into ``export_dir``; show links to the files and return
        their paths."""
        if fmt not in ("csv", "parquet"):
            raise ConfigurationError(f"export format must be 'csv' or 'parquet', got {fmt!r}")
        blocker = _file_in_the_way(self.export_dir)
        if blocker is not None:
            raise ConfigurationError(
                f"cannot export into {self.export_dir}: {blocker} is a file, not a folder; "
                "set export_dir= (or GW_EXPORT_DIR) to a folder, or move the file"
            )
        self.export_dir.mkdir(parents=True, exist_ok=True)
        stamp = pd.Timestamp.now(tz=self.tz).strftime("%Y%m%d-%H%M%S")
        view = str(self.chart.value).replace(" ", "-").replace("/", "-")
        paths = []
        with _current_files():
            rows = self.drill_query(self.view, self.drill.value)
            for part, frame in (("table", self.result), ("rows", rows)):
                path = _unused(self.export_dir / f"{self.name}-{view}-{part}-{stamp}.{fmt}")
                write_table(frame, path, fmt)  # renamed into place: never half-written
                paths.append(path)
        self.exported = paths
        self.links.value = "exported: " + ", ".join(_link(p) for p in paths)
        return paths

    def _export_clicked(self, fmt: str) -> None:
        # A button callback's exception only reaches the browser console: say it on the page.
        try:
            self.export(fmt)
        except (ConfigurationError, CacheError) as exc:
            self.links.value = f"<b>export failed</b>: {html.escape(str(exc))}"
        except OSError as exc:
            self.links.value = (
                f"<b>export failed</b>: {html.escape(exc.strerror or str(exc))} "
                f"({html.escape(str(self.export_dir))}); set export_dir= or GW_EXPORT_DIR"
            )


def _unused(path: Path) -> Path:
    """``path``, or ``-2``, ``-3``… before its suffix when taken: two exports in one second
    are two files, not one overwritten."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_stem(f"{path.stem}-{n}")
    return candidate


def _file_in_the_way(folder: Path) -> Path | None:
    """The file that keeps ``folder`` from being one: itself or its nearest existing parent,
    when that is not a folder (None: it is a folder, or can be made)."""
    for path in (folder, *folder.parents):
        if path.exists():
            return None if path.is_dir() else path
    return None


def _hide(*controls: Any) -> None:
    """Hide controls a dashboard does not use (they keep their empty, keep-all value)."""
    for control in controls:
        control.layout.display = "none"
