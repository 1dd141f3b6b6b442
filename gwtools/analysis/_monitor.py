"""Monitors: is something wrong right now? Decline spikes, card testing, FPX bank outages and
refund spikes in the recent data, judged against the weeks before.

Every monitor compares counts in the monitored window (by default the last 7 days of data)
with a baseline (by default the 28 days before it) using an exact binomial or Poisson tail
probability. The limits are Bonferroni-corrected: each kind of monitor may raise a false alarm
on a normal history with probability at most ``false_alarm`` (1% by default), whatever the
number of days, banks or hours it looks at. On top of the statistics each monitor asks for a
difference large enough to matter (e.g. a decline rate at least 1.5 times its baseline), so a
huge history does not alert on a trivial change.

Counting happens in group-wise aggregates (per day, hour, bank); the tests then run on those
small tables.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import numpy as np
import pandas as pd

from gwtools.analysis._fpx import TEST_BANKS, fpx_outcome
from gwtools.analysis._rates import wilson_interval
from gwtools.analysis._recovery import ORDER_COLUMNS, narrow
from gwtools.analysis._time import DateLike, resolve_tz, to_timestamp

#: Monitor kinds, in the order alerts of one start time are listed.
MONITOR_KINDS: Final = ("decline_spike", "card_testing", "fpx_bank_outage", "refund_spike")
#: FPX outages are judged per hour of Malaysia time (FPX is Malaysian).
FPX_TZ: Final = "Asia/Kuala_Lumpur"

ALERT_COLUMNS: Final = (
    "kind",
    "scope",
    "start",
    "end",
    "observed",
    "expected",
    "limit",
    "n",
    "severity",
    "explanation",
)


@dataclass(frozen=True)
class MonitorSettings:
    """Thresholds of :func:`monitor`; the defaults are the documented, calibrated ones."""

    #: Chance that one kind of monitor alerts on a normal history (split over its tests).
    false_alarm: float = 0.01
    #: A decline spike needs a rate this many times the baseline, and this many declines.
    spike_ratio: float = 1.5
    spike_min_declines: int = 5
    #: Card testing: attempts of at most ``small_amount`` (major units) in one hour.
    small_amount: float = 2.0
    testing_min_attempts: int = 30
    testing_min_distinct_share: float = 0.8
    testing_min_declined_share: float = 0.5
    #: FPX outage: finished attempts in the bank-hour window, and a run of time-outs.
    outage_min_attempts: int = 4
    outage_timeout_run: int = 4
    #: Refund spike: refunds a day, this many times the baseline daily mean, at least.
    refund_ratio: float = 2.0
    refund_min: int = 5
    #: Refunds follow their payment by days or weeks, so the first days of a cache lack the
    #: refunds of payments made before it began: the refund baseline starts this much later.
    refund_warmup_days: float = 14
    #: Baselines with fewer decided payments than this are not trusted.
    min_baseline: int = 50


PAYMENT_COLUMNS: Final = ORDER_COLUMNS
REFUND_COLUMNS: Final = ("id", "payment_id", "status", "amount", "currency", "created_at")


# -- exact tails -----------------------------------------------------------------------------
_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _binom_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1, dtype="float64")
    if p <= 0:
        return (k == 0).astype("float64")
    if p >= 1:
        return (k == n).astype("float64")
    log = (
        math.lgamma(n + 1)
        - _lgamma(k + 1).astype("float64")
        - _lgamma(n - k + 1).astype("float64")
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )
    return np.exp(log)


def binom_upper(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return float(min(1.0, _binom_pmf(n, p)[k:].sum()))


def binom_lower(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return float(min(1.0, _binom_pmf(n, p)[: k + 1].sum()))


def poisson_upper(k: int, lam: float) -> float:
    """P(X >= k) for X ~ Poisson(lam)."""
    if k <= 0:
        return 1.0
    if lam <= 0:
        return 0.0
    j = np.arange(k, dtype="float64")
    below = np.exp(j * math.log(lam) - lam - _lgamma(j + 1).astype("float64")).sum()
    return float(max(0.0, 1.0 - below))


def _binom_limit(n: int, p: float, alpha: float) -> int:
    """The smallest count k with P(X >= k) <= alpha (upper control limit)."""
    tail = np.cumsum(_binom_pmf(n, p)[::-1])[::-1]
    over = np.nonzero(tail <= alpha)[0]
    return int(over[0]) if len(over) else n + 1


def _poisson_limit(lam: float, alpha: float) -> int:
    k = max(1, int(lam))
    while poisson_upper(k, lam) > alpha:
        k += 1
    return k


# -- the windows -----------------------------------------------------------------------------
@dataclass(frozen=True)
class _Window:
    since: pd.Timestamp
    until: pd.Timestamp
    base_start: pd.Timestamp
    tz: str

    def recent(self, frame: pd.DataFrame, column: str = "created_at") -> pd.DataFrame:
        ts = frame[column]
        return frame[((ts >= self.since) & (ts <= self.until)).fillna(False).astype(bool)]

    def baseline(self, frame: pd.DataFrame, column: str = "created_at") -> pd.DataFrame:
        ts = frame[column]
        return frame[((ts >= self.base_start) & (ts < self.since)).fillna(False).astype(bool)]

    def span(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Rows created from the baseline's start to the window's end."""
        ts = frame["created_at"]
        return frame[((ts >= self.base_start) & (ts <= self.until)).fillna(False).astype(bool)]

    def baseline_hours(self, frame: pd.DataFrame, column: str = "created_at") -> float:
        """Hours of baseline actually covered by data (a short history has less)."""
        first = frame[column].min()
        if pd.isna(first):
            return 0.0
        start = max(self.base_start, first)
        return max(0.0, (self.since - start).total_seconds() / 3600)


