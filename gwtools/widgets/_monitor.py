"""The monitoring dashboard: "is something wrong right now?" The alerts of
:func:`gwtools.analysis.monitor` on a timeline and in a table, with the payments behind each
alert (:func:`alert_payments`).

It builds on :class:`~gwtools.widgets.Dashboard` and takes pandas or lazy tables (DuckDB,
Spark). A lazy table stays lazy: the filters are pushed into its engine, the monitor counts
there, and a drill-down fetches only the rows behind the chosen alert, filtered and limited
in the engine.

Example::

    from gwtools.widgets import monitor_dashboard

    monitor_dashboard(payments, refunds, tz="Asia/Kuala_Lumpur")  # select an alert below
"""

from __future__ import annotations

import html
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar, Final, cast

import narwhals as nw
import pandas as pd

from gwtools import ConfigurationError, plots
from gwtools.analysis import MonitorSettings, monitor, monitored_window
from gwtools.analysis import _engine as E
from gwtools.analysis._monitor import (
    _bounds,
    _utc,
    check_monitor_args,
    check_settings,
    testing_limit,
)
from gwtools.analysis._time import as_utc, to_timestamp
from gwtools.report import count_rows, refunds_of
from gwtools.widgets._dashboard import Dashboard, View

#: Columns of the drill-down rows: the payments behind an alert, refunds of a refund spike.
ALERT_PAYMENT_COLUMNS: Final = (
    "id",
    "created_at",
    "method_type",
    "card_brand",
    "fpx_bank_code",
    "fpx_bank",
    "payment_method_id",
    "currency",
    "amount_major",
    "status",
    "outcome",
    "failure_code",
    "decline_code",
)
ALERT_REFUND_COLUMNS: Final = (
    "id",
    "payment_id",
    "created_at",
    "status",
    "reason",
    "currency",
    "amount_major",
)


def _alert_query(
    payments: Any, refunds: Any, alert: pd.Series, number: int, s: MonitorSettings
) -> nw.LazyFrame[Any]:
    """The rows behind one alert as a query on the tables' engine, oldest first, with its
    ``alert`` number and ``kind``; the columns of both drill-down kinds (nulls where absent)."""
    start, end = pd.Timestamp(alert["start"]), pd.Timestamp(alert["end"])
    kind, scope = str(alert["kind"]), str(alert["scope"])
    ts = nw.col("created_at")
    # [start, end): the next bucket is not this one
    keep = E.truthy(ts >= _utc(start)) & E.truthy(ts < _utc(end))
    if kind == "refund_spike":
        lf = E.lazy(refunds)
    else:
        lf = E.lazy(payments)
        method = "fpx" if kind == "fpx_bank_outage" else "card"
        keep = keep & E.truthy(nw.col("method_type") == method)
        if kind == "card_testing":
            keep = keep & E.truthy(nw.col("amount_major") <= testing_limit(scope, s))
        column, _, value = scope.partition("=")
        if value and column in E.columns_of(lf):
            keep = keep & E.truthy(nw.col(column).cast(nw.String) == value)
    present = E.columns_of(lf)
    own = ALERT_REFUND_COLUMNS if kind == "refund_spike" else ALERT_PAYMENT_COLUMNS
    columns = [
        nw.col(c) if c in own and c in present else nw.lit(None, dtype=nw.String).alias(c)
        for c in _DRILL_COLUMNS
    ]
    lf = lf.filter(keep).select(
        nw.lit(number, dtype=nw.Int64).alias("alert"), nw.lit(kind).alias("kind"), *columns
    )
    return lf.sort("created_at", "id", nulls_last=True)


#: Every column of an alert's drill-down rows (payments' and refunds').
_DRILL_COLUMNS: Final = tuple(dict.fromkeys([*ALERT_PAYMENT_COLUMNS, *ALERT_REFUND_COLUMNS]))


