"""Declines: which codes, how often, how much money, soft or hard, and whether to retry."""

from __future__ import annotations

from typing import Any, Final

import narwhals as nw
import pandas as pd

from gwtools._errors import ConfigurationError
from gwtools._schema import HARD_DECLINE_CODES, SOFT_DECLINE_CODES
from gwtools.analysis import _engine as E
from gwtools.analysis._money import refuse_summed_key, totals_by_currency
from gwtools.analysis._rates import By, add_rate, as_list, column, outcome_counts

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
    # Card details refused before the issuer saw them: the customer's typing, not the card.
    "invalid_number": "the card number was mistyped: ask the customer to re-enter it",
    "invalid_expiry_month": "the expiry month was mistyped: ask the customer to re-enter it",
    "invalid_expiry_year": "the expiry year was mistyped or has passed: ask the customer to re-enter it or use another card",
    "live_mode_test_card": "a test card was used with a live key: it never charges; nothing to retry",
}
UNCLASSIFIED_ADVICE: Final = "unclassified code: look it up before retrying"
#: How a failed payment with neither a decline code nor a failure code is named, wherever
#: reasons are listed ("(none)" read as "no declines").
NO_CODE: Final = "(no code)"


def reason_expr() -> nw.Expr:
    """The decline reason as an expression: ``decline_code``, else ``failure_code``."""
    # Typed as text: on a pandas table with object columns, a reason of only nulls is an
    # untyped column that a group-by turns into float NaN keys.
    return nw.coalesce(nw.col("decline_code"), nw.col("failure_code")).cast(nw.String)


def type_expr(reason: nw.Expr) -> nw.Expr:
    """``soft``, ``hard`` or ``unclassified`` for a reason expression."""
    return (
        nw.when(E.truthy(reason.is_in(sorted(HARD_DECLINE_CODES))))
        .then(nw.lit("hard"))
        .when(E.truthy(reason.is_in(sorted(SOFT_DECLINE_CODES))))
        .then(nw.lit("soft"))
        .otherwise(nw.lit("unclassified"))
    )


def advice_expr(reason: nw.Expr) -> nw.Expr:
    """The retry advice for a reason expression."""
    return E.when_map(reason, RETRY_ADVICE, UNCLASSIFIED_ADVICE)


def decline_reason(payments: E.Table) -> pd.Series:
    """The code that says why a payment failed: ``decline_code``, else ``failure_code``.

    Variant A only gives an error code; variant B gives both, and ``decline_code`` is the
    more specific (``card_declined`` + ``insufficient_funds``).

    Example: ``decline_reason(payments).value_counts()``: why payments failed, one code each.
    """
    return column(payments, reason_expr(), "decline_reason")


def decline_type(reason: pd.Series) -> pd.Series:
    """``soft``, ``hard`` or ``unclassified`` for each decline reason (a pandas Series).

    Example: ``decline_type(decline_reason(payments))``: soft or hard, to split your own table
    of declines.
    """
    kind = pd.Series("unclassified", index=reason.index, dtype="string")
    kind[reason.isin(SOFT_DECLINE_CODES).fillna(False).astype(bool)] = "soft"
    kind[reason.isin(HARD_DECLINE_CODES).fillna(False).astype(bool)] = "hard"
    return kind.rename("decline_type")


def classified(payments: E.Table) -> nw.LazyFrame[Any]:
    """The failed payments with ``decline_reason``, ``decline_type``, ``retry`` and ``advice``,
    as a LazyFrame on the table's engine."""
    lf = E.lazy(payments).filter(E.truthy(nw.col("outcome") == "failed"))
    lf = lf.with_columns(decline_reason=reason_expr())
    reason = nw.col("decline_reason")
    kind = type_expr(reason)
    return lf.with_columns(
        decline_type=kind,
        retry=nw.when(kind != "unclassified").then(kind == "soft"),
        advice=advice_expr(reason),
    )


def classify_declines(payments: E.Table) -> pd.DataFrame:
    """The failed payments with ``decline_reason``, ``decline_type``, ``retry`` and ``advice``
    columns: the drill-down behind every declines table. A pandas table keeps its row order
    and index; other engines give rows in creation order.

    Example: ``classify_declines(payments)[["id", "decline_reason", "advice"]]``: the failed
    payments themselves, to look up or export.
    """
    lf = classified(payments)
    if isinstance(payments, pd.DataFrame):
        out = E.user_index(E.to_pandas(lf, keep_index=True), payments)
    else:
        out = E.to_pandas(lf.sort("created_at", "id", nulls_last=True))
    return out.astype(
        {
            "decline_reason": "string",
            "decline_type": "string",
            "retry": "boolean",
            "advice": "string",
        }
    )


