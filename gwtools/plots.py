"""Matplotlib figures of the analysis tables, readable by default.

Each function takes the table an analysis returned and gives back a new
``matplotlib.figure.Figure`` built with the object-oriented API (no pyplot state,
so nothing leaks between calls or into a notebook's other cells). Titles, axis
labels with units, sorted categories and rotated dates come built in.

Each function checks, before it draws, that it was given the table its analysis returns:
another analysis's table (a success rate for a decline rate, FPX counts for shares, a table
split by one column more than the figure has lines for), a lazy or a column-less one is
refused with a :class:`gwtools.ConfigurationError` naming the analysis call to pass instead.

Figures of sandbox data say so ("sandbox data: not real payments" above the chart). An
analysis's result does not remember where its rows came from, so pass ``origin=``: the
canonical table it was computed from, the Gateway or :func:`gwtools.open_source` Source, or
the notebooks' :func:`gwtools.report.load_tables` result. :func:`is_sandbox_data` is the one
test, shared with the dashboards and the report.

Example::

    from gwtools import analysis, plots

    fig = plots.decline_pareto(analysis.decline_breakdown(payments), origin=payments)
    fig.savefig("declines.png")
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, PercentFormatter

from gwtools import ConfigurationError, Gateway
from gwtools._gateway import SANDBOX_DATA
from gwtools.analysis import FPX_OUTCOMES, MONITOR_KINDS, add_rate, resolve_tz
from gwtools.analysis._declines import NO_CODE
from gwtools.analysis._fpx import TEST_BANKS
from gwtools.analysis._rates import OUTCOMES, percent

_SIZE = (9.0, 4.8)
_TYPE_COLOURS = {"soft": "#f0a020", "hard": "#c0392b", "unclassified": "#7f8c8d"}

#: One colour per named series, never reused in a figure (matplotlib's tab10 without its
#: grey, which stands for "other"). A chart shows at most this many named series.
PALETTE: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#bcbd22", "#17becf",
)  # fmt: skip
OTHER_COLOUR = "#7f7f7f"
#: Named series a rate-over-time chart draws by default; the rest are combined as "other".
TOP = 6


#: What figures, dashboards and reports of sandbox data say about it.
SANDBOX_NOTE = f"{SANDBOX_DATA}: not real payments"
#: The colour of that note (the high-severity red: it must not be overlooked).
SANDBOX_COLOUR = "#c0392b"


_Plot = TypeVar("_Plot", bound=Callable[..., Figure])


def _draws(
    made_by: str,
    *needs: str,
    any_of: tuple[str, ...] = (),
    shares: tuple[str, ...] = (),
    rate: tuple[str, str] | None = None,
    not_with: Mapping[str, str] | None = None,
) -> Callable[[_Plot], _Plot]:
    """Check that a plot is given the table ``analysis.<made_by>`` returns, before any figure
    is made: another analysis's table (or a canonical, lazy or column-less one) gets one
    message saying what is wrong with it and what to pass, not a KeyError from inside
    matplotlib code or, worse, a figure of the wrong numbers. The one place a figure
    declares its table:

    ``needs``: the columns it reads; ``any_of``: columns it needs at least one of;
    ``shares``: columns that must hold shares (fractions between 0 and 1), not counts;
    ``rate``: the numerator and denominator the ``rate`` column must be; ``not_with``: columns
    that mark another table, with what that table is. The checks of values pass on an empty
    table, which keeps its "no ... in this selection" figure.
    """

    def decorate(plot: _Plot) -> _Plot:
        name = f"plots.{plot.__name__}"
        advice = f"pass {name}(analysis.{made_by}, origin=...)"

        def refuse(problem: str) -> ConfigurationError:
            return ConfigurationError(
                f"{name} draws the table analysis.{made_by} returns; {problem}: {advice}"
            )

        @functools.wraps(plot)
        def checked(table: Any, *args: Any, **kwargs: Any) -> Figure:
            if not isinstance(table, pd.DataFrame):
                kind = f"{type(table).__module__}.{type(table).__qualname__}"
                raise ConfigurationError(
                    f"{name} draws the small table analysis.{made_by} returns, not a {kind}: "
                    f"{advice}"
                )
            missing = [c for c in needs if c not in table.columns]
            if missing:
                raise refuse(f"this one lacks its {', '.join(missing)}")
            # A table with every column read can still be another one: a column says so.
            for column, other in (not_with or {}).items():
                if column in table.columns:
                    raise refuse(f"this one has {column}: {other}")
            if any_of and not any(c in table.columns for c in any_of):
                raise refuse(f"this one has none of {', '.join(any_of)}")
            counts = [c for c in shares if not _holds_shares(table[c])]
            if counts:
                raise refuse(f"this one's {', '.join(counts)} are counts, not shares (0 to 1)")
            wrong = _wrong_rate(table, *rate) if rate is not None else None
            if wrong:
                raise refuse(f"this one's {wrong}")
            return plot(table, *args, **kwargs)

        return cast(_Plot, checked)

    return decorate


def _holds_shares(values: pd.Series) -> bool:
    """Whether ``values`` are shares: fractions (a count column holds whole numbers) between
    0 and 1, missing ones aside."""
    if not pd.api.types.is_float_dtype(values):
        return False
    known = values.dropna()
    return bool(((known >= 0) & (known <= 1)).all())


def _is_ratio(table: pd.DataFrame, column: str, numerator: str, denominator: str) -> bool:
    """Whether ``column`` is ``numerator / denominator`` wherever the denominator is not 0.
    A success rate's table has the decline rate's columns: only its values tell them apart."""

    def floats(name: str) -> np.ndarray:
        return pd.to_numeric(table[name], errors="coerce").to_numpy(
            dtype="float64", na_value=np.nan
        )

    num, den, got = floats(numerator), floats(denominator), floats(column)
    some = den > 0
    return bool(np.isclose(got[some], num[some] / den[some], equal_nan=True).all())


def _wrong_rate(table: pd.DataFrame, numerator: str, denominator: str) -> str | None:
    """What is wrong with ``table``'s ``rate`` when it is not ``numerator / denominator``
    (None when it is), naming the rate it is when that is the other outcome's."""
    if _is_ratio(table, "rate", numerator, denominator):
        return None
    for other in ("succeeded", "failed"):
        if other != numerator and other in table and _is_ratio(table, "rate", other, denominator):
            return f"rate is {other} / {denominator}, not {numerator} / {denominator}"
    return f"rate is not {numerator} / {denominator}"


