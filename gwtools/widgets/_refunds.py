"""The refunds dashboard: refund rate over time (count or amount, payment or refund cohort),
reasons and pending refunds of the selected payments; drill into refunds by status."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import ipywidgets as widgets
import narwhals as nw
import pandas as pd
from matplotlib.figure import Figure

from gwtools import plots
from gwtools.analysis import _engine as E
from gwtools.analysis import pending_refunds, refund_rate, refunds_by_reason
from gwtools.analysis._refunds import details
from gwtools.report import refunds_of
from gwtools.widgets._dashboard import Dashboard, View, _newest_first


class RefundsDashboard(Dashboard):
    """Refund rate over time (count or amount, payment or refund cohort), reasons and
    pending refunds; drill into the refunds of the matching payments by status.

    The filters select payments; the refunds shown are those of the selected payments.
    ``cohort`` (``"payment"``, the default, or ``"refund"``) opens it on that cohort, as
    :meth:`set_filters` sets it."""

    title = "Refunds"
    name = "refunds"

    needs_refunds = True

    def __init__(
        self, payments: Any = None, refunds: Any = None, *, cohort: str = "payment", **kwargs: Any
    ) -> None:
        options = [("by payment date", "payment"), ("by refund date", "refund")]
        self.cohort = widgets.ToggleButtons(
            options=options,
            value=self._choice("cohort", options, cohort),  # checked before any data is read
            description="cohort",
        )
        super().__init__(payments, refunds, **kwargs)

    def controls(self) -> dict[str, widgets.ValueWidget]:
        return {"cohort": self.cohort}

    def _refunds_of(self, view: Any) -> Any:
        """The refunds of the payments in ``view`` (a semi-join in the tables' engine)."""
        return refunds_of(view, self.refunds)

    def _rate(self, view: Any, measure: str) -> tuple[pd.DataFrame, Figure]:
        table = refund_rate(
            view, self._refunds_of(view), freq=self.freq.value, tz=self.tz, cohort=self.cohort.value
        )
        return table, plots.refund_rate_over_time(table, measure=measure, origin=self)

    def views(self) -> dict[str, View]:
        return {
            "rate by count": lambda v: self._rate(v, "count"),
            "rate by amount": lambda v: self._rate(v, "amount"),
            "reasons": lambda v: (refunds_by_reason(self._refunds_of(v), locale=self.locale), None),
            "pending": lambda v: (
                pending_refunds(
                    v, self._refunds_of(v), now=self.now, tz=self.tz, locale=self.locale
                ),
                None,
            ),
        }

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        return [(s, s) for s in ("pending", "succeeded", "failed")]

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        rows = details(view, self._refunds_of(view))
        if choice is not None:
            rows = rows.filter(E.truthy(nw.col("status") == choice))
        columns = [
            "id", "payment_id", "status", "reason", "kind", "method_type", "fpx_bank",
            "currency", "amount_major", "created_at", "days_to_refund",
        ]  # fmt: skip
        return _newest_first(rows, columns)


def refunds_dashboard(payments: Any = None, refunds: Any = None, **kwargs: Any) -> RefundsDashboard:
    """Refunds dashboard over canonical payments and refunds (both on one engine), or a
    Gateway / nothing for the gateway's cache. Keywords as :func:`declines_dashboard`'s, and
    ``cohort`` (``"payment"`` or ``"refund"``)."""
    return RefundsDashboard(payments, refunds, **kwargs)
