"""Matplotlib figures of the analysis tables, readable by default.

Each function takes the table an analysis returned and gives back a new
``matplotlib.figure.Figure`` built with the object-oriented API (no pyplot state,
so nothing leaks between calls or into a notebook's other cells). Titles, axis
labels with units, sorted categories and rotated dates come built in.

Example::

    from gwtools import analysis, plots

    fig = plots.decline_pareto(analysis.decline_breakdown(payments))
    fig.savefig("declines.png")
"""

from __future__ import annotations

from collections.abc import Iterable

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from gwtools.analysis._fpx import FPX_OUTCOMES

_SIZE = (9.0, 4.8)
_TYPE_COLOURS = {"soft": "#f0a020", "hard": "#c0392b", "unclassified": "#7f8c8d"}


def _figure(size: tuple[float, float] = _SIZE) -> tuple[Figure, Axes]:
    fig = Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def _empty(ax: Axes, what: str) -> None:
    ax.text(
        0.5, 0.5, f"no {what} in this selection", ha="center", va="center", transform=ax.transAxes
    )
    ax.set_xticks([])
    ax.set_yticks([])


def _decline_label(row: pd.Series) -> str:
    # The most specific code names a bar; a failure without a decline code (e.g. an FPX
    # processing_error) must not look like the card decline of the same name.
    decline, failure = row.get("decline_code"), row.get("failure_code")
    if decline is not None and pd.notna(decline):
        return str(decline)
    if failure is not None and pd.notna(failure):
        return f"{failure}\n(no decline code)"
    return "(no code)"


