"""Orders, recovery and the acceptance metrics, on a frame whose numbers are counted by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from gwtools import analysis
from tests.toolkit.conftest import build_payments


def _meta(order: str) -> str:
    return f'{{"order_id": "{order}"}}'


@pytest.fixture
def chains() -> pd.DataFrame:
    d = "2026-11-02T"
    fail = {"status": "failed", "failure_code": "card_declined"}
    return build_payments(
        [
            {**fail, "decline_code": "insufficient_funds", "metadata": _meta("A"), "created_at": d + "10:00:00Z", "amount": 900},  # pay_1
            {**fail, "decline_code": "insufficient_funds", "metadata": _meta("A"), "created_at": d + "10:05:00Z", "amount": 900},  # pay_2
            {"status": "succeeded", "metadata": _meta("A"), "created_at": d + "11:00:00Z", "amount": 900},  # pay_3
            {**fail, "decline_code": "lost_card", "metadata": _meta("B"), "amount": 100},  # pay_4
            {**fail, "decline_code": "incorrect_cvc", "metadata": _meta("C"), "created_at": d + "10:00:00Z", "amount": 100},  # pay_5
            {"status": "canceled", "metadata": _meta("C"), "created_at": d + "10:10:00Z", "amount": 100},  # pay_6
            # no order id: customer + amount + currency within 24 h, a success ends the order
            {**fail, "decline_code": "generic_decline", "customer_id": "cus_1", "created_at": d + "09:00:00Z", "amount": 500},  # pay_7
            {"status": "succeeded", "customer_id": "cus_1", "created_at": d + "09:30:00Z", "amount": 500},  # pay_8
            {"status": "succeeded", "customer_id": "cus_1", "created_at": d + "09:40:00Z", "amount": 500},  # pay_9
            {**fail, "decline_code": "generic_decline", "customer_id": "cus_2", "created_at": d + "00:00:00Z", "amount": 700},  # pay_10
            {"status": "succeeded", "customer_id": "cus_2", "created_at": "2026-11-04T00:00:00Z", "amount": 700},  # pay_11
            {"status": "succeeded", "amount": 700},  # pay_12: nothing to group by
            {"status": "requires_action", "metadata": _meta("D"), "amount": 300},  # pay_13
            {"status": "canceled", "metadata": _meta("E"), "amount": 300},  # pay_14
        ]
    )  # fmt: skip


def test_order_key_rule(chains: pd.DataFrame) -> None:
    keys = analysis.order_key(chains).tolist()
    assert keys[:3] == ["order:A"] * 3
    assert keys[6:9] == ["customer:pay_7", "customer:pay_7", "customer:pay_9"]
    assert keys[9:12] == ["customer:pay_10", "customer:pay_11", "payment:pay_12"]
    # a shorter window splits the customer's chain
    assert analysis.order_key(chains, window="10min").tolist()[7] == "customer:pay_8"


def test_orders(chains: pd.DataFrame) -> None:
    orders = analysis.orders(chains).set_index("order")
    assert len(orders) == 10
    a = orders.loc["order:A"]
    assert (a["attempts"], a["first_outcome"], a["final_outcome"]) == (3, "failed", "succeeded")
    assert a["first_decline_reason"] == "insufficient_funds" and a["recovered"]
    assert a["minutes_to_recovery"] == 60
    assert orders.loc["customer:pay_7", "minutes_to_recovery"] == 30
    c = orders.loc["order:C"]
    assert (c["final_outcome"], c["recovered"], c["first_decline_type"]) == (
        "abandoned",
        False,
        "soft",
    )
    assert orders.loc["order:D", "final_outcome"] == "open"
    assert orders["recovered"].sum() == 2


def test_recovery_per_reason(chains: pd.DataFrame) -> None:
    table = analysis.recovery(chains).set_index("decline_reason")
    counts = table[["orders", "retried", "recovered"]].to_dict("index")
    assert counts == {
        "generic_decline": {"orders": 2, "retried": 1, "recovered": 1},
        "insufficient_funds": {"orders": 1, "retried": 1, "recovered": 1},
        "incorrect_cvc": {"orders": 1, "retried": 1, "recovered": 0},
        "lost_card": {"orders": 1, "retried": 0, "recovered": 0},
    }
    assert table.loc["generic_decline", "rate"] == 0.5
    assert table.loc["generic_decline", "after_retry_rate"] == 1.0
    low, high = analysis.wilson_interval(1, 2)
    assert table.loc["generic_decline", "ci_low"] == pytest.approx(low)
    assert table.loc["generic_decline", "ci_high"] == pytest.approx(high)
    assert table.loc["lost_card", "decline_type"] == "hard"
    assert not table.loc["lost_card", "retry_advised"]
    assert table.loc["insufficient_funds", "retry_advised"]
    assert table.loc["lost_card", "advice"] == analysis.RETRY_ADVICE["lost_card"]
    assert table.index[-1] == "lost_card"  # soft first, then hard


def test_recovery_per_type(chains: pd.DataFrame) -> None:
    table = analysis.recovery(chains, by="decline_type").set_index("decline_type")
    assert table.loc["soft", ["orders", "retried", "recovered"]].tolist() == [4, 3, 2]
    assert table.loc["hard", ["orders", "retried", "recovered"]].tolist() == [1, 0, 0]
    assert table.loc["soft", "median_minutes_to_recovery"] == 45  # 60 and 30 minutes


def test_acceptance_metrics(chains: pd.DataFrame) -> None:
    table = analysis.acceptance(chains)
    got = {(r.metric, r.unit): (r.successes, r.n) for r in table.itertuples()}
    # attempts: 5 succeeded, 6 failed, 2 canceled, 1 open
    # orders: 5 won (A, cus_1 twice, cus_2's second, pay_12) of 8 with a decided attempt;
    # 9 finished (D is still open)
    assert got == {
        ("authorization_rate", "attempt"): (5, 11),
        ("authorization_rate", "order"): (5, 8),
        ("acceptance_rate", "attempt"): (5, 13),
        ("conversion", "order"): (5, 9),
    }
    assert table["rate"].tolist() == pytest.approx([5 / 11, 5 / 8, 5 / 13, 5 / 9])
    low, _ = analysis.wilson_interval(5, 13)
    assert table.loc[2, "ci_low"] == pytest.approx(low)


def test_acceptance_by_group(chains: pd.DataFrame) -> None:
    chains.loc[chains["id"] == "pay_3", "method_type"] = "fpx"  # order A stays a card order
    table = analysis.acceptance(chains, by="method_type")
    fpx = table[table["method_type"] == "fpx"]
    # an order belongs to its first attempt's group: no order started on FPX, whose order
    # metrics are 0 of 0 (four rows per group, as for every group)
    assert fpx[["unit", "successes", "n"]].to_numpy().tolist() == [
        ["attempt", 1, 1],
        ["order", 0, 0],
        ["attempt", 1, 1],
        ["order", 0, 0],
    ]
    assert fpx["rate"].isna().tolist() == [False, True, False, True]
    card = table[(table["method_type"] == "card") & (table["unit"] == "order")]
    assert card[["successes", "n"]].to_numpy().tolist() == [[5, 8], [5, 9]]


def _engines(frame: pd.DataFrame) -> dict[str, object]:
    """The frame on pandas and as a lazy DuckDB table (the order rules run in each engine)."""
    from gwtools.cache._scan import connection

    return {"pandas": frame, "duckdb": connection().from_df(frame)}


@pytest.fixture
def ties() -> pd.DataFrame:
    t = "2026-11-02T10:00:00Z"
    fail = {"status": "failed", "failure_code": "card_declined"}
    return build_payments(
        [
            # order T: two attempts at one instant; ids decide (pay_1 first, pay_2 last)
            {**fail, "decline_code": "do_not_honor", "metadata": _meta("T"), "created_at": t, "card_brand": None, "amount": 100},  # pay_1
            {"status": "requires_action", "metadata": _meta("T"), "created_at": t, "card_brand": "visa", "amount": 100},  # pay_2
            # order U: the same instant, the other way round: the open attempt comes first
            {"status": "requires_action", "metadata": _meta("U"), "created_at": t, "amount": 100},  # pay_3
            {**fail, "decline_code": "do_not_honor", "metadata": _meta("U"), "created_at": t, "amount": 100},  # pay_4
        ]
    )  # fmt: skip


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_orders_tie_at_one_instant_broken_by_id(ties: pd.DataFrame, engine: str) -> None:
    orders = analysis.orders(_engines(ties)[engine]).set_index("order")
    t, u = orders.loc["order:T"], orders.loc["order:U"]
    assert (t["first_payment_id"], t["first_outcome"], t["final_outcome"]) == (
        "pay_1",
        "failed",
        "open",
    )
    assert (u["first_payment_id"], u["first_outcome"], u["final_outcome"]) == (
        "pay_3",
        "open",
        "failed",
    )
    # the first attempt's brand is null: it stays null (not the later attempt's visa)
    assert pd.isna(t["card_brand"])
    assert t["first_decline_reason"] == "do_not_honor" and pd.isna(u["first_decline_reason"])


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_acceptance_last_attempt_at_a_tie(ties: pd.DataFrame, engine: str) -> None:
    table = analysis.acceptance(_engines(ties)[engine], freq="day", tz="UTC")
    got = {(r.metric, r.unit): (r.successes, r.n) for r in table.itertuples()}
    # T's last attempt (pay_2) is open: T is not finished; U's (pay_4) failed: U is.
    # Both orders had a decided attempt.
    assert got[("conversion", "order")] == (0, 1)
    assert got[("authorization_rate", "order")] == (0, 2)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_acceptance_has_four_rows_in_every_period(engine: str) -> None:
    d = "2026-11-0"
    payments = build_payments(
        [
            {"status": "succeeded", "method_type": "card", "amount": 900, "created_at": d + "1T10:00:00Z"},
            {"status": "failed", "failure_code": "bank_declined", "method_type": "fpx", "amount": 900, "created_at": d + "2T10:00:00Z"},
            {"status": "succeeded", "method_type": "card", "amount": 900, "created_at": d + "3T10:00:00Z"},
        ]
    )  # fmt: skip
    table = analysis.acceptance(_engines(payments)[engine], by="method_type", freq="day", tz="UTC")
    # 2 methods x 3 days x 4 metrics; a day without a method's payments is 0 of 0 for each
    assert len(table) == 24
    per = table.groupby(["method_type", "period"]).size()
    assert per.tolist() == [4] * 6
    fpx = table[table["method_type"] == "fpx"]
    assert fpx["n"].tolist() == [0] * 4 + [1] * 4 + [0] * 4
    assert fpx["unit"].tolist()[:4] == ["attempt", "order", "attempt", "order"]


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_recovery_first_attempt_at_a_tie(ties: pd.DataFrame, engine: str) -> None:
    table = analysis.recovery(_engines(ties)[engine], by="card_brand")
    # only T's first attempt failed; its brand is null (pay_2's visa is not its first's)
    assert table[["orders", "retried", "recovered"]].to_numpy().tolist() == [[1, 1, 0]]
    assert table["card_brand"].isna().all()


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_an_order_id_that_is_also_a_payment_id_is_another_order(engine: str) -> None:
    # Orders are grouped by (rule, key): an order id spelled like a payment id, a customer
    # chain's first payment and a payment alone are three orders, not one.
    d = "2026-11-02T"
    payments = build_payments(
        [
            {"status": "failed", "failure_code": "card_declined", "created_at": d + "09:00:00Z"},  # pay_1: alone
            {"status": "succeeded", "metadata": _meta("pay_1"), "created_at": d + "09:10:00Z"},  # pay_2
            {"status": "failed", "failure_code": "card_declined", "customer_id": "cus_1", "created_at": d + "09:20:00Z", "amount": 500},  # pay_3
            {"status": "succeeded", "metadata": _meta("pay_3"), "created_at": d + "09:30:00Z"},  # pay_4
        ]
    )  # fmt: skip
    table = _engines(payments)[engine]
    orders = analysis.orders(table).set_index("order")
    assert orders.index.tolist() == [
        "customer:pay_3",
        "order:pay_1",
        "order:pay_3",
        "payment:pay_1",
    ]
    assert orders["attempts"].tolist() == [1, 1, 1, 1]
    assert orders["final_outcome"].tolist() == ["failed", "succeeded", "succeeded", "failed"]
    got = analysis.acceptance(table)
    conversion = got[(got["metric"] == "conversion") & (got["unit"] == "order")]
    assert conversion[["successes", "n"]].to_numpy().tolist() == [[2, 4]]
    # neither failed order was won back by the success that shares its id's spelling
    assert analysis.recovery(table, by="decline_type")["recovered"].tolist() == [0]
