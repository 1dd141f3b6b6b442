"""The Parquet cache on hand-made canonical frames: merging, crash leftovers, reading back."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import filelock
import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

import gwtools
from gwtools._schema import columns, conform
from gwtools.cache import _dataset as _cache
from gwtools.cache._dataset import Dataset, _next_seq, find_dataset, read_cache, to_arrow


def frame(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    """(id, status, created_at) rows -> a canonical payments frame."""
    return conform(
        pd.DataFrame(
            {
                "id": [r[0] for r in rows],
                "status": [r[1] for r in rows],
                "created_at": [r[2] for r in rows],
                "amount": [100] * len(rows),
                "currency": ["MYR"] * len(rows),
            }
        ),
        "payments",
    )


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    return Dataset.at(tmp_path, "acct", "test", "payments")


def synced(ds: Dataset) -> None:
    """Record a completed sync, as the sync does last (else reads warn that it is partial)."""
    ds.write_state({"last_full_sync": "2024-07-01T00:00:00+00:00"})


def legacy_file(ds: Dataset, rows: list[tuple[str, str, str]]) -> Path:
    """A part file written straight into its month folder, as gwtools before staging did."""
    table = to_arrow(frame(rows), "payments")
    month = rows[0][2][:7]
    path = ds.path / f"created_month={month}" / f"part-{_next_seq():020d}-0badc0de.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def test_round_trip_keeps_canonical_dtypes_and_partitions_by_month(
    ds: Dataset, tmp_path: Path
) -> None:
    with ds.lock():
        ds.write_batch(
            frame(
                [
                    ("pay_1", "pending", "2024-05-31T23:59:59Z"),
                    ("pay_2", "failed", "2024-06-01T00:00:00Z"),
                ]
            )
        )
        synced(ds)
    back = read_cache(tmp_path, "payments")
    assert back.attrs["gwtools_cache"]["complete"] is True
    assert list(back.columns) == list(columns("payments"))
    assert back.dtypes.to_dict() == columns("payments")
    assert back["id"].tolist() == ["pay_1", "pay_2"]
    months = sorted(p.name for p in ds.path.iterdir() if p.is_dir())
    assert months == ["created_month=2024-05", "created_month=2024-06"]
    # Plain hive-partitioned Parquet: any reader sees the rows and the partition column.
    table = pads.dataset(str(ds.path), format="parquet", partitioning="hive").to_table()
    assert sorted(table.column("created_month").to_pylist()) == ["2024-05", "2024-06"]


def test_newest_version_wins_and_merge_counts(ds: Dataset) -> None:
    with ds.lock():
        months = ds.stage_batch(
            frame([("pay_1", "pending", "2024-05-02"), ("pay_2", "pending", "2024-05-03")])
        )
        assert ds.read_table().num_rows == 0  # staged rows are not in the dataset until compacted
        assert ds.compact(months).new == 2
        seq = _next_seq()
        months = ds.stage_batch(
            frame(
                [
                    ("pay_1", "succeeded", "2024-05-02"),
                    ("pay_2", "pending", "2024-05-03"),
                    ("pay_3", "failed", "2024-05-04"),
                ]
            )
        )
        stats = ds.compact(months, since_seq=seq)
        synced(ds)
    assert (stats.new, stats.updated, stats.unchanged) == (1, 1, 1)
    back = ds.read()
    assert back.set_index("id")["status"].to_dict() == {
        "pay_1": "succeeded",
        "pay_2": "pending",
        "pay_3": "failed",
    }
    assert len(list((ds.path / "created_month=2024-05").glob("*.parquet"))) == 1


def test_uncompacted_leftovers_read_correctly_and_any_writer_compacts_them(ds: Dataset) -> None:
    """Several files in a month (older gwtools, or a compaction killed half-way): readers
    see one row per id, and the next compaction merges the month even when it did not
    touch it, so DuckDB reading the files directly counts one row per id."""
    legacy_file(ds, [("pay_1", "pending", "2024-05-02"), ("pay_2", "pending", "2024-05-03")])
    legacy_file(ds, [("pay_1", "succeeded", "2024-05-02")])
    (ds.path / "created_month=2024-05" / ".tmp-part-half-written.parquet").write_bytes(
        b"PAR1garbage"
    )
    synced(ds)
    back = ds.read()
    assert sorted(zip(back["id"], back["status"], strict=True)) == [
        ("pay_1", "succeeded"),
        ("pay_2", "pending"),
    ]
    assert ds.read(status="pending")["id"].tolist() == ["pay_2"]
    with ds.lock():  # the next writer clears temporaries and compacts every crowded month
        ds.compact({"2024-06"})
    assert not list(ds.path.rglob(".tmp-*"))
    assert len(ds._files("2024-05")) == 1
    assert ds.read()["id"].tolist() == ["pay_1", "pay_2"]
    glob = f"{ds.path}/**/*.parquet"
    assert duckdb.sql(f"select count(*), count(distinct id) from '{glob}'").fetchall() == [(2, 2)]


def test_replace_keeps_only_the_rows_of_a_complete_full_sync(ds: Dataset) -> None:
    ds.write_batch(frame([("pay_old", "failed", "2024-01-05"), ("pay_1", "pending", "2024-05-02")]))
    seq = _next_seq()
    months = ds.stage_batch(frame([("pay_1", "succeeded", "2024-05-02")]))
    ds.compact(months, since_seq=seq, replace=True)
    synced(ds)
    assert ds.read()["id"].tolist() == ["pay_1"]
    assert not (ds.path / "created_month=2024-01").exists()


def test_filters(ds: Dataset, tmp_path: Path) -> None:
    ds.write_batch(
        frame(
            [
                ("a", "failed", "2024-05-01T10:00:00Z"),
                ("b", "succeeded", "2024-05-02T00:00:00Z"),
                ("c", "failed", "2024-06-01T00:00:00Z"),
            ]
        )
    )
    synced(ds)
    assert read_cache(tmp_path, "payments", since="2024-05-01T10:00", until="2024-06-01")[
        "id"
    ].tolist() == ["a", "b"]
    assert read_cache(tmp_path, "payments", status=["failed"])["id"].tolist() == ["a", "c"]
    with pytest.raises(ValueError, match="not a date"):
        read_cache(tmp_path, "payments", since="last tuesday")


def test_find_dataset_by_root_account_or_dataset_dir(ds: Dataset, tmp_path: Path) -> None:
    ds.write_batch(frame([("a", "failed", "2024-05-01")]))
    for where in (tmp_path, tmp_path / "acct", tmp_path / "acct" / "test", ds.path):
        assert find_dataset(where, "payments").path == ds.path
    live = Dataset.at(tmp_path, "acct", "live", "payments")
    live.write_batch(frame([("c", "failed", "2024-05-01")]))
    synced(live)
    with pytest.raises(ValueError, match="account='acct' mode='test', account='acct' mode='live'"):
        find_dataset(tmp_path / "acct", "payments")
    assert find_dataset(tmp_path / "acct", "payments", mode="live").path == live.path
    shutil.rmtree(live.path.parent)
    other = Dataset.at(tmp_path, "other", "test", "payments")
    other.write_batch(frame([("b", "failed", "2024-05-01")]))
    synced(other)
    with pytest.raises(ValueError, match="account="):
        find_dataset(tmp_path, "payments")
    assert read_cache(tmp_path, "payments", account="other", mode="test")["id"].tolist() == ["b"]
    with pytest.raises(FileNotFoundError, match="sync"):
        read_cache(tmp_path / "nothing", "payments")
    with pytest.raises(ValueError, match="not one gwtools reads"):
        read_cache(tmp_path, "charges")  # type: ignore[arg-type]


def test_second_writer_waits_for_the_lock(ds: Dataset) -> None:
    order: list[str] = []
    held = threading.Event()

    def second() -> None:
        try:
            ds.file_lock(timeout=0).acquire()
            order.append("got the lock while it was held")
        except filelock.Timeout:
            held.set()  # it is held: now wait for it
        with ds.lock():
            order.append("second")

    with ds.lock():
        t = threading.Thread(target=second)
        t.start()
        assert held.wait(30)
        order.append("first done")
    t.join(30)
    assert order == ["first done", "second"]


def test_state_and_rejects(ds: Dataset) -> None:
    assert ds.state() == {}
    ds.write_state({"high_water": "2024-05-01T00:00:00+00:00"})
    assert (
        ds.state()["high_water"] == "2024-05-01T00:00:00+00:00"
        and ds.state()["schema_version"] == 1
    )
    from gwtools.normalize._normalize import Reject

    assert (
        ds.append_rejects([Reject("payments", "record has no id", '{"amount": 5}')], sync_id="s1")
        == 1
    )
    rejects = ds.rejects()
    assert rejects[["reason", "record", "sync_id"]].values.tolist() == [
        ["record has no id", '{"amount": 5}', "s1"]
    ]


def test_rejects_survive_a_sync_killed_while_appending(ds: Dataset) -> None:
    from gwtools.normalize._normalize import Reject

    first = Reject("payments", "record has no id", '{"amount": 5}')
    ds.append_rejects([first, first], sync_id="s1")
    whole = ds.rejects_path.read_bytes()
    # What a kill in the middle of the second line's write leaves on disk.
    ds.rejects_path.write_bytes(whole[: len(whole.splitlines()[0]) + 1 + 17])
    ds.append_rejects([Reject("payments", "amount is not a number", "{}")], sync_id="s2")
    with pytest.warns(gwtools.GatewayDataWarning, match=r"line 2 is not a whole record"):
        rejects = ds.rejects()
    assert rejects[["reason", "sync_id"]].values.tolist() == [
        ["record has no id", "s1"],
        ["amount is not a number", "s2"],
    ]
    # Whole again: a later append adds no blank line, reads warn no more, and the record
    # rejected again by a later sync keeps only that sync's line.
    ds.rejects_path.write_bytes(whole)
    ds.append_rejects([first], sync_id="s3")
    assert ds.rejects_path.read_bytes().count(b"\n\n") == 0
    assert ds.rejects()["sync_id"].tolist() == ["s1", "s1", "s3"]
    ds.prune_rejects("s3")
    assert ds.rejects()["sync_id"].tolist() == ["s3"]


#: Every step a compaction passes (each one a moment a reader can arrive in).
COMPACT_STEPS = {
    "compact.start",
    "compact.tmp-open",
    "compact.tmp-written",
    "compact.renamed",
    "compact.replaced",
    "compact.month-done",
}


def test_reading_while_another_sync_compacts(
    ds: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader that arrives at any step of a compaction (the writer is held there until the
    reader is done) sees every id once, in one sync's version: read_cache, and DuckDB reading
    the files directly; no temporary or partial file is ever in the dataset folder."""
    monkeypatch.setattr("gwtools.cache._dataset._ROW_GROUP", 40)  # several chunks per month
    ids = sorted(f"pay_{i:03d}" for i in range(200))
    months = {f"2024-0{m}" for m in range(1, 7)}

    def rows(version: str) -> list[tuple[str, str, str]]:
        return [(i, version, f"2024-0{1 + n % 6}-15T00:00:00Z") for n, i in enumerate(ids)]

    with ds.lock():
        ds.write_batch(frame(rows("pending")))
        synced(ds)
    arrived = threading.Event()
    done = threading.Event()
    abort = threading.Event()  # the reader failed: let the writer run to its end
    steps: list[str] = []
    seen: list[tuple[str, int, int, set[str]]] = []

    def hold(name: str) -> None:  # runs in the writer thread: wait for the reader
        steps.append(name)
        if name.startswith("compact.") and not abort.is_set():
            arrived.set()
            assert done.wait(60), "the reader never finished"
            done.clear()

    def writer() -> None:
        with ds.lock():
            since = _next_seq()
            ds.stage_batch(frame(rows("succeeded")))
            ds.compact(months, since_seq=since)
        arrived.set()

    monkeypatch.setattr(_cache, "on_step", hold)
    thread = threading.Thread(target=writer)
    thread.start()
    glob = f"{ds.path}/**/*.parquet"
    try:
        while True:
            assert arrived.wait(60), "the writer never reached a step"
            arrived.clear()
            if not thread.is_alive() or not steps or not steps[-1].startswith("compact."):
                break
            got = read_cache(tmp_path, "payments")
            assert not list(ds.path.rglob(".tmp-*"))
            engine = duckdb.sql(f"select count(*), count(distinct id) from '{glob}'").fetchall()[0]
            seen.append((steps[-1], *engine, set(got["status"])))
            assert sorted(got["id"]) == ids
            done.set()
    finally:
        abort.set()
        done.set()
        thread.join(60)
    assert {s for s, *_ in seen} == COMPACT_STEPS
    assert all(total == distinct == len(ids) for _, total, distinct, _ in seen), seen
    assert {"pending"} in [v for *_, v in seen] and {"succeeded"} in [v for *_, v in seen]
    assert ds.read()["status"].unique().tolist() == ["succeeded"]


