"""Figures at the edges an analyst meets: one period, small shares, banks too small to rank,
more decline codes than bars. What is drawn and said (not pixels)."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from typing import Any

import matplotlib
import matplotlib.dates as mdates
import pandas as pd
import pytest
from matplotlib.figure import Figure

from gwtools import analysis as a
from gwtools import plots

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]


def _fpx(bank: str, succeeded: int, failed: int) -> list[dict[str, Any]]:
    base = {"method_type": "fpx", "amount": 100, "fpx_bank_code": bank, "fpx_bank": f"Bank {bank}"}
    return [{**base, "status": "succeeded"}] * succeeded + [{**base, "status": "failed"}] * failed


def _one_period(build: Build, refunds: Build, freq: str) -> dict[str, Figure]:
    """Each rate-over-time figure of payments all made on Monday 2 Nov 2026 (KL time), a
    refund of one of them made the same day."""
    payments = build(
        [
            {"status": "succeeded", "amount": 1000},
            {"status": "failed", "amount": 1000},
            *_fpx("MB2U0227", 3, 1),
        ]
    )
    made = refunds([{"payment_id": "pay_1", "amount": 500, "created_at": "2026-11-02T05:00Z"}])
    tz = "Asia/Kuala_Lumpur"
    return {
        "decline_rate_over_time": plots.decline_rate_over_time(
            a.decline_rate(payments, by="method_type", freq=freq, tz=tz)
        ),
        "refund_rate_over_time": plots.refund_rate_over_time(
            a.refund_rate(payments, made, freq=freq, tz=tz)
        ),
        "fpx_rate_over_time": plots.fpx_rate_over_time(a.fpx_banks(payments, freq=freq, tz=tz)),
    }


@pytest.mark.parametrize(("freq", "start"), [("day", "2026-11-02"), ("month", "2026-11-01")])
def test_one_period_is_drawn_on_its_day_not_on_years_of_empty_axis(
    make_payments: Build, make_refunds: Build, freq: str, start: str
) -> None:
    # Once: matplotlib widened the single date to 2025-2029, ticks "2025, Jul, 2026, ...",
    # the point alone in the middle and no tick saying which period it was.
    for name, fig in _one_period(make_payments, make_refunds, freq).items():
        fig.canvas.draw()
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_xticklabels()] == [start], name
        low, high = ax.get_xlim()
        assert high - low <= 2, name  # days, not years
        xs = [x for line in ax.lines for x in mdates.date2num(line.get_xdata())]
        assert xs and all(low < x < high for x in xs), name
        assert ax.get_xlabel() == "period start (Asia/Kuala_Lumpur)", name


def test_one_period_still_shows_its_interval_and_every_series(
    make_payments: Build, make_refunds: Build
) -> None:
    fig = _one_period(make_payments, make_refunds, "week")["decline_rate_over_time"]
    ax = fig.axes[0]
    assert "band: 95% interval" in ax.get_title()
    # A band over one period has no width: the interval is drawn upright, one per series,
    # and the series stand side by side instead of over each other.
    assert len(ax.collections) == 2
    xs = [mdates.date2num(line.get_xdata())[0] for line in ax.lines]
    assert len(set(xs)) == len(xs) == 2


def test_small_shares_do_not_read_as_none(make_payments: Build) -> None:
    # 1 of 300 payments refunded: 0.33%, once labelled "0% of created, 0% of previous"
    payments = make_payments(
        [{"status": "succeeded", "amount": 100, "refunded_amount": 50}]
        + [{"status": "succeeded", "amount": 100}] * 299
    )
    texts = _texts(plots.funnel(a.funnel(payments)))
    assert "1  (0.3% of created, 0.3% of previous)" in texts, texts
    # one time-out in 300 FPX attempts: a cell of 0.3%, once "0%" in a column kept for it
    timed_out = {**_fpx("MB2U0227", 0, 1)[0], "failure_code": "processing_error"}
    fpx = make_payments([*_fpx("MB2U0227", 299, 0), timed_out])
    heat = plots.fpx_outcome_heatmap(a.fpx_outcome_shares(fpx))
    ax = heat.axes[0]
    columns = [t.get_text() for t in ax.get_xticklabels()]
    assert "timed out" in columns
    cells = [t.get_text() for t in ax.texts]
    assert cells[columns.index("timed out")] == "0.3%"
    # not "100%": one did not succeed; 299/300 rounded as the tables round it (was cut to 99.6%)
    assert cells[columns.index("succeeded")] == "99.7%"
    assert cells[columns.index("failed")] == "0%"  # none is none


def test_tiny_and_near_all_shares_read_as_the_tables_read_them(make_payments: Build) -> None:
    # 1 refund among 10M created payments: the funnel said "1e-05% of created" (Python's "g"
    # format), which reads as 1%; the reports' tables say 0.00001%. A share of 0.9996 was cut
    # to "99.9%" (four times the failures it had), where the tables say 99.96%.
    funnel = a.funnel(make_payments([{"status": "succeeded", "amount": 100}]))
    funnel["reached"] = [10_000_000, 10_000_000, 10_000_000, 9_996_000, 1]
    funnel["share_of_created"] = funnel["reached"] / 10_000_000
    funnel["step_conversion"] = [float("nan"), 1.0, 1.0, 0.9996, 1 / 9_996_000]
    texts = _texts(plots.funnel(funnel))
    assert "1  (0.00001% of created, 0.00001% of previous)" in texts, texts
    assert "9,996,000  (99.96% of created, 99.96% of previous)" in texts, texts
    assert "10,000,000  (100% of created, 100% of previous)" in texts, texts


def test_grey_banks_say_why_they_are_not_ranked(make_payments: Build) -> None:
    payments = make_payments(_fpx("B30", 27, 3) + _fpx("B05", 4, 1))
    fig = plots.fpx_success_rates(a.fpx_banks(payments))
    assert len(fig.legends) == 1  # once none: grey and blue dots with no key
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["ranked", "not ranked: fewer than 20 finished attempts"]
    small = plots.fpx_success_rates(a.fpx_banks(make_payments(_fpx("B05", 4, 1))))
    assert [t.get_text() for t in small.legends[0].get_texts()] == [
        "not ranked: fewer than 20 finished attempts"
    ]
    ranked = plots.fpx_success_rates(a.fpx_banks(make_payments(_fpx("B30", 27, 3))))
    assert not ranked.legends  # all blue: nothing to explain


def test_a_pareto_cut_to_top_says_how_many_codes_it_leaves_out(
    declines_frame: pd.DataFrame,
) -> None:
    breakdown = a.decline_breakdown(declines_frame)
    assert len(breakdown) == 4
    ax = plots.decline_pareto(breakdown, top=2).axes[0]
    assert len(ax.patches) == 2
    assert ax.get_title() == "Declines by code (Pareto): the 2 most frequent of 4 codes"
    assert plots.decline_pareto(breakdown).axes[0].get_title() == "Declines by code (Pareto)"


def test_a_timeline_without_alerts_keeps_the_zone_the_monitor_ran_in(
    declines_frame: pd.DataFrame,
) -> None:
    alerts = a.monitor(declines_frame, tz="Asia/Kuala_Lumpur")
    assert alerts.empty and alerts.attrs["window"]
    ax = plots.monitor_timeline(alerts).axes[0]
    # Once "(UTC)" for want of an alert to read the zone from; the window is 10:00 KL time.
    assert ax.get_title().endswith("(Asia/Kuala_Lumpur)")
    assert "no alerts in this selection" in [t.get_text() for t in ax.texts]
    assert plots.monitor_timeline(alerts, tz="UTC").axes[0].get_title().endswith("(UTC)")


def test_banks_with_no_finished_attempt_are_named_not_dropped(make_payments: Build) -> None:
    pending = {"method_type": "fpx", "amount": 100, "status": "processing"}
    payments = make_payments(
        [
            *_fpx("MB2U0227", 3, 1),
            {**pending, "fpx_bank_code": "BCBB0235", "fpx_bank": "CIMB Clicks"},
            {**pending, "fpx_bank_code": "TEST0004", "fpx_bank": "SBI Bank A"},  # a test bank
        ]
    )
    banks = a.fpx_banks(payments)
    assert banks["rate"].isna().sum() == 2  # in the table, with nothing to draw
    ax = plots.fpx_success_rates(banks).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Bank MB2U0227 (MB2U0227)  n=4"]
    # Once left out without a word: the figure did not show that CIMB Clicks was selected.
    assert ax.get_title().splitlines()[-1] == (
        "no finished attempts (not shown): CIMB Clicks (BCBB0235)"
    )
    only = plots.fpx_success_rates(a.fpx_banks(make_payments(_fpx("MB2U0227", 3, 1))))
    assert "no finished attempts" not in only.axes[0].get_title()


def _long_label_figures(build: Build) -> dict[str, Figure]:
    """Each figure whose labels are the data's own text, that text 300 characters long."""
    long = "x" * 300
    codes = build(
        [{"status": "failed", "amount": 100, "decline_code": f"{long}{i}"} for i in (1, 2)]
    )
    fpx = [
        {"status": "failed", "amount": 100, "method_type": "fpx", "fpx_bank_code": f"AB{i}",
         "fpx_bank": f"{long} {i}", "created_at": f"2026-11-0{day}T02:00:00Z"}
        for i in (1, 2) for day in (1, 2)
    ]  # fmt: skip
    banks = build(fpx)
    described = build(
        [
            {"status": "failed", "amount": 100, "description": f"{long}{i}",
             "created_at": f"2026-11-0{day}T02:00:00Z"}
            for i in (1, 2) for day in (1, 2)
        ]
    )  # fmt: skip
    return {
        "decline_pareto": plots.decline_pareto(a.decline_breakdown(codes)),
        "fpx_success_rates": plots.fpx_success_rates(a.fpx_banks(banks)),
        "fpx_outcome_heatmap": plots.fpx_outcome_heatmap(a.fpx_outcome_shares(banks)),
        "fpx_rate_over_time": plots.fpx_rate_over_time(a.fpx_banks(banks, freq="day")),
        "decline_rate_over_time": plots.decline_rate_over_time(
            a.decline_rate(described, by="description", freq="day")
        ),
    }


