"""Dashboards at the edges an analyst meets: a table lacking a column, a view with nothing
in it although payments match, money of currencies with other decimals than two, times
whose zone the table must name, and lazy tables the monitor and quality dashboards must not
load whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from bs4 import BeautifulSoup

from gwtools import ConfigurationError
from gwtools import widgets as w
from tests.toolkit.test_widgets import _scanned

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


@pytest.fixture
def payments(make_payments: Build) -> pd.DataFrame:
    """Card payments in MYR, JPY (no decimals) and KWD (three); one FPX payment."""
    return make_payments(
        [
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-02T02:00:00Z"},
            {"status": "failed", "amount": 1000, "currency": "JPY", "failure_code":
             "card_declined", "decline_code": "insufficient_funds",
             "created_at": "2026-11-02T03:00:00Z"},
            {"status": "failed", "amount": 1234, "currency": "KWD", "failure_code":
             "card_declined", "decline_code": "lost_card", "created_at": "2026-11-02T04:00:00Z"},
            {"status": "succeeded", "amount": 3000, "method_type": "fpx", "fpx_bank_code":
             "MB2U0227", "fpx_bank": "Maybank2u", "created_at": "2026-11-03T02:00:00Z",
             "captured": True, "captured_at": "2026-11-03T02:03:00Z"},
        ]
    )  # fmt: skip


@pytest.fixture
def refunds(make_refunds: Build) -> pd.DataFrame:
    return make_refunds([{"payment_id": "pay_1", "amount": 500, "reason": "duplicate"}])


def _dashboards(tmp_path: Path) -> dict[str, Callable[[Any, Any], w.Dashboard]]:
    return {
        "declines": lambda p, r: w.declines_dashboard(p, tz="UTC", export_dir=tmp_path),
        "fpx": lambda p, r: w.fpx_dashboard(p, tz="UTC", export_dir=tmp_path),
        "refunds": lambda p, r: w.refunds_dashboard(p, r, tz="UTC", export_dir=tmp_path),
        "monitor": lambda p, r: w.monitor_dashboard(p, r, tz="UTC", export_dir=tmp_path),
        "quality": lambda p, r: w.quality_dashboard(p, r, tz="UTC", export_dir=tmp_path),
    }


def _text(markup: str) -> str:
    return BeautifulSoup(markup, "html.parser").get_text(" ", strip=True)


# ----- a table lacking a column ------------------------------------------------------------
#: (dashboard, the column dropped from the payments) that once failed with a KeyError or
#: narwhals' ColumnNotFoundError from inside a view, the filters' choices or the drill-down.
PAYMENT_GAPS = [
    *[(name, "fpx_bank") for name in ("declines", "fpx", "refunds", "monitor", "quality")],
    ("declines", "amount_major"),
    ("declines", "card_brand"),
    ("fpx", "amount_major"),
    ("refunds", "card_brand"),
    ("refunds", "captured_at"),
]


@pytest.mark.parametrize(("name", "column"), PAYMENT_GAPS)
def test_payments_lacking_a_column_are_refused_by_name(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path, name: str, column: str
) -> None:
    make = _dashboards(tmp_path)[name]
    with pytest.raises(
        ConfigurationError,
        match=rf"needs canonical payments first \(this table has no {column}\).*docs/tables\.md",
    ):
        make(payments.drop(columns=column), refunds)


@pytest.mark.parametrize(
    ("name", "column"),
    # monitor: refunds without payment_id opened, then failed on the first filter set
    [("refunds", "reason"), ("refunds", "payment_id"), ("refunds", "amount_major"),
     ("monitor", "payment_id")],
)  # fmt: skip
def test_refunds_lacking_a_column_are_refused_by_name(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path, name: str, column: str
) -> None:
    make = _dashboards(tmp_path)[name]
    with pytest.raises(
        ConfigurationError,
        match=rf"needs canonical refunds after the payments \(this table has no {column}\): "
        rf"pass {name}_dashboard\(payments, refunds\)",
    ):
        make(payments, refunds.drop(columns=column))


# ----- an empty view of matching payments ---------------------------------------------------
def test_a_view_with_nothing_in_it_does_not_say_the_filters_match_nothing(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    # Once "nothing matches the filters" under "4 of 4 payments match": no alert is not that.
    m = w.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    assert m.result.empty and "<b>4</b> of 4 payments match" in m.summary.value
    assert _text(m.table.value) == (
        "nothing matches in this view: no alerts in the monitored window for the 4 payments "
        "that pass the filters"
    )
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path, status="succeeded")
    assert d.matched == 2 and d.result.empty
    assert _text(d.table.value) == (
        "nothing matches in this view: no declines among the 2 payments that pass the filters"
    )
    d.set_filters(chart="rate over time")  # a table of two payments, no failed one behind it
    assert not d.result.empty
    assert _text(d.drilldown.value) == "no failed payments behind this table"
    q = w.quality_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    q.set_filters(method="fpx")  # every rule holds for the FPX payment
    assert q.rules["ok"].all()
    assert _text(q.drilldown.value) == "no rows of a failing rule behind this table"


def test_filters_no_payment_passes_say_so_and_what_to_do(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path)
    d.set_filters(currency="JPY", status="succeeded")
    assert "<b>0</b> of 4 payments match" in d.summary.value
    said = "nothing matches the filters: no payment passes them; clear a filter or widen the dates"
    assert _text(d.table.value) == _text(d.drilldown.value) == said
    assert "no declines in this selection" in [t.get_text() for t in d.figure.axes[0].texts]
    # The monitor's dates are its window, not a filter: no advice to widen them.
    m = w.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    m.set_filters(currency="JPY", method="fpx")
    assert _text(m.table.value) == (
        "nothing matches the filters: no payment passes them; clear a filter"
    )


def test_a_table_with_nothing_to_show_does_not_send_the_analyst_to_the_filters(
    payments: pd.DataFrame, make_payments: Build, tmp_path: Path
) -> None:
    # Once "nothing matches the filters" with no filter set: there was nothing to filter.
    cards = payments[payments["method_type"] == "card"]
    f = w.fpx_dashboard(cards, tz="UTC", export_dir=tmp_path)
    assert f.total == 0
    said = "nothing matches: the table holds no FPX payments at all"
    assert _text(f.table.value) == _text(f.drilldown.value) == said
    d = w.declines_dashboard(make_payments([]), tz="UTC", export_dir=tmp_path)
    assert _text(d.table.value) == "nothing matches: the table holds no payments at all"


# ----- money, percentages and times as the reports show them --------------------------------
def _column(markup: str, header: str) -> list[str]:
    soup = BeautifulSoup(markup, "html.parser")
    names = [th.get_text() for th in soup.select("thead th")]
    at = names.index(header)
    return [tr.find_all("td")[at].get_text() for tr in soup.select("tbody tr")]


def test_amounts_show_their_currency_decimals_and_times_their_zone(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.declines_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    # Once "1,000.00" yen and "1.23" dinars: KWD has three decimals, its last fils was lost.
    assert _column(d.drilldown.value, "currency") == ["KWD", "JPY"]
    assert _column(d.drilldown.value, "amount_major") == ["1.234", "1,000"]
    # Once "created_at" alone, in a zone the page did not name.
    assert _column(d.drilldown.value, "created_at (Asia/Kuala_Lumpur)") == [
        "2026-11-02 12:00",
        "2026-11-02 11:00",
    ]
    d.set_filters(chart="rate over time", freq="day")
    assert "period (Asia/Kuala_Lumpur)" in [
        th.get_text() for th in BeautifulSoup(d.table.value, "html.parser").select("thead th")
    ]
    assert d.export("csv")  # the files keep their own column names and numbers
    saved = pd.read_csv(d.exported[0])
    assert "period" in saved.columns and "rate" in saved.columns


def test_a_small_rate_is_not_shown_as_zero() -> None:
    # 1 refund in 2,500 payments: 0.04%, once "0.0%" on the dashboards though the reports
    # (and docs/decisions.md) say 0.04%.
    table = pd.DataFrame({"payments": [2500, 10], "rate": [0.0004, 0.0], "n": [2500, 10]})
    assert _column(w.to_html(table, "UTC"), "rate") == ["0.04%", "0.0%"]


# ----- lazy tables --------------------------------------------------------------------------
# (Not a defect found: test_widgets.py checks this of the other three dashboards only.)


@pytest.mark.parametrize("name", ["monitor", "quality"])
def test_the_monitor_and_quality_dashboards_never_load_the_full_table(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path, name: str
) -> None:
    import duckdb

    lazy_payments, lazy_refunds = _scanned(payments, refunds, tmp_path)
    # receipt_email: a column neither reads, computed as an error: a query of every column fails
    poisoned = lazy_payments.project(
        "* REPLACE (error('the full table was loaded')::VARCHAR AS receipt_email)"
    )
    with pytest.raises(duckdb.Error, match="full table was loaded"):
        poisoned.df()
    d = _dashboards(tmp_path)[name](poisoned, lazy_refunds)
    for filters in (
        {"method": "card"},
        {"currency": ["JPY", "KWD"]},
        {"method": [], "currency": []},
    ):
        d.set_filters(**filters)
        for _, choice in d.drill.options:
            d.drill.value = choice
    assert d.matched == 4


# ----- a cache a sync changed under an open dashboard ---------------------------------------
def test_a_sync_under_an_open_dashboard_is_said_with_what_to_do(tmp_path: Path) -> None:
    import shutil

    import gwtools

    cache = tmp_path / "cache"
    shutil.copytree(Path(__file__).parents[2] / "data" / "sample-cache" / "sandbox", cache / "s")
    d = w.declines_dashboard(
        gwtools.scan_cache(cache, "payments"), tz="UTC", export_dir=tmp_path / "out"
    )
    shown = d.summary.value
    # A sync merges a month: its new file renamed in, the old one gone.
    old = sorted(cache.glob("s/test/payments/created_month=2026-09/*.parquet"))[0]
    old.rename(old.with_name("part-09999999999999999999-merged.parquet"))

    d.method.value = ("card",)  # picked on the page: once DuckDB's IOException, in the console
    said = _text(d.summary.value)
    assert said != _text(shown)
    assert "changed since" in said and "open the dashboard again" in said.lower(), said
    with pytest.raises(gwtools.CacheError, match=r"(?i)changed since.*open the dashboard again"):
        d.set_filters(method="fpx")
    d._export_clicked("csv")
    assert "export failed" in d.links.value and "changed since" in d.links.value
    assert "export_dir" not in d.links.value  # the folder is not what is wrong
    d.drill.value = d.drill.options[-1][1]
    assert "changed since" in _text(d.drilldown.value)


def test_the_fpx_dashboard_counts_fpx_payments_and_says_so(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.fpx_dashboard(payments, tz="UTC", export_dir=tmp_path)
    # Once "1 of 1 payments match" over a table of 4 payments: the card ones are not its.
    assert _text(d.summary.value) == "1 of 1 FPX payments match"
    assert _text(w.declines_dashboard(payments, tz="UTC").summary.value) == (
        "4 of 4 payments match"
    )


def test_a_result_too_large_for_a_change_picked_on_the_page_is_said_there(
    payments: pd.DataFrame,
    refunds: pd.DataFrame,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lazy, _ = _scanned(payments, refunds, tmp_path)
    d = w.declines_dashboard(lazy, tz="UTC", export_dir=tmp_path)
    monkeypatch.setenv("GW_MAX_RESULT_MEMORY", "100B")  # less than the drill-down's rows
    # Once ResultTooLargeError in the browser console only, the page saying nothing.
    d.method.value = ("card",)
    assert "more than one result may take" in _text(d.summary.value)
    d.drill.value = d.drill.options[-1][1]
    assert "more than one result may take" in _text(d.drilldown.value)
