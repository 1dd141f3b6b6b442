"""Data quality: can I trust these numbers? Consistency rules over the cached tables.

Each rule counts the rows that break it and shows a few examples (ids), so an analyst sees at
a glance whether a figure rests on sound data, and where to look when it does not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools.analysis import _engine as E
from gwtools.analysis._monitor import REFUND_COLUMNS
from gwtools.analysis._refunds import live_expr
from gwtools.analysis._time import resolve_tz

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


def _captured_expr() -> nw.Expr:
    """The captured amount (of a frame with ``_ac``, extra's ``amount_captured`` as text): that
    amount when the gateway sends a whole number (a partial capture), else the whole amount of
    a captured payment, else 0."""
    text = nw.col("_ac")
    whole = E.truthy(text.str.contains(r"^-?[0-9]+$"))
    fallback = nw.when(E.truthy(nw.col("captured"))).then(nw.col("amount")).otherwise(nw.lit(0))
    # Cast only digits (pandas evaluates both branches: a null or a word would not cast).
    number = nw.when(whole).then(text).otherwise(nw.lit("0")).cast(nw.Int64)
    return nw.when(whole).then(number).otherwise(fallback).cast(nw.Int64)


def _count(value: Any) -> int:
    """A collected sum or count as an int (a sum over no rows may come back null)."""
    return 0 if pd.isna(value) else int(value)


def _upper(column: str) -> nw.Expr:
    """Text in capitals, null as empty (a currency code compared across the two tables)."""
    return nw.col(column).str.to_uppercase().fill_null("")


def _hourly_holes(counts: pd.Series, tz: str) -> tuple[int, list[str]]:
    """Holes in per-hour payment counts (index: naive local hour starts in ``tz``, only
    non-empty hours)."""
    if counts.empty:
        return 0, []
    span = pd.date_range(counts.index.min(), counts.index.max(), freq="h")
    # An hour a clock change skips never happened: no payment in it is no hole.
    real = span.tz_localize(tz, ambiguous=np.zeros(len(span), dtype=bool), nonexistent="NaT")
    span = span[np.asarray(real.notna())]
    series = counts.reindex(span, fill_value=0)
    # usual traffic of each hour of the day, over the whole table
    slot = span.hour
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
                start, end = span[i], span[j] + pd.Timedelta(hours=1)
                # The end's date too when the hole runs past its first day (or to midnight).
                shape = "%H:00" if end.date() == start.date() else "%Y-%m-%d %H:00"
                holes.append(f"{start:%Y-%m-%d %H:00} to {end.strftime(shape)}")
            i = j + 1
        else:
            i += 1
    return len(holes), holes


def judge_completeness(report: Any) -> tuple[int, list[str], str] | None:
    """Read whatever completeness the last sync reported: a ``SyncResult`` (``complete`` and
    per-resource results), a mapping (``_state.json`` or a report dict) or a bool. Returns
    how many resources are incomplete, their names and a note per resource; None when
    nothing says."""
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
            return None if flag is None else judge_completeness(bool(flag))
    bad: list[str] = []
    notes: list[str] = []
    for name, value in items:
        done: Any = value
        if isinstance(value, Mapping) and not value:
            # A dataset's state before any sync of it completed: what is cached is partial.
            bad.append(str(name))
            notes.append(f"{name}: no sync completed")
            continue
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
        return judge_completeness(bool(report["complete"]))
    if not notes:
        return None
    return len(bad), bad, "; ".join(notes)


def _flagged(pay: nw.LazyFrame[Any], ref: nw.LazyFrame[Any]) -> nw.LazyFrame[Any]:
    """Payments (one row per id) with a 0/1 column per payment rule, next to their refunds;
    refunds whose payment is missing get a row of their own (``_pay`` 0)."""
    # Each payment's refunds in one row: how many, the live ones' count and sum, and the
    # range of their currencies (all equal to the payment's exactly when min and max are).
    live = live_expr()
    per_payment = ref.with_columns(
        _live=E.flag(live),
        _lamt=nw.when(live).then(nw.col("amount")),
        _rcur=_upper("currency"),
    )
    refs = per_payment.group_by("payment_id").agg(
        nw.len().alias("_nref"),
        nw.col("_live").sum().alias("_nlive"),
        nw.col("_lamt").sum().alias("_rsum"),
        nw.col("_rcur").min().alias("_cmin"),
        nw.col("_rcur").max().alias("_cmax"),
    )
    # One pass over the payments serves every rule: a full join keeps the refunds whose
    # payment is missing.
    marked = pay.with_columns(_p=nw.lit(1))
    pj = marked.join(refs, left_on="id", right_on="payment_id", how="full")
    pj = pj.with_columns(
        _pay=nw.col("_p").fill_null(0),
        _nref=nw.col("_nref").fill_null(0),
        # (a CASE: only the payments with refunds pay for the capitals)
        _pcur=nw.when(E.truthy(nw.col("_nref") > 0)).then(_upper("currency")),
    )
    # The captured amount matters only to payments with refunds (recorded or found): only
    # their ``extra`` is parsed.
    has = E.truthy(nw.col("_nlive") > 0)
    pj = pj.with_columns(_need=E.truthy(nw.col("refunded_amount") > 0) | has)
    pj = E.json_field(pj, "extra", "amount_captured", "_ac", where="_need")
    paid = nw.col("_pay") == 1
    pj = pj.with_columns(
        _total=nw.col("_rsum").fill_null(0),
        _recorded=nw.col("refunded_amount").fill_null(0),
        # (not in a CASE on _need: DuckDB then copies the JSON read into each branch)
        _capt=_captured_expr().fill_null(0),
        _has=E.flag(paid & has),
        _known=E.flag(paid & (nw.col("status") != "unknown")),
    )
    should = (
        (nw.col("_recorded") > 0) & (nw.col("_recorded") >= nw.col("_capt")) & (nw.col("_capt") > 0)
    )
    cap = nw.col("captured")
    succeeded = E.truthy(nw.col("status") == "succeeded")
    known = nw.col("_known") == 1
    differs = (nw.col("_cmin") != nw.col("_pcur")) | (nw.col("_cmax") != nw.col("_pcur"))
    pj = pj.with_columns(
        _r1=E.flag(paid & (nw.col("_recorded") != nw.col("_total"))),
        _r2=E.flag(paid & (E.truthy(nw.col("refunded")) != E.truthy(should))),
        _r4=E.flag(known & ((E.truthy(cap) != succeeded) | cap.is_null())),
        _r6=E.flag((nw.col("_total") > nw.col("_capt")) & (nw.col("_has") == 1)),
        # refunds whose payment is not cached; payments with a refund in another currency
        _orphan=nw.when(paid).then(nw.lit(0)).otherwise(nw.col("_nref")),
        _odd=E.flag(paid & (nw.col("_nref") > 0) & differs),
    )
    return pj


def quality(
    payments: Any,
    refunds: Any,
    *,
    completeness: Any = None,
    tz: str | None = None,
) -> pd.DataFrame:
    """One row per rule of :data:`QUALITY_RULES`: ``rule``, ``description``, ``checked``
    (rows the rule looked at), ``count`` (rows breaking it), ``ok`` and ``examples`` (up to
    five ids, or hour ranges for holes).

    ``completeness``: what the last sync said about itself, if at hand: a ``SyncResult``, its
    per-resource report, the datasets' ``_state.json`` contents ({resource: state}, as a
    :class:`gwtools.Source`'s or a ``load_tables`` result's ``states`` hold them) or a bool;
    the rule is left out when nothing is given. ``tz``: the zone whose clock hours the
    hourly-holes rule counts (default ``GW_TIMEZONE``, else UTC).

    Takes pandas or lazy tables (DuckDB, Spark, both on one engine): every rule runs in the
    engine; only counts, up to five example ids per rule (smallest first) and per-hour counts
    come back. Rules other than the two on unique ids look at one row per id.

    Example: ``quality(payments, refunds).query("not ok")``.
    """
    tz = resolve_tz(tz)
    lp, lr = E.lazy_pair(payments, refunds)
    # Only the columns the rules read (the scan reads no others).
    lp, lr = lp.select(*_PAYMENT_COLUMNS), lr.select(*REFUND_COLUMNS)
    rows: list[dict[str, Any]] = []

    def add(rule: str, checked: int, examples: list[str], count: int) -> None:
        rows.append(
            {
                "rule": rule,
                "description": QUALITY_RULES[rule],
                "checked": int(checked),
                "count": int(count),
                "ok": count == 0,
                "examples": [str(x) for x in examples[:EXAMPLES]],
            }
        )

    def scalar(lf: nw.LazyFrame[Any], **exprs: nw.Expr) -> dict[str, Any]:
        row = E.to_pandas(lf.select(**exprs)).iloc[0]
        return {str(k): (0 if pd.isna(v) else v) for k, v in row.items()}

    def broken(
        lf: nw.LazyFrame[Any], flag: str, n: int | None = None, id_col: str = "id"
    ) -> tuple[list[str], int]:
        """Up to EXAMPLES ids (smallest first, the same on every engine) and the count
        (``n`` when already counted)."""
        if n is None:
            n = int(scalar(lf, n=nw.col(flag).sum())["n"])
        if n == 0:
            return [], 0
        bad = lf.filter(nw.col(flag) == 1).select(nw.col(id_col).alias("x"))
        ids = E.to_pandas(bad.sort("x", nulls_last=True).head(EXAMPLES))["x"]
        return ids.astype(str).tolist(), n

    def duplicated(lf: nw.LazyFrame[Any]) -> tuple[int, list[str], int]:
        """Rows, up to EXAMPLES repeated ids and their count. The rows and the distinct id
        hashes are counted first (as many as rows: no id repeats, and no count per id to
        carry in the analysis's largest hash table); otherwise the distinct ids, and only
        when those are fewer than the rows are the ids grouped for the repeated ones."""

        def distinct(frame: nw.LazyFrame[Any], column: str) -> int:
            # unique() then a count: on DuckDB a partitioned window, 0.95 s at 10M distinct
            # values, against 1.3 s for n_unique() (a split aggregation, for its null term)
            # and 1.4 s for a group-by.
            return _count(scalar(frame.select(column).unique(), n=nw.len())["n"])

        rows = _count(scalar(lf, rows=nw.len())["rows"])
        hashes, name = E.hashed(lf, "id", "_id_hash")
        if rows == distinct(hashes, name):
            return rows, [], 0
        if name != "id" and rows == distinct(lf, "id"):
            return rows, [], 0  # two ids with one hash, none repeated
        counts = lf.group_by("id").agg(nw.len().alias("k"))
        counts = counts.with_columns(_d=E.flag(nw.col("k") > 1))
        return (rows, *broken(counts, "_d"))

    # Duplicated ids first (on the raw rows), then every rule on one row per id.
    pay_rows, dup_pay, n_dup_pay = duplicated(lp)
    ref_rows, dup_ref, n_dup_ref = duplicated(lr)
    # Without duplicates every row is one id already: no window over the whole table.
    pay = lp.unique(subset=["id"], keep="any") if n_dup_pay else lp
    ref = lr.unique(subset=["id"], keep="any") if n_dup_ref else lr
    pj = _flagged(pay, ref)
    sums = ("_pay", "_known", "_has", "_r1", "_r2", "_r4", "_r6", "_nref", "_orphan", "_odd")
    spans = (nw.col("created_at").min().alias("_lo"), nw.col("created_at").max().alias("_hi"))
    got = E.to_pandas(pj.select(*(nw.col(c).sum() for c in sums), *spans)).iloc[0]
    totals = {c: _count(got[c]) for c in sums}
    n_pay = totals["_pay"]

    def pay_rule(flag: str) -> tuple[list[str], int]:
        return broken(pj, flag, totals[flag])

    add("refunded_amount_matches_refunds", n_pay, *pay_rule("_r1"))
    add("refunded_flag_matches_amounts", n_pay, *pay_rule("_r2"))

    # Refund ids as examples need the refunds next to their payment: only when a rule broke.
    ids = pay.select(nw.col("id").alias("payment_id"), nw.col("currency").alias("_pcur"))
    rj = ref.join(ids.with_columns(_p=nw.lit(1)), on="payment_id", how="left")
    rj = rj.with_columns(
        _orphan=E.flag(nw.col("_p").is_null()),
        _wrong=E.flag(~nw.col("_p").is_null() & (_upper("currency") != _upper("_pcur"))),
    )
    n_ref, n_orphan = totals["_nref"], totals["_orphan"]
    add("refund_payment_cached", n_ref, *broken(rj, "_orphan", n_orphan))
    add("captured_flag_matches_status", totals["_known"], *pay_rule("_r4"))
    # No payment with a refund in another currency: none of its refunds is wrong; otherwise
    # the refunds themselves are counted.
    wrong = broken(rj, "_wrong") if totals["_odd"] else ([], 0)
    add("refund_currency_matches_payment", n_ref - n_orphan, *wrong)
    add("refunds_within_captured_amount", totals["_has"], *pay_rule("_r6"))
    add("payment_ids_unique", pay_rows, dup_pay, n_dup_pay)
    add("refund_ids_unique", ref_rows, dup_ref, n_dup_ref)

    hourly = E.with_period(
        pay.filter(~nw.col("created_at").is_null()), "created_at", tz, "h", "_hour"
    )
    per_hour = E.to_pandas(hourly.group_by("_hour").agg(nw.len().alias("n")))
    counts = pd.Series(
        per_hour["n"].to_numpy(),
        index=pd.DatetimeIndex(E.wall_time(per_hour["_hour"])),
    ).sort_index()
    count, holes = _hourly_holes(counts, tz)
    lo, hi = got["_lo"], got["_hi"]
    hours = 0 if pd.isna(lo) else int((hi - lo).total_seconds() // 3600 + 1)
    add("no_hourly_holes", hours, holes, count)

    report = judge_completeness(completeness)
    if report is not None:
        bad, names, notes = report
        add("last_sync_complete", max(1, len(notes.split(";")) if notes else 1), names, bad)
    out = pd.DataFrame(rows, columns=["rule", "description", "checked", "count", "ok", "examples"])
    out["rule"] = out["rule"].astype("string")
    out["description"] = out["description"].astype("string")
    out["ok"] = out["ok"].astype(bool)
    return out
