"""Engine equivalence at the edges: small hand-built tables, one per edge the shared cache lacks.

tests/engines/test_equivalence.py holds every analysis to one ordinary cache. Here each table
is made for one edge (no decline code at all, text held as Python objects, ...) and read the
ways an analyst may hold it: the canonical pandas frame, the same frame with object text and
nanosecond times (pandas 2's dtypes, or a frame built by hand), a lazy DuckDB table and a Spark
DataFrame of the same Parquet file. Expected values are computed by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import narwhals as nw
import pandas as pd
import pyarrow.parquet as pq
import pytest

from gwtools import ConfigurationError
from gwtools import analysis as a
from gwtools.cache._dataset import to_arrow
from gwtools.cache._scan import connection
from tests.toolkit.conftest import Rows, build_payments, build_refunds

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")  # pyspark

ENGINES = ("pandas", "pandas_object", "duckdb", "spark")

Tables = dict[str, tuple[Any, Any]]


def _object_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with object text and nanosecond times: what pandas 2, or a frame built from
    records, holds."""
    out = frame.copy()
    for name, dtype in frame.dtypes.items():
        if isinstance(dtype, pd.DatetimeTZDtype):
            out[name] = out[name].astype("datetime64[ns, UTC]")
        elif isinstance(dtype, pd.StringDtype):
            out[name] = out[name].astype(object)
    return out


