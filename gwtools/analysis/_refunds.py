"""Refunds: rate by count and by amount, reasons, partial versus full, timing, pending age.

A refund counts once it is created unless it failed: pending refunds are committed
money (FPX ones take 3-5 business days to reach the customer), failed ones returned
nothing. Amount rates are per currency: a MYR and a JPY amount do not add up.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final, Literal

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools._errors import ConfigurationError
from gwtools.analysis import _engine as E
from gwtools.analysis._money import format_money, minor_per_major, totals_by_currency
from gwtools.analysis._rates import (
    By,
    add_rate,
    as_list,
    band_expr,
    complete_periods,
    finish_keys,
    lazy_keys,
    sort_keys,
)
from gwtools.analysis._time import business_days_between, resolve_tz, to_timestamp

Cohort = Literal["payment", "refund"]

#: FPX refunds reach the customer in 3-5 business days (spec); older pending ones are overdue.
FPX_REFUND_BUSINESS_DAYS = 5

_PAYMENT_FIELDS = ["method_type", "fpx_bank_code", "fpx_bank", "card_brand"]


#: Refund statuses that move money: ``pending`` too (the gateway counts a refund as soon as it
#: is created). Not ``failed``, nor a status gwtools does not know (``unknown``, the raw one in
#: ``extra``: a gateway's ``canceled`` refund returned nothing).
LIVE_REFUND_STATUSES: Final = ("succeeded", "pending")


def live_expr() -> nw.Expr:
    """True for refunds that move money (:data:`LIVE_REFUND_STATUSES`)."""
    return E.truthy(nw.col("status").is_in(list(LIVE_REFUND_STATUSES)))


def effective_refunds(refunds: E.Table) -> Any:
    """Refunds that move money: succeeded and pending ones (not failed ones, nor a status
    gwtools does not know). Returns the kind of table it is given (a lazy table stays lazy).

    Example: ``effective_refunds(refunds)``: the refunds to count when asking how much money
    went back.
    """
    lf = E.lazy(refunds)
    if "payment_id" not in E.columns_of(lf):  # a payments table has a status column too
        raise nw.exceptions.ColumnNotFoundError(
            "The following columns were not found: ['payment_id']"
        )
    return E.native_like(lf.filter(live_expr()), refunds)


def _code(column: str) -> nw.Expr:
    """A currency code as the canonical tables spell it (capitals), null as empty: a refund
    with no currency is not known to be in its payment's."""
    return nw.col(column).fill_null("")


def _per_payment(refunds: nw.LazyFrame[Any], *also: nw.Expr) -> nw.LazyFrame[Any]:
    """``payment_id``, ``_total`` (the sum of each payment's refunds among ``refunds``),
    ``_cmin``/``_cmax`` (the range of their currencies, :func:`_code`), and the aggregates
    ``also``."""
    return (
        refunds.filter(~nw.col("payment_id").is_null())
        .with_columns(_rcur=_code("currency"))
        .group_by("payment_id")
        .agg(
            nw.col("amount").sum().alias("_total"),
            nw.col("_rcur").min().alias("_cmin"),
            nw.col("_rcur").max().alias("_cmax"),
            *also,
        )
    )


def _same_currency(paid_currency: str) -> nw.Expr:
    """Whether every refund of a :func:`_per_payment` row is in the payment's currency
    (column ``paid_currency``): only then do their sum and the payment's amount add up (¥800
    is not RM8.00, and a refund with no currency is in none)."""
    cur = _code(paid_currency)
    return E.truthy(nw.col("_cmin") == cur) & E.truthy(nw.col("_cmax") == cur)


def _kind(total: nw.Expr, paid: nw.Expr, same: nw.Expr) -> nw.Expr:
    """``full`` when the refunds add up to the payment's amount, else ``partial``; null when
    either is unknown, or when a refund is in another currency (``same`` false)."""
    return nw.when(~total.is_null() & ~paid.is_null() & same).then(
        nw.when(total >= paid).then(nw.lit("full")).otherwise(nw.lit("partial"))
    )


