"""Figures: titles, labels and the data plotted (not pixels); each is a fresh Figure."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from gwtools import ConfigurationError, empty_refunds, plots
from gwtools import analysis as a

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


def _texts(fig: Figure) -> str:
    return " | ".join(t.get_text() for t in fig.findobj(matplotlib.text.Text))


def test_backend_is_agg() -> None:
    assert matplotlib.get_backend().lower() == "agg"


def test_decline_pareto_plots_counts_and_cumulative_share(declines_frame: pd.DataFrame) -> None:
    fig = plots.decline_pareto(a.decline_breakdown(declines_frame))
    bars, share = fig.axes[0], fig.axes[1]
    assert bars.get_title() == "Declines by code (Pareto)"
    assert bars.get_ylabel() == "failed payments (count)"
    assert [p.get_height() for p in bars.patches] == [2, 1, 1, 1]
    assert [t.get_text() for t in bars.get_xticklabels()] == [
        "insufficient_funds", "lost_card", "expired_card", "processing_error\n(no decline code)",
    ]  # fmt: skip
    assert share.lines[0].get_ydata().tolist() == pytest.approx([0.4, 0.6, 0.8, 1.0])
    assert "%" in share.get_ylabel()
    assert all(t.get_rotation() > 0 for t in bars.get_xticklabels())  # long codes do not collide


def test_decline_rate_over_time_has_interval_band(
    declines_frame: pd.DataFrame, make_payments: Build
) -> None:
    p = make_payments(
        [
            {"status": "failed", "amount": 1, "created_at": "2026-11-01T15:00:00Z"},
            {"status": "succeeded", "amount": 1, "created_at": "2026-11-01T17:00:00Z"},
            {"status": "succeeded", "amount": 1, "created_at": "2026-11-02T17:00:00Z"},
        ]
    )
    rates = a.decline_rate(p, freq="day", tz="Asia/Kuala_Lumpur")
    fig = plots.decline_rate_over_time(rates)
    ax = fig.axes[0]
    # 1 Nov MYT: 1 failed of 1; 2 Nov: 0 of 1; 3 Nov: 0 of 1
    assert ax.lines[0].get_ydata().tolist() == [1.0, 0.0, 0.0]
    assert len(ax.collections) == 1  # the fill_between band
    assert "Asia/Kuala_Lumpur" in ax.get_xlabel()
    assert ax.get_ylabel() == "declined / decided payments (%)"
    grouped = plots.decline_rate_over_time(
        a.decline_rate(declines_frame, by="method_type", freq="day"), group="method_type"
    )
    assert sorted(t.get_text() for t in grouped.legends[0].get_texts()) == ["card", "fpx"]


def test_refund_rate_over_time_one_line_per_currency(
    make_payments: Build, make_refunds: Build
) -> None:
    p = make_payments(
        [
            {"status": "succeeded", "amount": 100},
            {"status": "succeeded", "amount": 100, "currency": "JPY"},
        ]
    )
    r = make_refunds([{"payment_id": "pay_1", "amount": 50}])
    table = a.refund_rate(p, r, freq="day")
    fig = plots.refund_rate_over_time(table, measure="amount")
    ax = fig.axes[0]
    assert ax.get_title() == "Refund rate by amount over time (payment cohort)"
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"JPY", "MYR"}
    by_label = {line.get_label(): line.get_ydata().tolist() for line in ax.lines}
    assert by_label == {"JPY": [0.0], "MYR": [0.5]}
    with pytest.raises(ValueError, match="measure"):
        plots.refund_rate_over_time(table, measure="value")


@pytest.fixture
def banks(make_payments: Build) -> pd.DataFrame:
    rows = [
        *[{"status": "succeeded", "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"}] * 9,
        {"status": "failed", "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"},
        {"status": "succeeded", "fpx_bank_code": "PBB0233", "fpx_bank": "Public Bank"},
        {"status": "canceled", "fpx_bank_code": "PBB0233", "fpx_bank": "Public Bank"},
        {"status": "canceled", "fpx_bank_code": "PBB0233", "fpx_bank": "Public Bank"},
    ]
    return make_payments([{**r, "method_type": "fpx", "amount": 100} for r in rows])


def test_fpx_heatmap_cells_and_labels(banks: pd.DataFrame) -> None:
    fig = plots.fpx_outcome_heatmap(a.fpx_outcome_shares(banks))
    ax = fig.axes[0]
    image = ax.images[0].get_array()
    # rows best first: Maybank 9/10 succeeded, 1/10 failed; Public Bank 1/3, canceled 2/3
    assert image[0, 0] == pytest.approx(0.9) and image[1, 0] == pytest.approx(1 / 3)
    columns = [t.get_text() for t in ax.get_xticklabels()]
    assert columns == ["succeeded", "failed", "canceled"]  # outcomes nobody had are dropped
    assert image[1, columns.index("canceled")] == pytest.approx(2 / 3)
    rows = [t.get_text() for t in ax.get_yticklabels()]
    assert rows == ["Maybank2u (MB2U0227)  n=10", "Public Bank (PBB0233)  n=3"]
    assert "90%" in _texts(fig)


def test_fpx_success_rates_whiskers(banks: pd.DataFrame) -> None:
    table = a.fpx_banks(banks)
    fig = plots.fpx_success_rates(table)
    ax = fig.axes[0]
    xs = ax.lines[0].get_xdata().tolist()
    assert xs == pytest.approx([0.9, 1 / 3])  # drawn bottom-up: the table's first bank on top
    assert ax.get_xlabel() == "succeeded / finished attempts (%)"
    assert table["fpx_bank_code"].iloc[0] == "PBB0233"  # the table's ranking, worst first
    assert ax.get_yticklabels()[-1].get_text() == "Public Bank (PBB0233)  n=3"
    # both banks have fewer than 20 finished attempts: unranked, drawn in grey
    assert not table["ranked"].any()
    assert ax.lines[0].get_color() == "#999999"


def test_funnel_bars(make_payments: Build) -> None:
    p = make_payments([{"status": "succeeded", "amount": 1}, {"status": "pending", "amount": 1}])
    fig = plots.funnel(a.funnel(p))
    widths = [bar.get_width() for bar in fig.axes[0].patches]
    assert widths == [2, 2, 1, 1, 0]  # created, action, authorized, succeeded, refunded
    assert "50% of created" in _texts(fig)


def test_empty_inputs_give_a_message_not_an_error(
    make_payments: Build, make_refunds: Build
) -> None:
    p, r = make_payments([]), make_refunds([])
    figures = [
        plots.decline_pareto(a.decline_breakdown(p)),
        plots.decline_rate_over_time(a.decline_rate(p, freq="day")),
        plots.refund_rate_over_time(a.refund_rate(p, r, freq="day")),
        plots.fpx_outcome_heatmap(a.fpx_outcome_shares(p)),
        plots.fpx_success_rates(a.fpx_banks(p)),
        plots.fpx_rate_over_time(a.fpx_banks(p, freq="day")),
        plots.funnel(a.funnel(p)),
    ]
    for fig in figures:
        assert isinstance(fig, Figure)
        assert "no " in _texts(fig) and "in this selection" in _texts(fig)


def test_figures_do_not_touch_pyplot_state(declines_frame: pd.DataFrame) -> None:
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    plots.decline_pareto(a.decline_breakdown(declines_frame))
    assert plt.get_fignums() == before
    a_fig = plots.funnel(a.funnel(declines_frame))
    b_fig = plots.funnel(a.funnel(declines_frame))
    assert a_fig is not b_fig and np.isclose(a_fig.get_figwidth(), 9.0)


def test_bands_are_dropped_beyond_three_series(make_payments: Build) -> None:
    rows = [
        {
            "status": s,
            "amount": 1,
            "method_type": "fpx",
            "fpx_bank_code": f"B{i}",
            "fpx_bank": f"Bank {i}",
        }
        for i in range(4)
        for s in ("succeeded", "failed")
    ]
    fig = plots.fpx_rate_over_time(a.fpx_banks(make_payments(rows), freq="day"))
    ax = fig.axes[0]
    assert len(ax.lines) == 4 and len(ax.collections) == 0
    assert "bands hidden" in ax.get_title()


def _fpx_rows(
    bank: str, succeeded: int, failed: int, day: str = "2026-11-02"
) -> list[dict[str, Any]]:
    base = {
        "method_type": "fpx",
        "amount": 100,
        "fpx_bank_code": bank,
        "fpx_bank": f"Bank {bank}",
        "created_at": f"{day}T02:00:00Z",
    }
    return [{**base, "status": "succeeded"}] * succeeded + [{**base, "status": "failed"}] * failed


@pytest.fixture
def many_banks(make_payments: Build) -> pd.DataFrame:
    """Five real banks of 10, 8, 6, 4 and 2 finished attempts, and two test banks."""
    rows = [
        *_fpx_rows("B10", 9, 1),
        *_fpx_rows("B08", 6, 2),
        *_fpx_rows("B06", 6, 0),
        *_fpx_rows("B04", 1, 3),  # B04 and B02 make "other": 1 + 2 of 4 + 2 = 3/6
        *_fpx_rows("B02", 2, 0),
        *_fpx_rows("TEST0002", 0, 5),
        *_fpx_rows("TEST0001", 7, 0),
    ]
    return make_payments(rows)


def test_fpx_rate_over_time_top_banks_other_and_no_test_banks(many_banks: pd.DataFrame) -> None:
    fig = plots.fpx_rate_over_time(a.fpx_banks(many_banks, freq="day"), top=3)
    ax = fig.axes[0]
    by_label = {line.get_label(): line.get_ydata().tolist() for line in ax.lines}
    assert list(by_label) == ["Bank B10", "Bank B08", "Bank B06", "other (2)"]  # largest first
    assert by_label["Bank B08"] == [0.75] and by_label["other (2)"] == [0.5]
    colours = [line.get_color() for line in ax.lines]
    assert len(set(colours)) == len(colours)  # never a colour twice
    assert colours[-1] == plots.OTHER_COLOUR
    assert "2 test banks not shown" in ax.get_title()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(by_label)


def test_rate_over_time_colours_stay_distinct_at_the_palette_limit(make_payments: Build) -> None:
    rows = [r for i in range(12) for r in _fpx_rows(f"B{i:02d}", 1 + i, 1)]
    table = a.fpx_banks(make_payments(rows), freq="day")
    fig = plots.fpx_rate_over_time(table, top=len(plots.PALETTE))
    colours = [line.get_color() for line in fig.axes[0].lines]
    assert len(colours) == len(plots.PALETTE) + 1 == len(set(colours))
    # default: six banks and "other", which sums the six smallest (1/2, 2/3, ... 6/7)
    lines = plots.fpx_rate_over_time(table).axes[0].lines
    assert [line.get_label() for line in lines][-1] == "other (6)"
    assert lines[-1].get_ydata().tolist() == pytest.approx([21 / 27])
    from gwtools import ConfigurationError

    with pytest.raises(ConfigurationError, match="top must be between 1 and 9"):
        plots.fpx_rate_over_time(table, top=10)


def test_fpx_rate_over_time_of_test_banks_only_says_so(make_payments: Build) -> None:
    table = a.fpx_banks(make_payments(_fpx_rows("TEST0001", 2, 0)), freq="day")
    ax = plots.fpx_rate_over_time(table).axes[0]
    assert [line.get_label() for line in ax.lines] == ["Bank TEST0001"]
    assert "test banks only" in ax.get_title()


def test_fpx_success_rates_and_heatmap_leave_test_banks_out(many_banks: pd.DataFrame) -> None:
    ax = plots.fpx_success_rates(a.fpx_banks(many_banks)).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert len(labels) == 5 and not [label for label in labels if "TEST" in label]
    assert "2 test banks not shown" in ax.get_title()
    heat = plots.fpx_outcome_heatmap(a.fpx_outcome_shares(many_banks)).axes[0]
    rows = [t.get_text() for t in heat.get_yticklabels()]
    assert len(rows) == 5 and not [row for row in rows if "TEST" in row]
    assert "2 test banks not shown" in heat.get_title()


def test_decline_rate_groups_beyond_top_become_other(make_payments: Build) -> None:
    brands = {"visa": (3, 1), "mastercard": (2, 0), "amex": (0, 1), "jcb": (1, 1)}
    rows = [
        {"status": status, "amount": 1, "card_brand": brand}
        for brand, (ok, failed) in brands.items()
        for status in ["succeeded"] * ok + ["failed"] * failed
    ]
    rates = a.decline_rate(make_payments(rows), by="card_brand", freq="day")
    ax = plots.decline_rate_over_time(rates, group="card_brand", top=2).axes[0]
    by_label = {line.get_label(): line.get_ydata().tolist() for line in ax.lines}
    # visa 4 decided, then jcb and mastercard 2 each (ties by name); amex alone is "other"
    assert by_label == {"visa": [0.25], "jcb": [0.5], "other (2)": [1 / 3]}


def test_refund_rate_labels_say_what_the_rate_divides(
    make_payments: Build, make_refunds: Build
) -> None:
    p = make_payments([{"status": "succeeded", "amount": 100}] * 2)
    r = make_refunds([{"payment_id": "pay_1", "amount": 50}])
    cohort = a.refund_rate(p, r, freq="day")
    by_date = a.refund_rate(p, r, freq="day", cohort="refund")
    labels = {
        (measure, which): plots.refund_rate_over_time(t, measure=measure).axes[0].get_ylabel()
        for which, t in (("payment", cohort), ("refund", by_date))
        for measure in ("count", "amount")
    }
    assert labels == {
        ("count", "payment"): "refunded / succeeded payments of the cohort (%)",
        ("amount", "payment"): "refunded / captured amount of the cohort (%)",
        ("count", "refund"): "refunds / succeeded payments in the period (%)",
        ("amount", "refund"): "refunded / captured amount in the period (%)",
    }


def test_refund_amounts_of_smaller_currencies_are_left_out_not_added(
    make_payments: Build, make_refunds: Build
) -> None:
    p = make_payments(
        [
            {"status": "succeeded", "amount": 100},
            {"status": "succeeded", "amount": 100},
            {"status": "succeeded", "amount": 100, "currency": "JPY"},
        ]
    )
    r = make_refunds([{"payment_id": "pay_3", "amount": 50, "currency": "JPY"}])
    table = a.refund_rate(p, r, freq="day")
    ax = plots.refund_rate_over_time(table, measure="amount", top=1).axes[0]
    assert [line.get_label() for line in ax.lines] == ["MYR"]
    assert "not shown (smaller): JPY" in ax.get_title()


@pytest.mark.parametrize("jpy_refunds", [1, 2])
def test_refunds_by_refund_date_combine_into_other_without_an_interval(
    make_payments: Build, make_refunds: Build, jpy_refunds: int
) -> None:
    p = make_payments(
        [{"status": "succeeded", "amount": 100}] * 3
        + [{"status": "succeeded", "amount": 100, "currency": c} for c in ("SGD", "SGD", "USD")]
        + [{"status": "succeeded", "amount": 100, "currency": "JPY"}]
    )  # pay_1-3 MYR, pay_4-5 SGD, pay_6 USD, pay_7 JPY
    # made on the payments' day: JPY's refunds may outnumber its payments (a ratio, no interval)
    r = make_refunds(
        [{"payment_id": "pay_1", "amount": 50, "created_at": "2026-11-02T05:00:00Z"}]
        + [{"payment_id": "pay_7", "amount": 10, "currency": "JPY",
            "created_at": "2026-11-02T05:00:00Z"}] * jpy_refunds
        + [{"payment_id": "pay_6", "amount": 10, "currency": "USD",
            "created_at": "2026-11-02T05:00:00Z"}]
    )  # fmt: skip
    table = a.refund_rate(p, r, freq="day", cohort="refund")
    ax = plots.refund_rate_over_time(table, top=2).axes[0]
    by_label = {line.get_label(): line.get_ydata().tolist() for line in ax.lines}
    # MYR 1 / 3, SGD 0 / 2; other: JPY and USD, (jpy_refunds + 1) refunds / 2 payments
    assert by_label == {"MYR": [1 / 3], "SGD": [0.0], "other (2)": [(jpy_refunds + 1) / 2]}
    assert not ax.collections  # no band: no line has an interval, "other" neither


# ----- "sandbox data" on figures -----------------------------------------------------------


def _every_figure(payments: pd.DataFrame) -> dict[str, Callable[[Any], Figure]]:
    """Each public plot function, drawn from ``payments``'s analyses, given ``origin``."""
    refunds = pd.DataFrame({c: pd.Series(dtype=t) for c, t in empty_refunds().dtypes.items()})
    return {
        "decline_pareto": lambda o: plots.decline_pareto(a.decline_breakdown(payments), origin=o),
        "decline_rate_over_time": lambda o: plots.decline_rate_over_time(
            a.decline_rate(payments, freq="week"), origin=o
        ),
        "refund_rate_over_time": lambda o: plots.refund_rate_over_time(
            a.refund_rate(payments, refunds, freq="week"), origin=o
        ),
        "fpx_outcome_heatmap": lambda o: plots.fpx_outcome_heatmap(
            a.fpx_outcome_shares(payments), origin=o
        ),
        "fpx_success_rates": lambda o: plots.fpx_success_rates(a.fpx_banks(payments), origin=o),
        "fpx_rate_over_time": lambda o: plots.fpx_rate_over_time(
            a.fpx_banks(payments, freq="week"), origin=o
        ),
        "funnel": lambda o: plots.funnel(a.funnel(payments), origin=o),
        "monitor_timeline": lambda o: plots.monitor_timeline(
            a.monitor(payments, refunds), origin=o
        ),
        "quality_rules": lambda o: plots.quality_rules(a.quality(payments, refunds), origin=o),
    }


