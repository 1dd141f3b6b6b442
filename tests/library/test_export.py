"""``gwtools.cache._export.write_table``: what lands in the file, and what does not."""

from __future__ import annotations

import csv
import warnings
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from gwtools._errors import ConfigurationError
from gwtools.cache._export import write_table


def test_frame_attrs_stay_out_of_exported_parquet(tmp_path: Path) -> None:
    """A monitor's result carries Timestamps in ``attrs``; pyarrow would warn (naming a library
    path) that it cannot encode them. The rows are exported, the in-memory attrs are not."""
    frame = pd.DataFrame({"kind": ["card_testing", "refund_spike"], "n": [419, 12]})
    frame.attrs["window"] = (pd.Timestamp("2026-11-13", tz="UTC"), pd.Timestamp("2026-11-20"))
    out = tmp_path / "alerts.parquet"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert write_table(frame, out, "parquet", rows=1) == 2
    back = pq.read_table(out)
    assert back.to_pandas().equals(frame)
    assert b"window" not in (back.schema.metadata or {}).get(b"pandas", b"")
    assert "window" in frame.attrs  # the caller's frame keeps its attrs


_TIMES = {
    "fractions and NaT": ["2021-11-01 00:05:08.000001", "2021-11-01 00:05:08.5", None],
    "whole seconds": ["2021-11-01 00:00:00", "2021-11-02 00:00:00", None],
    "milliseconds": ["2021-11-01 00:00:00.25", "2021-11-01 00:00:01"],
    "before 1970": ["1960-11-01 00:00:00.25", "1969-12-31 23:59:59.999999"],
    "a three-digit year": ["0999-01-01 00:00:00.001"],
    "nanoseconds": ["2021-11-01 00:00:00.000000001", "2021-11-01 00:00:00.1"],
    "only NaT": [None, None],
    "nothing": [],
}


@pytest.mark.parametrize(
    ("unit", "case"),
    # nanoseconds reach back to 1677 only
    [
        (u, c)
        for u in ("s", "ms", "us", "ns")
        for c in _TIMES
        if (u, c) != ("ns", "a three-digit year")
    ],
)
@pytest.mark.parametrize("alone", [False, True])
def test_csv_spells_utc_times_as_pandas_does(
    tmp_path: Path, unit: str, case: str, alone: bool
) -> None:
    """Times are spelled in one vectorised pass (pandas goes value by value), to the byte as
    ``to_csv`` spells them: the fraction's digits the column needs, ``+00:00``, NaT empty (and
    ``""`` as a row's only field)."""
    times = pd.Series(pd.to_datetime(_TIMES[case], utc=True, format="ISO8601"))
    frame = pd.DataFrame({"at": times.astype(f"datetime64[{unit}, UTC]")})
    if not alone:
        frame["n"] = range(len(frame))
    out = tmp_path / "t.csv"
    write_table(frame, out, "csv")
    assert out.read_text(encoding="utf-8") == frame.to_csv(index=False)


def test_csv_leaves_other_zones_and_far_years_to_pandas(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "local": pd.Series(pd.to_datetime(["2026-03-01 08:00:00.5"])).dt.tz_localize(
                "Asia/Kuala_Lumpur"
            ),
            "far": pd.Series(pd.to_datetime(["2026-01-01"]))
            .astype("datetime64[s]")
            .dt.tz_localize("UTC")
            + pd.Timedelta(days=365 * 9000),
            "naive": pd.to_datetime(["2026-03-01 08:00:00"]),
        }
    )
    out = tmp_path / "t.csv"
    write_table(frame, out, "csv")
    assert out.read_text(encoding="utf-8") == frame.to_csv(index=False)
    assert "+08:00" in out.read_text(encoding="utf-8")


def test_csv_batches_are_spelled_one_by_one(tmp_path: Path) -> None:
    """Each batch is written as ``to_csv`` writes it: a batch of whole seconds has no fraction
    even when another batch needs one (the file never holds a whole table in memory)."""
    times = pd.to_datetime(["2026-01-01 00:00:00", "2026-01-01 00:00:01.5"], format="ISO8601")
    times = times.tz_localize("UTC")
    frame = pd.DataFrame({"at": times.astype("datetime64[us, UTC]"), "n": [1, 2]})
    out = tmp_path / "t.csv"
    write_table(frame, out, "csv", rows=1)
    assert out.read_text(encoding="utf-8").splitlines() == [
        "at,n",
        "2026-01-01 00:00:00+00:00,1",
        "2026-01-01 00:00:01.500+00:00,2",
    ]


