"""The declines dashboard: codes (Pareto), the decline rate over time and by method; drill
into a code to see its payments with their retry advice."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import narwhals as nw
import pandas as pd

from gwtools import plots
from gwtools.analysis import _engine as E
from gwtools.analysis import decline_breakdown, decline_rate
from gwtools.analysis._declines import NO_CODE, classified
from gwtools.widgets._dashboard import Dashboard, View, _newest_first


class DeclinesDashboard(Dashboard):
    """Declines by code (Pareto) or the decline rate over time; drill into a code."""

    title = "Declines"
    name = "declines"
    payment_columns = (
        *Dashboard.payment_columns, "outcome", "amount", "amount_major", "card_brand",
        "failure_code", "decline_code",
    )  # fmt: skip
    empty_notes: ClassVar[Mapping[str, str]] = {"codes": "no declines among"}
    drill_name = "failed payments"

    def views(self) -> dict[str, View]:
        return {
            "codes": lambda v: (
                (t := decline_breakdown(v, locale=self.locale)),
                plots.decline_pareto(t, origin=self),
            ),
            "rate over time": lambda v: (
                (t := decline_rate(v, freq=self.freq.value, tz=self.tz)),
                plots.decline_rate_over_time(t, origin=self),
            ),
            "rate by method": lambda v: (decline_rate(v, by=["method_type", "card_brand"]), None),
        }

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        if "decline_reason" in result.columns:
            reasons = result["decline_reason"]
        elif "decline_code" in result.columns:
            reasons = result["decline_code"].fillna(result["failure_code"])
        else:
            return []
        # A row without a reason is drilled into as NO_CODE: None would mean all of them.
        values = [NO_CODE if pd.isna(r) else str(r) for r in reasons.unique()]
        return [(v, v) for v in values]

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        failed = classified(view)
        if choice == NO_CODE:
            failed = failed.filter(nw.col("decline_reason").is_null())
        elif choice is not None:
            failed = failed.filter(E.truthy(nw.col("decline_reason") == choice))
        columns = [
            "id", "created_at", "method_type", "card_brand", "fpx_bank", "currency",
            "amount_major", "failure_code", "decline_code", "decline_type", "advice",
        ]  # fmt: skip
        return _newest_first(failed, columns)


def declines_dashboard(payments: Any = None, **kwargs: Any) -> DeclinesDashboard:
    """Declines dashboard over canonical payments: a lazy table, a Spark or pandas DataFrame,
    or a Gateway / nothing for the gateway's cache (``tz``, ``export_dir``, ``locale``,
    ``max_rows``, ``now`` as keywords; ``since``, ``until``, ``method``, ``currency``,
    ``status``, ``bank`` to open on those filters, ``chart`` and ``freq`` on that view and
    period).

    Example: ``declines_dashboard(gw.scan("payments"), since="2026-10-01", method="card")``."""
    return DeclinesDashboard(payments, **kwargs)