def test_every_plot_function_is_checked_for_the_sandbox_label(
    declines_frame: pd.DataFrame,
) -> None:
    import inspect

    drawing = {
        name
        for name, f in inspect.getmembers(plots, inspect.isfunction)
        if f.__module__ == plots.__name__
        and not name.startswith("_")
        and inspect.signature(f).return_annotation in (Figure, "Figure")
        and name != "label_sandbox"
    }
    assert drawing == set(_every_figure(declines_frame))


def test_figures_of_sandbox_data_say_so_and_real_data_is_not_labelled(
    declines_frame: pd.DataFrame,
) -> None:
    sandboxed = declines_frame.copy()
    sandboxed.attrs["gwtools_source"] = "sandbox data"  # as Gateway.payments() on the sandbox
    for name, draw in _every_figure(declines_frame).items():
        labelled = draw(sandboxed)
        assert labelled.get_suptitle() == "sandbox data: not real payments", name
        for real in (declines_frame, None, False):
            fig = draw(real)
            assert fig.get_suptitle() == "", name
            assert "sandbox" not in _texts(fig), name


def test_an_analysis_result_that_carries_the_label_is_labelled_without_origin(
    declines_frame: pd.DataFrame,
) -> None:
    table = a.funnel(declines_frame)
    assert plots.funnel(table).get_suptitle() == ""
    table.attrs["gwtools_source"] = "sandbox data"
    assert plots.funnel(table).get_suptitle() == "sandbox data: not real payments"