def alert_payments(
    payments: Any,
    refunds: Any,
    alerts: pd.DataFrame | pd.Series,
    *,
    limit: int | None = None,
    settings: MonitorSettings | None = None,
) -> pd.DataFrame:
    """The rows behind alerts of :func:`gwtools.analysis.monitor` (one alert, a row of its
    table, or the whole table), oldest first, with the alert's number (its row in ``alerts``)
    in ``alert``: the payments in the alert's scope created from its ``start`` up to (not
    including) its ``end``; for a refund spike, the refunds created then. ``limit`` keeps the
    first rows of each alert; ``created_at`` is in the zone of the alert's times.

    Scopes: ``card`` (card payments), ``card_brand=…`` (card payments of that brand), card
    testing (card payments of at most the amount its scope names, ``card, amount <= 2``:
    ``settings.small_amount`` when it names none), ``fpx_bank_code=…`` (FPX
    payments at that bank), ``refunds``. Example::

        alerts = analysis.monitor(payments, refunds, tz="Asia/Kuala_Lumpur")
        alert_payments(payments, refunds, alerts, limit=5)
    """
    s = check_settings(settings)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigurationError(
            f"limit must be a whole number of rows per alert, at least 1, or None for all of "
            f"them; got {limit!r}",
            param="limit",
        )
    if not isinstance(alerts, pd.DataFrame | pd.Series):
        raise ConfigurationError(
            f"alerts must be the table analysis.monitor() returns, or a row of it "
            f"(alerts.iloc[0]); got a {type(alerts).__name__}",
            param="alerts",
        )
    table = alerts.to_frame().T if isinstance(alerts, pd.Series) else alerts
    missing = [c for c in ("kind", "scope", "start", "end") if c not in table.columns]
    if missing:
        raise ConfigurationError(
            f"alerts has no {', '.join(missing)}: pass the table analysis.monitor() returns, "
            "or a row of it",
            param="alerts",
        )
    if refunds is None and bool((table["kind"] == "refund_spike").any()):
        raise ConfigurationError(
            "a refund_spike alert's rows are refunds: pass the refunds as well, "
            "alert_payments(payments, refunds, alerts)",
            param="refunds",
        )
    parts = []
    for number, alert in table.iterrows():
        query = _alert_query(payments, refunds, alert, cast(int, number), s)
        if limit is not None:
            query = query.head(limit)  # limited in the engine
        rows = E.to_pandas(query)
        rows = rows[[c for c in rows.columns if c in _own_columns(str(alert["kind"]))]]
        start = pd.Timestamp(alert["start"])
        if start.tzinfo is not None:  # in the alert's own local time, as its start and end are
            rows["created_at"] = rows["created_at"].dt.tz_convert(start.tzinfo)
        rows["alert"] = rows["alert"].astype("int64")
        parts.append(rows)
    columns = ["alert", "kind", *_DRILL_COLUMNS]
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)
    return out[[c for c in columns if c in out.columns]]


def _own_columns(kind: str) -> tuple[str, ...]:
    own = ALERT_REFUND_COLUMNS if kind == "refund_spike" else ALERT_PAYMENT_COLUMNS
    return ("alert", "kind", *own)


