"""Dashboards for "is something wrong right now?" and "can I trust these numbers?": the
monitor's alerts on a timeline with the payments behind each alert, and the data-quality rules
with the rows that break them. Exported from :mod:`gwtools.widgets`.

Both build on :class:`gwtools.widgets.Dashboard` (filters, a chart, a table, a drill-down,
export) and take pandas or lazy tables (DuckDB, Spark). A lazy table stays lazy: the filters
are pushed into its engine, the monitor and the rules count there, and a drill-down fetches
only the rows behind the chosen alert or rule, filtered and limited in the engine.

Example::

    from gwtools.widgets import monitor_dashboard, quality_dashboard

    monitor_dashboard(payments, refunds, tz="Asia/Kuala_Lumpur")  # select an alert below
    quality_dashboard(payments, refunds)
"""

from __future__ import annotations

import html
from collections.abc import Hashable, Sequence
from typing import Any, Final, cast

import narwhals as nw
import pandas as pd

from gwtools import plots
from gwtools.analysis import _engine as E
from gwtools.analysis._monitor import MonitorSettings, _utc, monitor
from gwtools.analysis._quality import quality
from gwtools.widgets import Dashboard, View

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
#: Columns of the rows a quality rule's examples name.
EXAMPLE_COLUMNS: Final = (
    "id",
    "payment_id",
    "created_at",
    "status",
    "currency",
    "amount",
    "captured",
    "refunded",
    "refunded_amount",
)
_REFUND_RULES: Final = frozenset(
    {"refund_payment_cached", "refund_currency_matches_payment", "refund_ids_unique"}
)