#: The columns :func:`gwtools.analysis.decline_rate` and :func:`gwtools.analysis.refund_rate`
#: add: the others, ``period`` aside, are the keys a table is split by (``by=``, currency).
_DECLINE_RATE_VALUES = ("attempts", *OUTCOMES, "n", "rate", "ci_low", "ci_high")
_REFUND_RATE_VALUES = (
    "payments", "refunded_payments", "refunds", "rate", "ci_low", "ci_high",
    "captured_amount", "refunded_amount", "amount_rate",
)  # fmt: skip


def _line_per(
    table: pd.DataFrame,
    plot: str,
    call: str,
    *,
    values: tuple[str, ...],
    group: str | None,
    always: tuple[str, ...] = (),
) -> str | None:
    """The column a rate-over-time figure draws one line per value of: ``group``, else the
    table's only key (None when it has none). A table split by more keys than that is
    refused: its rows would join into one zig-zag line per series.

    ``call``: the analysis call that makes the table, ``{by}`` where a ``by=`` goes;
    ``values``: the columns that analysis adds to its keys; ``always``: keys it always has.
    """
    keys = [str(c) for c in table.columns if c not in values and c != "period"]

    def make(by: str | None) -> str:
        return "analysis." + call.format(by=f", by={by!r}" if by and by not in always else "")

    def remake(by: str, how: str) -> str:
        # Amount bands are per currency, so a table by amount_band is by currency too:
        # asking for by='amount_band' again would bring the same table back.
        if by == "amount_band" and "currency" in keys and table["currency"].nunique() > 1:
            return (
                "amount bands are per currency, so the table holds each band once per "
                "currency: make it of one currency's payments (e.g. "
                "payments[payments['currency'] == 'MYR']), or pass group='currency'"
            )
        return f"{how} {make(by)}"

    if group is None:
        if len(keys) > 1:
            raise ConfigurationError(
                f"plots.{plot} draws one line per value of one column; this table has one row "
                f"per period and {' and '.join(keys)}: pass group= the column to draw (e.g. "
                f"group={keys[-1]!r}), or "
                + remake(keys[-1], "make the table by that column alone, as in")
            )
        group = keys[0] if keys else None
    elif group not in keys:
        split = f"it is split by {', '.join(keys)}" if keys else "it was made without by="
        raise ConfigurationError(
            f"plots.{plot}: group={group!r} is not a column this table is split by ({split}): "
            f"make it with {make(group)}"
        )
    if table.duplicated([*([group] if group else []), "period"]).any():
        per = f"period and {group}" if group else "period"
        others = [k for k in keys if k != group]
        why = f"it is also split by {', '.join(others)}" if others else "rows are repeated"
        raise ConfigurationError(
            f"plots.{plot} draws one line per {group or 'table'}; this table has several rows "
            f"per {per} ({why}), which would join into one zig-zag line: "
            + (remake(group, "make it with") if group else f"make it with {make(group)}")
        )
    return group


def is_sandbox_data(data: Any) -> bool:
    """Whether ``data`` is known to be sandbox data, so that what shows it must say so.

    The one test figures, dashboards and reports use. ``data`` is where a table came from:
    a pandas DataFrame (frames read from the embedded sandbox, or from a cache it filled,
    carry ``attrs["gwtools_source"] == "sandbox data"``), a :class:`gwtools.Gateway`
    (connected to the embedded sandbox), anything with a boolean ``sandbox_data`` (a
    :class:`gwtools.Source`, a report's :class:`~gwtools.report.Tables`, a dashboard), or a
    bool.
    A lazy table (DuckDB, Spark) has nowhere to keep a label: ask the Gateway or Source it
    was scanned from. Anything else, None included, is not known to be sandbox data, so
    real data is never labelled.
    """
    if isinstance(data, bool):
        return data
    if isinstance(data, pd.DataFrame | pd.Series):
        return bool(data.attrs.get("gwtools_source") == SANDBOX_DATA)
    if isinstance(data, Gateway):
        return data.settings.embedded
    flag = getattr(data, "sandbox_data", None)
    return flag if isinstance(flag, bool) else False


