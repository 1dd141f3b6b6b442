"""The payment funnel on the canonical statuses, the same for both API variants."""

from __future__ import annotations

from typing import Final

import numpy as np
import pandas as pd

from gwtools._schema import PAYMENT_OUTCOME

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


def funnel(payments: pd.DataFrame) -> pd.DataFrame:
    """Payments per stage: ``now`` (currently at the stage), ``reached`` (at it or past it),
    ``share_of_created`` and ``step_conversion`` from the stage before.

    A final status says where a payment is, not the road it took, so "reached" is
    cumulative: a succeeded payment has passed authorisation. Failed, canceled and
    expired payments (``exited`` on the ``created`` row) count only as created, as
    neither variant tells at which step they dropped. Refunded = succeeded with a
    refunded amount.
    """
    status = payments["status"]
    refunded = (payments["refunded_amount"].fillna(0) > 0) | payments["refunded"].fillna(False)
    succeeded = status.eq("succeeded").fillna(False).astype(bool)
    now = {
        "created": 0,
        "requires_action/pending": int(status.isin(STAGES[1][1]).sum()),
        "authorized": int(status.eq("authorized").sum()),
        "succeeded": int((succeeded & ~refunded.astype(bool)).sum()),
        "refunded": int((succeeded & refunded.astype(bool)).sum()),
    }
    names = [s for s, _ in STAGES]
    reached = []
    running = 0
    for name in reversed(names[1:]):
        running += now[name]
        reached.append(running)
    reached = [len(payments), *reversed(reached)]
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
    exited = int(status.isin(EXITS).sum() + status.isna().sum())
    out["exited"] = [exited, 0, 0, 0, 0]
    total = float(len(payments))
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share_of_created"] = out["reached"] / total if total else np.nan
        prev = out["reached"].shift(1).astype("float64")
        out["step_conversion"] = np.where(prev > 0, out["reached"] / prev, np.nan)
    return out


def status_counts(payments: pd.DataFrame) -> pd.DataFrame:
    """Payments per canonical status (all nine, zeros included) with their outcome and share."""
    counts = payments["status"].value_counts(dropna=False)
    out = pd.DataFrame({"status": list(PAYMENT_OUTCOME)})
    out["outcome"] = out["status"].map(PAYMENT_OUTCOME)
    out["count"] = out["status"].map(counts).fillna(0).astype("int64")
    missing = int(payments["status"].isna().sum())
    if missing:
        out.loc[out["status"] == "unknown", "count"] += missing
    total = int(out["count"].sum())
    out["share"] = out["count"] / total if total else 0.0
    return out
