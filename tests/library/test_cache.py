"""The Parquet cache on hand-made canonical frames: merging, crash leftovers, reading back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
import pyarrow.dataset as pads
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
