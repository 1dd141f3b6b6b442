"""Data-quality rules: each one broken once, by hand, in a small frame."""

from __future__ import annotations

import pandas as pd

from gwtools import analysis
from tests.toolkit.conftest import build_payments, build_refunds


def _tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    ok = {"status": "succeeded", "captured": True, "amount": 1000}
    payments = build_payments(
        [
            {**ok, "id": "pay_1", "refunded_amount": 500, "refunded": False},
            {**ok, "id": "pay_2", "refunded_amount": 300, "refunded": False},  # refunds say 200
            {**ok, "id": "pay_3", "refunded_amount": 1000, "refunded": False},  # fully refunded
            {"id": "pay_4", "status": "failed", "captured": True, "amount": 1000,
             "refunded_amount": 0, "refunded": False},  # captured yet failed
            {**ok, "id": "pay_5", "refunded_amount": 1200, "refunded": True},  # over-refunded
            {**ok, "id": "pay_6", "refunded_amount": 0, "refunded": False},
            {**ok, "id": "pay_6", "refunded_amount": 0, "refunded": False},  # same id twice
            # partial capture: the gateway's amount_captured (in extra) is what counts
            {**ok, "id": "pay_7", "refunded_amount": 600, "refunded": True,
             "extra": '{"amount_captured": 600}'},
        ]
    )  # fmt: skip
    refunds = build_refunds(
        [
            {"id": "rfnd_1", "payment_id": "pay_1", "amount": 400},
            {"id": "rfnd_2", "payment_id": "pay_1", "amount": 100, "status": "pending"},
            {"id": "rfnd_3", "payment_id": "pay_2", "amount": 200},
            {"id": "rfnd_4", "payment_id": "pay_3", "amount": 1000},
            {"id": "rfnd_5", "payment_id": "pay_5", "amount": 1200, "currency": "USD"},
            {"id": "rfnd_6", "payment_id": "pay_99", "amount": 100},  # payment not cached
            {"id": "rfnd_7", "payment_id": "pay_1", "amount": 900, "status": "failed"},
            {"id": "rfnd_7", "payment_id": "pay_1", "amount": 900, "status": "failed"},
            {"id": "rfnd_8", "payment_id": "pay_7", "amount": 600},
        ]
    )
    return payments, refunds


def test_each_rule_finds_its_row() -> None:
    payments, refunds = _tables()
    state = {"payments": {"complete": False}, "refunds": {"complete": True}}
    table = analysis.quality(payments, refunds, completeness=state).set_index("rule")
    assert list(table.index) == list(analysis.QUALITY_RULES)
    found = table["examples"].to_dict()
    assert found == {
        "refunded_amount_matches_refunds": ["pay_2"],
        "refunded_flag_matches_amounts": ["pay_3"],
        "refund_payment_cached": ["rfnd_6"],
        "captured_flag_matches_status": ["pay_4"],
        "refund_currency_matches_payment": ["rfnd_5"],
        "refunds_within_captured_amount": ["pay_5"],
        "payment_ids_unique": ["pay_6"],
        "refund_ids_unique": ["rfnd_7"],
        "no_hourly_holes": [],
        "last_sync_complete": ["payments"],
    }
    assert table["count"].sum() == 9
    assert table.loc["refunds_within_captured_amount", "checked"] == 5  # pay_1, 2, 3, 5, 7
    assert not table.loc["payment_ids_unique", "ok"] and table.loc["no_hourly_holes", "ok"]


def test_clean_tables_pass_and_completeness_is_optional() -> None:
    payments, refunds = _tables()
    payments = payments[payments["id"].isin(["pay_1", "pay_6", "pay_7"])].drop_duplicates("id")
    refunds = refunds[refunds["payment_id"].isin(["pay_1", "pay_7"])].drop_duplicates("id")
    table = analysis.quality(payments, refunds)
    assert table["ok"].all() and "last_sync_complete" not in set(table["rule"])
    assert analysis.quality(payments, refunds, completeness=True)["ok"].all()


def test_hourly_holes() -> None:
    rows = []
    for day in (2, 3, 4):
        for hour in range(24):
            if day == 3 and hour in (10, 11):
                continue  # two silent hours where 15 payments an hour are usual
            if day == 4 and hour == 15:
                continue  # one silent hour: 10 expected, not enough to call it a hole
            for minute in range(0, 60, 4):
                rows.append(
                    {
                        "status": "succeeded",
                        "amount": 100,
                        "created_at": f"2026-11-0{day}T{hour:02d}:{minute:02d}:00Z",
                    }
                )
    table = analysis.quality(build_payments(rows), build_refunds([])).set_index("rule")
    assert table.loc["no_hourly_holes", "count"] == 1
    assert table.loc["no_hourly_holes", "examples"] == ["2026-11-03 10:00 to 12:00"]
