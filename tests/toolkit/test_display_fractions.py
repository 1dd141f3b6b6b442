"""Which columns are fractions, shown as percentages by the dashboards and the report (their
saved tables keep the fractions): one rule for both, by column name."""

from __future__ import annotations

import pandas as pd
import pytest

from gwtools.analysis._rates import is_fraction
from gwtools.widgets._dashboard import _for_display

FRACTIONS = [
    "rate", "ci_low", "ci_high", "share", "cumulative_share", "amount_rate",
    "share_of_created", "step_conversion",
    # add_rate(name=...)'s rate and interval, and shares named for what they share
    "after_retry_rate", "after_retry_rate_ci_low", "after_retry_rate_ci_high", "card_share",
]  # fmt: skip
NOT_FRACTIONS = [
    "attempts", "n", "orders", "amount", "amount_major", "captured_amount", "refunded_amount",
    "median_minutes_to_recovery", "days_to_refund", "observed", "expected", "limit",
    "rate_note", "rank_note", "ratelimit", "shares", "",
]  # fmt: skip


@pytest.mark.parametrize("column", FRACTIONS)
def test_rates_shares_and_their_intervals_are_fractions(column: str) -> None:
    assert is_fraction(column)


@pytest.mark.parametrize("column", NOT_FRACTIONS)
def test_counts_money_times_and_notes_are_not(column: str) -> None:
    assert not is_fraction(column)


def test_a_column_name_that_is_not_text_is_not_a_fraction() -> None:
    assert not is_fraction(0) and not is_fraction(("rate", "x"))


def test_a_dashboard_table_shows_fractions_as_percentages_and_the_rest_as_numbers() -> None:
    table = pd.DataFrame(
        {
            "orders": [4, 0],
            "after_retry_rate": [0.5, float("nan")],
            "captured_amount": [1234.5, 2.0],
        }
    )
    shown = _for_display(table, "UTC")
    assert shown["after_retry_rate"].tolist() == ["50.0%", ""]
    assert shown["captured_amount"].tolist() == ["1,234.50", "2.00"]
    assert shown["orders"].tolist() == [4, 0]