def label_sandbox(fig: Figure, *origins: Any) -> Figure:
    """``fig``, with :data:`SANDBOX_NOTE` above it when any of ``origins`` is sandbox data
    (:func:`is_sandbox_data`); real data's figures are left as they are."""
    if any(is_sandbox_data(o) for o in origins):
        fig.suptitle(SANDBOX_NOTE, color=SANDBOX_COLOUR, fontsize="medium", fontweight="bold")
    return fig


class _Figure(Figure):
    """A Figure that Jupyter shows as an image with no ``%matplotlib inline``. Figures here
    are made without pyplot (no global state, no GUI window), so in a kernel that never
    imported pyplot no backend registers a printer for them, and a figure as a cell's last
    expression showed as the text ``<Figure size 900x480 with 1 Axes>``. A printer a backend
    does register takes precedence over this method (IPython asks it first)."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()


def _figure(size: tuple[float, float] = _SIZE) -> tuple[Figure, Axes]:
    fig = _Figure(figsize=size, layout="constrained")
    return fig, fig.add_subplot()


def _empty(ax: Axes, what: str) -> None:
    ax.text(
        0.5, 0.5, f"no {what} in this selection", ha="center", va="center", transform=ax.transAxes
    )
    ax.set_xticks([])
    ax.set_yticks([])


def _percent(share: float) -> str:
    """A share as a whole percentage, with the tables' rule where that would read as none or
    all of them (0.4% is not "0%", 99.6% not "100%")."""
    return str(percent(share, decimals=0))


#: The longest category name a figure draws in full: a longer one (a merchant's free text as
#: by=, a gateway's odd code or bank name) took the whole figure, and matplotlib gave up
#: laying it out.
LABEL_CHARS = 40


def _short(text: str, most: int = LABEL_CHARS) -> str:
    """``text``, or its start and end around an ellipsis when longer than ``most``
    characters (the end kept: it tells apart names that start alike, and holds a bank's
    code)."""
    if len(text) <= most:
        return text
    tail = most // 3
    return f"{text[: most - tail - 1]}\u2026{text[-tail:]}"


def _bank_name(name: Any, code: Any) -> str:
    """``Maybank2u (MB2U0227)``; ``unnamed (…)``, ``… (no code)`` for what the gateway did
    not give, as :func:`gwtools.analysis.fpx_outcome_shares` names banks."""
    return f"{name if pd.notna(name) else 'unnamed'} ({code if pd.notna(code) else 'no code'})"


def _decline_label(row: pd.Series) -> str:
    # The most specific code names a bar; a failure without a decline code (e.g. an FPX
    # processing_error) must not look like the card decline of the same name.
    decline, failure = row.get("decline_code"), row.get("failure_code")
    if decline is not None and pd.notna(decline):
        return _short(str(decline))
    if failure is not None and pd.notna(failure):
        return f"{_short(str(failure))}\n(no decline code)"
    return NO_CODE


#: Up to this many periods, each is ticked at its start: matplotlib's own ticks for a few
#: days, weeks or months fall between them (hours on a chart of days, days on one of months).
_TICK_EACH = 12


def _dates(ax: Axes, periods: pd.Series) -> None:
    """Date ticks for ``periods`` (naive local period starts). A single period gets one tick
    naming its day: matplotlib would widen one date into four years of empty axis; a few
    periods get one tick each, at its start."""
    starts = sorted(pd.Timestamp(s) for s in periods.dropna().unique())
    if len(starts) == 1:
        only = starts[0]
        day = mdates.date2num(only)
        ax.set_xlim(day - 1, day + 1)
        ax.set_xticks([day], [f"{only:%Y-%m-%d}"])
        return
    if 1 < len(starts) <= _TICK_EACH:
        ax.set_xticks(mdates.date2num(starts), [f"{s:%Y-%m-%d}" for s in starts])
        if len(starts) > 6:  # side by side they would overlap
            ax.tick_params(axis="x", labelrotation=30)
            for label in ax.get_xticklabels():
                label.set_horizontalalignment("right")
                label.set_rotation_mode("anchor")
        return
    locator = mdates.AutoDateLocator(maxticks=10)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))


def _check_top(top: int, most: int | None = len(PALETTE)) -> None:
    """``top`` a whole number of series or bars: at least 1, at most ``most`` (the palette's
    colours, when each gets its own)."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ConfigurationError(f"top must be a whole number of at least 1, got {top!r}")
    if most is not None and top > most:
        raise ConfigurationError(
            f"top must be between 1 and {len(PALETTE)} (one distinct colour per series), "
            f"got {top}: pass a smaller top; the other series are combined as 'other'"
        )


