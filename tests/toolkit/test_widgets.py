"""Dashboards react to filters: set widget values, read what the outputs hold."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from gwtools import widgets as w

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


@pytest.fixture
def payments(make_payments: Build) -> pd.DataFrame:
    return make_payments(
        [
            {"status": "failed", "amount": 1000, "failure_code": "card_declined",
             "decline_code": "insufficient_funds", "created_at": "2026-11-01T15:30:00Z"},  # 1 Nov MYT
            {"status": "failed", "amount": 1000, "failure_code": "card_declined",
             "decline_code": "lost_card", "created_at": "2026-11-01T16:30:00Z"},  # 2 Nov MYT
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-02T02:00:00Z",
             "captured_at": "2026-11-02T02:00:00Z"},
            {"status": "failed", "amount": 500, "currency": "JPY", "failure_code": "card_declined",
             "decline_code": "insufficient_funds", "created_at": "2026-11-03T02:00:00Z"},
            {"status": "failed", "amount": 3000, "method_type": "fpx", "fpx_bank_code": "TEST0004",
             "fpx_bank": "Test Bank 4", "failure_code": "processing_error",
             "created_at": "2026-11-03T02:00:00Z"},
            {"status": "succeeded", "amount": 3000, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
             "fpx_bank": "Maybank2u", "created_at": "2026-11-03T02:00:00Z",
             "captured_at": "2026-11-03T02:03:00Z"},
            {"status": "succeeded", "amount": 3000, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
             "fpx_bank": "Maybank2u", "created_at": "2026-11-04T02:00:00Z",
             "captured_at": "2026-11-04T02:03:00Z"},
        ]
    )  # fmt: skip


@pytest.fixture
def refunds(make_refunds: Build) -> pd.DataFrame:
    return make_refunds(
        [
            {"payment_id": "pay_3", "amount": 1000, "reason": "duplicate"},
            {"payment_id": "pay_6", "amount": 1000, "status": "pending",
             "reason": "requested_by_customer", "created_at": "2026-11-06T03:00:00Z"},
        ]
    )  # fmt: skip


def test_declines_dashboard_filters_update_table_plot_and_drilldown(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.declines_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    assert (d.since.value, d.until.value) == (dt.date(2026, 11, 1), dt.date(2026, 11, 4))
    assert d.result["count"].sum() == 4 and len(d.drilled) == 4
    assert "insufficient_funds" in d.table.value and "<b>7</b> of 7" in d.summary.value
    png = d.image.value
    assert png[:4] == b"\x89PNG"

    d.method.value = ("fpx",)
    assert d.result["failure_code"].tolist() == ["processing_error"]
    assert d.drilled["id"].tolist() == ["pay_5"]
    assert "<b>3</b> of 7" in d.summary.value
    assert d.image.value != png  # the chart was redrawn

    d.method.value = ()
    d.currency.value = ("JPY",)
    assert d.result["decline_code"].tolist() == ["insufficient_funds"]
    assert d.result["amount_JPY"].tolist() == [500.0]


def test_date_filter_uses_local_days(payments: pd.DataFrame, tmp_path: Path) -> None:
    d = w.declines_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    d.until.value = dt.date(2026, 11, 1)
    # only pay_1 falls on 1 Nov in Kuala Lumpur (pay_2 is 00:30 on 2 Nov there)
    assert d.view["id"].tolist() == ["pay_1"]
    d.since.value, d.until.value = dt.date(2026, 11, 2), dt.date(2026, 11, 2)
    assert d.view["id"].tolist() == ["pay_2", "pay_3"]


def test_drill_into_one_code_and_switch_view(payments: pd.DataFrame, tmp_path: Path) -> None:
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path)
    assert [v for _, v in d.drill.options] == [
        None,
        "insufficient_funds",
        "lost_card",
        "processing_error",
    ]
    d.drill.value = "insufficient_funds"
    assert d.drilled["id"].tolist() == ["pay_4", "pay_1"]  # newest first
    assert "retry later" in d.drilldown.value
    d.chart.value = "rate over time"
    assert "rate" in d.result.columns and "period" in d.result.columns
    d.freq.value = "day"
    # UTC days 1, 2, 3, 4 Nov: decided 2, 1, 3, 1
    assert d.result["n"].tolist() == [2, 1, 3, 1]
    d.chart.value = "rate by method"
    assert d.image.layout.display == "none" and "method_type" in d.result.columns


def test_export_writes_csv_and_parquet_of_the_current_view(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path / "out")
    d.status.value = ("failed",)
    d.method.value = ("card",)
    d.csv_button.click()
    table_csv, rows_csv = d.exported
    assert table_csv.parent == tmp_path / "out" and table_csv.suffix == ".csv"
    assert pd.read_csv(table_csv)["count"].sum() == 3
    assert sorted(pd.read_csv(rows_csv)["id"]) == ["pay_1", "pay_2", "pay_4"]
    assert table_csv.name in d.links.value and "<a href=" in d.links.value
    d.parquet_button.click()
    table_pq, rows_pq = d.exported
    assert pd.read_parquet(rows_pq)["id"].tolist() == pd.read_csv(rows_csv)["id"].tolist()
    assert table_pq.suffix == ".parquet"
    assert not list((tmp_path / "out").glob("*.tmp"))
    with pytest.raises(ValueError, match="csv"):
        d.export("xlsx")


def test_export_dir_from_environment(
    payments: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_EXPORT_DIR", str(tmp_path / "env"))
    d = w.declines_dashboard(payments, tz="UTC")
    assert d.export_dir == tmp_path / "env"


def test_refunds_dashboard_cohort_and_pending(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.refunds_dashboard(
        payments, refunds, tz="UTC", export_dir=tmp_path, now="2026-11-10T00:00:00Z"
    )
    # succeeded: pay_3 (card), pay_6, pay_7 (fpx); refunded: pay_3, pay_6 -> 2 of 3 over all weeks
    assert d.result["payments"].sum() == 3 and d.result["refunded_payments"].sum() == 2
    d.method.value = ("fpx",)
    assert d.result["refunded_payments"].sum() == 1 and d.result["payments"].sum() == 2
    d.cohort.value = "refund"
    assert "refunds" in d.result.columns and d.result["refunds"].sum() == 1
    d.chart.value = "pending"
    # Fri 6 Nov -> Tue 10 Nov (UTC): Mon + Tue = 2 business days
    assert d.result["id"].tolist() == ["rfnd_2"] and d.result["age_business_days"].tolist() == [2]
    d.drill.value = "pending"
    assert d.drilled["id"].tolist() == ["rfnd_2"]
    d.method.value = ("card",)
    assert d.result.empty and "nothing matches" in d.table.value


def test_fpx_dashboard_bank_filter_and_drilldown(payments: pd.DataFrame, tmp_path: Path) -> None:
    d = w.fpx_dashboard(payments, tz="UTC", export_dir=tmp_path)
    assert d.method.options == ("fpx",)
    assert d.result["fpx_bank_code"].tolist() == [
        "MB2U0227",
        "TEST0004",
    ]  # test banks after real ones
    d.bank.value = ("MB2U0227",)
    assert d.result["fpx_bank_code"].tolist() == ["MB2U0227"] and d.result["rate"].tolist() == [1.0]
    d.bank.value = ()
    d.drill.value = "TEST0004"
    assert d.drilled["fpx_outcome"].tolist() == ["timed_out"]
    d.chart.value = "outcomes"
    assert d.result["bank"].tolist()[0] == "Maybank2u (MB2U0227)"


@pytest.fixture
def refund_days(make_payments: Build, make_refunds: Build) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Refunds made in the week of Mon 2 Nov (UTC), of payments made in it and before it."""
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 4000, "created_at": "2026-10-20T02:00:00Z"},  # pay_1
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-02T02:00:00Z"},  # pay_2
            {"status": "succeeded", "amount": 2000, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
             "fpx_bank": "Maybank2u", "created_at": "2026-11-03T02:00:00Z"},  # pay_3
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-04T02:00:00Z"},  # pay_4
            {"status": "failed", "amount": 1000, "failure_code": "card_declined",
             "decline_code": "generic_decline", "created_at": "2026-11-05T02:00:00Z"},  # pay_5
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-06T02:00:00Z"},  # pay_6
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-12T02:00:00Z"},  # pay_7
        ]
    )  # fmt: skip
    refunds = make_refunds(
        [
            {"payment_id": "pay_1", "amount": 4000, "created_at": "2026-11-03T05:00:00Z"},
            {"payment_id": "pay_2", "amount": 500, "created_at": "2026-11-04T05:00:00Z"},
            {"payment_id": "pay_3", "amount": 2000, "created_at": "2026-11-05T05:00:00Z"},
            {"payment_id": "pay_4", "amount": 1000, "status": "failed",
             "created_at": "2026-11-05T06:00:00Z"},  # failed: moves no money, not counted
            {"payment_id": "pay_2", "amount": 500, "created_at": "2026-11-10T05:00:00Z"},
            {"payment_id": "pay_7", "amount": 1000, "created_at": "2026-11-13T05:00:00Z"},
        ]
    )  # fmt: skip
    return payments, refunds


