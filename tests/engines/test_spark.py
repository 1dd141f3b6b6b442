"""What is particular to Spark tables: PySpark's own output around gwtools' calls, and what
Spark hands back.

The session is tests/conftest.py's ``spark`` fixture; the tables are tests/engines/conftest.py's
one cache read by Spark.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import gwtools
from gwtools import ConfigurationError
from gwtools import analysis as a

pytestmark = pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")  # pyspark


@pytest.fixture
def pyspark_error_logs(spark: Any) -> Iterator[list[logging.LogRecord]]:
    """The records PySpark 4 logs for each error of a DataFrame query (with the Java stack:
    some 9 KB of JSON each, on the notebook's stderr)."""
    from pyspark.logger import PySparkLogger

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = PySparkLogger.getLogger("DataFrameQueryContextLogger")
    handler = Keep()
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


def test_a_missing_column_is_said_once_without_pysparks_error_log(
    tables: dict[str, tuple[Any, Any]], pyspark_error_logs: list[logging.LogRecord]
) -> None:
    # gwtools turns Spark's unresolved column into its own ConfigurationError, naming the
    # column; PySpark had already logged the AnalysisException with its Java stack trace.
    payments, refunds = tables["spark"]
    with pytest.raises(ConfigurationError, match="lacks the payments columns decline_code"):
        a.decline_breakdown(payments.drop("decline_code"))
    with pytest.raises(ConfigurationError, match="it looks like a refunds table"):
        a.decline_rate(refunds)
    assert pyspark_error_logs == []


def test_an_error_gwtools_does_not_explain_keeps_pysparks_log(
    tables: dict[str, tuple[Any, Any]], pyspark_error_logs: list[logging.LogRecord]
) -> None:
    from pyspark.errors import AnalysisException

    from gwtools._pyspark import spark_errors_explained

    payments, _ = tables["spark"]
    with pytest.raises(AnalysisException), spark_errors_explained():
        payments.select("no_such_column")
    assert len(pyspark_error_logs) == 1
    assert "no_such_column" in pyspark_error_logs[0].getMessage()


def _by_id(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.drop(columns=["created_month"], errors="ignore")
    return out.sort_values("id", kind="stable").reset_index(drop=True)


def test_decimal_amounts_come_back_as_the_integers_they_hold(
    tables: dict[str, tuple[Any, Any]],
) -> None:
    # A warehouse or JDBC table holds amounts as DECIMAL(38,0). Spark hands decimals to pandas
    # as Python Decimal objects, which came back as text ("12000"); DuckDB's gave Int64.
    from pyspark.sql import functions as F

    payments, refunds = tables["spark"]
    decimal = {c: F.col(c).cast("decimal(38,0)") for c in ("amount", "refunded_amount")}
    payments = payments.withColumns(decimal)
    refunds = refunds.withColumn("amount", F.col("amount").cast("decimal(38,0)"))
    pandas_payments, pandas_refunds = tables["pandas"]
    for call in (
        lambda p, r: a.to_pandas(a.between(p, "2026-10-01", "2026-10-31")),
        lambda p, r: a.classify_declines(p),
        lambda p, r: a.refund_details(p, r),
    ):
        expected = _by_id(call(pandas_payments, pandas_refunds))
        got = _by_id(call(payments, refunds))
        assert got["amount"].dtype == "Int64"
        pd.testing.assert_frame_equal(got, expected)


def test_times_past_2262_come_back_as_the_other_engines_give_them(
    tables: dict[str, tuple[Any, Any]],
) -> None:
    # A gateway's "never" (expires_at 9999-12-31) is a valid canonical time; pandas and DuckDB
    # keep it (microseconds). Spark's toPandas cast every time to nanoseconds and failed with
    # ArrowInvalid ("out of bounds timestamp") on any result holding one.
    from pyspark.sql import functions as F

    payments, _ = tables["spark"]
    never = F.when(F.col("outcome") == "failed", F.lit("9999-12-31 23:59:59").cast("timestamp"))
    payments = payments.withColumn("expires_at", never.otherwise(F.col("expires_at")))
    pandas_payments, _ = tables["pandas"]
    failed = pandas_payments["outcome"].eq("failed").fillna(False).astype(bool)
    pandas_payments = pandas_payments.assign(
        expires_at=pandas_payments["expires_at"].mask(
            failed, pd.Timestamp("9999-12-31 23:59:59", tz="UTC")
        )
    )
    for call in (a.to_pandas, a.classify_declines):
        got = _by_id(call(payments))
        pd.testing.assert_frame_equal(got, _by_id(call(pandas_payments)))
    assert got["expires_at"].max() == pd.Timestamp("9999-12-31 23:59:59", tz="UTC")


@pytest.mark.parametrize(
    ("zone", "accepted"),
    [
        ("Etc/GMT", True),
        ("Universal", True),
        ("Zulu", True),
        ("UTC+0", True),
        ("GMT+00:00", True),
        ("Etc/UCT", True),
        ("Africa/Abidjan", False),  # GMT since 1912 only
        ("Europe/London", False),
        ("+08:00", False),
    ],
)
def test_a_session_in_utc_by_any_name_is_taken(
    spark: Any, tables: dict[str, tuple[Any, Any]], zone: str, accepted: bool
) -> None:
    # Spark spells UTC many ways; only five of them were taken, and a session set to Etc/GMT
    # or Zulu was refused as "not UTC".
    payments, _ = tables["spark"]
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        if accepted:
            assert a.status_counts(payments)["count"].sum() == len(tables["pandas"][0])
        else:
            with pytest.raises(ConfigurationError, match=r"spark\.sql\.session\.timeZone"):
                a.status_counts(payments)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def test_open_source_leaves_the_users_session_in_its_own_time_zone(
    spark: Any, engine_cache: Path
) -> None:
    # open_source("spark") set the analyst's active session to UTC and left it so: their own
    # queries in the same session (a date literal, hour(), a collected time) then read in UTC
    # rather than their zone, with nothing said. Its tables live in a session of their own.
    from pyspark.sql import functions as F

    spark.conf.set("spark.sql.session.timeZone", "Asia/Kuala_Lumpur")
    spark.conf.set("fs.s3a.endpoint", "http://minio.internal:9000")  # set at run time
    try:
        src = gwtools.open_source("spark", spark_path=str(engine_cache / "acct" / "test"))
        assert spark.conf.get("spark.sql.session.timeZone") == "Asia/Kuala_Lumpur"
        midnight = spark.range(1).select(F.lit("2026-10-02 00:00:00").cast("timestamp").alias("t"))
        assert midnight.select(F.hour("t"), F.unix_timestamp("t")).first() == (0, 1790870400)
        # gwtools' tables read in UTC, with the session's other settings (storage...).
        own = src.payments.sparkSession
        assert own.conf.get("spark.sql.session.timeZone") == "UTC"
        assert own.conf.get("fs.s3a.endpoint") == "http://minio.internal:9000"
        pandas_payments = gwtools.read_cache(engine_cache, "payments")
        pd.testing.assert_frame_equal(
            a.decline_rate(src.payments, freq="day", tz="Asia/Kuala_Lumpur"),
            a.decline_rate(pandas_payments, freq="day", tz="Asia/Kuala_Lumpur"),
        )
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        spark.conf.unset("fs.s3a.endpoint")


class _NoCopy:
    """A session as some clusters hand it over: no copy of it to be had (no cloneSession,
    the JVM session out of reach)."""

    def __init__(self, session: Any) -> None:
        self._session = session

    def __getattr__(self, name: str) -> Any:
        if name in ("cloneSession", "_jsparkSession"):
            raise AttributeError(name)
        return getattr(self._session, name)


def test_a_session_that_cannot_be_copied_is_read_in_utc_and_the_change_is_said(
    spark: Any,
) -> None:
    from gwtools.cache._source import _utc_session

    spark.conf.set("spark.sql.session.timeZone", "Asia/Kuala_Lumpur")
    try:
        with pytest.warns(UserWarning, match=r"from 'Asia/Kuala_Lumpur' to 'UTC'"):
            own = _utc_session(_NoCopy(spark))
        assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
        assert own.conf.get("spark.sql.session.timeZone") == "UTC"
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # already in UTC: nothing changed, nothing said
            _utc_session(_NoCopy(spark))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


#: Analyses that read no time of a payment's, or only to order rows: they read naive times as
#: UTC unasked, where between and the freq= rates refused them.
NAIVE_CALLS = {
    "status_counts": lambda p, r: a.status_counts(p),
    "decline_rate": lambda p, r: a.decline_rate(p),
    "classify_declines": lambda p, r: a.classify_declines(p),
    "acceptance": lambda p, r: a.acceptance(p),
    "refund_rate": lambda p, r: a.refund_rate(p, r),
    "between": lambda p, r: a.between(p, "2026-10-01", "2026-10-31"),
}


@pytest.mark.parametrize("call", sorted(NAIVE_CALLS))
def test_naive_times_are_refused_by_every_analysis_on_every_engine(
    tables: dict[str, tuple[Any, Any]], call: str
) -> None:
    from pyspark.sql import functions as F

    (p_pd, r_pd), (p_db, r_db), (p_sp, r_sp) = (tables[e] for e in ("pandas", "duckdb", "spark"))
    naive = {
        "pandas": (p_pd.assign(created_at=p_pd["created_at"].dt.tz_localize(None)), r_pd),
        "duckdb": (p_db.project("* REPLACE (created_at::TIMESTAMP AS created_at)"), r_db),
        "spark": (p_sp.withColumn("created_at", F.col("created_at").cast("timestamp_ntz")), r_sp),
    }
    fixes = {
        "pandas": ".dt.tz_localize('UTC')",
        "duckdb": "timezone('UTC', created_at)",
        "spark": "F.col('created_at').cast('timestamp')",
    }
    for engine, (payments, refunds) in naive.items():
        with pytest.raises(ConfigurationError, match="'created_at' holds naive timestamps") as err:
            NAIVE_CALLS[call](payments, refunds)
        assert fixes[engine] in str(err.value) and "_schema" not in str(err.value), engine


def test_a_master_other_than_the_running_sessions_is_refused(
    spark: Any, engine_cache: Path
) -> None:
    # Spark runs one context per process: asked for another master while a session runs,
    # getOrCreate handed back the running one (a log line at most), so spark_master=
    # "spark://head:7077" ran the analyses on the local session instead of the cluster.
    folder = str(engine_cache / "acct" / "test")
    running = spark.sparkContext.master
    with pytest.raises(ConfigurationError, match=r"spark_master") as err:
        gwtools.open_source("spark", spark_master="local[1]", spark_path=folder)
    assert running in str(err.value) and "spark.stop()" in str(err.value)
    same = gwtools.open_source("spark", spark_master=running, spark_path=folder)
    assert same.payments.sparkSession.sparkContext.master == running


def test_an_export_keeps_timestamp_ntz_as_the_wall_clock_it_holds(
    spark: Any, tmp_path: Path
) -> None:
    """A TIMESTAMP_NTZ column is a wall-clock time with no zone: toPandas() gives it back as
    it is. The export of a table that is not canonical wrote it as UTC ('+00:00' in CSV, a
    UTC timestamp in Parquet). The session here is on Asia/Kuala_Lumpur, so the test also
    holds the wall clock against being read in the session's zone."""
    import datetime as dt

    import pyarrow.parquet as pq

    from gwtools import write_table

    walls = [dt.datetime(2026, 11, 2, 10, 0), dt.datetime(2026, 3, 8, 23, 59, 59, 123456)]
    frame = spark.createDataFrame(
        [("a", walls[0]), ("b", walls[1])], "id string, local timestamp_ntz"
    )
    expected = pd.DataFrame({"id": ["a", "b"], "local": pd.to_datetime(walls)})
    expected.to_csv(tmp_path / "pandas.csv", index=False)
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kuala_Lumpur")
    try:
        write_table(frame.orderBy("id"), tmp_path / "spark.csv", "csv")
        write_table(frame.orderBy("id"), tmp_path / "spark.parquet", "parquet")
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    assert (tmp_path / "spark.csv").read_text() == (tmp_path / "pandas.csv").read_text()
    written = pq.read_table(tmp_path / "spark.parquet")
    assert written.schema.field("local").type.tz is None
    assert written.column("local").to_pylist() == walls
