"""Monitoring and quality dashboards: alerts of a sandbox history with a card-testing incident
on the timeline and in the table, the payments behind a selected alert (filtered by hand here),
and failing quality rules with the rows their examples name."""

from __future__ import annotations

import datetime as dt
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import pandas as pd
import pytest

import gwtools
from gwtools import plots, widgets
from gwtools.sandbox import Sandbox
from tests.toolkit.conftest import build_payments, build_refunds

NOW = datetime(2026, 11, 20, 6, tzinfo=UTC)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A synced 35-day history with one card-testing hour, and where the sandbox placed it."""
    root = tmp_path_factory.mktemp("monitor-widgets")
    with (
        Sandbox("B", rate_limits=False, seed_payments=1500, days=35, seed=11, now=NOW,
                incidents=["card-testing"]) as sb,
        gwtools.connect(sb.secret_key, sb.base_url, cache_dir=root, account="w") as gw,
    ):  # fmt: skip
        gw.sync()
        assert sb.history is not None
        placed = sb.history["incidents"][0]
    return {
        "payments": gwtools.read_cache(root, "payments", account="w"),
        "refunds": gwtools.read_cache(root, "refunds", account="w"),
        "lazy": (
            gwtools.scan_cache(root, "payments", account="w"),
            gwtools.scan_cache(root, "refunds", account="w"),
        ),
        "start": pd.Timestamp(placed["start"]),
        "end": pd.Timestamp(placed["end"]),
        "placed": placed["payments"],
    }


def _by_hand(payments: pd.DataFrame, start: pd.Timestamp, end: pd.Timestamp) -> list[str]:
    """Card payments of at most 2.00 created in [start, end), oldest first."""
    ts = payments["created_at"]
    keep = (
        payments["method_type"].eq("card").fillna(False)
        & (payments["amount_major"] <= 2.0).fillna(False)
        & (ts >= start)
        & (ts < end)
    )
    return payments[keep].sort_values(["created_at", "id"])["id"].tolist()


def test_card_testing_alert_is_on_the_timeline_in_the_table_and_drills_into_its_payments(
    history: dict[str, Any], tmp_path: Path
) -> None:
    d = widgets.monitor_dashboard(
        history["payments"], history["refunds"], tz="UTC", export_dir=tmp_path, max_rows=2000
    )
    alerts = d.result
    testing = alerts.index[alerts["kind"] == "card_testing"].tolist()
    assert len(testing) == 1
    alert = alerts.loc[testing[0]]
    assert (alert["start"], alert["end"]) == (history["start"], history["end"])
    assert "card_testing" in d.table.value
    assert f"<b>{len(alerts)}</b> alert" in d.summary.value

    # the timeline: a labelled row for it and a red (high) bar over exactly its hour
    assert d.figure is not None
    ax = d.figure.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert "card testing\ncard, amount <= 2" in labels
    bars = [
        p for p in ax.patches
        if p.get_x() == pytest.approx(mdates.date2num(history["start"]))
        and p.get_width() == pytest.approx(1 / 24)
    ]  # fmt: skip
    assert len(bars) == 1
    assert bars[0].get_facecolor()[:3] == pytest.approx(
        tuple(
            int(plots.SEVERITY_COLOURS[alert["severity"]][i : i + 2], 16) / 255 for i in (1, 3, 5)
        )
    )
    assert any("small card attempts" in t.get_text() for t in ax.texts)

    # selecting it: exactly the small card payments of that hour, which the sandbox placed
    expected = _by_hand(history["payments"], history["start"], history["end"])
    assert len(expected) == history["placed"] == alert["n"]
    d.drill.value = testing[0]
    assert d.drilled["id"].tolist() == expected
    assert set(d.drilled["alert"]) == {testing[0]}

    # every alert's rows when none is selected, each tagged with its alert
    d.drill.value = None
    assert sorted(set(d.drilled["alert"])) == sorted(alerts.index.tolist())


def test_the_window_and_filters_rerun_the_monitor(history: dict[str, Any], tmp_path: Path) -> None:
    d = widgets.monitor_dashboard(history["payments"], history["refunds"], tz="UTC",
                                  export_dir=tmp_path)  # fmt: skip
    assert "card_testing" in set(d.result["kind"])
    # a window that ends before the incident: the baseline moves with it, the alert is gone
    day = (history["start"] - pd.Timedelta(days=2)).date()
    d.since.value, d.until.value = day - dt.timedelta(days=6), day
    assert "card_testing" not in set(d.result["kind"])
    assert f"monitored window {day - dt.timedelta(days=6):%Y-%m-%d} 00:00" in d.summary.value
    d.since.value = d.until.value = None
    assert "card_testing" in set(d.result["kind"])
    d.method.value = ("fpx",)  # card testing is about cards
    assert "card_testing" not in set(d.result["kind"])
    d.method.value = ()
    d.since.value = dt.date(2026, 11, 10)  # one picker at a time, as in the browser
    shown = d.result.copy()
    d.until.value = dt.date(2026, 11, 9)
    assert d.summary.value == (
        "<b>cannot show this selection</b>: since (2026-11-10) is after until (2026-11-09): "
        "swap them, or move one (both days are included)"
    )
    pd.testing.assert_frame_equal(d.result, shown)


# ----- a window that ends before it starts, on four hand-made payments ----------------------
def _small() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Cards on 1 and 4 Nov, FPX on 3 Nov (02:00 UTC); one refund, of the 4 Nov card payment,
    on 5 Nov 02:00 UTC: the newest row of all."""
    payments = build_payments(
        [
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-01T02:00:00Z"},
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-04T02:00:00Z"},
            {"status": "succeeded", "amount": 3000, "method_type": "fpx",
             "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u",
             "created_at": "2026-11-03T02:00:00Z"},
        ]
    )  # fmt: skip
    refunds = build_refunds([{"payment_id": "pay_2", "amount": 100}])  # 5 Nov 02:00 UTC
    return payments, refunds


