"""Edges of the analysis API: local days across clock changes, amount bands where a group key
goes, and arguments refused with a clear error on pandas and DuckDB alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import pandas as pd
import pytest

from gwtools import ConfigurationError
from gwtools import analysis as a
from gwtools.analysis._monitor import _aware
from gwtools.analysis._time import next_day

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]
ENGINES = ["pandas", "duckdb"]


def _on(engine: str, frame: pd.DataFrame) -> Any:
    return frame if engine == "pandas" else duckdb.from_df(frame)


def _ids(kept: Any) -> list[str]:
    frame = kept if isinstance(kept, pd.DataFrame) else kept.df()
    return sorted(frame["id"].tolist())


def _at(make_payments: Build, *instants: str) -> pd.DataFrame:
    return make_payments([{"status": "failed", "amount": 1, "created_at": t} for t in instants])


@pytest.mark.parametrize("engine", ENGINES)
def test_a_local_day_is_25_or_23_hours_on_a_clock_change(make_payments: Build, engine: str) -> None:
    # New York: 1 Nov 2026 runs 04:00Z to 05:00Z next day (clocks back), 8 Mar 2026 05:00Z
    # to 04:00Z next day (clocks forward). Adding 24 hours would drop pay_2 and keep pay_4.
    p = _at(
        make_payments,
        "2026-11-01T04:00:00Z",  # 1 Nov 00:00 EDT: first instant of the day
        "2026-11-02T04:30:00Z",  # 1 Nov 23:30 EST: the day's 25th hour
        "2026-11-02T05:00:00Z",  # 2 Nov 00:00 EST
        "2026-03-09T04:30:00Z",  # 9 Mar 00:30 EDT: the next day
        "2026-03-09T03:59:00Z",  # 8 Mar 23:59 EDT
    )
    ny = "America/New_York"
    assert _ids(a.between(_on(engine, p), "2026-11-01", "2026-11-01", tz=ny)) == ["pay_1", "pay_2"]
    assert _ids(a.between(_on(engine, p), "2026-03-08", "2026-03-08", tz=ny)) == ["pay_5"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_day_starts_at_its_first_midnight_when_the_clock_repeats_or_skips_it(
    make_payments: Build, engine: str
) -> None:
    # Havana, 1 Nov 2026: 01:00 CDT goes back to 00:00 CST, so 00:00 comes twice; the day
    # starts at the first (04:00Z). Santiago, 6 Sep 2026: 00:00 -04 jumps to 01:00 -03, so
    # there is no midnight; the day starts at the change (04:00Z).
    p = _at(make_payments, "2026-11-01T03:59:00Z", "2026-11-01T04:00:00Z", "2026-11-01T05:30:00Z")
    assert _ids(a.between(_on(engine, p), "2026-11-01", tz="America/Havana")) == [
        "pay_2",
        "pay_3",
    ]
    q = _at(make_payments, "2026-09-06T03:59:00Z", "2026-09-06T04:00:00Z")
    assert _ids(a.between(_on(engine, q), "2026-09-06", tz="America/Santiago")) == ["pay_2"]


def test_next_day_and_day_buckets_follow_the_calendar() -> None:
    ny = "America/New_York"
    start = pd.Timestamp("2026-11-01", tz=ny)
    assert next_day(start) == pd.Timestamp("2026-11-02", tz=ny)
    assert next_day(start) - start == pd.Timedelta(hours=25)
    # The Azores' 25 October begins twice at 00:00 (-00 then -01): one day, not a lost one.
    wall = pd.Series([pd.Timestamp("2026-10-25").value // 1000])
    day = _aware(wall, "Atlantic/Azores", "day").iloc[0]
    assert day == pd.Timestamp("2026-10-25T00:00:00Z")
    assert pd.isna(_aware(pd.Series([pd.Timestamp("2026-10-25T00:00").value // 1000]),
                          "Atlantic/Azores", "h").iloc[0])  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_dates_that_cannot_bound_a_range_are_refused(make_payments: Build, engine: str) -> None:
    p = _on(engine, _at(make_payments, "2026-11-01T04:00:00Z"))
    with pytest.raises(ConfigurationError, match=r"is after until.*swap them"):
        a.between(p, "2026-11-10", "2026-11-01")
    with pytest.raises(ConfigurationError, match=r"is after until.*swap them"):
        a.between(p, "2026-11-02", "2026-11-01")  # one day apart: no instant in between
    with pytest.raises(ConfigurationError, match="cannot read since=5 as a date"):
        a.between(p, 5)  # not 5 ns after 1970
    assert _ids(a.between(p, "2026-11-01", "2026-11-01", tz="America/New_York")) == ["pay_1"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_month_or_a_year_is_not_read_as_its_first_day(make_payments: Build, engine: str) -> None:
    """``between(p, "2026-10", "2026-10")`` kept 1 October alone (pandas reads "2026-10" as
    that day), and ``"2026"`` to ``"2026"`` 1 January alone: an analyst asking for October's
    rate got one day's, silently. A year or month is refused with the days to write instead."""
    p = _on(engine, _at(make_payments, "2026-10-01T04:00:00Z", "2026-10-15T04:00:00Z"))
    for since, until in (("2026-10", "2026-10"), ("2026-10-01", "2026-10"), ("2026", "2026")):
        with pytest.raises(ConfigurationError, match=r"not a day.*'2026-10-01'.*'2026-10-31'") as e:
            a.between(p, since, until)
        assert e.value.param == ("since" if len(since) < 10 else "until")
    with pytest.raises(ConfigurationError, match="not a day"):
        a.monitor(p, until="2026-10")
    assert _ids(a.between(p, "2026-10-01", "2026-10-31")) == ["pay_1", "pay_2"]
    assert _ids(a.between(p, "2026-10-1", "2026-10-1")) == ["pay_1"]  # a day, unpadded


