"""Proportions with honest uncertainty: outcome counts per group and Wilson intervals.

Every rate the toolkit reports carries ``n`` (the count it was computed from) and a
Wilson score interval, so a bank with 3 payments shows a wide band rather than a
trend. The Wilson interval (not the normal approximation) stays inside [0, 1] and
behaves at 0 and n successes, where small groups live.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Sequence
from statistics import NormalDist
from typing import Any, Final, Literal, cast, overload

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools._errors import ConfigurationError
from gwtools.analysis import _engine as E
from gwtools.analysis._money import exponent
from gwtools.analysis._time import check_aware, period_code, period_range, resolve_tz

OUTCOMES: Final = ("succeeded", "failed", "open", "abandoned", "unknown")

#: Default amount bands, in major units of each payment's own currency.
AMOUNT_BANDS: Final = (0, 10, 50, 100, 500, 1_000, 5_000)

By = str | Sequence[str] | None
Denominator = Literal["decided", "finished"]

#: Columns of the analyses' tables that hold fractions (0..1), besides the ``*_rate``,
#: ``*_share`` and ``*_ci_low``/``*_ci_high`` ones :func:`add_rate` names.
_FRACTIONS: Final = frozenset(
    {"rate", "ci_low", "ci_high", "share", "cumulative_share", "amount_rate",
     "share_of_created", "step_conversion"}
)  # fmt: skip


#: The ``attrs`` key of a table whose fractions are not named as such (the FPX outcome
#: shares, one column per outcome): the columns it lists are fractions too.
FRACTION_COLUMNS: Final = "gwtools_fraction_columns"


def is_fraction(column: object, table: pd.DataFrame | None = None) -> bool:
    """Whether an analysis table's ``column`` holds a fraction, which dashboards and reports
    show as a percentage (their saved tables keep the fraction): by its name, or because
    ``table`` lists it in its ``attrs`` (:data:`FRACTION_COLUMNS`)."""
    if table is not None and column in table.attrs.get(FRACTION_COLUMNS, ()):
        return True
    return isinstance(column, str) and (
        column in _FRACTIONS or column.endswith(("_rate", "_share", "_ci_low", "_ci_high"))
    )


def percent(value: Any, decimals: int = 1) -> Any:
    """A fraction as a percentage with ``decimals`` decimals (tables: 1, ``0.625`` ->
    ``62.5%``; charts: 0, ``62%``), never reading as none or all of them when it is not: one
    that would show as 0 keeps ``decimals + 1`` significant digits (``0.04%``, ``0.00001%``,
    written out), one that would show as 100 without being 1 as many decimals as that many
    significant digits of its gap to 100% need (``0.9996`` -> ``99.96%``); a missing value
    stays missing. The one rule of reports, dashboards and figures."""
    if pd.isna(value):
        return value
    pct = float(value) * 100
    digits = decimals + 1
    text = f"{pct:.{decimals}f}"
    if pct != 100 and text == f"{100:.{decimals}f}":
        gap = np.format_float_positional(abs(100 - pct), precision=digits, fractional=False)
        return f"{pct:.{len(gap.partition('.')[2])}f}%"
    if pct != 0 and float(text) == 0:
        # Written out: "g" turns 0.0000018 into 1.8e-06, which reads as 1.8%.
        return f"{np.format_float_positional(pct, precision=digits, fractional=False, trim='-')}%"
    return f"{text}%"


@overload
def wilson_interval(
    successes: float, n: float, confidence: float = 0.95
) -> tuple[float, float]: ...
@overload
def wilson_interval(
    successes: np.ndarray | pd.Series, n: np.ndarray | pd.Series | float, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def wilson_interval(
    successes: float, n: np.ndarray | pd.Series, confidence: float = 0.95
) -> tuple[np.ndarray, np.ndarray]: ...
def wilson_interval(successes: Any, n: Any, confidence: float = 0.95) -> tuple[Any, Any]:
    """Wilson score interval of ``successes / n``; NaN where ``n`` is 0. Arrays (or Series)
    give arrays; two numbers give two floats.

    With p = k/n and z the normal quantile (1.96 for 95%)::

        centre = (p + z²/2n) / (1 + z²/n)
        half   = z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)

    Example: ``wilson_interval(3, 3)`` -> about (0.44, 1.0).
    """
    if not 0 < confidence < 1:
        raise ConfigurationError(f"confidence must be between 0 and 1, got {confidence}")
    k = np.asarray(successes, dtype="float64")
    size = np.asarray(n, dtype="float64")
    if np.any(k < 0) or np.any(k > size):
        raise ConfigurationError("successes must lie between 0 and n")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / size
        denom = 1 + z**2 / size
        centre = (p + z**2 / (2 * size)) / denom
        half = z * np.sqrt(p * (1 - p) / size + z**2 / (4 * size**2)) / denom
        # At k = 0 or k = n the bound equals p in exact arithmetic; rounding can put it a
        # hair on the wrong side, so hold the interval around p explicitly.
        low = np.where(size > 0, np.clip(np.minimum(centre - half, p), 0.0, 1.0), np.nan)
        high = np.where(size > 0, np.clip(np.maximum(centre + half, p), 0.0, 1.0), np.nan)
    if low.ndim == 0:  # two numbers in: two numbers out, not 0-d arrays
        return float(low), float(high)
    return low, high


def add_rate(
    table: E.Table,
    numerator: str,
    denominator: str,
    *,
    name: str = "rate",
    interval: bool = True,
) -> pd.DataFrame:
    """Add ``name`` = numerator / denominator (NaN when 0) and its Wilson ``ci_low``/``ci_high``.

    ``table`` is a table of counts; a lazy one is collected first.

    Example: ``add_rate(outcome_counts(payments, by="currency"), "succeeded", "attempts")``: a
    rate and its interval over counts you grouped yourself.
    """
    if not isinstance(table, pd.DataFrame):
        table = E.to_pandas(table)
    num = table[numerator].astype("float64")
    den = table[denominator].astype("float64")
    out = table.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        out[name] = np.where(den > 0, num / den, np.nan)
    prefix = "" if name == "rate" else f"{name}_"
    if interval:
        low, high = wilson_interval(num.to_numpy(), den.to_numpy())
        out[f"{prefix}ci_low"] = low
        out[f"{prefix}ci_high"] = high
    else:
        out[f"{prefix}ci_low"] = np.nan
        out[f"{prefix}ci_high"] = np.nan
    return cast(pd.DataFrame, out)


def as_list(by: By) -> list[str]:
    """``by`` as a list of column names; a name twice, a non-name or ``period`` (made by
    ``freq=``) is refused."""
    if by is None:
        return []
    keys: list[Any] = [by] if isinstance(by, str) or not isinstance(by, Iterable) else list(by)
    wrong = [k for k in keys if not isinstance(k, str)]
    if wrong:
        raise ConfigurationError(
            f"by={by!r}: name columns as strings, e.g. by='method_type'", param="by"
        )
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ConfigurationError(
            f"by={by!r} names {twice} more than once: name each once", param="by"
        )
    if "period" in keys:
        raise ConfigurationError(
            "by='period': periods come from freq= ('day', 'week' or 'month'), not from by=",
            param="by",
        )
    return keys


def band_labels(edges: Sequence[float] = AMOUNT_BANDS) -> list[str]:
    """The labels of ``edges``' bands, in order: ``"0–10"`` … ``"≥5,000"``."""
    values = list(edges) if isinstance(edges, Sequence) and not isinstance(edges, str) else []
    numeric = all(isinstance(e, numbers.Real) and not isinstance(e, bool) for e in values)
    if not values or not numeric or any(a >= b for a, b in itertools.pairwise(values)):
        raise ConfigurationError(
            f"edges={edges!r}: give amount band edges as increasing numbers in major units, "
            "e.g. (0, 10, 50, 100)",
            param="edges",
        )
    shown = [f"{e:,.0f}" if float(e).is_integer() else f"{e:,}" for e in values]
    labels = [f"{a}–{b}" for a, b in itertools.pairwise(shown)]
    labels.append(f"≥{shown[-1]}")
    return labels


