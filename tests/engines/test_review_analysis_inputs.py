"""The public analyses called wrongly, the way a notebook does: a misspelt column, freq or time
zone, a count that is not a whole positive number, the two tables swapped, an empty table.

Each wrong call must stop with a ConfigurationError that names the argument (``param``), the
bad value and what is accepted, on pandas and on a lazy DuckDB table alike: never an engine's
own error, never a silently wrong result. An empty table gives an empty result with the same
columns on both.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import gwtools
from gwtools import ConfigurationError
from gwtools import analysis as a
from gwtools.cache._dataset import to_arrow
from gwtools.cache._scan import connection
from tests.toolkit.conftest import build_payments, build_refunds

ENGINES = ("pandas", "duckdb")

PAYMENTS = [
    {"status": "succeeded", "amount": 1000, "card_brand": "visa",
     "captured_at": "2026-11-02T02:01:00Z", "refunded_amount": 1000, "refunded": True},
    {"status": "failed", "amount": 500, "card_brand": "visa", "failure_code": "card_declined",
     "decline_code": "insufficient_funds"},
    {"status": "failed", "amount": 700, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
     "failure_code": "processing_error"},
]  # fmt: skip
REFUNDS = [{"payment_id": "pay_1", "amount": 1000}]

Call = Callable[[Any, Any], Any]


def _tables(folder: Path, payments: pd.DataFrame, refunds: pd.DataFrame) -> dict[str, Any]:
    files = {}
    for frame, resource in ((payments, "payments"), (refunds, "refunds")):
        files[resource] = str(folder / f"{resource}.parquet")
        pq.write_table(to_arrow(frame, resource), files[resource])
    db = connection()
    return {
        "pandas": (payments, refunds),
        "duckdb": (db.read_parquet(files["payments"]), db.read_parquet(files["refunds"])),
    }


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("inputs")
    return _tables(folder, build_payments(PAYMENTS), build_refunds(REFUNDS))


@pytest.fixture(scope="module")
def empty_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("empty")
    return _tables(folder, build_payments([]).iloc[:0], build_refunds([]))


def _refused(call: Call, tables: dict[str, Any], engine: str) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as info:
        call(*tables[engine])
    return info.value


# -- a misspelt group column: named, with the column meant -----------------------------------
BY_BRAND: dict[str, Call] = {
    "outcome_counts": lambda p, r: a.outcome_counts(p, by="brand"),
    "success_rate": lambda p, r: a.success_rate(p, by="brand"),
    "decline_rate": lambda p, r: a.decline_rate(p, by="brand"),
    "acceptance": lambda p, r: a.acceptance(p, by="brand"),
    "refund_rate": lambda p, r: a.refund_rate(p, r, by="brand"),
    "time_to_refund": lambda p, r: a.time_to_refund(p, r, by="brand"),
    "decline_breakdown": lambda p, r: a.decline_breakdown(p, by="brand"),
    "recovery": lambda p, r: a.recovery(p, by="brand"),
    "totals_by_currency": lambda p, r: a.totals_by_currency(p, ["brand"]),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", BY_BRAND)
def test_a_misspelt_group_column_is_named_with_the_one_meant(
    tables: dict[str, Any], engine: str, name: str
) -> None:
    err = _refused(BY_BRAND[name], tables, engine)
    assert err.param == ("keys" if name == "totals_by_currency" else "by")
    assert "'brand'" in str(err)
    assert "did you mean 'card_brand'?" in str(err)


# -- an unknown freq and a misspelt time zone: named, with the value meant --------------------
WITH_FREQ: dict[str, Callable[..., Any]] = {
    "outcome_counts": lambda p, r, **kw: a.outcome_counts(p, **kw),
    "success_rate": lambda p, r, **kw: a.success_rate(p, **kw),
    "decline_rate": lambda p, r, **kw: a.decline_rate(p, **kw),
    "acceptance": lambda p, r, **kw: a.acceptance(p, **kw),
    "refund_rate": lambda p, r, **kw: a.refund_rate(p, r, **kw),
    "fpx_banks": lambda p, r, **kw: a.fpx_banks(p, **kw),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", WITH_FREQ)
def test_an_unknown_freq_is_named_with_the_one_meant(
    tables: dict[str, Any], engine: str, name: str
) -> None:
    err = _refused(lambda p, r: WITH_FREQ[name](p, r, freq="wek"), tables, engine)
    assert err.param == "freq"
    assert "'wek'" in str(err) and "'day', 'week' or 'month'" in str(err)
    assert "did you mean 'week'?" in str(err)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("freq", ["day", None])
@pytest.mark.parametrize("name", WITH_FREQ)
def test_a_misspelt_time_zone_is_refused_with_or_without_freq(
    tables: dict[str, Any], engine: str, name: str, freq: str | None
) -> None:
    # Without freq the zone is not used yet: a typo must not wait until freq= is added.
    call = WITH_FREQ[name]
    err = _refused(lambda p, r: call(p, r, freq=freq, tz="Asia/Kuala_Lumpr"), tables, engine)
    assert err.param == "tz"
    assert "'Asia/Kuala_Lumpr'" in str(err)
    assert "did you mean 'Asia/Kuala_Lumpur'?" in str(err)


@pytest.mark.parametrize(
    "call",
    [
        lambda p, r: a.monitor(p, r, tz="Asia/KL"),
        lambda p, r: a.quality(p, r, tz="Asia/KL"),
        lambda p, r: a.pending_refunds(p, r, tz="Asia/KL"),
        lambda p, r: a.between(p, "2026-11-01", tz="Asia/KL"),
    ],
    ids=["monitor", "quality", "pending_refunds", "between"],
)
def test_other_time_zone_arguments_name_tz(tables: dict[str, Any], call: Call) -> None:
    err = _refused(call, tables, "pandas")
    assert err.param == "tz" and "'Asia/KL'" in str(err)


# -- counts: whole numbers of at least 1; a bool, a float or text is refused ------------------
COUNTS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "fpx_banks.min_attempts": lambda p, r, v: a.fpx_banks(p, min_attempts=v),
    "overview.min_attempts": lambda p, r, v: a.overview(p, r, min_attempts=v),
    "overview.top": lambda p, r, v: a.overview(p, r, top=v),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("value", [0, -1, True, 2.5, "20"])
@pytest.mark.parametrize("name", COUNTS)
def test_a_count_must_be_a_whole_number_of_at_least_one(
    tables: dict[str, Any], engine: str, name: str, value: Any
) -> None:
    err = _refused(lambda p, r: COUNTS[name](p, r, value), tables, engine)
    param = name.split(".")[1]
    assert err.param == param
    assert f"{param} must be a whole number of at least 1, got {value!r}" in str(err)


@pytest.mark.parametrize("window", ["0s", "-1h", "1 dya", True, 5])
def test_a_window_must_be_a_positive_duration(tables: dict[str, Any], window: Any) -> None:
    for call in (a.recovery, a.acceptance, a.orders, a.order_key):
        err = _refused(lambda p, r, f=call: f(p, window=window), tables, "duckdb")
        assert err.param == "window" and f"window={window!r}" in str(err)


def test_monitor_days_kinds_and_dates(tables: dict[str, Any]) -> None:
    p, r = tables["duckdb"]
    for days in (0, -1, True):
        with pytest.raises(ConfigurationError, match="days must be a number") as info:
            a.monitor(p, r, days=days)
        assert info.value.param == "days"
    with pytest.raises(ConfigurationError, match="did you mean 'decline_spike'") as info:
        a.monitor(p, r, kinds=["decline_spikes"])
    assert info.value.param == "kinds"
    # One kind given bare is that kind, not its letters.
    assert list(a.monitor(p, r, kinds="card_testing").columns) == list(
        a.monitor(p, r, kinds=["card_testing"]).columns
    )
    with pytest.raises(ConfigurationError, match="must come before until") as info:
        a.monitor(p, r, since="2026-11-05", until="2026-11-01")
    assert info.value.param == "since" and "swap them" in str(info.value)
    with pytest.raises(ConfigurationError, match="must come before until") as info:
        a.monitor(p, r, since="2026-11-05T08:00", until="2026-11-05T08:00")
    assert "swap" not in str(info.value) and "move one of them" in str(info.value)


@pytest.mark.parametrize("engine", ENGINES)
def test_since_after_until_is_refused(tables: dict[str, Any], engine: str) -> None:
    err = _refused(lambda p, r: a.between(p, "2026-11-05", "2026-11-01"), tables, engine)
    assert err.param == "since" and "'2026-11-05'" in str(err) and "swap them" in str(err)


def test_other_enumerations_name_their_argument(tables: dict[str, Any]) -> None:
    p, r = tables["pandas"]
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: a.refund_rate(p, r, cohort="refunds"), "cohort"),
        (lambda: a.decline_breakdown(p, locale="xx_YY"), "locale"),
        (lambda: a.amount_band(p, edges=(10, 0)), "edges"),
        (lambda: a.between(p, "2026-11-01", column="created"), "column"),
    ]
    for call, param in cases:
        with pytest.raises(ConfigurationError) as info:
            call()
        assert info.value.param == param, str(info.value)
    with pytest.raises(ConfigurationError, match="did you mean 'created_at'"):
        a.between(p, "2026-11-01", column="created")


# -- the tables swapped: the argument named, the engine's own error never leaking -------------
GIVEN_REFUNDS: dict[str, Call] = {
    "outcome_counts": lambda p, r: a.outcome_counts(r),
    "decline_rate": lambda p, r: a.decline_rate(r),
    "decline_breakdown": lambda p, r: a.decline_breakdown(r),
    "classify_declines": lambda p, r: a.classify_declines(r),
    "fpx_banks": lambda p, r: a.fpx_banks(r),
    "funnel": lambda p, r: a.funnel(r),
    "recovery": lambda p, r: a.recovery(r),
    "refund_rate": lambda p, r: a.refund_rate(r, p),
    "refund_details": lambda p, r: a.refund_details(r, p),
    "overview": lambda p, r: a.overview(r, p),
    "monitor": lambda p, r: a.monitor(r, p),
}
GIVEN_PAYMENTS: dict[str, Call] = {
    "effective_refunds": lambda p, r: a.effective_refunds(p),
    "refunds_by_reason": lambda p, r: a.refunds_by_reason(p),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", [*GIVEN_REFUNDS, *GIVEN_PAYMENTS])
def test_swapped_tables_name_the_argument_and_what_it_looks_like(
    tables: dict[str, Any], engine: str, name: str
) -> None:
    # effective_refunds of payments once returned the payments (both have a status).
    err = _refused({**GIVEN_REFUNDS, **GIVEN_PAYMENTS}[name], tables, engine)
    param, other = ("refunds", "payments") if name in GIVEN_PAYMENTS else ("payments", "refunds")
    assert err.param == param
    assert f"{param}= lacks the {param} columns" in str(err)
    assert f"it looks like a {other} table" in str(err)


# -- an empty table: an empty result, the same columns on pandas and DuckDB -------------------
EMPTY: dict[str, Call] = {
    "outcome_counts": lambda p, r: a.outcome_counts(p, by="method_type", freq="day"),
    "success_rate": lambda p, r: a.success_rate(p, by="card_brand", freq="week"),
    "decline_rate": lambda p, r: a.decline_rate(p, freq="month", tz="Asia/Kuala_Lumpur"),
    "acceptance": lambda p, r: a.acceptance(p, by="method_type", freq="day"),
    "refund_rate": lambda p, r: a.refund_rate(p, r, by="method_type", freq="month"),
    "refund_rate_refund": lambda p, r: a.refund_rate(p, r, freq="day", cohort="refund"),
    "time_to_refund": lambda p, r: a.time_to_refund(p, r),
    "recovery": lambda p, r: a.recovery(p),
    "orders": lambda p, r: a.orders(p),
    "fpx_banks": lambda p, r: a.fpx_banks(p, freq="day"),
    "decline_breakdown": lambda p, r: a.decline_breakdown(p),
    "decline_types": lambda p, r: a.decline_types(p),
    "fpx_outcome_shares": lambda p, r: a.fpx_outcome_shares(p),
    "refunds_by_reason": lambda p, r: a.refunds_by_reason(r),
    "partial_vs_full": lambda p, r: a.partial_vs_full(p, r),
    "pending_refunds": lambda p, r: a.pending_refunds(p, r),
    "refund_details": lambda p, r: a.refund_details(p, r),
    "monitor": lambda p, r: a.monitor(p, r),
}


@pytest.mark.parametrize("name", EMPTY)
def test_an_empty_table_gives_an_empty_result_with_the_same_columns(
    empty_tables: dict[str, Any], name: str
) -> None:
    results = {engine: EMPTY[name](*empty_tables[engine]) for engine in ENGINES}
    assert results["pandas"].empty
    assert list(results["pandas"].columns) == list(results["duckdb"].columns)
    assert len(results["duckdb"]) == 0


# -- no group keys, or a key the analysis sums: one overall row, or a clear refusal ------------
@pytest.mark.parametrize("by", [None, []])
@pytest.mark.parametrize("engine", ENGINES)
def test_recovery_without_keys_is_one_overall_row(
    tables: dict[str, Any], engine: str, by: Any
) -> None:
    # pay_2 and pay_3 failed, each its own order (no order id, no customer): 2 declined
    # orders, none retried, none recovered.
    out = a.recovery(tables[engine][0], by=by)
    assert len(out) == 1
    row = out.iloc[0]
    assert (row["orders"], row["retried"], row["recovered"], row["rate"]) == (2, 0, 0, 0.0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "call",
    [
        lambda p: a.decline_breakdown(p, by=None),
        lambda p: a.decline_breakdown(p, by=[]),
        lambda p: a.totals_by_currency(p, None),
    ],
    ids=["breakdown-None", "breakdown-empty", "totals-None"],
)
def test_a_breakdown_without_keys_says_to_name_one(
    tables: dict[str, Any], engine: str, call: Callable[[Any], Any]
) -> None:
    err = _refused(lambda p, r: call(p), tables, engine)
    assert err.param in ("by", "keys") and "e.g." in str(err)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(
    "call",
    [
        lambda p: a.decline_breakdown(p, by="amount"),
        lambda p: a.decline_breakdown(p, by=["card_brand", "amount"]),
        lambda p: a.totals_by_currency(p, ["amount"]),
    ],
    ids=["breakdown", "breakdown-two-keys", "totals"],
)
def test_grouping_by_the_summed_amount_is_refused(
    tables: dict[str, Any], engine: str, call: Callable[[Any], Any]
) -> None:
    err = _refused(lambda p, r: call(p), tables, engine)
    assert err.param in ("by", "keys")
    assert "'amount'" in str(err) and "amount_band" in str(err)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("column", ["status", "amount", "refunded"])
def test_between_a_column_that_holds_no_times_names_the_time_columns(
    tables: dict[str, Any], engine: str, column: str
) -> None:
    # It failed with pandas' "Invalid comparison between dtype=string and Timestamp".
    err = _refused(lambda p, r: a.between(p, "2026-11-01", column=column), tables, engine)
    assert err.param == "column" and f"column={column!r}" in str(err)
    assert "created_at" in str(err) and "captured_at" in str(err)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_zoneinfo_is_its_zone_and_a_number_is_not_a_zone(
    tables: dict[str, Any], engine: str
) -> None:
    import zoneinfo

    p = tables[engine][0]
    zone = zoneinfo.ZoneInfo("Asia/Kuala_Lumpur")
    want = a.decline_rate(p, freq="day", tz="Asia/Kuala_Lumpur")
    pd.testing.assert_frame_equal(a.decline_rate(p, freq="day", tz=zone), want)
    # 5 was "unknown time zone 5", as if a name had been misspelt.
    err = _refused(lambda p, r: a.decline_rate(p, freq="day", tz=5), tables, engine)
    assert err.param == "tz" and "a zone name" in str(err) and "'Asia/Kuala_Lumpur'" in str(err)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_order_key_must_be_a_name_and_a_numpy_window_is_a_duration(
    tables: dict[str, Any], engine: str
) -> None:
    import numpy as np

    p = tables[engine][0]
    pd.testing.assert_frame_equal(
        a.orders(p, window=np.timedelta64(2, "h")), a.orders(p, window="2h")
    )
    for key in (5, "", None):
        for call in (a.orders, a.order_key, a.recovery, a.acceptance):
            # key=5 failed with "'in <string>' requires string as left operand, not int".
            err = _refused(lambda p, r, f=call, k=key: f(p, key=k), tables, engine)
            assert err.param == "key" and f"key={key!r}" in str(err)


# -- a table read back from CSV: times as text, named with the way to convert them -------------
TIMED: dict[str, Call] = {
    "decline_rate": lambda p, r: a.decline_rate(p, freq="week"),
    "time_to_refund": lambda p, r: a.time_to_refund(p, r),
    "orders": lambda p, r: a.orders(p),
    "monitor": lambda p, r: a.monitor(p, r),
    "quality": lambda p, r: a.quality(p, r),
    "between": lambda p, r: a.between(p, "2026-11-01"),
}


# pandas warns first that a flag read back as float64 (captured) cannot be filled with False.
@pytest.mark.filterwarnings("ignore:'bool' is not supported as a fill value")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", TIMED)
def test_times_read_back_from_csv_as_text_are_named(
    tables: dict[str, Any], tmp_path: Path, engine: str, name: str
) -> None:
    # pandas.read_csv of gwtools' own CSV export gives created_at as text: the analyses failed
    # with the engine's own TypeError or BinderException ("epoch_us(VARCHAR)").
    payments, refunds = tables["pandas"]
    gwtools.write_table(payments, tmp_path / "payments.csv", "csv")
    text = pd.read_csv(tmp_path / "payments.csv")
    assert pd.api.types.is_string_dtype(text["created_at"])
    given = {"pandas": text, "duckdb": connection().from_df(text)}[engine]
    other = {"pandas": refunds, "duckdb": tables["duckdb"][1]}[engine]
    err = _refused(lambda p, r: TIMED[name](given, other), tables, engine)
    assert err.param == ("frame" if name == "between" else "payments")
    # It named the private gwtools._schema.conform() as the way out.
    assert "created_at" in str(err) and "_schema" not in str(err)
    assert "pd.to_datetime(frame['created_at'], utc=True)" in str(err)
    # What it says to do works: the same result as on the canonical table.
    times = [c for c in text.columns if c.endswith("_at") and c in str(err)]
    fixed = text.assign(**{c: pd.to_datetime(text[c], utc=True) for c in times})
    if name not in ("between", "monitor", "quality"):
        pd.testing.assert_frame_equal(
            TIMED[name](fixed, refunds), TIMED[name](payments, refunds), check_exact=False
        )


def test_tables_on_two_duckdb_connections_are_refused_saying_what_to_do(
    tables: dict[str, Any], tmp_path: Path
) -> None:
    # Refunds read with duckdb.read_parquet (the default connection) beside payments from
    # scan_cache: the join failed with DuckDB's "Cannot combine LEFT and RIGHT relations of
    # different connections!", which names neither table nor a way out.
    import duckdb

    refunds = tables["pandas"][1]
    pq.write_table(to_arrow(refunds, "refunds"), tmp_path / "refunds.parquet")
    own = duckdb.connect()
    try:
        other = own.read_parquet(str(tmp_path / "refunds.parquet"))
        for call in (a.refund_rate, a.refund_details):
            with pytest.raises(ConfigurationError, match="different DuckDB connections") as err:
                call(tables["duckdb"][0], other)
            assert "scan_cache" in str(err.value)
    finally:
        own.close()


#: Analyses of both tables: each has a created_at.
BOTH_TABLES: dict[str, Call] = {
    "refund_rate": lambda p, r: a.refund_rate(p, r),
    "time_to_refund": lambda p, r: a.time_to_refund(p, r),
    "partial_vs_full": lambda p, r: a.partial_vs_full(p, r),
    "pending_refunds": lambda p, r: a.pending_refunds(p, r),
    "monitor": lambda p, r: a.monitor(p, r),
    "overview": lambda p, r: a.overview(p, r),
}


def _naive(table: Any, engine: str) -> Any:
    if engine == "pandas":
        return table.assign(created_at=table["created_at"].dt.tz_localize(None))
    return table.project("* REPLACE (created_at::TIMESTAMP AS created_at)")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", BOTH_TABLES)
def test_naive_times_name_the_table_that_holds_them(
    tables: dict[str, Any], engine: str, name: str
) -> None:
    # Both tables have a created_at: "column 'created_at' holds naive timestamps" left the
    # analyst to find out which of the two it was.
    payments, refunds = tables[engine]
    for param, given in (
        ("refunds", (payments, _naive(refunds, engine))),
        ("payments", (_naive(payments, engine), refunds)),
    ):
        err = _refused(BOTH_TABLES[name], {engine: given}, engine)
        assert err.param == param, (param, str(err))
        assert str(err).startswith(f"{param}=: column 'created_at' holds naive timestamps")
