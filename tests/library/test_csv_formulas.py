"""CSV against spreadsheet formulas (OWASP "CSV Injection"): a text cell that starts with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a leading ``'``;
numbers, flags, times, nulls and Parquet are never touched, and the opt-out writes the text."""

from __future__ import annotations

import csv
import io
import logging
import shutil
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import gwtools
from gwtools import _schema
from gwtools.cache._export import write_table
from gwtools.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample-cache"
NO_KEY = {"GW_API_KEY": "", "GW_BASE_URL": "", "GW_SANDBOX_VARIANT": "none"}

LEADS = ["=", "+", "-", "@", "\t", "\r"]
#: What customers type: each lead character starting a cell.
TYPED = {
    "=": '=HYPERLINK("http://evil.example","click")',
    "+": "+60 12-345 6789",
    "-": "-50% off",
    "@": "@SUM(1+1)",
    "\t": "\tindented",
    "\r": "\r=1+1",
}


def _cells(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _text(path: Path) -> str:
    """The file as written (a carriage return stays one)."""
    return path.read_bytes().decode("utf-8")


def _to_csv(frame: pd.DataFrame) -> str:
    """What pandas writes, except that a cell holding a carriage return is quoted (pandas
    leaves it bare before Python 3.13, and every reader splits the row there)."""
    text: str = frame.to_csv(index=False)
    for cell in frame["description"].dropna().unique():
        if "\r" in cell:
            text = text.replace(cell, f'"{cell}"')
    return text


def _quoted(frame: pd.DataFrame, rows: list[int]) -> pd.DataFrame:
    """``frame`` with a ``'`` before the description of these rows."""
    out = frame.copy()
    for i in rows:
        out.loc[i, "description"] = "'" + str(frame.loc[i, "description"])
    return out


def _payments(descriptions: list[str | None]) -> pd.DataFrame:
    """Canonical payments (pyarrow strings, Int64 amounts, UTC times) with these descriptions."""
    n = len(descriptions)
    return _schema.conform(
        pd.DataFrame(
            {
                "id": [f"pay_{i}" for i in range(n)],
                "amount": [-1500] * n,
                "amount_major": [-15.0] * n,
                "refunded": [False] * n,
                "description": descriptions,
                "created_at": pd.to_datetime(["2026-11-01 08:30:00"] * n, utc=True),
            }
        ),
        "payments",
    )


@pytest.mark.parametrize("lead", LEADS, ids=repr)
def test_each_leading_character_is_quoted(tmp_path: Path, lead: str) -> None:
    frame = _payments([TYPED[lead], "plain"])
    out = tmp_path / "p.csv"
    write_table(frame, out, "csv")
    assert _text(out) == _to_csv(_quoted(frame, [0]))
    assert [r["description"] for r in _cells(out)] == ["'" + TYPED[lead], "plain"]


@pytest.mark.parametrize("lead", LEADS, ids=repr)
def test_the_character_elsewhere_leaves_the_cell_as_it_is(tmp_path: Path, lead: str) -> None:
    frame = _payments([f"Top-up {lead} #79374", " " + TYPED[lead]])
    out = tmp_path / "p.csv"
    write_table(frame, out, "csv")
    assert _text(out) == _to_csv(frame)
    assert [r["description"] for r in _cells(out)] == frame["description"].tolist()


def test_numbers_flags_times_and_nulls_are_written_as_pandas_writes_them(tmp_path: Path) -> None:
    """Negative amounts stay numbers; a null description stays an empty cell (not ``'``)."""
    frame = _payments(["-50% off", None])
    out = tmp_path / "p.csv"
    write_table(frame, out, "csv")
    rows = _cells(out)
    assert [r["amount"] for r in rows] == ["-1500", "-1500"]
    assert [r["amount_major"] for r in rows] == ["-15.0", "-15.0"]
    assert [r["refunded"] for r in rows] == ["False", "False"]
    assert [r["created_at"] for r in rows] == ["2026-11-01 08:30:00+00:00"] * 2
    assert rows[1]["description"] == "" and rows[1]["failure_code"] == ""
    # only the one cell differs from what pandas writes
    assert _text(out) == _quoted(frame, [0]).to_csv(index=False)
    assert frame.loc[0, "description"] == "-50% off"  # the caller's frame is untouched


def test_object_and_categorical_text_columns_are_guarded(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "note": pd.Series(["=1+1", "ok", None], dtype=object),
            "kind": pd.Categorical(["-a", "b", "-a"]),
            "n": [-1, -2, -3],
            "when": pd.to_datetime(["2026-01-01", None, "2026-01-02"]),
        }
    )
    out = tmp_path / "t.csv"
    write_table(frame, out, "csv", rows=2)
    assert _text(out).splitlines() == [
        "note,kind,n,when",
        "'=1+1,'-a,-1,2026-01-01",
        "ok,b,-2,",
        ",'-a,-3,2026-01-02",
    ]


