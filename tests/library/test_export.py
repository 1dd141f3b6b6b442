"""``gwtools.cache._export.write_table``: what lands in the file, and what does not."""

from __future__ import annotations

import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

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