def test_csv_times_under_any_column_name_and_the_callers_frame_untouched(tmp_path: Path) -> None:
    times = pd.to_datetime(["2026-01-01 00:00:01.5"], format="ISO8601").tz_localize("UTC")
    frame = pd.DataFrame({0: times.astype("datetime64[us, UTC]"), 1: [7]})
    out = tmp_path / "t.csv"
    write_table(frame, out, "csv")
    assert out.read_text(encoding="utf-8") == frame.to_csv(index=False)
    assert isinstance(frame[0].dtype, pd.DatetimeTZDtype)


def _same_parquet(out: Path, expected: Path) -> None:
    """The written file holds the types and values of ``expected`` (a pandas ``to_parquet``)."""
    got, want = pq.read_table(out), pq.read_table(expected)
    assert got.schema.remove_metadata() == want.schema.remove_metadata()
    assert got.equals(want)


@pytest.fixture
def db() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute("set timezone = 'UTC'")
    con.execute(
        "create table p as select * from (values "
        "('failed', 100, timestamptz '2026-01-01 10:00:00+00'), "
        "('succeeded', 250, timestamptz '2026-01-01 11:00:00+00'), "
        "('failed', 9007199254740993, timestamptz '2026-01-02 09:30:00+00'), "
        "('succeeded', 7, timestamptz '2026-01-03 00:00:00+00')"
        ") t(status, amount, created_at)"
    )
    yield con
    con.close()


@pytest.mark.parametrize(
    "sql",
    [
        "select status, sum(amount) total_minor from p group by all order by status",
        'select cast(created_at as date) as "day", '
        "case when status = 'failed' then amount end failed_minor from p order by created_at",
        "select status, avg(amount)::decimal(18, 2) mean from p group by all order by status",
    ],
)
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_lazy_results_keep_their_types(
    tmp_path: Path, db: duckdb.DuckDBPyConnection, sql: str, fmt: str
) -> None:
    """A lazy table that is not canonical is written as its DuckDB ``.df()`` would be: sums
    and decimals as numbers, dates as times, integers holding a null as integers."""
    rel = db.sql(sql)
    out = tmp_path / f"t.{fmt}"
    assert write_table(rel, out, fmt, rows=2) == len(rel.df())
    if fmt == "csv":
        # batch by batch (rows=2): each batch's spelling is that batch's .df().to_csv()
        want = "".join(
            db.from_arrow(pa.Table.from_batches([b])).df().to_csv(index=False, header=i == 0)
            for i, b in enumerate(list(rel.to_arrow_reader(2)))
        )
        assert out.read_text(encoding="utf-8") == want
        return
    expected = tmp_path / "expected.parquet"
    rel.df().to_parquet(expected, index=False)
    _same_parquet(out, expected)
    pd.testing.assert_frame_equal(pd.read_parquet(out), rel.df(), check_dtype=False)


@pytest.mark.parametrize(
    "sql",
    [
        "select * from (values (NULL::BOOLEAN), (NULL), (true), (false)) t(a)",
        "select * from (values (NULL::BIGINT), (NULL), (9007199254740993), (1)) t(a)",
        "select * from (values (NULL::VARCHAR, NULL::DATE), (NULL, NULL), ('x', DATE '2026-01-02'))"
        " t(a, b)",
    ],
)
def test_a_lazy_files_schema_is_the_whole_results(
    tmp_path: Path, db: duckdb.DuckDBPyConnection, sql: str
) -> None:
    """The Parquet schema is the result's, not its first batch's (here all nulls)."""
    rel = db.sql(sql)
    out = tmp_path / "t.parquet"
    write_table(rel, out, "parquet", rows=2)
    expected = tmp_path / "expected.parquet"
    rel.df().to_parquet(expected, index=False)
    _same_parquet(out, expected)