def _versions(n: int, status: str, day: int = 2) -> list[tuple[str, str, str]]:
    """n payments created a second apart on 2024-05-<day>, all with ``status``."""
    return [
        (
            f"pay_{i:05d}",
            status,
            f"2024-05-{day:02d}T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
        )
        for i in range(n)
    ]


def test_compaction_streams_a_month_bigger_than_one_chunk(
    ds: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows are chosen by key and copied chunk by chunk: every chunk boundary keeps the
    newest version of each id, one row per id, in creation order, and counts it once."""
    monkeypatch.setattr("gwtools.cache._dataset._ROW_GROUP", 7)  # many chunks and row groups
    old = _versions(100, "pending")
    with ds.lock():
        ds.write_batch(frame(old[::-1]))  # written newest first, as lists come
        seq = _next_seq()
        # This sync: ids 10..39 twice (the later file wins), 90..119 (100..119 are new).
        ds.stage_batch(frame([(i, "failed", c) for i, _, c in old[10:40]]))
        ds.stage_batch(frame([(i, "succeeded", c) for i, _, c in old[10:40:2]]))
        ds.stage_batch(frame(_versions(120, "pending")[90:]))
        stats = ds.compact({"2024-05"}, since_seq=seq)
        synced(ds)
    assert (stats.new, stats.updated, stats.unchanged) == (20, 30, 10)
    files = list((ds.path / "created_month=2024-05").glob("*.parquet"))
    assert len(files) == 1 and pq.ParquetFile(files[0]).num_row_groups == 120 // 7 + 1
    back = ds.read()
    assert back["id"].tolist() == [f"pay_{i:05d}" for i in range(120)]  # creation order
    status = back.set_index("id")["status"]
    expected = {i: "pending" for i in range(120)}
    expected.update({i: "failed" for i in range(10, 40)})
    expected.update({i: "succeeded" for i in range(10, 40, 2)})
    assert status.to_dict() == {f"pay_{i:05d}": s for i, s in expected.items()}


def test_replace_streams_only_this_syncs_rows(ds: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("gwtools.cache._dataset._ROW_GROUP", 5)
    with ds.lock():
        ds.write_batch(frame(_versions(40, "pending")))
        seq = _next_seq()
        months = ds.stage_batch(frame(_versions(30, "succeeded")[5:]))
        months |= ds.stage_batch(frame(_versions(30, "failed")[20:]))
        stats = ds.compact(months, since_seq=seq, replace=True)
        synced(ds)
    assert (stats.new, stats.updated, stats.unchanged) == (0, 25, 0)
    status = ds.read().set_index("id")["status"]
    assert status.to_dict() == {
        f"pay_{i:05d}": "failed" if i >= 20 else "succeeded" for i in range(5, 30)
    }


_CRASHING_WRITER = """
import sys
from gwtools.cache import _dataset as _cache
from gwtools.cache._dataset import Dataset, _next_seq
from tests.library.test_cache import _versions, frame

_cache._ROW_GROUP = 500  # several chunks per file: a kill can land inside a file
ds = Dataset(sys.argv[1], "payments")
for n in range(1, 4):  # killed (GWTOOLS_TEST_CRASH_AT) at a step of one of these rounds
    with ds.lock():
        seq = _next_seq()
        for half in (slice(0, 1500), slice(1500, 3000)):
            ds.stage_batch(frame(_versions(3000, f"v{n}")[half]))
        ds.compact({"2024-05"}, since_seq=seq)
        ds.write_state({"last_full_sync": f"2024-07-0{n}T00:00:00+00:00"})  # round n ended
"""

#: (step, how many times it is passed before the kill): inside and between staged batches,
#: inside and after the month's new file, before the state.
KILL_AT = [
    "stage.tmp-open@3",
    "stage.renamed@4",
    "compact.start@2",
    "compact.tmp-open@2",
    "compact.tmp-written@2",
    "compact.renamed@2",
    "compact.replaced@2",
    "state.tmp-written@2",
]


@pytest.mark.parametrize("kill_at", KILL_AT)
def test_a_writer_killed_at_any_step_leaves_a_readable_cache(ds: Dataset, kill_at: str) -> None:
    """SIGKILL at each step of writing and compacting (round 2 of 3): the dataset holds one
    file with round 1's or round 2's rows, never a mixture, a duplicate or a partial file;
    the next writer merges the leftovers."""
    ids = [f"pay_{i:05d}" for i in range(3000)]
    proc = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(ds.path)],
        cwd=Path(__file__).parents[2],
        env={**os.environ, _cache.CRASH_ENV: kill_at},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == -9, proc.stderr  # killed at the step, not finished
    back = ds.read()
    assert back["id"].tolist() == ids
    assert back["status"].nunique() == 1  # one round's version, never a mixture
    assert len(ds._files("2024-05")) == 1
    assert not list(ds.path.rglob(".tmp-*"))
    glob = f"{ds.path}/**/*.parquet"
    assert duckdb.sql(f"select count(*) from '{glob}'").fetchall() == [(3000,)]
    with ds.lock():
        ds.compact(set())  # a killed sync's staged batches are merged by the next writer
    assert not list(ds.staging_path.rglob("*"))
    assert len(ds._files("2024-05")) == 1
    assert ds.read()["id"].tolist() == ids
    # Round 2's complete batches are kept: only a kill inside its first batch loses them.
    expected = "v1" if kill_at == "stage.tmp-open@3" else "v2"
    assert ds.read()["status"].unique().tolist() == [expected]


def test_a_status_filter_sees_only_the_newest_version_in_a_crowded_month(ds: Dataset) -> None:
    """Two files in a month (a compaction was interrupted): the old file says pay_1 is pending,
    the newer one that it succeeded. Filtering before choosing the newest would resurrect the
    stale 'pending' row."""
    legacy_file(ds, [("pay_1", "pending", "2024-05-02"), ("pay_2", "pending", "2024-05-03")])
    legacy_file(ds, [("pay_1", "succeeded", "2024-05-02")])
    synced(ds)
    assert ds.read(status="pending")["id"].tolist() == ["pay_2"]
    assert ds.read(status="succeeded")["id"].tolist() == ["pay_1"]
    assert ds.read(since="2024-05-03")["id"].tolist() == ["pay_2"]
    assert ds.read(until="2024-05-03")["status"].tolist() == ["succeeded"]


def test_a_read_by_id_takes_the_newest_version_in_a_crowded_month(ds: Dataset) -> None:
    """The sync reads the rows it re-reads by id: every version of an id passes the filter,
    then the newest wins, as for any read."""
    legacy_file(ds, [("pay_1", "pending", "2024-05-02"), ("pay_2", "pending", "2024-05-03")])
    legacy_file(ds, [("pay_1", "succeeded", "2024-05-02"), ("pay_3", "failed", "2024-05-04")])
    synced(ds)
    got = ds.read_table(ids={"pay_1", "pay_3", "pay_9"}, columns=["id", "status"])
    assert sorted(zip(got["id"].to_pylist(), got["status"].to_pylist(), strict=True)) == [
        ("pay_1", "succeeded"),
        ("pay_3", "failed"),
    ]
    got = ds.read_table(ids={"pay_1", "pay_2"}, status="pending", columns=["id"])
    assert got["id"].to_pylist() == ["pay_2"]
    with ds.lock():
        ds.compact(["2024-05"])
    assert len(ds._files("2024-05")) == 1
    assert ds.read_table(ids={"pay_2"}, columns=["id"])["id"].to_pylist() == ["pay_2"]


def test_part_files_use_a_codec_every_engine_reads(ds: Dataset) -> None:
    """Snappy: pyarrow's "lz4" (Parquet's old Hadoop-framed LZ4) broke Spark 4.3's reader."""
    with ds.lock():
        ds.write_batch(
            frame([("pay_1", "pending", "2024-05-02"), ("pay_2", "failed", "2024-06-03")])
        )
        synced(ds)
    files = sorted(ds.path.glob("created_month=*/*.parquet"))
    assert len(files) == 2
    for f in files:
        meta = pq.ParquetFile(f).metadata
        codecs = {meta.row_group(0).column(i).compression for i in range(meta.num_columns)}
        assert codecs == {"SNAPPY"}, f


