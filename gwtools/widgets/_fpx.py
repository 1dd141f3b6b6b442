"""The FPX banks dashboard: success rate per bank with intervals, the outcome heatmap and the
rate over time; drill into a bank to see its payments."""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping
from typing import Any, ClassVar

import narwhals as nw
import pandas as pd

from gwtools import plots
from gwtools.analysis import FPX_OUTCOMES, fpx_banks, fpx_outcome_shares
from gwtools.analysis import _engine as E
from gwtools.analysis._fpx import fpx_only
from gwtools.widgets._dashboard import Dashboard, View, _newest_first


class FpxDashboard(Dashboard):
    """FPX banks: success rate with intervals, outcome heatmap, rate over time; drill into a bank."""

    title = "FPX banks"
    name = "fpx"
    payment_columns = (
        *Dashboard.payment_columns, "outcome", "amount_major", "failure_code", "captured_at",
        "updated_at",
    )  # fmt: skip
    drill_name = about = "FPX payments"
    # The outcomes table holds each bank's shares of its attempts (fpx_banks's, counts).
    percent_columns: ClassVar[Mapping[str, Collection[str]]] = {"outcomes": FPX_OUTCOMES}

    def __init__(self, payments: Any = None, **kwargs: Any) -> None:
        super().__init__(payments, **kwargs)

    def prepare(self, payments: Any) -> Any:
        lf = E.lazy(payments).filter(E.truthy(nw.col("method_type") == "fpx"))
        return E.native_like(lf, payments)

    def views(self) -> dict[str, View]:
        return {
            "success by bank": lambda v: (
                (t := fpx_banks(v)),
                plots.fpx_success_rates(t, origin=self),
            ),
            "outcomes": lambda v: (
                (t := fpx_outcome_shares(v)).reset_index(),
                plots.fpx_outcome_heatmap(t, origin=self),
            ),
            "over time": lambda v: (
                (t := fpx_banks(v, freq=self.freq.value, tz=self.tz)),
                plots.fpx_rate_over_time(t, origin=self),
            ),
        }

    def drill_options(self, result: pd.DataFrame) -> list[tuple[str, Hashable]]:
        # The banks in the table on screen (every FPX bank when the table names none). The
        # outcomes table names them "name (code)", in its bank column.
        if "fpx_bank_code" in result.columns:
            codes = result["fpx_bank_code"]
        elif "bank" in result.columns:
            codes = result["bank"].astype("string").str.extract(r"\(([^()]*)\)$", expand=False)
        else:
            return list(self.banks)
        shown = set(codes.dropna().astype(str))
        return [(label, code) for label, code in self.banks if code in shown]

    def drill_query(self, view: Any, choice: Hashable | None) -> nw.LazyFrame[Any]:
        rows = fpx_only(view)
        if choice is not None:
            rows = rows.filter(E.truthy(nw.col("fpx_bank_code") == choice))
        columns = [
            "id", "created_at", "fpx_bank_code", "fpx_bank", "fpx_outcome", "status",
            "failure_code", "currency", "amount_major", "captured_at",
        ]  # fmt: skip
        return _newest_first(rows, columns)


def fpx_dashboard(payments: Any = None, **kwargs: Any) -> FpxDashboard:
    """FPX bank dashboard over canonical payments (card payments are left out), or a
    Gateway / nothing for the gateway's cache. Keywords as :func:`declines_dashboard`'s
    (``bank="MB2U0227"`` opens on one bank)."""
    return FpxDashboard(payments, **kwargs)
