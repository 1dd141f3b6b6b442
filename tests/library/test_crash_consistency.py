"""A sync killed (SIGKILL) at named steps, then a sync that completes: engines reading the
Parquet files directly (DuckDB, Spark) count exactly one row per id, and no file in the
dataset folder fails to read, at any moment.

The kill is exact, not timed: ``GWTOOLS_TEST_CRASH_AT=step@n`` makes the sync process kill
itself the n-th time it passes ``step`` (see ``gwtools.cache._dataset._step``).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import gwtools
from gwtools.cache import _dataset as _cache
from gwtools.cache._dataset import Dataset

ROOT = Path(__file__).parents[2]

#: One sync in its own process: key and URL come from the environment, never argv.
SYNC_PROCESS = """
import sys
import gwtools

gw = gwtools.connect(cache_dir=sys.argv[1], account="shop", pages_per_batch=1)
try:
    gw.sync(sys.argv[2].split(","), full=sys.argv[3] == "full")
finally:
    gw.close()
"""


class Shop:
    """A fresh sandbox account with a generated history, and where its cache goes."""

    def __init__(self, sandbox: Any, cache_dir: Path, payments: int = 600) -> None:
        self.base_url: str = sandbox.base_url
        with httpx.Client(base_url=self.base_url, timeout=60, verify=False) as http:
            account = http.post("/_sandbox/accounts").json()
            self.key: str = account["secret_key"]
            r = http.post(
                "/_sandbox/history",
                json={"payments": payments, "days": 100, "seed": 11},
                headers={"Authorization": f"Bearer {self.key}"},
            )
            r.raise_for_status()
        self.cache_dir = cache_dir

    def connect(self) -> gwtools.Gateway:
        return gwtools.connect(
            self.key, self.base_url, cache_dir=self.cache_dir, account="shop", pages_per_batch=1
        )

    def synced_ids(self) -> set[str]:
        """Sync everything once (completely); the payment ids then cached."""
        with self.connect() as gw:
            assert gw.sync().complete
        return set(self.dataset().read()["id"])

    def dataset(self, resource: str = "payments") -> Dataset:
        return Dataset.at(self.cache_dir, "shop", "test", resource)  # type: ignore[arg-type]

    def sync_process(
        self,
        *,
        crash_at: str | None = None,
        resources: str = "payments,refunds",
        full: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """A sync in a child process, killed at ``crash_at`` if given."""
        env = {**os.environ, "GW_API_KEY": self.key, "GW_BASE_URL": self.base_url}
        env.pop(_cache.CRASH_ENV, None)
        if crash_at:
            env[_cache.CRASH_ENV] = crash_at
        return subprocess.run(
            [
                sys.executable,
                "-c",
                SYNC_PROCESS,
                str(self.cache_dir),
                resources,
                "full" if full else "incremental",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )


@pytest.fixture
def shop(sandbox_b: Any, tmp_path: Path) -> Iterator[Shop]:
    yield Shop(sandbox_b, tmp_path / "cache")


def engine_counts(dataset: Path) -> tuple[int, int]:
    """(rows, distinct ids) as DuckDB counts them over ``{dataset}/**/*.parquet``."""
    row = duckdb.sql(
        f"select count(*), count(distinct id) from read_parquet('{dataset}/**/*.parquet')"
    ).fetchall()[0]
    return int(row[0]), int(row[1])


def assert_every_file_reads(dataset: Path) -> None:
    """Nothing in the dataset folder is temporary or partial: every Parquet file reads whole,
    and the only other files are the state, the rejects and the lock."""
    for path in dataset.rglob("*"):
        if path.is_dir():
            assert path.name.startswith("created_month="), path
        elif path.suffix == ".parquet":
            assert not path.name.startswith((".", "_")), path
            pq.read_table(path)
        else:
            assert path.name in {"_state.json", "_rejects.jsonl", "_sync.lock"}, path


def kill_a_sync(shop: Shop, kill_at: str, *, full: bool) -> None:
    """A payments sync killed at ``kill_at``; right after, a direct reader already sees one row
    per id and no partial file."""
    killed = shop.sync_process(crash_at=kill_at, resources="payments", full=full)
    assert killed.returncode == -9, killed.stderr[-2000:]  # died at the step, not before
    path = shop.dataset().path
    assert_every_file_reads(path)
    assert engine_counts(path)[0] == engine_counts(path)[1]


def assert_engines_read_each_id_once(ds: Dataset, expected: set[str], spark: Any) -> None:
    """After a completed sync: DuckDB and Spark over the files count one row per id, exactly
    the ``expected`` ids; every file reads whole; nothing is left staged."""
    assert_every_file_reads(ds.path)
    n = len(expected)
    assert engine_counts(ds.path) == (n, n)
    ids = duckdb.sql(f"select id from read_parquet('{ds.path}/**/*.parquet')").fetchall()
    assert {i for (i,) in ids} == expected
    frame = spark.read.parquet(str(ds.path))
    assert (frame.count(), frame.select("id").distinct().count()) == (n, n)
    assert not list(ds.staging_path.rglob("*.parquet"))  # leftovers merged


#: Where the second sync (a full one) dies: in and between staged batches, at the start of
#: the merge, inside a month's new file, around the rename that swaps a month, between
#: months, before the state, and just after moving an unreadable file to quarantine.
KILL_AT = [
    "stage.tmp-open@1",
    "stage.renamed@3",
    "compact.start@1",
    "compact.tmp-open@1",
    "compact.tmp-written@1",
    "compact.renamed@1",
    "compact.replaced@2",
    "compact.month-done@3",
    "state.tmp-written@1",
    "quarantine.moved@1",
]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("kill_at", KILL_AT)
def test_killed_sync_then_a_sync_leaves_one_row_per_id_for_every_engine(
    shop: Shop, kill_at: str, spark: Any
) -> None:
    expected = shop.synced_ids()
    assert len(expected) == 600
    ds = shop.dataset()
    if kill_at.startswith("quarantine."):
        oldest = sorted(p for p in ds.path.iterdir() if p.name.startswith("created_month="))[0]
        (oldest / "part-00000000000000000001-deadbeef.parquet").write_bytes(b"")

    kill_a_sync(shop, kill_at, full=True)

    with shop.connect() as gw:  # the next sync: incremental, touches only recent months
        result = gw.sync()
    assert result.complete, result
    assert_engines_read_each_id_once(ds, expected, spark)
    back = gwtools.read_cache(shop.cache_dir, "payments", account="shop", mode="test")
    assert set(back["id"]) == expected and back.attrs["gwtools_cache"]["complete"]


#: Where an incremental sync dies while merging new payments into months that keep their
#: old rows (the merge a full sync's replace does not take).
INCREMENTAL_KILL_AT = ["compact.tmp-written@1", "compact.renamed@1", "compact.replaced@1"]


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("kill_at", INCREMENTAL_KILL_AT)
def test_killed_incremental_merge_then_a_sync_leaves_one_row_per_id(
    shop: Shop, kill_at: str, spark: Any
) -> None:
    before = shop.synced_ids()
    ds = shop.dataset()
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2031, "cvc": "123"}
    new = set()
    with httpx.Client(base_url=shop.base_url, timeout=60, verify=False) as http:
        for amount in (1100, 1200, 1300):
            r = http.post(
                "/v1/payments",
                json={"amount": amount, "currency": "myr",
                      "payment_method_data": {"type": "card", "card": card}},
                headers={"Authorization": f"Bearer {shop.key}"},
            )  # fmt: skip
            assert r.status_code in (200, 201), r.text[:300]
            new.add(r.json()["id"])

    kill_a_sync(shop, kill_at, full=False)
    assert set(before) <= set(ds.read()["id"])  # the old rows never left

    with shop.connect() as gw:
        result = gw.sync()
    assert result.complete and result.resources["payments"].mode == "incremental"
    assert_engines_read_each_id_once(ds, before | new, spark)


@pytest.mark.spark
def test_months_an_interrupted_sync_left_crowded_are_compacted_by_the_next_one(
    shop: Shop, spark: Any
) -> None:
    """A month with several files (as an older gwtools left it when killed mid-merge) is
    compacted by the next completed sync even though that sync does not touch the month."""
    with shop.connect() as gw:
        assert gw.sync().complete
    ds = shop.dataset()
    (row,) = ds.read_table(columns=None).slice(0, 1).to_pylist()
    # A finished payment in a month no incremental sync lists, in two files (two versions).
    row.update(id="pay_legacy_0001", status="succeeded", created_at=dt.datetime(2019, 1, 15))
    month = ds.path / "created_month=2019-01"
    month.mkdir()
    for n, amount in enumerate((100, 200), start=1):
        version = pa.Table.from_pylist([{**row, "amount": amount}], schema=ds.schema)
        pq.write_table(version, month / f"part-{n:020d}-0badc0de.parquet")
    assert engine_counts(ds.path) == (602, 601)
    with shop.connect() as gw:
        result = gw.sync()
    assert result.complete and result.resources["payments"].mode == "incremental"
    assert len(list(month.glob("*.parquet"))) == 1
    assert engine_counts(ds.path) == (601, 601)
    amount = duckdb.sql(
        f"select amount from read_parquet('{ds.path}/**/*.parquet') where id = 'pay_legacy_0001'"
    ).fetchall()
    assert amount == [(200,)]  # the newer file's version
    frame = spark.read.parquet(str(ds.path))
    assert (frame.count(), frame.select("id").distinct().count()) == (601, 601)


def test_a_running_sync_keeps_its_temporary_files_outside_the_dataset(shop: Shop) -> None:
    """Killed while writing a batch and while writing a month's new file: the half-written
    file is in ``_staging`` beside the dataset, never in a month folder."""
    with shop.connect() as gw:
        assert gw.sync().complete
    ds = shop.dataset()
    for step in ("stage.tmp-open@1", "compact.tmp-open@1"):
        killed = shop.sync_process(crash_at=step, resources="payments", full=True)
        assert killed.returncode == -9, killed.stderr[-2000:]
        assert list(ds.staging_path.glob(".tmp-*")), step  # the partial file exists...
        assert not list(ds.path.rglob(".tmp-*")), step  # ...but not where engines read
        assert_every_file_reads(ds.path)
    assert engine_counts(ds.path) == (600, 600)


@pytest.mark.parametrize("kill_at", ["compact.tmp-open@1", "compact.tmp-written@1"])
def test_a_first_sync_killed_in_its_merge_leaves_no_month_folder_without_its_file(
    shop: Shop, kill_at: str
) -> None:
    # A new month's folder used to be made before its file was written: a first sync killed
    # there left an empty created_month= folder, which reads as a cached dataset.
    killed = shop.sync_process(crash_at=kill_at, resources="payments", full=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    ds = shop.dataset()
    assert not [p for p in ds.path.glob("created_month=*") if not any(p.iterdir())]
    assert not ds.exists()  # nothing merged: read as never synced, not as a partial cache
    with shop.connect() as gw:
        assert gw.sync().complete
    assert_every_file_reads(ds.path)
    assert engine_counts(ds.path) == (600, 600)
    assert not list(ds.staging_path.parent.rglob(".tmp-*"))