def _top_groups(
    table: pd.DataFrame,
    group: str,
    *,
    top: int,
    weight: str,
    ratio: tuple[str, str] | None,
    rate: str,
) -> tuple[list[tuple[str, pd.DataFrame]], str]:
    """The ``top`` largest series of ``table`` by ``weight`` (largest first), then "other":
    the remaining series summed per period into one (``ratio``: the numerator and denominator
    columns that add up), or left out with a note when they cannot be summed (amounts of
    different currencies). Returns the series and the note for the title ("" if none)."""
    keys = table[group].astype("string").fillna("(none)")
    totals = (
        table.assign(_key=keys)
        .groupby("_key", sort=False)[weight]
        .sum()
        .reset_index()
        .sort_values([weight, "_key"], ascending=[False, True], kind="stable")
    )
    names = totals["_key"].tolist()
    kept = names if len(names) <= top else names[:top]
    series = [(name, table[keys == name]) for name in kept]
    rest = names[len(kept) :]
    if not rest:
        return series, ""
    others = table[keys.isin(rest)]
    if ratio is None:
        shown = ", ".join(_short(r) for r in rest[:5])
        shown += f" and {len(rest) - 5} more" if len(rest) > 5 else ""
        return series, f"not shown (smaller): {shown}"
    num, den = ratio
    summed = others.groupby("period", sort=True)[[num, den]].sum().reset_index()
    # An interval only where the table has one: a ratio that can exceed 1 (refunds by refund
    # date against the period's payments) has its columns, all NaN, and no Wilson interval.
    low = f"{rate}_ci_low".removeprefix("rate_")
    interval = low in table.columns and bool(table[low].notna().any())
    combined = add_rate(summed, num, den, name=rate, interval=interval)
    series.append((f"other ({len(rest)})", combined))
    return series, ""


def _rate_over_time(
    table: pd.DataFrame,
    *,
    group: str | None,
    title: str,
    ylabel: str,
    what: str,
    rate: str = "rate",
    weight: str = "n",
    ratio: tuple[str, str] | None = None,
    top: int = TOP,
    note: str = "",
    origin: Any = None,
) -> Figure:
    _check_top(top)
    fig, ax = _figure()
    ax.set_title(title + (f"\n{note}" if note else ""))
    if table.empty or table[rate].isna().all():
        _empty(ax, what)
        return label_sandbox(fig, table, origin)
    tz = getattr(table["period"].dt, "tz", None)
    if group is not None:
        groups, left_out = _top_groups(table, group, top=top, weight=weight, ratio=ratio, rate=rate)
    else:
        groups, left_out = [("", table)], ""
    notes = [n for n in (note, left_out) if n]
    # Beyond a few lines the bands hide each other: draw them for up to three series.
    bands = len(groups) <= 3
    if not bands:
        title = title.replace("band: 95% interval", "bands hidden for > 3 series")
    ax.set_title("\n".join([title, *notes]))
    single = table["period"].nunique() == 1
    for i, (name, part) in enumerate(groups):
        part = part.sort_values("period")
        x = part["period"].dt.tz_localize(None)
        if single:  # one period: the series side by side at its tick, not drawn over each other
            x = x + pd.Timedelta(hours=3 * (i - (len(groups) - 1) / 2))
        colour = OTHER_COLOUR if name.startswith("other (") else PALETTE[i]
        ax.plot(x, part[rate], marker="o", markersize=3, label=_short(name) or None, color=colour)
        lo, hi = f"{rate}_ci_low".removeprefix("rate_"), f"{rate}_ci_high".removeprefix("rate_")
        if bands and lo in part and part[lo].notna().any():
            if len(part) == 1:  # a band over one period has no width: drawn upright
                ax.vlines(x, part[lo], part[hi], color=colour, alpha=0.35, linewidth=6)
            else:
                ax.fill_between(x, part[lo], part[hi], alpha=0.2, color=colour, linewidth=0)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel(ylabel)
    ax.set_xlabel(f"period start ({tz})" if tz is not None else "period start")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    _dates(ax, table["period"].dt.tz_localize(None))
    if group is not None:
        fig.legend(title=group.replace("_", " "), loc="outside right upper", fontsize="small")
    return label_sandbox(fig, table, origin)


def _is_test_bank(table: pd.DataFrame, codes: pd.Series | None = None) -> pd.Series:
    if codes is None and "test_bank" in table.columns:
        return table["test_bank"].fillna(False).astype(bool)
    codes = table["fpx_bank_code"] if codes is None else codes
    return codes.isin(TEST_BANKS).fillna(False).astype(bool)


def _without_test_banks(table: pd.DataFrame, test: pd.Series) -> tuple[pd.DataFrame, str]:
    """The real banks, and a note saying how many test banks were left out; the test banks
    themselves when nothing else is there (a test-mode selection of test banks only)."""
    codes = table.loc[test, "fpx_bank_code"] if "fpx_bank_code" in table else table.index[test]
    count = pd.Series(codes).nunique()
    if table.empty or not test.any():
        return table, ""
    if test.all():
        return table, "the gateway's test banks only (each ends one fixed way)"
    plural = "s" if count != 1 else ""
    return table[~test], f"{count} test bank{plural} not shown (each ends one fixed way)"


