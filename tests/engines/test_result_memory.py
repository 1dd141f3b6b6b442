"""A table asked for in memory that would not fit stops with ResultTooLargeError, not a dead
kernel: ``read_cache`` (and so ``payments()``) and the row-level results of lazy tables.

Budgets are set through ``GW_MAX_RESULT_MEMORY`` around the measured size of each result, so
each test fails if the limit is off by one batch's worth or not applied at all.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import gwtools
from gwtools import _memory
from gwtools import analysis as a
from gwtools.cache._dataset import Dataset
from tests.engines.test_scan import _two_files

ENV = "GW_MAX_RESULT_MEMORY"


def _read_bytes(cache: Path, **filters: object) -> int:
    """The Arrow bytes ``read_cache`` builds for this selection (the meter's count)."""
    seen: list[int] = []
    original = _memory.ResultMeter.add

    def add(self: _memory.ResultMeter, nbytes: int, rows: int) -> None:
        seen.append(nbytes)
        original(self, nbytes, rows)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_memory.ResultMeter, "add", add)
        mp.setenv(ENV, "off")
        gwtools.read_cache(cache, "payments", **filters)  # type: ignore[arg-type]
    return sum(seen)


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8GB", 8 * 10**9),
        ("512MiB", 512 * 2**20),
        ("1.5 gb", 15 * 10**8),
        ("20000", 20_000),
        ("3kb", 3_000),
        ("off", None),
        ("OFF", None),
        ("none", None),
        ("0", None),
    ],
)
def test_sizes_are_read_as_people_write_them(text: str, size: int | None) -> None:
    assert _memory.parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "8 parsecs", "-1GB", "GB", "1e9"])
def test_a_size_that_is_not_one_is_refused_naming_the_variable(text: str) -> None:
    with pytest.raises(gwtools.ConfigurationError, match=f"{ENV}=.*8GB.*off"):
        _memory.parse_size(text)


def test_the_default_budget_is_a_share_of_the_usable_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    usable = _memory.usable_memory()
    assert usable is not None and usable > 0  # Linux: sysconf and cgroups are readable
    budget, source = _memory.result_budget()
    assert budget == int(usable * 0.4)
    assert "40% of the" in source and ENV in source
    monkeypatch.setenv(ENV, "2GB")
    assert _memory.result_budget() == (2 * 10**9, f"{ENV}=2GB")


def test_a_container_limit_below_the_machine_is_the_usable_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    v2, v1 = tmp_path / "memory.max", tmp_path / "limit_in_bytes"
    monkeypatch.setattr(_memory, "_CGROUP_LIMITS", (v2, v1))
    machine = _memory.usable_memory()  # neither file: the machine's memory
    assert machine is not None
    v2.write_text(f"{2**30}\n")
    assert _memory.usable_memory() == min(machine, 2**30)
    v2.write_text("max\n")  # v2 without a limit: the v1 file is read next
    v1.write_text(f"{machine * 4}\n")  # a v1 "limit" above the machine's memory is none
    assert _memory.usable_memory() == machine
    v1.write_text(f"{2**29}\n")
    assert _memory.usable_memory() == 2**29


def test_read_cache_stops_past_the_budget_and_reads_up_to_it(
    engine_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = _read_bytes(engine_cache)
    monkeypatch.setenv(ENV, str(whole))
    expected = gwtools.read_cache(engine_cache, "payments")  # exactly at the budget: read
    monkeypatch.setenv(ENV, "off")
    pd.testing.assert_frame_equal(expected, gwtools.read_cache(engine_cache, "payments"))

    monkeypatch.setenv(ENV, str(whole - 1))
    with pytest.raises(gwtools.ResultTooLargeError) as caught:
        gwtools.read_cache(engine_cache, "payments")
    error = caught.value
    assert isinstance(error, MemoryError) and isinstance(error, gwtools.GatewayError)
    text = str(error)
    assert "Reading the cached payments at" in text and "into pandas" in text
    assert f"{ENV}={whole - 1}" in text  # where the budget came from
    assert "since=, until=, status=" in text and "gwtools.scan_cache(path, 'payments')" in text
    assert f"set {ENV} higher" in text


def test_a_status_read_counts_only_the_rows_of_that_status(
    engine_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failed = _read_bytes(engine_cache, status="failed")
    assert 0 < failed < _read_bytes(engine_cache) / 3  # the filter ran in the scan
    monkeypatch.setenv(ENV, str(failed))
    got = gwtools.read_cache(engine_cache, "payments", status="failed")
    assert len(got) > 0 and set(got["status"]) == {"failed"}
    monkeypatch.setenv(ENV, "off")
    pd.testing.assert_frame_equal(
        got, gwtools.read_cache(engine_cache, "payments", status="failed")
    )


def test_a_cache_an_interrupted_sync_left_is_metered_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _two_files(tmp_path)
    monkeypatch.setenv(ENV, "100")  # less than the first file's rows
    with pytest.raises(gwtools.ResultTooLargeError, match="after 2 rows"):
        gwtools.read_cache(tmp_path, "payments")
    # The sync's own reads (planning, compaction) are not results: never stopped.
    table = Dataset(tmp_path / "payments", "payments").read_table()
    assert sorted(table["id"].to_pylist()) == ["pay_1", "pay_2"]


def test_a_bad_budget_is_a_configuration_error_before_reading(
    engine_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, "plenty")
    with pytest.raises(gwtools.ConfigurationError, match=f"{ENV}='plenty' is not a size"):
        gwtools.read_cache(engine_cache, "payments")


def _arrow_bytes(frame: pd.DataFrame) -> int:
    return int(pa.Table.from_pandas(frame, preserve_index=False).nbytes)


def test_row_level_results_of_lazy_tables_stop_past_the_budget(
    engine_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lazy = gwtools.scan_cache(engine_cache, "payments")
    monkeypatch.setenv(ENV, "off")
    rows = a.classify_declines(lazy)
    small = a.decline_rate(lazy, by="method_type")
    # A budget between the two: the per-group result comes back, the per-payment one stops.
    budget = _arrow_bytes(rows) // 2
    assert _arrow_bytes(small) * 4 < budget
    monkeypatch.setenv(ENV, str(budget))
    pd.testing.assert_frame_equal(a.decline_rate(lazy, by="method_type"), small)
    with pytest.raises(gwtools.ResultTooLargeError) as caught:
        a.classify_declines(lazy)
    text = str(caught.value)
    assert "A lazy table's rows collected to pandas reached" in text
    assert "analysis.between(table, start, end)" in text and f"{ENV}={budget}" in text
    # Narrowed first, the same rows fit.
    month = a.between(lazy, "2026-10-01", "2026-11-01")
    monkeypatch.setenv(ENV, "off")
    expected = a.classify_declines(month)
    assert 0 < len(expected) < len(rows)
    monkeypatch.setenv(ENV, str(budget))
    pd.testing.assert_frame_equal(a.classify_declines(month), expected)