class _CountedMonitor(widgets.MonitorDashboard):
    """The monitor dashboard, counting its refreshes."""

    refreshes = 0

    def refresh(self, change: Any = None) -> None:
        self.refreshes += 1
        super().refresh(change)


_EMPTY = (
    "where the monitored window ends when until is not given: pick an earlier since, or give until"
)


@pytest.mark.parametrize(
    ("with_refunds", "given", "message"),
    [
        (True, {"since": "2026-11-06"}, r"since \(2026-11-06\) is after the newest refund "
         r"\(2026-11-05 02:00 UTC\), "),
        (False, {"since": "2026-11-05"}, r"since \(2026-11-05\) is after the newest payment "
         r"\(2026-11-04 02:00 UTC\), "),
        # the filters choose the rows: the newest FPX payment (the refund is of a card one)
        (True, {"since": "2026-11-04", "method": "fpx"}, r"since \(2026-11-04\) is after the "
         r"newest payment in this selection \(2026-11-03 02:00 UTC\), "),
    ],
)  # fmt: skip
def test_a_since_after_the_newest_row_is_refused_and_nothing_changes(
    tmp_path: Path, with_refunds: bool, given: dict[str, Any], message: str
) -> None:
    payments, all_refunds = _small()
    refunds = all_refunds if with_refunds else None
    with pytest.raises(gwtools.ConfigurationError, match=message + _EMPTY) as raised:
        widgets.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path, **given)
    assert "swap" not in str(raised.value)
    d = _CountedMonitor(payments, refunds, tz="UTC", export_dir=tmp_path)
    opened = d.refreshes, d.summary.value, d.result.copy()
    assert "monitored window" in d.summary.value
    with pytest.raises(gwtools.ConfigurationError, match=message + _EMPTY):
        d.set_filters(**given)
    assert {name: c.value for name, c in d.filters.items()} == {
        "since": None, "until": None, "method": (), "currency": (), "status": (), "bank": ()
    }  # fmt: skip
    assert (d.refreshes, d.summary.value) == opened[:2]
    pd.testing.assert_frame_equal(d.result, opened[2])
    # given until, the same since is a window
    d.set_filters(**given, until="2026-11-06")
    assert d.refreshes == opened[0] + 1 and d.since.value == dt.date.fromisoformat(given["since"])


