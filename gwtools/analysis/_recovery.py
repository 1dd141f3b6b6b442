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

Everything runs in the table's engine (pandas, a lazy DuckDB table, Spark): the order id is read
from the ``metadata`` JSON by the engine's own JSON reader (:func:`_engine.json_field`), the
chains are window functions over (customer, currency, amount) in creation order, and orders are
group-wise aggregates. Only small results come back: one row per group for :func:`recovery` and
:func:`acceptance`; :func:`orders` and :func:`order_key` are row-level (one per order/payment).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Sequence
from typing import Any, Final

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools._errors import ConfigurationError
from gwtools.analysis import _engine as E
from gwtools.analysis._declines import (
    RETRY_ADVICE,
    UNCLASSIFIED_ADVICE,
    reason_expr,
    type_expr,
)
from gwtools.analysis._rates import By, add_rate, as_list, finish_keys, lazy_keys, outcome_counts

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


_FINISHED: Final = ("succeeded", "failed", "abandoned")
#: Creation order within a group: time, then id (ties at one instant are rare but possible).
_ORDER_BY: Final = ["created_at", "id"]
_CHAIN: Final = ["_cand", "customer_id", "currency", "amount"]
#: An order, as group keys: ``_okind`` (0 order id, 1 customer chain, 2 payment alone) and
#: ``_okey`` (the order id, or the chain's first payment id, or the payment id). Grouping by
#: the two costs a quarter less than by their concatenated text (1.8 s against 2.5 s per 10M
#: on DuckDB), so ``order`` (:func:`_order_text`) is spelled out only where it is shown.
_ORDER: Final = ["_okind", "_okey"]
_PREFIXES: Final = {0: "order:", 1: "customer:", 2: "payment:"}


def _gap_seconds(window: pd.Timedelta | str) -> float:
    gap: Any = pd.NaT
    # A bare number would read as nanoseconds.
    if isinstance(window, str | dt.timedelta | np.timedelta64):
        with contextlib.suppress(ValueError):
            gap = pd.Timedelta(window)
    if pd.isna(gap) or gap <= pd.Timedelta(0):
        raise ConfigurationError(
            f"window={window!r} is not a positive duration: use e.g. '24h', '30min' or a "
            "pandas Timedelta",
            param="window",
        )
    return float(gap.total_seconds())


#: What an order's row needs of its payments (beyond ``metadata``, read first).
_NEEDED: Final = (
    "id", "created_at", "outcome", "amount", "currency", "method_type", "card_brand",
    "fpx_bank_code", "customer_id", "failure_code", "decline_code",
)  # fmt: skip


def with_order(
    table: E.Table,
    *,
    key: str = ORDER_KEY,
    window: pd.Timedelta | str = ORDER_WINDOW,
    columns: Sequence[str] = _NEEDED,
) -> nw.LazyFrame[Any]:
    """``table``'s ``columns`` as a LazyFrame with the order's group keys (``_okind``,
    ``_okey``: see :func:`order_key`), ``_first`` and ``_last`` (the order's first and last
    attempt in creation order), on its engine."""
    return _ends(_keyed(table, key, window, columns).drop("_oid", "_first_id"))


def _keyed(
    table: E.Table, key: str, window: pd.Timedelta | str, columns: Sequence[str]
) -> nw.LazyFrame[Any]:
    """``table``'s ``columns`` with the order's group keys (``_okind``, ``_okey``), ``_oid``
    (the order id, or null) and ``_first_id`` (the first payment of a customer chain, null
    off chains)."""
    if not isinstance(key, str) or not key.strip():
        raise ConfigurationError(
            f"key={key!r}: name the metadata field that holds the order id, e.g. "
            f"key={ORDER_KEY!r} (the default)",
            param="key",
        )
    lf = E.json_field(E.lazy(table), "metadata", key, "_oid")
    # Only the columns an order needs travel on (not the JSON texts).
    lf = lf.select(*dict.fromkeys([*_NEEDED[:6], "customer_id", *columns]), "_oid")
    oid = nw.col("_oid")
    # Never null (is_null tests only); the customer first, so the engine reads the order id
    # (parses the JSON again, in the filter) only for payments of a known customer.
    cand = ~nw.col("customer_id").is_null() & oid.is_null()
    if isinstance(table, pd.DataFrame):
        # pandas keeps its rows where they are: chains computed over the whole frame.
        chained = _chains(lf.with_columns(_cand=E.flag(cand)), window)
        first_id = nw.when(nw.col("_cand") == 1).then(nw.col("_first_id"))
        chained = chained.with_columns(_first_id=first_id).drop("_cand")
    else:
        # Engines: the chain windows sort only the payments without an order id; the others
        # pass by once (no filter re-reading their order id) and pick up their chain's first
        # payment by id (no match off chains: null).
        chains = _chains(lf.filter(cand).with_columns(_cand=E.flag(cand)), window)
        chained = lf.join(chains.select("id", "_first_id"), on="id", how="left")
    chain = nw.col("_first_id")
    kind = nw.when(~oid.is_null()).then(0).when(~chain.is_null()).then(1).otherwise(2)
    return chained.with_columns(_okind=kind, _okey=nw.coalesce(oid, chain, nw.col("id")))


