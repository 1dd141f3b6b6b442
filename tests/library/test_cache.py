"""The Parquet cache on hand-made canonical frames: merging, crash leftovers, reading back."""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from gwtools._cache import Dataset, _next_seq, find_dataset, read_cache
from gwtools._schema import columns, conform


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
    back = read_cache(tmp_path, "payments")
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
        months = ds.write_batch(
            frame([("pay_1", "pending", "2024-05-02"), ("pay_2", "pending", "2024-05-03")])
        )
        assert ds.compact(months).new == 2
        seq = _next_seq()
        months = ds.write_batch(
            frame(
                [
                    ("pay_1", "succeeded", "2024-05-02"),
                    ("pay_2", "pending", "2024-05-03"),
                    ("pay_3", "failed", "2024-05-04"),
                ]
            )
        )
        stats = ds.compact(months, since_seq=seq)
    assert (stats.new, stats.updated, stats.unchanged) == (1, 1, 1)
    back = ds.read()
    assert back.set_index("id")["status"].to_dict() == {
        "pay_1": "succeeded",
        "pay_2": "pending",
        "pay_3": "failed",
    }
    assert len(list((ds.path / "created_month=2024-05").glob("*.parquet"))) == 1


def test_uncompacted_leftovers_read_correctly(ds: Dataset) -> None:
    """A sync killed before compaction leaves several files: readers still see one row per id."""
    ds.write_batch(frame([("pay_1", "pending", "2024-05-02"), ("pay_2", "pending", "2024-05-03")]))
    ds.write_batch(frame([("pay_1", "succeeded", "2024-05-02")]))
    (ds.path / "created_month=2024-05" / ".tmp-part-half-written.parquet").write_bytes(
        b"PAR1garbage"
    )
    back = ds.read()
    assert sorted(zip(back["id"], back["status"], strict=True)) == [
        ("pay_1", "succeeded"),
        ("pay_2", "pending"),
    ]
    assert ds.read(status="pending")["id"].tolist() == ["pay_2"]
    with ds.lock():  # the next writer clears temporaries and compacts
        ds.compact({"2024-05"})
    assert not list(ds.path.rglob(".tmp-*"))
    assert ds.read()["id"].tolist() == ["pay_1", "pay_2"]


def test_replace_keeps_only_the_rows_of_a_complete_full_sync(ds: Dataset) -> None:
    ds.compact(
        ds.write_batch(
            frame([("pay_old", "failed", "2024-01-05"), ("pay_1", "pending", "2024-05-02")])
        )
    )
    seq = _next_seq()
    months = ds.write_batch(frame([("pay_1", "succeeded", "2024-05-02")]))
    ds.compact(months, since_seq=seq, replace=True)
    assert ds.read()["id"].tolist() == ["pay_1"]
    assert not (ds.path / "created_month=2024-01").exists()


def test_filters(ds: Dataset, tmp_path: Path) -> None:
    ds.compact(
        ds.write_batch(
            frame(
                [
                    ("a", "failed", "2024-05-01T10:00:00Z"),
                    ("b", "succeeded", "2024-05-02T00:00:00Z"),
                    ("c", "failed", "2024-06-01T00:00:00Z"),
                ]
            )
        )
    )
    assert read_cache(tmp_path, "payments", since="2024-05-01T10:00", until="2024-06-01")[
        "id"
    ].tolist() == ["a", "b"]
    assert read_cache(tmp_path, "payments", status=["failed"])["id"].tolist() == ["a", "c"]
    with pytest.raises(ValueError, match="not a date"):
        read_cache(tmp_path, "payments", since="last tuesday")


def test_find_dataset_by_root_account_or_dataset_dir(ds: Dataset, tmp_path: Path) -> None:
    ds.compact(ds.write_batch(frame([("a", "failed", "2024-05-01")])))
    for where in (tmp_path, tmp_path / "acct" / "test", ds.path):
        assert find_dataset(where, "payments").path == ds.path
    Dataset.at(tmp_path, "other", "test", "payments").write_batch(
        frame([("b", "failed", "2024-05-01")])
    )
    with pytest.raises(ValueError, match="account="):
        find_dataset(tmp_path, "payments")
    assert read_cache(tmp_path, "payments", account="other", mode="test")["id"].tolist() == ["b"]
    with pytest.raises(FileNotFoundError, match="sync"):
        read_cache(tmp_path / "nothing", "payments")
    with pytest.raises(ValueError, match="unknown resource"):
        read_cache(tmp_path, "charges")  # type: ignore[arg-type]


def test_second_writer_waits_for_the_lock(ds: Dataset) -> None:
    order: list[str] = []
    with ds.lock():
        t = threading.Thread(target=lambda: (ds.lock().__enter__(), order.append("second")))
        t.start()
        time.sleep(0.2)
        order.append("first done")
    t.join(5)
    assert order == ["first done", "second"]