def test_a_since_at_the_newest_row_is_an_empty_window(tmp_path: Path) -> None:
    payments = build_payments([{"status": "succeeded", "amount": 1000,
                                "created_at": "2026-11-04T00:00:00Z"}])  # fmt: skip
    with pytest.raises(
        gwtools.ConfigurationError,
        match=r"since \(2026-11-04\) starts at the newest payment \(2026-11-04 00:00 UTC\)",
    ):
        widgets.monitor_dashboard(payments, tz="UTC", export_dir=tmp_path, since="2026-11-04")


def test_a_reversed_monitor_window_is_refused_with_advice_that_fits(tmp_path: Path) -> None:
    payments, refunds = _small()
    swap = r"since \(2026-11-04\) is after until \(2026-11-02\): swap them \(both days"
    with pytest.raises(gwtools.ConfigurationError, match=swap):
        widgets.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path,
                                  since="2026-11-04", until="2026-11-02")  # fmt: skip
    d = _CountedMonitor(payments, refunds, tz="UTC", export_dir=tmp_path)
    with pytest.raises(gwtools.ConfigurationError, match=swap):
        d.set_filters(since="2026-11-04", until="2026-11-02")
    d.set_filters(until="2026-11-02")
    refreshes = d.refreshes
    with pytest.raises(
        gwtools.ConfigurationError,
        match=r"since \(2026-11-04\) is after until \(2026-11-02\), which was not given: pick "
        r"a since on or before 2026-11-02, or give until as well",
    ):
        d.set_filters(since="2026-11-04")
    assert (d.since.value, d.until.value, d.refreshes) == (None, dt.date(2026, 11, 2), refreshes)


def test_an_empty_window_picked_on_the_page_is_said_there(tmp_path: Path) -> None:
    payments, refunds = _small()
    d = widgets.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    shown = d.result.copy()
    d.since.value = dt.date(2026, 11, 6)  # as a date picker in the browser does
    assert d.summary.value == (
        "<b>cannot show this selection</b>: since (2026-11-06) is after the newest refund "
        f"(2026-11-05 02:00 UTC), {_EMPTY}"
    )
    pd.testing.assert_frame_equal(d.result, shown)
    assert d.matched == 3  # what the table on screen was made from
    d.since.value = dt.date(2026, 11, 4)
    assert "monitored window 2026-11-04 00:00 to 2026-11-05 02:00" in d.summary.value
    d.method.value = ("fpx",)  # the newest FPX payment is on 3 Nov, its refunds none
    assert "since (2026-11-04) is after the newest payment in this selection" in d.summary.value


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"days": 0}, r"days must be a number of days above 0, got 0"),
        ({"days": "7"}, r"days must be a number of days above 0, got '7'"),
        ({"days": float("nan")}, r"days must be a number of days above 0, got nan"),
        ({"baseline_days": -28}, r"baseline_days must be a number of days above 0, got -28"),
        ({"settings": {"spike_ratio": 2}}, r"settings must be a gwtools.analysis.MonitorSettings"),
        ({"chart": "alerts"}, r"the monitor dashboard has no chart choice: leave chart out"),
        ({"freq": "day"}, r"the monitor dashboard has no freq choice: leave freq out"),
    ],
)
def test_monitor_arguments_are_checked(tmp_path: Path, given: dict[str, Any], message: str) -> None:
    payments, refunds = _small()
    with pytest.raises(gwtools.ConfigurationError, match=message):
        widgets.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path, **given)
    if "chart" in given or "freq" in given:
        d = widgets.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
        with pytest.raises(gwtools.ConfigurationError, match=message):
            d.set_filters(**given)


def test_the_monitor_opens_on_a_window_given_and_has_no_status_filter(
    history: dict[str, Any], tmp_path: Path
) -> None:
    day = (history["start"] - pd.Timedelta(days=2)).date()
    since = day - dt.timedelta(days=6)
    d = widgets.monitor_dashboard(history["payments"], history["refunds"], tz="UTC",
                                  export_dir=tmp_path, since=since, until=str(day))  # fmt: skip
    assert (d.since.value, d.until.value) == (since, day)
    assert f"monitored window {since:%Y-%m-%d} 00:00" in d.summary.value
    assert "card_testing" not in set(d.result["kind"])
    with pytest.raises(gwtools.ConfigurationError, match="the monitor dashboard has no status"):
        widgets.monitor_dashboard(history["payments"], history["refunds"], status="failed")
    with pytest.raises(gwtools.ConfigurationError, match="no status filter"):
        d.set_filters(status="failed")