def major_expr(lf: nw.LazyFrame[Any]) -> nw.Expr:
    """``amount_major``, or amount / 10^exponent(currency) where a hand-made table lacks it."""
    currency = nw.col("currency").str.to_uppercase()
    scales = {c: 10.0 ** exponent(c) for c in E.distinct(lf, currency)}
    scale = E.when_map(currency, scales)
    return nw.coalesce(nw.col("amount_major"), nw.col("amount").cast(nw.Float64) / scale)


def band_expr(lf: nw.LazyFrame[Any], edges: Sequence[float] = AMOUNT_BANDS) -> nw.Expr:
    """Each row's amount band label (left-closed), null below the first edge or without amount."""
    major = major_expr(lf)
    labels = band_labels(edges)
    chain: Any = nw.when(E.truthy(major >= edges[-1])).then(nw.lit(labels[-1]))
    for (lo, hi), label in zip(itertools.pairwise(edges), labels, strict=False):
        chain = chain.when(E.truthy((major >= lo) & (major < hi))).then(nw.lit(label))
    result: nw.Expr = chain
    return result


def as_bands(values: pd.Series, edges: Sequence[float] = AMOUNT_BANDS) -> pd.Series:
    """Collected band labels as the ordered categorical ``pd.cut`` gives (bands sort in order)."""
    return pd.Series(
        pd.Categorical(
            values.astype(object).where(values.notna(), None),
            categories=band_labels(edges),
            ordered=True,
        ),
        index=values.index,
        name=values.name,
    )