@pytest.mark.parametrize(
    "name",
    [
        "decline_pareto",
        "fpx_success_rates",
        "fpx_outcome_heatmap",
        "fpx_rate_over_time",
        "decline_rate_over_time",
    ],
)
def test_a_very_long_label_is_shortened_and_the_figure_still_laid_out(
    make_payments: Build, name: str
) -> None:
    fig = _long_label_figures(make_payments)[name]
    with warnings.catch_warnings():
        # Once "constrained_layout not applied because axes sizes collapsed to zero": the
        # labels took the figure, and the chart was drawn squeezed out of sight.
        warnings.simplefilter("error")
        fig.savefig(io.BytesIO(), format="png")
    shortened = {t for t in _texts(fig) if "\u2026" in t}
    assert len(shortened) == 2  # each of the two long names, told apart by its end
    assert all(len(line) <= 60 for t in _texts(fig) for line in t.splitlines())


def test_a_bank_without_a_code_is_named_as_the_heatmap_names_it(make_payments: Build) -> None:
    payments = make_payments(
        [{"status": "failed", "amount": 100, "method_type": "fpx", "fpx_bank": "Maybank2u"}]
    )
    ax = plots.fpx_success_rates(a.fpx_banks(payments)).axes[0]
    # Once "Maybank2u (<NA>)": pandas' marker for a missing value, not words.
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Maybank2u (no code)  n=1"]
    heat = plots.fpx_outcome_heatmap(a.fpx_outcome_shares(payments)).axes[0]
    assert [t.get_text() for t in heat.get_yticklabels()] == ["Maybank2u (no code)  n=1"]


