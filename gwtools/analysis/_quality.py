"""Data quality: can I trust these numbers? Consistency rules over the cached tables.

Each rule counts the rows that break it and shows a few examples (ids), so an analyst sees at
a glance whether a figure rests on sound data, and where to look when it does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson
import pandas as pd

from gwtools.analysis._recovery import narrow

#: rule -> what it checks (the ``description`` column of :func:`quality`).
QUALITY_RULES: Final[dict[str, str]] = {
    "refunded_amount_matches_refunds": "a payment's refunded_amount equals the sum of its "
    "succeeded and pending refunds (the gateway counts a refund as soon as it is created and "
    "gives the amount back only if it fails)",
    "refunded_flag_matches_amounts": "refunded is true exactly when refunded_amount covers the "
    "captured amount",
    "refund_payment_cached": "every refund's payment is in the payments table",
    "captured_flag_matches_status": "captured is true exactly for succeeded payments",
    "refund_currency_matches_payment": "a refund is in its payment's currency",
    "refunds_within_captured_amount": "succeeded and pending refunds of a payment do not exceed "
    "its captured amount",
    "payment_ids_unique": "each payment id appears once",
    "refund_ids_unique": "each refund id appears once",
    "no_hourly_holes": "no run of hours without any payment where the usual traffic makes "
    "silence unlikely (expected payments over the run at least 20)",
    "last_sync_complete": "the last sync read every page of both resources",
}
#: Examples shown per rule.
EXAMPLES: Final = 5
#: A run of empty hours is a hole when this many payments were expected over it (P(silence)
#: < 1e-6 even on a weekend at 70% of the usual traffic).
HOLE_EXPECTED: Final = 20.0

_LIVE_REFUND: Final = ("succeeded", "pending")
_PAYMENT_COLUMNS: Final = (
    "id",
    "status",
    "amount",
    "currency",
    "captured",
    "refunded",
    "refunded_amount",
    "created_at",
    "extra",
)
_REFUND_COLUMNS: Final = ("id", "payment_id", "status", "amount", "currency", "created_at")


def _captured_amount(payments: pd.DataFrame) -> pd.Series:
    """The captured amount: ``amount_captured`` from ``extra`` when the gateway sends it (a
    partial capture), else the whole amount of a captured payment, else 0."""
    amount = payments["amount"].astype("Int64")
    extra = payments["extra"]
    has = extra.str.contains('"amount_captured"', regex=False).fillna(False).astype(bool)

    def read(text: str) -> Any:
        try:
            value = orjson.loads(text).get("amount_captured")
        except (orjson.JSONDecodeError, AttributeError):
            return pd.NA
        return value if isinstance(value, int) else pd.NA

    out = amount.where(payments["captured"].fillna(False).astype(bool), 0).astype("Int64")
    if has.any():
        out[has] = extra[has].map(read).astype("Int64").fillna(out[has])
    return out


def _hourly_holes(payments: pd.DataFrame, tz: str) -> tuple[int, list[str]]:
    ts = payments["created_at"].dropna()
    if ts.empty:
        return 0, []
    hours = ts.dt.tz_convert(tz).dt.tz_localize(None).dt.floor("h")
    counts = hours.value_counts()
    span = pd.date_range(hours.min(), hours.max(), freq="h")
    series = counts.reindex(span, fill_value=0)
    # usual traffic of each hour of the day, over the whole table
    slot = series.index.hour
    expected = series.groupby(slot).transform("mean").to_numpy()
    empty = (series.to_numpy() == 0).astype(int)
    holes: list[str] = []
    i = 0
    while i < len(empty):
        if empty[i]:
            j = i
            while j + 1 < len(empty) and empty[j + 1]:
                j += 1
            if expected[i : j + 1].sum() >= HOLE_EXPECTED:
                holes.append(f"{span[i]:%Y-%m-%d %H:00} to {span[j] + pd.Timedelta(hours=1):%H:00}")
            i = j + 1
        else:
            i += 1
    return len(holes), holes


def _completeness(report: Any) -> tuple[int, list[str], str] | None:
    """Read whatever completeness the last sync reported: a ``SyncResult`` (``complete`` and
    per-resource results), a mapping (``_state.json`` or a report dict) or a bool."""
    if report is None:
        return None
    if isinstance(report, bool):
        return (0 if report else 1), ([] if report else ["incomplete"]), ""
    if isinstance(report, Mapping):
        items = report.items()
    else:
        resources = getattr(report, "resources", None)
        if isinstance(resources, Mapping):
            items = resources.items()
        else:
            flag = getattr(report, "complete", None)
            return None if flag is None else _completeness(bool(flag))
    bad: list[str] = []
    notes: list[str] = []
    for name, value in items:
        done: Any = value
        if isinstance(value, Mapping):
            done = value.get("complete", value.get("completeness", {}))
            if isinstance(done, Mapping):
                done = done.get("complete")
        elif hasattr(value, "complete"):
            done = value.complete
        if isinstance(done, bool):
            if not done:
                bad.append(str(name))
            notes.append(f"{name}: {'complete' if done else 'incomplete'}")
    if not notes and isinstance(report, Mapping) and isinstance(report.get("complete"), bool):
        return _completeness(bool(report["complete"]))
    if not notes:
        return None
    return len(bad), bad, "; ".join(notes)


def quality(
    payments: Any,
    refunds: Any,
    *,
    completeness: Any = None,
    tz: str = "UTC",
) -> pd.DataFrame:
    """One row per rule of :data:`QUALITY_RULES`: ``rule``, ``description``, ``checked``
    (rows the rule looked at), ``count`` (rows breaking it), ``ok`` and ``examples`` (up to
    five ids, or hour ranges for holes).

    ``completeness``: what the last sync said about itself, if at hand: a ``SyncResult``, its
    per-resource report, the datasets' ``_state.json`` contents ({resource: state}) or a bool;
    the rule is left out when nothing is given.

    Takes pandas or lazy tables (DuckDB, Spark): of a lazy table only the columns the rules read
    are collected.

    Example: ``quality(payments, refunds).query("not ok")``.
    """
    payments = narrow(payments, _PAYMENT_COLUMNS)
    refunds = narrow(refunds, _REFUND_COLUMNS)
    rows: list[dict[str, Any]] = []

    def add(
        rule: str, checked: int, broken: pd.Series | list[str], count: int | None = None
    ) -> None:
        examples = [str(x) for x in list(broken)[:EXAMPLES]]
        n = len(broken) if count is None else count
        rows.append(
            {
                "rule": rule,
                "description": QUALITY_RULES[rule],
                "checked": int(checked),
                "count": int(n),
                "ok": n == 0,
                "examples": examples,
            }
        )

    pay = payments.drop_duplicates("id", keep="last")
    ref = refunds.drop_duplicates("id", keep="last")
    live = ref[ref["status"].isin(_LIVE_REFUND).fillna(False).astype(bool)]
    refunded_sum = live.groupby("payment_id")["amount"].sum()
    by_id = pay.set_index("id")

    total = refunded_sum.reindex(by_id.index).fillna(0).astype("int64")
    recorded = by_id["refunded_amount"].fillna(0).astype("int64")
    add(
        "refunded_amount_matches_refunds",
        len(by_id),
        by_id.index[(recorded != total).to_numpy()].tolist(),
    )

    captured = _captured_amount(pay).set_axis(pay["id"])
    should = (
        (recorded > 0)
        & (recorded >= captured.reindex(by_id.index).fillna(0))
        & (captured.reindex(by_id.index).fillna(0) > 0)
    )
    flag = by_id["refunded"].fillna(False).astype(bool)
    add(
        "refunded_flag_matches_amounts",
        len(by_id),
        by_id.index[(flag != should.astype(bool)).to_numpy()].tolist(),
    )

    orphan = ~ref["payment_id"].isin(by_id.index)
    add("refund_payment_cached", len(ref), ref.loc[orphan.to_numpy(), "id"].tolist())

    cap = pay["captured"].astype("boolean")
    succeeded = pay["status"].eq("succeeded").fillna(False).astype(bool)
    known = pay["status"].ne("unknown").fillna(False).astype(bool)
    mismatch = known & (cap.fillna(False).astype(bool) != succeeded) | (known & cap.isna())
    add(
        "captured_flag_matches_status",
        int(known.sum()),
        pay.loc[mismatch.to_numpy(), "id"].tolist(),
    )

    joined = ref.merge(
        pay[["id", "currency"]].rename(columns={"id": "payment_id", "currency": "pay_currency"}),
        on="payment_id",
        how="inner",
    )
    wrong = (
        joined["currency"].astype(str).str.upper() != joined["pay_currency"].astype(str).str.upper()
    )
    add("refund_currency_matches_payment", len(joined), joined.loc[wrong.to_numpy(), "id"].tolist())

    over = refunded_sum.reindex(by_id.index).fillna(0) > captured.reindex(by_id.index).fillna(0)
    has_refunds = by_id.index.isin(refunded_sum.index)
    add(
        "refunds_within_captured_amount",
        int(has_refunds.sum()),
        by_id.index[(over.to_numpy() & has_refunds)].tolist(),
    )

    dup = payments["id"][payments["id"].duplicated(keep="first")].unique().tolist()
    add("payment_ids_unique", len(payments), dup)
    dup = refunds["id"][refunds["id"].duplicated(keep="first")].unique().tolist()
    add("refund_ids_unique", len(refunds), dup)

    count, holes = _hourly_holes(pay, tz)
    hours = (
        0
        if pay.empty
        else int((pay["created_at"].max() - pay["created_at"].min()).total_seconds() // 3600 + 1)
    )
    add("no_hourly_holes", hours, holes, count)

    report = _completeness(completeness)
    if report is not None:
        bad, names, notes = report
        add("last_sync_complete", max(1, len(notes.split(";")) if notes else 1), names, bad)
    out = pd.DataFrame(rows, columns=["rule", "description", "checked", "count", "ok", "examples"])
    out["rule"] = out["rule"].astype("string")
    out["description"] = out["description"].astype("string")
    out["ok"] = out["ok"].astype(bool)
    return out