def column(table: E.Table, expr: nw.Expr, name: str) -> pd.Series:
    """One derived column of ``table`` as a pandas Series: aligned with a pandas table's index,
    in creation order (``created_at``, ``id``) for other engines, which have no row order."""
    lf = E.lazy(table)
    if isinstance(table, pd.DataFrame):
        values = E.to_pandas(lf.select(expr.alias(name)))[name]
        values.index = table.index
        return values
    ordered = lf.with_columns(expr.alias(name)).sort("created_at", "id", nulls_last=True)
    return E.to_pandas(ordered.select(name))[name]


def amount_band(payments: E.Table, edges: Sequence[float] = AMOUNT_BANDS) -> pd.Series:
    """Each payment's amount band in major units of its own currency, e.g. ``"10–50"``.

    Bands are left-closed: 10.00 falls in ``"10–50"``. Compare bands within one
    currency only (group by ``currency`` as well): 50 MYR and 50 JPY are not alike.

    Example: ``payments.groupby(["currency", amount_band(payments)]).size()``: which ticket
    sizes the payments (or declines) fall in.
    """
    lf = E.lazy(payments)
    return as_bands(column(payments, band_expr(lf, edges), "amount_band"), edges)


def lazy_keys(
    frame: E.Table,
    by: By = None,
    freq: str | None = None,
    tz: str | None = None,
    *,
    time_column: str = "created_at",
) -> tuple[nw.LazyFrame[Any], list[str]]:
    """``frame`` as a LazyFrame with derived key columns (``period``, ``amount_band``) and the
    key list. ``period`` is the local bucket start as wall-clock microseconds: :func:`finish_keys`
    turns it into an aware timestamp after collecting.

    ``amount_band`` brings ``currency`` along, since bands are per-currency major units.
    """
    lf = E.lazy(frame)
    keys = as_list(by)
    names = E.columns_of(lf)
    extra: dict[str, nw.Expr] = {}
    zone = None
    if "amount_band" in keys:
        if "amount_band" not in names:  # else already made (e.g. a refund's payment's band)
            extra["amount_band"] = band_expr(lf)
        if "currency" not in keys:
            keys.insert(keys.index("amount_band"), "currency")
    if freq is not None:
        zone = resolve_tz(tz)
        period_code(freq)
        check_aware(lf, time_column)
        keys.append("period")
    elif tz is not None:
        resolve_tz(tz)  # a misspelt zone is refused before it is first used (with freq=)
    missing = [k for k in keys if k not in names and k not in extra and k != "period"]
    if missing:
        raise ConfigurationError(
            f"cannot group by {missing}: not a column of the table"
            f"{E.did_you_mean(missing[0], names)}",
            param="by",
        )
    if extra:
        lf = lf.with_columns(**extra)
    if freq is not None and zone is not None:
        lf = E.with_period(lf, time_column, zone, freq)
    return lf, keys


def finish_keys(table: pd.DataFrame, keys: Sequence[str], tz: str | None) -> pd.DataFrame:
    """A collected table's derived keys in their pandas form: ``period`` an aware local
    timestamp, ``amount_band`` an ordered categorical."""
    out = table.copy()
    if "period" in keys and "period" in out.columns:
        out["period"] = E.finish_period(out["period"], resolve_tz(tz))
    if "amount_band" in keys and "amount_band" in out.columns:
        out["amount_band"] = as_bands(out["amount_band"])
    return out