def test_is_sandbox_data_is_one_question_for_every_kind_of_origin(
    declines_frame: pd.DataFrame, tmp_path: Path
) -> None:
    import gwtools
    from gwtools.report import Tables

    sandboxed = declines_frame.copy()
    sandboxed.attrs["gwtools_source"] = "sandbox data"
    other = declines_frame.copy()
    other.attrs["gwtools_source"] = "a warehouse"
    assert plots.is_sandbox_data(sandboxed)
    assert not plots.is_sandbox_data(declines_frame) and not plots.is_sandbox_data(other)
    assert plots.is_sandbox_data(True) and not plots.is_sandbox_data(False)
    assert not plots.is_sandbox_data(None)
    # A lazy table has nowhere to keep the label: it is not guessed at.
    gwtools.write_table(declines_frame, tmp_path / "p.parquet", "parquet")
    lazy = duckdb.read_parquet(str(tmp_path / "p.parquet"))
    assert not plots.is_sandbox_data(lazy)
    # What a lazy table came from answers instead: a Source, the notebooks' Tables.
    now = pd.Timestamp("2026-11-01", tz="UTC")
    for embedded in (True, False):
        src = gwtools.Source(lazy, lazy, "x", "duckdb", embedded=embedded)
        assert plots.is_sandbox_data(src) is embedded
        tables = Tables(lazy, lazy, "x", "UTC", now, sandbox_data=embedded)
        assert plots.is_sandbox_data(tables) is embedded


