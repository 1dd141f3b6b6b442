"""Refund analyses on hand-made frames; the arithmetic is in the comments."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from gwtools import analysis as a
from gwtools.cache._scan import connection

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


@pytest.fixture
def frames(make_payments: Build, make_refunds: Build) -> tuple[pd.DataFrame, pd.DataFrame]:
    payments = make_payments(
        [
            # week of Mon 2 Nov (MYT)
            {"status": "succeeded", "amount": 10000, "created_at": "2026-11-02T02:00:00Z",
             "captured_at": "2026-11-02T02:00:00Z"},  # pay_1 RM100, refunded in full
            {"status": "succeeded", "amount": 5000, "created_at": "2026-11-03T02:00:00Z",
             "captured_at": "2026-11-03T02:00:00Z", "method_type": "fpx",
             "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"},  # pay_2 RM50, RM10 partial pending
            {"status": "succeeded", "amount": 2000, "created_at": "2026-11-04T02:00:00Z",
             "captured_at": "2026-11-04T02:00:00Z"},  # pay_3 RM20, its refund failed
            {"status": "failed", "amount": 9900, "created_at": "2026-11-04T03:00:00Z"},  # pay_4 not in base
            # week of Mon 9 Nov
            {"status": "succeeded", "amount": 4000, "created_at": "2026-11-10T02:00:00Z",
             "captured_at": "2026-11-10T02:00:00Z"},  # pay_5 RM40, not refunded
        ]
    )  # fmt: skip
    refunds = make_refunds(
        [
            {"payment_id": "pay_1", "amount": 6000, "reason": "requested_by_customer",
             "created_at": "2026-11-03T02:00:00Z"},  # 1 day after capture
            {"payment_id": "pay_1", "amount": 4000, "reason": "duplicate",
             "created_at": "2026-11-11T02:00:00Z"},  # week 2 by refund date; 9 days
            {"payment_id": "pay_2", "amount": 1000, "status": "pending",
             "reason": "requested_by_customer", "created_at": "2026-11-06T03:00:00Z"},  # Fri
            {"payment_id": "pay_3", "amount": 2000, "status": "failed", "reason": "fraudulent",
             "created_at": "2026-11-05T02:00:00Z"},
        ]
    )  # fmt: skip
    return payments, refunds


def test_refund_rate_payment_cohort(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    payments, refunds = frames
    total = a.refund_rate(payments, refunds).iloc[0]
    # succeeded: pay_1, pay_2, pay_3, pay_5 = 4; refunded (failed refunds excluded): pay_1, pay_2 = 2
    assert (total["payments"], total["refunded_payments"], total["rate"]) == (4, 2, 0.5)
    # amount: (60 + 40 + 10) / (100 + 50 + 20 + 40) = 110 / 210
    assert total["refunded_amount"] == 110.0 and total["captured_amount"] == 210.0
    assert total["amount_rate"] == pytest.approx(110 / 210)
    assert 0 < total["ci_low"] < 0.5 < total["ci_high"] < 1


@pytest.mark.parametrize(
    "said",
    [
        {"pay_1": 10000, "pay_2": 1000},  # the gateway's refunded_amount agrees with the refunds
        {"pay_1": 10000},  # pay_2's lags (its pending refund is not in it yet)
        {"pay_1": 10000, "pay_2": 1000, "pay_5": 500},  # pay_5's says more than its refunds
    ],
)
def test_refund_rate_counts_the_refunds_not_refunded_amount(
    frames: tuple[pd.DataFrame, pd.DataFrame], said: dict[str, int]
) -> None:
    # refund_rate narrows its join with each payment's refunded_amount; the refunds still
    # decide: the same 2 of 4 and 110 of 210 as above, whatever refunded_amount says.
    payments, refunds = frames
    payments = payments.assign(refunded_amount=payments["id"].map(said).fillna(0).astype("Int64"))
    total = a.refund_rate(payments, refunds).iloc[0]
    assert (total["payments"], total["refunded_payments"]) == (4, 2)
    assert total["refunded_amount"] == 110.0 and total["captured_amount"] == 210.0


def test_refund_rate_cohorts_differ_by_week(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    payments, refunds = frames
    tz = "Asia/Kuala_Lumpur"
    cohort = a.refund_rate(payments, refunds, freq="week", tz=tz)
    # payment cohort: week 2 Nov: pay_1, pay_2, pay_3 -> 2 of 3 refunded, RM110 of RM170;
    # week 9 Nov: pay_5 -> 0 of 1.
    assert cohort["payments"].tolist() == [3, 1]
    assert cohort["refunded_payments"].tolist() == [2, 0]
    assert cohort["amount_rate"].tolist() == pytest.approx([110 / 170, 0.0])
    by_refund = a.refund_rate(payments, refunds, freq="week", tz=tz, cohort="refund")
    # refund date: week 2 Nov: RM60 (pay_1) + RM10 pending (pay_2) = 2 refunds, RM70 vs RM170;
    # week 9 Nov: RM40 (pay_1's second refund) vs pay_5's RM40 -> 1 refund / 1 payment, 100%.
    assert by_refund["refunds"].tolist() == [2, 1]
    assert by_refund["rate"].tolist() == pytest.approx([2 / 3, 1.0])
    assert by_refund["amount_rate"].tolist() == pytest.approx([70 / 170, 1.0])
    assert by_refund["ci_low"].isna().all()  # a ratio, not a proportion: no interval


def test_refund_rate_by_method_and_bad_cohort(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    payments, refunds = frames
    by = a.refund_rate(payments, refunds, by="method_type").set_index("method_type")
    # card: pay_1, pay_3, pay_5 -> 1 of 3; fpx: pay_2 -> 1 of 1
    assert by.loc["card", "rate"] == pytest.approx(1 / 3)
    assert by.loc["fpx", "rate"] == 1.0
    with pytest.raises(ValueError, match="cohort"):
        a.refund_rate(payments, refunds, cohort="capture")  # type: ignore[arg-type]


def test_refunds_by_reason_and_partial_vs_full(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    payments, refunds = frames
    reasons = a.refunds_by_reason(refunds, locale="en_MY").set_index("reason")
    # non-failed: requested_by_customer 2 (RM60 + RM10), duplicate 1 (RM40); fraudulent: 1 failed
    assert reasons["count"].to_dict() == {
        "requested_by_customer": 2,
        "duplicate": 1,
        "fraudulent": 0,
    }
    assert reasons["failed"].to_dict() == {
        "requested_by_customer": 0,
        "duplicate": 0,
        "fraudulent": 1,
    }
    assert reasons.loc["requested_by_customer", "amount"] == "RM70.00"
    assert reasons.loc["requested_by_customer", "share"] == pytest.approx(2 / 3)
    kinds = a.partial_vs_full(payments, refunds).set_index("kind")
    # pay_1: 60 + 40 = 100 = its amount -> full; pay_2: 10 of 50 -> partial
    assert kinds["payments"].to_dict() == {"full": 1, "partial": 1}
    assert kinds.loc["full", "amount_MYR"] == 100.0


def test_time_to_refund_from_capture(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    payments, refunds = frames
    times = a.time_to_refund(payments, refunds).set_index("method_type")
    # card refunds: 1 day and 9 days -> median 5, p90 = 1 + 0.9·8 = 8.2, max 9
    assert times.loc["card", "refunds"] == 2
    assert times.loc["card", ["median_days", "p90_days", "max_days"]].tolist() == pytest.approx(
        [5, 8.2, 9]
    )
    # fpx: captured Tue 3 Nov 02:00, refund Fri 6 Nov 03:00 -> 3 days 1 hour
    assert times.loc["fpx", "median_days"] == pytest.approx(3 + 1 / 24)


def test_pending_refund_age_in_business_days(frames: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    payments, refunds = frames
    pending = a.pending_refunds(
        payments, refunds, now="2026-11-10T00:00:00Z", tz="Asia/Kuala_Lumpur"
    )
    assert pending["id"].tolist() == ["rfnd_3"]
    row = pending.iloc[0]
    # Fri 6 Nov 11:00 MYT -> Tue 10 Nov 08:00 MYT: 3 days 21 hours; business days Mon + Tue = 2
    assert row["age_days"] == pytest.approx(3 + 21 / 24)
    assert row["age_business_days"] == 2
    assert row["expected_business_days"] == 5 and not row["overdue"]
    assert row["amount_text"] == "RM10.00"
    late = a.pending_refunds(payments, refunds, now="2026-11-16T00:00:00Z", tz="Asia/Kuala_Lumpur")
    # by Mon 16 Nov: 9, 10, 11, 12, 13, 16 Nov = 6 business days > 5 -> overdue
    assert late.loc[0, "age_business_days"] == 6 and bool(late.loc[0, "overdue"])


def test_card_refunds_have_no_overdue_verdict(make_payments: Build, make_refunds: Build) -> None:
    p = make_payments([{"status": "succeeded", "amount": 100}])
    r = make_refunds([{"payment_id": "pay_1", "amount": 100, "status": "pending"}])
    row = a.pending_refunds(p, r, now=pd.Timestamp("2026-12-01", tz="UTC")).iloc[0]
    assert pd.isna(row["overdue"]) and pd.isna(row["expected_business_days"])


def test_refunds_on_empty_frames(make_payments: Build, make_refunds: Build) -> None:
    p, r = make_payments([]), make_refunds([])
    total = a.refund_rate(p, r)
    assert total.empty or math.isnan(total["rate"].iloc[0])
    assert a.refund_rate(p, r, freq="day", cohort="refund").empty
    assert a.refunds_by_reason(r).empty
    assert a.partial_vs_full(p, r).empty
    assert a.time_to_refund(p, r).empty
    assert a.pending_refunds(p, r).empty
    # succeeded payments but no refunds: rate 0, not NaN
    ok = a.refund_rate(make_payments([{"status": "succeeded", "amount": 100}]), r)
    assert ok["rate"].tolist() == [0.0]


def test_refund_of_unknown_payment_is_kept(make_payments: Build, make_refunds: Build) -> None:
    p = make_payments([{"status": "succeeded", "amount": 100}])
    r = make_refunds([{"payment_id": "pay_elsewhere", "amount": 50}])
    details = a.refund_details(p, r)
    assert details["id"].tolist() == ["rfnd_1"] and details["method_type"].isna().all()
    assert a.time_to_refund(p, r)["refunds"].tolist() == [1]


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
@pytest.mark.parametrize("cohort", ["payment", "refund"])
def test_a_payment_of_no_currency_has_no_major_amounts(
    make_payments: Build, make_refunds: Build, engine: str, cohort: str
) -> None:
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 1000},  # pay_1 RM10
            {"status": "succeeded", "amount": 3000, "currency": None},  # its record had none
        ]
    )
    refunds = make_refunds([{"payment_id": "pay_1", "amount": 250}])  # RM2.50
    if engine == "duckdb":
        payments, refunds = connection().from_df(payments), connection().from_df(refunds)
    table = a.refund_rate(payments, refunds, cohort=cohort)
    count = "refunded_payments" if cohort == "payment" else "refunds"
    myr = table[table["currency"].eq("MYR").fillna(False).astype(bool)].iloc[0]
    assert (myr["payments"], myr[count], myr["captured_amount"]) == (1, 1, 10.0)
    assert (myr["refunded_amount"], myr["amount_rate"]) == (2.5, 0.25)
    none = table[table["currency"].isna()].iloc[0]
    assert (none["payments"], none[count]) == (1, 0)  # counted, with no amount in major units
    assert none[["captured_amount", "refunded_amount", "amount_rate"]].isna().all()


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_refund_in_another_currency_is_not_added_to_its_payments(
    make_payments: Build, make_refunds: Build, engine: str
) -> None:
    """A refund whose currency is not its payment's, or that has none (data problems
    `quality` reports), is never added to, or compared with, the payment's amount: ¥800 is
    not RM8.00. The payment cohort counts a payment's refunds in its own currency."""
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 1000},  # pay_1 RM10.00
            {"status": "succeeded", "amount": 800},  # pay_2 RM8.00
            {"status": "succeeded", "amount": 300},  # pay_3 RM3.00
            {"status": "succeeded", "amount": 500},  # pay_4 RM5.00
        ]
    )
    refunds = make_refunds(
        [
            {"payment_id": "pay_1", "amount": 250},  # RM2.50: partial
            {"payment_id": "pay_2", "amount": 800, "currency": "JPY"},  # ¥800
            {"payment_id": "pay_3", "amount": 300, "currency": None},  # in no currency
            {"payment_id": "pay_4", "amount": 500},  # RM5.00: full
            {"payment_id": "pay_4", "amount": 100, "currency": "JPY"},  # and ¥100
        ]
    )
    if engine == "duckdb":
        payments, refunds = connection().from_df(payments), connection().from_df(refunds)
    rate = a.refund_rate(payments, refunds)
    assert rate["currency"].tolist() == ["MYR"]
    row = rate.iloc[0]
    # refunded in ringgit: pay_1 (RM2.50) and pay_4 (RM5.00); the ¥100 is not RM1.00
    assert (row["payments"], row["refunded_payments"]) == (4, 2)
    assert (row["captured_amount"], row["refunded_amount"]) == (26.0, 7.5)
    assert row["amount_rate"] == pytest.approx(7.5 / 26)
    split = a.partial_vs_full(payments, refunds)  # only pay_1's refunds are all in ringgit
    assert split["kind"].tolist() == ["partial"] and split["payments"].tolist() == [1]
    assert split["amount_MYR"].tolist() == [2.5] and "amount_JPY" not in split
    kinds = a.refund_details(payments, refunds).set_index("id")["kind"]
    assert kinds["rfnd_1"] == "partial" and kinds[["rfnd_2", "rfnd_3", "rfnd_4"]].isna().all()
    assert a.overview(payments, refunds).refund_amount_rate == {"MYR": pytest.approx(7.5 / 26)}


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_refund_of_an_unknown_status_moves_no_money(
    make_payments: Build, make_refunds: Build, engine: str
) -> None:
    """Only succeeded and pending refunds move money. A status gwtools does not know (kept
    as ``unknown``, e.g. a gateway's canceled refund) is not counted by the refund analyses,
    as the quality rules do not count it against the refunded amount."""
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 1000},  # pay_1 RM10.00
            {"status": "succeeded", "amount": 3000},  # pay_2 RM30.00
        ]
    )
    refunds = make_refunds(
        [
            {"payment_id": "pay_1", "amount": 1000, "status": "unknown"},  # canceled: nothing
            {"payment_id": "pay_2", "amount": 600, "status": "pending"},  # RM6.00
            {"payment_id": "pay_2", "amount": 400, "status": "succeeded"},  # RM4.00
        ]
    )
    if engine == "duckdb":
        payments, refunds = connection().from_df(payments), connection().from_df(refunds)
    row = a.refund_rate(payments, refunds).iloc[0]
    assert (row["payments"], row["refunded_payments"]) == (2, 1)  # pay_2 only
    assert (row["captured_amount"], row["refunded_amount"]) == (40.0, 10.0)
    live = a.effective_refunds(refunds)
    ids = live["id"] if isinstance(live, pd.DataFrame) else live.df()["id"]
    assert sorted(ids) == ["rfnd_2", "rfnd_3"]
    split = a.partial_vs_full(payments, refunds)  # pay_2: RM10 of RM30; pay_1 not refunded
    assert split["kind"].tolist() == ["partial"] and split["payments"].tolist() == [1]