def test_lazy_tables_give_the_same_alerts(history: dict[str, Any], tmp_path: Path) -> None:
    eager = widgets.monitor_dashboard(history["payments"], history["refunds"], tz="UTC",
                                      export_dir=tmp_path)  # fmt: skip
    lazy = widgets.monitor_dashboard(*history["lazy"], tz="UTC", export_dir=tmp_path)
    pd.testing.assert_frame_equal(lazy.result, eager.result)
    start, end = history["start"], history["end"]
    assert widgets.alert_payments(*history["lazy"], lazy.result)["id"].tolist() == (
        widgets.alert_payments(history["payments"], history["refunds"], eager.result)["id"].tolist()
    )
    assert (
        widgets.alert_payments(
            *history["lazy"], lazy.result[lazy.result["kind"] == "card_testing"], limit=3
        )["id"].tolist()
        == _by_hand(history["payments"], start, end)[:3]
    )


def test_alert_payments_follow_each_scope() -> None:
    """One alert of each scope over six hand-made payments and two refunds."""
    at = "2026-11-02T02:{:02d}:00Z".format
    payments = build_payments(
        [
            {"status": "failed", "amount": 100, "card_brand": "visa", "created_at": at(0)},
            {"status": "failed", "amount": 5000, "card_brand": "visa", "created_at": at(10)},
            {"status": "failed", "amount": 5000, "card_brand": "mastercard", "created_at": at(20)},
            {"status": "failed", "amount": 5000, "method_type": "fpx",
             "fpx_bank_code": "MB2U0227", "created_at": at(30)},
            {"status": "failed", "amount": 5000, "method_type": "fpx",
             "fpx_bank_code": "RHB0218", "created_at": at(40)},
            {"status": "failed", "amount": 5000, "card_brand": "visa",
             "created_at": "2026-11-02T03:00:00Z"},  # the end of the hour: not in it
        ]
    )  # fmt: skip
    refunds = build_refunds(
        [{"payment_id": "pay_2", "amount": 100, "created_at": at(5)},
         {"payment_id": "pay_2", "amount": 100, "created_at": "2026-11-03T02:00:00Z"}]
    )  # fmt: skip
    hour = (pd.Timestamp(at(0)), pd.Timestamp("2026-11-02T03:00:00Z"))
    alerts = pd.DataFrame(
        [
            {"kind": "decline_spike", "scope": "card", "start": hour[0], "end": hour[1]},
            {"kind": "decline_spike", "scope": "card_brand=visa", "start": hour[0], "end": hour[1]},
            {"kind": "card_testing", "scope": "card, amount <= 2", "start": hour[0], "end": hour[1]},
            {"kind": "fpx_bank_outage", "scope": "fpx_bank_code=MB2U0227",
             "start": hour[0], "end": hour[1]},
            {"kind": "refund_spike", "scope": "refunds", "start": hour[0], "end": hour[1]},
        ]
    )  # fmt: skip
    rows = widgets.alert_payments(payments, refunds, alerts)
    found = rows.groupby("alert")["id"].agg(list).to_dict()
    assert found == {
        0: ["pay_1", "pay_2", "pay_3"],
        1: ["pay_1", "pay_2"],
        2: ["pay_1"],
        3: ["pay_4"],
        4: ["rfnd_1"],
    }
    assert widgets.alert_payments(payments, refunds, alerts.iloc[1])["id"].tolist() == [
        "pay_1",
        "pay_2",
    ]


