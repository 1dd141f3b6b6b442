"""Every public analysis gives the same result on pandas, a lazy DuckDB table and Spark.

(The Spark session is tests/conftest.py's ``spark`` fixture, one per test process; the crash,
widget and monitor tests use it too.)

Each case runs one call on the three inputs of one cache (tests/engines/conftest.py) and
compares the results with ``assert_frame_equal`` after sorting: same columns, same dtypes, same
values. The hand-computed values of each analysis are checked on pandas in tests/toolkit; here
the engines are held to those results.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import narwhals as nw
import pandas as pd
import pytest

import gwtools
from gwtools import analysis as a
from gwtools._pyspark import quiet_pyspark
from gwtools.cache._scan import connection

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")  # pyspark

KL = "Asia/Kuala_Lumpur"
#: Chile starts daylight saving on 6 September 2026, inside the sample's range.
SANTIAGO = "America/Santiago"
ENGINES = ("pandas", "duckdb", "spark")

Call = Callable[[Any, Any], Any]


def _counts(p: Any, r: Any) -> Any:
    """A table of counts in the engine of ``p``, for ``add_rate``."""
    counts = a.outcome_counts(a.to_pandas(p), by="method_type")
    if isinstance(p, pd.DataFrame):
        return counts
    if type(p).__module__.startswith("duckdb"):
        return connection().from_df(counts)
    with quiet_pyspark():  # PySpark's own pandas-3 notice, as gwtools' calls silence it
        return p.sparkSession.createDataFrame(counts)


#: Monitors that alert on the sample (its history is calm under the calibrated defaults).
SENSITIVE = a.MonitorSettings(
    false_alarm=0.9, spike_ratio=1.0, spike_min_declines=1, min_baseline=1, refund_min=1,
    refund_ratio=1.0, outage_min_attempts=1, outage_timeout_run=1, testing_min_attempts=2,
    refund_warmup_days=0,
)  # fmt: skip

CASES: dict[str, Call] = {
    "acceptance": lambda p, r: a.acceptance(p),
    "acceptance_method_week": lambda p, r: a.acceptance(p, by="method_type", freq="week", tz=KL),
    "add_rate": lambda p, r: a.add_rate(_counts(p, r), "failed", "attempts"),
    "amount_band": lambda p, r: a.amount_band(p),
    "between": lambda p, r: a.to_pandas(a.between(p, "2026-09-30", "2026-10-30", tz=KL)),
    "between_datetime": lambda p, r: a.to_pandas(a.between(p, since="2026-11-01T23:00:00", tz=KL)),
    "classify_declines": lambda p, r: a.classify_declines(p),
    "decline_breakdown": lambda p, r: a.decline_breakdown(p),
    "decline_breakdown_brand": lambda p, r: a.decline_breakdown(p, by="card_brand"),
    "decline_rate": lambda p, r: a.decline_rate(p),
    "decline_rate_week_kl": lambda p, r: a.decline_rate(p, by="method_type", freq="week", tz=KL),
    "decline_rate_day_santiago": lambda p, r: a.decline_rate(p, freq="day", tz=SANTIAGO),
    "decline_rate_month": lambda p, r: a.decline_rate(p, by="card_brand", freq="month", tz=KL),
    "decline_rate_amount_band": lambda p, r: a.decline_rate(p, by="amount_band"),
    "decline_reason": lambda p, r: a.decline_reason(p),
    "decline_types": lambda p, r: a.decline_types(p),
    "effective_refunds": lambda p, r: a.to_pandas(a.effective_refunds(r)),
    "fpx_banks": lambda p, r: a.fpx_banks(p),
    "fpx_banks_week": lambda p, r: a.fpx_banks(p, freq="week", tz=KL),
    "fpx_outcome": lambda p, r: a.fpx_outcome(p),
    "fpx_outcome_shares": lambda p, r: a.fpx_outcome_shares(p),
    "funnel": lambda p, r: a.funnel(p),
    "monitor": lambda p, r: a.monitor(p, r, tz=KL, settings=SENSITIVE),
    "monitor_window": lambda p, r: a.monitor(
        p, r, since="2026-10-19", until="2026-11-04", tz=KL, settings=SENSITIVE
    ),
    "order_key": lambda p, r: a.order_key(p),
    "order_key_short_window": lambda p, r: a.order_key(p, window="10min"),
    "orders": lambda p, r: a.orders(p),
    "outcome_counts": lambda p, r: a.outcome_counts(p, by="card_brand", freq="week", tz=KL),
    "overview": lambda p, r: a.overview(p, r),
    "partial_vs_full": lambda p, r: a.partial_vs_full(p, r),
    "pending_refunds": lambda p, r: a.pending_refunds(p, r, now="2026-11-09T00:00:00Z", tz=KL),
    "quality": lambda p, r: a.quality(p, r, tz=KL).assign(
        examples=lambda t: t["examples"].map(str)
    ),
    "recovery": lambda p, r: a.recovery(p),
    "recovery_type": lambda p, r: a.recovery(p, by="decline_type"),
    "recovery_brand": lambda p, r: a.recovery(p, by="card_brand"),
    "refund_details": lambda p, r: a.refund_details(p, r),
    "refund_rate": lambda p, r: a.refund_rate(p, r),
    "refund_rate_refund_week": lambda p, r: a.refund_rate(
        p, r, freq="week", tz=KL, cohort="refund"
    ),
    "refund_rate_method_month": lambda p, r: a.refund_rate(p, r, by="method_type", freq="month"),
    "refunds_by_reason": lambda p, r: a.refunds_by_reason(r),
    "status_counts": lambda p, r: a.status_counts(p),
    "success_rate_bank": lambda p, r: a.success_rate(p, by="fpx_bank_code"),
    "success_rate_finished_week": lambda p, r: a.success_rate(
        p, denominator="finished", freq="week", tz=KL
    ),
    "time_to_refund": lambda p, r: a.time_to_refund(p, r),
    "time_to_refund_all": lambda p, r: a.time_to_refund(p, r, by=None),
    "to_pandas": lambda p, r: a.to_pandas(p),
    "totals_by_currency": lambda p, r: a.totals_by_currency(p, ["method_type"]).reset_index(),
}

#: Public names that take one value, a Series or nothing tabular: they stay pandas/numpy.
VALUE_HELPERS = {
    "bucket", "business_days_between", "decline_type", "exponent", "format_money",
    "local_time", "resolve_tz", "to_major", "wilson_interval",
}  # fmt: skip
#: Public names that take an analysis' result (monitor's alerts, always pandas) and say it in words.
RESULT_HELPERS = {"describe_alerts", "monitored_window"}
CONSTANTS = {
    "AMOUNT_BANDS", "FPX_OUTCOMES", "FPX_REFUND_BUSINESS_DAYS", "RETRY_ADVICE", "TIMEOUT_CODES",
    "Overview", "MONITOR_KINDS", "MonitorSettings", "QUALITY_RULES", "ORDER_KEY", "ORDER_WINDOW",
}  # fmt: skip


def _normal(result: Any) -> Any:
    """A result in a comparable form: rows sorted, engine-only columns dropped."""
    if isinstance(result, pd.Series):
        return result.sort_values(na_position="last").reset_index(drop=True)
    if not isinstance(result, pd.DataFrame):
        return result
    frame = result
    if not isinstance(frame.index, pd.RangeIndex):
        # Row-level results of a pandas table keep its row labels; others are numbered.
        frame = frame.reset_index(drop="id" in frame.columns)
    # spark.read.parquet adds the hive partition column; row-level results carry it along.
    frame = frame.drop(columns=["created_month"], errors="ignore")
    key = ["id"] if "id" in frame.columns else list(frame.columns)
    sortable = [c for c in key if not isinstance(frame[c].dtype, pd.CategoricalDtype)]
    return frame.sort_values(sortable, na_position="last", kind="stable").reset_index(drop=True)


def _same(left: Any, right: Any, what: str) -> None:
    if isinstance(left, pd.DataFrame):
        pd.testing.assert_frame_equal(left, right, check_exact=False, rtol=1e-12, obj=what)
    elif isinstance(left, pd.Series):
        pd.testing.assert_series_equal(left, right, check_exact=False, rtol=1e-12, obj=what)
    elif dataclasses.is_dataclass(left):
        for f in dataclasses.fields(left):
            x, y = getattr(left, f.name), getattr(right, f.name)
            if isinstance(x, float) and math.isnan(x):
                assert isinstance(y, float) and math.isnan(y), f"{what}.{f.name}"
            else:
                assert x == pytest.approx(y, rel=1e-12) if isinstance(x, float) else x == y, (
                    f"{what}.{f.name}: {x!r} != {y!r}"
                )
    else:
        assert left == right, what


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_result_on_every_engine(case: str, tables: dict[str, tuple[Any, Any]]) -> None:
    results = {engine: _normal(CASES[case](*tables[engine])) for engine in ENGINES}
    if isinstance(results["pandas"], pd.DataFrame | pd.Series):
        assert len(results["pandas"]) > 0, f"{case}: the sample gives an empty result"
    for engine in ENGINES[1:]:
        _same(results["pandas"], results[engine], f"{case} on {engine}")


def test_every_public_table_function_is_covered() -> None:
    # A case covers the analyses it calls (names it reads off ``a``), whatever it is named.
    covered = {n for case in CASES.values() for n in case.__code__.co_names if n in a.__all__}
    unknown = set(a.__all__) - covered - VALUE_HELPERS - RESULT_HELPERS - CONSTANTS
    assert not unknown, (
        f"{sorted(unknown)}: add a case to CASES (it takes a table) or list it in VALUE_HELPERS or RESULT_HELPERS"
    )


def test_spark_results_come_without_pyspark_warnings(tables: dict[str, tuple[Any, Any]]) -> None:
    """With pandas 3, PySpark warns on every collect that it may not work (and of its own
    deprecated calls); the equivalence tests show it does, so an analyst is not told so."""
    payments, refunds = tables["spark"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a.decline_rate(payments, freq="week", tz="Asia/Kuala_Lumpur")
        a.refund_details(payments, refunds)
    assert [f"{w.category.__name__}: {w.message}" for w in caught if "pyspark" in w.filename] == []


def test_a_spark_session_not_in_utc_is_refused(spark: Any, engine_cache: Path) -> None:
    frame = spark.read.parquet(str(engine_cache / "acct" / "test" / "payments"))
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kuala_Lumpur")
    try:
        with pytest.raises(gwtools.ConfigurationError, match=r"spark\.sql\.session\.timeZone"):
            a.decline_rate(frame)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.mark.parametrize("engine", ENGINES)
def test_quality_finds_repeated_ids_on_every_engine(
    tables: dict[str, tuple[Any, Any]], engine: str
) -> None:
    # DuckDB and Spark count distinct id hashes first; fewer hashes than rows sends them to
    # the ids themselves, which must then name the repeated ones.
    payments, refunds = tables[engine]
    ids = sorted(tables["pandas"][0]["id"].dropna())[:2]
    frame = nw.from_native(payments)
    doubled = nw.concat([frame, frame.filter(nw.col("id").is_in(ids))], how="vertical")
    table = a.quality(doubled.to_native(), refunds).set_index("rule")
    rule = table.loc["payment_ids_unique"]
    assert (rule["count"], rule["examples"]) == (2, ids)
    assert rule["checked"] == len(tables["pandas"][0]) + 2
    assert table.loc["refund_ids_unique", "count"] == 0
