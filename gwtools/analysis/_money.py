"""Money in major units, per currency, formatted by Babel.

Amounts are never added across currencies: every total here is kept per currency,
as numeric ``amount_<CUR>`` columns (major units) plus one ``amount`` text column
that Babel formats for people, e.g. ``RM1,234.50; JP¥5,000``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Any

import pandas as pd
from babel import Locale, UnknownLocaleError
from babel.numbers import format_currency, get_currency_precision

from gwtools._errors import ConfigurationError

DEFAULT_LOCALE = "en_MY"


def resolve_locale(locale: str | None = None) -> str:
    """``locale``, else ``GW_LOCALE``, else ``en_MY`` (``RM1,234.50``); one Babel does not
    know is refused."""
    name = locale or os.environ.get("GW_LOCALE") or DEFAULT_LOCALE
    if not _known_locale(name):
        source = "locale=" if locale else "GW_LOCALE="
        raise ConfigurationError(
            f"unknown locale {source}{name!r}: use a name such as 'en_MY', 'ms_MY' or 'en_US'",
            param="locale",
        )
    return name


@functools.lru_cache(maxsize=64)
def _known_locale(name: Any) -> bool:
    """Whether Babel knows ``name`` (asked once per name: money is formatted row by row)."""
    try:
        Locale.parse(name)
    except (ValueError, TypeError, UnknownLocaleError):
        return False
    return True


def exponent(currency: str) -> int:
    """Digits after the decimal point of ``currency`` (Babel's table): MYR 2, JPY 0, BHD 3.

    Example: ``exponent("JPY")`` is 0: how many minor units a currency's amounts carry.
    """
    return int(get_currency_precision(currency.upper()))


def minor_per_major(currency: Any) -> float:
    """``10 ** exponent(currency)``: 100.0 for MYR, 1.0 for JPY; NaN for a missing currency
    (a group key of rows with none), so their major amounts are NaN, not an error."""
    if currency is None or pd.isna(currency):
        return float("nan")
    return 10.0 ** exponent(str(currency))


def to_major(amount: pd.Series, currency: pd.Series) -> pd.Series:
    """Minor units (``Int64``) to major units (``float64``), currency by currency.

    Example: ``to_major(payments.amount, payments.currency)``: amounts as people write them
    (1500 MYR minor units is 15.0).
    """
    codes = currency.astype("string").str.upper()
    # One Babel lookup per distinct currency, not per row.
    scales = {c: 10.0 ** exponent(c) for c in codes.dropna().unique()}
    scale = codes.map(scales).astype("Float64")
    return (amount.astype("Float64") / scale).astype("float64")


def format_money(value: float | None, currency: str | None, locale: str | None = None) -> str:
    """``1234.5, "MYR"`` -> ``"RM1,234.50"``; an empty string for a missing value.

    Example: ``format_money(1234.5, "MYR")``: an amount for a label or a message.
    """
    if value is None or currency is None or pd.isna(value) or pd.isna(currency):
        return ""
    return str(format_currency(value, currency.upper(), locale=resolve_locale(locale)))


def refuse_summed_key(keys: Sequence[str], minor: str, param: str) -> None:
    """Refuse a group key that is the ``minor`` amount column a table sums per currency (its
    sum would take the key's name)."""
    if minor in keys:
        raise ConfigurationError(
            f"cannot group by {minor!r}: it is the amount summed per currency; group amounts "
            f"into bands first (frame.assign(band=analysis.amount_band(frame)), by='band') "
            "or group by another column",
            param=param,
        )


def totals_by_currency(
    frame: Any,
    keys: Sequence[str],
    *,
    minor: str = "amount",
    prefix: str = "amount",
    locale: str | None = None,
    currency: str = "currency",
) -> pd.DataFrame:
    """Per group of ``keys``: one ``<prefix>_<CUR>`` column (major units) per currency and a
    formatted ``<prefix>`` column listing the non-zero totals.

    Sums run on the integer minor units in the table's engine, then convert once, so no
    float drift. ``frame`` is any table an analysis takes (pandas, lazy DuckDB, Spark), or
    sums already grouped finer than ``keys`` (``currency`` names its currency column).

    Example: ``totals_by_currency(payments, ["status"])``: amounts per group without adding up
    different currencies.
    """
    import narwhals as nw

    from gwtools.analysis._engine import columns_of, did_you_mean, lazy, to_pandas

    keys = [keys] if isinstance(keys, str) else list(keys or ())
    refuse_summed_key(keys, minor, "keys")
    lf = lazy(frame)
    missing = [c for c in dict.fromkeys([*keys, minor, currency]) if c not in columns_of(lf)]
    if missing or not keys:
        raise ConfigurationError(
            f"totals_by_currency needs group keys and the table's columns: {missing or keys} "
            f"{'are not columns of the table' if missing else 'names no key'}; e.g. "
            "totals_by_currency(payments, ['method_type'])"
            f"{did_you_mean(missing[0], columns_of(lf)) if missing else ''}",
            param="keys",
        )
    lf = lf.with_columns(_cur=nw.col(currency).str.to_uppercase())
    sums = to_pandas(lf.group_by([*keys, "_cur"]).agg(nw.col(minor).sum()))
    sums[minor] = sums[minor].astype("Int64")
    currencies = sorted(sums["_cur"].dropna().astype(str).unique())
    if sums.empty:
        index = (
            pd.MultiIndex.from_tuples([], names=keys)
            if len(keys) > 1
            else pd.Index([], name=keys[0])
        )
        out = pd.DataFrame(index=index)
        out[prefix] = pd.Series(dtype="string")
        return out
    # One row per group and currency already: the same group-by as on the full table.
    grouped = sums.groupby([*keys, "_cur"], dropna=False, observed=True)[minor].sum(min_count=1)
    wide = grouped.unstack("_cur")
    out = pd.DataFrame(index=wide.index)
    for cur in currencies:
        col = wide[cur] if cur in wide.columns else pd.Series(pd.NA, index=wide.index)
        out[f"{prefix}_{cur}"] = (
            (col.astype("Float64") / 10 ** exponent(cur)).astype("float64").fillna(0.0)
        )

    def fmt(row: pd.Series) -> str:
        parts = [
            format_money(row[f"{prefix}_{c}"], c, locale)
            for c in currencies
            if row[f"{prefix}_{c}"]
        ]
        return "; ".join(parts)

    out[prefix] = out.apply(fmt, axis=1).astype("string") if len(out) else pd.Series(dtype="string")
    return out
