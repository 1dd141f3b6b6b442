"""A part file that cannot be read, on shared storage (a filesystem URL, or ``filesystem=``) as
on a local disk: left out with a warning naming it, or a CacheError naming it and what to do;
never the engine's own error about an "Arrow source".

Shared storage is stood in for by pyarrow's in-memory and local filesystems and fsspec's
memory filesystem (no cloud).
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

import gwtools
from gwtools import analysis as a
from gwtools.cli import main
from tests.engines.conftest import SAMPLE

KINDS = ["pyarrow-memory", "pyarrow-local", "fsspec-url"]


def _damaged_cache(tmp_path: Path, how: str, folder: str = "cache") -> tuple[Path, Path]:
    """A copy of the sample cache with one payments month file zero bytes or cut short (or,
    ``how="readable"``, as it is)."""
    cache = tmp_path / folder
    shutil.copytree(SAMPLE.parents[1], cache)
    (part,) = cache.glob("sandbox/test/payments/created_month=2026-09/*.parquet")
    if how != "readable":
        part.write_bytes(b"" if how == "zero-byte" else part.read_bytes()[:1000])
    return cache, part


def _shared(cache: Path, kind: str) -> tuple[str, dict[str, Any], str]:
    """``cache`` on shared storage: the location to read, the keywords that go with it, and
    the prefix the filesystem names the cache's files with."""
    if kind == "pyarrow-memory":
        memory = pafs._MockFileSystem()
        pafs.copy_files(str(cache), "bucket", destination_filesystem=memory)
        return "bucket", {"filesystem": memory}, "bucket/"
    if kind == "pyarrow-local":
        return "", {"filesystem": pafs.SubTreeFileSystem(str(cache), pafs.LocalFileSystem())}, ""
    fsspec = pytest.importorskip("fsspec")
    root = f"/shared-{uuid.uuid4().hex[:8]}"
    fsspec.filesystem("memory").put(str(cache), root, recursive=True)
    return f"memory://{root}", {}, f"{root}/"


def _name(cache: Path, part: Path, prefix: str) -> str:
    return prefix + part.relative_to(cache).as_posix()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("how", ["zero-byte", "truncated"])
