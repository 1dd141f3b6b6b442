"""The analyses given a pandas frame the way a notebook holds one: category columns
(``astype("category")`` to save memory), an index made from a column (``set_index("id",
drop=False)``), pandas' pyarrow-backed dtypes (``read_parquet(dtype_backend="pyarrow")``), naive
timestamps.

Each form of the same rows gives the canonical frame's result (or a ConfigurationError naming the
column, for naive times), never an engine's own error, and the user's frame is never changed.
A filter (``between``, ``effective_refunds``) returns the user's rows as they were: their dtypes
and their index's name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from gwtools import ConfigurationError
from gwtools import analysis as a
from tests.toolkit.conftest import build_payments, build_refunds

PAYMENTS = [
    {"status": "succeeded", "amount": 1000, "card_brand": "visa", "customer_id": "cus_1",
     "created_at": "2026-11-02T02:00:00Z", "captured_at": "2026-11-02T02:01:00Z",
     "refunded_amount": 1000, "refunded": True},
    {"status": "failed", "amount": 500, "card_brand": "visa", "customer_id": "cus_2",
     "failure_code": "card_declined", "decline_code": "insufficient_funds",
     "created_at": "2026-11-02T03:00:00Z"},
    {"status": "succeeded", "amount": 500, "card_brand": "visa", "customer_id": "cus_2",
     "created_at": "2026-11-02T03:10:00Z"},
    {"status": "failed", "amount": 700, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
     "failure_code": "processing_error", "created_at": "2026-11-03T05:00:00Z"},
]  # fmt: skip
REFUNDS = [
    {"payment_id": "pay_1", "amount": 1000, "reason": "requested_by_customer"},
    {"payment_id": "pay_3", "amount": 500, "status": "failed"},
]


def _category(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for name in out.columns:
        if out[name].dtype == "string":
            out[name] = out[name].astype("category")
    return out


def _id_index(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.set_index("id", drop=False)


def _pyarrow(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.convert_dtypes(dtype_backend="pyarrow")


FORMS: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "category": _category,
    "id_index": _id_index,
    "pyarrow": _pyarrow,
}

CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "acceptance": lambda p, r: a.acceptance(p, by="method_type"),
    "classify_declines": lambda p, r: a.classify_declines(p).reset_index(drop=True),
    "decline_breakdown": lambda p, r: a.decline_breakdown(p),
    "decline_rate": lambda p, r: a.decline_rate(p, by="card_brand", freq="day"),
    "decline_types": lambda p, r: a.decline_types(p),
    "fpx_banks": lambda p, r: a.fpx_banks(p, min_attempts=1),
    "fpx_outcome_shares": lambda p, r: a.fpx_outcome_shares(p),
    "funnel": lambda p, r: a.funnel(p),
    "monitor": lambda p, r: a.monitor(p, r, until="2026-11-04"),
    "orders": lambda p, r: a.orders(p),
    "overview": lambda p, r: repr(a.overview(p, r, min_attempts=1)),
    "partial_vs_full": lambda p, r: a.partial_vs_full(p, r),
    "quality": lambda p, r: a.quality(p, r),
    "recovery": lambda p, r: a.recovery(p),
    "refund_details": lambda p, r: a.refund_details(p, r),
    "refund_rate": lambda p, r: a.refund_rate(p, r, freq="month"),
    "refunds_by_reason": lambda p, r: a.refunds_by_reason(r),
    "time_to_refund": lambda p, r: a.time_to_refund(p, r),
}


@pytest.fixture(scope="module")
def canonical() -> tuple[pd.DataFrame, pd.DataFrame]:
    return build_payments(PAYMENTS), build_refunds(REFUNDS)


def _same(got: Any, want: Any) -> None:
    if isinstance(want, pd.DataFrame):
        pd.testing.assert_frame_equal(got, want)
    else:
        assert got == want


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", CALLS)
def test_a_notebook_form_of_the_frame_gives_the_canonical_result_untouched(
    canonical: tuple[pd.DataFrame, pd.DataFrame], form: str, name: str
) -> None:
    payments, refunds = (FORMS[form](t) for t in canonical)
    before = payments.copy(deep=True), refunds.copy(deep=True)
    _same(CALLS[name](payments, refunds), CALLS[name](*canonical))
    pd.testing.assert_frame_equal(payments, before[0])
    pd.testing.assert_frame_equal(refunds, before[1])


@pytest.mark.parametrize("wrap", ["DataFrame", "LazyFrame"])
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", CALLS)
def test_a_notebook_form_in_a_narwhals_frame_gives_the_canonical_result(
    canonical: tuple[pd.DataFrame, pd.DataFrame], form: str, name: str, wrap: str
) -> None:
    # The analyses take a Narwhals frame over pandas, but only a bare pandas frame had its
    # categories, id index or pyarrow dtypes made plain: the same frame in nw.from_native()
    # was refused as "Categorical, not text", or failed with pandas' "'id' is both an index
    # level and a column label" or pyarrow's "overflow".
    import narwhals as nw

    tables = [nw.from_native(FORMS[form](t)) for t in canonical]
    payments, refunds = (t.lazy() if wrap == "LazyFrame" else t for t in tables)
    _same(CALLS[name](payments, refunds), CALLS[name](*canonical))


@pytest.mark.parametrize("wrap", ["bare", "DataFrame", "LazyFrame"])
@pytest.mark.parametrize("name", CALLS)
def test_a_pyarrow_table_gives_the_canonical_result(
    canonical: tuple[pd.DataFrame, pd.DataFrame], name: str, wrap: str
) -> None:
    # pq.read_table() or a DuckDB result's .arrow(): on Narwhals' pyarrow backend 6 of these
    # 18 analyses failed ("'pyarrow.lib.Table' object has no attribute 'copy'", Narwhals'
    # "Non-trivial complex aggregation found"), and the others ran on an engine no test held.
    import narwhals as nw
    import pyarrow as pa

    tables = [pa.Table.from_pandas(t, preserve_index=False) for t in canonical]
    if wrap != "bare":
        tables = [nw.from_native(t) for t in tables]
        tables = [t.lazy() if wrap == "LazyFrame" else t for t in tables]
    _same(CALLS[name](*tables), CALLS[name](*canonical))


@pytest.mark.parametrize("wrap", ["bare", "DataFrame", "LazyFrame"])
def test_a_filter_of_a_pyarrow_table_returns_a_pyarrow_table_of_its_schema(
    canonical: tuple[pd.DataFrame, pd.DataFrame], wrap: str
) -> None:
    import narwhals as nw
    import pyarrow as pa

    payments, refunds = (pa.Table.from_pandas(t, preserve_index=False) for t in canonical)
    given: dict[str, Any] = {"payments": payments, "refunds": refunds}
    if wrap != "bare":
        given = {k: nw.from_native(t) for k, t in given.items()}
        if wrap == "LazyFrame":
            given = {k: t.lazy() for k, t in given.items()}
    # Payments of 2 November: the first three; refunds: the failed one is not effective.
    cases = [
        (a.between(given["payments"], "2026-11-02", "2026-11-02"), payments, ["pay_1", "pay_2", "pay_3"]),
        (a.effective_refunds(given["refunds"]), refunds, ["rfnd_1"]),
    ]  # fmt: skip
    for kept, table, ids in cases:
        if wrap == "LazyFrame":
            kept = kept.collect()
        native = kept.to_native() if wrap != "bare" else kept
        assert isinstance(native, pa.Table)
        assert native.schema == table.schema
        assert native.column("id").to_pylist() == ids


@pytest.mark.parametrize("form", FORMS)
def test_the_hand_computed_rates_hold_for_every_form(
    canonical: tuple[pd.DataFrame, pd.DataFrame], form: str
) -> None:
    payments, refunds = (FORMS[form](t) for t in canonical)
    # 4 decided payments, 2 failed; 1 of 2 successes refunded (the failed refund does not count)
    rate = a.decline_rate(payments)
    assert (rate["n"].iloc[0], rate["rate"].iloc[0]) == (4, 0.5)
    refund = a.refund_rate(payments, refunds)
    assert refund["rate"].iloc[0] == 0.5
    # pay_2 failed then pay_3 succeeded for the same customer within the window: recovered
    card = a.recovery(payments, by="method_type").set_index("method_type").loc["card"]
    assert (card["orders"], card["recovered"]) == (1, 1)


@pytest.mark.parametrize("form", FORMS)
def test_a_filter_returns_the_users_rows_as_they_were(
    canonical: tuple[pd.DataFrame, pd.DataFrame], form: str
) -> None:
    payments, refunds = (FORMS[form](t) for t in canonical)
    kept = a.between(payments, "2026-11-03")
    pd.testing.assert_frame_equal(kept, payments.iloc[[3]])
    live = a.effective_refunds(refunds)
    pd.testing.assert_frame_equal(live, refunds.iloc[[0]])
    assert a.classify_declines(payments).index.names == payments.index.names


@pytest.mark.parametrize("wrap", ["DataFrame", "LazyFrame"])
@pytest.mark.parametrize("form", FORMS)
def test_a_filter_of_a_narwhals_frame_returns_the_users_rows_as_they_were(
    canonical: tuple[pd.DataFrame, pd.DataFrame], form: str, wrap: str
) -> None:
    # Read as the bare frame is, a Narwhals frame over pandas came back from between and
    # effective_refunds with the plain dtypes (category -> string, no id index name).
    import narwhals as nw

    payments, refunds = (FORMS[form](t) for t in canonical)
    for call, given, rows in (
        (lambda t: a.between(t, "2026-11-03"), payments, [3]),
        (a.effective_refunds, refunds, [0]),
    ):
        frame = nw.from_native(given)
        kept = call(frame.lazy() if wrap == "LazyFrame" else frame)
        assert isinstance(kept, nw.LazyFrame if wrap == "LazyFrame" else nw.DataFrame)
        native = kept.collect() if isinstance(kept, nw.LazyFrame) else kept
        pd.testing.assert_frame_equal(native.to_native(), given.iloc[rows])


@pytest.mark.parametrize(
    "call",
    [
        lambda p, r: a.monitor(p, r),
        lambda p, r: a.quality(p, r),
        lambda p, r: a.refund_details(p, r),
        lambda p, r: a.orders(p),
    ],
    ids=["monitor", "quality", "refund_details", "orders"],
)
def test_naive_timestamps_are_refused_naming_the_column(
    canonical: tuple[pd.DataFrame, pd.DataFrame], call: Callable[[Any, Any], Any]
) -> None:
    payments, refunds = (t.copy() for t in canonical)
    payments["created_at"] = payments["created_at"].dt.tz_localize(None)
    with pytest.raises(ConfigurationError, match="column 'created_at' holds naive timestamps"):
        call(payments, refunds)


def test_naive_pyarrow_timestamps_are_refused_not_read_as_utc(
    canonical: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    # A pyarrow-backed frame (read_parquet(dtype_backend="pyarrow") of naive times): the cast
    # to the canonical dtype read its times as UTC, unasked, where NumPy's naive are refused.
    payments = _pyarrow(canonical[0])
    naive = payments["created_at"].dt.tz_localize(None).astype("timestamp[us][pyarrow]")
    payments["created_at"] = naive
    with pytest.raises(ConfigurationError, match=r"'created_at' holds naive timestamps \(times"):
        a.success_rate(payments)


@pytest.mark.parametrize(
    "call",
    [
        lambda p, r: a.monitor(p, r),
        lambda p, r: a.orders(p),
        lambda p, r: a.decline_rate(p, freq="day"),
        lambda p, r: a.between(p, "2026-11-01"),
    ],
    ids=["monitor", "orders", "decline_rate", "between"],
)
def test_times_as_text_are_refused_saying_how_to_read_them(
    canonical: tuple[pd.DataFrame, pd.DataFrame], call: Callable[[Any, Any], Any]
) -> None:
    # A CSV export read back without parse_dates: orders and monitor failed in pandas.
    payments, refunds = (t.copy() for t in canonical)
    payments["created_at"] = payments["created_at"].astype(str)
    with pytest.raises(ConfigurationError, match=r"created_at") as e:
        call(payments, refunds)
    assert e.value.param in ("payments", "frame") and "times" in str(e.value)
