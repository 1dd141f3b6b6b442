"""Monitors: each alert kind on a hand-made history (counts chosen so the figures are exact),
the exact tails they rest on, and no alert on the same history without the incident."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import gwtools
from gwtools import analysis
from gwtools.analysis._monitor import binom_lower, binom_upper, poisson_upper
from gwtools.sandbox import Sandbox
from tests.toolkit.conftest import build_payments, build_refunds

WINDOW = {"since": "2026-11-01", "until": "2026-11-07", "tz": "UTC"}  # baseline: 4-31 Oct


def _days() -> list[pd.Timestamp]:
    return list(pd.date_range("2026-10-04", "2026-11-07", freq="D", tz="UTC"))


def _cards(failed_on: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """100 card payments a day at noon, 10 of them declined (40 on the given days)."""
    rows = []
    for day in _days():
        failed = (failed_on or {}).get(f"{day:%Y-%m-%d}", 10)
        for i in range(100):
            ts = day + pd.Timedelta(hours=12, seconds=i)
            status = "failed" if i < failed else "succeeded"
            rows.append(
                {
                    "status": status,
                    "amount": 5000,
                    "created_at": ts,
                    "payment_method_id": f"pm_{day:%m%d}_{i}",
                }
            )
    return rows


def test_exact_tails() -> None:
    assert binom_upper(2, 2, 0.5) == pytest.approx(0.25)
    assert binom_upper(1, 3, 0.5) == pytest.approx(0.875)
    assert binom_lower(0, 3, 0.5) == pytest.approx(0.125)
    assert binom_lower(1, 4, 0.5) == pytest.approx(5 / 16)
    assert poisson_upper(1, 1.0) == pytest.approx(1 - math.exp(-1))
    assert poisson_upper(2, 2.0) == pytest.approx(1 - 3 * math.exp(-2))


def test_quiet_history_has_no_alert() -> None:
    alerts = analysis.monitor(build_payments(_cards()), build_refunds([]), **WINDOW)
    assert alerts.empty and list(alerts.columns) == list(analysis._monitor.ALERT_COLUMNS)


def test_decline_spike() -> None:
    # 3 Nov: 40% declined against 10% (high); 5 Nov: 14%, under 1.5 times the baseline
    payments = build_payments(_cards({"2026-11-03": 40, "2026-11-05": 14}))
    alerts = analysis.monitor(payments, None, **WINDOW)
    assert len(alerts) == 1
    a = alerts.iloc[0]
    assert (a["kind"], a["scope"], a["n"], a["severity"]) == ("decline_spike", "card", 100, "high")
    assert a["observed"] == 0.40 and a["expected"] == pytest.approx(0.10)
    assert a["start"] == pd.Timestamp("2026-11-03", tz="UTC")
    assert a["end"] == pd.Timestamp("2026-11-04", tz="UTC")
    assert 0.10 < a["limit"] < 0.40
    assert "40.0% (40 of 100 decided first attempts" in a["explanation"]


@pytest.mark.parametrize(
    ("brand", "said"),
    [("jcb", "JCB"), ("amex", "American Express"), ("visa", "Visa"), ("mydebit", "Mydebit"),
     ("eftPos", "EftPos")],
)  # fmt: skip
def test_a_brands_decline_spike_names_the_brand_as_its_owner_writes_it(
    brand: str, said: str
) -> None:
    # str.capitalize() wrote "Jcb decline rate" and "Amex decline rate" in every alert.
    rows = [{**row, "card_brand": brand} for row in _cards({"2026-11-03": 40})]
    alerts = analysis.monitor(build_payments(rows), None, **WINDOW)
    by_scope = dict(zip(alerts["scope"], alerts["explanation"], strict=True))
    assert by_scope["card"].startswith("Card decline rate on 2026-11-03 was 40.0%")
    assert by_scope[f"card_brand={brand}"].startswith(f"{said} decline rate on 2026-11-03")


def _testing(count: int, *, distinct: bool = True, failed: int | None = None) -> pd.DataFrame:
    rows = _cards()
    failed = count * 9 // 10 if failed is None else failed
    for i in range(count):
        rows.append(
            {
                "status": "failed" if i < failed else "succeeded",
                "amount": 100,
                "created_at": pd.Timestamp("2026-11-04T03:00:00Z")
                + pd.Timedelta(seconds=60 * i // 2),
                "payment_method_id": f"pm_t{i}" if distinct else "pm_same",
            }
        )
    return build_payments(rows)


def test_card_testing() -> None:
    alerts = analysis.monitor(_testing(40), None, **WINDOW)
    assert alerts["kind"].tolist() == ["card_testing"]
    a = alerts.iloc[0]
    assert (a["observed"], a["n"], a["severity"]) == (40, 40, "medium")
    assert a["start"] == pd.Timestamp("2026-11-04T03:00Z") and a["end"] == pd.Timestamp(
        "2026-11-04T04:00Z"
    )
    # baseline: no small attempt in 28 days; one pseudo-attempt over 672 hours
    assert a["expected"] == pytest.approx(1 / (28 * 24 - 12))
    assert "40 distinct payment methods, 90% declined" in a["explanation"]
    # 199 of 200 declined is not all of them (it said "100% declined")
    nearly = analysis.monitor(_testing(200, failed=199), None, kinds=["card_testing"], **WINDOW)
    assert "200 distinct payment methods, 99.5% declined" in nearly.iloc[0]["explanation"]


@pytest.mark.parametrize(
    "history",
    [_testing(29), _testing(40, distinct=False), _testing(40, failed=10)],
    ids=["too-few", "one-card", "mostly-accepted"],
)
def test_not_card_testing(history: pd.DataFrame) -> None:
    # (the burst's declines may still show as a decline spike: that is the other monitor)
    assert analysis.monitor(history, None, kinds=["card_testing"], **WINDOW).empty


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_card_testing_counts_each_unknown_payment_method_as_its_own(engine: str) -> None:
    from gwtools.cache._scan import connection

    def table(frame: pd.DataFrame) -> Any:
        return frame if engine == "pandas" else connection().from_df(frame)

    unknown = _testing(40)
    unknown["payment_method_id"] = unknown["payment_method_id"].where(
        ~unknown["payment_method_id"].str.startswith("pm_t"), None
    )
    alerts = analysis.monitor(table(unknown), None, kinds=["card_testing"], **WINDOW)
    assert "40 distinct payment methods" in alerts.iloc[0]["explanation"]
    # 20 unknown and 20 on one card: 21 distinct, under 80% of 40
    half = _testing(40, distinct=False)
    burst = half["payment_method_id"].eq("pm_same") & (half.index % 2 == 0)
    half.loc[burst, "payment_method_id"] = None
    assert analysis.monitor(table(half), None, kinds=["card_testing"], **WINDOW).empty


def _fpx(outage_hours: int, per_hour: int = 6) -> pd.DataFrame:
    rows = []
    for day in _days()[:-7]:  # baseline: 10 a day at 10:00 local, 9 succeed
        for i in range(10):
            rows.append(
                {
                    "method_type": "fpx",
                    "fpx_bank_code": "MB2U0227",
                    "fpx_bank": "Maybank2u",
                    "status": "failed" if i == 0 else "succeeded",
                    "amount": 5000,
                    "failure_code": "payment_method_not_available",
                    "created_at": day + pd.Timedelta(hours=2, minutes=i),
                }
            )
    start = pd.Timestamp("2026-11-04T02:00:00Z")  # 10:00 in Kuala Lumpur
    for h in range(outage_hours):
        for i in range(per_hour):
            rows.append(
                {
                    "method_type": "fpx",
                    "fpx_bank_code": "MB2U0227",
                    "status": "failed",
                    "failure_code": "processing_error" if i % 2 else "payment_method_not_available",
                    "amount": 5000,
                    "created_at": start + pd.Timedelta(hours=h, minutes=5 * i),
                }
            )
    rows += [{"status": "succeeded", "amount": 100, "created_at": "2026-11-06T00:00:00Z"}]
    return build_payments(rows)


def test_fpx_bank_outage() -> None:
    alerts = analysis.monitor(_fpx(3), None, **WINDOW)
    assert alerts["kind"].tolist() == ["fpx_bank_outage"]
    a = alerts.iloc[0]
    assert (a["scope"], a["observed"], a["n"], a["severity"]) == (
        "fpx_bank_code=MB2U0227",
        0.0,
        18,
        "high",
    )
    assert a["expected"] == pytest.approx(0.9)
    kl = "Asia/Kuala_Lumpur"
    assert a["start"] == pd.Timestamp("2026-11-04T10:00", tz=kl)
    assert a["end"] == pd.Timestamp("2026-11-04T13:00", tz=kl)
    assert "0 of 18 attempts succeeded (9 timed out)" in a["explanation"]
    # two failures in an hour are not an outage
    assert analysis.monitor(_fpx(1, per_hour=2), None, **WINDOW).empty


def test_alert_explanations_keep_small_and_near_all_rates_apart_from_none_and_all() -> None:
    # A bank that nearly always succeeds (279 of 280 in the baseline) was "against 100% in the
    # baseline"; a decline rate of 1 in 2,800 was "against 0.0% in the baseline".
    rows = _fpx(3).to_dict("records")
    baseline = [r for r in rows if r["created_at"] < pd.Timestamp("2026-11-01", tz="UTC")]
    for r in [r for r in baseline if r["status"] == "failed"][1:]:
        r.update(status="succeeded", failure_code=None)
    outage = analysis.monitor(build_payments(rows), None, **WINDOW).iloc[0]
    assert outage["expected"] == pytest.approx(279 / 280)
    assert "Malaysia time, against 99.6% in the baseline." in outage["explanation"]
    quiet = {f"{day:%Y-%m-%d}": 0 for day in _days()[:-7]}
    quiet["2026-10-10"] = 1
    spike = analysis.monitor(build_payments(_cards({**quiet, "2026-11-03": 40})), None, **WINDOW)
    a = spike[spike["scope"] == "card"].iloc[0]
    assert a["expected"] == pytest.approx(1 / 2800)
    assert "against 0.036% in the baseline" in a["explanation"], a["explanation"]


def test_refund_spike() -> None:
    payments = build_payments(_cards())
    rows = [
        {"payment_id": "pay_1", "amount": 100, "created_at": day + pd.Timedelta(hours=h)}
        for day in _days()[:-7]
        for h in (1, 2, 3)
    ]
    spike = [
        {"payment_id": "pay_1", "amount": 100, "created_at": f"2026-11-02T0{h}:00:00Z"}
        for h in range(1, 10)
    ] * 2
    quiet = analysis.monitor(payments, build_refunds(rows), **WINDOW)
    assert quiet.empty
    alerts = analysis.monitor(payments, build_refunds(rows + spike), **WINDOW)
    assert alerts["kind"].tolist() == ["refund_spike"]
    a = alerts.iloc[0]
    # baseline: from 14 days after the first payment (4 Oct 12:00) to 1 Nov, 13.5 days
    # holding 39 refunds (+1): 3 a day from 19 to 31 October
    assert a["observed"] == 18 and a["expected"] == pytest.approx(40 / 13.5)
    assert a["start"] == pd.Timestamp("2026-11-02", tz="UTC") and a["severity"] == "high"


@pytest.mark.parametrize("baseline", [[], ["2026-10-25T03:00:00Z"]])
def test_refund_spike_after_a_quiet_baseline(baseline: list[str]) -> None:
    """A merchant's first burst of refunds alerts: a baseline with few or no refunds is a rate
    of nearly none over its whole length, not a baseline of no days."""
    payments = build_payments(_cards())
    rows = [{"payment_id": "pay_1", "amount": 100, "created_at": t} for t in baseline]
    spike = [
        {"payment_id": "pay_1", "amount": 100, "created_at": f"2026-11-02T0{h}:00:00Z"}
        for h in range(1, 7)
    ]
    assert analysis.monitor(payments, build_refunds(rows), **WINDOW).empty
    alerts = analysis.monitor(payments, build_refunds(rows + spike), **WINDOW)
    assert alerts["kind"].tolist() == ["refund_spike"]
    a = alerts.iloc[0]
    # baseline: 18 Oct 12:00 (14 days after the first payment) to 1 Nov, 13.5 days, holding
    # the given refunds (+1)
    assert a["observed"] == 6 and a["expected"] == pytest.approx((len(baseline) + 1) / 13.5)
    # under the 5-refund minimum: no alert, however quiet the baseline
    assert analysis.monitor(payments, build_refunds(rows + spike[:4]), **WINDOW).empty


def test_a_given_until_day_ends_before_the_next_midnight() -> None:
    """`until` is a whole local day: a payment at the next midnight is not in the window
    (10 declines there made a spike dated after it)."""
    late = [
        {"status": "failed", "amount": 5000, "created_at": "2026-11-08T00:00:00Z",
         "payment_method_id": f"pm_late_{i}"}
        for i in range(10)
    ]  # fmt: skip
    payments = build_payments(_cards() + late)
    assert analysis.monitor(payments, None, **WINDOW).empty
    # the window's own last instant is in it: without until, the window ends at the newest row
    alerts = analysis.monitor(payments, None, since="2026-11-02", tz="UTC")
    assert alerts["kind"].tolist() == ["decline_spike"]
    assert alerts.iloc[0]["start"] == pd.Timestamp("2026-11-08", tz="UTC")


def test_card_testing_only_in_a_repeated_hour_is_not_counted_and_does_not_fail() -> None:
    """The hourly buckets leave out the hour a clock change repeats (documented); a window
    whose only small attempts fall in it has nothing to judge (it raised on NaT)."""
    # 01:10-01:29 EDT, in the first of New York's two 1 a.m. hours on 1 November
    burst = [
        {
            "status": "failed",
            "amount": 100,
            "created_at": f"2026-11-01T05:{10 + i // 2:02d}:00Z",
            "payment_method_id": f"pm_t{i}",
        }
        for i in range(40)
    ]
    payments = build_payments(_cards() + burst)
    window = {"since": "2026-10-29", "until": "2026-11-04", "tz": "America/New_York"}
    assert analysis.monitor(payments, None, kinds=["card_testing"], **window).empty


def test_every_long_run_of_fpx_time_outs_alerts_not_only_the_longest() -> None:
    """Two runs of time-outs at one bank, one an hour (never 4 attempts in 3 hours, so only
    the run test can fire): each is improbable on its own (n * q**5 is under the limit),
    so each is an alert; only the longest was tested."""
    baseline = _fpx(0)
    runs = [
        {"method_type": "fpx", "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u",
         "status": "failed", "failure_code": "processing_error", "amount": 5000,
         "created_at": pd.Timestamp(day) + pd.Timedelta(hours=h, minutes=30)}
        for day, length in (("2026-11-02T16:00Z", 6), ("2026-11-04T16:00Z", 5))
        for h in range(length)
    ]  # fmt: skip
    # a success between them: two runs, not one of 11
    between = {**runs[0], "status": "succeeded", "failure_code": None,
               "created_at": pd.Timestamp("2026-11-04T02:00Z")}  # fmt: skip
    rows = baseline.to_dict("records") + runs + [between]
    alerts = analysis.monitor(build_payments(rows), None, kinds=["fpx_bank_outage"], **WINDOW)
    kl = "Asia/Kuala_Lumpur"
    assert alerts["start"].tolist() == [
        pd.Timestamp("2026-11-03T00:00", tz=kl),
        pd.Timestamp("2026-11-05T00:00", tz=kl),
    ]
    assert alerts["n"].tolist() == [6, 5]


def test_card_retries_of_orders_begun_by_fpx_are_not_first_attempts() -> None:
    """30 orders on 3 Nov start with a failed FPX attempt and retry by card, declined again:
    the card attempts are retries, so the day's first card attempts stay 10 of 100 declined."""
    switched = []
    for i in range(30):
        order = {"metadata": f'{{"order_id": "o{i}"}}', "amount": 5000}
        at = pd.Timestamp("2026-11-03T14:00:00Z") + pd.Timedelta(minutes=i)
        switched.append({**order, "status": "failed", "method_type": "fpx",
                         "fpx_bank_code": "MB2U0227", "failure_code": "payment_declined",
                         "created_at": at})  # fmt: skip
        switched.append({**order, "status": "failed", "failure_code": "card_declined",
                         "payment_method_id": f"pm_s{i}",
                         "created_at": at + pd.Timedelta(seconds=30)})  # fmt: skip
    payments = build_payments(_cards() + switched)
    assert analysis.monitor(payments, None, kinds=["decline_spike"], **WINDOW).empty


