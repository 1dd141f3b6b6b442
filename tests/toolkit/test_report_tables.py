"""The report's tables: money shown at each currency's precision in a notebook, and the files
under ``tables/`` that a report lists."""

from __future__ import annotations

import sys
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gwtools import GatewayDataWarning, report
from gwtools.cache._dataset import Dataset

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


def _shown(frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> tuple[list[list[str]], str]:
    """``frame`` as a notebook kernel shows it after ``notebook_display()``: the cells of its
    HTML table, row by row, and its plain text. IPython's own display formatter, in a
    stand-in for the kernel's shell."""
    from bs4 import BeautifulSoup
    from IPython.core.formatters import DisplayFormatter

    formatter = DisplayFormatter()
    shell = types.SimpleNamespace(display_formatter=formatter)
    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: shell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)
    keep = ["display.width", "display.max_columns", "display.max_colwidth", "display.float_format"]
    with pd.option_context(*(x for k in keep for x in (k, pd.get_option(k)))):  # restored after
        report.notebook_display()
        data, _ = formatter.format(frame)
    body = BeautifulSoup(data["text/html"], "html.parser").find("tbody")
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in body.find_all("tr")]
    return rows, data["text/plain"]


def test_money_is_shown_at_each_rows_currency_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    """KWD has 3 decimals, CLF 4, JPY none, BHD 3, USD and MYR 2 (Babel's table); rates are
    percentages (two significant digits where one decimal would show 0.0%), and integer minor
    units stay integers. The table itself is not changed."""
    frame = pd.DataFrame(
        {
            "currency": ["KWD", "CLF", "JPY", "BHD", "USD", "MYR"],
            "captured_amount": [1.234, 1.2345, 1234.0, 0.005, 0.01, 1234.5],
            "refunded_amount": [0.0, 0.0, 100.0, 0.0, 0.01, 0.5],
            "amount_rate": [0.0, 0.0, 0.0810, 0.0, 1.0, 0.0004],
            "amount": pd.array([1234, 12345, 1234, 5, 1, 123450], dtype="Int64"),  # minor units
        }
    )
    before = frame.copy()
    rows, text = _shown(frame, monkeypatch)
    assert rows == [
        ["KWD", "1.234", "0.000", "0.0%", "1234"],
        ["CLF", "1.2345", "0.0000", "0.0%", "12345"],
        ["JPY", "1,234", "100", "8.1%", "1234"],
        ["BHD", "0.005", "0.000", "0.0%", "5"],
        ["USD", "0.01", "0.01", "100.0%", "1"],
        ["MYR", "1,234.50", "0.50", "0.04%", "123450"],
    ]
    assert "1,234.50" in text.splitlines()[-1] and "0.04%" in text.splitlines()[-1]
    pd.testing.assert_frame_equal(frame, before)  # what save_tables writes is untouched


