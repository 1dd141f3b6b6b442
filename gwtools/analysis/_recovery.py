"""Orders, attempt chains and recovery: did retrying a declined payment win the order back?

A customer who is declined often tries again, so one order can be several payments. Rates per
payment (attempt) and per order answer different questions; :func:`acceptance` gives both.

Order rule (:func:`order_key`), in this order:

1. ``metadata`` holds the order id (top-level key ``order_id`` by default): every payment with
   the same value is one order, whatever its amount or time.
2. Otherwise, payments of one ``customer_id`` with the same amount and currency form one order
   while each attempt follows the previous one within ``window`` (24 hours by default) and no
   earlier attempt of the chain succeeded: a success ends the order.
3. Otherwise the payment is an order of its own: nothing tells its retries apart.

The work is a sort and group-wise aggregates on the payments table; everything after that
(rates, intervals) runs on one small row per order or per group. Every function takes the tables
the engine layer takes (pandas, a lazy DuckDB table, Spark): the order id lives in ``metadata``
JSON, which the engines cannot read, so the columns an order needs are collected (see
:func:`narrow`) and the chains are built in pandas.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson
import pandas as pd

from gwtools.analysis._declines import (
    RETRY_ADVICE,
    UNCLASSIFIED_ADVICE,
    decline_reason,
    decline_type,
)
from gwtools.analysis._rates import By, add_rate, as_list, outcome_counts, with_keys

#: The metadata key that names a payment's order.
ORDER_KEY: Final = "order_id"
#: Longest gap between two attempts of one order when there is no order id.
ORDER_WINDOW: Final = pd.Timedelta(hours=24)

#: What order grouping and the acceptance metrics read of a payment.
ORDER_COLUMNS: Final = (
    "id",
    "status",
    "outcome",
    "amount",
    "amount_major",
    "currency",
    "method_type",
    "payment_method_id",
    "card_brand",
    "fpx_bank_code",
    "fpx_bank",
    "failure_code",
    "decline_code",
    "customer_id",
    "metadata",
    "captured_at",
    "created_at",
    "updated_at",
)

_DECIDED: Final = ("succeeded", "failed")


def narrow(
    table: Any,
    columns: Sequence[str],
    *,
    since: pd.Timestamp | None = None,
    until: pd.Timestamp | None = None,
) -> pd.DataFrame:
    """``table`` as pandas for an analysis that must finish row by row in pandas: a pandas
    table as it is; a lazy table (DuckDB, Spark, Narwhals) with only ``columns`` (those it has)
    and, with ``since``/``until``, only rows created in ``[since, until]``, filtered in its engine
    before anything is collected."""
    if isinstance(table, pd.DataFrame):
        return table
    import narwhals as nw

    from gwtools.analysis import _engine as E

    lf = E.lazy(table)
    present = E.columns_of(lf)
    if since is not None:
        lf = lf.filter(E.truthy(nw.col("created_at") >= since.tz_convert("UTC").to_pydatetime()))
    if until is not None:
        lf = lf.filter(E.truthy(nw.col("created_at") <= until.tz_convert("UTC").to_pydatetime()))
    return E.to_pandas(lf.select([c for c in dict.fromkeys(columns) if c in present]))


_FINISHED: Final = ("succeeded", "failed", "abandoned")


def _metadata_value(text: Any, key: str) -> str | None:
    if not isinstance(text, str) or key not in text:
        return None
    try:
        meta = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    value = meta.get(key) if isinstance(meta, dict) else None
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def order_key(
    payments: pd.DataFrame, *, key: str = ORDER_KEY, window: pd.Timedelta | str = ORDER_WINDOW
) -> pd.Series:
    """Each payment's order, as a string: ``order:<id>``, ``customer:<first payment id>`` or
    ``payment:<id>`` (see the module docstring for the rule)."""
    payments = narrow(payments, ORDER_COLUMNS)
    gap = pd.Timedelta(window)
    out = pd.Series(pd.NA, index=payments.index, dtype="string", name="order")
    ids = payments["metadata"].map(lambda t: _metadata_value(t, key))
    has_id = ids.notna()
    out[has_id] = "order:" + ids[has_id].astype(str)
    rest = payments[~has_id & payments["customer_id"].notna()]
    if not rest.empty:
        rest = rest.sort_values(["customer_id", "currency", "amount", "created_at", "id"])
        same = (
            rest[["customer_id", "currency", "amount"]]
            .astype(str)
            .eq(rest[["customer_id", "currency", "amount"]].shift().astype(str))
            .all(axis=1)
        )
        close = rest["created_at"].diff() <= gap
        after_success = rest["outcome"].shift().eq("succeeded").fillna(False).astype(bool)
        new = ~(same & close.fillna(False).astype(bool)) | after_success
        chain = new.cumsum()
        first_id = rest["id"].groupby(chain).transform("first")
        out[rest.index] = "customer:" + first_id.astype(str)
    alone = out.isna()
    out[alone] = "payment:" + payments.loc[alone, "id"].astype(str)
    return out


def orders(
    payments: pd.DataFrame, *, key: str = ORDER_KEY, window: pd.Timedelta | str = ORDER_WINDOW
) -> pd.DataFrame:
    """One row per order: its first attempt's fields (``first_payment_id``, ``created_at``,
    ``amount``, ``currency``, ``method_type``, ``card_brand``, ``fpx_bank_code``,
    ``customer_id``), ``attempts``, ``decided_attempts``, ``first_outcome``,
    ``first_decline_reason``/``first_decline_type`` (when the first attempt failed),
    ``final_outcome`` (``succeeded`` when any attempt succeeded, else the last attempt's
    outcome), ``recovered`` (first attempt failed, a later one succeeded) and
    ``minutes_to_recovery`` (first attempt to the first success).

    Example: ``orders(payments).query("recovered")``: the orders retries won back.
    """
    payments = narrow(payments, ORDER_COLUMNS)
    frame = payments.assign(order=order_key(payments, key=key, window=window))
    frame = frame.sort_values(["order", "created_at", "id"], kind="stable")
    grouped = frame.groupby("order", sort=True)
    first = grouped.head(1).set_index("order")
    last = grouped.tail(1).set_index("order")
    won = frame[frame["outcome"] == "succeeded"].groupby("order").head(1).set_index("order")
    out = pd.DataFrame(index=first.index)
    out["first_payment_id"] = first["id"]
    for col in ("created_at", "amount", "currency", "method_type", "card_brand"):
        out[col] = first[col]
    out["fpx_bank_code"] = first["fpx_bank_code"]
    out["customer_id"] = first["customer_id"]
    out["attempts"] = grouped.size().astype("int64")
    out["decided_attempts"] = frame["outcome"].isin(_DECIDED).groupby(frame["order"]).sum()
    out["decided_attempts"] = out["decided_attempts"].astype("int64")
    out["first_outcome"] = first["outcome"]
    failed_first = first["outcome"] == "failed"
    reason = decline_reason(first).where(failed_first)
    out["first_decline_reason"] = reason.astype("string")
    out["first_decline_type"] = decline_type(reason).where(failed_first).astype("string")
    final = last["outcome"].astype("string").copy()
    final[final.index.isin(won.index)] = "succeeded"
    out["final_outcome"] = final
    out["recovered"] = (failed_first & (final == "succeeded")).astype(bool)
    minutes = (won["created_at"] - first["created_at"].reindex(won.index)).dt.total_seconds() / 60
    out["minutes_to_recovery"] = minutes.reindex(out.index).where(out["recovered"])
    return out.reset_index()


def recovery(
    payments: pd.DataFrame,
    by: By = "decline_reason",
    *,
    key: str = ORDER_KEY,
    window: pd.Timedelta | str = ORDER_WINDOW,
) -> pd.DataFrame:
    """Recovery of orders whose first attempt was declined, per decline reason (default) or
    ``by="decline_type"`` (soft, hard, unclassified) or another first-attempt column.

    Columns: the keys, ``decline_type``, ``advice`` and ``retry_advised`` (what
    ``RETRY_ADVICE`` says, when grouping by reason), ``orders`` (first attempt declined),
    ``retried`` (more attempts followed), ``recovered`` (one of them succeeded), ``rate`` =
    recovered / orders with ``ci_low``/``ci_high`` (Wilson 95%), ``after_retry_rate`` =
    recovered / retried with its interval, and ``median_minutes_to_recovery``.
    Compare soft and hard rows to check the advice against what customers achieved.

    Example: ``recovery(payments, by="decline_type")``.
    """
    per_order = orders(payments, key=key, window=window)
    declined = per_order[per_order["first_outcome"] == "failed"].rename(
        columns={"first_decline_reason": "decline_reason", "first_decline_type": "decline_type"}
    )
    keys = as_list(by)
    if keys == ["decline_reason"]:
        keys = ["decline_type", "decline_reason"]
    missing = [k for k in keys if k not in declined.columns]
    if missing:
        raise ValueError(
            f"cannot group recovery by {missing}: use decline_reason, decline_type or a column "
            "of the first attempt (method_type, card_brand, fpx_bank_code, currency)"
        )
    declined = declined.assign(retried=declined["attempts"] > 1)
    table = declined.groupby(keys, dropna=False, observed=True).agg(
        orders=("order", "size"),
        retried=("retried", "sum"),
        recovered=("recovered", "sum"),
        median_minutes_to_recovery=("minutes_to_recovery", "median"),
    )
    table = table.astype({"orders": "int64", "retried": "int64", "recovered": "int64"})
    table = table.reset_index()
    table = add_rate(table, "recovered", "orders")
    table = add_rate(table, "recovered", "retried", name="after_retry_rate")
    if "decline_reason" in keys:
        reason = table["decline_reason"]
        table["advice"] = reason.map(RETRY_ADVICE).fillna(UNCLASSIFIED_ADVICE).astype("string")
        kind = table["decline_type"]
        table["retry_advised"] = kind.map({"soft": True, "hard": False}).astype("boolean")
    order = {"soft": 0, "hard": 1, "unclassified": 2}
    sort = ["orders"]
    if "decline_type" in keys:
        table["_rank"] = table["decline_type"].map(order).fillna(3)
        sort = ["_rank", "orders"]
    table = table.sort_values(sort, ascending=[True] * (len(sort) - 1) + [False])
    return table.drop(columns=["_rank"], errors="ignore").reset_index(drop=True)


def acceptance(
    payments: pd.DataFrame,
    by: By = None,
    freq: str | None = None,
    tz: str | None = None,
    *,
    key: str = ORDER_KEY,
    window: pd.Timedelta | str = ORDER_WINDOW,
) -> pd.DataFrame:
    """The acceptance metrics, raw (per attempt) and deduplicated (per order), long format.

    One row per group and metric, with ``successes``, ``n``, ``rate`` and its Wilson 95%
    interval:

    - ``authorization_rate`` per ``attempt``: succeeded / (succeeded + failed): what the issuer
      or bank decided. Open and abandoned attempts were never decided.
    - ``authorization_rate`` per ``order``: orders with a succeeded attempt / orders with at
      least one decided attempt (retries counted once).
    - ``acceptance_rate`` per ``attempt``: succeeded / finished attempts (succeeded, failed,
      canceled or expired): abandoned checkouts count against it.
    - ``conversion`` per ``order``: orders with a succeeded attempt / finished orders (every
      order not still open).

    An order belongs to the group (and ``period``) of its first attempt. ``by`` names
    payment columns; ``freq`` is day/week/month in ``tz``.

    Example: ``acceptance(payments, by="method_type")``.
    """
    payments = narrow(payments, [*ORDER_COLUMNS, *as_list(by)])
    counts = outcome_counts(payments, by, freq, tz)
    frame, keys = with_keys(payments, by, freq, tz)
    frame = frame.assign(order=order_key(payments, key=key, window=window))
    frame = frame.sort_values(["order", "created_at", "id"], kind="stable")
    grouped = frame.groupby("order", sort=False)
    per_order = grouped.head(1).set_index("order")[keys].copy() if keys else None
    any_success = frame["outcome"].eq("succeeded").groupby(frame["order"]).any()
    any_decided = frame["outcome"].isin(_DECIDED).groupby(frame["order"]).any()
    last_outcome = grouped["outcome"].last()
    finished = any_success | last_outcome.isin(_FINISHED)
    flags = pd.DataFrame(
        {
            "won": any_success.astype("int64"),
            "decided": any_decided.astype("int64"),
            "finished": finished.astype("int64"),
        }
    )
    if per_order is not None:
        flags = flags.join(per_order)
        order_counts = flags.groupby(keys, dropna=False, observed=True)[
            ["won", "decided", "finished"]
        ].sum()
        order_counts = order_counts.reset_index()
    else:
        order_counts = flags.sum().to_frame().T
    rows: list[pd.DataFrame] = []

    def part(table: pd.DataFrame, metric: str, unit: str, num: str, den: str) -> None:
        piece = table[keys].copy() if keys else pd.DataFrame(index=table.index)
        piece["metric"] = metric
        piece["unit"] = unit
        piece["successes"] = table[num].astype("int64").to_numpy()
        piece["n"] = table[den].astype("int64").to_numpy()
        rows.append(piece)

    counts["decided"] = counts["succeeded"] + counts["failed"]
    counts["finished"] = counts["decided"] + counts["abandoned"]
    part(counts, "authorization_rate", "attempt", "succeeded", "decided")
    part(order_counts, "authorization_rate", "order", "won", "decided")
    part(counts, "acceptance_rate", "attempt", "succeeded", "finished")
    part(order_counts, "conversion", "order", "won", "finished")
    out = pd.concat(rows, ignore_index=True)
    out["metric"] = out["metric"].astype("string")
    out["unit"] = out["unit"].astype("string")
    out = add_rate(out, "successes", "n")
    if keys:
        # groups together, the four metrics in the order above within each
        out = out.sort_values(keys, kind="stable", na_position="last")
    return out.reset_index(drop=True)


__all__ = ["ORDER_KEY", "ORDER_WINDOW", "acceptance", "order_key", "orders", "recovery"]
