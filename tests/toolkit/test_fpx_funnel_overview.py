"""FPX banks, the funnel and the one-screen overview on hand-made frames."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from gwtools import analysis as a

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]

Z2 = 1.959963984540054**2


@pytest.fixture
def fpx(make_payments: Build) -> pd.DataFrame:
    bank = {"method_type": "fpx", "amount": 1000}
    may = {**bank, "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"}
    cimb = {**bank, "fpx_bank_code": "BCBB0235", "fpx_bank": "CIMB Clicks"}
    t4 = {**bank, "fpx_bank_code": "TEST0004", "fpx_bank": "Test Bank 4"}
    start = "2026-11-02T02:00:00Z"
    rows = [
        # Maybank: 6 succeeded (2, 4, 6, 8, 10, 12 minutes), 1 failed, 1 canceled, 2 pending
        *[{**may, "status": "succeeded", "created_at": start,
           "captured_at": f"2026-11-02T02:{m:02d}:00Z"} for m in (2, 4, 6, 8, 10, 12)],
        {**may, "status": "failed", "failure_code": "payment_declined"},
        {**may, "status": "canceled"},
        {**may, "status": "pending"},
        {**may, "status": "pending"},
        # CIMB: 3 payments, 2 succeeded (5 and 7 minutes), 1 expired
        {**cimb, "status": "succeeded", "created_at": start, "captured_at": "2026-11-02T02:05:00Z"},
        {**cimb, "status": "succeeded", "created_at": start, "captured_at": "2026-11-02T02:07:00Z"},
        {**cimb, "status": "expired"},
        # TEST0004: timed out twice
        {**t4, "status": "failed", "failure_code": "processing_error"},
        {**t4, "status": "failed", "failure_code": "processing_error"},
        # a card payment: never in the FPX tables
        {"status": "failed", "amount": 1000, "failure_code": "card_declined"},
    ]  # fmt: skip
    return make_payments(rows)


def test_fpx_banks_counts_rates_and_times(fpx: pd.DataFrame) -> None:
    banks = a.fpx_banks(fpx).set_index("fpx_bank_code")
    assert sorted(banks.index) == ["BCBB0235", "MB2U0227", "TEST0004"]
    may = banks.loc["MB2U0227"]
    assert may["fpx_bank"] == "Maybank2u"
    assert may[["attempts", "succeeded", "failed", "timed_out", "canceled", "pending"]].tolist() == [
        10, 6, 1, 0, 1, 2,
    ]  # fmt: skip
    # finished = 10 - 2 pending = 8; 6/8 = 0.75; median of 2..12 minutes = (6 + 8) / 2 = 7
    assert (may["n"], may["rate"], may["median_minutes"]) == (8, 0.75, 7.0)
    t4 = banks.loc["TEST0004"]
    assert (t4["timed_out"], t4["failed"], t4["rate"]) == (2, 0, 0.0)
    # upper bound with 0 of 2: z²/(2 + z²) = 0.657566
    assert t4["ci_high"] == pytest.approx(Z2 / (2 + Z2))


def test_bank_with_three_payments_has_a_wide_interval(fpx: pd.DataFrame) -> None:
    cimb = a.fpx_banks(fpx).set_index("fpx_bank_code").loc["BCBB0235"]
    # 2 of 3 (expired counts as finished, not succeeded): 0.667, interval 0.208–0.939
    assert cimb["rate"] == pytest.approx(2 / 3)
    assert cimb["ci_low"] == pytest.approx(0.207660, abs=1e-6)
    assert cimb["ci_high"] == pytest.approx(0.938508, abs=1e-6)
    assert cimb["ci_high"] - cimb["ci_low"] > 0.7


def test_fpx_banks_sorted_worst_first_and_over_time(fpx: pd.DataFrame) -> None:
    banks = a.fpx_banks(fpx)
    # One rule (the overview's too): worst first by ci_high. Maybank 6/8 (upper 0.928) before
    # CIMB 2/3 (upper 0.939, worse rate but a wider interval); both have fewer than 20
    # finished attempts, so neither is ranked; the test bank (0/2) after the real banks.
    assert banks["fpx_bank_code"].tolist() == ["MB2U0227", "BCBB0235", "TEST0004"]
    assert banks["test_bank"].tolist() == [False, False, True]
    assert banks["ranked"].tolist() == [False, False, False]
    assert banks["rank_note"].tolist() == [
        "fewer than 20 finished attempts",
        "fewer than 20 finished attempts",
        "gateway test bank: ends one fixed way",
    ]
    assert list(banks.columns[:3]) == ["fpx_bank_code", "fpx_bank", "test_bank"]
    # min_attempts=4: Maybank (8 finished) is ranked, CIMB (3) listed after it.
    four = a.fpx_banks(fpx, min_attempts=4)
    assert four["fpx_bank_code"].tolist() == ["MB2U0227", "BCBB0235", "TEST0004"]
    assert four["ranked"].tolist() == [True, False, False]
    assert pd.isna(four.loc[0, "rank_note"])
    # min_attempts=3: both ranked; still by ci_high, the worse rate second.
    three = a.fpx_banks(fpx, min_attempts=3)
    assert three["ranked"].tolist() == [True, True, False]
    assert three["fpx_bank_code"].tolist()[:2] == ["MB2U0227", "BCBB0235"]
    daily = a.fpx_banks(fpx, freq="day", tz="Asia/Kuala_Lumpur")
    assert set(daily.columns) >= {"period", "rate", "ci_low", "n"}
    assert daily.groupby("fpx_bank_code")["attempts"].sum().to_dict() == {
        "BCBB0235": 3, "MB2U0227": 10, "TEST0004": 2,
    }  # fmt: skip


def test_outcome_shares_rows_sum_to_one(fpx: pd.DataFrame) -> None:
    shares = a.fpx_outcome_shares(fpx)
    outcome_cols = list(a.FPX_OUTCOMES)
    assert shares[outcome_cols].sum(axis=1).tolist() == pytest.approx([1.0, 1.0, 1.0])
    # Maybank 6/10 succeeded, 2/10 pending; sorted by success share: CIMB 2/3 first
    assert shares.index[0] == "CIMB Clicks (BCBB0235)"
    assert shares.loc["Maybank2u (MB2U0227)", "pending"] == pytest.approx(0.2)
    assert shares.loc["Test Bank 4 (TEST0004)", "attempts"] == 2


def test_fpx_on_frames_without_fpx(make_payments: Build) -> None:
    cards = make_payments([{"status": "succeeded", "amount": 1}])
    assert a.fpx_banks(cards).empty
    assert a.fpx_outcome_shares(cards).empty


@pytest.mark.parametrize("freq", [None, "day"])
def test_overview_bank_counts_are_fpx_banks(
    fpx: pd.DataFrame, make_payments: Build, freq: str | None
) -> None:
    # The overview counts banks per raw status/outcome/failure code and applies the outcome
    # rule to those groups: the same table as fpx_banks but the medians, on pandas and DuckDB,
    # a bank with no code and a table without FPX included.
    from gwtools.analysis._fpx import bank_table
    from gwtools.cache._scan import connection

    nocode = make_payments(
        [{"method_type": "fpx", "status": "failed", "failure_code": "timeout", "amount": 5}]
    )
    frames = [fpx, pd.concat([fpx, nocode], ignore_index=True), fpx[fpx["method_type"] != "fpx"]]
    for frame in frames:
        for table in (frame, connection().from_df(frame)):
            want = a.fpx_banks(frame, freq=freq, tz="Asia/Kuala_Lumpur")
            got = bank_table(table, freq=freq, tz="Asia/Kuala_Lumpur", medians=False)
            assert got["median_minutes"].isna().all()
            pd.testing.assert_frame_equal(
                got.drop(columns="median_minutes"), want.drop(columns="median_minutes")
            )


def test_funnel_reached_is_cumulative(make_payments: Build) -> None:
    p = make_payments(
        [
            {"status": "pending", "amount": 1},
            {"status": "requires_action", "amount": 1},
            {"status": "authorized", "amount": 1},
            {"status": "succeeded", "amount": 1},
            {"status": "succeeded", "amount": 1},
            {"status": "succeeded", "amount": 1, "refunded_amount": 1},
            {"status": "failed", "amount": 1},
            {"status": "canceled", "amount": 1},
        ]
    )
    f = a.funnel(p).set_index("stage")
    # now: action 2, authorized 1, succeeded 2 (not refunded), refunded 1
    # reached: refunded 1; succeeded 2+1 = 3; authorized 1+3 = 4; action 2+4 = 6; created 8
    assert f["now"].tolist() == [0, 2, 1, 2, 1]
    assert f["reached"].tolist() == [8, 6, 4, 3, 1]
    assert f.loc["created", "exited"] == 2
    assert f.loc["succeeded", "share_of_created"] == pytest.approx(3 / 8)
    assert f.loc["authorized", "step_conversion"] == pytest.approx(4 / 6)
    assert math.isnan(f.loc["created", "step_conversion"])


def test_status_counts_lists_every_status(make_payments: Build) -> None:
    p = make_payments([{"status": "succeeded", "amount": 1}, {"status": "expired", "amount": 1}])
    counts = a.status_counts(p).set_index("status")
    assert len(counts) == 9 and counts["count"].sum() == 2
    assert counts.loc["expired", ["outcome", "count", "share"]].tolist() == ["abandoned", 1, 0.5]


def test_overview_headlines(fpx: pd.DataFrame, make_refunds: Build) -> None:
    refunds = make_refunds([{"payment_id": "pay_1", "amount": 1000}])
    o = a.overview(fpx, refunds, min_attempts=3)
    # decided: 8 succeeded; failed: Maybank 1, TEST0004 2, card 1 = 4 -> 8/12
    assert (o.payments, o.decided) == (16, 12)
    assert o.success_rate == pytest.approx(8 / 12)
    assert o.top_declines[0] == ("processing_error", 2, 0.5)
    # 1 of 8 succeeded refunded; RM10 refunded of 8 x RM10 = RM80 captured -> 0.125
    assert o.refund_rate == pytest.approx(1 / 8)
    assert o.refund_amount_rate == {"MYR": pytest.approx(0.125)}
    # TEST0004 has only 2 finished (< 3) so is not eligible. Ranked by the upper bound:
    # Maybank 6/8 -> ci_high 0.9285 < CIMB 2/3 -> 0.9385: Maybank's best case is the worst,
    # although CIMB's point estimate is lower (3 payments say little).
    assert o.worst_bank is not None and o.worst_bank[0] == "Maybank2u (MB2U0227)"
    # The same bank the FPX table lists first (issue 12: one ranking rule everywhere).
    assert a.fpx_banks(fpx, min_attempts=3).loc[0, "fpx_bank_code"] == "MB2U0227"
    text = str(o)
    assert "success rate     66.7% of 12 decided" in text
    assert "worst FPX bank   Maybank2u (MB2U0227): 75.0% of 8 finished" in text


def test_fpx_median_minutes_take_the_last_update_only_without_a_capture_time(
    make_payments: Build,
) -> None:
    bank = {
        "method_type": "fpx",
        "amount": 1000,
        "fpx_bank_code": "MB2U0227",
        "status": "succeeded",
    }
    t = "2026-11-02T02:"
    p = make_payments(
        [
            {**bank, "created_at": t + "00:00Z", "captured_at": t + "01:00Z", "updated_at": t + "50:00Z"},
            {**bank, "created_at": t + "00:00Z", "captured_at": t + "03:00Z"},
            {**bank, "created_at": t + "00:00Z", "updated_at": t + "09:00Z"},
            {**bank, "created_at": t + "00:00Z"},  # no time to measure: left out
        ]
    )  # fmt: skip
    # 1 (captured, not the 50 of its update), 3, and 9 (no capture time: its update)
    assert a.fpx_banks(p).loc[0, "median_minutes"] == 3.0


def test_overview_top_declines_use_the_reason_rule(
    make_payments: Build, make_refunds: Build
) -> None:
    p = make_payments(
        [
            # reason = decline_code when there is one, else failure_code; failed ones only
            {"amount": 100, "status": "failed", "failure_code": "card_declined", "decline_code": "do_not_honor"},
            {"amount": 100, "status": "failed", "failure_code": "card_declined", "decline_code": "do_not_honor"},
            {"amount": 100, "status": "failed", "failure_code": "card_declined"},
            {"amount": 100, "status": "failed"},
            {"amount": 100, "status": "canceled", "failure_code": "card_declined"},  # not a decline
            {"amount": 100, "status": "succeeded"},
        ]
    )  # fmt: skip
    o = a.overview(p, make_refunds([]))
    # 4 declines: do_not_honor 2, then card_declined 1 and (no code) 1 (ties: by code, no code last)
    assert o.top_declines == [
        ("do_not_honor", 2, 0.5), ("card_declined", 1, 0.25), ("(no code)", 1, 0.25),
    ]  # fmt: skip


def test_overview_top_declines_break_ties_as_decline_breakdown(
    make_payments: Build, make_refunds: Build
) -> None:
    p = make_payments(
        [
            {"amount": 100, "status": "failed", "failure_code": "expired_card", "decline_code": "expired_card"},
            {"amount": 100, "status": "failed", "failure_code": "card_declined", "decline_code": "insufficient_funds"},
            {"amount": 100, "status": "succeeded"},
        ]
    )  # fmt: skip
    # one each: ties go by failure code first (card_declined before expired_card), not by
    # reason (which would put expired_card first), so the headline names the breakdown's top
    o = a.overview(p, make_refunds([]), top=1)
    assert o.top_declines == [("insufficient_funds", 1, 0.5)]
    assert a.decline_breakdown(p)["decline_reason"].tolist() == [
        "insufficient_funds",
        "expired_card",
    ]


def test_overview_never_names_a_test_bank_as_the_worst(
    fpx: pd.DataFrame, make_refunds: Build
) -> None:
    # TEST0004's 0 of 2 is the lowest rate and upper bound of all: eligible by count, still
    # not a bank to talk to.
    o = a.overview(fpx, make_refunds([]), min_attempts=1)
    assert o.worst_bank is not None and o.worst_bank[0] == "Maybank2u (MB2U0227)"


def test_overview_keeps_small_rates_and_rates_near_all_apart_from_none_and_all(
    make_payments: Build, make_refunds: Build
) -> None:
    # 1 decline in 2,500 decided: 99.96% succeeded, printed "100.0%"; 1 refund of 2,499
    # succeeded payments (RM1 of RM24,990): printed "0.0%" twice. The reports and dashboards
    # show such rates as 99.96%, 0.04% and 0.004% (docs/decisions.md).
    payments = make_payments(
        [{"status": "succeeded", "amount": 1000}] * 2499
        + [{"status": "failed", "amount": 1000, "failure_code": "card_declined",
            "decline_code": "lost_card"}]
    )  # fmt: skip
    text = str(a.overview(payments, make_refunds([{"payment_id": "pay_1", "amount": 100}])))
    assert "success rate     99.96% of 2,500 decided" in text, text
    assert "refund rate      0.04% of succeeded payments; by amount MYR 0.004%" in text, text
    # 1 of 200 declines: "(0%)" beside a code that was seen, "(100%)" beside the other.
    declines = make_payments(
        [{"status": "failed", "amount": 1000, "failure_code": "card_declined",
          "decline_code": "generic_decline"}] * 199
        + [{"status": "failed", "amount": 1000, "failure_code": "card_declined",
            "decline_code": "lost_card"}]
    )  # fmt: skip
    text = str(a.overview(declines, make_refunds([])))
    assert "top declines     generic_decline 199 (99.5%), lost_card 1 (0.5%)" in text, text


def test_overview_of_nothing(make_payments: Build, make_refunds: Build) -> None:
    text = str(a.overview(make_payments([]), make_refunds([])))
    assert "payments         0" in text and "n/a" in text and "nan" not in text