@pytest.mark.parametrize(
    ("freq", "days", "ticks"),
    [
        ("day", ["2026-11-01", "2026-11-02"], ["2026-11-01", "2026-11-02"]),
        ("week", ["2026-11-02", "2026-11-09", "2026-11-16"], ["2026-11-02", "2026-11-09", "2026-11-16"]),
        ("month", ["2026-10-05", "2026-11-05"], ["2026-10-01", "2026-11-01"]),
    ],
)  # fmt: skip
def test_a_few_periods_are_ticked_at_their_starts_not_at_hours_or_days_between(
    make_payments: Build, freq: str, days: list[str], ticks: list[str]
) -> None:
    payments = make_payments(
        [
            {"status": status, "amount": 100, "created_at": f"{day}T02:00:00Z"}
            for day in days
            for status in ("failed", "succeeded")
        ]
    )
    fig = plots.decline_rate_over_time(a.decline_rate(payments, freq=freq, tz="UTC"))
    fig.canvas.draw()
    # Once two days were ticked "Nov-01, 03:00, 06:00, ..., Nov-02" and two months
    # "Oct, 05, 09, ..., 29, Nov": hours or days on a chart of days or months.
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ticks


def test_a_very_long_alert_scope_is_shortened_and_the_timeline_still_laid_out() -> None:
    start = pd.Timestamp("2026-11-02T00:00Z")
    brand = "x" * 300  # a card brand as a gateway sent it
    alerts = pd.DataFrame(
        {"kind": ["decline_spike"], "scope": [f"card_brand={brand}"], "start": [start],
         "end": [start + pd.Timedelta(days=1)], "severity": ["high"], "observed": [0.5],
         "expected": [0.1], "n": [100]}
    )  # fmt: skip
    alerts.attrs["window"] = {"since": "2026-10-28T00:00Z", "until": "2026-11-04T00:00Z"}
    fig = plots.monitor_timeline(alerts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once: "axes sizes collapsed to zero"
        fig.savefig(io.BytesIO(), format="png")
    (label,) = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    kind, scope = label.splitlines()
    assert kind == "decline spike" and scope.startswith("card_brand=x") and "\u2026" in scope
