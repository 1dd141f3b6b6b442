"""A part file is on disk before it is renamed into the dataset, and the rename is on disk
before the writer goes on (to the state that counts on it): after a power cut, a month's file
is the old one or the whole new one, never an empty or torn one.

A power cut cannot be played in a test; what can be checked is the order of the calls that
make it safe. ``os.fsync`` and ``os.replace`` are wrapped (still called) to record, by inode,
what was flushed and what was renamed where.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

import gwtools
from gwtools.cache import _dataset as _cache
from gwtools.cache._dataset import Dataset
from tests.library.test_cache import frame


class _Calls:
    """``("fsync", (dev, inode), is_dir)`` and ``("replace", (dev, inode), destination)``
    in call order."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.events: list[tuple[str, tuple[int, int], Any]] = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd: int) -> None:
            st = os.fstat(fd)
            self.events.append(("fsync", (st.st_dev, st.st_ino), stat.S_ISDIR(st.st_mode)))
            real_fsync(fd)

        def replace(src: Any, dst: Any, **kwargs: Any) -> None:
            st = os.stat(src)
            real_replace(src, dst, **kwargs)
            self.events.append(("replace", (st.st_dev, st.st_ino), Path(dst)))

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)

    def renamed_to(self, path: Path) -> int:
        """Where the last rename to ``path`` is in :attr:`events` (-1 if none)."""
        found = [i for i, e in enumerate(self.events) if e[0] == "replace" and e[2] == path]
        return found[-1] if found else -1

    def arrived(self, path: Path) -> int:
        """Where ``path`` got its name in the dataset: renamed there, or (a new month's
        file) its folder renamed there with it (-1 if neither)."""
        return max(self.renamed_to(path), self.renamed_to(path.parent))

    def flushed(self, path: Path) -> bool:
        """Whether the file at ``path`` was flushed before it got its name: the nearest
        earlier event on its inode, past its renames under that file name, is a flush (a
        deleted file's inode is reused, so events further back may be another file's)."""
        node = _node(path)
        for kind, n, where in reversed(self.events[: self.arrived(path)]):
            if n == node and not (kind == "replace" and where.name == path.name):
                return bool(kind == "fsync")
        return False


def _node(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def test_part_files_and_their_renames_reach_the_disk_before_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    rows = [(f"pay_{i:04d}", "succeeded", f"2024-0{1 + i % 3}-1{i % 9}") for i in range(300)]
    calls = _Calls(monkeypatch)
    with ds.lock():
        ds.write_batch(frame(rows))  # a new month folder for each of three months
        ds.write_state({"high_water": "2024-03-20T00:00:00+00:00"})
        ds.write_batch(frame([("pay_0001", "failed", "2024-02-11")]))  # over an existing file

    files = sorted(ds.path.glob("created_month=*/*.parquet"))
    assert len(files) == 3
    for f in [*files, ds.state_path]:
        renamed = calls.arrived(f)
        assert renamed >= 0, f"{f} was not renamed into place"
        assert calls.flushed(f), f"{f} was renamed into the dataset before it was flushed"
        # The rename on disk before the next file is written or the state is.
        folder = f.parent if calls.events[renamed][2] == f else f.parent.parent
        if folder != f.parent:  # a new month: its folder's entry (the file) on disk first
            assert calls.events[renamed - 1] == ("fsync", _node(f.parent), True)
        assert calls.events[renamed + 1] == ("fsync", _node(folder), True), (
            f"{folder} was not flushed right after the rename"
        )

    # What was written reads back whole.
    back = ds.read().set_index("id")
    assert len(back) == 300 and back.loc["pay_0001", "status"] == "failed"


def test_merged_batches_are_deleted_on_disk_before_the_state_moves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A merged batch brought back by a power cut would be merged again, over a later sync's
    # newer rows (its number is above the month file's): its deletion must be flushed.
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    with ds.lock():
        ds.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
        months = ds.stage_batch(frame([("pay_0001", "failed", "2024-01-10")]))
        staging = _node(ds.staging_path)
        staged = sorted(ds.staging_path.rglob("*.parquet"))
        assert staged
        # The batches are entries of their month's folder in staging, not of staging itself:
        # flushing staging alone does not put their deletions on disk.
        (month_folder,) = {_node(f.parent) for f in staged}
        calls = _Calls(monkeypatch)
        deleted: list[int] = []
        real_unlink = os.unlink

        def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
            if Path(path) in staged:
                deleted.append(len(calls.events))
            real_unlink(path, *args, **kwargs)

        monkeypatch.setattr(os, "unlink", unlink)
        ds.compact(months)
        ds.write_state({"high_water": "2024-01-10T00:00:00+00:00"})

    assert len(deleted) == len(staged)
    state = calls.renamed_to(ds.state_path)
    flushed = [
        i for i, e in enumerate(calls.events) if e == ("fsync", staging, True) and i >= deleted[-1]
    ]
    assert flushed and flushed[0] < state, "the staged batches' deletions were not flushed"
    in_month = [
        i
        for i, e in enumerate(calls.events)
        if e == ("fsync", month_folder, True) and i >= deleted[-1]
    ]
    assert in_month and in_month[0] < state, (
        "the staged batches' month folder was not flushed after their deletion"
    )
    assert ds.read().set_index("id").loc["pay_0001", "status"] == "failed"


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_exported_file_reaches_the_disk_before_its_name_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    # write_table wrote to a temporary name and renamed it over the target without flushing
    # either: after a power cut, a report's file could be empty or torn under its final name
    # (and the old version gone), the very thing the rename was there to prevent.
    from gwtools.cache._export import write_table

    out = tmp_path / f"payments.{fmt}"
    out.write_text("the previous export\n")
    calls = _Calls(monkeypatch)
    assert write_table(frame([("pay_0001", "succeeded", "2024-01-10")]), out, fmt) == 1
    renamed = calls.renamed_to(out)
    assert renamed >= 0 and calls.flushed(out), "the export was renamed before it was flushed"
    assert calls.events[renamed + 1] == ("fsync", _node(tmp_path), True), (
        "the export's folder was not flushed after the rename"
    )
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary left


def test_a_state_write_stopped_by_ctrl_c_leaves_no_temporary_and_the_old_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every writer removes its temporary on any exception, KeyboardInterrupt included.
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    ds.write_state({"high_water": "2024-01-10T00:00:00+00:00"})

    def interrupt(step: str) -> None:
        if step == "state.tmp-written":
            raise KeyboardInterrupt

    monkeypatch.setattr(_cache, "on_step", interrupt)
    with pytest.raises(KeyboardInterrupt):
        ds.write_state({"high_water": "2024-02-10T00:00:00+00:00"})
    monkeypatch.setattr(_cache, "on_step", None)
    assert ds.state()["high_water"] == "2024-01-10T00:00:00+00:00"
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]