def test_read_cache_of_shared_storage_leaves_a_damaged_file_out_with_a_warning(
    tmp_path: Path, kind: str, how: str
) -> None:
    # DuckDB's "reading the Arrow source failed: Invalid: Could not open Parquet input source
    # …: Parquet file size is 0 bytes" (or "magic bytes not found"), where a local folder's
    # read_cache leaves the file out with a warning.
    cache, part = _damaged_cache(tmp_path, how)
    with pytest.warns(gwtools.GatewayDataWarning, match="rows are missing"):
        local = gwtools.read_cache(cache, "payments")
    where, kw, prefix = _shared(cache, kind)
    name = _name(cache, part, prefix)
    with pytest.warns(gwtools.GatewayDataWarning) as caught:
        shared = gwtools.read_cache(where or "/", "payments", **kw)
    said = [str(w.message) for w in caught if f"{name} cannot be read" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in caught]
    assert "rows are missing" in said[0] and "`gwtools sync`" in said[0]
    assert "read_cache(..., strict=True) raises instead" in said[0]
    pd.testing.assert_frame_equal(shared, local)
    attrs = shared.attrs["gwtools_cache"]
    assert attrs["complete"] is False and attrs["damaged_files"] == [name]
    with pytest.raises(gwtools.CacheError, match="cannot be read"):
        gwtools.read_cache(where or "/", "payments", strict=True, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_scan_cache_of_shared_storage_leaves_a_zero_byte_file_out_with_a_warning(
    tmp_path: Path, kind: str
) -> None:
    # Its size comes with the listing: no request is spent to know it is not Parquet.
    cache, part = _damaged_cache(tmp_path, "zero-byte")
    where, kw, prefix = _shared(cache, kind)
    name = _name(cache, part, prefix)
    with pytest.warns(gwtools.GatewayDataWarning, match=f"{name} cannot be read"):
        lazy = gwtools.scan_cache(where or "/", "payments", **kw)
    with pytest.warns(gwtools.GatewayDataWarning):
        local = gwtools.read_cache(cache, "payments")
    assert set(a.to_pandas(lazy)["id"]) == set(local["id"])
    with pytest.raises(gwtools.CacheError, match="cannot be read"):
        gwtools.scan_cache(where or "/", "payments", strict=True, **kw)
    state = gwtools.cache_state(where or "/", "payments", **kw)
    assert list(state["unreadable_files"]) == [name]


@pytest.mark.parametrize("kind", KINDS)
def test_a_lazy_table_meeting_a_cut_short_file_on_shared_storage_names_it(
    tmp_path: Path, kind: str
) -> None:
    # Only a query reads a footer (a request per file on S3): the analysis raises CacheError
    # naming the file and what to do; scanning again, as it says, leaves the file out.
    cache, part = _damaged_cache(tmp_path, "truncated")
    where, kw, prefix = _shared(cache, kind)
    name = _name(cache, part, prefix)
    lazy = gwtools.scan_cache(where or "/", "payments", **kw)
    with pytest.raises(gwtools.CacheError) as info:
        a.decline_rate(lazy)
    said = str(info.value)
    assert info.value.path == name
    assert f"cannot read {name}" in said and "`gwtools sync`" in said, said
    assert "scan the cache again" in said and "Arrow source" not in said, said
    with pytest.warns(gwtools.GatewayDataWarning, match=f"{name} cannot be read"):
        again = gwtools.scan_cache(where or "/", "payments", **kw)
    with pytest.warns(gwtools.GatewayDataWarning):
        local = gwtools.read_cache(cache, "payments")
    assert set(a.to_pandas(again)["id"]) == set(local["id"])


def test_the_cli_names_a_damaged_file_on_shared_storage_in_one_line(tmp_path: Path) -> None:
    # The CLI looked for DuckDB's "file '…'" and missed pyarrow's "input source '…'":
    # a traceback.
    cache, part = _damaged_cache(tmp_path, "truncated")
    where, _, prefix = _shared(cache, "fsspec-url")
    out = tmp_path / "p.csv"
    args = ["export", "payments", "--format", "csv", "--out", str(out), "--source", where]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.output.count("Error: ") == 1, result.output
    assert f"cannot read {_name(cache, part, prefix)}" in result.output, result.output
    assert "`gwtools sync`" in result.output, result.output


@pytest.mark.parametrize("folder", ["it's a cache", 'a "quoted" cache', "cache ☕"])
def test_a_file_cut_short_after_the_scan_is_named_whatever_its_folder_is_called(
    tmp_path: Path, folder: str
) -> None:
    # The CLI found the file by parsing DuckDB's text for "file '…'": a path holding a quote
    # was missed (a traceback), and the reason carried DuckDB's "LINE 1: SELECT * FROM
    # parquet_scan([…" excerpt. An analysis said DuckDB's raw error.
    from gwtools.cli import error_line

    cache, part = _damaged_cache(tmp_path, "readable", folder)
    lazy = gwtools.scan_cache(cache, "payments")
    part.write_bytes(part.read_bytes()[:1000])  # cut short after the scan read its footer
    with pytest.raises(gwtools.CacheError) as info:
        a.decline_rate(lazy)
    assert info.value.path == str(part)
    said = str(info.value)
    assert f"cannot read {part} (" in said and "scan the cache again" in said, said
    try:
        lazy.df()
    except Exception as exc:  # DuckDB's own error, as a command would let it through
        line = error_line(exc)
    assert line is not None and f"cannot read {part} (" in line, line
    assert "LINE 1" not in line and "`gwtools sync`" in line, line


def _merge_first_month(cache: Path) -> None:
    """What a sync's merge does to a month of several files: the old file goes, a new one
    (here: of the same rows) takes its place under another name."""
    old = sorted(cache.glob("sandbox/test/payments/created_month=*/*.parquet"))[0]
    old.rename(old.with_name("part-09999999999999999999-merged.parquet"))


def test_a_lazy_table_on_shared_storage_whose_file_a_sync_replaced_says_to_scan_again(
    tmp_path: Path,
) -> None:
    # As on a local folder: "the cache changed … scan the cache again", not "damaged inside:
    # gwtools sync --full" (nor, before, pyarrow's "Failed to open local file").
    cache, _ = _damaged_cache(tmp_path, "readable")
    where, kw, _ = _shared(cache, "pyarrow-local")
    lazy = gwtools.scan_cache(where or "/", "payments", **kw)
    _merge_first_month(cache)
    with pytest.raises(gwtools.CacheError, match=r"changed since.*Scan the cache again"):
        a.decline_rate(lazy)
    assert len(gwtools.scan_cache(where or "/", "payments", **kw)) == 2000


def test_read_cache_of_shared_storage_racing_a_syncs_merge_lists_the_files_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A local read lists again when a listed file has gone; a read of a URL raised.
    from gwtools.cache import _scan

    cache, _ = _damaged_cache(tmp_path, "readable")
    where, kw, _ = _shared(cache, "pyarrow-local")
    listed = _scan.dataset_file_infos
    merged: list[bool] = []

    def listing_then_a_merge(fs: pafs.FileSystem, folder: str) -> list[pafs.FileInfo]:
        files = listed(fs, folder)
        if not merged:  # the first listing only: a merge lands just after it
            merged.append(True)
            _merge_first_month(cache)
        return files

    monkeypatch.setattr(_scan, "dataset_file_infos", listing_then_a_merge)
    frame = gwtools.read_cache(where or "/", "payments", **kw)
    assert merged and len(frame) == 2000
    assert frame.attrs["gwtools_cache"]["complete"] is True


def test_writing_a_lazy_table_that_meets_a_damaged_file_names_it(tmp_path: Path) -> None:
    # write_table (gwtools export, save_tables) streams DuckDB's batches: the damage arrived
    # as DuckDB's error, or, met inside the stream, as pyarrow's ArrowInvalid (a ValueError,
    # which `gwtools export` printed raw), depending on when the file was read.
    cache, part = _damaged_cache(tmp_path, "truncated")
    for n in range(3):
        where, _, prefix = _shared(cache, "fsspec-url")  # each round a copy not yet known
        lazy = gwtools.scan_cache(where, "payments")
        with pytest.raises(gwtools.CacheError) as info:
            gwtools.write_table(lazy, tmp_path / f"p{n}.csv", "csv")
        assert info.value.path == _name(cache, part, prefix), str(info.value)
        assert "`gwtools sync`" in str(info.value) and "Arrow source" not in str(info.value)


def test_cache_state_takes_a_filesystem_as_the_readers_do(tmp_path: Path) -> None:
    # read_cache and scan_cache take filesystem=; cache_state did not (TypeError), so a cache
    # read through a filesystem object could not be checked for freshness or damage.
    cache, part = _damaged_cache(tmp_path, "zero-byte")
    where, kw, prefix = _shared(cache, "pyarrow-memory")
    state = gwtools.cache_state(where, "payments", **kw)
    assert state["last_full_sync"] == gwtools.cache_state(cache, "payments")["last_full_sync"]
    assert list(state["unreadable_files"]) == [_name(cache, part, prefix)]


@pytest.mark.parametrize("folder", ['a "quoted" cache', "plain"])
def test_a_file_a_sync_replaced_is_named_whole_whatever_its_folder_is_called(
    tmp_path: Path, folder: str
) -> None:
    # files_gone cut the name out of DuckDB's 'pattern "…"': a folder holding a " was cut
    # at it ('…/a  is gone').
    cache, _ = _damaged_cache(tmp_path, "readable", folder)
    lazy = gwtools.scan_cache(cache, "payments")
    old = sorted(cache.glob("sandbox/test/payments/created_month=*/*.parquet"))[0]
    _merge_first_month(cache)
    with pytest.raises(gwtools.CacheError) as info:
        a.decline_rate(lazy)
    assert info.value.path == str(old)
    assert f"{old} is gone" in str(info.value), str(info.value)


def test_read_cache_of_shared_storage_says_a_bad_state_once(tmp_path: Path) -> None:
    # The state was read twice (is it complete? then for the frame's attrs): every warning
    # about it came twice where warnings are always shown (pytest, some notebooks).
    cache, _ = _damaged_cache(tmp_path, "readable")
    state = cache / "sandbox" / "test" / "payments" / "_state.json"
    state.write_text('{"high_water": "last tuesday", "last_full_sync": "2026-11-24T14:14:54Z"}')
    where = _shared(cache, "fsspec-url")[0]
    for read in (
        lambda: gwtools.read_cache(cache, "payments"),
        lambda: gwtools.read_cache(where, "payments"),
    ):
        with pytest.warns(gwtools.GatewayDataWarning) as caught:
            read()
        said = [str(w.message) for w in caught if "'last tuesday'" in str(w.message)]
        assert len(said) == 1, said