# Bars are named by code: a breakdown by another column (by="method_type") has none.
@_draws(
    "decline_breakdown(payments)",
    "count",
    "cumulative_share",
    any_of=("decline_code", "failure_code"),
)
def decline_pareto(breakdown: pd.DataFrame, *, top: int = 15, origin: Any = None) -> Figure:
    """Pareto chart of :func:`gwtools.analysis.decline_breakdown`: bars of failed
    payments per code (most frequent first, coloured soft/hard) and the cumulative share."""
    _check_top(top, most=None)  # bars share two colours: any number of them
    fig, ax = _figure()
    ax.set_title("Declines by code (Pareto)")
    if breakdown.empty:
        _empty(ax, "declines")
        return label_sandbox(fig, breakdown, origin)
    data = breakdown.sort_values("count", ascending=False, kind="stable").head(top)
    if len(breakdown) > top:  # the codes cut off are said, not silently dropped
        ax.set_title(
            f"Declines by code (Pareto): the {top} most frequent of {len(breakdown)} codes"
        )
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
        present = [t for t in _TYPE_COLOURS if t in set(data["decline_type"].astype(str))]
        fig.legend(
            handles=[Patch(color=_TYPE_COLOURS[t], label=t) for t in present],
            title="decline type",
            loc="outside right upper",
            fontsize="small",
        )
    return label_sandbox(fig, breakdown, origin)


@_draws(
    "decline_rate(payments, freq='week')",
    "period",
    "failed",
    "n",
    "rate",
    rate=("failed", "n"),  # not success_rate's table, whose columns are the same
    not_with={"test_bank": "it is analysis.fpx_banks's, which plots.fpx_rate_over_time draws"},
)
def decline_rate_over_time(
    rates: pd.DataFrame, *, group: str | None = None, top: int = TOP, origin: Any = None
) -> Figure:
    """Decline rate per period from :func:`gwtools.analysis.decline_rate` with ``freq``,
    its 95% interval as a band; one line per value of ``group`` (the ``top`` largest by
    decided payments, the rest combined as "other"). A table made with one ``by=`` column
    draws one line per value of it without ``group``; with several, ``group`` names the
    one to draw."""
    # One line per value of the by= column, as refund_rate_over_time draws one per currency:
    # a table with a row per period and method type has no single line to draw.
    group = _line_per(
        rates,
        "decline_rate_over_time",
        "decline_rate(payments{by}, freq='week')",
        values=_DECLINE_RATE_VALUES,
        group=group,
    )
    return _rate_over_time(
        rates,
        group=group,
        title="Decline rate over time (band: 95% interval)",
        ylabel="declined / decided payments (%)",
        what="decided payments",
        weight="n",
        ratio=("failed", "n"),
        top=top,
        origin=origin,
    )


@_draws(
    "refund_rate(payments, refunds, freq='month')",
    "period",
    "currency",
    "payments",
    "rate",
    "amount_rate",
    any_of=("refunded_payments", "refunds"),  # by payment cohort, or by refund date
)
def refund_rate_over_time(
    rates: pd.DataFrame, *, measure: str = "count", top: int = TOP, origin: Any = None
) -> Figure:
    """Refund rate per period from :func:`gwtools.analysis.refund_rate` with ``freq``, one
    line per currency (the ``top`` largest); ``measure="amount"`` plots the refunded share of
    the captured amount. The axis says what the rate divides: refunded payments of a cohort
    (``cohort="payment"``), or the period's refunds against its succeeded payments
    (``cohort="refund"``)."""
    if measure not in ("count", "amount"):
        raise ConfigurationError(f"measure must be 'count' or 'amount', got {measure!r}")
    # One line per currency: a table also split by= another column would zig-zag through it.
    _line_per(
        rates,
        "refund_rate_over_time",
        "refund_rate(payments, refunds{by}, freq='month')",
        values=_REFUND_RATE_VALUES,
        group="currency",
        always=("currency",),
    )
    by_payment = "refunded_payments" in rates.columns
    cohort = "payment cohort" if by_payment else "refund date"
    if measure == "count":
        column = "rate"
        numerator = "refunded_payments" if by_payment else "refunds"
        ratio: tuple[str, str] | None = (numerator, "payments")
        ylabel = (
            "refunded / succeeded payments of the cohort (%)"
            if by_payment
            else "refunds / succeeded payments in the period (%)"
        )
    else:
        # Amounts of different currencies do not add up: smaller currencies are left out.
        column, ratio = "amount_rate", None
        ylabel = (
            "refunded / captured amount of the cohort (%)"
            if by_payment
            else "refunded / captured amount in the period (%)"
        )
    return _rate_over_time(
        rates,
        group="currency",
        title=f"Refund rate by {measure} over time ({cohort})",
        ylabel=ylabel,
        what="succeeded payments",
        rate=column,
        weight="payments",
        ratio=ratio,
        top=top,
        origin=origin,
    )


