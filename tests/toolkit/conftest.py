"""Fixtures of the toolkit tests: small canonical frames built by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import matplotlib
import pandas as pd
import pytest

from gwtools._schema import PAYMENT_OUTCOME, conform
from gwtools.analysis import to_major

# No display needed. Not MPLBACKEND: an environment variable would reach every kernel and
# Voila server the suite starts, and ipykernel skips its inline backend when it is set.
matplotlib.use("Agg")

Rows = list[dict[str, Any]]


def build_payments(rows: Rows) -> pd.DataFrame:
    """Canonical payments from partial rows: ``outcome`` and ``amount_major`` derived the
    way the library derives them, defaults for the rest (MYR card, 2 Nov 2026 02:00 UTC)."""
    defaults = {"currency": "MYR", "method_type": "card", "created_at": "2026-11-02T02:00:00Z"}
    frame = pd.DataFrame(
        [{"id": f"pay_{i}", **defaults, **row} for i, row in enumerate(rows, 1)],
        columns=None,
    )
    if frame.empty:
        frame = pd.DataFrame({"id": pd.Series([], dtype="string")})
        return conform(frame, "payments")
    frame["outcome"] = frame["status"].map(PAYMENT_OUTCOME).fillna("unknown")
    frame["amount_major"] = to_major(frame["amount"].astype("Int64"), frame["currency"])
    return conform(frame, "payments")


def build_refunds(rows: Rows) -> pd.DataFrame:
    """Canonical refunds from partial rows (MYR, succeeded, 5 Nov 2026 02:00 UTC by default)."""
    defaults = {"currency": "MYR", "status": "succeeded", "created_at": "2026-11-05T02:00:00Z"}
    frame = pd.DataFrame([{"id": f"rfnd_{i}", **defaults, **row} for i, row in enumerate(rows, 1)])
    if frame.empty:
        return conform(pd.DataFrame({"id": pd.Series([], dtype="string")}), "refunds")
    frame["amount_major"] = to_major(frame["amount"].astype("Int64"), frame["currency"])
    return conform(frame, "refunds")


@pytest.fixture
def make_payments() -> Callable[[Rows], pd.DataFrame]:
    return build_payments


@pytest.fixture
def make_refunds() -> Callable[[Rows], pd.DataFrame]:
    return build_refunds


@pytest.fixture
def declines_frame() -> pd.DataFrame:
    """Ten payments; the numbers in test_declines.py are computed by hand from these."""
    return build_payments(
        [
            {"status": "succeeded", "amount": 10000, "card_brand": "visa"},  # pay_1 100.00
            {"status": "succeeded", "amount": 5000, "card_brand": "visa"},  # pay_2 50.00
            {"status": "failed", "amount": 2000, "card_brand": "visa",
             "failure_code": "card_declined", "decline_code": "insufficient_funds"},  # pay_3
            {"status": "failed", "amount": 3000, "card_brand": "mastercard",
             "failure_code": "card_declined", "decline_code": "insufficient_funds"},  # pay_4
            {"status": "failed", "amount": 1000, "currency": "JPY", "card_brand": "mastercard",
             "failure_code": "card_declined", "decline_code": "lost_card"},  # pay_5 ¥1,000
            {"status": "failed", "amount": 4000, "card_brand": "visa",
             "failure_code": "expired_card", "decline_code": "expired_card"},  # pay_6
            {"status": "failed", "amount": 6000, "method_type": "fpx",
             "fpx_bank_code": "MB2U0227", "failure_code": "processing_error"},  # pay_7
            {"status": "canceled", "amount": 1000, "card_brand": "visa"},  # pay_8
            {"status": "requires_action", "amount": 1000, "card_brand": "visa"},  # pay_9
            {"status": "succeeded", "amount": 2500, "method_type": "fpx",
             "fpx_bank_code": "MB2U0227"},  # pay_10
        ]
    )  # fmt: skip
