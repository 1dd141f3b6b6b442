"""Declines on the ten hand-made payments of ``declines_frame`` (conftest.py).

Failed: pay_3 insufficient_funds RM20, pay_4 insufficient_funds RM30, pay_5 lost_card ¥1,000,
pay_6 expired_card RM40, pay_7 processing_error (FPX, no decline code) RM60.
Succeeded: pay_1 RM100, pay_2 RM50, pay_10 RM25 (FPX). Not decided: pay_8 canceled, pay_9 requires_action.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from gwtools import analysis as a

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


def test_breakdown_counts_shares_amounts_in_pareto_order(declines_frame: pd.DataFrame) -> None:
    table = a.decline_breakdown(declines_frame, locale="en_MY")
    rows = list(
        zip(
            table["decline_reason"],
            table["failure_code"],
            table["decline_code"].fillna("-"),
            table["count"],
            strict=True,
        )
    )
    # 5 failed, one row per reason: insufficient_funds 2 first; ties (1 each) in code order
    # (failure code, then decline code).
    assert rows == [
        ("insufficient_funds", "card_declined", "insufficient_funds", 2),
        ("lost_card", "card_declined", "lost_card", 1),
        ("expired_card", "expired_card", "expired_card", 1),
        ("processing_error", "processing_error", "-", 1),
    ]
    assert table["share"].tolist() == pytest.approx([0.4, 0.2, 0.2, 0.2])
    assert table["cumulative_share"].tolist() == pytest.approx([0.4, 0.6, 0.8, 1.0])
    # insufficient_funds: RM20 + RM30 = RM50; lost_card: ¥1,000 kept apart.
    assert table.loc[0, "amount_MYR"] == 50.0 and table.loc[0, "amount_JPY"] == 0.0
    assert table.loc[1, "amount"] == "JP¥1,000"
    assert table["decline_type"].tolist() == ["soft", "hard", "hard", "soft"]
    assert table.loc[1, "advice"].startswith("do not retry")


def test_breakdown_by_code_pair_splits_a_reason(declines_frame: pd.DataFrame) -> None:
    table = a.decline_breakdown(declines_frame, by=("failure_code", "decline_code"))
    rows = list(
        zip(table["failure_code"], table["decline_code"].fillna("-"), table["count"], strict=True)
    )
    assert rows == [
        ("card_declined", "insufficient_funds", 2),
        ("card_declined", "lost_card", 1),
        ("expired_card", "expired_card", 1),
        ("processing_error", "-", 1),
    ]
    assert table["decline_type"].tolist() == ["soft", "hard", "hard", "soft"]


def test_a_reason_counts_the_same_in_breakdown_types_and_overview(
    make_payments: Build, make_refunds: Build
) -> None:
    # Issue 12: 3 FPX time-outs (failure processing_error, no decline code) and 2 card
    # declines with decline code processing_error are one reason, 5, everywhere.
    fpx = {"status": "failed", "amount": 100, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
           "failure_code": "processing_error"}  # fmt: skip
    card = {"status": "failed", "amount": 100, "card_brand": "visa",
            "failure_code": "card_declined", "decline_code": "processing_error"}  # fmt: skip
    lost = {"status": "failed", "amount": 100, "card_brand": "visa",
            "failure_code": "card_declined", "decline_code": "lost_card"}  # fmt: skip
    p = make_payments([fpx, fpx, fpx, card, card, lost, lost, lost, lost])
    table = a.decline_breakdown(p)
    assert table["decline_reason"].tolist() == ["processing_error", "lost_card"]
    assert table["count"].tolist() == [5, 4]
    assert table.loc[0, "failure_code"] == "card_declined, processing_error"
    assert table.loc[0, "decline_code"] == "processing_error"
    assert table["decline_type"].tolist() == ["soft", "hard"]
    summary = a.overview(p, make_refunds([]))
    assert summary.top_declines[:2] == [("processing_error", 5, 5 / 9), ("lost_card", 4, 4 / 9)]
    types = a.decline_types(p).set_index("decline_type")["count"].to_dict()
    assert types == {"soft": 5, "hard": 4}


def test_decline_types_soft_vs_hard(declines_frame: pd.DataFrame) -> None:
    types = a.decline_types(declines_frame, locale="en_MY").set_index("decline_type")
    # soft: 2 x insufficient_funds + processing_error = 3 of 5; hard: lost + expired = 2 of 5
    assert types["count"].to_dict() == {"soft": 3, "hard": 2}
    assert types.loc["soft", "share"] == pytest.approx(0.6)
    assert types.loc["soft", "retry"] == "yes" and types.loc["hard", "retry"] == "no"
    # soft MYR: 20 + 30 + 60 = 110; hard MYR: 40, hard JPY 1,000
    assert types.loc["soft", "amount_MYR"] == 110.0
    assert (types.loc["hard", "amount_MYR"], types.loc["hard", "amount_JPY"]) == (40.0, 1000.0)


def test_classify_uses_failure_code_when_no_decline_code(declines_frame: pd.DataFrame) -> None:
    failed = a.classify_declines(declines_frame).set_index("id")
    assert failed.loc["pay_7", "decline_reason"] == "processing_error"
    assert failed.loc["pay_7", "decline_type"] == "soft"
    assert bool(failed.loc["pay_7", "retry"]) is True
    assert bool(failed.loc["pay_5", "retry"]) is False


def test_unclassified_code_gets_no_retry_verdict(make_payments: Build) -> None:
    p = make_payments([{"status": "failed", "amount": 1, "failure_code": "do_not_honor"}])
    failed = a.classify_declines(p)
    assert failed["decline_type"].tolist() == ["unclassified"]
    assert failed["retry"].isna().all()
    assert a.decline_types(p)["retry"].tolist() == ["check the code"]


@pytest.mark.parametrize(
    ("code", "says"),
    [
        ("invalid_number", "card number was mistyped"),
        ("invalid_expiry_month", "expiry month was mistyped"),
        ("invalid_expiry_year", "expiry year was mistyped or has passed"),
        ("live_mode_test_card", "test card was used with a live key"),
    ],
)
def test_card_details_refused_get_their_own_advice(
    make_payments: Build, code: str, says: str
) -> None:
    """Codes of card details refused before the issuer (a gateway may store such payments as
    failed) are neither soft nor hard declines, but say what to do."""
    p = make_payments([{"status": "failed", "amount": 1, "failure_code": code}])
    row = a.decline_breakdown(p).iloc[0]
    assert row["decline_reason"] == code and row["decline_type"] == "unclassified"
    assert says in row["advice"]


def test_decline_rate_counts_only_decided_payments(declines_frame: pd.DataFrame) -> None:
    total = a.decline_rate(declines_frame).iloc[0]
    # decided = 3 succeeded + 5 failed = 8 (canceled and requires_action left out) -> 5/8
    assert (total["attempts"], total["n"], total["failed"]) == (10, 8, 5)
    assert total["rate"] == pytest.approx(0.625)
    by_method = a.decline_rate(declines_frame, by="method_type").set_index("method_type")
    # card: 4 failed / (2 succeeded + 4 failed) = 2/3; fpx: 1 / (1 + 1) = 0.5
    assert by_method.loc["card", "rate"] == pytest.approx(2 / 3)
    assert by_method.loc["fpx", "rate"] == 0.5
    assert (by_method["ci_low"] <= by_method["rate"]).all()
    assert (by_method["rate"] <= by_method["ci_high"]).all()


def test_decline_rate_by_brand_keeps_null_brand(declines_frame: pd.DataFrame) -> None:
    brands = a.decline_rate(declines_frame, by="card_brand")
    rate = {
        (b if isinstance(b, str) else None): r
        for b, r in zip(brands["card_brand"], brands["rate"], strict=True)
    }
    # visa: pay_3, pay_6 failed; pay_1, pay_2 succeeded -> 2/4; mastercard 2/2; FPX (no brand) 1/2
    assert rate == {"visa": 0.5, "mastercard": 1.0, None: 0.5}


def test_decline_rate_by_amount_band_is_per_currency(declines_frame: pd.DataFrame) -> None:
    bands = a.decline_rate(declines_frame, by="amount_band")
    got = {
        (c, str(b)): (n, r)
        for c, b, n, r in bands[["currency", "amount_band", "n", "rate"]].itertuples(index=False)
    }
    # MYR 10–50: pay_3 f, pay_4 f, pay_6 f, pay_10 s (pay_8, pay_9 undecided) -> 3/4
    # MYR 50–100: pay_2 s (50.00, left-closed), pay_7 f -> 1/2; MYR 100–500: pay_1 s -> 0/1
    # JPY 1,000–5,000: pay_5 f -> 1/1
    assert got == {
        ("MYR", "10–50"): (4, 0.75),
        ("MYR", "50–100"): (2, 0.5),
        ("MYR", "100–500"): (1, 0.0),
        ("JPY", "1,000–5,000"): (1, 1.0),
    }


def test_declines_on_empty_and_all_succeeded(make_payments: Build) -> None:
    empty = make_payments([])
    assert a.decline_breakdown(empty).empty
    assert a.decline_types(empty).empty
    ok = make_payments([{"status": "succeeded", "amount": 100}])
    assert a.decline_breakdown(ok).empty
    assert a.decline_rate(ok).loc[0, "rate"] == 0.0