def details(payments: E.Table, refunds: E.Table, *, kind: bool = True) -> nw.LazyFrame[Any]:
    """:func:`refund_details` as a LazyFrame on the tables' engine; ``kind=False`` leaves out
    ``kind`` (and the per-payment sums of the refunds it needs)."""
    lp, lr = E.lazy_pair(payments, refunds)
    pay = lp.filter(~nw.col("id").is_null()).select(
        nw.col("id").alias("payment_id"),
        *(nw.col(c) for c in _PAYMENT_FIELDS),
        nw.col("amount").alias("payment_amount"),
        nw.col("created_at").alias("payment_created_at"),
        nw.col("captured_at"),
        *([nw.col("currency").alias("_pcur")] if kind else []),
    )
    out = lr.join(pay, on="payment_id", how="left")
    start = nw.coalesce(nw.col("captured_at"), nw.col("payment_created_at"))
    days = E.seconds_between(out, nw.col("created_at"), start) / 86_400
    if not kind:
        return out.with_columns(days_to_refund=days)
    out = out.join(_per_payment(lr.filter(live_expr())), on="payment_id", how="left")
    same = _same_currency("_pcur")
    return out.with_columns(
        kind=_kind(nw.col("_total"), nw.col("payment_amount"), same), days_to_refund=days
    ).drop("_total", "_cmin", "_cmax", "_pcur")


def _rows(lf: nw.LazyFrame[Any], table: E.Table) -> pd.DataFrame:
    """Row-level results to pandas: a pandas table keeps its order, others creation order."""
    if not isinstance(table, pd.DataFrame):
        lf = lf.sort("created_at", "id", nulls_last=True)
    out = E.to_pandas(lf)
    types = {"kind": "string", "days_to_refund": "float64", "payment_amount": "Int64"}
    return out.astype({c: t for c, t in types.items() if c in out.columns})


def refund_details(payments: E.Table, refunds: E.Table) -> pd.DataFrame:
    """One row per refund with its payment's method, bank, brand, amount and times,
    ``kind`` (``full`` when the payment's non-failed refunds add up to its amount, else
    ``partial``) and ``days_to_refund`` (from capture, or creation when the capture time
    is missing). Refunds of payments not in ``payments`` keep nulls there.

    Example: ``refund_details(payments, refunds).groupby("kind").days_to_refund.median()``: one
    row per refund, for questions the refund tables do not answer.
    """
    return _rows(details(payments, refunds), refunds)


def refund_rate(
    payments: E.Table,
    refunds: E.Table,
    by: By = None,
    freq: str | None = None,
    tz: str | None = None,
    *,
    cohort: Cohort = "payment",
) -> pd.DataFrame:
    """Refund rate per currency (and ``by``, ``freq``) by count and by amount.

    ``cohort="payment"``: succeeded payments dated by their creation; ``rate`` =
    refunded payments / succeeded payments (a proportion, with Wilson interval) and
    ``amount_rate`` = refunded / captured amount. Recent cohorts rise as refunds arrive.
    A payment's refunds count in its own currency only: one in another currency, or in
    none (a data problem ``quality`` reports), is not added to it.
    ``cohort="refund"``: refunds dated by their own creation against the payments that
    succeeded in the same period (``rate`` = refunds / payments, no interval: refunds
    of older payments make it a ratio, not a proportion). That is the ops view of a
    period's refunds; the cohort view answers which sales came back.

    Example: ``refund_rate(payments, refunds, freq="week", cohort="refund")``.
    """
    if cohort not in ("payment", "refund"):
        raise ConfigurationError(
            f"cohort must be 'payment' or 'refund', got {cohort!r}", param="cohort"
        )
    lp, lr = E.lazy_pair(payments, refunds)
    by_keys = [k for k in as_list(by) if k != "currency"]
    succeeded = lp.filter(E.truthy(nw.col("outcome") == "succeeded"))
    live = lr.filter(live_expr())
    sp, keys = lazy_keys(succeeded, ["currency", *by_keys], freq, tz)
    if cohort == "payment":
        # A payment's refunds in its own currency: joined on the id and the currency (a
        # refund in another currency, or in none, is not added to it: ¥800 is not RM8.00).
        # Comparing the currencies after a join on the id alone carried them through it:
        # a third slower.
        per_payment = (
            live.filter(~nw.col("payment_id").is_null() & ~nw.col("currency").is_null())
            .group_by("payment_id", "currency")
            .agg(nw.col("amount").sum().alias("refund_minor"))
        )
        sp = sp.join(
            per_payment,
            left_on=["id", "currency"],
            right_on=["payment_id", "currency"],
            how="left",
        )
        sp = sp.with_columns(was_refunded=E.flag(nw.col("refund_minor").fill_null(0) > 0))
        table = E.to_pandas(
            sp.group_by(keys).agg(
                nw.len().alias("payments"),
                nw.col("amount").sum().alias("captured_minor"),
                nw.col("was_refunded").sum().alias("refunded_payments"),
                nw.col("refund_minor").sum().alias("refunded_minor"),
            )
        )
        table = finish_keys(table, keys, tz).set_index(keys)
        count_col = "refunded_payments"
    else:
        table = E.to_pandas(
            sp.group_by(keys).agg(
                nw.len().alias("payments"), nw.col("amount").sum().alias("captured_minor")
            )
        )
        table = finish_keys(table, keys, tz).set_index(keys)
        extra = [k for k in by_keys if k not in E.columns_of(live)]
        if "amount_band" in extra:  # the band of the refund's payment, as in the denominator
            lp = lp.with_columns(amount_band=band_expr(lp))
        pay = lp.select(nw.col("id").alias("payment_id"), *(nw.col(k) for k in extra))
        lr_keyed, rkeys = lazy_keys(
            live.join(pay.filter(~nw.col("payment_id").is_null()), on="payment_id", how="left"),
            ["currency", *by_keys],
            freq,
            tz,
        )
        num = E.to_pandas(
            lr_keyed.group_by(rkeys).agg(
                nw.len().alias("refunds"), nw.col("amount").sum().alias("refunded_minor")
            )
        )
        num = finish_keys(num, rkeys, tz).set_index(rkeys)
        table = (
            table.join(num, how="outer")
            if len(table) or len(num)
            else table.assign(refunds=[], refunded_minor=[])
        )
        count_col = "refunds"
    table = table.astype("float64").fillna(0)
    table = sort_keys(table.reset_index(), keys).set_index(keys)
    table = complete_periods(table, keys, freq, tz)
    table = table.reset_index()
    for col in ("payments", count_col):
        table[col] = table[col].astype("int64")
    scale = table["currency"].map(minor_per_major).astype("float64")  # NaN for no currency
    table["captured_amount"] = table.pop("captured_minor").astype("float64") / scale
    table["refunded_amount"] = table.pop("refunded_minor").astype("float64") / scale
    table = add_rate(table, count_col, "payments", interval=cohort == "payment")
    with np.errstate(invalid="ignore", divide="ignore"):
        table["amount_rate"] = np.where(
            table["captured_amount"] > 0,
            table["refunded_amount"] / table["captured_amount"],
            np.nan,
        )
    order = [*keys, "payments", count_col, "rate", "ci_low", "ci_high"]
    order += ["captured_amount", "refunded_amount", "amount_rate"]
    return table[order]


