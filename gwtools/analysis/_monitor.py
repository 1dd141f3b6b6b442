"""Monitors: is something wrong right now? Decline spikes, card testing, FPX bank outages and
refund spikes in the recent data, judged against the weeks before.

Every monitor compares counts in the monitored window (by default the last 7 days of data)
with a baseline (by default the 28 days before it) using an exact binomial or Poisson tail
probability. The limits are Bonferroni-corrected: each kind of monitor may raise a false alarm
on a normal history with probability at most ``false_alarm`` (1% by default), whatever the
number of days, banks or hours it looks at. On top of the statistics each monitor asks for a
difference large enough to matter (e.g. a decline rate at least 1.5 times its baseline), so a
huge history does not alert on a trivial change.

Counting happens in the table's engine (pandas, a lazy DuckDB table, Spark) as group-wise
aggregates (per day, hour, bank and hour, brand; runs of time-outs by window functions); only
those small tables are collected, and the tests run on them in pandas.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import narwhals as nw
import numpy as np
import pandas as pd

from gwtools._errors import ConfigurationError
from gwtools.analysis import _engine as E
from gwtools.analysis._fpx import TEST_BANKS, outcome_expr
from gwtools.analysis._rates import percent, wilson_interval
from gwtools.analysis._recovery import ORDER_COLUMNS
from gwtools.analysis._refunds import live_expr
from gwtools.analysis._time import DateLike, next_day, resolve_tz, to_timestamp

#: Monitor kinds, in the order alerts of one start time are listed.
MONITOR_KINDS: Final = ("decline_spike", "card_testing", "fpx_bank_outage", "refund_spike")
#: The kinds whose ``observed``/``expected``/``limit`` are fractions (a decline rate, an FPX
#: bank's success rate); the others' are counts (attempts, refunds).
RATE_KINDS: Final = frozenset({"decline_spike", "fpx_bank_outage"})
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
    #: Card testing: attempts of at most ``small_amount`` in one hour, in major units of each
    #: payment's own currency (calibrated for MYR: monitor other currencies one at a time).
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

    def __post_init__(self) -> None:
        # A value out of range is refused here, where it is typed: a false_alarm below 0 made
        # monitor() search for ever, text failed deep inside a comparison.
        for name, (low, high, closed) in _RANGES.items():
            value = getattr(self, name)
            if not _real(value) or not (
                (low <= value if closed[0] else low < value)
                and (value <= high if closed[1] else value < high)
            ):
                raise ConfigurationError(
                    f"MonitorSettings({name}={value!r}): {name} must be a number "
                    f"{_RANGE_WORDS[(low, high, closed)]}",
                    param=name,
                )
        for name, minimum in _COUNTS.items():
            E.whole_number(getattr(self, name), name, minimum=minimum)


def _real(value: Any) -> bool:
    """A real number (NumPy's too), not a bool, text or NaN."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool | np.bool_)
        and value == value
    )


#: MonitorSettings' real fields: (low, high, (low included, high included)).
_RANGES: Final = {
    "false_alarm": (0.0, 1.0, (False, False)),
    "spike_ratio": (0.0, math.inf, (False, False)),
    "refund_ratio": (0.0, math.inf, (False, False)),
    "small_amount": (0.0, math.inf, (True, False)),
    "testing_min_distinct_share": (0.0, 1.0, (True, True)),
    "testing_min_declined_share": (0.0, 1.0, (True, True)),
    "refund_warmup_days": (0.0, math.inf, (True, False)),
}
_RANGE_WORDS: Final = {
    (0.0, 1.0, (False, False)): "above 0 and below 1 (a probability)",
    (0.0, math.inf, (False, False)): "above 0",
    (0.0, math.inf, (True, False)): "of 0 or more",
    (0.0, 1.0, (True, True)): "from 0 to 1 (a share)",
}
#: MonitorSettings' counts: the least each may be.
_COUNTS: Final = {
    "spike_min_declines": 1,
    "testing_min_attempts": 1,
    "outage_min_attempts": 1,
    "outage_timeout_run": 1,
    "refund_min": 1,
    "min_baseline": 0,
}


