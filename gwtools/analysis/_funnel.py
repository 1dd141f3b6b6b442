"""The payment funnel on the canonical statuses, the same for both API variants."""

from __future__ import annotations

from typing import Final

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools._schema import PAYMENT_OUTCOME
from gwtools.analysis import _engine as E

#: Funnel stages and the canonical statuses that sit at each.
STAGES: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("created", ()),
    ("requires_action/pending", ("pending", "requires_action", "processing")),
    ("authorized", ("authorized",)),
    ("succeeded", ("succeeded",)),
    ("refunded", ()),
)
#: Statuses that left the funnel; a table of statuses says where they are.
EXITS: Final = ("failed", "canceled", "expired", "unknown")


def funnel(payments: E.Table) -> pd.DataFrame:
    """Payments per stage: ``now`` (currently at the stage), ``reached`` (at it or past it),
    ``share_of_created`` and ``step_conversion`` from the stage before.

    A final status says where a payment is, not the road it took, so "reached" is
    cumulative: a succeeded payment has passed authorisation. Failed, canceled and
    expired payments (``exited`` on the ``created`` row) count only as created, as
    neither variant tells at which step they dropped. Refunded = succeeded with a
    refunded amount.

    Example: ``funnel(payments)``: where payments stop on their way to success.
    """
    status = nw.col("status")
    refunded = E.truthy(nw.col("refunded_amount").fill_null(0) > 0) | E.truthy(nw.col("refunded"))
    succeeded = E.truthy(status == "succeeded")
    flags = {
        "requires_action/pending": E.flag(status.is_in(list(STAGES[1][1]))),
        "authorized": E.flag(status == "authorized"),
        "succeeded": E.flag(succeeded & ~refunded),
        "refunded": E.flag(succeeded & refunded),
        "exited": E.flag(status.is_in(list(EXITS)) | status.is_null()),
    }
    # Prefixed: "refunded" is also a canonical column, with another meaning.
    lf = E.lazy(payments).with_columns(**{f"_{k}": v for k, v in flags.items()})
    sums = E.to_pandas(
        lf.select(nw.len().alias("created"), *(nw.col(f"_{k}").sum().alias(k) for k in flags))
    )
    counts = {k: int(v) for k, v in sums.fillna(0).iloc[0].items()}
    now = {"created": 0, **{n: counts[n] for n, _ in STAGES[1:]}}
    names = [s for s, _ in STAGES]
    reached = []
    running = 0
    for name in reversed(names[1:]):
        running += now[name]
        reached.append(running)
    reached = [counts["created"], *reversed(reached)]
    out = pd.DataFrame(
        {
            "stage": names,
            "statuses": [", ".join(st) if st else "" for _, st in STAGES],
            "now": [now[n] for n in names],
            "reached": reached,
        }
    )
    out.loc[0, "statuses"] = "all"
    out.loc[4, "statuses"] = "succeeded + refunded"
    out["exited"] = [counts["exited"], 0, 0, 0, 0]
    total = float(counts["created"])
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share_of_created"] = out["reached"] / total if total else np.nan
        prev = out["reached"].shift(1).astype("float64")
        out["step_conversion"] = np.where(prev > 0, out["reached"] / prev, np.nan)
    return out


def status_counts(payments: E.Table) -> pd.DataFrame:
    """Payments per canonical status (all nine, zeros included) with their outcome and share.

    Example: ``status_counts(payments)``: where every payment stands now.
    """
    grouped = E.to_pandas(E.lazy(payments).group_by("status").agg(nw.len().alias("n")))
    counts = dict(
        zip(grouped["status"].dropna(), grouped["n"][grouped["status"].notna()], strict=True)
    )
    out = pd.DataFrame({"status": list(PAYMENT_OUTCOME)})
    out["outcome"] = out["status"].map(PAYMENT_OUTCOME)
    out["count"] = out["status"].map(counts).fillna(0).astype("int64")
    missing = int(grouped["n"][grouped["status"].isna()].sum())
    if missing:
        out.loc[out["status"] == "unknown", "count"] += missing
    total = int(out["count"].sum())
    out["share"] = out["count"] / total if total else 0.0
    return out