@pytest.mark.parametrize("lazy", [False, True], ids=["pandas", "duckdb"])
def test_by_refund_date_the_days_choose_the_refunds_made_on_them(
    refund_days: tuple[pd.DataFrame, pd.DataFrame], lazy: bool, tmp_path: Path
) -> None:
    from gwtools import analysis as a

    payments, refunds = refund_days
    p, r = _scanned(payments, refunds, tmp_path) if lazy else (payments, refunds)
    d = w.refunds_dashboard(
        p, r, tz="UTC", cohort="refund", since="2026-11-02", until="2026-11-08", now="2026-11-20"
    )
    # Succeeded 2-8 Nov: pay_2, pay_3, pay_4, pay_6 (RM10 + 20 + 10 + 10 = RM50). Refunds
    # made 2-8 Nov that moved money: rfnd_1 (of pay_1, made in October), rfnd_2, rfnd_3
    # (RM40 + 5 + 20 = RM65): 3 / 4. Not rfnd_5, pay_2's second refund, made on 10 Nov.
    row = d.result.iloc[0]
    assert len(d.result) == 1 and row["period"] == pd.Timestamp("2026-11-02", tz="UTC")
    assert (row["payments"], row["refunds"], row["rate"]) == (4, 3, 0.75)
    assert (row["captured_amount"], row["refunded_amount"]) == (50.0, 65.0)
    expected = a.refund_rate(
        a.between(payments, "2026-11-02", "2026-11-08", tz="UTC"),
        a.between(refunds, "2026-11-02", "2026-11-08", tz="UTC"),
        freq="week",
        tz="UTC",
        cohort="refund",
    )
    _same(d.result, expected)

    # The other filters choose the refunds through their payments, whenever those were made:
    # card payments pay_2, pay_4, pay_6 (RM30); their refunds rfnd_1, rfnd_2 (RM45): 2 / 3.
    d.set_filters(method="card")
    row = d.result.iloc[0]
    assert (row["payments"], row["refunds"], row["refunded_amount"]) == (3, 2, 45.0)
    assert row["rate"] == pytest.approx(2 / 3)
    d.drill.value = "succeeded"
    assert d.drilled["id"].tolist() == ["rfnd_2", "rfnd_1"]  # newest first
    assert d.drilled["method_type"].tolist() == ["card", "card"]  # pay_1 is from October
    # pay_2's RM10 is refunded in full by rfnd_2 and rfnd_5 (made after the window)
    assert d.drilled["kind"].tolist() == ["full", "full"]
    d.set_filters(chart="reasons")
    assert d.result["count"].sum() == 2

    # By payment date the days choose payments: their refunds whenever made (rfnd_5 too).
    d.set_filters(cohort="payment", chart="rate by count", method=[])
    assert d.result["refunded_payments"].sum() == 2  # pay_2 and pay_3 of the four

    # Given no days, it opens up to the newest refund's day (13 Nov; the newest payment is
    # of 12 Nov): by refund date, every refund that moved money, rfnd_4 (failed) aside.
    d = w.refunds_dashboard(p, r, tz="UTC", cohort="refund")
    assert (d.since.value, d.until.value) == (dt.date(2026, 10, 20), dt.date(2026, 11, 13))
    assert d.result["refunds"].sum() == 5 and d.result["payments"].sum() == 6