def test_source_names_read_whatever_their_case_unless_such_a_folder_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gwtools.cache._source import named_source

    monkeypatch.chdir(tmp_path)
    assert named_source(" Spark ") == "spark" and named_source("GATEWAY") == "gateway"
    (tmp_path / "Spark").mkdir()
    assert named_source("Spark") == "Spark"  # a folder of that name is read as one
    with pytest.raises(ValueError, match="did you mean 'spark'"):
        named_source("sprak")
    assert named_source("data/gatway") == "data/gatway"  # a path: no guessing


@pytest.mark.parametrize("step", ["compact.tmp-open", "compact.tmp-written"])
def test_a_first_write_that_fails_leaves_no_empty_month_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    # A new month's folder was made before its file was written: a disk that filled up
    # during the first merge left an empty created_month= folder, which reads as a dataset.
    # The cache then held a phantom account: reading it without account= was refused as
    # ambiguous, although only one account has anything cached.
    good = Dataset.at(tmp_path, "shop", "test", "payments")
    good.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
    good.write_state({"last_full_sync": "2024-02-01T00:00:00+00:00"})
    other = Dataset.at(tmp_path, "other", "test", "payments")

    def full(name: str) -> None:
        if name == step:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_cache, "on_step", full)
    with pytest.raises(gwtools.CacheError, match="the disk is full"), other.lock():
        other.write_batch(frame([("pay_0002", "succeeded", "2024-03-10")]))
    monkeypatch.setattr(_cache, "on_step", None)

    assert not list(other.path.glob("created_month=*")), "an empty month folder was left"
    assert list(gwtools.read_cache(tmp_path, "payments")["id"]) == ["pay_0001"]
    # The next sync merges the staged batch into its month, as it would have.
    with other.lock():
        other.compact(set())
    with pytest.warns(gwtools.GatewayDataWarning, match="partial"):
        assert list(other.read()["id"]) == ["pay_0002"]
    assert not [p for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]

    # A month being built when the process was killed is cleared by the next sync.
    building = other.staging_path / ".tmp-0badf00d-created_month=2024-04"
    building.mkdir(parents=True)
    (building / "part-1-0badf00d.parquet").write_bytes(b"PAR1")
    with other.lock():
        assert not building.exists()


