"""One cache, three engines: the shipped sample cache plus hand-made edge rows, read as pandas
(``read_cache``), as lazy DuckDB tables (``scan_cache``) and as Spark DataFrames
(``spark.read.parquet`` of the dataset folders), once per session.

The edge rows add what the sample lacks: a second currency (JPY, no decimals), a failure with
no code, refunds with no reason and a failed one, a payment 30 minutes before local midnight in
Kuala Lumpur, an FPX payment of an unnamed bank, and orders without an order id (customer
chains), with a numeric order id and with metadata that is not JSON.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import gwtools
from gwtools.cache._dataset import Dataset
from tests.toolkit.conftest import build_payments, build_refunds

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample-cache" / "sandbox" / "test"

EDGE_PAYMENTS = [
    {"id": "pay_edge_jpy", "status": "succeeded", "amount": 12000, "currency": "JPY",
     "card_brand": "visa", "created_at": "2026-10-02T15:30:00Z",
     "captured_at": "2026-10-02T15:31:00.500000Z", "refunded_amount": 12000, "refunded": True},
    {"id": "pay_edge_jpy_failed", "status": "failed", "amount": 800, "currency": "JPY",
     "card_brand": "mastercard", "failure_code": "card_declined", "decline_code": "lost_card",
     "created_at": "2026-10-03T01:00:00Z"},
    {"id": "pay_edge_nocode", "status": "failed", "amount": 4321, "card_brand": "visa",
     "created_at": "2026-10-04T02:00:00Z"},
    {"id": "pay_edge_midnight", "status": "succeeded", "amount": 999, "card_brand": "amex",
     "created_at": "2026-11-01T15:30:00Z", "captured_at": "2026-11-01T15:30:30.250000Z"},
    {"id": "pay_edge_fpx_unnamed", "status": "failed", "amount": 5000, "method_type": "fpx",
     "fpx_bank_code": "XYZ0001", "failure_code": "processing_error",
     "created_at": "2026-11-02T04:00:00Z"},
    # Orders without an order id: one customer's chain (ended by a success, then a new one),
    # a chain broken by a gap over 24 hours; a numeric order id; metadata that is not JSON.
    {"id": "pay_edge_c1", "status": "failed", "amount": 1500, "card_brand": "visa",
     "failure_code": "card_declined", "decline_code": "generic_decline", "customer_id": "cus_e1",
     "metadata": None, "created_at": "2026-10-09T01:00:00Z"},
    {"id": "pay_edge_c2", "status": "succeeded", "amount": 1500, "card_brand": "visa",
     "customer_id": "cus_e1", "metadata": None, "created_at": "2026-10-09T01:20:00Z",
     "captured_at": "2026-10-09T01:20:01.000000Z"},
    {"id": "pay_edge_c3", "status": "succeeded", "amount": 1500, "card_brand": "visa",
     "customer_id": "cus_e1", "metadata": None, "created_at": "2026-10-09T01:25:00Z",
     "captured_at": "2026-10-09T01:25:01.000000Z"},
    {"id": "pay_edge_g1", "status": "failed", "amount": 700, "card_brand": "mastercard",
     "failure_code": "card_declined", "decline_code": "insufficient_funds",
     "customer_id": "cus_e2", "metadata": None, "created_at": "2026-10-10T00:00:00Z"},
    {"id": "pay_edge_g2", "status": "succeeded", "amount": 700, "card_brand": "mastercard",
     "customer_id": "cus_e2", "metadata": None, "created_at": "2026-10-12T00:00:00Z",
     "captured_at": "2026-10-12T00:00:02.000000Z"},
    {"id": "pay_edge_n1", "status": "failed", "amount": 300, "card_brand": "visa",
     "failure_code": "card_declined", "decline_code": "incorrect_cvc",
     "metadata": '{"order_id": 42}', "created_at": "2026-10-11T00:00:00Z"},
    {"id": "pay_edge_n2", "status": "succeeded", "amount": 300, "card_brand": "visa",
     "metadata": '{"order_id": 42}', "created_at": "2026-10-11T00:03:00Z",
     "captured_at": "2026-10-11T00:03:01.000000Z"},
    {"id": "pay_edge_bad", "status": "succeeded", "amount": 300, "card_brand": "visa",
     "metadata": '{"order_id": ', "created_at": "2026-10-11T00:04:00Z",
     "captured_at": "2026-10-11T00:04:01.000000Z"},
]  # fmt: skip

EDGE_REFUNDS = [
    {"id": "rfnd_edge_jpy", "payment_id": "pay_edge_jpy", "amount": 12000, "currency": "JPY",
     "created_at": "2026-10-05T00:00:00Z"},
    {"id": "rfnd_edge_noreason", "payment_id": "pay_edge_midnight", "amount": 100,
     "status": "pending", "created_at": "2026-11-03T00:00:00Z"},
    {"id": "rfnd_edge_failed", "payment_id": "pay_edge_midnight", "amount": 899,
     "status": "failed", "reason": "duplicate", "created_at": "2026-11-03T01:00:00Z"},
    {"id": "rfnd_edge_orphan", "payment_id": "pay_not_cached", "amount": 50,
     "reason": "fraudulent", "created_at": "2026-11-04T00:00:00Z"},
]  # fmt: skip


@pytest.fixture(scope="session")
def engine_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compacted cache (one file per month): the sample plus the edge rows."""
    root = tmp_path_factory.mktemp("engine-cache") / "cache"
    shutil.copytree(SAMPLE, root / "acct" / "test")
    for resource, rows, build in (
        ("payments", EDGE_PAYMENTS, build_payments),
        ("refunds", EDGE_REFUNDS, build_refunds),
    ):
        frame = build(rows)
        frame["id"] = pd.array([r["id"] for r in rows], dtype="string")
        dataset = Dataset.at(root, "acct", "test", resource)  # type: ignore[arg-type]
        dataset.compact(dataset.write_batch(frame))
    return root


@pytest.fixture(scope="session")
def tables(engine_cache: Path, spark: Any) -> Iterator[dict[str, tuple[Any, Any]]]:
    """``{"pandas" | "duckdb" | "spark": (payments, refunds)}`` over the one cache."""
    folder = engine_cache / "acct" / "test"
    yield {
        "pandas": (
            gwtools.read_cache(engine_cache, "payments"),
            gwtools.read_cache(engine_cache, "refunds"),
        ),
        "duckdb": (
            gwtools.scan_cache(engine_cache, "payments"),
            gwtools.scan_cache(engine_cache, "refunds"),
        ),
        "spark": (
            spark.read.parquet(str(folder / "payments")),
            spark.read.parquet(str(folder / "refunds")),
        ),
    }