@pytest.fixture(scope="module")
def make_tables(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Callable[..., Tables]:
    """``make_tables(payment_rows, refund_rows)`` -> ``{engine: (payments, refunds)}``."""

    def make(payment_rows: Rows, refund_rows: Rows | None = None) -> Tables:
        payments, refunds = build_payments(payment_rows), build_refunds(refund_rows or [])
        folder = tmp_path_factory.mktemp("edge")
        files = {}
        for frame, resource in ((payments, "payments"), (refunds, "refunds")):
            files[resource] = str(folder / f"{resource}.parquet")
            pq.write_table(to_arrow(frame, resource), files[resource])
        duckdb = connection()
        return {
            "pandas": (payments, refunds),
            "pandas_object": (_object_dtypes(payments), _object_dtypes(refunds)),
            "duckdb": (
                duckdb.read_parquet(files["payments"]),
                duckdb.read_parquet(files["refunds"]),
            ),
            "spark": (spark.read.parquet(files["payments"]), spark.read.parquet(files["refunds"])),
        }

    return make


def _on_every_engine(tables: Tables, call: Callable[[Any, Any], pd.DataFrame]) -> pd.DataFrame:
    """``call``'s result on pandas, held equal (columns, dtypes, values, row order) on the
    other engines."""
    results = {engine: call(*tables[engine]) for engine in ENGINES}
    for engine in ENGINES[1:]:
        pd.testing.assert_frame_equal(
            results["pandas"], results[engine], check_exact=False, rtol=1e-12, obj=engine
        )
    return results["pandas"]


#: FPX payments: no decline code, no failure code on any of them.
NO_CODES: Rows = [
    {"status": "succeeded", "amount": 1000, "method_type": "fpx", "fpx_bank_code": "MB2U0227"},
    {"status": "failed", "amount": 2500, "method_type": "fpx", "fpx_bank_code": "MB2U0227"},
    {"status": "failed", "amount": 500, "method_type": "fpx", "fpx_bank_code": "BCBB0235"},
]


def test_declines_without_any_code(make_tables: Callable[..., Tables]) -> None:
    # Object text: the reason of rows without codes was an untyped null (float NaN once
    # grouped), and decline_breakdown's merge with the codes per reason failed.
    tables = make_tables(NO_CODES)
    table = _on_every_engine(tables, lambda p, r: a.decline_breakdown(p))
    assert table["decline_reason"].isna().all() and table["count"].tolist() == [2]
    assert table["amount_MYR"].tolist() == [30.0]  # 25.00 + 5.00
    assert table["decline_type"].tolist() == ["unclassified"]
    by_bank = _on_every_engine(tables, lambda p, r: a.decline_breakdown(p, by="fpx_bank_code"))
    assert by_bank["fpx_bank_code"].tolist() == ["BCBB0235", "MB2U0227"]  # 1 each: code order
    reasons = _on_every_engine(tables, lambda p, r: a.classify_declines(p).reset_index(drop=True))
    assert reasons["decline_reason"].isna().all() and len(reasons) == 2


def test_a_narwhals_frame_over_spark_not_in_utc_is_refused(
    make_tables: Callable[..., Tables], spark: Any
) -> None:
    # The session's zone was checked for a Spark DataFrame, not for a Narwhals frame over
    # one: its days were cut in the session's zone and its times read as UTC, silently.
    payments = make_tables(NO_CODES)["spark"][0]
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kuala_Lumpur")
    try:
        with pytest.raises(ConfigurationError, match=r"spark\.sql\.session\.timeZone"):
            a.decline_rate(nw.from_native(payments), freq="day")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_an_order_id_given_twice_in_metadata(make_tables: Callable[..., Tables]) -> None:
    # metadata is kept as the gateway sent it, so a key can come twice. DuckDB and Spark read
    # the first value; pandas (orjson) read the last, and split this order in two.
    tables = make_tables(
        [
            {"status": "failed", "amount": 900, "failure_code": "card_declined",
             "decline_code": "insufficient_funds", "created_at": "2026-11-02T02:00:00Z",
             "metadata": '{"order_id": "A-1", "note": "x", "order_id": "B-2"}'},
            {"status": "succeeded", "amount": 900, "created_at": "2026-11-02T02:05:00Z",
             "metadata": '{"order_id": "A-1"}'},
        ]
    )  # fmt: skip
    keys = {engine: a.order_key(p).tolist() for engine, (p, _) in tables.items()}
    assert keys == {engine: ["order:A-1", "order:A-1"] for engine in ENGINES}
    table = _on_every_engine(tables, lambda p, r: a.recovery(p))
    assert table[["decline_reason", "orders", "recovered"]].values.tolist() == [
        ["insufficient_funds", 1, 1]
    ]


def test_an_order_key_the_json_text_escapes(make_tables: Callable[..., Tables]) -> None:
    # json.dumps (ensure_ascii) writes "nº_pedido" as "n\u00ba_pedido": pandas looked for
    # the key's own spelling in the text before parsing it, found none, and gave no order id.
    metadata = json.dumps({"nº_pedido": "P-7"})
    assert "nº" not in metadata
    tables = make_tables(
        [
            {"status": "failed", "amount": 900, "metadata": metadata},
            {"status": "succeeded", "amount": 400, "metadata": metadata},
        ]
    )
    keys = {engine: a.order_key(p, key="nº_pedido").tolist() for engine, (p, _) in tables.items()}
    assert keys == {engine: ["order:P-7", "order:P-7"] for engine in ENGINES}


#: metadata that is not JSON that Spark's own reader takes: single quotes, raw control
#: characters, text after the object.
NOT_JSON = [
    "{'order_id': 'A'}",
    '{"order_id": "A\tB"}',  # a raw tab inside the text
    '{"order_id": "A"} and more',
    '{"order_id": "A"}{"order_id": "B"}',
]
#: ... and what DuckDB's takes: read as JSON there, a documented difference (holding it to
#: JSON cost a third of acceptance's time; no JSON encoder writes these).
DUCKDB_LENIENT = [
    '{"order_id": "A",}',
    '{"order_id": "A", "lines": [1, 2,]}',
    '{"order_id": "A", "total": NaN}',
    '{"order_id": "A", "total": -Infinity}',
]


def test_metadata_that_is_not_json_gives_no_order_id_on_any_engine(
    make_tables: Callable[..., Tables],
) -> None:
    # Each engine read invalid metadata its own way: Spark gave order A for the first four
    # texts, DuckDB for the last four, pandas for none, so the same payments made other orders.
    valid = ['{"order_id": "A", "note": "x,}"}', '{"order_id": "A", "total": "NaN"}']
    texts = [*valid, *NOT_JSON, *DUCKDB_LENIENT]
    rows = [
        {
            "status": "failed",
            "amount": 100,
            "metadata": m,
            "created_at": f"2026-11-02T02:{i:02}:00Z",
        }
        for i, m in enumerate(texts)
    ]
    tables = make_tables(rows)
    strict = ["order:A", "order:A"] + [f"payment:pay_{i}" for i in range(3, len(rows) + 1)]
    lenient = strict[: -len(DUCKDB_LENIENT)] + ["order:A"] * len(DUCKDB_LENIENT)
    keys = {engine: a.order_key(p).tolist() for engine, (p, _) in tables.items()}
    assert keys == {e: lenient if e == "duckdb" else strict for e in ENGINES}
    for engine in ENGINES:
        n = a.acceptance(tables[engine][0]).set_index(["metric", "unit"])["n"]
        orders = 5 if engine == "duckdb" else 9  # DuckDB: order A holds the four lenient texts
        assert (n["conversion", "order"], n["acceptance_rate", "attempt"]) == (orders, 10)


NY = "America/New_York"

#: New York local days around the 2026 clock changes and a year's end (hand-read offsets:
#: EST is UTC-5, EDT UTC-4; EDT from 8 March 07:00 UTC to 1 November 06:00 UTC).
CLOCKS: Rows = [
    {"status": "succeeded", "amount": 100, "created_at": "2026-03-08T04:59:59Z"},  # 7 Mar 23:59
    {"status": "failed", "amount": 100, "created_at": "2026-03-08T07:00:00Z"},  # 8 Mar 03:00
    {"status": "succeeded", "amount": 100, "created_at": "2026-11-01T03:59:59Z"},  # 31 Oct
    {"status": "failed", "amount": 100, "created_at": "2026-11-01T06:00:00Z"},  # 1 Nov 01:00
    {"status": "succeeded", "amount": 100, "created_at": "2026-12-31T23:00:00Z"},  # Thu 31 Dec
    {"status": "failed", "amount": 100, "created_at": "2027-01-01T04:59:59Z"},  # 31 Dec 23:59
    {"status": "succeeded", "amount": 100, "created_at": "2027-01-01T05:00:00Z"},  # Fri 1 Jan
]


def test_local_periods_at_clock_changes_and_year_end(make_tables: Callable[..., Tables]) -> None:
    tables = make_tables(CLOCKS)
    months = _on_every_engine(tables, lambda p, r: a.outcome_counts(p, freq="month", tz=NY))
    assert months["period"].dt.strftime("%Y-%m-%d").tolist()[-2:] == ["2026-12-01", "2027-01-01"]
    assert months["attempts"].tolist()[-2:] == [2, 1]
    # Monday 28 December 2026 to Sunday 3 January 2027: one week over the year's end.
    weeks = _on_every_engine(tables, lambda p, r: a.decline_rate(p, freq="week", tz=NY))
    assert weeks["period"].iloc[-1] == pd.Timestamp("2026-12-28", tz=NY)
    assert weeks["n"].iloc[-1] == 3
    days = _on_every_engine(
        tables,
        lambda p, r: a.outcome_counts(
            a.between(p, "2026-03-07", "2026-11-01", tz=NY), freq="day", tz=NY
        ),
    )
    spring = days.set_index("period").loc[
        [pd.Timestamp("2026-03-07", tz=NY), pd.Timestamp("2026-03-08", tz=NY)], "attempts"
    ]
    assert spring.tolist() == [1, 1]
    assert days["period"].iloc[-1] == pd.Timestamp("2026-11-01", tz=NY)  # 01:00 EST counted
    assert days["attempts"].iloc[-1] == 1 and days["attempts"].sum() == 4


#: (call, rows it gives when no payment is left): the refunds' month stays in the refund cohort.
EMPTIED = {
    "decline_rate": (lambda p, r: a.decline_rate(p, by="card_brand", freq="week", tz=NY), 0),
    "decline_breakdown": (lambda p, r: a.decline_breakdown(p), 0),
    "fpx_banks": (lambda p, r: a.fpx_banks(p, freq="day"), 0),
    "refund_rate": (lambda p, r: a.refund_rate(p, r, freq="month", cohort="refund"), 1),
    "orders": (lambda p, r: a.orders(p), 0),
    "recovery": (lambda p, r: a.recovery(p), 0),
}


@pytest.mark.parametrize("case", sorted(EMPTIED))
def test_no_payment_left_after_a_filter(make_tables: Callable[..., Tables], case: str) -> None:
    call, rows = EMPTIED[case]
    tables = make_tables(CLOCKS[:2], [{"payment_id": "pay_1", "amount": 50}])
    table = _on_every_engine(tables, lambda p, r: call(a.between(p, "2030-01-01"), r))
    assert len(table) == rows


#: Refunds in another currency than their payment's, or in none (hand-computed below).
OTHER_CURRENCY: tuple[Rows, Rows] = (
    [
        {"status": "succeeded", "amount": 1000},  # pay_1 RM10.00
        {"status": "succeeded", "amount": 800},  # pay_2 RM8.00
        {"status": "succeeded", "amount": 300, "currency": None},  # pay_3, in no currency
    ],
    [
        {"payment_id": "pay_1", "amount": 1000},  # RM10.00: full
        {"payment_id": "pay_2", "amount": 800, "currency": "JPY"},  # ¥800, not RM8.00
        {"payment_id": "pay_3", "amount": 300, "currency": None},
    ],
)


def test_refunds_in_another_currency_or_none(make_tables: Callable[..., Tables]) -> None:
    tables = make_tables(*OTHER_CURRENCY)
    rate = _on_every_engine(tables, lambda p, r: a.refund_rate(p, r))
    myr = rate[rate["currency"].eq("MYR").fillna(False).astype(bool)].iloc[0]
    assert (myr["payments"], myr["refunded_payments"], myr["refunded_amount"]) == (2, 1, 10.0)
    split = _on_every_engine(tables, lambda p, r: a.partial_vs_full(p, r))
    assert split["kind"].tolist() == ["full"] and split["amount_MYR"].tolist() == [10.0]


def test_decades_of_clock_changes(make_tables: Callable[..., Tables]) -> None:
    # One payment dated decades ahead (a gateway's clock or a "never" sentinel) puts some 150
    # New York clock changes in the data's range. Local time was one `when` per change, each
    # repeating the instant's whole formula: Spark's driver ran out of memory compiling it,
    # and a longer range (1970 to 2099) hit Python's recursion limit on every engine.
    tables = make_tables(
        [
            {"status": "succeeded", "amount": 100, "created_at": "2026-03-08T06:59:59Z"},
            {"status": "failed", "amount": 100, "created_at": "2099-07-01T03:59:59Z"},
        ]
    )
    months = _on_every_engine(tables, lambda p, r: a.decline_rate(p, freq="month", tz=NY))
    # 01:59:59 EST on 8 March 2026; 23:59:59 EDT on 30 June 2099.
    assert len(months) == (2099 - 2026) * 12 + (6 - 3) + 1
    first, last = months.iloc[0], months.iloc[-1]
    assert (first["period"], first["attempts"], first["failed"]) == (
        pd.Timestamp("2026-03-01", tz=NY),
        1,
        0,
    )
    assert (last["period"], last["attempts"], last["failed"]) == (
        pd.Timestamp("2099-06-01", tz=NY),
        1,
        1,
    )
    assert months["attempts"].sum() == 2
    santiago = make_tables(
        [
            {"status": "succeeded", "amount": 100, "created_at": "1970-01-15T12:00:00Z"},
            {"status": "failed", "amount": 100, "created_at": "2099-12-15T12:00:00Z"},
        ]
    )
    zone = "America/Santiago"
    years = _on_every_engine(santiago, lambda p, r: a.outcome_counts(p, freq="month", tz=zone))
    assert len(years) == 130 * 12 and years["attempts"].sum() == 2
    assert years["period"].iloc[0] == pd.Timestamp("1970-01-01", tz=zone)