PAYMENT_COLUMNS: Final = ORDER_COLUMNS
REFUND_COLUMNS: Final = ("id", "payment_id", "status", "amount", "currency", "created_at")


# -- exact tails -----------------------------------------------------------------------------
_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def _binom_pmf(n: int, p: float) -> np.ndarray:
    k = np.arange(n + 1, dtype="float64")
    if p <= 0:
        return cast(np.ndarray, (k == 0).astype("float64"))
    if p >= 1:
        return cast(np.ndarray, (k == n).astype("float64"))
    log = (
        math.lgamma(n + 1)
        - _lgamma(k + 1).astype("float64")
        - _lgamma(n - k + 1).astype("float64")
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )
    return cast(np.ndarray, np.exp(log))


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
def _utc(ts: pd.Timestamp) -> Any:
    """An aware timestamp as a UTC ``datetime``, for comparisons in any engine."""
    return pd.Timestamp(ts).tz_convert("UTC").to_pydatetime()


def _created(lo: pd.Timestamp | None, hi: pd.Timestamp | None, *, hi_open: bool) -> nw.Expr:
    """``created_at`` in ``[lo, hi]`` (``[lo, hi)`` with ``hi_open``), False on nulls."""
    ts = nw.col("created_at")
    cond = nw.lit(True)
    if lo is not None:
        cond = cond & E.truthy(ts >= _utc(lo))
    if hi is not None:
        cond = cond & E.truthy(ts < _utc(hi) if hi_open else ts <= _utc(hi))
    return cond


@dataclass(frozen=True)
class _Window:
    since: pd.Timestamp
    until: pd.Timestamp
    base_start: pd.Timestamp
    tz: str
    #: ``until`` is the newest row, in the window; a given ``until`` (a day's end: the next
    #: day's start; or a time) is not
    until_included: bool = False

    def recent(self) -> nw.Expr:
        return _created(self.since, self.until, hi_open=not self.until_included)

    def baseline(self) -> nw.Expr:
        return _created(self.base_start, self.since, hi_open=True)

    def span(self) -> nw.Expr:
        """Rows created from the baseline's start to the window's end."""
        return _created(self.base_start, self.until, hi_open=not self.until_included)

    def cut(self) -> list[nw.Expr]:
        """:meth:`span` as plain comparisons, to filter the whole table by: an engine pushes
        them into the Parquet scan and skips the row groups outside (a null-safe wrapper
        makes it read them all). A null time compares null (dropped) or False (pandas)."""
        ts = nw.col("created_at")
        end = ts <= _utc(self.until) if self.until_included else ts < _utc(self.until)
        return [ts >= _utc(self.base_start), end]

    def baseline_hours(self, first: Any) -> float:
        """Hours of baseline actually covered by data (``first``: the span's first row)."""
        if first is None or pd.isna(first):
            return 0.0
        start = max(self.base_start, first)
        return float(max(0.0, (self.since - start).total_seconds() / 3600))


def _bounds(table: Any) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    """First and last ``created_at`` of a table, computed in its own engine."""
    if table is None:
        return None, None
    return _min_max(E.lazy(table))


def _min_max(lf: nw.LazyFrame[Any]) -> tuple[pd.Timestamp | None, pd.Timestamp | None]:
    col = nw.col("created_at")
    row = E.to_pandas(lf.select(col.min().alias("a"), col.max().alias("b")))
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
    end = to_timestamp(until, tz, end=True, param="until") if until is not None else None
    included = end is None
    if end is None:
        if not stamps:
            return None
        end = max(stamps)
    start = to_timestamp(since, tz, param="since")
    if start is None:
        start = _days_before(end, days, tz)
    if start >= end:
        first = since if since is not None else f"{start} ({days:g} days before until)"
        last = until if until is not None else f"{end} (the newest row)"
        raise ConfigurationError(
            f"since ({first}) must come before until ({last}): "
            f"{'swap them, or move one' if start > end else 'move one of them'}",
            param="since",
        )
    return _Window(start, end, _days_before(start, baseline_days, tz), tz, included)


