"""Data-quality rules: each one broken once, by hand, in a small frame.

Every case runs on pandas and on a lazy DuckDB table (the engines' paths differ: the lazy one
counts every rule in one pass and looks refunds up again only for a broken rule's examples).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from gwtools import analysis
from gwtools.cache._scan import connection
from tests.toolkit.conftest import build_payments, build_refunds


@pytest.fixture(params=["pandas", "duckdb"])
def engine(request: pytest.FixtureRequest) -> Any:
    """Turns a pandas table into the parametrised engine's table."""
    if request.param == "pandas":
        return lambda frame: frame
    return lambda frame: connection().from_df(frame)


def _quality(engine: Any, payments: pd.DataFrame, refunds: pd.DataFrame, **kw: Any) -> Any:
    return analysis.quality(engine(payments), engine(refunds), **kw).set_index("rule")


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


def test_each_rule_finds_its_row(engine: Any) -> None:
    payments, refunds = _tables()
    state = {"payments": {"complete": False}, "refunds": {"complete": True}}
    table = _quality(engine, payments, refunds, completeness=state)
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
    # rows looked at: one per id (8 payment rows, 7 ids; 9 refund rows, 8 ids, 7 with a
    # cached payment); the ids rules count rows; every payment in one hour
    assert table["checked"].to_dict() == {
        "refunded_amount_matches_refunds": 7,
        "refunded_flag_matches_amounts": 7,
        "refund_payment_cached": 8,
        "captured_flag_matches_status": 7,
        "refund_currency_matches_payment": 7,
        "refunds_within_captured_amount": 5,
        "payment_ids_unique": 8,
        "refund_ids_unique": 9,
        "no_hourly_holes": 1,
        "last_sync_complete": 2,
    }


def test_clean_tables_pass_and_completeness_is_optional(engine: Any) -> None:
    payments, refunds = _tables()
    payments = payments[payments["id"].isin(["pay_1", "pay_6", "pay_7"])].drop_duplicates("id")
    refunds = refunds[refunds["payment_id"].isin(["pay_1", "pay_7"])].drop_duplicates("id")
    table = _quality(engine, payments, refunds)
    assert table["ok"].all() and "last_sync_complete" not in set(table.index)
    assert _quality(engine, payments, refunds, completeness=True)["ok"].all()


def test_a_dataset_no_sync_completed_fails_the_last_sync_rule(engine: Any) -> None:
    """Its state is empty (a first sync killed, or a resource never synced): its rows are
    partial. A whole empty mapping (tables from no cache) still says nothing."""
    payments, refunds = _tables()
    done = {"last_full_sync": "2026-11-01T00:00:00+00:00", "completeness": {"complete": True}}
    table = _quality(engine, payments, refunds, completeness={"payments": done, "refunds": {}})
    rule = table.loc["last_sync_complete"]
    assert not rule["ok"] and rule["examples"] == ["refunds"] and rule["checked"] == 2
    both = _quality(engine, payments, refunds, completeness={"payments": {}, "refunds": {}})
    assert both.loc["last_sync_complete", "examples"] == ["payments", "refunds"]
    assert "last_sync_complete" not in set(
        _quality(engine, payments, refunds, completeness={}).index
    )


def test_empty_tables_pass(engine: Any) -> None:
    table = _quality(engine, build_payments([]), build_refunds([]))
    assert table["ok"].all() and (table["checked"] == 0).all()


def test_a_payment_without_an_id_is_one_id(engine: Any) -> None:
    # next to a refund whose payment is missing (whose joined row has no payment id either)
    payments = build_payments(
        [{"id": "pay_1", "status": "failed", "amount": 100},
         {"id": None, "status": "failed", "amount": 200}]
    )  # fmt: skip
    refunds = build_refunds([{"id": "rfnd_1", "payment_id": "pay_9", "amount": 50}])
    table = _quality(engine, payments, refunds)
    assert table.loc["payment_ids_unique", ["checked", "count"]].tolist() == [2, 0]
    assert table.loc["refunded_amount_matches_refunds", "checked"] == 2
    assert table.loc["refund_payment_cached", ["checked", "count"]].tolist() == [1, 1]