class MonitorDashboard(Dashboard):
    """Alerts of :func:`gwtools.analysis.monitor` on a timeline and in a table; select an
    alert to see the payments in its scope and time window.

    ``from``/``to`` choose the monitored window in local days (empty: the ``days`` up to the
    newest row, as ``monitor`` does); the ``baseline_days`` before it are the baseline, whatever
    the dates. The method, currency and bank filters choose the payments the monitors look at
    (the refunds of those payments when one is set). A window that ends before it starts
    (``since`` after ``until``, or after the newest row when ``until`` is empty) raises
    :class:`~gwtools.ConfigurationError` from the constructor and :meth:`set_filters`, with
    nothing changed; picked on the page, the summary says so."""

    title = "Monitoring: alerts"
    name = "monitor"
    dates_filter = False  # from/to choose the window; the baseline lies before it
    hidden = ("status", "freq", "chart")  # a status filter would skew every rate
    payment_columns = (
        *Dashboard.payment_columns, "outcome", "amount", "amount_major", "card_brand",
        "failure_code", "customer_id", "metadata",
    )  # fmt: skip
    refund_columns = ("id", "payment_id", "status", "created_at")
    empty_notes: ClassVar[Mapping[str, str]] = {"alerts": "no alerts in the monitored window for"}
    drill_name = "payments or refunds"

    def __init__(
        self,
        payments: Any = None,
        refunds: Any = None,
        *,
        days: float = 7,
        baseline_days: float = 28,
        settings: MonitorSettings | None = None,
        **kwargs: Any,
    ) -> None:
        self.settings = check_monitor_args(days, baseline_days, settings)
        self.days = days
        self.baseline_days = baseline_days
        self.alerts: pd.DataFrame = pd.DataFrame()
        self._ready = False
        # from/to are the monitored window, by default the monitor's own, not the data's span.
        window = {"since": kwargs.pop("since", None), "until": kwargs.pop("until", None)}
        super().__init__(payments, refunds, **kwargs)
        self.since.description, self.until.description = "window from", "to"
        self.since.style.description_width = "initial"  # the longer label, not cut
        self.drill.layout.width = "640px"  # an alert's label names kind, scope and start
        self._apply_filters(window)
        self._ready = True
        self.refresh()

    def _refunds_of(self, view: Any, matched: int | None = None) -> Any:
        """The refunds of the payments in ``view`` (all of them when no filter is set);
        ``matched``: how many payments ``view`` holds (default: :attr:`matched`)."""
        if self.refunds is None:
            return None
        matched = self.matched if matched is None else matched
        return self.refunds if matched == self.total else refunds_of(view, self.refunds)

    def _check_selection(self, selection: Mapping[str, Any]) -> None:
        """Refuse a ``since`` with no ``until`` that leaves the window empty: the window then
        ends at the newest payment or refund of the selection (as :func:`monitor` ends it),
        and ``since`` is not before it. Only when ``until`` is empty: small queries for the
        newest rows (and a count when a filter is set)."""
        since = selection["since"]
        if since is None or selection["until"] is not None:
            return
        view = self._matching(selection)
        chosen = any(selection[name] for name in ("method", "currency", "status", "bank"))
        matched = count_rows(view) if chosen else self.total
        newest = {
            "payment": _bounds(view)[1],
            "refund": _bounds(self._refunds_of(view, matched))[1],
        }
        stamps = {kind: as_utc(stamp) for kind, stamp in newest.items() if stamp is not None}
        if not stamps:
            return  # nothing to monitor: no alert, no error (as the monitor itself)
        kind = max(stamps, key=lambda k: stamps[k])
        start, end = to_timestamp(since, self.tz), stamps[kind]
        if start is not None and start < end:
            return
        where = " in this selection" if chosen else ""
        relation = "is after" if start is not None and start > end else "starts at"
        raise ConfigurationError(
            f"since ({since}) {relation} the newest {kind}{where} "
            f"({end.tz_convert(self.tz):%Y-%m-%d %H:%M} {self.tz}), where the monitored "
            "window ends when until is not given: pick an earlier since, or give until"
        )

    def _alerts(self, view: Any) -> tuple[pd.DataFrame, Any]:
        self.alerts = monitor(
            view,
            self._refunds_of(view),
            since=self.since.value,  # local days: the window ends with the whole last day
            until=self.until.value,
            days=self.days,
            baseline_days=self.baseline_days,
            tz=self.tz,
            settings=self.settings,
        )
        return self.alerts, plots.monitor_timeline(self.alerts, tz=self.tz, origin=self)

    def views(self) -> dict[str, View]:
        return {"alerts": self._alerts}

    def refresh(self, change: Any = None) -> None:
        if not getattr(self, "_ready", True):
            return  # the base class's first refresh: the window is set up after it
        try:
            super().refresh(change)
        except ConfigurationError:
            # An empty window picked on the page: say it as set_filters would (a browser
            # change is checked only when the monitor refuses it: no query otherwise).
            self._check_selection(self._selection_values())
            raise
        window = monitored_window(self.alerts, self.tz)
        if window:
            self.summary.value += (
                f"; {html.escape(window)}: "
                f"<b>{len(self.alerts)}</b> alert{'s' if len(self.alerts) != 1 else ''}"
            )

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        return [
            (f"{i}: {a['severity']} {a['kind']} {a['scope']}, {a['start']:%Y-%m-%d %H:%M}", i)
            for i, a in zip(range(len(result)), result.to_dict("records"), strict=True)
        ]

    def drill_rows(self, view: Any, choice: Hashable | None) -> pd.DataFrame:
        """The rows behind the selected alert (every alert's when ``choice`` is None)."""
        chosen = self.alerts if choice is None else self.alerts.loc[[choice]]
        return alert_payments(view, self._refunds_of(view), chosen, settings=self.settings)

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        """The rows behind the selected alert (every alert's when ``choice`` is None), as a
        query on the view's engine: the dashboard fetches its first rows, export all."""
        chosen = self.alerts if choice is None else self.alerts.loc[[choice]]
        refunds = self._refunds_of(view)
        queries = [
            _alert_query(view, refunds, alert, cast(int, number), self.settings)
            for number, alert in chosen.iterrows()
        ]
        if not queries:
            empty = pd.DataFrame(columns=["alert", "kind", *_DRILL_COLUMNS])
            return E.lazy(empty)
        return nw.concat(queries, how="vertical").sort("alert", "created_at", "id", nulls_last=True)


def monitor_dashboard(payments: Any = None, refunds: Any = None, **kwargs: Any) -> MonitorDashboard:
    """Monitoring dashboard over the canonical payments (and refunds, for refund spikes), or
    a Gateway / nothing for the gateway's cache: alerts on a timeline and in a table, and the
    payments behind a selected alert. Keywords:
    ``tz``, ``days``, ``baseline_days`` (numbers of days above 0), ``settings``
    (:class:`~gwtools.analysis.MonitorSettings`), ``export_dir``, ``max_rows``;
    ``since``/``until`` (the monitored window's local days, by default the last ``days`` of
    the data; ``since`` alone must come before the newest row), ``method``, ``currency``,
    ``bank`` to open on them. Example: ``monitor_dashboard(payments, refunds, tz="Asia/Kuala_Lumpur")``.
    """
    return MonitorDashboard(payments, refunds, **kwargs)