def test_the_next_sync_removes_an_empty_month_folder_an_older_gwtools_left(
    tmp_path: Path,
) -> None:
    # Older versions left an empty month folder where a first merge failed; it reads as a
    # dataset, so the cache seemed to hold an account (or mode) with nothing cached in it.
    good = Dataset.at(tmp_path, "shop", "test", "payments")
    good.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
    good.write_state({"last_full_sync": "2024-02-01T00:00:00+00:00"})
    other = Dataset.at(tmp_path, "other", "test", "payments")
    (other.path / "created_month=2024-03").mkdir(parents=True)
    with other.lock():
        assert not list(other.path.glob("created_month=*"))
    assert list(gwtools.read_cache(tmp_path, "payments")["id"]) == ["pay_0001"]


def test_an_id_whose_creation_month_changed_is_one_row_again_after_a_full_sync(
    tmp_path: Path,
) -> None:
    # Merging is per month: a gateway that moved a row's created_at into another month (no
    # gateway gwtools knows does; a hand edit could) leaves its old version in the old month,
    # read as a second row, until a full sync replaces every row. The README says so.
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    ds.write_batch(
        frame([("pay_0001", "succeeded", "2024-01-31"), ("pay_0002", "succeeded", "2024-01-20")])
    )
    ds.write_batch(frame([("pay_0001", "failed", "2024-02-01")]))
    synced(ds)
    assert sorted(read_cache(tmp_path, "payments")["id"]) == ["pay_0001", "pay_0001", "pay_0002"]
    since = _next_seq()
    with ds.lock():
        months = ds.stage_batch(
            frame([("pay_0001", "failed", "2024-02-01"), ("pay_0002", "succeeded", "2024-01-20")])
        )
        ds.compact(months, since_seq=since, replace=True)
    back = read_cache(tmp_path, "payments").set_index("id")
    assert sorted(back.index) == ["pay_0001", "pay_0002"]
    assert back.loc["pay_0001", "status"] == "failed"