# A payment's refunds in two currencies: the wrong one sorts after the payment's currency
# (MYR < USD), or before it; each case on its own, as the other would reveal it anyway.
@pytest.mark.parametrize(("currency", "wrong"), [("MYR", "USD"), ("USD", "EUR")])
def test_a_refund_in_another_currency_among_right_ones(
    engine: Any, currency: str, wrong: str
) -> None:
    ok = {"status": "succeeded", "captured": True, "amount": 1000, "currency": currency}
    payments = build_payments(
        [
            {**ok, "id": "pay_1", "refunded_amount": 300, "refunded": False},
            {**ok, "id": "pay_2", "refunded_amount": 100, "refunded": False},
            {**ok, "id": "pay_3", "refunded_amount": 0, "refunded": False},
        ]
    )
    refunds = build_refunds(
        [
            {"id": "rfnd_1", "payment_id": "pay_1", "amount": 100, "currency": currency},
            {"id": "rfnd_2", "payment_id": "pay_1", "amount": 200, "currency": wrong},
            # the code's letter case does not matter
            {"id": "rfnd_3", "payment_id": "pay_2", "amount": 100, "currency": currency.lower()},
        ]
    )
    table = _quality(engine, payments, refunds)
    rule = table.loc["refund_currency_matches_payment"]
    assert (rule["checked"], rule["count"], rule["examples"]) == (3, 1, ["rfnd_2"])
    assert table.drop(index="refund_currency_matches_payment")["ok"].all()
    assert table.loc["refunds_within_captured_amount", "checked"] == 2  # pay_1, pay_2


def test_refunds_of_payments_not_cached(engine: Any) -> None:
    payments = build_payments(
        [{"id": "pay_1", "status": "succeeded", "captured": True, "amount": 1000,
          "refunded_amount": 100, "refunded": False}]
    )  # fmt: skip
    refunds = build_refunds(
        [
            {"id": "rfnd_1", "payment_id": "pay_1", "amount": 100},
            {"id": "rfnd_9", "payment_id": "pay_8", "amount": 50},
            {"id": "rfnd_8", "payment_id": "pay_8", "amount": 20, "status": "failed"},
            {"id": "rfnd_7", "payment_id": "pay_9", "amount": 70, "currency": "USD"},
        ]
    )
    table = _quality(engine, payments, refunds)
    missing = table.loc["refund_payment_cached"]
    assert (missing["checked"], missing["count"]) == (4, 3)
    assert missing["examples"] == ["rfnd_7", "rfnd_8", "rfnd_9"]  # smallest first
    # only refunds with a cached payment are held to its currency
    currency = table.loc["refund_currency_matches_payment"]
    assert (currency["checked"], currency["count"]) == (1, 0)
    assert table.drop(index="refund_payment_cached")["ok"].all()


def test_payment_rules_count_every_broken_payment(engine: Any) -> None:
    ok = {"status": "succeeded", "captured": True, "amount": 1000, "refunded": False}
    payments = build_payments(
        [
            # refunds sum to more than recorded, and more than captured (partial capture)
            {**ok, "id": "pay_1", "refunded_amount": 200, "extra": '{"amount_captured": 300}'},
            # refunded_amount 0, yet a live refund: captured amount read all the same
            {**ok, "id": "pay_2", "refunded_amount": 0, "extra": '{"amount_captured": 50}'},
            # fully refunded by amount, flag not set; a pending payment marked captured
            {**ok, "id": "pay_3", "refunded_amount": 1000},
            {**ok, "id": "pay_4", "status": "pending", "refunded_amount": 0},
            # unknown status: not held to the captured flag
            {**ok, "id": "pay_5", "status": "unknown", "refunded_amount": 0},
            {**ok, "id": "pay_6", "captured": None, "refunded_amount": 0},
        ]
    )
    refunds = build_refunds(
        [
            {"id": "rfnd_1", "payment_id": "pay_1", "amount": 400},
            {"id": "rfnd_2", "payment_id": "pay_2", "amount": 60, "status": "pending"},
            {"id": "rfnd_3", "payment_id": "pay_3", "amount": 1000},
        ]
    )
    table = _quality(engine, payments, refunds)
    got = {rule: (row["checked"], row["count"], row["examples"]) for rule, row in table.iterrows()}
    assert got["refunded_amount_matches_refunds"] == (6, 2, ["pay_1", "pay_2"])
    assert got["refunded_flag_matches_amounts"] == (6, 1, ["pay_3"])
    assert got["captured_flag_matches_status"] == (5, 2, ["pay_4", "pay_6"])
    assert got["refunds_within_captured_amount"] == (3, 2, ["pay_1", "pay_2"])


