"""The data-quality dashboard: "can I trust these numbers?" The rules of
:func:`gwtools.analysis.quality`, each with its count, pass or fail, and the rows a failing
rule's examples name (:func:`quality_examples`, fetched by id from the tables' engine).

Example::

    from gwtools.widgets import quality_dashboard

    quality_dashboard(payments, refunds)
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Final

import narwhals as nw
import pandas as pd

from gwtools import _schema, plots
from gwtools.analysis import _engine as E
from gwtools.analysis import quality
from gwtools.report import refunds_of
from gwtools.widgets._dashboard import Dashboard, View

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
    # Always every column, typed as in the canonical tables: a day with no examples, or with
    # holes only, saves a file that combines with any other day's.
    canonical = {**_schema.columns("refunds"), **_schema.columns("payments")}
    dtypes: dict[str, Any] = {"rule": "string", "example": "string", "table": "string"}
    dtypes |= {c: canonical[c] for c in EXAMPLE_COLUMNS if c != "id"}
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return out.reindex(columns=list(dtypes)).astype(dtypes)


class QualityDashboard(Dashboard):
    """The rules of :func:`gwtools.analysis.quality`: each rule, how many rows break it,
    pass or fail; select a rule to see the rows its examples name.

    The filters choose payments; the rules check those and their refunds, plus refunds whose
    payment is not in the table at all (they belong to no filter)."""

    title = "Data quality: rules"
    name = "quality"
    needs_refunds = True
    hidden = ("freq", "chart")
    payment_columns = (
        *Dashboard.payment_columns, "amount", "captured", "refunded", "refunded_amount", "extra",
    )  # fmt: skip
    refund_columns = ("id", "payment_id", "status", "amount", "currency", "created_at")
    drill_name = "rows of a failing rule"

    def __init__(
        self,
        payments: Any = None,
        refunds: Any = None,
        *,
        completeness: Any = None,
        **kwargs: Any,
    ) -> None:
        self.completeness = completeness
        self.rules: pd.DataFrame = pd.DataFrame()
        super().__init__(payments, refunds, **kwargs)

    def _refunds_of(self, view: Any) -> Any:
        """The refunds of the payments in ``view`` and those whose payment is not cached at
        all (all of them when no filter is set), of the refunds' kind."""
        assert self.refunds is not None
        if self.matched == self.total:
            return self.refunds
        chosen = refunds_of(view, self.refunds)
        orphans = refunds_of(self.payments, self.refunds, orphans=True)
        both = nw.concat([E.lazy(chosen), E.lazy(orphans)], how="vertical")
        return E.native_like(both, self.refunds)

    def _completeness(self) -> Any:
        """``completeness=`` as given, else the states of the cache the tables came from (a
        Gateway's, a Source's, ``load_tables``'): without either the rule is left out."""
        if self.completeness is not None:
            return self.completeness
        return self.states or None

    def _rules(self, view: Any) -> tuple[pd.DataFrame, Any]:
        self.rules = quality(
            view, self._refunds_of(view), completeness=self._completeness(), tz=self.tz
        )
        shown = self.rules.assign(
            result=self.rules["ok"].map({True: "ok", False: "FAIL"}),
            examples=self.rules["examples"].map(", ".join),
        )
        columns = ["result", "rule", "count", "checked", "examples", "description"]
        return shown[columns], plots.quality_rules(self.rules, origin=self)

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


def quality_dashboard(payments: Any = None, refunds: Any = None, **kwargs: Any) -> QualityDashboard:
    """Data-quality dashboard: each rule with its count, pass or fail, and the rows behind a
    selected failing rule, over the canonical payments and refunds (pandas or lazy tables), or
    a Gateway / nothing for the gateway's cache. Keywords: ``completeness`` (as :func:`gwtools.analysis.quality`
    takes it; by default what the cache's last sync said, when the tables came from a Gateway,
    nothing, or ``origin=`` a Source or ``load_tables`` result), ``tz``, ``export_dir``, ``max_rows``; ``since``, ``until``, ``method``,
    ``currency``, ``status``, ``bank`` to open on those filters. Example: ``quality_dashboard(payments, refunds)``."""
    return QualityDashboard(payments, refunds, **kwargs)