def _order_text() -> nw.Expr:
    """The order as shown: ``order:<id>``, ``customer:<first payment id>`` or
    ``payment:<id>``, from the group keys."""
    return nw.concat_str(E.when_map(nw.col("_okind"), _PREFIXES), nw.col("_okey"))


def _ends(rows: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
    """``_first`` and ``_last``: whether a row is its order's first or last attempt."""
    return rows.with_columns(
        _first=nw.col("id").shift(1).over(*_ORDER, order_by=_ORDER_BY).is_null(),
        _last=nw.col("id").shift(-1).over(*_ORDER, order_by=_ORDER_BY).is_null(),
    )


def _chains(lf: nw.LazyFrame[Any], window: pd.Timedelta | str) -> nw.LazyFrame[Any]:
    """``_first_id``: the first payment of each customer chain (rule 2 of the module)."""
    prev_at = nw.col("created_at").shift(1).over(*_CHAIN, order_by=_ORDER_BY)
    prev_outcome = nw.col("outcome").shift(1).over(*_CHAIN, order_by=_ORDER_BY)
    lf = lf.with_columns(_prev_at=prev_at, _prev_outcome=prev_outcome)
    close = E.truthy(
        E.seconds_between(lf, nw.col("created_at"), nw.col("_prev_at")) <= _gap_seconds(window)
    )
    after_success = E.truthy(nw.col("_prev_outcome") == "succeeded")
    lf = lf.with_columns(_new=E.flag(~close | after_success))
    lf = lf.with_columns(_chain=nw.col("_new").cum_sum().over(*_CHAIN, order_by=_ORDER_BY))
    first_id = nw.when(nw.col("_new") == 1).then(nw.col("id")).max()
    lf = lf.with_columns(_first_id=first_id.over(*_CHAIN, "_chain"))
    return lf.drop("_prev_at", "_prev_outcome", "_new", "_chain")


def order_key(
    payments: E.Table, *, key: str = ORDER_KEY, window: pd.Timedelta | str = ORDER_WINDOW
) -> pd.Series:
    """Each payment's order, as a string: ``order:<id>``, ``customer:<first payment id>`` or
    ``payment:<id>`` (see the module docstring for the rule). A pandas table keeps its order
    and index; other engines give rows in creation order.

    Example: ``payments.groupby(order_key(payments)).size()``: how many attempts each order
    took.
    """
    lf = _keyed(payments, key, window, _NEEDED[:6])
    if isinstance(payments, pd.DataFrame):
        # pandas keeps its rows where they were (windows included).
        out = E.to_pandas(lf.select(_order_text().alias("order")))["order"]
        return pd.Series(out.to_numpy(), index=payments.index, dtype="string", name="order")
    ordered = lf.sort(*_ORDER_BY, nulls_last=True)
    out = E.to_pandas(ordered.select(_order_text().alias("order")))["order"]
    return out.astype("string")


#: An order's first-attempt fields in :func:`orders` (besides ``id``, ``outcome``, reason).
_FIELDS: Final = ("created_at", "amount", "currency", "method_type", "card_brand",
                  "fpx_bank_code", "customer_id")  # fmt: skip


def _per_order(
    lf: nw.LazyFrame[Any], fields: Sequence[str] = _FIELDS, *, ids: bool = True
) -> nw.LazyFrame[Any]:
    """One row per order of a :func:`_keyed` frame: first-attempt ``fields`` (and
    ``first_payment_id`` with ``ids``), counts, flags; one group-by, no windows."""
    outcome = nw.col("outcome")
    lf = lf.with_columns(
        _reason=reason_expr(),
        _decided=E.flag(outcome.is_in(list(_DECIDED))),
        _won=E.flag(outcome == "succeeded"),
        _won_at=nw.when(E.truthy(outcome == "succeeded")).then(nw.col("created_at")),
    )
    first = {
        **({"first_payment_id": "id"} if ids else {}),
        **{c: c for c in dict.fromkeys(["created_at", *fields])},
        "first_outcome": "outcome",
        "_reason": "_reason",
    }
    agg = E.first_last(
        lf,
        _ORDER,
        _ORDER_BY,
        first=first,
        last={"_last_outcome": "outcome"},
        aggs={
            "attempts": ("len", None),
            "decided_attempts": ("sum", "_decided"),
            "_wins": ("sum", "_won"),
            "_won_at": ("min", "_won_at"),
        },
    )
    failed_first = E.truthy(nw.col("first_outcome") == "failed")
    won = nw.col("_wins") > 0
    reason = nw.when(failed_first).then(nw.col("_reason"))
    agg = agg.with_columns(
        first_decline_reason=reason,
        first_decline_type=nw.when(failed_first).then(type_expr(nw.col("_reason"))),
        final_outcome=nw.when(won).then(nw.lit("succeeded")).otherwise(nw.col("_last_outcome")),
        recovered=failed_first & won,
    )
    minutes = E.seconds_between(agg, nw.col("_won_at"), nw.col("created_at")) / 60
    return agg.with_columns(
        minutes_to_recovery=nw.when(nw.col("recovered")).then(minutes),
        _decided_any=nw.col("decided_attempts") > 0,
        _finished=won | E.truthy(nw.col("_last_outcome").is_in(list(_FINISHED))),
    )


_ORDER_OUT: Final = [
    "order", "first_payment_id", "created_at", "amount", "currency", "method_type",
    "card_brand", "fpx_bank_code", "customer_id", "attempts", "decided_attempts",
    "first_outcome", "first_decline_reason", "first_decline_type", "final_outcome",
    "recovered", "minutes_to_recovery",
]  # fmt: skip


def orders(
    payments: E.Table, *, key: str = ORDER_KEY, window: pd.Timedelta | str = ORDER_WINDOW
) -> pd.DataFrame:
    """One row per order: its first attempt's fields (``first_payment_id``, ``created_at``,
    ``amount``, ``currency``, ``method_type``, ``card_brand``, ``fpx_bank_code``,
    ``customer_id``), ``attempts``, ``decided_attempts``, ``first_outcome``,
    ``first_decline_reason``/``first_decline_type`` (when the first attempt failed),
    ``final_outcome`` (``succeeded`` when any attempt succeeded, else the last attempt's
    outcome), ``recovered`` (first attempt failed, a later one succeeded) and
    ``minutes_to_recovery`` (first attempt to the first success). Sorted by order.

    Example: ``orders(payments).query("recovered")``: the orders retries won back.
    """
    per_order = _per_order(_keyed(payments, key, window, _NEEDED))
    per_order = per_order.with_columns(order=_order_text())
    out = E.to_pandas(per_order.select(_ORDER_OUT).sort("order"))
    text = ["order", "first_payment_id", "first_outcome", "first_decline_reason",
            "first_decline_type", "final_outcome"]  # fmt: skip
    return out.astype(
        {
            **{c: "string" for c in text},
            "attempts": "int64",
            "decided_attempts": "int64",
            "recovered": bool,
            "minutes_to_recovery": "float64",
        }
    )


def recovery(
    payments: E.Table,
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
    keys = as_list(by)
    if keys == ["decline_reason"]:
        keys = ["decline_type", "decline_reason"]
    allowed = {"decline_reason", "decline_type", "method_type", "card_brand", "fpx_bank_code",
               "currency", "amount", "customer_id"}  # fmt: skip
    missing = [k for k in keys if k not in allowed]
    if missing:
        raise ConfigurationError(
            f"cannot group recovery by {missing}: use decline_reason, decline_type or a column "
            "of the first attempt (method_type, card_brand, fpx_bank_code, currency)"
            f"{E.did_you_mean(missing[0], sorted(allowed))}",
            param="by",
        )
    # An order whose first attempt failed holds a failed payment: only those orders' payments
    # go to the per-order group-by (a tenth of the table). A semi join on the order id against
    # the failed payments' ids (no second keying of the table: no windows, no chains); rows
    # without an order id (customer chains, payments alone) join on "" (never an order id),
    # which every failed payment without an order id brings. Extra rows are harmless (the
    # per-order filter below decides); none that matters is left out.
    rows = _keyed(payments, key, window, _NEEDED)
    failed = E.truthy(nw.col("outcome") == "failed")
    probe = nw.coalesce(nw.col("_oid"), nw.lit(""))
    failed_keys = E.json_field(E.lazy(payments).filter(failed), "metadata", key, "_oid")
    failed_keys = failed_keys.group_by(probe.alias("_probe")).agg(nw.len().alias("_n"))
    chained_or_failed = ~nw.col("_first_id").is_null() | failed
    rows = rows.with_columns(
        _probe=nw.when(~nw.col("_oid").is_null() | chained_or_failed).then(probe)
    ).join(failed_keys.select("_probe"), on="_probe", how="semi")
    fields = [k for k in keys if k not in ("decline_reason", "decline_type")]
    per_order = _per_order(rows, fields, ids=False)
    declined = per_order.filter(E.truthy(nw.col("first_outcome") == "failed")).rename(
        {"first_decline_reason": "decline_reason", "first_decline_type": "decline_type"}
    )
    declined = declined.with_columns(
        _retried=E.flag(nw.col("attempts") > 1), _recovered=E.flag(nw.col("recovered"))
    )
    sums = (
        nw.len().alias("orders"),
        nw.col("_retried").sum().alias("retried"),
        nw.col("_recovered").sum().alias("recovered"),
        nw.col("minutes_to_recovery").median().alias("median_minutes_to_recovery"),
    )
    # No keys: one overall row (pandas has no group-by of no keys).
    table = E.to_pandas(declined.group_by(keys).agg(*sums) if keys else declined.select(*sums))
    table = table.astype(
        {
            "orders": "int64",
            "retried": "int64",
            "recovered": "int64",
            "median_minutes_to_recovery": "float64",
        }
    )
    for k in ("decline_reason", "decline_type"):
        if k in table:
            table[k] = table[k].astype("string")
    table = add_rate(table, "recovered", "orders")
    table = add_rate(table, "recovered", "retried", name="after_retry_rate")
    if "decline_reason" in keys:
        reason = table["decline_reason"]
        table["advice"] = reason.map(RETRY_ADVICE).fillna(UNCLASSIFIED_ADVICE).astype("string")
        kind = table["decline_type"]
        table["retry_advised"] = kind.map({"soft": True, "hard": False}).astype("boolean")
    rank = {"soft": 0, "hard": 1, "unclassified": 2}
    # Most orders first; ties by the keys, so every engine gives the same order.
    sort, ascending = ["orders", *keys], [False, *[True] * len(keys)]
    if "decline_type" in keys:
        table["_rank"] = table["decline_type"].map(rank).fillna(3)
        sort, ascending = ["_rank", *sort], [True, *ascending]
    table = table.sort_values(sort, ascending=ascending, na_position="last", kind="stable")
    return table.drop(columns=["_rank"], errors="ignore").reset_index(drop=True)


_FLAGS: Final = ("won", "decided", "finished", "_ambiguous")
#: Past any time's ``2·epoch_us + 1`` (year 2262 and beyond): marks an undated attempt.
_UNDATED: Final = 2**62


def _order_flags(rows: nw.LazyFrame[Any], keys: Sequence[str], *, exact: bool) -> nw.LazyFrame[Any]:
    """One row per order of a :func:`_keyed` frame: its first attempt's ``keys`` and 0/1
    ``won`` (an attempt succeeded), ``decided`` (one succeeded or failed), ``finished`` (won,
    or the last attempt finished) and ``_ambiguous``.

    Not ``exact``, and ``keys`` at most ``period``, the ends are read without ids (one cheap
    group-by of integers): the first attempt's period is the least (a period never decreases
    with time); of the attempts at the order's last instant ``t``, ``max(2·t + finished)``
    and ``max(2·t + 1 - finished)`` say whether some finished and some did not. Only then
    (or without a time) would the ids decide: ``_ambiguous`` is 1, the caller runs ``exact``.
    """
    outcome = nw.col("outcome")
    rows = rows.with_columns(
        _won=E.flag(outcome == "succeeded"),
        _decided=E.flag(outcome.is_in(list(_DECIDED))),
        _fin=E.flag(outcome.is_in(list(_FINISHED))),
    )
    won = nw.col("_won") > 0
    if exact or any(k != "period" for k in keys):
        per = E.first_last(
            rows,
            _ORDER,
            _ORDER_BY,
            first={k: k for k in keys},
            last={"_last_fin": "_fin"},
            aggs={"_won": ("max", "_won"), "_decided": ("max", "_decided")},
        )
        finished, ambiguous = won | (nw.col("_last_fin") == 1), nw.lit(False)
    else:
        # Few aggregates, as the hash table holds one row per order: ``_code`` 2 succeeded, 1
        # failed, its max says won and decided; an undated attempt puts _end_open past any
        # time (the ids and nulls-first order decide then: ambiguous).
        twice = E.epoch_us(rows, nw.col("created_at")) * 2
        undated = nw.col("created_at").is_null()
        code = nw.when(outcome == "succeeded").then(2).when(outcome == "failed").then(1)
        rows = rows.with_columns(
            _code=code.otherwise(0).fill_null(0),
            _end_fin=twice + nw.col("_fin"),
            _end_open=nw.when(undated).then(nw.lit(_UNDATED)).otherwise(twice + 1 - nw.col("_fin")),
        )
        per = rows.group_by(*_ORDER).agg(
            *(nw.col(k).min() for k in keys),
            nw.col("_code").max(),
            nw.col("_end_fin").max(),
            nw.col("_end_open").max(),
        )
        won = nw.col("_code") == 2
        rows_decided = nw.col("_code") > 0
        last_fin = E.truthy(nw.col("_end_fin") > nw.col("_end_open"))
        tied = ~E.truthy(nw.col("_end_fin") != nw.col("_end_open"))
        finished = won | last_fin
        ambiguous = (~won & tied) | (nw.col("_end_open") == _UNDATED)
        per = per.with_columns(_decided=E.flag(rows_decided))
    return per.with_columns(
        won=E.flag(won),
        decided=E.flag(nw.col("_decided") > 0),
        finished=E.flag(finished),
        _ambiguous=E.flag(ambiguous),
    )


def _collect_counts(per: nw.LazyFrame[Any], keys: Sequence[str], tz: str | None) -> pd.DataFrame:
    """Sums of :func:`_order_flags` per group (all orders without ``keys``), collected."""
    sums = [nw.col(c).sum() for c in _FLAGS]
    if keys:
        out = finish_keys(E.to_pandas(per.group_by(list(keys)).agg(*sums)), list(keys), tz)
    else:
        out = E.to_pandas(per.select(*sums))
    out[list(_FLAGS)] = out[list(_FLAGS)].fillna(0).astype("int64")
    return out


def acceptance(
    payments: E.Table,
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
    counts = outcome_counts(payments, by, freq, tz)  # also refuses a key it cannot group by
    # Orders first, then the group keys: a computed ``period`` between the scan and the
    # chains' filter keeps DuckDB from pushing that filter (the JSON order id) into the
    # Parquet scan, which then reads every column of every customer's payment.
    source = [k for k in as_list(by) if k != "amount_band"]
    if "amount_band" in as_list(by):
        source.append("amount_major")  # bands are read from it (amount and currency travel)
    attempts = _keyed(payments, key, window, ["id", "created_at", "outcome", *source])
    keyed, keys = lazy_keys(attempts, by, freq, tz)
    order_counts = _collect_counts(_order_flags(keyed, keys, exact=False), keys, tz)
    if order_counts["_ambiguous"].sum() > 0:
        # Attempts of one order at one instant that disagree: only ids tell the last one.
        order_counts = _collect_counts(_order_flags(keyed, keys, exact=True), keys, tz)
    if keys:
        # Every group and period the attempts have (periods without payments included): an
        # order sits in its first attempt's, so a period of retries alone has no orders.
        order_counts = counts[keys].merge(order_counts, on=keys, how="left")
        order_counts[list(_FLAGS)] = order_counts[list(_FLAGS)].fillna(0).astype("int64")
    order_counts = order_counts.drop(columns="_ambiguous")
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