def test_months_a_full_sync_drops_are_gone_on_disk_before_the_state_moves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A complete full sync removes the months it did not see, then writes its state. Nothing
    # flushed those removals: after a power cut a dropped month could come back, holding rows
    # the gateway no longer lists, under a state that says the cache equals the gateway.
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    with ds.lock():
        ds.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
        ds.write_batch(frame([("pay_0002", "succeeded", "2024-02-10")]))
        (dropped,) = (ds.path / "created_month=2024-02").glob("*.parquet")
        since = _cache._next_seq()
        months = ds.stage_batch(frame([("pay_0001", "failed", "2024-01-10")]))
        calls = _Calls(monkeypatch)
        deleted: list[int] = []
        real_unlink = os.unlink

        def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
            if Path(path) == dropped:
                deleted.append(len(calls.events))
            real_unlink(path, *args, **kwargs)

        monkeypatch.setattr(os, "unlink", unlink)
        ds.compact(months, since_seq=since, replace=True)
        ds.write_state({"high_water": "2024-01-10T00:00:00+00:00"})

    assert deleted and not dropped.parent.exists()
    state = calls.renamed_to(ds.state_path)
    flushed = [
        i
        for i, e in enumerate(calls.events)
        if e == ("fsync", _node(ds.path), True) and i >= deleted[0]
    ]
    assert flushed and flushed[0] < state, "the dropped month's removal was not flushed"
    assert list(ds.read()["id"]) == ["pay_0001"]


def test_the_folders_a_first_sync_creates_are_on_disk_before_its_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first sync creates the cache folder, the account's and mode's folders and the
    # dataset's: each is an entry of the folder above it, and only flushing that folder puts
    # the entry on disk. Nothing did: after a power cut the state and every month file could
    # be written and flushed inside folders whose own names were lost, the whole cache gone.
    cache = tmp_path / "cache"
    ds = Dataset.at(cache, "acct", "test", "payments")
    calls = _Calls(monkeypatch)
    with ds.lock():
        ds.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
        ds.write_state({"high_water": "2024-01-10T00:00:00+00:00"})
    state = calls.renamed_to(ds.state_path)
    flushed = {e[1] for e in calls.events[:state] if e[0] == "fsync" and e[2]}
    for created in (cache, cache / "acct", cache / "acct" / "test", ds.path):
        assert _node(created.parent) in flushed, (
            f"{created.parent} was not flushed after {created.name} was created in it"
        )

    # Once: a later sync of the same folders flushes no folder above the dataset.
    calls.events.clear()
    with ds.lock():
        ds.write_batch(frame([("pay_0001", "failed", "2024-01-10")]))
    above = {_node(p) for p in (tmp_path, cache, cache / "acct", cache / "acct" / "test")}
    assert not [e for e in calls.events if e[0] == "fsync" and e[1] in above]


def test_a_quarantined_file_is_on_disk_in_quarantine_before_its_month_moves_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A damaged file is moved to _quarantine "kept for inspection". Nothing flushed the move
    # or the new _quarantine folders: the merge that follows flushes the month folder (the
    # file's removal), so after a power cut the file could be gone from both places.
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    with ds.lock():
        ds.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
    damaged = ds.path / "created_month=2024-01" / "part-00000000000000000001-deadbeef.parquet"
    damaged.write_bytes(b"")
    calls = _Calls(monkeypatch)
    with pytest.warns(gwtools.GatewayDataWarning, match="could not be read"), ds.lock():
        pass
    (moved,) = ds.quarantine_path.rglob("*.parquet")
    at = calls.renamed_to(moved)
    assert at >= 0
    after = [e for e in calls.events[at + 1 :] if e[0] == "fsync"]
    assert ("fsync", _node(moved.parent), True) in after, "the move was not flushed"
    # Each folder the move created is flushed into the one holding it.
    flushed = {e[1] for e in calls.events if e[0] == "fsync"}
    for created in (ds.quarantine_path.parent, ds.quarantine_path, moved.parent):
        assert _node(created.parent) in flushed, f"{created} was created but not flushed"