def _dates(ax: Axes) -> None:
    locator = mdates.AutoDateLocator(maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _series_groups(table: pd.DataFrame, group: str | None) -> Iterable[tuple[str, pd.DataFrame]]:
    if group is None or group not in table.columns:
        yield "", table
        return
    for key, part in table.groupby(group, dropna=False, sort=True):
        yield (str(key) if pd.notna(key) else "(none)"), part


def _rate_over_time(
    table: pd.DataFrame,
    *,
    group: str | None,
    title: str,
    ylabel: str,
    what: str,
    rate: str = "rate",
) -> Figure:
    fig, ax = _figure()
    ax.set_title(title)
    if table.empty or table[rate].isna().all():
        _empty(ax, what)
        return fig
    tz = getattr(table["period"].dt, "tz", None)
    groups = list(_series_groups(table, group))
    # Beyond a few lines the bands hide each other: draw them for up to three series.
    bands = len(groups) <= 3
    if not bands:
        ax.set_title(title.replace("band: 95% interval", "bands hidden for > 3 series"))
    for name, part in groups:
        part = part.sort_values("period")
        x = part["period"].dt.tz_localize(None)
        line = ax.plot(x, part[rate], marker="o", markersize=3, label=name or None)[0]
        lo, hi = f"{rate}_ci_low".removeprefix("rate_"), f"{rate}_ci_high".removeprefix("rate_")
        if bands and lo in part and part[lo].notna().any():
            ax.fill_between(x, part[lo], part[hi], alpha=0.2, color=line.get_color(), linewidth=0)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel(ylabel)
    ax.set_xlabel(f"period start ({tz})" if tz is not None else "period start")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _dates(ax)
    if group is not None and group in table.columns:
        fig.legend(title=group.replace("_", " "), loc="outside right upper", fontsize="small")
    return fig


def decline_pareto(breakdown: pd.DataFrame, *, top: int = 15) -> Figure:
    """Pareto chart of :func:`gwtools.analysis.decline_breakdown`: bars of failed
    payments per code (most frequent first, coloured soft/hard) and the cumulative share."""
    fig, ax = _figure()
    ax.set_title("Declines by code (Pareto)")
    if breakdown.empty:
        _empty(ax, "declines")
        return fig
    data = breakdown.sort_values("count", ascending=False, kind="stable").head(top)
    labels = [_decline_label(row) for _, row in data.iterrows()]
    colours = [
        _TYPE_COLOURS.get(str(t), "#34495e")
        for t in data.get("decline_type", ["other"] * len(data))
    ]
    x = np.arange(len(data))
    ax.bar(x, data["count"], color=colours)
    ax.set_xticks(x, labels, rotation=45, ha="right", rotation_mode="anchor", fontsize="small")
    ax.set_ylabel("failed payments (count)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("decline code")
    share = ax.twinx()
    share.plot(x, data["cumulative_share"], color="black", marker="o", markersize=3)
    share.set_ylim(0, 1.05)
    share.yaxis.set_major_formatter(PercentFormatter(1.0))
    share.set_ylabel("cumulative share of declines (%)")
    if "decline_type" in data.columns:
        from matplotlib.patches import Patch

        present = [t for t in _TYPE_COLOURS if t in set(data["decline_type"].astype(str))]
        fig.legend(
            handles=[Patch(color=_TYPE_COLOURS[t], label=t) for t in present],
            title="decline type",
            loc="outside right upper",
            fontsize="small",
        )
    return fig


def decline_rate_over_time(rates: pd.DataFrame, *, group: str | None = None) -> Figure:
    """Decline rate per period from :func:`gwtools.analysis.decline_rate` with ``freq``,
    its 95% interval as a band; one line per value of ``group`` when given."""
    return _rate_over_time(
        rates,
        group=group,
        title="Decline rate over time (band: 95% interval)",
        ylabel="declined / decided payments (%)",
        what="decided payments",
    )


def refund_rate_over_time(rates: pd.DataFrame, *, measure: str = "count") -> Figure:
    """Refund rate per period from :func:`gwtools.analysis.refund_rate` with ``freq``, one
    line per currency; ``measure="amount"`` plots the refunded share of the captured amount."""
    if measure not in ("count", "amount"):
        raise ValueError(f"measure must be 'count' or 'amount', got {measure!r}")
    column = "rate" if measure == "count" else "amount_rate"
    cohort = "payment cohort" if "refunded_payments" in rates.columns else "refund date"
    ylabel = (
        "refunded / succeeded payments (%)"
        if measure == "count"
        else "refunded / captured amount (%)"
    )
    return _rate_over_time(
        rates,
        group="currency",
        title=f"Refund rate by {measure} over time ({cohort})",
        ylabel=ylabel,
        what="succeeded payments",
        rate=column,
    )


def fpx_outcome_heatmap(shares: pd.DataFrame) -> Figure:
    """Heatmap of :func:`gwtools.analysis.fpx_outcome_shares`: banks (rows, best first) x
    outcome share, each cell annotated, the attempts behind each row in its label."""
    # Outcomes no bank had are noise in the grid; succeeded and failed always show.
    outcomes = [
        c
        for c in FPX_OUTCOMES
        if c in shares.columns and (c in ("succeeded", "failed") or shares[c].fillna(0).any())
    ]
    height = max(3.0, 0.45 * len(shares) + 1.8)
    fig, ax = _figure((9.0, height))
    ax.set_title("FPX outcomes by bank (share of attempts)")
    if shares.empty:
        _empty(ax, "FPX payments")
        return fig
    values = shares[outcomes].to_numpy(dtype="float64")
    image = ax.imshow(values, aspect="auto", cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(
        range(len(outcomes)), [o.replace("_", " ") for o in outcomes], rotation=30, ha="right"
    )
    rows = [
        f"{bank}  n={int(n):,}" for bank, n in zip(shares.index, shares["attempts"], strict=True)
    ]
    ax.set_yticks(range(len(shares)), rows)
    for (i, j), v in np.ndenumerate(values):
        if not np.isnan(v):
            ax.text(
                j,
                i,
                f"{v:.0%}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if v > 0.6 else "black",
            )
    ax.set_xlabel("outcome")
    ax.set_ylabel("bank (attempts)")
    fig.colorbar(image, ax=ax, format=PercentFormatter(1.0), label="share of attempts (%)")
    return fig


def fpx_success_rates(banks: pd.DataFrame) -> Figure:
    """Success rate per bank from :func:`gwtools.analysis.fpx_banks` with 95% interval
    whiskers, sorted best to worst, the finished attempts ``n`` beside each bank."""
    data = banks.dropna(subset=["rate"]).sort_values(["rate", "n"], ascending=[True, True])
    height = max(3.0, 0.4 * len(data) + 1.6)
    fig, ax = _figure((9.0, height))
    ax.set_title("FPX success rate by bank (whiskers: 95% interval)")
    if data.empty:
        _empty(ax, "finished FPX payments")
        return fig
    y = np.arange(len(data))
    rate = data["rate"].to_numpy(dtype="float64")
    err = np.vstack(
        [
            rate - data["ci_low"].to_numpy(dtype="float64"),
            data["ci_high"].to_numpy(dtype="float64") - rate,
        ]
    ).clip(min=0.0)  # matplotlib refuses a negative whisker, even a rounding error's
    ax.errorbar(rate, y, xerr=err, fmt="o", capsize=3, color="#2c7fb8")
    labels = [
        f"{name if pd.notna(name) else 'unnamed'} ({code})  n={int(n):,}"
        for name, code, n in zip(data["fpx_bank"], data["fpx_bank_code"], data["n"], strict=True)
    ]
    ax.set_yticks(y, labels)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("succeeded / finished attempts (%)")
    ax.set_ylabel("bank (finished attempts)")
    ax.grid(axis="x", alpha=0.3)
    return fig


def fpx_rate_over_time(banks_over_time: pd.DataFrame) -> Figure:
    """Success rate per bank and period from :func:`gwtools.analysis.fpx_banks` with ``freq``."""
    table = banks_over_time.assign(
        bank=banks_over_time["fpx_bank"].fillna(banks_over_time["fpx_bank_code"])
    )
    return _rate_over_time(
        table,
        group="bank",
        title="FPX success rate over time (band: 95% interval)",
        ylabel="succeeded / finished attempts (%)",
        what="finished FPX payments",
    )


def funnel(table: pd.DataFrame) -> Figure:
    """Horizontal funnel of :func:`gwtools.analysis.funnel`: payments that reached each stage,
    with the share of created payments and the conversion from the stage before."""
    fig, ax = _figure((9.0, 4.0))
    ax.set_title("Payment funnel (payments that reached each stage)")
    if table.empty or int(table["reached"].iloc[0]) == 0:
        _empty(ax, "payments")
        return fig
    y = np.arange(len(table))[::-1]
    ax.barh(y, table["reached"], color="#2c7fb8")
    ax.set_yticks(y, table["stage"])
    top = float(table["reached"].max())
    for yi, (_, row) in zip(y, table.iterrows(), strict=True):
        text = f"{int(row['reached']):,}  ({row['share_of_created']:.0%} of created"
        text += (
            f", {row['step_conversion']:.0%} of previous)"
            if pd.notna(row["step_conversion"])
            else ")"
        )
        ax.text(row["reached"] + top * 0.01, yi, text, va="center", fontsize=8)
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("payments (count)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    ax.set_ylabel("stage")
    return fig
