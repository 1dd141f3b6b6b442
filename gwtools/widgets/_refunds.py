"""The refunds dashboard: refund rate over time (count or amount, payment or refund cohort),
reasons and pending refunds of the selected payments; drill into refunds by status."""

from __future__ import annotations

import datetime as dt
from collections.abc import Hashable, Mapping
from typing import Any, ClassVar

import ipywidgets as widgets
import narwhals as nw
import pandas as pd
from matplotlib.figure import Figure

from gwtools import plots
from gwtools.analysis import _engine as E
from gwtools.analysis import between, pending_refunds, refund_rate, refunds_by_reason
from gwtools.analysis._refunds import details
from gwtools.report import refunds_of
from gwtools.widgets._dashboard import Dashboard, View, _local_dates, _newest_first


class RefundsDashboard(Dashboard):
    """Refund rate over time (count or amount, payment or refund cohort), reasons and
    pending refunds; drill into the refunds of the matching payments by status.

    By payment date (``cohort="payment"``, the default) the filters select payments and the
    refunds shown are those of the selected payments, whenever they were made. By refund date
    (``cohort="refund"``) ``from``/``to`` select the refunds made on those days, whichever
    day their payment was made (the report's ``Tables.refunds_made``), against the payments
    that succeeded on them; the other filters (method, currency, status, bank) still select
    the refunds through their payments. The rate then equals
    ``analysis.refund_rate(between(payments, ...), between(refunds, ...), cohort="refund")``.
    Given no ``until``, it opens on the newest payment's or refund's day, whichever is later.
    ``cohort`` opens it on that cohort, as :meth:`set_filters` sets it."""

    title = "Refunds"
    name = "refunds"

    needs_refunds = True
    payment_columns = (*Dashboard.payment_columns, "outcome", "amount", "card_brand", "captured_at")
    refund_columns = (
        "id", "payment_id", "status", "reason", "amount", "currency", "amount_major", "created_at",
    )  # fmt: skip
    empty_notes: ClassVar[Mapping[str, str]] = {
        "rate by count": "no succeeded payments among",
        "rate by amount": "no succeeded payments among",
        "reasons": "no refunds of",
        "pending": "no pending refunds of",
    }
    drill_name = "refunds"

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

    def opening_until(self, last: dt.date | None) -> dt.date | None:
        """The newest payment's or refund's day, whichever is later: by refund date the days
        choose refunds, and it opens on all of them (no payment is later: by payment date
        nothing changes)."""
        newest = E.to_pandas(E.lazy(self.refunds).select(nw.col("created_at").max()))
        # Spark gives naive UTC, DuckDB aware: UTC here, as the payments' days
        stamps = pd.to_datetime(newest["created_at"], utc=True)
        days = [d for d in (last, _local_dates(stamps, self.tz)[1]) if d is not None]
        return max(days, default=None)

    def _by_refund_date(self) -> bool:
        return bool(self.cohort.value == "refund")

    def _payments_of(self, view: Any) -> Any:
        """The payments the refunds shown belong to: ``view``, or by refund date those every
        filter but the dates selects (a refund made in the window may be of an older payment)."""
        if not self._by_refund_date():
            return view
        return self._matching(self._selection_values(), dates=False)

    def _refunds_of(self, view: Any, *, made: bool = True) -> Any:
        """The refunds the views count, of the tables' kind (lazy stays lazy): those of the
        payments in ``view`` (a semi-join in the tables' engine), or by refund date those
        made on the chosen days (``made=False``: on any day) of the payments the other
        filters select; with no other filter, every refund (as ``analysis.refund_rate``
        counts them, a refund whose payment is not cached included)."""
        if not self._by_refund_date():
            return refunds_of(view, self.refunds)
        selection = self._selection_values()
        refunds = self.refunds
        if made:
            refunds = between(refunds, selection["since"], selection["until"], tz=self.tz)
        if any(v for name, v in selection.items() if name not in ("since", "until")):
            refunds = refunds_of(self._payments_of(view), refunds)
        return refunds

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
                    self._payments_of(v),
                    self._refunds_of(v),
                    now=self.now,
                    tz=self.tz,
                    locale=self.locale,
                ),
                None,
            ),
        }

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        return [(s, s) for s in ("pending", "succeeded", "failed")]

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        refunds = self._refunds_of(view)
        if self._by_refund_date():
            # The refunds made on the chosen days, each with the kind (full or partial) that
            # all its payment's refunds make, those made on other days included.
            every = self._refunds_of(view, made=False)
            rows = details(self._payments_of(view), every).join(
                E.lazy(refunds).select("id"), on="id", how="semi"
            )
        else:
            rows = details(view, refunds)
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
