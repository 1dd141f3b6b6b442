"""Wilson intervals, outcome counts, success rates, time-zone buckets and money."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from gwtools import ConfigurationError
from gwtools import analysis as a

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]

Z2 = 1.959963984540054**2  # z² of the 95% interval = 3.841459


def test_wilson_all_successes_closed_form() -> None:
    # p = 1: lower bound = n / (n + z²) = 3 / 6.841459 = 0.438503; upper = 1.
    low, high = a.wilson_interval(3, 3)
    assert low == pytest.approx(3 / (3 + Z2)) == pytest.approx(0.438503, abs=1e-6)
    assert high == pytest.approx(1.0)
    # Two numbers in, two floats out (once 0-d arrays, printed as array(0.4385)).
    assert type(low) is float and type(high) is float


def test_wilson_no_success_closed_form() -> None:
    # p = 0: lower 0; upper = z² / (n + z²) = 3.841459 / 6.841459 = 0.561497.
    low, high = a.wilson_interval(0, 3)
    assert low == 0.0
    assert high == pytest.approx(0.561497, abs=1e-6)


def test_wilson_half() -> None:
    # k=50, n=100: centre 0.5; half = 1.96·sqrt(0.0025 + 3.841459/40000) / (1 + 3.841459/100)
    #            = 1.959964 · 0.0509513 / 1.0384146 = 0.0961687
    low, high = a.wilson_interval(np.array([50]), np.array([100]))
    assert low[0] == pytest.approx(0.5 - 0.0961687, abs=1e-6)
    assert high[0] == pytest.approx(0.5 + 0.0961687, abs=1e-6)


def test_wilson_zero_n_is_nan_and_bad_input_raises() -> None:
    low, high = a.wilson_interval(0, 0)
    assert math.isnan(float(low)) and math.isnan(float(high))
    with pytest.raises(ValueError, match="between 0 and n"):
        a.wilson_interval(4, 3)
    with pytest.raises(ValueError, match="confidence"):
        a.wilson_interval(1, 2, confidence=1.5)


def test_success_rate_denominators(make_payments: Build) -> None:
    p = make_payments(
        [
            {"status": "succeeded", "amount": 100},
            {"status": "succeeded", "amount": 100},
            {"status": "failed", "amount": 100},
            {"status": "canceled", "amount": 100},
            {"status": "pending", "amount": 100},
            {"status": "succeeded", "amount": 100, "method_type": "fpx"},
        ]
    )
    by = a.success_rate(p, by="method_type").set_index("method_type")
    # card: succeeded 2, failed 1 -> decided 3 -> 2/3; canceled and pending not decided.
    assert by.loc["card", ["attempts", "succeeded", "failed", "open", "abandoned", "n"]].tolist() == [
        5, 2, 1, 1, 1, 3,
    ]  # fmt: skip
    assert by.loc["card", "rate"] == pytest.approx(2 / 3)
    # fpx: 1 of 1 -> rate 1, interval lower bound 1/(1+z²) = 0.206549: a single payment proves little.
    assert by.loc["fpx", "rate"] == 1.0
    assert by.loc["fpx", "ci_low"] == pytest.approx(1 / (1 + Z2))
    # finished: abandoned counts against -> card 2 / (2 + 1 + 1) = 0.5
    fin = a.success_rate(p, by="method_type", denominator="finished").set_index("method_type")
    assert fin.loc["card", "rate"] == 0.5
    with pytest.raises(ValueError, match="denominator"):
        a.success_rate(p, denominator="all")  # type: ignore[arg-type]


def test_rates_on_empty_frame(make_payments: Build) -> None:
    empty = make_payments([])
    total = a.success_rate(empty)
    assert total.loc[0, "n"] == 0 and math.isnan(total.loc[0, "rate"])
    assert a.success_rate(empty, by="method_type", freq="day").empty


def test_day_buckets_across_midnight_in_kuala_lumpur(make_payments: Build) -> None:
    # 15:59:59 UTC is 23:59:59 on 1 Nov in Kuala Lumpur (UTC+8); 16:00:00 UTC is 00:00 on 2 Nov.
    p = make_payments(
        [
            {"status": "succeeded", "amount": 100, "created_at": "2026-11-01T15:59:59Z"},
            {"status": "failed", "amount": 100, "created_at": "2026-11-01T16:00:00Z"},
        ]
    )
    kl = a.success_rate(p, freq="day", tz="Asia/Kuala_Lumpur")
    assert [str(t) for t in kl["period"]] == [
        "2026-11-01 00:00:00+08:00",
        "2026-11-02 00:00:00+08:00",
    ]
    assert kl["succeeded"].tolist() == [1, 0] and kl["failed"].tolist() == [0, 1]
    utc = a.success_rate(p, freq="day", tz="UTC")
    assert len(utc) == 1 and utc.loc[0, "n"] == 2


def test_tz_defaults_to_gw_timezone(make_payments: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    p = make_payments([{"status": "failed", "amount": 1, "created_at": "2026-11-01T16:30:00Z"}])
    monkeypatch.setenv("GW_TIMEZONE", "Asia/Kuala_Lumpur")
    assert str(a.bucket(p["created_at"], "day").iloc[0]) == "2026-11-02 00:00:00+08:00"
    monkeypatch.delenv("GW_TIMEZONE")
    assert str(a.bucket(p["created_at"], "day").iloc[0]) == "2026-11-01 00:00:00+00:00"


def test_week_and_month_buckets_and_gaps(make_payments: Build) -> None:
    # Wed 4 Nov and Mon 16 Nov 2026: ISO weeks start Monday 2 Nov and 16 Nov; the quiet
    # week of 9 Nov is a row of zeros, not a gap.
    p = make_payments(
        [
            {"status": "failed", "amount": 1, "created_at": "2026-11-04T10:00:00Z"},
            {"status": "succeeded", "amount": 1, "created_at": "2026-11-16T10:00:00Z"},
        ]
    )
    weeks = a.decline_rate(p, freq="week", tz="UTC")
    assert [t.day for t in weeks["period"]] == [2, 9, 16]
    assert weeks["n"].tolist() == [1, 0, 1]
    assert weeks["rate"].tolist()[0] == 1.0 and math.isnan(weeks["rate"].tolist()[1])
    months = a.decline_rate(p, freq="month", tz="UTC")
    assert len(months) == 1 and months.loc[0, "n"] == 2


def test_bad_tz_freq_and_naive_timestamps_are_refused(make_payments: Build) -> None:
    p = make_payments([{"status": "failed", "amount": 1}])
    with pytest.raises(ValueError, match="unknown time zone 'Mars/Base'"):
        a.success_rate(p, freq="day", tz="Mars/Base")
    with pytest.raises(ValueError, match="unknown freq 'hour'"):
        a.success_rate(p, freq="hour")
    naive = p.assign(created_at=p["created_at"].dt.tz_localize(None))
    with pytest.raises(ValueError, match="naive timestamps"):
        a.success_rate(naive, freq="day")
    with pytest.raises(ValueError, match="not a column"):
        a.success_rate(p, by="colour")


def test_between_reads_dates_as_whole_local_days(make_payments: Build) -> None:
    p = make_payments(
        [
            {
                "status": "failed",
                "amount": 1,
                "created_at": "2026-11-06T15:59:00Z",
            },  # 6 Nov 23:59 MYT
            {
                "status": "failed",
                "amount": 1,
                "created_at": "2026-11-07T15:59:00Z",
            },  # 7 Nov 23:59 MYT
            {
                "status": "failed",
                "amount": 1,
                "created_at": "2026-11-07T16:00:00Z",
            },  # 8 Nov 00:00 MYT
        ]
    )
    kept = a.between(p, "2026-11-07", "2026-11-07", tz="Asia/Kuala_Lumpur")
    assert kept["id"].tolist() == ["pay_2"]
    assert a.between(p, since="2026-11-07T23:59:00", tz="Asia/Kuala_Lumpur")["id"].tolist() == [
        "pay_2", "pay_3",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        a.between(p, since="last tuesday")


def test_business_days_skip_weekends() -> None:
    # Refund Friday 6 Nov 2026 (MYT); on Tuesday 10 Nov: Mon + Tue = 2 business days.
    start = pd.Series(pd.to_datetime(["2026-11-06T03:00:00Z"], utc=True))
    days = a.business_days_between(start, pd.Timestamp("2026-11-10T00:00:00Z"), "Asia/Kuala_Lumpur")
    assert days.tolist() == [2]
    # A holiday on Monday 9 Nov leaves 1.
    import datetime as dt

    hol = a.business_days_between(
        start, pd.Timestamp("2026-11-10T00:00:00Z"), "Asia/Kuala_Lumpur", [dt.date(2026, 11, 9)]
    )
    assert hol.tolist() == [1]


def test_business_days_take_the_end_as_every_date_argument_does() -> None:
    # A day given as text raised TypeError ('Cannot convert tz-naive Timestamp') from pandas.
    start = pd.Series(pd.to_datetime(["2026-11-06T03:00:00Z"], utc=True))  # Fri 6 Nov, MYT
    kl = "Asia/Kuala_Lumpur"
    assert a.business_days_between(start, "2026-11-10", kl).tolist() == [2]  # Mon + Tue
    assert a.business_days_between(start, "2026-11-09T23:00:00", kl).tolist() == [1]  # local
    with pytest.raises(ConfigurationError) as info:
        a.business_days_between(start, "10/11/2026", kl)
    assert info.value.param == "end"


def test_major_units_per_currency_exponent() -> None:
    amounts = pd.Series([1234, 1234, 1234], dtype="Int64")
    currencies = pd.Series(["MYR", "JPY", "bhd"], dtype="string")
    # MYR 2 decimals -> 12.34; JPY 0 -> 1234; BHD 3 -> 1.234
    assert a.to_major(amounts, currencies).tolist() == [12.34, 1234.0, 1.234]
    assert a.exponent("JPY") == 0 and a.exponent("myr") == 2


def test_money_is_formatted_by_babel_and_never_summed_across_currencies(
    make_payments: Build,
) -> None:
    assert a.format_money(1234.5, "MYR", "en_MY") == "RM1,234.50"
    assert a.format_money(1234, "JPY", "en_MY") == "JP¥1,234"
    assert a.format_money(None, "MYR") == ""
    p = make_payments(
        [
            {"status": "failed", "amount": 1050},  # RM10.50
            {"status": "failed", "amount": 2000},  # RM20.00
            {"status": "failed", "amount": 500, "currency": "JPY"},  # ¥500
        ]
    )
    totals = a.totals_by_currency(p, ["status"], locale="en_MY")
    # MYR: 1050 + 2000 = 3050 minor = 30.50; JPY: 500
    assert totals.loc["failed", "amount_MYR"] == 30.50
    assert totals.loc["failed", "amount_JPY"] == 500.0
    assert totals.loc["failed", "amount"] == "JP¥500; RM30.50"


def test_wilson_interval_always_contains_the_rate() -> None:
    # At k = n the upper bound is 1 and at k = 0 the lower bound is 0 in exact arithmetic;
    # rounding once put 0.9999999999 < 1.0 and matplotlib refused the negative whisker.
    for n in range(1, 120):
        k = np.arange(n + 1)
        low, high = a.wilson_interval(k, np.full(n + 1, n))
        assert (low <= k / n).all() and (high >= k / n).all(), n
