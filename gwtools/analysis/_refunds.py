"""Refunds: rate by count and by amount, reasons, partial versus full, timing, pending age.

A refund counts once it is created unless it failed: pending refunds are committed
money (FPX ones take 3-5 business days to reach the customer), failed ones returned
nothing. Amount rates are per currency: a MYR and a JPY amount do not add up.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import numpy as np
import pandas as pd

from gwtools.analysis._money import exponent, format_money, totals_by_currency
from gwtools.analysis._rates import By, add_rate, as_list, complete_periods, with_keys
from gwtools.analysis._time import business_days_between, resolve_tz

Cohort = Literal["payment", "refund"]

#: FPX refunds reach the customer in 3-5 business days (spec); older pending ones are overdue.
FPX_REFUND_BUSINESS_DAYS = 5

_PAYMENT_FIELDS = ["method_type", "fpx_bank_code", "fpx_bank", "card_brand"]


def effective_refunds(refunds: pd.DataFrame) -> pd.DataFrame:
    """Refunds that move money: every status but ``failed``."""
    return refunds[refunds["status"].ne("failed").fillna(True).astype(bool)]


def refund_details(payments: pd.DataFrame, refunds: pd.DataFrame) -> pd.DataFrame:
    """One row per refund with its payment's method, bank, brand, amount and times,
    ``kind`` (``full`` when the payment's non-failed refunds add up to its amount, else
    ``partial``) and ``days_to_refund`` (from capture, or creation when the capture time
    is missing). Refunds of payments not in ``payments`` keep nulls there."""
    pay = payments[["id", *_PAYMENT_FIELDS, "amount", "created_at", "captured_at"]].rename(
        columns={"id": "payment_id", "amount": "payment_amount", "created_at": "payment_created_at"}
    )
    out = refunds.merge(pay, on="payment_id", how="left")
    per_payment = effective_refunds(refunds).groupby("payment_id")["amount"].sum()
    total = out["payment_id"].map(per_payment).astype("Int64")
    full = (total >= out["payment_amount"]).fillna(False).astype(bool)
    out["kind"] = pd.Series(np.where(full, "full", "partial"), index=out.index, dtype="string")
    out.loc[out["payment_amount"].isna() | total.isna(), "kind"] = pd.NA
    start = out["captured_at"].fillna(out["payment_created_at"])
    out["days_to_refund"] = (out["created_at"] - start).dt.total_seconds() / 86_400
    return out


def refund_rate(
    payments: pd.DataFrame,
    refunds: pd.DataFrame,
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
    ``cohort="refund"``: refunds dated by their own creation against the payments that
    succeeded in the same period (``rate`` = refunds / payments, no interval: refunds
    of older payments make it a ratio, not a proportion). That is the ops view of a
    period's refunds; the cohort view answers which sales came back.

    Example: ``refund_rate(payments, refunds, freq="week", cohort="refund")``.
    """
    if cohort not in ("payment", "refund"):
        raise ValueError(f"cohort must be 'payment' or 'refund', got {cohort!r}")
    by_keys = [k for k in as_list(by) if k != "currency"]
    succeeded = payments[payments["outcome"] == "succeeded"]
    live = effective_refunds(refunds)
    sp, keys = with_keys(succeeded, ["currency", *by_keys], freq, tz)
    grouped = sp.groupby(keys, dropna=False, observed=True)
    table = pd.DataFrame({"payments": grouped.size(), "captured_minor": grouped["amount"].sum()})
    if cohort == "payment":
        per_payment = live.groupby("payment_id")["amount"].sum().rename("refund_minor")
        sp = sp.join(per_payment, on="id")
        sp["was_refunded"] = sp["refund_minor"].fillna(0) > 0
        g = sp.groupby(keys, dropna=False, observed=True)
        num = pd.DataFrame(
            {
                "refunded_payments": g["was_refunded"].sum(),
                "refunded_minor": g["refund_minor"].sum(),
            }
        )
        count_col = "refunded_payments"
    else:
        extra = [k for k in by_keys if k not in live.columns]
        lr = live.merge(
            payments[["id", *extra]].rename(columns={"id": "payment_id"}),
            on="payment_id",
            how="left",
        )
        lr, rkeys = with_keys(lr, ["currency", *by_keys], freq, tz)
        g = lr.groupby(rkeys, dropna=False, observed=True)
        num = pd.DataFrame({"refunds": g.size(), "refunded_minor": g["amount"].sum()})
        count_col = "refunds"
    table = (
        table.join(num, how="outer")
        if len(table) or len(num)
        else table.assign(**{count_col: [], "refunded_minor": []})
    )
    table = table.fillna(0)
    table = complete_periods(table, keys, freq, tz)
    table = table.reset_index()
    for col in ("payments", count_col):
        table[col] = table[col].astype("int64")
    scale = table["currency"].map(lambda c: 10 ** exponent(c)).astype("float64")
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


def refunds_by_reason(refunds: pd.DataFrame, *, locale: str | None = None) -> pd.DataFrame:
    """Refunds per ``reason`` (null when none was given): ``count`` and ``share`` of the
    refunds that moved money, ``failed`` refunds beside them, amounts per currency."""
    live = effective_refunds(refunds)
    out = pd.DataFrame({"count": live.groupby("reason", dropna=False).size()})
    failed = refunds[refunds["status"] == "failed"].groupby("reason", dropna=False).size()
    out = out.join(failed.rename("failed"), how="outer").fillna(0).astype("int64")
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
    payments: pd.DataFrame, refunds: pd.DataFrame, *, locale: str | None = None
) -> pd.DataFrame:
    """Refunded payments split into ``full`` and ``partial`` refunds: ``payments``,
    ``share`` and the amount refunded per currency."""
    details = refund_details(payments, effective_refunds(refunds))
    per_payment = (
        details.dropna(subset=["kind"])
        .groupby("payment_id")
        .agg(kind=("kind", "first"), amount=("amount", "sum"), currency=("currency", "first"))
    )
    out = pd.DataFrame({"payments": per_payment.groupby("kind").size()})
    out = out.reindex([k for k in ("full", "partial") if k in out.index])
    out = out.join(totals_by_currency(per_payment, ["kind"], locale=locale))
    total = int(out["payments"].sum())
    out.insert(1, "share", out["payments"] / total if total else 0.0)
    out.index.name = "kind"
    return out.reset_index()


def time_to_refund(
    payments: pd.DataFrame, refunds: pd.DataFrame, by: By = "method_type"
) -> pd.DataFrame:
    """Days from capture to refund per group: ``refunds``, ``median_days``, ``p90_days``,
    ``max_days``. Refunds whose payment is unknown are counted under a null key."""
    details = refund_details(payments, effective_refunds(refunds))
    keys = as_list(by)
    if not keys:
        details = details.assign(all="all")
        keys = ["all"]
    g = details.groupby(keys, dropna=False)["days_to_refund"]
    out = pd.DataFrame(
        {
            "refunds": g.size(),
            "median_days": g.median(),
            "p90_days": g.quantile(0.9),
            "max_days": g.max(),
        }
    )
    return out.reset_index()


def pending_refunds(
    payments: pd.DataFrame,
    refunds: pd.DataFrame,
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
    """
    zone = resolve_tz(tz)
    current = pd.Timestamp(now) if now is not None else pd.Timestamp.now(tz="UTC")
    if current.tzinfo is None:
        current = current.tz_localize(zone)
    pending = refunds[refunds["status"] == "pending"]
    out = refund_details(payments, pending)
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