def test_the_default_week_is_seven_local_days_across_a_clock_change() -> None:
    ny = "America/New_York"
    payments = build_payments(
        [{"status": "succeeded", "amount": 5000, "created_at": "2026-02-01T17:00:00Z"}]
    )
    alerts = analysis.monitor(payments, None, until="2026-03-14", tz=ny)
    window = alerts.attrs["window"]
    # 8-14 March: 167 hours, as the clocks went forward on the 8th (not 7 x 24 hours, which
    # began at 23:00 on the 7th and tested that hour as a day)
    assert window["since"] == pd.Timestamp("2026-03-08", tz=ny)
    assert window["until"] == pd.Timestamp("2026-03-15", tz=ny)
    assert window["baseline_from"] == pd.Timestamp("2026-02-08", tz=ny)


def test_window_defaults_to_the_last_seven_days() -> None:
    alerts = analysis.monitor(build_payments(_cards({"2026-11-03": 40})), None, tz="UTC")
    assert alerts["kind"].tolist() == ["decline_spike"]
    # the newest payment is 7 Nov 12:01:39
    assert alerts.attrs["window"]["since"] == pd.Timestamp("2026-10-31T12:01:39Z")
    with pytest.raises(ValueError, match="unknown monitor kinds"):
        analysis.monitor(build_payments(_cards()), kinds=["nope"])


