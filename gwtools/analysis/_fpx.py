"""FPX banks: how each bank's payments end, how often they succeed, how long they take."""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd

from gwtools.analysis._rates import add_rate, with_keys

#: Failure codes that mean the bank never answered (DESIGN.md: TEST0004 times out and
#: the payment fails with ``processing_error``).
TIMEOUT_CODES: Final = frozenset({"processing_error", "timeout", "bank_timeout"})

#: The gateway's FPX test banks (spec, FPX test banks): each ends one fixed way, so they say
#: nothing about how banks perform and are ranked after the real ones.
TEST_BANKS: Final = frozenset({"TEST0001", "TEST0002", "TEST0003", "TEST0004", "TEST0005"})

#: Outcome columns of an FPX bank table, in the order a heatmap shows them.
FPX_OUTCOMES: Final = (
    "succeeded",
    "failed",
    "timed_out",
    "canceled",
    "expired",
    "pending",
    "unknown",
)


def fpx_outcome(payments: pd.DataFrame) -> pd.Series:
    """Each payment's FPX outcome: succeeded, failed, timed_out, canceled (by the customer
    at the bank), expired, pending (still open) or unknown."""
    status = payments["status"]
    out = pd.Series("unknown", index=payments.index, dtype="string")
    rules = [
        (payments["outcome"] == "open", "pending"),
        (status == "succeeded", "succeeded"),
        (status == "failed", "failed"),
        ((status == "failed") & payments["failure_code"].isin(TIMEOUT_CODES), "timed_out"),
        (status == "canceled", "canceled"),
        (status == "expired", "expired"),
    ]
    for mask, label in rules:
        out[mask.fillna(False).astype(bool)] = label
    return out.rename("fpx_outcome")


def _fpx_only(payments: pd.DataFrame) -> pd.DataFrame:
    return payments[payments["method_type"].eq("fpx").fillna(False).astype(bool)]


def fpx_banks(
    payments: pd.DataFrame, freq: str | None = None, tz: str | None = None
) -> pd.DataFrame:
    """Per FPX bank code (with its name): ``attempts``, one column per outcome,
    ``n`` (finished attempts), ``rate`` = succeeded / n with its Wilson interval,
    and ``median_minutes`` from creation to capture of the succeeded ones.

    The rate counts every finished attempt: failures, time-outs, customer
    cancellations at the bank and expiries, because on FPX those happen on the bank's
    side of the flow; attempts still pending are undecided and left out. With
    ``freq``, one row per bank and local period. Sorted by rate, worst first, with the
    gateway's test banks (``test_bank`` True: each ends one fixed way) after the real ones.

    Example: ``fpx_banks(payments).head(3)``: the banks to talk to.
    """
    fpx = _fpx_only(payments).assign(fpx_outcome=lambda f: fpx_outcome(f))
    fpx, keys = with_keys(fpx, "fpx_bank_code", freq, tz)
    columns = ["fpx_bank_code", "fpx_bank", "period"] if freq else ["fpx_bank_code", "fpx_bank"]
    if fpx.empty:
        empty = pd.DataFrame({c: pd.Series(dtype="string") for c in columns})
        empty.insert(2, "test_bank", pd.Series(dtype=bool))
        for c in ["attempts", *FPX_OUTCOMES, "n"]:
            empty[c] = pd.Series(dtype="int64")
        return add_rate(empty, "succeeded", "n").assign(median_minutes=pd.Series(dtype="float64"))
    counts = (
        fpx.groupby([*keys, "fpx_outcome"], dropna=False, observed=True)
        .size()
        .unstack("fpx_outcome", fill_value=0)
        .reindex(columns=list(FPX_OUTCOMES), fill_value=0)
    )
    counts.columns.name = None
    counts.insert(0, "attempts", counts.sum(axis=1))
    counts["n"] = counts["attempts"] - counts["pending"] - counts["unknown"]
    won = fpx[fpx["fpx_outcome"] == "succeeded"]
    minutes = (
        won["captured_at"].fillna(won["updated_at"]) - won["created_at"]
    ).dt.total_seconds() / 60
    counts["median_minutes"] = minutes.groupby([won[k] for k in keys], dropna=False).median()
    counts = counts.reset_index()
    names = (
        fpx.dropna(subset=["fpx_bank"]).groupby("fpx_bank_code", dropna=False)["fpx_bank"].first()
    )
    counts.insert(1, "fpx_bank", counts["fpx_bank_code"].map(names).astype("string"))
    counts.insert(2, "test_bank", counts["fpx_bank_code"].isin(TEST_BANKS).astype(bool))
    out = add_rate(counts, "succeeded", "n")
    order = [
        *columns[:2],
        "test_bank",
        *columns[2:],
        "attempts",
        *FPX_OUTCOMES,
        "n",
        "rate",
        "ci_low",
        "ci_high",
        "median_minutes",
    ]
    sort = ["test_bank", "rate", "fpx_bank_code"] if not freq else ["fpx_bank_code", "period"]
    return out[order].sort_values(sort, na_position="last").reset_index(drop=True)


def fpx_outcome_shares(payments: pd.DataFrame) -> pd.DataFrame:
    """Bank x outcome shares (each row sums to 1), indexed by ``"name (code)"`` and sorted by
    success share; the last column ``attempts`` says how many payments each row stands on."""
    banks = fpx_banks(payments)
    label = (
        banks["fpx_bank"].fillna("unnamed") + " (" + banks["fpx_bank_code"].fillna("no code") + ")"
    )
    shares = banks[list(FPX_OUTCOMES)].astype("float64")
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = shares.div(banks["attempts"].astype("float64"), axis=0)
    shares.index = pd.Index(label.astype(str), name="bank")
    shares["attempts"] = banks["attempts"].to_numpy()
    return shares.sort_values(["succeeded", "attempts"], ascending=[False, False])