def sort_keys(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Rows in key order, nulls last (as pandas' group-by orders them)."""
    if not keys or table.empty:
        return table.reset_index(drop=True)
    return table.sort_values(list(keys), na_position="last", kind="stable").reset_index(drop=True)


def complete_periods(
    table: pd.DataFrame, keys: list[str], freq: str | None, tz: str | None
) -> pd.DataFrame:
    """Reindex a table indexed by ``keys`` so every period between the first and last
    appears for every group, with zero counts: a quiet day is a data point, not a gap."""
    if freq is None or table.empty or "period" not in keys:
        return table
    zone = resolve_tz(tz)
    periods = table.index.get_level_values("period")
    full = period_range(periods.min(), periods.max(), freq, zone)
    others = [k for k in keys if k != "period"]
    index: pd.Index
    if not others:
        index = pd.Index(full, name="period")
    else:
        multi = cast(pd.MultiIndex, table.index)
        groups = multi.droplevel("period").unique()
        tuples = [(*(g if isinstance(g, tuple) else (g,)), p) for g in groups for p in full]
        index = pd.MultiIndex.from_tuples(tuples, names=keys)
    return table.reindex(index, fill_value=0)


def outcome_counts(
    payments: E.Table, by: By = None, freq: str | None = None, tz: str | None = None
) -> pd.DataFrame:
    """Payments per group: ``attempts`` and one column per outcome
    (succeeded, failed, open, abandoned, unknown). One row of totals when ``by`` and
    ``freq`` are None; with ``freq``, a ``period`` column (local bucket start) and no gaps.

    Example: ``outcome_counts(payments, by="method_type", freq="week")``: the counts behind a
    rate, to chart or to check.
    """
    lf, keys = lazy_keys(payments, by, freq, tz)
    cols = ["attempts", *OUTCOMES]
    lf = lf.with_columns(**{o: E.flag(nw.col("outcome") == o) for o in OUTCOMES})
    if not keys:
        totals = E.to_pandas(
            lf.select(nw.len().alias("attempts"), *(nw.col(o).sum() for o in OUTCOMES))
        )
        return totals[cols].fillna(0).astype("int64")
    grouped = E.to_pandas(lf.group_by(keys).agg(*(nw.col(o).sum() for o in OUTCOMES)))
    grouped = finish_keys(grouped, keys, tz)
    counts = grouped[list(OUTCOMES)].fillna(0).astype("int64")
    grouped[list(OUTCOMES)] = counts
    grouped.insert(len(keys), "attempts", counts.sum(axis=1).astype("int64"))
    wide = sort_keys(grouped[[*keys, *cols]], keys).set_index(keys)
    wide = complete_periods(wide, keys, freq, tz)
    return wide.astype("int64").reset_index()


def success_rate(
    payments: E.Table,
    by: By = None,
    freq: str | None = None,
    tz: str | None = None,
    *,
    denominator: Denominator = "decided",
) -> pd.DataFrame:
    """Success (authorisation) rate per group with its Wilson 95% interval.

    ``denominator="decided"`` (default): succeeded / (succeeded + failed): the rate at
    which the issuer or bank said yes. Open payments are not decided yet and abandoned
    ones (canceled, expired) never reached a decision, so neither counts against it.
    ``denominator="finished"``: succeeded / every payment no longer open, i.e.
    abandoned ones count as not succeeded (checkout conversion). ``unknown`` statuses
    are in neither. Columns: keys, attempts, outcome counts, ``n``, ``rate``, ``ci_low``,
    ``ci_high``.

    Example: ``success_rate(payments, by="method_type", freq="week", tz="Asia/Kuala_Lumpur")``.
    """
    counts = outcome_counts(payments, by, freq, tz)
    if denominator == "decided":
        counts["n"] = counts["succeeded"] + counts["failed"]
    elif denominator == "finished":
        counts["n"] = counts["succeeded"] + counts["failed"] + counts["abandoned"]
    else:
        raise ConfigurationError(
            f"denominator must be 'decided' or 'finished', got {denominator!r}"
        )
    return add_rate(counts, "succeeded", "n")