def refunds_by_reason(refunds: E.Table, *, locale: str | None = None) -> pd.DataFrame:
    """Refunds per ``reason`` (null when none was given): ``count`` and ``share`` of the
    refunds that moved money, ``failed`` refunds beside them, amounts per currency.

    Example: ``refunds_by_reason(refunds)``: why customers are refunded.
    """
    lr = E.lazy(refunds)
    live = lr.filter(live_expr())
    counts = E.to_pandas(live.group_by("reason").agg(nw.len().alias("count")))
    failed = E.to_pandas(
        lr.filter(E.truthy(nw.col("status") == "failed"))
        .group_by("reason")
        .agg(nw.len().alias("failed"))
    )
    out = counts.set_index("reason").join(failed.set_index("reason"), how="outer")
    out = out.astype("float64").fillna(0).astype("int64")
    out = out.join(totals_by_currency(live, ["reason"], locale=locale))
    total = int(out["count"].sum())
    out.insert(1, "share", out["count"] / total if total else 0.0)
    out = out.reset_index().sort_values(["count", "reason"], ascending=[False, True])
    amount_cols = [c for c in out.columns if c.startswith("amount")]
    out[amount_cols] = out[amount_cols].fillna(
        {"amount": ""} | {c: 0.0 for c in amount_cols if c != "amount"}
    )
    return out.reset_index(drop=True)