def test_money_of_one_named_currency_and_tables_without_money(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``amount_<CUR>`` totals (one column per currency) take that currency's precision, and
    the ``amount`` text beside them (the same totals, spelled with their symbols, which put
    ``RM6,513.00`` beside ``6,513.00`` in every declines table) is left out of the view; a
    table with no money column is shown as before."""
    totals = pd.DataFrame(
        {
            "kind": ["full", "partial"],
            "amount_JPY": [5000.0, 0.0],
            "amount_KWD": [1.5, 12.345],
            "amount": ["JP¥5,000; KWD1.500", "KWD12.345"],
            "share": [0.25, 0.75],
        }
    )
    rows, text = _shown(totals, monkeypatch)
    assert rows == [["full", "5,000", "1.500", "25.0%"], ["partial", "0", "12.345", "75.0%"]]
    assert "KWD12.345" not in text
    assert list(totals.columns) == ["kind", "amount_JPY", "amount_KWD", "amount", "share"]
    days = pd.DataFrame({"day": ["a", "b"], "days_to_refund": [1234.5, 0.5]})
    rows, _ = _shown(days, monkeypatch)
    assert rows == [["a", "1,234.50"], ["b", "0.5000"]]  # not a fraction: a number
    rates = pd.DataFrame({"after_retry_rate": [0.5, float("nan")], "ci_low": [0.0004, 1.0]})
    rows, _ = _shown(rates, monkeypatch)
    assert rows == [["50.0%", "0.04%"], ["NaN", "100.0%"]]


def test_parquet_only_removes_the_tables_previous_csv(tmp_path: Path) -> None:
    """A table saved as Parquet only leaves no CSV of an earlier run behind (a report would
    list it as current); other files in the folder stay."""
    from gwtools.cache._scan import connection

    lazy = connection().from_df(pd.DataFrame({"n": [1, 2, 3]}))
    target = tmp_path / "st"
    assert report.save_tables({"payments": lazy}, target) == [
        "payments.csv",
        "payments.parquet",
    ]
    for other in ("payments_old.csv", "payments.csv.bak", "refunds.csv"):
        (target / other).write_text("n\n1\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="payments.parquet only"):
        names = report.save_tables({"payments": lazy}, target, csv_max_rows=2)
    assert names == ["payments.parquet"]
    assert sorted(p.name for p in target.iterdir()) == [
        "payments.csv.bak",
        "payments.parquet",
        "payments_old.csv",
        "refunds.csv",
    ]
    assert pd.read_parquet(target / "payments.parquet")["n"].tolist() == [1, 2, 3]


def test_report_lists_the_tables_written_this_run(
    tmp_path: Path,
    make_payments: Build,
    make_refunds: Build,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Files left in ``tables/`` by an earlier run (or by hand) are not presented as this
    run's tables, in the result or on the index page; a file rewritten this run is."""
    from gwtools.report import _run

    root = tmp_path / "cache" / "acct" / "test"
    Dataset(root / "payments", "payments").write_batch(
        make_payments([{"status": "succeeded", "amount": 100}])
    )
    Dataset(root / "refunds", "refunds").write_batch(
        make_refunds([{"payment_id": "pay_1", "amount": 50}])
    )
    tables = tmp_path / "r" / "tables"
    tables.mkdir(parents=True)
    for stale in ("old.csv", "old.parquet", "funnel.csv", "notes.txt"):
        (tables / stale).write_text("x\n", encoding="utf-8")

    def run_one(name: str, out_dir: Path, parameters: dict[str, Any], *_: Any) -> Any:
        # What a notebook does: save its tables into out_dir (here, Parquet only).
        frame = pd.DataFrame({"n": [1, 2, 3]})
        report.save_tables({"funnel": frame}, parameters["out_dir"], csv_max_rows=None)
        with pytest.warns(UserWarning):
            report.save_tables({"payments": frame}, parameters["out_dir"], csv_max_rows=2)
        page = out_dir / name.replace(".ipynb", ".html")
        page.write_text("<html></html>", encoding="utf-8")
        return page, 0.0

    monkeypatch.setattr(_run, "_run_one", run_one)
    monkeypatch.setenv("GW_SANDBOX_VARIANT", "none")
    monkeypatch.delenv("GW_API_KEY", raising=False)
    monkeypatch.delenv("GW_BASE_URL", raising=False)
    with pytest.warns(GatewayDataWarning, match="partial"):  # a cache no sync completed
        result = report.run_report(
            tmp_path / "r", source=root, tz="UTC", notebooks=["01_overview_and_export.ipynb"]
        )
    assert [p.name for p in result.tables] == ["funnel.csv", "funnel.parquet", "payments.parquet"]
    index = result.index.read_text(encoding="utf-8")
    assert "tables/funnel.csv" in index and "tables/payments.parquet" in index
    assert "old." not in index
    assert (tables / "old.csv").exists()  # not the report's to remove


def test_a_rate_near_all_is_not_shown_as_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """1 decline in 2,500 decided payments is a success rate of 0.9996: one decimal would show
    "100.0%", read as no decline at all. Like a rate near 0 (0.04%), the digits go on until
    the gap shows (two significant digits of it): 99.96%. A ratio above 1 (refunds dated by
    refund) likewise: 1.0004 is 100.04%. Exactly 0 and 1 keep one decimal."""
    rates = pd.DataFrame({"rate": [2499 / 2500, 1.0004, 0.99955, 1.0, 0.0, 0.9994]})
    rows, _ = _shown(rates, monkeypatch)
    assert [r[0] for r in rows] == ["99.96%", "100.04%", "99.955%", "100.0%", "0.0%", "99.9%"]


def test_a_tiny_rate_is_not_shown_in_scientific_notation(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Wilson interval of 1 success in 10M starts near 1.8e-8: two significant digits of
    its percentage are 0.0000018%, where Python's "g" format wrote "1.8e-06%", which reads as
    1.8%. The digits are written out, as for 0.04%."""
    rates = pd.DataFrame({"ci_low": [1.8e-8, 1e-7, 4.5e-6, 0.0004]})
    rows, _ = _shown(rates, monkeypatch)
    assert [r[0] for r in rows] == ["0.0000018%", "0.00001%", "0.00045%", "0.04%"]


def test_fpx_outcome_shares_are_shown_as_percentages(
    make_payments: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The outcome shares (each row sums to 1) read as percentages, as the FPX dashboard shows
    them; they were shown as pandas' floats, 0.7500 beside 0.00 in the same row (a processing
    error is a time-out on FPX: 3 succeeded and 1 timed out of 4)."""
    from gwtools import analysis

    fpx = {"method_type": "fpx", "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"}
    payments = make_payments(
        [{**fpx, "status": "succeeded", "amount": 100}] * 3
        + [{**fpx, "status": "failed", "amount": 100, "failure_code": "processing_error"}]
    )
    shares = analysis.fpx_outcome_shares(payments)
    rows, text = _shown(shares, monkeypatch)
    # succeeded, failed, timed_out, canceled, expired, pending, unknown; then attempts
    assert rows == [["75.0%", "0.0%", "25.0%", "0.0%", "0.0%", "0.0%", "0.0%", "4"]]
    assert "75.0%" in text
    assert shares["succeeded"].tolist() == [0.75]  # the table keeps its fractions
    # as the report saves it (the bank as a column): the same
    assert _shown(shares.reset_index(), monkeypatch)[0][0][1:4] == ["75.0%", "0.0%", "25.0%"]


@pytest.mark.parametrize("as_of", ["yesterday", "01/10/2026", 5])
def test_load_tables_refuses_an_as_of_that_is_not_a_time_naming_it(as_of: object) -> None:
    # "yesterday" raised pandas' DateParseError (after the source was opened); "01/10/2026" was
    # read as 10 January.
    from gwtools import ConfigurationError
    from gwtools.report import load_tables

    with pytest.raises(ConfigurationError) as info:
        load_tables("data/sample-cache", as_of=as_of)  # type: ignore[arg-type]
    assert info.value.param == "as_of" and f"as_of={as_of!r}" in str(info.value)


def test_refunds_of_the_tables_swapped_names_the_argument() -> None:
    # It raised a bare KeyError: ['payment_id'].
    import gwtools
    from gwtools import ConfigurationError
    from gwtools.report import refunds_of

    payments = gwtools.read_cache("data/sample-cache", "payments")
    refunds = gwtools.read_cache("data/sample-cache", "refunds")
    with pytest.raises(ConfigurationError) as info:
        refunds_of(refunds, payments)
    assert info.value.param == "payments" and "it looks like a refunds table" in str(info.value)


@pytest.mark.parametrize("name", ["../x", "sub/x", "..", "", "  ", 5])
def test_a_table_name_that_is_not_a_file_name_is_refused_before_anything_is_written(
    name: object, tmp_path: Path
) -> None:
    # save_tables({"../x": frame}, out) wrote out/../x.csv, outside the folder, and said 'x.csv'.
    from gwtools import ConfigurationError
    from gwtools.report import save_tables

    frame = pd.DataFrame({"a": [1]})
    out = tmp_path / "out"
    with pytest.raises(ConfigurationError) as info:
        save_tables({"first": frame, name: frame}, out)  # type: ignore[dict-item]
    assert info.value.param == "tables" and repr(name) in str(info.value)
    assert sorted(p.name for p in tmp_path.rglob("*")) == []  # not even the first table


def test_alert_figures_are_shown_in_each_alerts_own_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """monitor()'s observed/expected/limit are rates for a decline spike or an FPX outage and
    counts for card testing or a refund spike: one column, two units. They were shown alike by
    pandas' floats (0.3500 beside 120.00); each row now reads in its own unit."""
    from gwtools import analysis

    alerts = pd.DataFrame(
        {
            "kind": ["decline_spike", "card_testing", "fpx_bank_outage", "refund_spike"],
            "observed": [0.35, 120.0, 0.0, 7.0],
            "expected": [0.1, 3.5, 0.92, 1.25],
            "limit": [0.2, 20.0, 0.5, 4.0],
            "n": [40, 120, 12, 7],
        }
    ).astype({"kind": "string"})
    assert set(analysis.MONITOR_KINDS) == set(alerts["kind"])  # every kind has its unit
    rows, text = _shown(alerts, monkeypatch)
    assert rows == [
        ["decline_spike", "35.0%", "10.0%", "20.0%", "40"],
        ["card_testing", "120", "3.50", "20", "120"],
        ["fpx_bank_outage", "0.0%", "92.0%", "50.0%", "12"],
        ["refund_spike", "7", "1.25", "4", "7"],
    ]
    assert "35.0%" in text and "0.3500" not in text
    assert alerts["observed"].tolist() == [0.35, 120.0, 0.0, 7.0]  # saved as numbers