@_draws(
    "fpx_outcome_shares(payments)",
    *FPX_OUTCOMES,
    "attempts",
    shares=FPX_OUTCOMES,  # the colour scale runs from 0 to 1
    not_with={
        "fpx_bank_code": "it is analysis.fpx_banks's counts, which plots.fpx_success_rates draws",
        "bank": "its banks are a column, not its index (reset_index())",
    },
)
def fpx_outcome_heatmap(shares: pd.DataFrame, *, origin: Any = None) -> Figure:
    """Heatmap of :func:`gwtools.analysis.fpx_outcome_shares`: banks (rows, best first) x
    outcome share, each cell annotated, the attempts behind each row in its label. The
    gateway's test banks are left out (noted in the title) unless they are all there is."""
    codes = shares.index.to_series().astype(str).str.extract(r"\((\w+)\)$", expand=False)
    shares, note = _without_test_banks(shares, _is_test_bank(shares, codes.fillna("")))
    # Outcomes no bank had are noise in the grid; succeeded and failed always show.
    outcomes = [
        c
        for c in FPX_OUTCOMES
        if c in shares.columns and (c in ("succeeded", "failed") or shares[c].fillna(0).any())
    ]
    height = max(3.0, 0.45 * len(shares) + 1.8)
    fig, ax = _figure((9.0, height))
    ax.set_title("FPX outcomes by bank (share of attempts)" + (f"\n{note}" if note else ""))
    if shares.empty:
        _empty(ax, "FPX payments")
        return label_sandbox(fig, shares, origin)
    values = shares[outcomes].to_numpy(dtype="float64")
    image = ax.imshow(values, aspect="auto", cmap="Blues", vmin=0, vmax=1)
    ax.set_xticks(
        range(len(outcomes)), [o.replace("_", " ") for o in outcomes], rotation=30, ha="right"
    )
    rows = [
        f"{_short(str(bank))}  n={int(n):,}"
        for bank, n in zip(shares.index, shares["attempts"], strict=True)
    ]
    ax.set_yticks(range(len(shares)), rows)
    for (i, j), v in np.ndenumerate(values):
        if not np.isnan(v):
            ax.text(
                j,
                i,
                _percent(v),
                ha="center",
                va="center",
                fontsize=8,
                color="white" if v > 0.6 else "black",
            )
    ax.set_xlabel("outcome")
    ax.set_ylabel("bank (attempts)")
    fig.colorbar(image, ax=ax, format=PercentFormatter(1.0), label="share of attempts (%)")
    return label_sandbox(fig, shares, origin)


@_draws(
    "fpx_banks(payments)",
    "fpx_bank_code",
    "fpx_bank",
    "succeeded",
    "n",
    "rate",
    "ci_low",
    "ci_high",
    rate=("succeeded", "n"),
    not_with={
        "period": "one row per bank and period (freq=), which plots.fpx_rate_over_time draws"
    },
)
def fpx_success_rates(banks: pd.DataFrame, *, origin: Any = None) -> Figure:
    """Success rate per bank from :func:`gwtools.analysis.fpx_banks` with 95% interval
    whiskers, in the table's ranking (worst at the top: by the interval's upper end, banks with
    too few finished attempts after the ranked ones, in grey), the finished attempts ``n``
    beside each bank. The gateway's test banks are left out (noted in the title) unless they
    are all there is."""
    data = banks.dropna(subset=["rate"])
    data, note = _without_test_banks(data, _is_test_bank(data))
    # A bank with no finished attempt has no rate to draw: named, not silently missing. Test
    # banks are named only where they are drawn.
    unfinished = banks[banks["rate"].isna()]
    if not data.empty and not _is_test_bank(data).any():
        unfinished = unfinished[~_is_test_bank(unfinished)]
    if not data.empty and not unfinished.empty:
        names = [
            _short(_bank_name(name, code))
            for name, code in zip(unfinished["fpx_bank"], unfinished["fpx_bank_code"], strict=True)
        ]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        note = "\n".join(n for n in (note, f"no finished attempts (not shown): {shown}") if n)
    data = data.iloc[::-1]  # y grows upwards: the first-ranked (worst) bank is drawn on top
    height = max(3.0, 0.4 * len(data) + 1.6)
    fig, ax = _figure((9.0, height))
    ax.set_title(
        "FPX success rate by bank (whiskers: 95% interval)" + (f"\n{note}" if note else "")
    )
    if data.empty:
        _empty(ax, "finished FPX payments")
        return label_sandbox(fig, banks, origin)
    y = np.arange(len(data))
    rate = data["rate"].to_numpy(dtype="float64")
    err = np.vstack(
        [
            rate - data["ci_low"].to_numpy(dtype="float64"),
            data["ci_high"].to_numpy(dtype="float64") - rate,
        ]
    ).clip(min=0.0)  # matplotlib refuses a negative whisker, even a rounding error's
    ranked = (
        data["ranked"].fillna(False).to_numpy(dtype=bool)
        if "ranked" in data
        else np.ones(len(data), dtype=bool)
    )
    for keep, colour in ((ranked, "#2c7fb8"), (~ranked, "#999999")):
        if keep.any():
            ax.errorbar(rate[keep], y[keep], xerr=err[:, keep], fmt="o", capsize=3, color=colour)
    if not ranked.all():  # the grey says why a bank is not ranked, not only that it is grey
        notes = data.loc[~ranked, "rank_note"] if "rank_note" in data else pd.Series()
        why = "; ".join(dict.fromkeys(notes.dropna().astype(str)))
        handles = [
            Line2D([], [], color="#2c7fb8", marker="o", linestyle="", label="ranked"),
            Line2D(
                [], [], color="#999999", marker="o", linestyle="",
                label="not ranked" + (f": {why}" if why else ""),
            ),
        ]  # fmt: skip
        fig.legend(handles=handles[0 if ranked.any() else 1 :], loc="outside lower center")
    labels = [
        f"{_short(_bank_name(name, code))}  n={int(n):,}"
        for name, code, n in zip(data["fpx_bank"], data["fpx_bank_code"], data["n"], strict=True)
    ]
    ax.set_yticks(y, labels)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("succeeded / finished attempts (%)")
    ax.set_ylabel("bank (finished attempts)")
    ax.grid(axis="x", alpha=0.3)
    return label_sandbox(fig, banks, origin)


