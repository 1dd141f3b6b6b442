"""Declines: which codes, how often, how much money, soft or hard, and whether to retry."""

from __future__ import annotations

from typing import Final

import pandas as pd

from gwtools._schema import HARD_DECLINE_CODES, SOFT_DECLINE_CODES
from gwtools.analysis._money import totals_by_currency
from gwtools.analysis._rates import By, add_rate, as_list, outcome_counts

#: What to do about a failed payment, per decline reason. Soft declines are
#: temporary (the same card may work later); hard ones will fail again.
RETRY_ADVICE: Final[dict[str, str]] = {
    "insufficient_funds": "retry later (e.g. after payday) or offer another method",
    "generic_decline": "retry once later; if it fails again ask the customer to call their bank",
    "processing_error": "retry now with back-off: the failure was not the customer's",
    "incorrect_cvc": "ask the customer to re-enter the CVC, then retry",
    "lost_card": "do not retry: ask for another card and review the order for fraud",
    "stolen_card": "do not retry: ask for another card and review the order for fraud",
    "expired_card": "do not retry: ask the customer for updated card details",
    # Neither soft nor hard in the issuer's sense, but common enough to say what to do.
    # Variant A reports only the error code, so its generic declines arrive as card_declined.
    "card_declined": "declined without a reason (variant A gives none): retry once later, then ask for another card",
    "authentication_failed": "3-D Secure failed: let the customer try again and complete it",
    "payment_method_not_available": "the bank or method was unavailable: offer another bank or retry later",
}
UNCLASSIFIED_ADVICE: Final = "unclassified code: look it up before retrying"


def decline_reason(payments: pd.DataFrame) -> pd.Series:
    """The code that says why a payment failed: ``decline_code``, else ``failure_code``.

    Variant A only gives an error code; variant B gives both, and ``decline_code`` is the
    more specific (``card_declined`` + ``insufficient_funds``).
    """
    return payments["decline_code"].fillna(payments["failure_code"]).rename("decline_reason")


def decline_type(reason: pd.Series) -> pd.Series:
    """``soft``, ``hard`` or ``unclassified`` for each decline reason."""
    kind = pd.Series("unclassified", index=reason.index, dtype="string")
    kind[reason.isin(SOFT_DECLINE_CODES).fillna(False).astype(bool)] = "soft"
    kind[reason.isin(HARD_DECLINE_CODES).fillna(False).astype(bool)] = "hard"
    return kind.rename("decline_type")


def classify_declines(payments: pd.DataFrame) -> pd.DataFrame:
    """The failed payments with ``decline_reason``, ``decline_type``, ``retry`` and ``advice``
    columns: the drill-down behind every declines table."""
    failed = payments[payments["outcome"] == "failed"].copy()
    reason = decline_reason(failed)
    failed["decline_reason"] = reason
    failed["decline_type"] = decline_type(reason)
    failed["retry"] = (failed["decline_type"] == "soft").astype("boolean")
    failed.loc[failed["decline_type"] == "unclassified", "retry"] = pd.NA
    failed["advice"] = reason.map(RETRY_ADVICE).fillna(UNCLASSIFIED_ADVICE).astype("string")
    return failed


def decline_breakdown(
    payments: pd.DataFrame,
    by: By = ("failure_code", "decline_code"),
    *,
    locale: str | None = None,
) -> pd.DataFrame:
    """Failed payments per code: ``count``, ``share`` of all failed payments,
    ``cumulative_share`` (Pareto order, most frequent first), the amount declined per
    currency, and, when grouping by ``decline_code``, ``decline_type`` and ``advice``.

    Example: ``decline_breakdown(payments).head(5)``: the five codes to fix first.
    """
    keys = as_list(by)
    failed = classify_declines(payments)
    out = failed.groupby(keys, dropna=False, observed=True).size().rename("count").to_frame()
    out = out.join(totals_by_currency(failed, keys, locale=locale))
    total = int(out["count"].sum())
    out = out.reset_index()
    out["share"] = out["count"] / total if total else 0.0
    out = out.sort_values(
        ["count", *keys], ascending=[False, *[True] * len(keys)], na_position="last"
    )
    out["cumulative_share"] = out["share"].cumsum()
    if "decline_code" in keys:
        reason = out["decline_code"]
        if "failure_code" in keys:
            reason = reason.fillna(out["failure_code"])
        out["decline_type"] = decline_type(reason)
        out["advice"] = reason.map(RETRY_ADVICE).fillna(UNCLASSIFIED_ADVICE).astype("string")
    amounts = [c for c in out.columns if c.startswith("amount")]
    rest = [c for c in out.columns if c not in keys and c not in amounts]
    return out[[*keys, *rest, *amounts]].reset_index(drop=True)


def decline_types(payments: pd.DataFrame, *, locale: str | None = None) -> pd.DataFrame:
    """Soft versus hard declines: ``count``, ``share``, ``retry`` (may a retry succeed?) and
    the amount per currency. Soft declines are worth a retry; hard ones are not."""
    failed = classify_declines(payments)
    out = failed.groupby("decline_type", observed=True).size().rename("count").to_frame()
    out = out.join(totals_by_currency(failed, ["decline_type"], locale=locale))
    order = ["soft", "hard", "unclassified"]
    out = out.reindex([t for t in order if t in out.index]).reset_index()
    total = int(out["count"].sum())
    out.insert(2, "share", out["count"] / total if total else 0.0)
    retry = {"soft": "yes", "hard": "no", "unclassified": "check the code"}
    out.insert(3, "retry", out["decline_type"].map(retry).astype("string"))
    return out


def decline_rate(
    payments: pd.DataFrame, by: By = None, freq: str | None = None, tz: str | None = None
) -> pd.DataFrame:
    """Decline rate = failed / (succeeded + failed) per group, with ``n`` and a Wilson
    95% interval.

    The denominator holds decided payments only: open ones (pending, requires_action,
    processing, authorized) are undecided and abandoned ones (canceled, expired) were
    never put to the issuer, so counting them would dilute the rate. ``by`` may name any
    column, or ``amount_band`` (bands per currency); ``freq`` is day/week/month in ``tz``.

    Example: ``decline_rate(payments, by="card_brand", freq="week")``.
    """
    counts = outcome_counts(payments, by, freq, tz)
    counts["n"] = counts["succeeded"] + counts["failed"]
    return add_rate(counts, "failed", "n")