#: Every public figure and the analysis whose table it draws.
DRAWS = {
    "decline_pareto": "decline_breakdown",
    "decline_rate_over_time": "decline_rate",
    "refund_rate_over_time": "refund_rate",
    "fpx_outcome_heatmap": "fpx_outcome_shares",
    "fpx_success_rates": "fpx_banks",
    "fpx_rate_over_time": "fpx_banks",
    "funnel": "funnel",
    "monitor_timeline": "monitor",
    "quality_rules": "quality",
}


def test_every_figure_is_listed() -> None:
    # Public functions that draw a table: a DataFrame in, a Figure out.
    figures = set()
    for name, fn in vars(plots).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != plots.__name__:
            continue
        sig = inspect.signature(fn)
        first = next(iter(sig.parameters.values()))
        if sig.return_annotation == "Figure" and first.annotation == "pd.DataFrame":
            figures.add(name)
            assert hasattr(fn, "__wrapped__"), f"plots.{name} does not check its table"
    assert figures == set(DRAWS)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_figure_given_a_table_of_payments_says_which_analysis_to_pass(
    name: str, declines_frame: pd.DataFrame
) -> None:
    plot = getattr(plots, name)
    lazy = duckdb.from_df(declines_frame)
    with pytest.raises(ConfigurationError, match=rf"not a duckdb.*analysis\.{DRAWS[name]}\("):
        plot(lazy)
    # The canonical pandas table is not an analysis's table either: named columns missing.
    with pytest.raises(ConfigurationError, match=rf"lacks its .*analysis\.{DRAWS[name]}\("):
        plot(declines_frame)