@_draws(
    "fpx_banks(payments, freq='week')",
    "period",
    "fpx_bank_code",
    "fpx_bank",
    "succeeded",
    "n",
    "rate",
    rate=("succeeded", "n"),
)
def fpx_rate_over_time(
    banks_over_time: pd.DataFrame, *, top: int = TOP, origin: Any = None
) -> Figure:
    """Success rate per bank and period from :func:`gwtools.analysis.fpx_banks` with ``freq``:
    the ``top`` banks by finished attempts, the others combined as "other", each in its own
    colour. The gateway's test banks are left out (noted in the title) unless they are all
    there is."""
    table = banks_over_time.assign(
        bank=banks_over_time["fpx_bank"].fillna(banks_over_time["fpx_bank_code"])
    )
    table, note = _without_test_banks(table, _is_test_bank(table))
    return _rate_over_time(
        table,
        group="bank",
        title="FPX success rate over time (band: 95% interval)",
        ylabel="succeeded / finished attempts (%)",
        what="finished FPX payments",
        weight="n",
        ratio=("succeeded", "n"),
        top=top,
        note=note,
        origin=origin,
    )


@_draws("funnel(payments)", "stage", "reached", "share_of_created", "step_conversion")
def funnel(table: pd.DataFrame, *, origin: Any = None) -> Figure:
    """Horizontal funnel of :func:`gwtools.analysis.funnel`: payments that reached each stage,
    with the share of created payments and the conversion from the stage before."""
    fig, ax = _figure((9.0, 4.0))
    ax.set_title("Payment funnel (payments that reached each stage)")
    if table.empty or int(table["reached"].iloc[0]) == 0:
        _empty(ax, "payments")
        return label_sandbox(fig, table, origin)
    y = np.arange(len(table))[::-1]
    ax.barh(y, table["reached"], color="#2c7fb8")
    ax.set_yticks(y, table["stage"])
    top = float(table["reached"].max())
    for yi, (_, row) in zip(y, table.iterrows(), strict=True):
        text = f"{int(row['reached']):,}  ({_percent(row['share_of_created'])} of created"
        text += (
            f", {_percent(row['step_conversion'])} of previous)"
            if pd.notna(row["step_conversion"])
            else ")"
        )
        ax.text(row["reached"] + top * 0.01, yi, text, va="center", fontsize=8)
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel("payments (count)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    ax.set_ylabel("stage")
    return label_sandbox(fig, table, origin)


#: Alert severities and rule results, each with one colour (red for what needs a look first).
SEVERITY_COLOURS = {"high": "#c0392b", "medium": "#f0a020"}
_PASS_COLOUR = "#2ca02c"
_KIND_NAMES = {
    "decline_spike": "decline spike",
    "card_testing": "card testing",
    "fpx_bank_outage": "FPX bank outage",
    "refund_spike": "refund spike",
}


def _alert_label(alert: pd.Series) -> str:
    """What an alert saw against its baseline, in the words of its kind."""
    kind, obs, exp, n = alert["kind"], alert["observed"], alert["expected"], int(alert["n"])
    if kind == "decline_spike":
        return f"{_percent(obs)} declined vs {_percent(exp)} usual (n={n:,})"
    if kind == "fpx_bank_outage":
        return f"{_percent(obs)} succeeded vs {_percent(exp)} usual (n={n:,})"
    if kind == "card_testing":
        return f"{obs:,.0f} small card attempts vs {exp:.1f} usual"
    if kind == "refund_spike":
        return f"{obs:,.0f} refunds vs {exp:.1f} a day usual"
    return f"{obs:,.2f} vs {exp:,.2f} (n={n:,})"


@_draws(
    "monitor(payments, refunds)",
    "kind",
    "scope",
    "start",
    "end",
    "severity",
    "observed",
    "expected",
    "n",
)
def monitor_timeline(alerts: pd.DataFrame, *, tz: str | None = None, origin: Any = None) -> Figure:
    """The alerts of :func:`gwtools.analysis.monitor` on a timeline: one row per kind and
    scope, a bar from each alert's start to its end coloured by severity (a diamond marks
    alerts too short to see as a bar), labelled with what was observed against the baseline.
    The x axis spans the monitored window (``alerts.attrs["window"]``), in ``tz`` (default:
    the zone of the alerts' times, else UTC)."""
    window = alerts.attrs.get("window") or {}
    # An empty table of the monitor's still has its zone (its columns' dtype): the window
    # is shown in the zone the monitor ran in, not in UTC for want of an alert.
    starts = alerts["start"].dtype
    own = str(starts.tz) if isinstance(starts, pd.DatetimeTZDtype) else "UTC"
    zone = resolve_tz(tz) if tz is not None else own
    rows = alerts[["kind", "scope"]].drop_duplicates()
    rows = rows.assign(_rank=rows["kind"].map({k: i for i, k in enumerate(MONITOR_KINDS)}))
    rows = rows.sort_values(["_rank", "scope"], kind="stable").reset_index(drop=True)
    fig, ax = _figure((9.0, max(2.6, 1.2 + 0.55 * len(rows))))
    span = ""
    if window:
        since = pd.Timestamp(window["since"]).tz_convert(zone)
        until = pd.Timestamp(window["until"]).tz_convert(zone)
        span = f"\n{since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} ({zone})"
    ax.set_title(f"Alerts in the monitored window{span}")
    if alerts.empty:
        _empty(ax, "alerts")
        return label_sandbox(fig, alerts, origin)
    keys = list(zip(rows["kind"], rows["scope"], strict=True))
    y_of = {key: len(rows) - 1 - i for i, key in enumerate(keys)}
    lo = pd.Timestamp(window["since"]) if window else alerts["start"].min()
    hi = pd.Timestamp(window["until"]) if window else alerts["end"].max()
    middle = lo + (hi - lo) / 2
    for _, a in alerts.iterrows():
        y = y_of[(a["kind"], a["scope"])]
        colour = SEVERITY_COLOURS.get(str(a["severity"]), OTHER_COLOUR)
        start, end = mdates.date2num(a["start"]), mdates.date2num(a["end"])
        ax.barh(y, end - start, left=start, height=0.5, color=colour, alpha=0.85)
        ax.plot([start + (end - start) / 2], [y], marker="D", color=colour, markersize=6)
        label = _alert_label(a)
        right = a["start"] < middle
        ax.annotate(
            label,
            (end if right else start, y),
            xytext=(6 if right else -6, 0),
            textcoords="offset points",
            ha="left" if right else "right",
            va="center",
            fontsize=8,
        )
    ax.set_yticks(
        [y_of[k] for k in keys], [f"{_KIND_NAMES.get(k, k)}\n{_short(str(s))}" for k, s in keys]
    )
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlim(mdates.date2num(lo), mdates.date2num(hi))
    locator = mdates.AutoDateLocator(maxticks=10, tz=zone)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, tz=zone))
    ax.set_xlabel(f"local time ({zone})")
    ax.grid(axis="x", alpha=0.3)
    handles = [
        Patch(color=c, label=s) for s, c in SEVERITY_COLOURS.items() if s in set(alerts["severity"])
    ]
    fig.legend(handles=handles, title="severity", loc="outside right upper", fontsize="small")
    return label_sandbox(fig, alerts, origin)