def _bounds(table: Any) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """First and last ``created_at`` of a table, computed in its own engine."""
    if table is None:
        return None, None
    if isinstance(table, pd.DataFrame):
        ts = table["created_at"]
        first, last = ts.min(), ts.max()
    else:
        import narwhals as nw

        from gwtools.analysis import _engine as E

        col = nw.col("created_at")
        row = E.to_pandas(E.lazy(table).select(col.min().alias("a"), col.max().alias("b")))
        first, last = row["a"].iloc[0], row["b"].iloc[0]
    return (None if pd.isna(first) else first), (None if pd.isna(last) else last)


def _window(
    newest: list[pd.Timestamp | None],
    since: DateLike,
    until: DateLike,
    days: float,
    baseline_days: float,
    tz: str,
) -> _Window | None:
    stamps = [s for s in newest if s is not None]
    end = to_timestamp(until, tz, end=True) if until is not None else None
    if end is None:
        if not stamps:
            return None
        end = max(stamps)
    start = to_timestamp(since, tz)
    if start is None:
        start = end - pd.Timedelta(days=days)
    if start >= end:
        raise ValueError(f"since ({start}) must come before until ({end})")
    return _Window(start, end, start - pd.Timedelta(days=baseline_days), tz)


def _alert(
    kind: str,
    scope: str,
    start: pd.Timestamp,
    end: pd.Timestamp,
    observed: float,
    expected: float,
    limit: float,
    n: int,
    high: bool,
    explanation: str,
) -> dict[str, object]:
    return {
        "kind": kind,
        "scope": scope,
        "start": start,
        "end": end,
        "observed": float(observed),
        "expected": float(expected),
        "limit": float(limit),
        "n": int(n),
        "severity": "high" if high else "medium",
        "explanation": explanation,
    }


def _runs(flags: pd.Series) -> Iterable[tuple[pd.Timestamp, pd.Timestamp]]:
    """(first, last) index of each run of consecutive True values (index: regular periods)."""
    values = flags.to_numpy(dtype=bool)
    index = flags.index
    i = 0
    while i < len(values):
        if values[i]:
            j = i
            while j + 1 < len(values) and values[j + 1]:
                j += 1
            yield index[i], index[j]
            i = j + 1
        else:
            i += 1


def _local(ts: pd.Series, tz: str) -> pd.Series:
    return ts.dt.tz_convert(tz)