@pytest.mark.parametrize("lazy", [False, True], ids=["pandas", "duckdb"])
def test_refunds_dashboard_opens_with_a_payment_of_no_currency(
    make_payments: Build, make_refunds: Build, lazy: bool, tmp_path: Path
) -> None:
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 1000},
            {"status": "succeeded", "amount": 3000, "currency": None},  # its record had none
        ]
    )
    refunds = make_refunds([{"payment_id": "pay_1", "amount": 250}])  # made 5 Nov
    p, r = _scanned(payments, refunds, tmp_path) if lazy else (payments, refunds)
    for cohort in ("payment", "refund"):
        d = w.refunds_dashboard(p, r, tz="UTC", cohort=cohort, chart="rate by amount")
        table = d.result.sort_values("payments", key=lambda s: d.result["currency"].isna())
        assert table["currency"].tolist()[0] == "MYR" and pd.isna(table["currency"].tolist()[1])
        assert table["amount_rate"].tolist()[0] == 0.25  # RM2.50 of RM10
        assert table[["captured_amount", "amount_rate"]].iloc[1].isna().all()


def test_fpx_outcomes_view_drills_into_the_banks_shown_and_shows_percentages(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.fpx_dashboard(payments, tz="UTC", export_dir=tmp_path, chart="outcomes")
    assert [v for _, v in d.drill.options] == [None, "MB2U0227", "TEST0004"]
    # Maybank2u: 2 of 2 succeeded; the test bank's one attempt timed out
    assert "<td>Maybank2u (MB2U0227)</td>\n<td>100.0%</td>" in d.table.value
    assert "<td>0.0%</td>" in d.table.value and "<td>1.00</td>" not in d.table.value
    assert "<td>2</td>" in d.table.value  # attempts stay a count
    d.set_filters(bank="TEST0004")
    assert d.result["bank"].tolist() == ["Test Bank 4 (TEST0004)"]
    assert [v for _, v in d.drill.options] == [None, "TEST0004"]
    # in the table by bank, succeeded is a count, not a share
    d.set_filters(chart="success by bank", bank=[])
    assert "<td>2</td>" in d.table.value and "200.0%" not in d.table.value


@pytest.mark.parametrize("lazy", [False, True], ids=["pandas", "duckdb"])
def test_declines_without_any_code_can_be_drilled_into(
    payments: pd.DataFrame, refunds: pd.DataFrame, lazy: bool, tmp_path: Path
) -> None:
    payments = payments.copy()
    payments.loc[payments["id"] == "pay_2", ["failure_code", "decline_code"]] = pd.NA
    p, _ = _scanned(payments, refunds, tmp_path) if lazy else (payments, refunds)
    d = w.declines_dashboard(p, tz="UTC", export_dir=tmp_path)
    assert d.result["decline_reason"].isna().sum() == 1  # a row, and a "(no code)" bar
    # 2, 1 and 1 failed payments: ties by name, the one of no code last
    assert [v for _, v in d.drill.options] == [
        None, "insufficient_funds", "processing_error", "(no code)"
    ]  # fmt: skip
    d.drill.value = "(no code)"
    assert d.drilled["id"].tolist() == ["pay_2"]
    _, rows = d.export("csv")
    assert pd.read_csv(rows)["id"].tolist() == ["pay_2"]


class _Counted(w.DeclinesDashboard):
    """The declines dashboard, counting its refreshes."""

    refreshes = 0

    def refresh(self, change: Any = None) -> None:
        self.refreshes += 1
        super().refresh(change)


def test_a_dashboard_opens_on_the_filters_given_with_one_refresh(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = _Counted(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path, since="2026-11-02",
                 until=dt.date(2026, 11, 3), method="card", currency=["MYR", "JPY"])  # fmt: skip
    assert d.refreshes == 1
    assert (d.since.value, d.until.value) == (dt.date(2026, 11, 2), dt.date(2026, 11, 3))
    assert (d.method.value, d.currency.value) == (("card",), ("MYR", "JPY"))
    # 2 and 3 Nov in Kuala Lumpur, cards: pay_2 (00:30 on the 2nd there), pay_3, pay_4
    assert sorted(d.view["id"]) == ["pay_2", "pay_3", "pay_4"]
    assert "<b>3</b> of 7" in d.summary.value
    assert sorted(d.result["decline_code"]) == ["insufficient_funds", "lost_card"]

    f = w.fpx_dashboard(payments, tz="UTC", export_dir=tmp_path, bank="MB2U0227")
    assert f.result["fpx_bank_code"].tolist() == ["MB2U0227"]


def test_set_filters_refreshes_once_and_matches_setting_the_widgets_one_by_one(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    one_by_one = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path)
    one_by_one.until.value = dt.date(2026, 11, 3)
    one_by_one.status.value = ("failed",)
    d = _Counted(payments, tz="UTC", export_dir=tmp_path)
    d.set_filters(until="2026-11-03", status="failed")
    assert d.refreshes == 2  # opening, then one for both filters
    assert d.view["id"].tolist() == one_by_one.view["id"].tolist() == ["pay_1", "pay_2", "pay_4",
                                                                        "pay_5"]  # fmt: skip
    pd.testing.assert_frame_equal(d.result, one_by_one.result)
    d.set_filters(since=None, status=[])  # no lower bound, every status
    assert (d.since.value, d.status.value, d.matched) == (None, (), 6)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"method": "paypal"},
            r"method=\['paypal'\]: the payments hold no such method; "
            r"choose among \['card', 'fpx'\]",
        ),
        ({"currency": ["MYR", "usd"]}, r"currency=\['usd'\].*choose among \['JPY', 'MYR'\]"),
        ({"bank": "Maybank2u"}, r"bank=\['Maybank2u'\].*'Maybank2u \(MB2U0227\)'"),
        ({"status": 3}, r"status=3: give a value, a list of values"),
        ({"since": "2026-13-01"}, r"since='2026-13-01' is not a date: use YYYY-MM-DD"),
        ({"until": 20261101}, r"until=20261101 is not a date"),
        (
            {"since": "2026-11-03", "until": "2026-11-02"},
            r"since \(2026-11-03\) is after until \(2026-11-02\): swap them",
        ),
        ({"since": "2026-11-02T15:00"}, r"has a time of day, but the dashboard filters whole"),
    ],
)
def test_a_filter_the_data_cannot_take_is_refused_and_nothing_changes(
    payments: pd.DataFrame, tmp_path: Path, given: dict[str, Any], message: str
) -> None:
    from gwtools import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path, **given)
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path)
    before = {name: control.value for name, control in d.filters.items()}
    with pytest.raises(ConfigurationError, match=message):
        d.set_filters(**({"status": "failed"} | given))  # nor is a valid value beside it
    assert {name: control.value for name, control in d.filters.items()} == before
    assert d.matched == 7
    with pytest.raises(ConfigurationError, match="has no filter brand: use since, until, method"):
        d.set_filters(brand="visa")