def test_card_testing_rows_are_those_its_alert_counted() -> None:
    # monitor(settings=MonitorSettings(small_amount=5)) alerts on attempts of at most RM5
    # (its scope says "card, amount <= 5"); alert_payments of that alert, without the same
    # settings, listed only those of at most the default RM2: here none of the three.
    at = "2026-11-02T02:{:02d}:00Z".format
    payments = build_payments(
        [{"status": "failed", "amount": a, "card_brand": "visa", "created_at": at(i)}
         for i, a in enumerate([300, 450, 500, 501, 10_000])]
    )  # fmt: skip
    hour = (pd.Timestamp(at(0)), pd.Timestamp("2026-11-02T03:00:00Z"))
    alert = {"kind": "card_testing", "start": hour[0], "end": hour[1]}
    alerts = pd.DataFrame([{**alert, "scope": "card, amount <= 5"}])
    assert widgets.alert_payments(payments, None, alerts)["id"].tolist() == [
        "pay_1", "pay_2", "pay_3"
    ]  # fmt: skip
    # The limit of an alert whose scope names none is the settings' (default RM2).
    bare = pd.DataFrame([{**alert, "scope": "card"}])
    assert widgets.alert_payments(payments, None, bare)["id"].tolist() == []
    five = gwtools.analysis.MonitorSettings(small_amount=5.005)
    assert widgets.alert_payments(payments, None, bare, settings=five)["id"].tolist() == [
        "pay_1", "pay_2", "pay_3"
    ]  # fmt: skip


def test_alert_payments_says_what_to_pass() -> None:
    """Each used to fail deep inside (an AttributeError, an engine error), or, for settings,
    to be taken as it was and fail on its first use."""
    payments = build_payments(
        [{"status": "failed", "amount": 100, "created_at": "2026-11-02T02:00:00Z"}]
    )
    hour = (pd.Timestamp("2026-11-02T02:00:00Z"), pd.Timestamp("2026-11-02T03:00:00Z"))
    alerts = pd.DataFrame(
        [{"kind": "refund_spike", "scope": "refunds", "start": hour[0], "end": hour[1]}]
    )
    for call, param, said in [
        (lambda: widgets.alert_payments(payments, None, alerts, settings={"x": 1}), "settings",
         "MonitorSettings"),
        (lambda: widgets.alert_payments(payments, None, alerts, limit="5"), "limit", "'5'"),
        (lambda: widgets.alert_payments(payments, None, alerts, limit=0), "limit", "at least 1"),
        (lambda: widgets.alert_payments(payments, None, alerts, limit=True), "limit", "True"),
        (lambda: widgets.alert_payments(payments, None, alerts.to_dict("records")), "alerts",
         "got a list"),
        (lambda: widgets.alert_payments(payments, None, alerts.drop(columns="end")), "alerts",
         "has no end"),
        (lambda: widgets.alert_payments(payments, None, alerts), "refunds", "pass the refunds"),
    ]:  # fmt: skip
        with pytest.raises(gwtools.ConfigurationError, match=said) as info:
            call()
        assert info.value.param == param


def _broken() -> tuple[pd.DataFrame, pd.DataFrame]:
    ok = {"status": "succeeded", "captured": True, "amount": 1000, "refunded": False}
    payments = build_payments(
        [
            {**ok, "id": "pay_1", "refunded_amount": 500},  # its refunds say 400
            {**ok, "id": "pay_2", "refunded_amount": 0},
            {**ok, "id": "pay_2", "refunded_amount": 0},  # the same id twice
            {**ok, "id": "pay_3", "refunded_amount": 0, "method_type": "fpx",
             "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"},
        ]
    )  # fmt: skip
    refunds = build_refunds(
        [
            {"id": "rfnd_1", "payment_id": "pay_1", "amount": 400},
            {"id": "rfnd_2", "payment_id": "pay_99", "amount": 100},  # its payment is not here
        ]
    )
    return payments, refunds


def test_quality_dashboard_shows_failing_rules_and_their_rows(tmp_path: Path) -> None:
    payments, refunds = _broken()
    d = widgets.quality_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    result = d.result.set_index("rule")
    failing = result.index[result["result"] == "FAIL"].tolist()
    assert failing == [
        "refunded_amount_matches_refunds",
        "refund_payment_cached",
        "payment_ids_unique",
    ]
    assert result.loc["payment_ids_unique", "count"] == 1
    assert result.loc["captured_flag_matches_status", "result"] == "ok"
    assert "FAIL" in d.table.value and "Data-quality rules: 3 of 9 failing" in (
        d.figure.axes[0].get_title() if d.figure else ""
    )
    assert [v for _, v in d.drill.options] == [None, *failing]

    d.drill.value = "payment_ids_unique"
    assert d.drilled["example"].tolist() == ["pay_2", "pay_2"]  # both copies of the id
    d.drill.value = "refund_payment_cached"
    assert d.drilled[["example", "table", "payment_id"]].values.tolist() == [
        ["rfnd_2", "refunds", "pay_99"]
    ]
    d.drill.value = "refunded_amount_matches_refunds"
    assert d.drilled[["example", "refunded_amount"]].values.tolist() == [["pay_1", 500]]

    # the bank filter keeps pay_3: its rules hold, and the orphan refund is still checked
    d.bank.value = ("MB2U0227",)
    result = d.result.set_index("rule")
    assert result.index[result["result"] == "FAIL"].tolist() == ["refund_payment_cached"]