def _days_before(moment: pd.Timestamp, days: float, tz: str) -> pd.Timestamp:
    """``days`` local days before ``moment``: whole days by the calendar in ``tz`` (a week
    across a clock change is 167 or 169 hours), else in hours; a wall time the change skips
    or repeats falls back to hours."""
    if float(days).is_integer():
        try:
            earlier = moment.tz_convert(tz) - pd.DateOffset(days=int(days))
            return earlier.tz_convert(moment.tz)
        except (ValueError, OverflowError):  # pytz-style NonExistent/AmbiguousTimeError
            pass
    return moment - pd.Timedelta(days=days)


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


def _wall(lf: nw.LazyFrame[Any], freq: str, tz: str, name: str = "_wall") -> nw.LazyFrame[Any]:
    """``lf`` with ``name``: the local wall-clock start of each row's hour (``h``) or day
    (``D``) in ``tz``, as microseconds (:func:`_aware` reads them)."""
    return E.with_period(lf, "created_at", tz, "h" if freq == "h" else "day", name)


def _aware(values: pd.Series, tz: str, freq: str) -> pd.Series:
    """Collected wall-clock bucket starts -> aware local timestamps. A day starts at its
    first midnight (one a clock change repeats, as in America/Havana, is still one day); an
    ambiguous hour is NaT (and left out of the counts, as pandas' group-by leaves out NaT
    buckets): its wall-clock bucket holds two hours."""
    if freq != "h":
        return E.finish_period(values, tz)
    out: pd.Series = E.wall_time(values).dt.tz_localize(
        tz, ambiguous="NaT", nonexistent="shift_forward"
    )
    return out


def _part(w: _Window) -> nw.Expr:
    """1 for the monitored window, 0 for the baseline, null outside both."""
    return nw.when(w.recent()).then(nw.lit(1)).when(w.baseline()).then(nw.lit(0))


def _by_part(
    lf: nw.LazyFrame[Any], w: _Window, freq: str, tz: str, keys: Sequence[str], sums: Sequence[str]
) -> pd.DataFrame:
    """Counts (``n``) and sums of the 0/1 columns ``sums`` per ``_part`` (1 recent, 0
    baseline), local ``bucket`` (recent rows only) and ``keys``, counted in the engine.
    ``bucket`` comes back aware in ``tz`` (NaT where an hour is ambiguous)."""
    lf = lf.with_columns(_part=_part(w))
    lf = _wall(lf.filter(~nw.col("_part").is_null()), freq, tz)
    lf = lf.with_columns(bucket=nw.when(nw.col("_part") == 1).then(nw.col("_wall")))
    aggs = [nw.len().alias("n"), *(nw.col(c).sum() for c in sums)]
    out = E.to_pandas(lf.group_by(["_part", "bucket", *keys]).agg(*aggs))
    out["bucket"] = _aware(out["bucket"], tz, freq)
    return out