@pytest.mark.parametrize(
    ("opened", "given", "message"),
    [
        # until not given: it is the last day of the data, which swapping would not fix
        (
            {},
            {"since": "2026-11-05"},
            r"^since \(2026-11-05\) is after until \(2026-11-04, the newest payment's day\), "
            r"which was not given: pick a since on or before 2026-11-04, or give until as well",
        ),
        (
            {},
            {"until": "2026-10-31"},
            r"^until \(2026-10-31\) is before since \(2026-11-01, the first payment's day\), "
            r"which was not given: pick an until on or after 2026-11-01, or give since as well",
        ),
        # until set before, then since alone: the day the dashboard holds is named
        (
            {"until": "2026-11-02"},
            {"since": "2026-11-03"},
            r"^since \(2026-11-03\) is after until \(2026-11-02\), which was not given: pick a "
            r"since on or before 2026-11-02, or give until as well",
        ),
    ],
)
def test_a_reversed_window_from_a_day_not_given_says_which_day_to_move(
    payments: pd.DataFrame,
    tmp_path: Path,
    opened: dict[str, Any],
    given: dict[str, Any],
    message: str,
) -> None:
    from gwtools import ConfigurationError

    if not opened:  # opening on the day given, the other one the data's
        with pytest.raises(ConfigurationError, match=message) as raised:
            w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path, **given)
        assert "swap" not in str(raised.value)
    d = _Counted(payments, tz="UTC", export_dir=tmp_path, **opened)
    before = {name: control.value for name, control in d.filters.items()}
    with pytest.raises(ConfigurationError, match=message):
        d.set_filters(**given)
    assert {name: control.value for name, control in d.filters.items()} == before
    assert d.refreshes == 1  # only the opening one


def test_chart_freq_and_cohort_open_and_set_like_filters(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    d = _Counted(payments, tz="UTC", export_dir=tmp_path, chart="rate over time", freq="day")
    assert d.refreshes == 1 and (d.chart.value, d.freq.value) == ("rate over time", "day")
    # UTC days 1, 2, 3, 4 Nov: decided 2, 1, 3, 1 (as the widgets give it)
    assert d.result["n"].tolist() == [2, 1, 3, 1]
    d.set_filters(chart="Codes", status="failed")  # any case, as the filters
    assert d.refreshes == 2 and d.chart.value == "codes" and d.result["count"].sum() == 4
    r = w.refunds_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path, cohort="refund")
    assert r.cohort.value == "refund" and r.result["refunds"].sum() == 2
    r.set_filters(cohort="payment")
    assert "refunds" not in r.result.columns and r.result["refunded_payments"].sum() == 2


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"chart": "nope"},
            r"chart='nope': the declines dashboard has no such chart; "
            r"choose among \['codes', 'rate over time', 'rate by method'\]",
        ),
        ({"freq": "year"}, r"freq='year': .* choose among \['day', 'week', 'month'\]"),
        ({"freq": 7}, r"freq=7: .* choose among \['day', 'week', 'month'\]"),
    ],
)
def test_a_chart_or_period_the_dashboard_does_not_offer_is_refused_and_nothing_changes(
    payments: pd.DataFrame, tmp_path: Path, given: dict[str, Any], message: str
) -> None:
    from gwtools import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path, **given)
    d = _Counted(payments, tz="UTC", export_dir=tmp_path)
    before = {name: c.value for name, c in {**d.filters, **d.choices}.items()}
    with pytest.raises(ConfigurationError, match=message):
        d.set_filters(**({"status": "failed"} | given))  # nor is a valid value beside it
    assert {name: c.value for name, c in {**d.filters, **d.choices}.items()} == before
    assert d.refreshes == 1 and d.matched == 7
    with pytest.raises(ConfigurationError, match=r"chart=None: .* choose among \['codes'"):
        d.set_filters(chart=None)  # None keeps every filter value; a view it does not name