def decline_breakdown(
    payments: E.Table,
    by: By = "decline_reason",
    *,
    locale: str | None = None,
) -> pd.DataFrame:
    """Failed payments per decline reason (default) or per ``by``: ``count``, ``share`` of
    all failed payments, ``cumulative_share`` (Pareto order, most frequent first), the amount
    declined per currency, and, when grouping by reason or ``decline_code``,
    ``decline_type`` and ``advice``.

    A row is a decline reason (``decline_code``, else ``failure_code``), counted as the
    overview, the decline types and the declines dashboard count it. ``failure_code`` and
    ``decline_code`` stay as detail columns: the codes seen with that reason (several joined
    by ", " in code order; empty when none), so an FPX time-out (``processing_error``, no
    decline code) and a card's ``processing_error`` decline show as one reason whose
    ``failure_code`` says both kinds occur. ``by=("failure_code", "decline_code")`` splits
    them into one row per pair.

    Example: ``decline_breakdown(payments).head(5)``: the five reasons to fix first.
    """
    keys = as_list(by)
    if not keys:
        raise ConfigurationError(
            f"decline_breakdown() breaks failed payments down by a column: by={by!r} names "
            "none; e.g. by='decline_reason' (the default) or by='card_brand' (for the overall "
            "decline rate: decline_rate(payments))",
            param="by",
        )
    refuse_summed_key(keys, "amount", "by")
    failed = classified(payments)
    E.require(failed, keys)
    by_reason = keys == ["decline_reason"]
    fine = _per_currency(failed, [*keys, "failure_code", "decline_code"] if by_reason else keys)
    out = _counts(fine, keys).join(totals_by_currency(fine, keys, locale=locale, currency="_cur"))
    total = int(out["count"].sum())
    out = out.reset_index()
    if by_reason:
        out = out.merge(codes_per_reason(fine), on="decline_reason", how="left")
    out["share"] = out["count"] / total if total else 0.0
    out = pareto_sort(out, "count", keys)
    out["cumulative_share"] = out["share"].cumsum()
    reason: pd.Series | None = None
    if "decline_reason" in keys:
        reason = out["decline_reason"]
    elif "decline_code" in keys:
        reason = out["decline_code"]
        if "failure_code" in keys:
            reason = reason.fillna(out["failure_code"])
    if reason is not None:
        out["decline_type"] = decline_type(reason)
        out["advice"] = reason.map(RETRY_ADVICE).fillna(UNCLASSIFIED_ADVICE).astype("string")
    lead = [*keys, *(c for c in ("failure_code", "decline_code") if c not in keys and c in out)]
    amounts = [c for c in out.columns if c.startswith("amount")]
    rest = [c for c in out.columns if c not in lead and c not in amounts]
    return out[[*lead, *rest, *amounts]].reset_index(drop=True)


def _per_currency(failed: nw.LazyFrame[Any], grain: list[str]) -> pd.DataFrame:
    """The one query of a declines table: failed payments per ``grain`` and currency
    (``_cur``), their ``count`` and ``amount`` (minor units). A handful of rows, from which
    the counts, amounts and codes are finished in pandas."""
    return E.to_pandas(
        failed.with_columns(_cur=nw.col("currency").str.to_uppercase())
        .group_by([*dict.fromkeys(grain), "_cur"])
        .agg(nw.len().alias("count"), nw.col("amount").sum())
    )


def _counts(fine: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``count`` per ``keys`` (null keys kept) from :func:`_per_currency`'s rows."""
    counts = fine.groupby(keys, dropna=False)["count"].sum().astype("int64")
    return counts.to_frame()


def pareto_sort(table: pd.DataFrame, count: str, keys: list[str]) -> pd.DataFrame:
    """``table`` most frequent first; ties in code order (the failure codes, then the decline
    codes, then ``keys``): the one order of the declines tables and the overview's top ones."""
    ties = [c for c in ("failure_code", "decline_code") if c in table and c not in keys]
    return table.sort_values(
        [count, *ties, *keys],
        ascending=[False, *[True] * (len(ties) + len(keys))],
        na_position="last",
    )


def codes_per_reason(fine: pd.DataFrame) -> pd.DataFrame:
    """Per decline reason, the failure and decline codes seen with it (joined, code order)."""
    pairs = fine[["decline_reason", "failure_code", "decline_code"]]
    rows = []
    for reason, group in pairs.groupby("decline_reason", dropna=False, sort=False):
        row: dict[str, Any] = {"decline_reason": reason}
        for col in ("failure_code", "decline_code"):
            codes = sorted({str(c) for c in group[col].dropna()})
            row[col] = ", ".join(codes) if codes else pd.NA
        rows.append(row)
    out = pd.DataFrame(rows, columns=["decline_reason", "failure_code", "decline_code"])
    return out.astype("string")


def decline_types(payments: E.Table, *, locale: str | None = None) -> pd.DataFrame:
    """Soft versus hard declines: ``count``, ``share``, ``retry`` (may a retry succeed?) and
    the amount per currency. Soft declines are worth a retry; hard ones are not.

    Example: ``decline_types(payments)``: how much of the declined volume a retry could still
    win.
    """
    fine = _per_currency(classified(payments), ["decline_type"])
    totals = totals_by_currency(fine, ["decline_type"], locale=locale, currency="_cur")
    out = _counts(fine, ["decline_type"]).join(totals)
    order = ["soft", "hard", "unclassified"]
    out = out.reindex([t for t in order if t in out.index])
    out.index.name = "decline_type"
    out = out.reset_index()
    total = int(out["count"].sum())
    out.insert(2, "share", out["count"] / total if total else 0.0)
    retry = {"soft": "yes", "hard": "no", "unclassified": "check the code"}
    out.insert(3, "retry", out["decline_type"].map(retry).astype("string"))
    return out


def decline_rate(
    payments: E.Table, by: By = None, freq: str | None = None, tz: str | None = None
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