@_draws("quality(payments, refunds)", "rule", "checked", "count", "ok")
def quality_rules(rules: pd.DataFrame, *, origin: Any = None) -> Figure:
    """The rules of :func:`gwtools.analysis.quality` as bars of the rows breaking each (red),
    with the rules that hold marked ok (green) and how many rows each looked at."""
    fig, ax = _figure((9.0, max(2.6, 1.0 + 0.42 * len(rules))))
    failing = int((~rules["ok"].astype(bool)).sum()) if len(rules) else 0
    if not len(rules):
        ax.set_title("Data-quality rules")
    elif failing:
        ax.set_title(f"Data-quality rules: {failing} of {len(rules)} failing")
    elif not rules["checked"].astype("int64").any():
        # Rules over no rows hold vacuously: "all hold" would read as checked and clean.
        ax.set_title(f"Data-quality rules: no rows to check, none of the {len(rules)} was tested")
    else:
        ax.set_title(f"Data-quality rules: all {len(rules)} hold")
    if rules.empty:
        _empty(ax, "rules")
        return label_sandbox(fig, rules, origin)
    y = np.arange(len(rules))[::-1]
    counts = rules["count"].astype("int64").to_numpy()
    colours = [_PASS_COLOUR if ok else SEVERITY_COLOURS["high"] for ok in rules["ok"]]
    ax.barh(y, counts, color=colours)
    top = max(1, int(counts.max()))
    for yi, (_, r) in zip(y, rules.iterrows(), strict=True):
        text = (
            f"ok ({int(r['checked']):,} checked)"
            if r["ok"]
            else f"{int(r['count']):,} of {int(r['checked']):,} break it"
        )
        ax.text(
            int(r["count"]) + top * 0.01,
            yi,
            text,
            va="center",
            fontsize=8,
            color=_PASS_COLOUR if r["ok"] else "black",
        )
    ax.set_yticks(y, rules["rule"].astype(str), fontsize=8)
    ax.set_xlim(0, top * 1.5)
    if failing:
        ax.set_xlabel("rows breaking the rule (count)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    else:  # no bars: a count axis would only show an empty 0 to 1
        ax.set_xticks([])
    return label_sandbox(fig, rules, origin)
