"""The one-screen summary: the figures an analyst reads first."""

from __future__ import annotations

from dataclasses import dataclass, field

import narwhals as nw
import pandas as pd

from gwtools.analysis import _engine as E
from gwtools.analysis._declines import NO_CODE, codes_per_reason, pareto_sort, reason_expr
from gwtools.analysis._fpx import bank_table
from gwtools.analysis._rates import OUTCOMES, add_rate, percent
from gwtools.analysis._refunds import refund_rate


@dataclass(frozen=True)
class Overview:
    """Headline figures of a payments and refunds table; ``str()`` prints them."""

    payments: int
    refunds: int
    success_rate: float
    success_ci: tuple[float, float]
    decided: int
    top_declines: list[tuple[str, int, float]] = field(default_factory=list)
    refund_rate: float = float("nan")
    refund_amount_rate: dict[str, float] = field(default_factory=dict)
    worst_bank: tuple[str, float, int, tuple[float, float]] | None = None

    def __str__(self) -> str:
        lo, hi = self.success_ci
        lines = [f"payments         {self.payments:,} ({self.refunds:,} refunds)"]
        if self.decided:
            lines.append(
                f"success rate     {_pct(self.success_rate)} of {self.decided:,} decided "
                f"(95% CI {_pct(lo)}–{_pct(hi)})"
            )
        else:
            lines.append("success rate     n/a (no decided payment)")
        if self.top_declines:
            codes = ", ".join(f"{c} {n:,} ({_pct(s, 0)})" for c, n, s in self.top_declines)
            lines.append(f"top declines     {codes}")
        amount = ", ".join(f"{cur} {_pct(r)}" for cur, r in self.refund_amount_rate.items())
        if self.refund_rate == self.refund_rate:  # not NaN
            lines.append(
                f"refund rate      {_pct(self.refund_rate)} of succeeded payments"
                + (f"; by amount {amount}" if amount else "")
            )
        else:
            lines.append("refund rate      n/a (no succeeded payment)")
        if self.worst_bank is not None:
            name, rate, n, (blo, bhi) = self.worst_bank
            lines.append(
                f"worst FPX bank   {name}: {_pct(rate)} of {n:,} finished "
                f"(95% CI {_pct(blo)}–{_pct(bhi)})"
            )
        return "\n".join(lines)


def _pct(share: float, decimals: int = 1) -> str:
    """A rate as the reports show it (0.04%, not 0.0%; 99.96%, not 100.0%); n/a if missing."""
    return "n/a" if pd.isna(share) else str(percent(share, decimals))


def overview(
    payments: E.Table, refunds: E.Table, *, top: int = 3, min_attempts: int = 20
) -> Overview:
    """Headline figures: payment count, success rate, top decline reasons, refund rate,
    and the worst FPX bank: the first ranked row of :func:`fpx_banks` (by the upper end of
    its interval, so it is worst even at its best, among banks with at least
    ``min_attempts`` finished payments; test banks never).

    Example: ``overview(payments, refunds)``: the headline figures, before looking closer at
    any of them.
    """
    E.whole_number(top, "top")
    lp, lr = E.lazy_pair(payments, refunds)
    # One scan for the success rate and the decline reasons: payments per outcome and the raw
    # codes, finished in pandas as success_rate and a group-by of classified() would (the
    # reason rule runs on those few groups, not on every payment).
    outcome = nw.col("outcome")
    failed = E.truthy(outcome == "failed")
    raw = E.to_pandas(
        lp.select("outcome", "decline_code", "failure_code")
        .group_by("outcome", "decline_code", "failure_code")
        .agg(nw.len().alias("n"))
    )
    fine = (
        nw.from_native(raw)
        .with_columns(decline_reason=nw.when(failed).then(reason_expr()))
        .to_native()
    )
    per = fine.groupby(["outcome", "decline_reason"], dropna=False, as_index=False)["n"].sum()
    per["n"] = per["n"].astype("int64")
    by_outcome = per.groupby("outcome")["n"].sum()
    counts = pd.DataFrame({o: [int(by_outcome.get(o, 0))] for o in OUTCOMES})
    counts.insert(0, "attempts", int(per["n"].sum()))
    counts["n"] = counts["succeeded"] + counts["failed"]
    rate = add_rate(counts, "succeeded", "n").iloc[0]
    fine = fine[fine["outcome"].eq("failed").fillna(False).astype(bool)]
    reasons = fine.groupby("decline_reason", dropna=False)["n"].sum().reset_index()
    # In decline_breakdown's order (ties too), so both name the same reasons first.
    reasons = reasons.merge(codes_per_reason(fine), on="decline_reason", how="left")
    reasons = pareto_sort(reasons, "n", ["decline_reason"])
    total = max(int(reasons["n"].sum()), 1)
    top_declines = [
        (NO_CODE if pd.isna(c) else str(c), int(n), int(n) / total)
        for c, n in zip(reasons["decline_reason"].head(top), reasons["n"].head(top), strict=True)
    ]
    # The success rate's totals already counted the payments: one scan less.
    sizes = {
        "payments": int(rate["attempts"]),
        "refunds": int(E.to_pandas(lr.select(nw.len().alias("n")))["n"].iloc[0]),
    }
    refund = refund_rate(lp, lr)
    succeeded = int(refund["payments"].sum())
    refunded = int(refund["refunded_payments"].sum())
    amount_rate = {
        str(cur): float(rate)
        for cur, rate in zip(refund["currency"], refund["amount_rate"], strict=True)
        if rate == rate  # not NaN
    }
    # Ranked worst first, by fpx_banks' one rule (its medians are not shown here).
    banks = bank_table(lp, min_attempts=min_attempts, medians=False)
    banks = banks[banks["ranked"]]
    worst = None
    if len(banks):
        b = banks.iloc[0]
        name = f"{b['fpx_bank'] if pd.notna(b['fpx_bank']) else 'unnamed'} ({b['fpx_bank_code']})"
        worst = (name, float(b["rate"]), int(b["n"]), (float(b["ci_low"]), float(b["ci_high"])))
    return Overview(
        payments=sizes["payments"],
        refunds=sizes["refunds"],
        success_rate=float(rate["rate"]),
        success_ci=(float(rate["ci_low"]), float(rate["ci_high"])),
        decided=int(rate["n"]),
        top_declines=top_declines,
        refund_rate=refunded / succeeded if succeeded else float("nan"),
        refund_amount_rate=amount_rate,
        worst_bank=worst,
    )