# -- decline-rate spike ----------------------------------------------------------------------
def _decline_spikes(
    payments: nw.LazyFrame[Any],
    w: _Window,
    s: MonitorSettings,
    testing: Sequence[dict[str, object]] = (),
) -> list[dict[str, object]]:
    """Card decline rate per local day, overall and per brand, against a p-chart whose limits
    come from the baseline rate (exact binomial, Bonferroni over days and scopes). Only each
    order's first attempt counts: a declined customer's retries are not independent draws and
    would make a normal day look like a spike. The small attempts of a card-testing alert are
    left out: that alert already tells."""
    from gwtools.analysis._recovery import with_order

    # Orders over every method: a card retry of an order begun by FPX is not its first.
    orders = with_order(payments, columns=("card_brand", "amount_major"))
    cards = orders.filter(nw.col("_first") & E.truthy(nw.col("method_type") == "card"))
    small = E.truthy(nw.col("amount_major") <= s.small_amount)
    for alert in testing:
        inside = _created(
            cast(pd.Timestamp, alert["start"]), cast(pd.Timestamp, alert["end"]), hi_open=True
        )
        cards = cards.filter(~(inside & small))
    cards = cards.filter(E.truthy(nw.col("outcome").is_in(("succeeded", "failed"))))
    cards = cards.with_columns(failed=E.flag(nw.col("outcome") == "failed"))
    counts = _by_part(cards, w, "D", w.tz, ["card_brand"], ["failed"])
    recent = counts[counts["_part"] == 1]
    base = counts[counts["_part"] == 0]
    if recent.empty:
        return []
    recent = recent[recent["bucket"].notna()]
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
        b_n = int(base.loc[bmask, "n"].sum())
        if b_n < s.min_baseline:
            continue
        b_failed = int(base.loc[bmask, "failed"].sum())
        p0 = b_failed / b_n
        # The baseline is itself an estimate: test against the top of its 95% interval.
        p_test = float(wilson_interval(b_failed, b_n)[1])
        daily = recent[rmask].groupby("bucket")[["failed", "n"]].sum()
        tables.append((scope, p0, p_test, daily))
    tests = sum(len(t[3]) for t in tables)
    alpha = s.false_alarm / max(tests, 1)
    out = []
    for scope, p0, p_test, daily in tables:
        for day, row in daily.iterrows():
            k, n = int(row["failed"]), int(row["n"])
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
                    next_day(start),
                    rate,
                    p0,
                    limit,
                    n,
                    rate >= 2 * p0,
                    f"{_scope_label(scope)} decline rate on "
                    f"{start:%Y-%m-%d} was {percent(rate)} ({k} of {n} decided first attempts) "
                    f"against {percent(p0)} in the baseline; the control limit was "
                    f"{percent(limit)}.",
                )
            )
    return out


#: Card brands as their owners write them (the canonical column holds the gateway's word).
_BRAND_NAMES: Final = {
    "amex": "American Express",
    "american_express": "American Express",
    "diners": "Diners Club",
    "discover": "Discover",
    "jcb": "JCB",
    "mastercard": "Mastercard",
    "unionpay": "UnionPay",
    "visa": "Visa",
}


def _scope_label(scope: str) -> str:
    """A decline-spike scope as a sentence starts it: ``card_brand=jcb`` -> ``JCB`` (not
    ``Jcb``); a brand not listed keeps its own letters, its first made upper case."""
    brand = scope.removeprefix("card_brand=")
    return _BRAND_NAMES.get(brand.lower(), brand[:1].upper() + brand[1:])


# -- card testing ----------------------------------------------------------------------------
#: A card-testing alert's scope, before the amount limit it counted attempts under.
_TESTING_SCOPE: Final = "card, amount <= "


def testing_limit(scope: str, s: MonitorSettings) -> float:
    """The amount limit a card-testing alert of ``scope`` counted attempts under: the one its
    scope names (``monitor`` may have run with other settings than the caller's), else
    ``s.small_amount``. The scope shows it to 6 digits; ``s``'s own value is taken when it
    shows the same."""
    shown = scope.removeprefix(_TESTING_SCOPE) if scope.startswith(_TESTING_SCOPE) else ""
    if not shown or shown == f"{s.small_amount:g}":
        return s.small_amount
    try:
        return float(shown)
    except ValueError:  # a scope written by hand
        return s.small_amount