def test_top_and_tz_are_checked(declines_frame: pd.DataFrame) -> None:
    from gwtools import ConfigurationError

    breakdown = a.decline_breakdown(declines_frame)
    rates = a.decline_rate(declines_frame, freq="day")
    for top in (-3, 0, "5", True):
        with pytest.raises(ConfigurationError, match="top must be a whole number of at least 1"):
            plots.decline_pareto(breakdown, top=top)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="top must be a whole number of at least 1"):
            plots.decline_rate_over_time(rates, top=top)  # type: ignore[arg-type]
    assert len(plots.decline_pareto(breakdown, top=40).axes[0].patches) == len(breakdown)
    alerts = a.monitor(declines_frame)
    with pytest.raises(ConfigurationError, match="unknown time zone 'Mars/X'"):
        plots.monitor_timeline(alerts, tz="Mars/X")


# ----- a table from the wrong analysis is refused, before any figure is made ---------------


@pytest.fixture
def no_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal must come before a figure exists: making one fails the test."""

    def made(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a figure was made before the table was checked")

    monkeypatch.setattr(plots, "_figure", made)


def _two_weeks(make_payments: Build) -> pd.DataFrame:
    """Cards and FPX over two weeks (Mondays 2 and 9 Nov 2026, UTC), all in MYR.

    Week 1: card succeeded, failed, failed, canceled (not decided); fpx succeeded.
    Week 2: card succeeded; fpx failed, succeeded.
    """
    fpx = {"method_type": "fpx", "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"}
    week1, week2 = "2026-11-03T02:00:00Z", "2026-11-10T02:00:00Z"
    rows = [
        {"status": "succeeded", "card_brand": "visa", "created_at": week1},
        {"status": "failed", "card_brand": "visa", "created_at": week1},
        {"status": "failed", "card_brand": "mastercard", "created_at": week1},
        {"status": "canceled", "card_brand": "visa", "created_at": week1},
        {"status": "succeeded", **fpx, "created_at": week1},
        {"status": "succeeded", "card_brand": "mastercard", "created_at": week2},
        {"status": "failed", **fpx, "created_at": week2},
        {"status": "succeeded", **fpx, "created_at": week2},
    ]
    return make_payments([{"amount": 1000, **r} for r in rows])


def test_decline_rate_by_one_column_draws_one_line_per_value(make_payments: Build) -> None:
    # Once one zig-zag line through card, fpx, card, fpx: now a line per method type.
    rates = a.decline_rate(_two_weeks(make_payments), by="method_type", freq="week", tz="UTC")
    for fig in (
        plots.decline_rate_over_time(rates),
        plots.decline_rate_over_time(rates, group="method_type"),
    ):
        ax = fig.axes[0]
        by_label = {line.get_label(): line.get_ydata().tolist() for line in ax.lines}
        # card: 2 failed of 3 decided (the canceled one is not decided), then 0 of 1;
        # fpx: 0 of 1, then 1 of 2. Card first: 4 decided payments against fpx's 3.
        assert list(by_label) == ["card", "fpx"]
        assert by_label["card"] == pytest.approx([2 / 3, 0.0])
        assert by_label["fpx"] == pytest.approx([0.0, 0.5])
        assert fig.legends[0].get_title().get_text() == "method type"


def test_decline_rate_over_time_refuses_rows_it_cannot_draw_as_lines(
    make_payments: Build, no_figures: None
) -> None:
    payments = _two_weeks(make_payments)
    both = a.decline_rate(payments, by=["method_type", "card_brand"], freq="week", tz="UTC")
    with pytest.raises(
        ConfigurationError,
        match=r"one row per period and method_type and card_brand: pass group=.*"
        r"analysis\.decline_rate\(payments, by='card_brand', freq='week'\)",
    ):
        plots.decline_rate_over_time(both)
    # group= names one key; the other still splits its rows (card: visa and mastercard).
    with pytest.raises(
        ConfigurationError,
        match=r"several rows per period and method_type \(it is also split by card_brand\)"
        r".*zig-zag.*analysis\.decline_rate\(payments, by='method_type'",
    ):
        plots.decline_rate_over_time(both, group="method_type")
    # Once quietly ignored: one line over the table as if group= were not given.
    by_method = a.decline_rate(payments, by="method_type", freq="week", tz="UTC")
    with pytest.raises(
        ConfigurationError,
        match=r"group='card_brand' is not a column this table is split by \(it is split by "
        r"method_type\): make it with analysis\.decline_rate\(payments, by='card_brand'",
    ):
        plots.decline_rate_over_time(by_method, group="card_brand")
    with pytest.raises(ConfigurationError, match=r"group='method_type'.*made without by="):
        plots.decline_rate_over_time(a.decline_rate(payments, freq="week"), group="method_type")


def test_a_key_that_does_not_split_the_lines_is_drawn(make_payments: Build) -> None:
    # amount_band brings currency along; with one currency, one line per band is right.
    payments = _two_weeks(make_payments)
    bands = a.decline_rate(payments, by="amount_band", freq="week", tz="UTC")
    ax = plots.decline_rate_over_time(bands, group="amount_band").axes[0]
    assert [line.get_label() for line in ax.lines] == ["10–50"]  # every payment is 10.00


def test_bands_in_several_currencies_are_sent_to_one_currency(make_payments: Build) -> None:
    """by='amount_band' always adds currency: the advice cannot be to make the same table."""
    rows = [
        {"status": "failed", "amount": 2000, "currency": "MYR", "created_at": "2026-11-03T02:00Z"},
        {"status": "failed", "amount": 2000, "currency": "SGD", "created_at": "2026-11-03T03:00Z"},
    ]
    bands = a.decline_rate(make_payments(rows), by="amount_band", freq="week", tz="UTC")
    for group in (None, "amount_band"):
        with pytest.raises(ConfigurationError, match="amount bands are per currency") as err:
            plots.decline_rate_over_time(bands, group=group)
        assert "by='amount_band'" not in str(err.value)
        assert "payments[payments['currency'] == 'MYR']" in str(err.value)
    fig = plots.decline_rate_over_time(bands, group="currency")
    assert sorted(line.get_label() for line in fig.axes[0].lines) == ["MYR", "SGD"]


def test_decline_rate_over_time_refuses_other_rates(make_payments: Build, no_figures: None) -> None:
    payments = _two_weeks(make_payments)
    # success_rate's table has decline_rate's columns: only its rate differs.
    with pytest.raises(
        ConfigurationError,
        match=r"rate is succeeded / n, not failed / n: pass "
        r"plots\.decline_rate_over_time\(analysis\.decline_rate\(",
    ):
        plots.decline_rate_over_time(a.success_rate(payments, freq="week"))
    with pytest.raises(
        ConfigurationError, match=r"has test_bank: .*fpx_banks.*analysis\.decline_rate\("
    ):
        plots.decline_rate_over_time(a.fpx_banks(payments, freq="week"))


def test_fpx_outcome_heatmap_refuses_counts(banks: pd.DataFrame, no_figures: None) -> None:
    # fpx_banks has a column per outcome too, but of counts: 9 on a 0-1 colour scale.
    with pytest.raises(
        ConfigurationError,
        match=r"has fpx_bank_code: it is analysis\.fpx_banks's counts.*"
        r"analysis\.fpx_outcome_shares\(",
    ):
        plots.fpx_outcome_heatmap(a.fpx_banks(banks))
    counts = a.fpx_banks(banks).set_index("fpx_bank_code")
    with pytest.raises(
        ConfigurationError,
        match=r"succeeded, failed, timed_out.* are counts, not shares.*"
        r"analysis\.fpx_outcome_shares\(",
    ):
        plots.fpx_outcome_heatmap(counts)
    with pytest.raises(ConfigurationError, match=r"banks are a column, not its index"):
        plots.fpx_outcome_heatmap(a.fpx_outcome_shares(banks).reset_index())


def test_refund_rate_over_time_refuses_a_table_split_by_more_than_currency(
    make_payments: Build, make_refunds: Build, no_figures: None
) -> None:
    p = make_payments(
        [
            {"status": "succeeded", "amount": 100},
            {"status": "succeeded", "amount": 100, "method_type": "fpx"},
        ]
    )
    r = make_refunds([{"payment_id": "pay_1", "amount": 50}])
    with pytest.raises(
        ConfigurationError,
        match=r"one line per currency; this table has several rows per period and currency "
        r"\(it is also split by method_type\).*"
        r"analysis\.refund_rate\(payments, refunds, freq='month'\)",
    ):
        plots.refund_rate_over_time(a.refund_rate(p, r, by="method_type", freq="day"))


def test_fpx_success_rates_refuses_a_table_per_period(
    banks: pd.DataFrame, no_figures: None
) -> None:
    with pytest.raises(
        ConfigurationError,
        match=r"has period: one row per bank and period.*plots\.fpx_rate_over_time.*"
        r"analysis\.fpx_banks\(payments\)",
    ):
        plots.fpx_success_rates(a.fpx_banks(banks, freq="day"))


#: For each figure, tables of other analyses (made from payments p and refunds r) it refuses,
#: and what its message says.
WRONG_TABLES: list[tuple[str, Callable[[pd.DataFrame, pd.DataFrame], Any], str]] = [
    ("decline_pareto", lambda p, r: a.decline_breakdown(p, by="method_type"),
     r"has none of decline_code, failure_code"),
    ("decline_pareto", lambda p, r: a.decline_types(p), r"lacks its cumulative_share"),
    ("decline_pareto", lambda p, r: a.refunds_by_reason(r), r"lacks its cumulative_share"),
    ("decline_rate_over_time", lambda p, r: a.refund_rate(p, r, freq="week"),
     r"lacks its failed, n"),
    ("decline_rate_over_time", lambda p, r: a.decline_rate(p, by="method_type"),
     r"lacks its period"),
    ("refund_rate_over_time", lambda p, r: a.decline_rate(p, by="currency", freq="week"),
     r"lacks its payments, amount_rate"),
    ("fpx_outcome_heatmap", lambda p, r: a.success_rate(p, by="fpx_bank_code"),
     r"lacks its timed_out, canceled, expired, pending"),
    ("fpx_outcome_heatmap", lambda p, r: a.fpx_banks(p), r"has fpx_bank_code"),
    ("fpx_success_rates", lambda p, r: a.decline_rate(p, by=["fpx_bank_code", "fpx_bank"]),
     r"rate is failed / n, not succeeded / n"),
    ("fpx_success_rates", lambda p, r: a.fpx_outcome_shares(p), r"lacks its fpx_bank_code"),
    ("fpx_rate_over_time", lambda p, r: a.fpx_banks(p), r"lacks its period"),
    ("fpx_rate_over_time",
     lambda p, r: a.decline_rate(p, by=["fpx_bank_code", "fpx_bank"], freq="week"),
     r"rate is failed / n, not succeeded / n"),
    ("funnel", lambda p, r: a.status_counts(p), r"lacks its stage, reached"),
    ("funnel", lambda p, r: a.funnel(p).drop(columns="share_of_created"),
     r"lacks its share_of_created"),
    ("monitor_timeline", lambda p, r: a.quality(p, r), r"lacks its kind, scope"),
    ("monitor_timeline", lambda p, r: a.monitor(p, r).drop(columns="observed"),
     r"lacks its observed"),
    ("quality_rules", lambda p, r: a.decline_breakdown(p), r"lacks its rule, checked, ok"),
    ("quality_rules", lambda p, r: a.refunds_by_reason(r), r"lacks its rule, checked, ok"),
    ("quality_rules", lambda p, r: a.quality(p, r).drop(columns="checked"),
     r"lacks its checked"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "wrong", "problem"),
    WRONG_TABLES,
    ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(WRONG_TABLES)],
)
def test_a_figure_given_another_analysis_table_says_which_to_pass(
    name: str,
    wrong: Callable[[pd.DataFrame, pd.DataFrame], Any],
    problem: str,
    declines_frame: pd.DataFrame,
    make_refunds: Build,
    no_figures: None,
) -> None:
    refunds = make_refunds([{"payment_id": "pay_1", "amount": 500, "reason": "duplicate"}])
    table = wrong(declines_frame, refunds)
    assert isinstance(table, pd.DataFrame)
    with pytest.raises(
        ConfigurationError, match=rf"^plots\.{name} draws .*{problem}.*analysis\.{DRAWS[name]}\("
    ):
        getattr(plots, name)(table)


def test_every_figure_refuses_at_least_one_other_analysis_table() -> None:
    assert {name for name, _, _ in WRONG_TABLES} == set(DRAWS)


@pytest.mark.parametrize("name", sorted(DRAWS))
def test_a_figure_given_no_table_says_which_analysis_to_pass(name: str, no_figures: None) -> None:
    plot = getattr(plots, name)
    with pytest.raises(ConfigurationError, match=rf"lacks its .*analysis\.{DRAWS[name]}\("):
        plot(pd.DataFrame())
    for wrong in (None, {"count": [1]}, pd.Series([1.0]), [[1, 2]]):
        with pytest.raises(ConfigurationError, match=rf"not a .*analysis\.{DRAWS[name]}\("):
            plot(wrong)


def test_empty_tables_of_the_right_analysis_still_draw_a_message(
    make_payments: Build, make_refunds: Build
) -> None:
    p, r = make_payments([]), make_refunds([])
    figures = [
        plots.decline_rate_over_time(a.decline_rate(p, by="method_type", freq="day")),
        plots.refund_rate_over_time(a.refund_rate(p, r, freq="day", cohort="refund")),
        plots.decline_pareto(a.decline_breakdown(p, by="decline_code")),
        plots.monitor_timeline(a.monitor(p, r)),
    ]
    for fig in figures:
        assert "in this selection" in _texts(fig)
    # no rows: the rules were not tested, which "all hold" would hide
    title = plots.quality_rules(a.quality(p, r)).axes[0].get_title()
    assert "no rows to check" in title and "hold" not in title


def test_the_quality_title_says_all_hold_only_when_rows_were_checked(
    make_payments: Build, make_refunds: Build
) -> None:
    paid = {"status": "succeeded", "amount": 1000, "captured": True}
    p, r = make_payments([paid]), make_refunds([])
    rules = a.quality(p, r)
    assert rules["ok"].all() and rules["checked"].gt(0).any()
    assert plots.quality_rules(rules).axes[0].get_title().endswith(f"all {len(rules)} hold")


def test_figures_show_as_images_in_a_notebook_without_matplotlib_inline(
    make_payments: Build, make_refunds: Build, declines_frame: pd.DataFrame
) -> None:
    """A figure as a cell's last expression is an image in Jupyter even when nothing enabled
    matplotlib's inline backend (no `%matplotlib inline`, no pyplot import): a fresh
    IPython display formatter, as such a kernel has, gives PNG, not the text
    `<Figure size 900x480 with 1 Axes>`. Once a backend registers its own printer, that one
    draws it (one image, not two)."""
    from IPython.core.formatters import DisplayFormatter

    p, r = make_payments([]), make_refunds([])
    figures = [
        plots.decline_pareto(a.decline_breakdown(declines_frame)),
        plots.decline_rate_over_time(a.decline_rate(declines_frame, freq="day")),
        plots.refund_rate_over_time(a.refund_rate(p, r, freq="day")),
        plots.fpx_outcome_heatmap(a.fpx_outcome_shares(p)),
        plots.fpx_success_rates(a.fpx_banks(p)),
        plots.fpx_rate_over_time(a.fpx_banks(p, freq="day")),
        plots.funnel(a.funnel(declines_frame)),
        plots.monitor_timeline(a.monitor(p, r)),
        plots.quality_rules(a.quality(p, r)),
    ]
    for fig in figures:
        shown, _ = DisplayFormatter().format(fig)
        assert shown["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    inline = DisplayFormatter()
    inline.formatters["image/png"].for_type(Figure, lambda fig: b"the backend's")
    assert inline.format(figures[0])[0]["image/png"] == b"the backend's"