@pytest.mark.parametrize(
    "values",
    [
        [1, 2, 3.5, 4],
        [None, None, 9007199254740993, 1],
        [None, None, "a", "b"],
        [1, 2, Decimal("1.25"), Decimal("100.5")],
    ],
)
def test_a_frames_schema_is_the_whole_frames(tmp_path: Path, values: list[Any]) -> None:
    """An object column is typed from all its values, as ``to_parquet`` types it, not from
    the first batch's (3.5 was written as 3)."""
    frame = pd.DataFrame({"a": values}, dtype=object)
    out = tmp_path / "t.parquet"
    write_table(frame, out, "parquet", rows=2)
    expected = tmp_path / "expected.parquet"
    frame.to_parquet(expected, index=False)
    _same_parquet(out, expected)
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(expected))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("where", ["a folder", "no parent", "parent is a file"])
def test_a_path_that_cannot_be_written_is_refused_by_name(
    tmp_path: Path, fmt: str, where: str
) -> None:
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("x")
    out = {
        "a folder": tmp_path / "adir",
        "no parent": tmp_path / "missing" / f"t.{fmt}",
        "parent is a file": tmp_path / "afile" / f"t.{fmt}",
    }[where]
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(ConfigurationError) as info:
        write_table(pd.DataFrame({"a": [1]}), out, fmt)
    message = str(info.value)
    assert str(out) in message
    assert ".tmp" not in message
    assert sorted(tmp_path.rglob("*")) == before  # nothing written


def test_csv_of_an_object_column_mixing_text_and_numbers_is_what_to_csv_writes(
    tmp_path: Path,
) -> None:
    # A pandas frame whose object column holds numbers and text (a drill-down, a table built
    # by hand) wrote no CSV at all: pyarrow's "Could not convert 'x' with type str", raised
    # while typing the Parquet schema the CSV does not use. to_csv writes it.
    frame = pd.DataFrame({"ref": [1, "x", "=HYPERLINK(1)", None], "n": [1.5, 2.0, 3.0, 4.0]})
    exact = tmp_path / "exact.csv"
    assert write_table(frame, exact, "csv", formula_guard=False) == 4
    assert exact.read_text(encoding="utf-8") == frame.to_csv(index=False)
    guarded = tmp_path / "guarded.csv"
    found: dict[str, int] = {}
    write_table(frame, guarded, "csv", guarded=found)
    quoted = frame.assign(ref=[1, "x", "'=HYPERLINK(1)", None])
    assert guarded.read_text(encoding="utf-8") == quoted.to_csv(index=False)
    assert found == {"ref": 1}


@pytest.mark.parametrize("lazy", [False, True], ids=["pandas", "duckdb"])
@pytest.mark.parametrize("formula_guard", [True, False])
def test_csv_quotes_a_bare_carriage_return_so_every_reader_keeps_the_row(
    tmp_path: Path, lazy: bool, formula_guard: bool
) -> None:
    """A failure message or metadata value holding a lone CR (text pasted from an old Mac
    editor or a gateway's log): unquoted, every CSV reader (pandas, Python's csv, Excel)
    ends the row there, so the file gains a row and shifts the columns after it."""
    text = ["card\rdeclined", "ok", "two\r\nlines", "\rstarts", None]
    frame = pd.DataFrame({"failure_message": text, "amount": [1, 2, 3, 4, 5]})
    table: Any = duckdb.from_df(frame) if lazy else frame
    out = tmp_path / "t.csv"
    assert write_table(table, out, "csv", formula_guard=formula_guard, rows=2) == 5
    raw = out.read_bytes()
    assert b'"card\rdeclined"' in raw  # quoted, as RFC 4180 and Excel quote it
    assert raw.count(b"\r") == 3  # only the ones in the text: rows end with \n as before
    back = pd.read_csv(out, keep_default_na=False)
    lead = "'" if formula_guard else ""  # (a CR first is a formula's start: guarded)
    assert back["failure_message"].tolist() == [*text[:3], lead + "\rstarts", ""]
    assert back["amount"].tolist() == [1, 2, 3, 4, 5]

    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert len(rows) == 6 and rows[1] == ["card\rdeclined", "1"]