# -- engines -----------------------------------------------------------------------------------
ENGINE_CALLS = {
    "monitor": lambda p, r: analysis.monitor(p, r, tz="Asia/Kuala_Lumpur"),
    "quality": lambda p, r: analysis.quality(p, r),
    "acceptance": lambda p, r: analysis.acceptance(p, by="method_type", freq="week", tz="UTC"),
    "recovery": lambda p, r: analysis.recovery(p),
    "orders": lambda p, r: analysis.orders(p),
}


@pytest.fixture(scope="module")
def incident_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synced cache of a history with one incident of each kind."""
    root = tmp_path_factory.mktemp("monitor-cache")
    incidents = ["card-testing", "bank-outage:MB2U0227", "decline-spike"]
    with (
        Sandbox("B", rate_limits=False, seed_payments=6000, days=36, seed=5,
                now=datetime(2026, 11, 20, 6, tzinfo=UTC), incidents=incidents) as sb,
        gwtools.connect(sb.secret_key, sb.base_url, cache_dir=root, account="m") as gw,
    ):  # fmt: skip
        gw.sync()
    return root


def _pandas(root: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (gwtools.read_cache(root, "payments", account="m"),
            gwtools.read_cache(root, "refunds", account="m"))  # fmt: skip


@pytest.mark.parametrize("name", list(ENGINE_CALLS))
def test_duckdb_gives_the_pandas_result(incident_cache: Path, name: str) -> None:
    call = ENGINE_CALLS[name]
    expected = call(*_pandas(incident_cache))
    lazy = (gwtools.scan_cache(incident_cache, "payments", account="m"),
            gwtools.scan_cache(incident_cache, "refunds", account="m"))  # fmt: skip
    pd.testing.assert_frame_equal(call(*lazy), expected)
    if name == "monitor":
        assert set(expected["kind"]) == {"decline_spike", "card_testing", "fpx_bank_outage"}


@pytest.mark.spark
@pytest.mark.parametrize("name", ["monitor", "quality", "acceptance"])
def test_spark_gives_the_pandas_result(incident_cache: Path, spark: Any, name: str) -> None:
    call = ENGINE_CALLS[name]
    folder = incident_cache / "m" / "test"
    frames = (
        spark.read.parquet(str(folder / "payments")),
        spark.read.parquet(str(folder / "refunds")),
    )
    pd.testing.assert_frame_equal(call(*frames), call(*_pandas(incident_cache)))


def test_describe_alerts_names_the_window_watched_or_that_there_was_nothing_to_watch() -> None:
    """The notebooks' line under the alerts table: "No alerts." read as all is well even for a
    selection holding no payments at all (`gwtools monitor` exits 2 there: it could not
    look), and never said which days were watched."""
    payments = build_payments(
        [
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-01T04:00:00Z"},
            {"status": "succeeded", "amount": 1000, "created_at": "2026-11-20T04:00:00Z"},
        ]
    )
    quiet = analysis.monitor(payments, build_refunds([]), tz="Asia/Kuala_Lumpur")
    assert quiet.empty
    # the window ends at the newest row (20 Nov 12:00 in Kuala Lumpur), 7 days long, and
    # its baseline is the 28 days before it
    assert analysis.describe_alerts(quiet, tz="Asia/Kuala_Lumpur") == (
        "No alerts: monitored window 2026-11-13 12:00 to 2026-11-20 12:00, baseline from "
        "2026-10-16 12:00 (Asia/Kuala_Lumpur)."
    )
    # A window the data starts in (a cache's first week): nothing to compare with, said.
    first_week = analysis.monitor(payments.iloc[1:], build_refunds([]), tz="Asia/Kuala_Lumpur")
    assert first_week.empty and first_week.attrs["window"]["baseline_empty"]
    assert analysis.describe_alerts(first_week, tz="Asia/Kuala_Lumpur") == (
        "No alerts: monitored window 2026-11-13 12:00 to 2026-11-20 12:00, baseline from "
        "2026-10-16 12:00 (Asia/Kuala_Lumpur). The baseline holds no payments (the data "
        "starts inside the monitored window), so decline spikes, FPX bank outages and refund "
        "spikes, which are found against it, could not be looked for; only card testing was."
    )
    assert quiet.attrs["window"]["baseline_empty"] is False
    nothing = analysis.monitor(build_payments([]), build_refunds([]), tz="UTC")
    said = analysis.describe_alerts(nothing, tz="UTC")
    assert said.startswith("Nothing to monitor: no payments or refunds") and "No alerts" not in said
    one = pd.DataFrame({"explanation": ["A.", "B."]}, index=[0, 1])
    one.attrs = quiet.attrs
    assert analysis.describe_alerts(one, tz="Asia/Kuala_Lumpur").splitlines() == [
        "2 alerts: monitored window 2026-11-13 12:00 to 2026-11-20 12:00, baseline from "
        "2026-10-16 12:00 (Asia/Kuala_Lumpur).",
        "A.",
        "B.",
    ]