def test_quality_examples_is_empty_when_every_rule_holds() -> None:
    payments, refunds = _broken()
    from gwtools import analysis

    fine = analysis.quality(payments.iloc[[3]], refunds.iloc[:0])
    assert fine["ok"].all()
    empty = widgets.quality_examples(fine, payments, refunds)
    broken = analysis.quality(payments, refunds, tz="UTC")
    full = widgets.quality_examples(broken, payments, refunds)
    assert empty.empty and not full.empty
    # the same columns and types, empty or not: a day's file combines with any other day's
    assert list(empty.columns) == list(full.columns)
    assert empty.dtypes.astype(str).tolist() == full.dtypes.astype(str).tolist()
    assert str(empty["created_at"].dtype) == "datetime64[us, UTC]"
    assert str(empty["amount"].dtype) == "Int64" and str(empty["refunded"].dtype) == "boolean"


def _poisoned(rel: Any, column: str) -> Any:
    """``rel`` (a real DuckDB relation) with ``column`` computed as an error: a query that
    loads the full table (every column) fails, one that never needs ``column`` runs."""
    return rel.project(f"* REPLACE (error('the full table was loaded')::VARCHAR AS {column})")


def test_the_monitor_dashboard_never_loads_the_full_table(
    history: dict[str, Any], tmp_path: Path
) -> None:
    import duckdb

    lazy_payments, lazy_refunds = history["lazy"]
    payments = _poisoned(lazy_payments, "extra")  # the monitors never read extra
    refunds = _poisoned(lazy_refunds, "extra")
    with pytest.raises(duckdb.Error, match="full table was loaded"):
        payments.df()  # the guard works: loading everything fails
    eager = widgets.monitor_dashboard(history["payments"], history["refunds"], tz="UTC",
                                      export_dir=tmp_path)  # fmt: skip
    # max_rows=4: the drill-down shows 2 rows, fetched with a limit in DuckDB
    d = widgets.monitor_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path, max_rows=4)
    pd.testing.assert_frame_equal(d.result, eager.result)
    testing = d.result.index[d.result["kind"] == "card_testing"].tolist()
    d.drill.value = testing[0]
    expected = _by_hand(history["payments"], history["start"], history["end"])
    assert d.drilled["id"].tolist() == expected[:2]
    _, rows = d.export("csv")
    assert pd.read_csv(rows)["id"].tolist() == expected  # export has every row
    d.method.value = ("card",)  # a filter: the refunds of the matching payments, in DuckDB
    assert "card_testing" in set(d.result["kind"])


def test_the_quality_dashboard_never_loads_the_full_table(tmp_path: Path) -> None:
    import duckdb

    from gwtools.cache._scan import connection

    payments, refunds = _broken()
    con = connection()
    lazy_p = _poisoned(con.from_df(payments), "metadata")  # the rules never read metadata
    lazy_r = _poisoned(con.from_df(refunds), "reason")
    with pytest.raises(duckdb.Error, match="full table was loaded"):
        lazy_p.df()
    eager = widgets.quality_dashboard(payments, refunds, tz="UTC", export_dir=tmp_path)
    d = widgets.quality_dashboard(lazy_p, lazy_r, tz="UTC", export_dir=tmp_path)
    pd.testing.assert_frame_equal(d.result, eager.result)
    d.drill.value = "payment_ids_unique"
    assert d.drilled["example"].tolist() == ["pay_2", "pay_2"]
    d.bank.value = ("MB2U0227",)  # the orphan refund is still checked, in DuckDB
    result = d.result.set_index("rule")
    assert result.index[result["result"] == "FAIL"].tolist() == ["refund_payment_cached"]