def _floor(ts: pd.Series, freq: str, tz: str) -> pd.Series:
    """Local bucket starts (``h`` or ``D``), aware in ``tz``."""
    local = _local(ts, tz).dt.tz_localize(None).dt.floor(freq)
    return local.dt.tz_localize(tz, ambiguous="NaT", nonexistent="shift_forward")


# -- decline-rate spike ----------------------------------------------------------------------
def _decline_spikes(
    payments: pd.DataFrame,
    w: _Window,
    s: MonitorSettings,
    testing: Sequence[dict[str, object]] = (),
) -> list[dict[str, object]]:
    """Card decline rate per local day, overall and per brand, against a p-chart whose limits
    come from the baseline rate (exact binomial, Bonferroni over days and scopes). Only each
    order's first attempt counts: a declined customer's retries are not independent draws and
    would make a normal day look like a spike. The small attempts of a card-testing alert are
    left out: that alert already tells."""
    from gwtools.analysis._recovery import order_key

    cards = payments[payments["method_type"].eq("card").fillna(False).astype(bool)]
    cards = cards.sort_values(["created_at", "id"], kind="stable")
    cards = cards[~order_key(cards).duplicated(keep="first").to_numpy()]
    for alert in testing:
        ts = cards["created_at"]
        inside = (ts >= alert["start"]) & (ts < alert["end"])
        small = cards["amount_major"] <= s.small_amount
        cards = cards[~(inside & small).fillna(False).astype(bool)]
    cards = cards[cards["outcome"].isin(("succeeded", "failed"))]
    cards = cards.assign(failed=(cards["outcome"] == "failed").astype("int64"))
    recent, base = w.recent(cards), w.baseline(cards)
    if recent.empty:
        return []
    recent = recent.assign(day=_floor(recent["created_at"], "D", w.tz))
    scopes: list[tuple[str, pd.Series, pd.Series]] = [
        ("card", pd.Series(True, index=recent.index), pd.Series(True, index=base.index))
    ]
    for b in sorted(recent["card_brand"].dropna().unique()):
        scopes.append(
            (
                f"card_brand={b}",
                recent["card_brand"].eq(b).fillna(False).astype(bool),
                base["card_brand"].eq(b).fillna(False).astype(bool),
            )
        )
    tables = []
    for scope, rmask, bmask in scopes:
        b_n = int(bmask.sum())
        if b_n < s.min_baseline:
            continue
        p0 = float(base.loc[bmask, "failed"].mean())
        # The baseline is itself an estimate: test against the top of its 95% interval.
        p_test = float(wilson_interval(int(base.loc[bmask, "failed"].sum()), b_n)[1])
        daily = recent[rmask].groupby("day")["failed"].agg(["sum", "size"])
        tables.append((scope, p0, p_test, daily))
    tests = sum(len(t[3]) for t in tables)
    alpha = s.false_alarm / max(tests, 1)
    out = []
    for scope, p0, p_test, daily in tables:
        for day, row in daily.iterrows():
            k, n = int(row["sum"]), int(row["size"])
            rate = k / n
            if k < s.spike_min_declines or rate < s.spike_ratio * p0:
                continue
            if binom_upper(k, n, p_test) > alpha:
                continue
            limit = _binom_limit(n, p_test, alpha) / n
            start = pd.Timestamp(cast(Any, day))
            out.append(
                _alert(
                    "decline_spike",
                    scope,
                    start,
                    start + pd.Timedelta(days=1),
                    rate,
                    p0,
                    limit,
                    n,
                    rate >= 2 * p0,
                    f"{scope.replace('card_brand=', '').capitalize()} decline rate on "
                    f"{start:%Y-%m-%d} was {rate:.1%} ({k} of {n} decided first attempts) against "
                    f"{p0:.1%} in the baseline; the control limit was {limit:.1%}.",
                )
            )
    return out