def test_a_cohort_the_refunds_dashboard_does_not_offer_is_refused(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    from gwtools import ConfigurationError

    message = r"cohort='payments': the refunds dashboard has no such cohort; choose among " + (
        r"\['payment', 'refund'\]"
    )
    with pytest.raises(ConfigurationError, match=message):
        w.refunds_dashboard(payments, refunds, export_dir=tmp_path, cohort="payments")
    r = w.refunds_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    shown = r.result.copy()
    with pytest.raises(ConfigurationError, match=message):
        r.set_filters(cohort="payments", method="card")
    assert (r.cohort.value, r.method.value) == ("payment", ())
    pd.testing.assert_frame_equal(r.result, shown)


def test_filter_values_read_whatever_their_case(payments: pd.DataFrame, tmp_path: Path) -> None:
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path)
    d.set_filters(status="FAILED", currency=["myr"], method="Card")
    assert (d.status.value, d.currency.value, d.method.value) == (("failed",), ("MYR",), ("card",))


def test_a_bank_is_chosen_by_the_name_the_error_lists_as_by_its_code(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.fpx_dashboard(payments, tz="UTC", export_dir=tmp_path)
    with pytest.raises(ValueError, match=r"choose among \['Maybank2u \(MB2U0227\)'") as refused:
        d.set_filters(bank="Maybank")
    # Once refused in turn: the choices the error listed were not ones it took.
    listed = "Maybank2u (MB2U0227)"
    assert listed in str(refused.value)
    d.set_filters(bank=listed)
    assert d.bank.value == ("MB2U0227",)
    d.set_filters(bank=[])
    d.set_filters(bank="maybank2u (mb2u0227)")
    assert d.bank.value == ("MB2U0227",) and d.matched == 2


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"max_rows": 0}, "max_rows must be a whole number of at least 1"),
        ({"max_rows": "10"}, "max_rows must be a whole number of at least 1"),
        ({"tz": 5}, "tz=5 is not a zone name"),
        ({"export_dir": 5}, "export_dir must be a folder's path"),
        ({"locale": "xx_YY"}, "unknown locale locale='xx_YY'"),
        ({"now": "soon"}, "cannot read 'soon' as a date"),
        ({"now": 5}, "cannot read 5 as a date"),
    ],
)
def test_dashboard_arguments_are_checked_before_any_data_is_read(
    payments: pd.DataFrame, tmp_path: Path, given: dict[str, Any], message: str
) -> None:
    from gwtools import ConfigurationError

    with pytest.raises(ConfigurationError, match=message):
        w.declines_dashboard(payments, **({"export_dir": tmp_path} | given))


def test_refunds_in_place_of_payments_are_named(
    payments: pd.DataFrame, make_refunds: Build, tmp_path: Path
) -> None:
    from gwtools import ConfigurationError

    refunds = make_refunds([{"payment_id": "pay_1", "amount": 100}])
    with pytest.raises(ConfigurationError, match=r"needs canonical payments first.*method_type"):
        w.refunds_dashboard(refunds, payments, export_dir=tmp_path)


def test_a_selection_the_widgets_cannot_show_is_said_on_the_page(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path)
    # As a date picker in the browser does: one control at a time, the other one later.
    d.until.value = dt.date(2026, 11, 2)
    shown = d.result.copy()
    d.since.value = dt.date(2026, 11, 3)
    assert d.summary.value == (
        "<b>cannot show this selection</b>: since (2026-11-03) is after until (2026-11-02): "
        "swap them, or move one (both days are included)"
    )
    assert d.result.equals(shown) and d.matched == 3  # still what the table shows (1-2 Nov)
    d.until.value = dt.date(2026, 11, 4)
    assert "cannot show" not in d.summary.value and not d.result.equals(shown)


def test_two_exports_in_one_second_are_two_files(payments: pd.DataFrame, tmp_path: Path) -> None:
    from gwtools.widgets._dashboard import _unused

    taken = tmp_path / "declines-codes-table-20261102-101500.csv"
    assert _unused(taken) == taken
    taken.write_text("first export\n")
    assert _unused(taken) == tmp_path / "declines-codes-table-20261102-101500-2.csv"
    _unused(taken).write_text("second\n")
    assert _unused(taken).name.endswith("-3.csv") and taken.read_text() == "first export\n"
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path / "out")
    both = [*d.export("csv"), *d.export("csv")]
    assert len(set(both)) == 4 and all(p.exists() for p in both)


def test_dashboard_on_empty_payments(make_payments: Build, tmp_path: Path) -> None:
    d = w.declines_dashboard(make_payments([]), tz="UTC", export_dir=tmp_path)
    assert d.result.empty and d.since.value is None
    assert "nothing matches" in d.table.value
    assert d.export("csv")[0].exists()