def test_state_and_rejects(ds: Dataset) -> None:
    assert ds.state() == {}
    ds.write_state({"high_water": "2024-05-01T00:00:00+00:00"})
    assert (
        ds.state()["high_water"] == "2024-05-01T00:00:00+00:00"
        and ds.state()["schema_version"] == 1
    )
    from gwtools._normalize import Reject

    assert (
        ds.append_rejects([Reject("payments", "record has no id", '{"amount": 5}')], sync_id="s1")
        == 1
    )
    rejects = ds.rejects()
    assert rejects[["reason", "record", "sync_id"]].values.tolist() == [
        ["record has no id", '{"amount": 5}', "s1"]
    ]


def test_reading_while_another_sync_compacts(ds: Dataset, tmp_path: Path) -> None:
    """A reader never fails or loses rows while a writer rewrites and compacts the months."""
    ids = [f"pay_{i}" for i in range(200)]
    rows = [(i, "succeeded", f"2024-0{1 + n % 6}-15T00:00:00Z") for n, i in enumerate(ids)]
    with ds.lock():
        ds.write_batch(frame(rows))
        ds.compact({f"2024-0{m}" for m in range(1, 7)})
    stop = threading.Event()
    failures: list[BaseException] = []
    reads = 0

    def writer() -> None:
        months = {f"2024-0{m}" for m in range(1, 7)}
        while not stop.is_set():
            with ds.lock():
                since = _next_seq()
                ds.write_batch(frame(rows))
                ds.compact(months, since_seq=since)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                got = read_cache(tmp_path, "payments")
            except BaseException as exc:  # any failure is the finding
                failures.append(exc)
                break
            assert sorted(got["id"]) == sorted(ids)
            reads += 1
    finally:
        stop.set()
        thread.join(10)
    assert failures == [] and reads > 10


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
    monkeypatch.setattr("gwtools._cache._ROW_GROUP", 7)  # many chunks and row groups
    old = _versions(100, "pending")
    with ds.lock():
        ds.compact(ds.write_batch(frame(old[::-1])))  # written newest first, as lists come
        seq = _next_seq()
        # This sync: ids 10..39 twice (the later file wins), 90..119 (100..119 are new).
        ds.write_batch(frame([(i, "failed", c) for i, _, c in old[10:40]]))
        ds.write_batch(frame([(i, "succeeded", c) for i, _, c in old[10:40:2]]))
        ds.write_batch(frame(_versions(120, "pending")[90:]))
        stats = ds.compact({"2024-05"}, since_seq=seq)
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
    monkeypatch.setattr("gwtools._cache._ROW_GROUP", 5)
    with ds.lock():
        ds.compact(ds.write_batch(frame(_versions(40, "pending"))))
        seq = _next_seq()
        months = ds.write_batch(frame(_versions(30, "succeeded")[5:]))
        months |= ds.write_batch(frame(_versions(30, "failed")[20:]))
        stats = ds.compact(months, since_seq=seq, replace=True)
    assert (stats.new, stats.updated, stats.unchanged) == (0, 25, 0)
    status = ds.read().set_index("id")["status"]
    assert status.to_dict() == {
        f"pay_{i:05d}": "failed" if i >= 20 else "succeeded" for i in range(5, 30)
    }


_CRASHING_WRITER = """
import sys
from gwtools import _cache
from gwtools._cache import Dataset, _next_seq
from tests.library.test_cache import _versions, frame

_cache._ROW_GROUP = 500  # several chunks per compaction: more moments to be killed in
ds = Dataset(sys.argv[1], "payments")
n = 0
while True:  # killed from outside at a random moment
    n += 1
    with ds.lock():
        seq = _next_seq()
        months = ds.write_batch(frame(_versions(3000, f"v{n % 2}")))
        ds.compact(months, since_seq=seq)
        ds.write_state({"round": n})
    print(n, flush=True)
"""


def test_a_writer_killed_at_any_moment_leaves_a_readable_cache(
    ds: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL during writing or compaction: readers see one row per id and no partial file;
    the next writer clears the leftovers and compacts to one file."""
    monkeypatch.setattr("gwtools._cache._ROW_GROUP", 500)
    ids = [f"pay_{i:05d}" for i in range(3000)]
    rng = random.Random(5)
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-c", _CRASHING_WRITER, str(ds.path)],
            stdout=subprocess.PIPE,
            cwd=Path(__file__).parents[2],
            text=True,
        )
        assert proc.stdout is not None
        proc.stdout.readline()  # at least one complete round
        time.sleep(rng.uniform(0, 0.4))
        proc.kill()
        proc.wait(10)
        back = ds.read()
        assert back["id"].tolist() == ids
        assert back["status"].nunique() == 1  # one round's version, never a mixture
    with ds.lock():
        ds.compact({"2024-05"})
    assert not list(ds.path.rglob(".tmp-*"))
    assert len(list((ds.path / "created_month=2024-05").glob("*.parquet"))) == 1
    assert ds.read()["id"].tolist() == ids