def test_a_lazy_duckdb_table_is_guarded_batch_by_batch(tmp_path: Path) -> None:
    con = duckdb.connect()
    rel = con.sql("select * from (values ('=cmd', -5), ('fine', 1), (NULL, -2)) t(note, n)")
    out = tmp_path / "t.csv"
    guarded: dict[str, int] = {}
    write_table(rel, out, "csv", rows=1, guarded=guarded)
    assert _text(out).splitlines() == ["note,n", "'=cmd,-5", "fine,1", ",-2"]
    assert guarded == {"note": 1}
    con.close()


def test_the_opt_out_writes_the_exact_text(tmp_path: Path) -> None:
    frame = _payments([*TYPED.values(), None])
    out = tmp_path / "p.csv"
    guarded: dict[str, int] = {}
    write_table(frame, out, "csv", formula_guard=False, guarded=guarded)
    assert _text(out) == _to_csv(frame)
    assert [r["description"] for r in _cells(out)] == [*TYPED.values(), ""]
    assert guarded == {}


def test_parquet_keeps_the_exact_text(tmp_path: Path) -> None:
    frame = _payments([*TYPED.values(), None])
    out = tmp_path / "p.parquet"
    write_table(frame, out, "parquet")
    assert pq.read_table(out).column("description").to_pylist() == [*TYPED.values(), None]


def test_the_library_says_it_once_on_its_logger(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    frame = _payments(["=1", "-2", "+3", "ok"])
    guarded: dict[str, int] = {}
    with caplog.at_level(logging.INFO, logger="gwtools"):
        write_table(frame, tmp_path / "p.csv", "csv", rows=1, guarded=guarded)
    assert guarded == {"description": 3}
    said = [r.getMessage() for r in caplog.records if "formula" in r.getMessage()]
    assert len(said) == 1 and "3 cells" in said[0] and "description: 3" in said[0]
    assert "formula_guard=False" in said[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="gwtools"):
        write_table(_payments(["ok"]), tmp_path / "q.csv", "csv")
    assert not caplog.records


def _cache_with_formulas(tmp_path: Path) -> tuple[Path, list[str]]:
    """The sample cache, two of whose payments' descriptions start a formula."""
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    part = sorted((cache / "sandbox" / "test" / "payments").glob("*/*.parquet"))[0]
    table = pq.read_table(part)
    descriptions = table.column("description").to_pylist()
    descriptions[0], descriptions[1] = '=HYPERLINK("x")', "-50% off"
    i = table.schema.get_field_index("description")
    column = pa.array(descriptions, type=table.schema.field(i).type)
    pq.write_table(table.set_column(i, table.schema.field(i), column), part)
    return cache, [table.column("id")[0].as_py(), table.column("id")[1].as_py()]


def test_the_cli_export_says_what_it_quoted_and_the_flag_turns_it_off(tmp_path: Path) -> None:
    cache, ids = _cache_with_formulas(tmp_path)
    out = tmp_path / "p.csv"
    args = ["export", "payments", "--format", "csv", "--out", str(out), "--source", str(cache)]
    result = CliRunner().invoke(main, args, env=NO_KEY)
    assert result.exit_code == 0, result.output
    by_id = {r["id"]: r["description"] for r in _cells(out)}
    assert [by_id[i] for i in ids] == ['\'=HYPERLINK("x")', "'-50% off"]
    notes = [line for line in result.stderr.splitlines() if "formula" in line]
    assert len(notes) == 1
    assert "2 text cells" in notes[0] and "description (2)" in notes[0]
    assert "--no-formula-guard" in notes[0]

    result = CliRunner().invoke(main, [*args, "--no-formula-guard"], env=NO_KEY)
    assert result.exit_code == 0, result.output
    assert "formula" not in result.stderr
    exact = gwtools.read_cache(cache, "payments")
    assert _text(out) == exact.to_csv(index=False)

    # standard output: the note goes to standard error, never into the CSV
    result = CliRunner().invoke(main, [*args[:5], "-", *args[6:]], env=NO_KEY)
    assert result.exit_code == 0, result.output
    assert "formula" not in result.stdout and "2 text cells" in result.stderr
    assert [r["description"] for r in csv.DictReader(io.StringIO(result.stdout))][:2] == [
        '\'=HYPERLINK("x")',
        "'-50% off",
    ]

    # Parquet: the exact text, and nothing said
    parquet = tmp_path / "p.parquet"
    result = CliRunner().invoke(
        main, ["export", "payments", "--format", "parquet", "--out", str(parquet),
               "--source", str(cache)], env=NO_KEY,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "formula" not in result.stderr
    assert set(pq.read_table(parquet).column("description").to_pylist()) >= {
        '=HYPERLINK("x")',
        "-50% off",
    }