def test_export_failure_is_shown_not_swallowed(
    payments: pd.DataFrame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gwtools import ConfigurationError

    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    d = w.declines_dashboard(payments, tz="UTC", export_dir=blocker / "sub")
    message = f"cannot export into {blocker / 'sub'}: {blocker} is a file, not a folder"
    with pytest.raises(ConfigurationError, match="is a file, not a folder; set export_dir="):
        d.export("csv")
    d.csv_button.click()
    assert "export failed" in d.links.value and message in d.links.value
    assert "GW_EXPORT_DIR" in d.links.value and d.exported == []

    def full(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("gwtools.widgets._dashboard.write_table", full)
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path / "out")
    d.parquet_button.click()
    assert "export failed</b>: No space left on device" in d.links.value
    assert "GW_EXPORT_DIR" in d.links.value and d.exported == []


def test_tables_have_no_index_and_advice_wraps_in_a_wide_column(
    payments: pd.DataFrame, tmp_path: Path
) -> None:
    from bs4 import BeautifulSoup

    d = w.declines_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    for markup in (d.table.value, d.drilldown.value):
        soup = BeautifulSoup(markup, "html.parser")
        table = soup.find("table")
        assert table.select("tbody th") == []  # no index column
        assert "gwtools-scroll" in table.parent["class"]  # wide tables scroll, never squeeze
        assert "table.gwtools-table" in soup.find("style").get_text()
    drill = BeautifulSoup(d.drilldown.value, "html.parser")
    header = [th.get_text() for th in drill.select("thead th")]
    column = header.index("advice")
    cells = [tr.find_all("td")[column] for tr in drill.select("tbody tr")]
    # every advice sentence is long text: it wraps in a wide column, not one word per line
    assert cells and all("gwtools-long" in td.get("class", []) for td in cells)
    ids = [tr.find_all("td")[header.index("id")] for tr in drill.select("tbody tr")]
    assert not [td for td in ids if "gwtools-long" in td.get("class", [])]


def test_export_buttons_need_no_icon_font(payments: pd.DataFrame, tmp_path: Path) -> None:
    d = w.declines_dashboard(payments, export_dir=tmp_path)
    for button, label in ((d.csv_button, "Export CSV"), (d.parquet_button, "Export Parquet")):
        assert button.icon == ""  # ipywidgets icons are Font Awesome, fetched from a CDN
        assert label in button.description


# ----- lazy tables -------------------------------------------------------------------------
def _poisoned(rel: Any) -> Any:
    """``rel`` (a real DuckDB relation) with ``extra`` computed as an error: any query that
    loads the full table (every column) fails, while the dashboards' queries, which never
    need ``extra``, run. DuckDB evaluates a column only when a query asks for it."""
    return rel.project("* REPLACE (error('the full table was loaded')::VARCHAR AS extra)")


@pytest.fixture
def lazy_tables(payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path) -> tuple[Any, Any]:
    return _scanned(payments, refunds, tmp_path)


def _scanned(payments: pd.DataFrame, refunds: pd.DataFrame, folder: Path) -> tuple[Any, Any]:
    """``payments`` and ``refunds`` written to a cache in ``folder``, as its lazy DuckDB scans."""
    import gwtools
    from gwtools.cache._dataset import Dataset

    root = folder / "cache" / "acct" / "test"
    Dataset(root / "payments", "payments").write_batch(payments)
    Dataset(root / "refunds", "refunds").write_batch(refunds)
    with warnings.catch_warnings():  # written by hand, never synced: "partial" is expected
        warnings.simplefilter("ignore", gwtools.GatewayDataWarning)
        return gwtools.scan_cache(root, "payments"), gwtools.scan_cache(root, "refunds")


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(
        a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False
    )


def test_a_lazy_table_gives_the_same_numbers_as_pandas_through_filter_changes(
    payments: pd.DataFrame, refunds: pd.DataFrame, lazy_tables: tuple[Any, Any], tmp_path: Path
) -> None:
    from gwtools.analysis import to_pandas

    lazy_payments, lazy_refunds = lazy_tables
    eager = w.declines_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    lazy = w.declines_dashboard(lazy_payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    assert (lazy.since.value, lazy.until.value) == (eager.since.value, eager.until.value)
    assert lazy.method.options == eager.method.options and lazy.bank.options == eager.bank.options
    assert not isinstance(lazy.view, pd.DataFrame)  # the filtered table stays lazy
    steps: list[tuple[str, Any]] = [
        ("method", ("fpx",)),
        ("method", ()),
        ("currency", ("JPY",)),
        ("currency", ()),
        ("until", dt.date(2026, 11, 2)),
        ("chart", "rate over time"),
        ("freq", "day"),
        ("chart", "rate by method"),
    ]
    for name, value in steps:
        for d in (eager, lazy):
            getattr(d, name).value = value
        _same(lazy.result, eager.result)
        _same(lazy.drilled, eager.drilled)
        assert lazy.summary.value == eager.summary.value
    assert "<b>3</b> of 7" in lazy.summary.value  # pay_1..pay_3 by 2 Nov, Kuala Lumpur
    assert sorted(to_pandas(lazy.view)["id"]) == ["pay_1", "pay_2", "pay_3"]

    eager_r = w.refunds_dashboard(payments, refunds, tz="UTC", now="2026-11-10T00:00:00Z")
    lazy_r = w.refunds_dashboard(lazy_payments, lazy_refunds, tz="UTC", now="2026-11-10T00:00:00Z")
    for name, value in [("method", ("fpx",)), ("cohort", "refund"), ("chart", "pending")]:
        for d in (eager_r, lazy_r):
            getattr(d, name).value = value
        _same(lazy_r.result, eager_r.result)
    assert lazy_r.result["id"].tolist() == ["rfnd_2"]

    eager_f = w.fpx_dashboard(payments, tz="UTC")
    lazy_f = w.fpx_dashboard(lazy_payments, tz="UTC")
    _same(lazy_f.result, eager_f.result)
    for d in (eager_f, lazy_f):
        d.drill.value = "TEST0004"
    assert lazy_f.drilled["fpx_outcome"].tolist() == ["timed_out"]
    _same(lazy_f.drilled, eager_f.drilled)


def test_a_lazy_dashboard_never_loads_the_full_table(
    lazy_tables: tuple[Any, Any], tmp_path: Path
) -> None:
    import duckdb

    lazy_payments, lazy_refunds = lazy_tables
    payments = _poisoned(lazy_payments)
    with pytest.raises(duckdb.Error, match="full table was loaded"):
        payments.df()  # the guard works: loading everything fails
    # max_rows=4: the drill-down shows 2 rows, fetched with a limit in DuckDB
    d = w.declines_dashboard(payments, tz="UTC", export_dir=tmp_path, max_rows=4)
    for name, value in [
        ("method", ("card",)),
        ("status", ("failed",)),
        ("chart", "rate over time"),
        ("freq", "day"),
        ("chart", "rate by method"),
        ("chart", "codes"),
    ]:
        getattr(d, name).value = value
    assert d.drilled["id"].tolist() == ["pay_4", "pay_2"]  # newest first, first 2 of 3
    assert "export writes every matching row" in d.drilldown.value
    _, rows = d.export("csv")
    assert sorted(pd.read_csv(rows)["id"]) == ["pay_1", "pay_2", "pay_4"]  # export has all
    d.drill.value = "insufficient_funds"
    assert d.drilled["id"].tolist() == ["pay_4", "pay_1"]

    f = w.fpx_dashboard(payments, tz="UTC", export_dir=tmp_path)
    f.chart.value = "outcomes"
    f.drill.value = "MB2U0227"
    assert f.drilled["id"].tolist() == ["pay_7", "pay_6"]
    # The refunds' pending view lists whole pending refunds (a few rows): only payments poisoned.
    r = w.refunds_dashboard(payments, lazy_refunds, tz="UTC", now="2026-11-10T00:00:00Z")
    for chart in ("rate by amount", "reasons", "pending"):
        r.chart.value = chart
    r.drill.value = "succeeded"
    assert r.drilled["id"].tolist() == ["rfnd_1"]


def test_a_dashboard_given_a_gateway_scans_its_cache(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    import gwtools
    from gwtools.cache._dataset import Dataset

    gw = gwtools.connect(
        "sk_test_" + "a" * 24, "http://127.0.0.1:9", cache_dir=tmp_path, account="shop"
    )
    try:  # nothing is contacted: the dashboard reads the cache as it is
        done = "2026-11-01T00:00:00+00:00"
        for name, frame in (("payments", payments), ("refunds", refunds)):
            ds = Dataset(gw._dataset(name).path, name)
            ds.write_batch(frame)
            # as a completed sync leaves it (a never-synced cache warns its rows are partial)
            ds.write_state(
                {"last_full_sync": done, "high_water": done, "last_sync": done,
                 "completeness": {"complete": True}}
            )  # fmt: skip
        d = w.refunds_dashboard(gw, tz="UTC", now="2026-11-10T00:00:00Z")
        # Every dashboard takes a Gateway (the quality and monitor ones once needed tables).
        q = w.quality_dashboard(gw, tz="UTC")
        m = w.monitor_dashboard(gw, tz="UTC")
    finally:
        gw.close()
    assert not isinstance(d.payments, pd.DataFrame)
    assert d.result["payments"].sum() == 3 and d.result["refunded_payments"].sum() == 2
    assert not d.sandbox_data and "sandbox" not in d.header.value  # a gateway's own data
    for dash in (q, m):
        assert not isinstance(dash.payments, pd.DataFrame) and dash.refunds is not None
        assert dash.total == len(payments)
    checked = q.rules.set_index("rule")["checked"]
    assert checked["payment_ids_unique"] == len(payments)
    assert checked["refund_ids_unique"] == len(refunds)
    with pytest.raises(ValueError, match="the refunds dashboard needs the refunds"):
        w.refunds_dashboard(payments)
    with pytest.raises(ValueError, match=r"the quality dashboard needs the refunds.*quality_dash"):
        w.quality_dashboard(payments)


def test_the_quality_dashboard_judges_the_last_sync_of_the_cache_it_reads(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    """Opened on a Gateway, or with origin= a Source or load_tables result, it shows what the
    cache's last sync recorded (as `gwtools check` does); bare tables say nothing of a sync,
    so the rule is left out unless completeness= is given."""
    import gwtools
    from gwtools.cache._dataset import Dataset
    from gwtools.report import load_tables

    gw = gwtools.connect(
        "sk_test_" + "a" * 24, "http://127.0.0.1:9", cache_dir=tmp_path, account="shop"
    )
    try:
        for name, frame, complete in (("payments", payments, True), ("refunds", refunds, False)):
            ds = Dataset(gw._dataset(name).path, name)
            ds.write_batch(frame)
            # An earlier full sync completed; the last one read every page of payments only.
            done = "2026-11-01T00:00:00+00:00"
            ds.write_state(
                {
                    "last_full_sync": done,
                    "high_water": done,
                    "last_sync": done,
                    "completeness": {"complete": complete},
                }
            )
        opened = {"gateway": w.quality_dashboard(gw, tz="UTC")}
    finally:
        gw.close()
    src = gwtools.open_source(tmp_path)
    tables = load_tables(tmp_path, tz="UTC")
    assert (
        src.states == tables.states and src.states["refunds"]["completeness"]["complete"] is False
    )
    opened["source"] = w.quality_dashboard(src.payments, src.refunds, tz="UTC", origin=src)
    opened["load_tables"] = w.quality_dashboard(
        tables.payments, tables.refunds, tz="UTC", origin=tables
    )
    for how, dash in opened.items():
        rule = dash.rules.set_index("rule").loc["last_sync_complete"]
        assert not rule["ok"] and rule["count"] == 1 and rule["examples"] == ["refunds"], how
        assert dash.drill_options(dash.result)[-1] == (
            "last_sync_complete (1)",
            "last_sync_complete",
        )
        # Every dashboard's header says how the last sync went, where a cache says so.
        assert "last sync 2026-11-01 00:00 UTC INCOMPLETE for the refunds" in dash.header.value
    declines = w.declines_dashboard(src.payments, tz="UTC", origin=src)
    assert "INCOMPLETE for the refunds: rows may be missing" in declines.header.value
    bare = w.quality_dashboard(src.payments, src.refunds, tz="UTC")
    assert "last_sync_complete" not in set(bare.rules["rule"])
    assert "last sync" not in bare.header.value
    given = w.quality_dashboard(src.payments, src.refunds, tz="UTC", completeness=True)
    assert given.rules.set_index("rule").loc["last_sync_complete", "ok"]


@pytest.mark.spark
def test_spark_source_dashboard_and_streamed_export_match_pandas(
    payments: pd.DataFrame,
    refunds: pd.DataFrame,
    lazy_tables: tuple[Any, Any],
    spark: Any,
    tmp_path: Path,
) -> None:
    import gwtools
    from gwtools.cache._export import write_table

    folder = tmp_path / "cache" / "acct" / "test"  # where lazy_tables wrote the cache
    src = gwtools.open_source("spark", spark_path=str(folder))
    assert src.engine == "spark" and src.description == "a local cache"
    assert type(src.payments).__module__.startswith("pyspark")

    eager = w.declines_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path / "e")
    on_spark = w.declines_dashboard(src.payments, tz="Asia/Kuala_Lumpur", export_dir=tmp_path)
    for name, value in [("method", ("card",)), ("chart", "rate over time")]:
        for d in (eager, on_spark):
            getattr(d, name).value = value
        _same(on_spark.result, eager.result)
        _same(on_spark.drilled, eager.drilled)
    _, rows = on_spark.export("csv")
    assert sorted(pd.read_csv(rows)["id"]) == ["pay_1", "pay_2", "pay_4"]

    # The canonical table streamed from Spark (2-row batches) is what pandas writes.
    write_table(src.payments.orderBy("id"), tmp_path / "spark.csv", "csv", rows=2)
    expected = payments.sort_values("id").reset_index(drop=True)
    expected.to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "spark.csv").read_text() == (tmp_path / "pandas.csv").read_text()


# ----- "sandbox data" in dashboards --------------------------------------------------------

_SANDBOX = "sandbox data: not real payments"
#: Every dashboard, built from payments and refunds with the given keywords.
_DASHBOARDS: dict[str, Callable[..., w.Dashboard]] = {
    "DeclinesDashboard": lambda p, r, **kw: w.declines_dashboard(p, **kw),
    "RefundsDashboard": lambda p, r, **kw: w.refunds_dashboard(
        p, r, now="2026-11-10T00:00:00Z", **kw
    ),
    "FpxDashboard": lambda p, r, **kw: w.fpx_dashboard(p, **kw),
    "MonitorDashboard": lambda p, r, **kw: w.monitor_dashboard(p, r, **kw),
    "QualityDashboard": lambda p, r, **kw: w.quality_dashboard(p, r, **kw),
}


def _figures(d: w.Dashboard) -> list[Any]:
    """The dashboard's chart in each of its views."""
    figures = []
    for view in d.chart.options:
        d.chart.value = view
        figures.append(d.figure)
    return [f for f in figures if f is not None]


def test_every_dashboard_is_checked_for_the_sandbox_label() -> None:
    dashboards = {n for n in w.__all__ if n.endswith("Dashboard") and n != "Dashboard"}
    assert dashboards == set(_DASHBOARDS)


def test_dashboards_over_sandbox_data_say_so_and_real_data_is_not_labelled(
    payments: pd.DataFrame, refunds: pd.DataFrame, tmp_path: Path
) -> None:
    sandboxed, sandbox_refunds = payments.copy(), refunds.copy()
    for frame in (sandboxed, sandbox_refunds):  # as Gateway.payments()/refunds() on the sandbox
        frame.attrs["gwtools_source"] = "sandbox data"
    for name, build in _DASHBOARDS.items():
        d = build(sandboxed, sandbox_refunds, tz="UTC", export_dir=tmp_path)
        assert d.sandbox_data and _SANDBOX in d.header.value, name
        assert d.children[0] is d.header  # the first thing on the dashboard
        figures = _figures(d)
        assert figures and all(f.get_suptitle() == _SANDBOX for f in figures), name

        real = build(payments, refunds, tz="UTC", export_dir=tmp_path)
        assert not real.sandbox_data and "sandbox" not in real.header.value, name
        assert all(f.get_suptitle() == "" for f in _figures(real)), name


def test_a_lazy_table_is_labelled_through_the_origin_it_came_from(
    lazy_tables: tuple[Any, Any], tmp_path: Path
) -> None:
    import gwtools

    lp, lr = lazy_tables
    assert not w.declines_dashboard(lp, tz="UTC", export_dir=tmp_path).sandbox_data
    sandbox = gwtools.Source(lp, lr, "the embedded sandbox", "duckdb", embedded=True)
    real = gwtools.Source(lp, lr, "a local cache", "duckdb", embedded=False)
    d = w.refunds_dashboard(lp, lr, tz="UTC", export_dir=tmp_path, origin=sandbox)
    assert d.sandbox_data and _SANDBOX in d.header.value
    assert d.figure is not None and d.figure.get_suptitle() == _SANDBOX
    d = w.refunds_dashboard(lp, lr, tz="UTC", export_dir=tmp_path, origin=real)
    assert not d.sandbox_data and d.figure is not None and d.figure.get_suptitle() == ""


def test_a_dashboard_on_the_embedded_sandbox_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import gwtools

    for name in ("GW_API_KEY", "GW_BASE_URL", "GW_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "120")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "5")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "none")
    with gwtools.connect(cache_dir=tmp_path, progress=False) as gw:
        gw.sync()
        d = w.declines_dashboard(gw, tz="UTC", export_dir=tmp_path / "x")  # its cache, lazily
        assert d.sandbox_data and _SANDBOX in d.header.value
        assert d.figure is not None and d.figure.get_suptitle() == _SANDBOX
        # A scan of it on its own carries nothing; its Gateway says where it came from.
        lazy = gw.scan("payments")
        assert not w.declines_dashboard(lazy, tz="UTC", export_dir=tmp_path / "x").sandbox_data
        labelled = w.declines_dashboard(lazy, tz="UTC", export_dir=tmp_path / "x", origin=gw)
        assert labelled.sandbox_data
        frame = w.fpx_dashboard(gw.payments(refresh=False), tz="UTC", export_dir=tmp_path / "x")
        assert frame.sandbox_data  # pandas from the sandbox carries its attrs