@pytest.mark.parametrize("engine", ENGINES)
def test_acceptance_groups_an_order_by_its_first_attempts_amount_band(
    make_payments: Build, engine: str
) -> None:
    # Order o1: declined at 5.00 then paid at 60.00 (band of its first attempt: 0–10);
    # o2: paid at 20.00 (10–50). Per attempt, 60.00 counts in 50–100.
    p = make_payments(
        [
            {"status": "failed", "amount": 500, "metadata": '{"order_id": "o1"}',
             "created_at": "2026-11-02T02:00:00Z"},
            {"status": "succeeded", "amount": 6000, "metadata": '{"order_id": "o1"}',
             "created_at": "2026-11-02T02:05:00Z"},
            {"status": "succeeded", "amount": 2000, "metadata": '{"order_id": "o2"}'},
        ]
    )  # fmt: skip
    out = a.acceptance(_on(engine, p), by="amount_band")
    auth = out[out["metric"] == "authorization_rate"]
    got = {(str(r.amount_band), r.unit): (r.successes, r.n) for r in auth.itertuples() if r.n > 0}
    assert got == {
        ("0–10", "attempt"): (0, 1),
        ("0–10", "order"): (1, 1),
        ("10–50", "attempt"): (1, 1),
        ("10–50", "order"): (1, 1),
        ("50–100", "attempt"): (1, 1),
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_refunds_by_amount_band_take_their_payments_band(
    make_payments: Build, make_refunds: Build, engine: str
) -> None:
    # A 5.00 refund of a 20.00 payment belongs to the 10–50 band, as its payment does.
    p = make_payments(
        [{"status": "succeeded", "amount": 500}, {"status": "succeeded", "amount": 2000}]
    )
    r = make_refunds([{"payment_id": "pay_2", "amount": 500}])
    out = a.refund_rate(_on(engine, p), _on(engine, r), by="amount_band", cohort="refund")
    got = {str(b): (n, k) for b, n, k in zip(out["amount_band"], out["payments"],
                                             out["refunds"], strict=True)}  # fmt: skip
    assert got == {"0–10": (1, 0), "10–50": (1, 1)}


def test_band_edges_are_checked_and_labelled_as_given(make_payments: Build) -> None:
    p = make_payments([{"status": "succeeded", "amount": m} for m in (149, 150)])
    assert a.amount_band(p, edges=(0, 1.5, 10)).astype(str).tolist() == ["0–1.5", "1.5–10"]
    for edges in [(), (10, 0), (0, 0), ("a", "b"), 5]:
        with pytest.raises(ConfigurationError, match="increasing numbers"):
            a.amount_band(p, edges=edges)  # type: ignore[arg-type]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    ("call", "says"),
    [
        (lambda p, r: a.outcome_counts(p, by=["currency", "currency"]), "more than once"),
        (lambda p, r: a.outcome_counts(p, by="period", freq="week"), "periods come from freq="),
        (lambda p, r: a.outcome_counts(p, by=5), "name columns as strings"),
        (lambda p, r: a.totals_by_currency(p, ["colour"]), r"\['colour'\] are not columns"),
        (lambda p, r: a.totals_by_currency(p, ["method_type"], minor="cents"), "cents"),
        (lambda p, r: a.quality(p, r, tz="Mars/Base"), "unknown time zone 'Mars/Base'"),
        (lambda p, r: a.acceptance(p, window="a day"), "not a positive duration"),
        (lambda p, r: a.recovery(p, window=24), "not a positive duration"),
        (lambda p, r: a.orders(p, window="-1h"), "not a positive duration"),
        (lambda p, r: a.pending_refunds(p, r, now="soon"), "cannot read now='soon' as a date"),
        (lambda p, r: a.decline_breakdown(p, locale="xx_YY"), "unknown locale"),
        (lambda p, r: a.monitor(p, r, kinds=["fraud"]), "unknown monitor kinds"),
        (lambda p, r: a.monitor(p, r, days="7"), "days must be a number of days above 0"),
        (lambda p, r: a.monitor(p, r, days=0), "days must be a number of days above 0"),
        (lambda p, r: a.monitor(p, r, baseline_days=-28), "baseline_days must be a number"),
        (lambda p, r: a.monitor(p, r, settings=5), "settings must be a gwtools.analysis"),
        (lambda p, r: a.refund_rate(p, r, by="refunded_amount"), "two columns named"),
        (lambda p, r: a.decline_breakdown(p, by="amount_major"), "two columns named"),
    ],
)
def test_bad_arguments_are_configuration_errors(
    make_payments: Build, make_refunds: Build, engine: str, call: Any, says: str
) -> None:
    p = make_payments([{"status": "failed", "amount": 100, "decline_code": "do_not_honor"}])
    r = make_refunds([{"payment_id": "pay_1", "amount": 50, "status": "pending"}])
    with pytest.raises(ConfigurationError, match=says):
        call(_on(engine, p), _on(engine, r))


def test_empty_results_keep_their_column_types(make_payments: Build, make_refunds: Build) -> None:
    p, r = make_payments([]), make_refunds([])
    banks = a.fpx_banks(p, freq="week", tz="Asia/Kuala_Lumpur")
    assert str(banks["period"].dtype) == "datetime64[us, Asia/Kuala_Lumpur]"
    assert a.partial_vs_full(p, r)["kind"].dtype == "string"
    q = make_payments([{"status": "succeeded", "amount": 100, "refunded": True}])
    s = make_refunds([{"payment_id": "pay_1", "amount": 100}])
    assert a.partial_vs_full(q, s)["kind"].dtype == "string"