def _collect(
    table: Any,
    columns: Sequence[str],
    *,
    ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """``table`` as pandas with ``columns`` (those it has), cut in its own engine to ``ids``
    when given (a lazy table is never loaded whole for a drill-down)."""
    lf = E.lazy(table)
    present = E.columns_of(lf)
    if ids is not None:
        lf = lf.filter(E.truthy(nw.col("id").is_in(list(ids))))
    return E.to_pandas(lf.select([c for c in columns if c in present]))


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
            keep = keep & E.truthy(nw.col("amount_major") <= s.small_amount)
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
    testing (card payments of at most ``settings.small_amount``), ``fpx_bank_code=…`` (FPX
    payments at that bank), ``refunds``. Example::

        alerts = analysis.monitor(payments, refunds, tz="Asia/Kuala_Lumpur")
        alert_payments(payments, refunds, alerts, limit=5)
    """
    s = settings or MonitorSettings()
    table = alerts.to_frame().T if isinstance(alerts, pd.Series) else alerts
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


def quality_examples(rules: pd.DataFrame, payments: Any, refunds: Any) -> pd.DataFrame:
    """One row per example of each failing rule of :func:`gwtools.analysis.quality`: the
    rule, the example (an id, or an hour range for ``no_hourly_holes``), which table it is
    in, and that row's fields; every copy of a duplicated id. Empty when every rule holds.
    Example: ``quality_examples(analysis.quality(payments, refunds), payments, refunds)``."""
    failing = rules[~rules["ok"].astype(bool)]
    wanted: dict[str, list[str]] = {"payments": [], "refunds": []}
    for _, rule in failing.iterrows():
        if rule["rule"] in ("no_hourly_holes", "last_sync_complete"):
            continue
        name = "refunds" if rule["rule"] in _REFUND_RULES else "payments"
        wanted[name] += [str(x) for x in rule["examples"]]
    found = {
        name: _collect(table, EXAMPLE_COLUMNS, ids=sorted(set(wanted[name])))
        if wanted[name]
        else pd.DataFrame(columns=["id"])
        for name, table in (("payments", payments), ("refunds", refunds))
    }
    parts = []
    for _, rule in failing.iterrows():
        examples = [str(x) for x in rule["examples"]]
        if rule["rule"] in ("no_hourly_holes", "last_sync_complete"):
            parts.append(pd.DataFrame({"rule": rule["rule"], "example": examples, "table": ""}))
            continue
        name = "refunds" if rule["rule"] in _REFUND_RULES else "payments"
        rows = pd.DataFrame({"example": examples}).merge(
            found[name], left_on="example", right_on="id", how="left"
        )
        parts.append(rows.drop(columns="id").assign(rule=rule["rule"], table=name))
    columns = ["rule", "example", "table", *[c for c in EXAMPLE_COLUMNS if c != "id"]]
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)
    return out[[c for c in columns if c in out.columns]]


def _refunds_of_view(
    refunds: Any, payments: Any, view: Any, everything: bool, *, orphans: bool = False
) -> Any:
    """The refunds of the payments in ``view`` (all of them when ``everything``), with
    ``orphans`` also those whose payment is not in ``payments`` at all; a semi/anti join in
    the tables' engine, of the refunds' kind (lazy stays lazy)."""
    if everything:
        return refunds
    lr, lv = E.lazy_pair(refunds, view)
    ids = lv.select(nw.col("id").alias("payment_id")).unique()
    out = lr.join(ids, on="payment_id", how="semi")
    if orphans:
        _, lp = E.lazy_pair(refunds, payments)
        known = lp.select(nw.col("id").alias("payment_id")).unique()
        out = nw.concat([out, lr.join(known, on="payment_id", how="anti")], how="vertical")
    return E.native_like(out, refunds)


def _hide(*controls: Any) -> None:
    for control in controls:
        control.layout.display = "none"


class MonitorDashboard(Dashboard):
    """Alerts of :func:`gwtools.analysis.monitor` on a timeline and in a table; select an
    alert to see the payments in its scope and time window.

    ``from``/``to`` choose the monitored window in local days (empty: the ``days`` up to the
    newest row, as ``monitor`` does); the ``baseline_days`` before it are the baseline, whatever
    the dates. The method, currency and bank filters choose the payments the monitors look at
    (the refunds of those payments when one is set)."""

    title = "Monitoring: alerts"
    name = "monitor"

    def __init__(
        self,
        payments: Any,
        refunds: Any = None,
        *,
        days: float = 7,
        baseline_days: float = 28,
        settings: MonitorSettings | None = None,
        **kwargs: Any,
    ) -> None:
        self.days = days
        self.baseline_days = baseline_days
        self.settings = settings or MonitorSettings()
        self.alerts: pd.DataFrame = pd.DataFrame()
        self._ready = False
        super().__init__(payments, refunds, **kwargs)
        _hide(self.status, self.freq, self.chart)  # a status filter would skew every rate
        self.since.description, self.until.description = "window from", "to"
        self.since.style.description_width = "initial"  # the longer label, not cut
        self.drill.layout.width = "640px"  # an alert's label names kind, scope and start
        self.since.value = self.until.value = None  # the monitor's own default window
        self._ready = True
        self.refresh()

    def matching(self) -> Any:
        """The payments that pass the method, currency and bank filters (all dates: the
        baseline lies before the window), as a table of the source's kind (lazy stays lazy)."""
        lf = E.lazy(self.payments)
        for column, control in (
            ("method_type", self.method),
            ("currency", self.currency),
            ("fpx_bank_code", self.bank),
        ):
            if control.value:
                lf = lf.filter(E.truthy(nw.col(column).is_in(list(control.value))))
        return E.native_like(lf, self.payments)

    def _refunds_of(self, view: Any) -> Any:
        if self.refunds is None:
            return None
        return _refunds_of_view(self.refunds, self.payments, view, self.matched == self.total)

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
        return self.alerts, plots.monitor_timeline(self.alerts, tz=self.tz)

    def views(self) -> dict[str, View]:
        return {"alerts": self._alerts}

    def refresh(self, change: Any = None) -> None:
        if not getattr(self, "_ready", True):
            return  # the base class's first refresh: the window is set up after it
        try:
            super().refresh(change)
        except ValueError as exc:  # e.g. a window that ends before it starts
            self.summary.value = f"<b>cannot monitor</b>: {html.escape(str(exc))}"
            return
        window = self.alerts.attrs.get("window") or {}
        if window:
            since = pd.Timestamp(window["since"]).tz_convert(self.tz)
            until = pd.Timestamp(window["until"]).tz_convert(self.tz)
            base = pd.Timestamp(window["baseline_from"]).tz_convert(self.tz)
            self.summary.value += (
                f"; monitored window {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M}, baseline "
                f"from {base:%Y-%m-%d %H:%M} ({html.escape(self.tz)}): "
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


class QualityDashboard(Dashboard):
    """The rules of :func:`gwtools.analysis.quality`: each rule, how many rows break it,
    pass or fail; select a rule to see the rows its examples name.

    The filters choose payments; the rules check those and their refunds, plus refunds whose
    payment is not in the table at all (they belong to no filter)."""

    title = "Data quality: rules"
    name = "quality"
    needs_refunds = True

    def __init__(
        self, payments: Any, refunds: Any, *, completeness: Any = None, **kwargs: Any
    ) -> None:
        self.completeness = completeness
        self.rules: pd.DataFrame = pd.DataFrame()
        super().__init__(payments, refunds, **kwargs)
        _hide(self.freq, self.chart)

    def _refunds_of(self, view: Any) -> Any:
        assert self.refunds is not None
        everything = self.matched == self.total
        return _refunds_of_view(self.refunds, self.payments, view, everything, orphans=True)

    def _rules(self, view: Any) -> tuple[pd.DataFrame, Any]:
        self.rules = quality(
            view, self._refunds_of(view), completeness=self.completeness, tz=self.tz
        )
        shown = self.rules.assign(
            result=self.rules["ok"].map({True: "ok", False: "FAIL"}),
            examples=self.rules["examples"].map(", ".join),
        )
        columns = ["result", "rule", "count", "checked", "examples", "description"]
        return shown[columns], plots.quality_rules(self.rules)

    def views(self) -> dict[str, View]:
        return {"rules": self._rules}

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        failing = self.rules[~self.rules["ok"]]
        return [(f"{r['rule']} ({r['count']:,})", str(r["rule"])) for _, r in failing.iterrows()]

    def drill_rows(self, view: Any, choice: Hashable | None) -> pd.DataFrame:
        """The rows the selected rule's examples name (every failing rule's when None): a
        few ids per rule, fetched by id from the engine."""
        rules = self.rules if choice is None else self.rules[self.rules["rule"] == choice]
        return quality_examples(rules, view, self._refunds_of(view))

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        """:meth:`drill_rows` (a few example rows, fetched by id) for the base class."""
        return E.lazy(self.drill_rows(view, choice))


def monitor_dashboard(payments: Any, refunds: Any = None, **kwargs: Any) -> MonitorDashboard:
    """Monitoring dashboard over the canonical payments (and refunds, for refund spikes):
    alerts on a timeline and in a table, and the payments behind a selected alert. Keywords:
    ``tz``, ``days``, ``baseline_days``, ``settings`` (:class:`~gwtools.analysis.MonitorSettings`),
    ``export_dir``, ``max_rows``. Example: ``monitor_dashboard(payments, refunds, tz="Asia/Kuala_Lumpur")``.
    """
    return MonitorDashboard(payments, refunds, **kwargs)


def quality_dashboard(payments: Any, refunds: Any, **kwargs: Any) -> QualityDashboard:
    """Data-quality dashboard: each rule with its count, pass or fail, and the rows behind a
    selected failing rule. Keywords: ``completeness`` (as :func:`gwtools.analysis.quality`
    takes it), ``tz``, ``export_dir``, ``max_rows``. Example: ``quality_dashboard(payments, refunds)``."""
    return QualityDashboard(payments, refunds, **kwargs)


__all__ = [
    "MonitorDashboard",
    "QualityDashboard",
    "alert_payments",
    "monitor_dashboard",
    "quality_dashboard",
    "quality_examples",
]