def test_hourly_holes(engine: Any) -> None:
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
    rows.append({"status": "succeeded", "amount": 100, "created_at": None})  # no time: no hour
    table = _quality(engine, build_payments(rows), build_refunds([]))
    assert table.loc["no_hourly_holes", "count"] == 1
    assert table.loc["no_hourly_holes", "examples"] == ["2026-11-03 10:00 to 12:00"]
    # hours from the first payment's (2 Nov 00:00) to the last one's (4 Nov 23:56)
    assert table.loc["no_hourly_holes", "checked"] == 72
    assert table.loc["refunded_amount_matches_refunds", "checked"] == len(rows)


def test_the_hour_a_clock_change_skips_is_no_hole(engine: Any) -> None:
    # 30 payments every hour around New York's 8 March 2026, when 02:00-03:00 never happened
    # (its hour of the day has 30 + 0 + 30 over three days: 20 expected, enough for a hole)
    start = pd.Timestamp("2026-03-07T05:00:00Z")
    rows = [
        {"status": "succeeded", "amount": 100, "created_at": start + pd.Timedelta(minutes=2 * i)}
        for i in range(30 * 71)
    ]
    table = _quality(engine, build_payments(rows), build_refunds([]), tz="America/New_York")
    assert table.loc["no_hourly_holes", "ok"], table.loc["no_hourly_holes", "examples"]
    # a real silent hour there is still found
    silent = [r for r in rows if not start + pd.Timedelta(hours=30) <= r["created_at"]
              < start + pd.Timedelta(hours=32)]  # fmt: skip
    table = _quality(engine, build_payments(silent), build_refunds([]), tz="America/New_York")
    assert table.loc["no_hourly_holes", "examples"] == ["2026-03-08 07:00 to 09:00"]  # EDT


def test_hourly_holes_in_local_time(engine: Any) -> None:
    # 15 payments an hour over three UTC days but 16:00-18:00 UTC on the first: midnight to
    # 02:00 on 3 Nov in Kuala Lumpur (UTC+8), where 10 an hour are usual at that time
    rows = [
        {"status": "succeeded", "amount": 100, "created_at": f"2026-11-0{day}T{h:02d}:{m:02d}:00Z"}
        for day in (2, 3, 4)
        for h in range(24)
        if not (day == 2 and h in (16, 17))
        for m in range(0, 60, 4)
    ]
    table = _quality(engine, build_payments(rows), build_refunds([]), tz="Asia/Kuala_Lumpur")
    assert table.loc["no_hourly_holes", "examples"] == ["2026-11-03 00:00 to 02:00"]


def test_a_hole_past_midnight_says_the_day_it_ends(engine: Any) -> None:
    # 15 payments an hour, 2-6 Nov UTC, none on 3 and 4 Nov: 48 silent hours, ending on the
    # 5th; and none from 20:00 on the 5th (20:00-24:00 have 30 / 5 days = 6 an hour usual,
    # 24 over the four hours: a hole), ending at 00:00 on the 6th
    rows = [
        {"status": "succeeded", "amount": 100, "created_at": f"2026-11-0{d}T{h:02d}:{m:02d}:00Z"}
        for d in (2, 3, 4, 5, 6)
        for h in range(24)
        if d not in (3, 4) and not (d == 5 and h >= 20)
        for m in range(0, 60, 4)
    ]
    table = _quality(engine, build_payments(rows), build_refunds([]))
    assert table.loc["no_hourly_holes", "examples"] == [
        "2026-11-03 00:00 to 2026-11-05 00:00",
        "2026-11-05 20:00 to 2026-11-06 00:00",
    ]