def test_a_folder_named_like_a_temporary_inside_the_dataset_is_left_alone(
    tmp_path: Path,
) -> None:
    # Only the staging folder holds gwtools' half-built month folders; a folder of the same
    # shape elsewhere is not gwtools' to delete (nor a reason to fail the sync).
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    ds.write_batch(frame([("pay_0001", "succeeded", "2024-01-10")]))
    theirs = [ds.path / ".tmp-notes", ds.path / "created_month=2024-01" / ".tmp-notes"]
    for folder in theirs:
        folder.mkdir()
        (folder / "keep.txt").write_text("mine")
    with ds.lock():
        pass
    assert all((folder / "keep.txt").read_text() == "mine" for folder in theirs)


def test_a_rows_month_folder_is_its_creation_month_in_utc(tmp_path: Path) -> None:
    # 20:00 on 31 January in New York is 1 February in UTC: the folder a reader filtering on
    # created_month finds it in is February's, as the README says.
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    ds.write_batch(frame([("pay_0001", "succeeded", "2024-01-31T20:00:00-05:00")]))
    assert [p.name for p in ds.path.glob("created_month=*")] == ["created_month=2024-02"]


def test_rejects_appended_from_two_threads_at_once_are_all_kept(ds: Dataset) -> None:
    # A sync appends rejects from its writer thread (list pages) and its event loop (bodies
    # retrieved by id) at once; rewritten whole, one append could overwrite the other's.
    import threading

    from gwtools.normalize._normalize import Reject

    start = threading.Barrier(2)

    def append(name: str) -> None:
        start.wait()
        for n in range(40):
            ds.append_rejects([Reject("payments", "no id", f'{{"{name}": {n}}}')], sync_id="s1")

    threads = [threading.Thread(target=append, args=(name,)) for name in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(ds.rejects()) == 80