def partial_vs_full(
    payments: E.Table, refunds: E.Table, *, locale: str | None = None
) -> pd.DataFrame:
    """Refunded payments split into ``full`` and ``partial`` refunds: ``payments``,
    ``share`` and the amount refunded per currency. A payment with a refund in another
    currency than its own, or in none, is neither: the amounts cannot be compared.

    Example: ``partial_vs_full(payments, refunds)``: whether refunds give whole payments back
    or parts of them.
    """
    lp, lr = E.lazy_pair(payments, refunds)
    # Each refunded payment once: its refunds' sum and currencies, against its amount (one
    # group-by and one join; the refunds one by one are never joined).
    sums = _per_payment(lr.filter(live_expr()))
    paid = lp.filter(~nw.col("id").is_null()).select(
        nw.col("id").alias("payment_id"),
        nw.col("amount").alias("_paid"),
        nw.col("currency").alias("_pcur"),
    )
    refunded = sums.join(paid, on="payment_id", how="inner").with_columns(
        kind=_kind(nw.col("_total"), nw.col("_paid"), _same_currency("_pcur")),
        currency=nw.col("_pcur"),  # its refunds' too, wherever kind is known
    )
    # One query: payments and amounts per kind and currency (a payment has one currency), so
    # the join with the payments runs once; counts and totals are finished from it in pandas.
    small = E.to_pandas(
        refunded.filter(~nw.col("kind").is_null())
        .group_by("kind", "currency")
        .agg(nw.len().alias("payments"), nw.col("_total").sum().alias("amount"))
    )
    counts = small.groupby("kind", dropna=False)["payments"].sum().to_frame()
    out = counts.astype({"payments": "int64"})
    out = out.reindex([k for k in ("full", "partial") if k in out.index])
    out = out.join(totals_by_currency(small, ["kind"], locale=locale))
    total = int(out["payments"].sum())
    out.insert(1, "share", out["payments"] / total if total else 0.0)
    out.index.name = "kind"
    out = out.reset_index()
    out["kind"] = out["kind"].astype("string")
    return out


def time_to_refund(payments: E.Table, refunds: E.Table, by: By = "method_type") -> pd.DataFrame:
    """Days from capture to refund per group: ``refunds``, ``median_days``, ``p90_days``,
    ``max_days``. Refunds whose payment is unknown are counted under a null key.

    Example: ``time_to_refund(payments, refunds, by="method_type")``: how long after paying
    customers are refunded.
    """
    lp, lr = E.lazy_pair(payments, refunds)
    lf = details(lp, lr.filter(live_expr()), kind=False)
    keys = as_list(by)
    if not keys:
        lf = lf.with_columns(all=nw.lit("all"))
        keys = ["all"]
    E.require(lf, keys)
    days = nw.col("days_to_refund")
    out = E.to_pandas(
        lf.group_by(keys).agg(
            nw.len().alias("refunds"),
            days.median().alias("median_days"),
            days.quantile(0.9, interpolation="linear").alias("p90_days"),
            days.max().alias("max_days"),
        )
    )
    out = out.astype(
        {"refunds": "int64", "median_days": "float64", "p90_days": "float64", "max_days": "float64"}
    )
    return sort_keys(out, keys)


def pending_refunds(
    payments: E.Table,
    refunds: E.Table,
    *,
    now: dt.datetime | pd.Timestamp | str | None = None,
    tz: str | None = None,
    holidays: list[dt.date] | None = None,
    locale: str | None = None,
) -> pd.DataFrame:
    """Refunds still pending, oldest first, with ``age_days``, ``age_business_days``
    (Monday-Friday in ``tz``, start day excluded, minus ``holidays``) and ``overdue``:
    an FPX refund pending more than 5 business days. Card refunds have no documented
    window, so ``overdue`` is null for them.

    Pass ``now`` (e.g. the sandbox clock) for reproducible ages; default: the current time.

    Example: ``pending_refunds(payments, refunds, now="2026-11-20")``: the refunds to chase,
    oldest first.
    """
    zone = resolve_tz(tz)
    current = to_timestamp(now, zone, param="now") if now is not None else None
    if current is None:  # no now, or an empty string
        current = pd.Timestamp.now(tz="UTC")
    lp, lr = E.lazy_pair(payments, refunds)
    pending = lr.filter(E.truthy(nw.col("status") == "pending"))
    out = _rows(details(lp, pending, kind=False), refunds)
    out["age_days"] = (current - out["created_at"]).dt.total_seconds() / 86_400
    out["age_business_days"] = business_days_between(out["created_at"], current, zone, holidays)
    expected = pd.Series(pd.NA, index=out.index, dtype="Int64")
    expected[out["method_type"].eq("fpx").fillna(False).astype(bool)] = FPX_REFUND_BUSINESS_DAYS
    out["expected_business_days"] = expected
    out["overdue"] = (out["age_business_days"] > out["expected_business_days"]).astype("boolean")
    out["amount_text"] = [
        format_money(v, c, locale)
        for v, c in zip(out["amount_major"], out["currency"], strict=True)
    ]
    out["amount_text"] = out["amount_text"].astype("string")
    cols = [
        "id", "payment_id", "method_type", "fpx_bank_code", "fpx_bank", "currency", "amount_major",
        "amount_text", "reason", "created_at", "age_days", "age_business_days",
        "expected_business_days", "overdue",
    ]  # fmt: skip
    return out[cols].sort_values("created_at", kind="stable").reset_index(drop=True)