# -- card testing ----------------------------------------------------------------------------
def _card_testing(
    payments: pd.DataFrame, w: _Window, s: MonitorSettings
) -> list[dict[str, object]]:
    """Hours with a burst of small card attempts over many distinct payment methods, mostly
    declined, far above the baseline's hourly count of such attempts (Poisson)."""
    cards = payments[payments["method_type"].eq("card").fillna(False).astype(bool)]
    major = cards["amount_major"]
    small = cards[(major <= s.small_amount).fillna(False).astype(bool)]
    recent = w.recent(small)
    if len(recent) < s.testing_min_attempts:
        return []
    hours = w.baseline_hours(payments)
    base_count = len(w.baseline(small))
    # One pseudo-attempt keeps a spotless baseline from making any small attempt an alarm.
    lam = (base_count + 1) / max(hours, 1.0)
    recent = recent.assign(
        hour=_floor(recent["created_at"], "h", w.tz),
        declined=(recent["outcome"] == "failed").astype("int64"),
        decided=recent["outcome"].isin(("succeeded", "failed")).astype("int64"),
    )
    span = pd.date_range(recent["hour"].min(), recent["hour"].max(), freq="h", tz=w.tz, name="hour")
    tests = max(1, int((w.until - w.since).total_seconds() // 3600))
    alpha = s.false_alarm / tests
    limit = _poisson_limit(lam, alpha)
    hourly = recent.groupby("hour").agg(
        attempts=("id", "size"), declined=("declined", "sum"), decided=("decided", "sum")
    )
    hourly = hourly.reindex(span, fill_value=0)
    flagged = (hourly["attempts"] >= max(limit, s.testing_min_attempts)) & (
        hourly["declined"] >= s.testing_min_declined_share * hourly["decided"].clip(lower=1)
    )
    out = []
    for first, last in _runs(flagged):
        end = last + pd.Timedelta(hours=1)
        rows = recent[(recent["hour"] >= first) & (recent["hour"] <= last)]
        methods = rows["payment_method_id"]
        distinct = int(methods.nunique()) + int(methods.isna().sum())
        if distinct < s.testing_min_distinct_share * len(rows):
            continue
        n_hours = int((end - first).total_seconds() // 3600)
        declined = rows["outcome"].eq("failed").sum() / max(
            1, int(rows["outcome"].isin(("succeeded", "failed")).sum())
        )
        expected = lam * n_hours
        out.append(
            _alert(
                "card_testing",
                f"card, amount <= {s.small_amount:g}",
                first,
                end,
                len(rows),
                expected,
                limit * n_hours,
                len(rows),
                len(rows) >= 100,
                f"{len(rows)} card attempts of at most {s.small_amount:g} in {n_hours} h on "
                f"{distinct} distinct payment methods, {declined:.0%} declined; the baseline "
                f"has {lam:.2f} such attempts an hour.",
            )
        )
    return out


# -- FPX bank outage -------------------------------------------------------------------------
def _fpx_outages(payments: pd.DataFrame, w: _Window, s: MonitorSettings) -> list[dict[str, object]]:
    """Per real FPX bank and hour of Malaysia time: successes far below the bank's own baseline
    (exact binomial over 1- and 3-hour windows), or a run of time-outs."""
    fpx = payments[payments["method_type"].eq("fpx").fillna(False).astype(bool)]
    fpx = fpx[~fpx["fpx_bank_code"].isin(TEST_BANKS).fillna(False).astype(bool)]
    fpx = fpx.assign(fpx_outcome=fpx_outcome(fpx))
    fpx = fpx[~fpx["fpx_outcome"].isin(("pending", "unknown"))]
    recent, base = w.recent(fpx), w.baseline(fpx)
    if recent.empty:
        return []
    recent = recent.assign(
        hour=_floor(recent["created_at"], "h", FPX_TZ),
        ok=(recent["fpx_outcome"] == "succeeded").astype("int64"),
        timeout=(recent["fpx_outcome"] == "timed_out").astype("int64"),
    )
    stats = base.groupby("fpx_bank_code").agg(
        n=("id", "size"),
        ok=("fpx_outcome", lambda o: int((o == "succeeded").sum())),
        timeout=("fpx_outcome", lambda o: int((o == "timed_out").sum())),
    )
    stats = stats[stats["n"] >= s.min_baseline / 2]
    hours = int((w.until - w.since).total_seconds() // 3600) + 1
    tests = max(1, 2 * hours * len(stats))  # 1- and 3-hour windows per bank and hour
    alpha = s.false_alarm / tests
    names = fpx.dropna(subset=["fpx_bank"]).groupby("fpx_bank_code")["fpx_bank"].first()
    out = []
    for bank, b in stats.iterrows():
        rows = recent[recent["fpx_bank_code"] == bank]
        if rows.empty:
            continue
        p0 = b["ok"] / b["n"]
        p_test = float(wilson_interval(int(b["ok"]), int(b["n"]))[0])
        span = pd.date_range(rows["hour"].min(), rows["hour"].max(), freq="h", tz=FPX_TZ)
        hourly = rows.groupby("hour")[["ok", "timeout"]].agg(["sum", "size"])
        ok = hourly[("ok", "sum")].reindex(span, fill_value=0)
        n = hourly[("ok", "size")].reindex(span, fill_value=0)
        flagged = pd.Series(False, index=span)
        for width in (1, 3):
            ok_w = ok.rolling(width, min_periods=1).sum().astype(int)
            n_w = n.rolling(width, min_periods=1).sum().astype(int)
            for end_hour in span[n_w >= s.outage_min_attempts]:
                k, m = int(ok_w[end_hour]), int(n_w[end_hour])
                if k / m > p0 / 2 or binom_lower(k, m, p_test) > alpha:
                    continue
                covered = span[(span > end_hour - pd.Timedelta(hours=width)) & (span <= end_hour)]
                # only the hours of the window that themselves went badly
                bad = (n[covered] > 0) & (ok[covered] <= n[covered] * p0 / 2)
                flagged[covered[bad.to_numpy()]] = True
        q_test = float(wilson_interval(int(b["timeout"]), int(b["n"]))[1])
        ordered = rows.sort_values(["created_at", "id"])
        run = ordered["timeout"].to_numpy()
        best, length, best_end = 0, 0, -1
        for i, v in enumerate(run):
            length = length + 1 if v else 0
            if length > best:
                best, best_end = length, i
        if best >= s.outage_timeout_run and len(run) * q_test**best <= alpha:
            hours_hit = ordered["hour"].iloc[best_end - best + 1 : best_end + 1]
            flagged[hours_hit.unique()] = True
        for first, last in _runs(flagged):
            part = rows[(rows["hour"] >= first) & (rows["hour"] <= last)]
            k, m = int(part["ok"].sum()), len(part)
            timeouts = int(part["timeout"].sum())
            end = last + pd.Timedelta(hours=1)
            name = names.get(bank)
            label = f"{bank} ({name})" if isinstance(name, str) else str(bank)
            out.append(
                _alert(
                    "fpx_bank_outage",
                    f"fpx_bank_code={bank}",
                    first,
                    end,
                    k / m,
                    p0,
                    p_test,
                    m,
                    k == 0,
                    f"FPX bank {label}: {k} of {m} attempts succeeded ({timeouts} timed out) "
                    f"from {first:%Y-%m-%d %H:%M} to {end:%H:%M} Malaysia time, against "
                    f"{p0:.0%} in the baseline.",
                )
            )
    return out


# -- refund spike ----------------------------------------------------------------------------
def _refund_spikes(
    first: pd.Timestamp | None, refunds: pd.DataFrame | None, w: _Window, s: MonitorSettings
) -> list[dict[str, object]]:
    """Refunds created per local day against the baseline's daily mean (Poisson). The baseline
    starts ``refund_warmup_days`` after the first cached payment at the earliest."""
    if refunds is None or refunds.empty:
        return []
    live = refunds[~refunds["status"].eq("failed").fillna(False).astype(bool)]
    if first is not None:
        warm = first + pd.Timedelta(days=s.refund_warmup_days)
        w = _Window(w.since, w.until, max(w.base_start, min(warm, w.since)), w.tz)
    recent, base = w.recent(live), w.baseline(live)
    days = (w.since - w.base_start).total_seconds() / 86_400
    if not pd.isna(live["created_at"].min()):
        days = min(days, w.baseline_hours(live) / 24)
    if recent.empty or days < 1:
        return []
    lam = (len(base) + 1) / days
    daily = recent.groupby(_floor(recent["created_at"], "D", w.tz)).size()
    tests = max(1, math.ceil((w.until - w.since).total_seconds() / 86_400))
    alpha = s.false_alarm / tests
    limit = _poisson_limit(lam, alpha)
    out = []
    for day, k in daily.items():
        k = int(k)
        if k < max(s.refund_min, limit) or k < s.refund_ratio * lam:
            continue
        start = pd.Timestamp(cast(Any, day))
        out.append(
            _alert(
                "refund_spike",
                "refunds",
                start,
                start + pd.Timedelta(days=1),
                k,
                lam,
                limit,
                k,
                k >= 3 * lam,
                f"{k} refunds were created on {start:%Y-%m-%d} against {lam:.1f} a day in the "
                f"baseline; the control limit was {limit}.",
            )
        )
    return out


def monitor(
    payments: Any,
    refunds: Any = None,
    *,
    since: DateLike = None,
    until: DateLike = None,
    days: float = 7,
    baseline_days: float = 28,
    tz: str | None = None,
    kinds: Sequence[str] = MONITOR_KINDS,
    settings: MonitorSettings | None = None,
) -> pd.DataFrame:
    """One row per alert in the recent data: ``kind``, ``scope``, ``start``/``end`` (local
    to ``tz``; FPX outages in Malaysia time), ``observed``, ``expected`` (the baseline),
    ``limit`` (the control limit crossed), ``n``, ``severity`` (``high`` or ``medium``) and a
    one-sentence ``explanation``. Empty (with these columns) when all is well.

    The monitored window ends at ``until`` (default: the newest row) and starts at ``since``
    (default: ``days`` before the end); the baseline is the ``baseline_days`` before it.

    Example: ``monitor(payments, refunds, tz="Asia/Kuala_Lumpur")``.
    """
    zone = resolve_tz(tz)
    unknown = [k for k in kinds if k not in MONITOR_KINDS]
    if unknown:
        raise ValueError(f"unknown monitor kinds {unknown}: use {', '.join(MONITOR_KINDS)}")
    s = settings or MonitorSettings()
    first, last = _bounds(payments)
    w = _window([last, _bounds(refunds)[1]], since, until, days, baseline_days, zone)
    alerts: list[dict[str, object]] = []
    if w is not None:
        # A lazy table is filtered to the baseline and the window in its engine; only those
        # rows' columns are collected, and the monitors count them in pandas.
        # pandas tables get the same cut, so that "an order's first attempt" means the same.
        payments = w.span(narrow(payments, PAYMENT_COLUMNS, since=w.base_start, until=w.until))
        if refunds is not None:
            refunds = w.span(narrow(refunds, REFUND_COLUMNS, since=w.base_start, until=w.until))
        testing = _card_testing(payments, w, s) if "card_testing" in kinds else []
        if "decline_spike" in kinds:
            alerts += _decline_spikes(payments, w, s, testing)
        alerts += testing
        if "fpx_bank_outage" in kinds:
            alerts += _fpx_outages(payments, w, s)
        if "refund_spike" in kinds:
            alerts += _refund_spikes(first, refunds, w, s)
    table = pd.DataFrame(alerts, columns=list(ALERT_COLUMNS))
    for col in ("kind", "scope", "severity", "explanation"):
        table[col] = table[col].astype("string")
    for col in ("start", "end"):
        table[col] = pd.to_datetime(table[col], utc=True).dt.tz_convert(zone)
    table["n"] = table["n"].astype("int64")
    for col in ("observed", "expected", "limit"):
        table[col] = table[col].astype("float64")
    rank = table["kind"].map({k: i for i, k in enumerate(MONITOR_KINDS)})
    table = table.assign(_rank=rank).sort_values(["start", "_rank", "scope"], kind="stable")
    table = table.drop(columns="_rank").reset_index(drop=True)
    table.attrs["window"] = (
        {"since": w.since, "until": w.until, "baseline_from": w.base_start} if w else {}
    )
    return table