def _card_testing(
    payments: nw.LazyFrame[Any], first: Any, w: _Window, s: MonitorSettings
) -> list[dict[str, object]]:
    """Hours with a burst of small card attempts over many distinct payment methods, mostly
    declined, far above the baseline's hourly count of such attempts (Poisson). ``first``:
    the first payment of the span (any method)."""
    small = payments.filter(
        E.truthy(nw.col("method_type") == "card")
        & E.truthy(nw.col("amount_major") <= s.small_amount)
    )
    outcome = nw.col("outcome")
    small = small.with_columns(
        declined=E.flag(outcome == "failed"),
        decided=E.flag(outcome.is_in(("succeeded", "failed"))),
    )
    counts = _by_part(small, w, "h", w.tz, [], ["declined", "decided"])
    recent = counts[counts["_part"] == 1]
    if int(recent["n"].sum()) < s.testing_min_attempts:
        return []
    hours = w.baseline_hours(first)
    base_count = int(counts.loc[counts["_part"] == 0, "n"].sum())
    # One pseudo-attempt keeps a spotless baseline from making any small attempt an alarm.
    lam = (base_count + 1) / max(hours, 1.0)
    hourly = recent.dropna(subset=["bucket"]).groupby("bucket")[["n", "declined", "decided"]].sum()
    if hourly.empty:  # every attempt in a repeated (uncounted) hour of a clock change
        return []
    span = pd.date_range(hourly.index.min(), hourly.index.max(), freq="h", tz=w.tz, name="hour")
    tests = max(1, int((w.until - w.since).total_seconds() // 3600))
    alpha = s.false_alarm / tests
    limit = _poisson_limit(lam, alpha)
    hourly = hourly.reindex(span, fill_value=0)
    flagged = (hourly["n"] >= max(limit, s.testing_min_attempts)) & (
        hourly["declined"] >= s.testing_min_declined_share * hourly["decided"].clip(lower=1)
    )
    out = []
    for first_hour, last in _runs(flagged):
        end = last + pd.Timedelta(hours=1)
        # A run holds no ambiguous (uncounted) hour: those have no attempts, so the run's
        # rows are exactly those created in [first_hour, end).
        rows = small.filter(w.recent() & _created(first_hour, end, hi_open=True))
        method = nw.col("payment_method_id")
        got = E.to_pandas(
            rows.select(
                nw.len().alias("n"),
                method.n_unique().alias("unique"),
                method.count().alias("present"),
                nw.col("declined").sum(),
                nw.col("decided").sum(),
            )
        ).iloc[0]
        n_rows, present = int(got["n"]), int(got["present"])
        nulls = n_rows - present
        # n_unique counts null as one value; pandas' nunique does not: each null is its own.
        distinct = int(got["unique"]) - (1 if nulls else 0) + nulls
        if distinct < s.testing_min_distinct_share * n_rows:
            continue
        n_hours = int((end - first_hour).total_seconds() // 3600)
        declined = int(got["declined"]) / max(1, int(got["decided"]))
        expected = lam * n_hours
        out.append(
            _alert(
                "card_testing",
                f"{_TESTING_SCOPE}{s.small_amount:g}",
                first_hour,
                end,
                n_rows,
                expected,
                limit * n_hours,
                n_rows,
                n_rows >= 100,
                f"{n_rows} card attempts of at most {s.small_amount:g} in {n_hours} h on "
                f"{distinct} distinct payment methods, {percent(declined, 0)} declined; the baseline "
                f"has {lam:.2f} such attempts an hour.",
            )
        )
    return out


# -- FPX bank outage -------------------------------------------------------------------------
def _fpx_outages(
    payments: nw.LazyFrame[Any], w: _Window, s: MonitorSettings
) -> list[dict[str, object]]:
    """Per real FPX bank and hour of Malaysia time: successes far below the bank's own baseline
    (exact binomial over 1- and 3-hour windows), or a run of time-outs."""
    fpx = payments.filter(
        E.truthy(nw.col("method_type") == "fpx")
        & ~E.truthy(nw.col("fpx_bank_code").is_in(sorted(TEST_BANKS)))
    )
    fpx = fpx.with_columns(fpx_outcome=outcome_expr())
    fpx = fpx.filter(~E.truthy(nw.col("fpx_outcome").is_in(("pending", "unknown"))))
    fpx = fpx.with_columns(
        ok=E.flag(nw.col("fpx_outcome") == "succeeded"),
        timeout=E.flag(nw.col("fpx_outcome") == "timed_out"),
    )
    counts = _by_part(fpx, w, "h", FPX_TZ, ["fpx_bank_code"], ["ok", "timeout"])
    recent = counts[counts["_part"] == 1]
    if recent.empty:
        return []
    base = counts[counts["_part"] == 0]
    stats = base.groupby("fpx_bank_code")[["n", "ok", "timeout"]].sum()
    stats = stats[stats["n"] >= s.min_baseline / 2]
    hours = int((w.until - w.since).total_seconds() // 3600) + 1
    tests = max(1, 2 * hours * len(stats))  # 1- and 3-hour windows per bank and hour
    alpha = s.false_alarm / tests
    name_rows = fpx.filter(w.span()).group_by("fpx_bank_code").agg(nw.col("fpx_bank").min())
    names = E.to_pandas(name_rows).dropna().set_index("fpx_bank_code")["fpx_bank"]
    runs = _timeout_runs(fpx.filter(w.recent()), s) if len(stats) else pd.DataFrame()
    out = []
    for bank, b in stats.iterrows():
        rows = recent[recent["fpx_bank_code"] == bank].dropna(subset=["bucket"])
        if rows.empty:
            continue
        p0 = b["ok"] / b["n"]
        p_test = float(wilson_interval(int(b["ok"]), int(b["n"]))[0])
        hourly = rows.groupby("bucket")[["n", "ok", "timeout"]].sum()
        span = pd.date_range(hourly.index.min(), hourly.index.max(), freq="h", tz=FPX_TZ)
        ok = hourly["ok"].reindex(span, fill_value=0)
        n = hourly["n"].reindex(span, fill_value=0)
        timeouts_h = hourly["timeout"].reindex(span, fill_value=0)
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
        mine = runs[runs["fpx_bank_code"] == bank] if len(runs) else runs
        # Every run long enough: n * q**length bounds the chance of such a run starting at
        # any of the bank's attempts, so one limit serves all its runs (not only the longest).
        for _, run in mine.iterrows() if len(mine) else ():
            if int(n.sum()) * q_test ** int(run["length"]) <= alpha:
                # The run's rows are consecutive: every hour between its first and last
                # with attempts of this bank holds some of them.
                lo, hi = _aware(pd.Series([run["lo"], run["hi"]]), FPX_TZ, "h")
                hit = (span >= lo) & (span <= hi) & (n > 0).to_numpy()
                flagged[hit] = True
        for first, last in _runs(flagged):
            inside = (span >= first) & (span <= last)
            k, m = int(ok[inside].sum()), int(n[inside].sum())
            timeouts = int(timeouts_h[inside].sum())
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
                    f"from {first:%Y-%m-%d %H:%M} to "
                    f"{end:%H:%M}{'' if end.date() == first.date() else f' on {end:%Y-%m-%d}'} "
                    f"Malaysia time, against {percent(p0, 0)} in the baseline.",
                )
            )
    return out


def _timeout_runs(recent: nw.LazyFrame[Any], s: MonitorSettings) -> pd.DataFrame:
    """Runs of consecutive time-outs per bank in creation order, at least
    ``outage_timeout_run`` long: ``fpx_bank_code``, ``_grp`` (increasing along the bank's
    attempts), ``length`` and the wall-clock hours ``lo``/``hi`` of its first and last row."""
    order = ["created_at", "id"]
    # Each attempt that is not a time-out starts a new group; a run is a group's time-outs.
    grp = E.flag(nw.col("timeout") == 0).cum_sum().over("fpx_bank_code", order_by=order)
    lf = _wall(recent.with_columns(_grp=grp), "h", FPX_TZ, "_hour")
    lf = lf.filter(nw.col("timeout") == 1)
    runs = lf.group_by("fpx_bank_code", "_grp").agg(
        nw.len().alias("length"),
        nw.col("_hour").min().alias("lo"),
        nw.col("_hour").max().alias("hi"),
    )
    return E.to_pandas(runs.filter(nw.col("length") >= s.outage_timeout_run))


# -- refund spike ----------------------------------------------------------------------------
def _refund_spikes(
    first: pd.Timestamp | None, refunds: nw.LazyFrame[Any] | None, w: _Window, s: MonitorSettings
) -> list[dict[str, object]]:
    """Refunds created per local day against the baseline's daily mean (Poisson). The baseline
    starts ``refund_warmup_days`` after the first cached payment at the earliest."""
    if refunds is None:
        return []
    live = refunds.filter(w.span() & live_expr())
    live_first, _ = _min_max(live)
    if live_first is None:
        return []
    if first is not None:
        warm = first + pd.Timedelta(days=s.refund_warmup_days)
        w = dataclasses.replace(w, base_start=max(w.base_start, min(warm, w.since)))
    counts = _by_part(live, w, "D", w.tz, [], [])
    days = (w.since - w.base_start).total_seconds() / 86_400
    if first is None:
        # No payments to date the cache's start by: the first refund is the earliest the
        # baseline is known to hold data. (With payments, a baseline without refunds is a
        # real rate of nearly none, and a merchant's first burst of refunds must alert.)
        days = min(days, w.baseline_hours(live_first) / 24)
    recent = counts[counts["_part"] == 1]
    if recent.empty or days < 1:
        return []
    # One refund more than the baseline holds: an empty baseline still has a rate to beat.
    lam = (int(counts.loc[counts["_part"] == 0, "n"].sum()) + 1) / days
    daily = recent.dropna(subset=["bucket"]).groupby("bucket")["n"].sum()
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
                next_day(start),
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


def check_monitor_args(days: Any, baseline_days: Any, settings: Any) -> MonitorSettings:
    """The settings to monitor with, once ``days`` and ``baseline_days`` are numbers of days
    above 0 and ``settings`` is a :class:`MonitorSettings` or None (the defaults); else a
    :class:`~gwtools.ConfigurationError` saying what to pass."""
    for name, value in (("days", days), ("baseline_days", baseline_days)):
        if not _real(value) or not 0 < value < math.inf:
            raise ConfigurationError(
                f"{name} must be a number of days above 0, got {value!r}", param=name
            )
    return check_settings(settings)


def check_settings(settings: Any) -> MonitorSettings:
    """``settings``, or the defaults for None; anything but a :class:`MonitorSettings` is a
    :class:`~gwtools.ConfigurationError` saying what to pass."""
    if settings is not None and not isinstance(settings, MonitorSettings):
        raise ConfigurationError(
            f"settings must be a gwtools.analysis.MonitorSettings, got {settings!r}: "
            "e.g. MonitorSettings(spike_ratio=2.0), or leave it out for the defaults",
            param="settings",
        )
    return settings or MonitorSettings()


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
    to ``tz``; an FPX outage is judged by hours of Malaysia time, which its explanation
    gives), ``observed``, ``expected`` (the baseline),
    ``limit`` (the control limit crossed), ``n``, ``severity`` (``high`` or ``medium``) and a
    one-sentence ``explanation``. Empty (with these columns) when all is well.

    The monitored window ends at ``until`` (a date: the end of that local day, its next
    midnight left out; default: the newest row, included) and starts at ``since``
    (default: ``days`` before the end); the baseline is the ``baseline_days`` before it.

    Example: ``monitor(payments, refunds, tz="Asia/Kuala_Lumpur")``.
    """
    zone = resolve_tz(tz)
    kinds = [kinds] if isinstance(kinds, str) else list(kinds)  # one kind may come bare
    unknown = [k for k in kinds if k not in MONITOR_KINDS]
    if unknown:
        raise ConfigurationError(
            f"unknown monitor kinds {unknown}: use {', '.join(MONITOR_KINDS)}"
            f"{E.did_you_mean(unknown[0], MONITOR_KINDS)}",
            param="kinds",
        )
    s = check_monitor_args(days, baseline_days, settings)
    first, last = _bounds(payments)
    w = _window([last, _bounds(refunds)[1]], since, until, days, baseline_days, zone)
    alerts: list[dict[str, object]] = []
    if w is not None:
        # Every monitor counts in the table's engine (per day, hour, bank and hour, brand) and
        # only those counts are collected; the statistics run on them in pandas. The span
        # (baseline and window) is cut first, so "an order's first attempt" means the same
        # on every engine.
        lf = E.lazy(payments)
        present = E.columns_of(lf)
        lf = lf.filter(*w.cut()).select([c for c in PAYMENT_COLUMNS if c in present])
        refund_lf = None
        if refunds is not None:
            refund_lf = E.lazy(refunds)
            refund_names = E.columns_of(refund_lf)
            kept = [c for c in REFUND_COLUMNS if c in refund_names]
            refund_lf = refund_lf.filter(*w.cut()).select(kept)
        testing = []
        if "card_testing" in kinds:
            testing = _card_testing(lf, _min_max(lf)[0], w, s)
        if "decline_spike" in kinds:
            alerts += _decline_spikes(lf, w, s, testing)
        alerts += testing
        if "fpx_bank_outage" in kinds:
            alerts += _fpx_outages(lf, w, s)
        if "refund_spike" in kinds:
            alerts += _refund_spikes(first, refund_lf, w, s)
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
        {
            "since": w.since,
            "until": w.until,
            "baseline_from": w.base_start,
            # No payment before the window (a cache's first week): what is found against the
            # baseline could not be looked for, and "no alerts" must say so.
            "baseline_empty": first is None or first >= w.since,
        }
        if w
        else {}
    )
    return table


def monitored_window(alerts: pd.DataFrame, tz: str | None = None) -> str:
    """The window :func:`monitor` watched for ``alerts`` and its baseline, in ``tz``'s local
    time: ``monitored window 2026-11-13 12:00 to 2026-11-20 12:00, baseline from 2026-10-16
    12:00 (Asia/Kuala_Lumpur)``; empty when there was nothing to watch (no payments or
    refunds).

    Example: ``monitored_window(alerts, tz="Asia/Kuala_Lumpur")``: the window a monitor run
    covered, for a report's header.
    """
    window = alerts.attrs.get("window") or {}
    if not window:
        return ""
    zone = resolve_tz(tz)
    since, until, base = (
        pd.Timestamp(window[k]).tz_convert(zone) for k in ("since", "until", "baseline_from")
    )
    return (
        f"monitored window {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M}, baseline from "
        f"{base:%Y-%m-%d %H:%M} ({zone})"
    )


#: What :func:`describe_alerts` and ``gwtools monitor`` add when no payment precedes the window.
NO_BASELINE: Final = (
    "The baseline holds no payments (the data starts inside the monitored window), so decline "
    "spikes, FPX bank outages and refund spikes, which are found against it, could not be "
    "looked for; only card testing was."
)


def describe_alerts(alerts: pd.DataFrame, tz: str | None = None) -> str:
    """:func:`monitor`'s ``alerts`` in words: how many, in which window (:func:`monitored_window`),
    then each alert's explanation on a line of its own. With nothing to watch it says so:
    no alert then is no clean bill of health.

    Example: ``print(describe_alerts(monitor(payments, refunds), tz="Asia/Kuala_Lumpur"))``:
    the alerts for a log, a chat message or an e-mail.
    """
    window = monitored_window(alerts, tz)
    if not window:
        return (
            "Nothing to monitor: no payments or refunds to look at, so no alert could be "
            "raised (check the selection's days and filters, or sync first)."
        )
    n = len(alerts)
    head = f"{'No' if n == 0 else n} alert{'' if n == 1 else 's'}: {window}."
    if (alerts.attrs.get("window") or {}).get("baseline_empty"):
        head += " " + NO_BASELINE
    return "\n".join([head, *(str(e) for e in alerts["explanation"])])
