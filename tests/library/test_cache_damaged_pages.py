"""A part file whose footer reads but whose pages do not (bytes lost inside the file, as a
power cut can leave a file that was never flushed): readers leave it out with a warning, as
they do a truncated file, and a full sync moves it to quarantine and rebuilds the cache.

Real syncs against the sandbox over loopback HTTP.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import gwtools
from gwtools.cache._dataset import Dataset, _next_seq, _unreadable
from tests.library.test_cache import frame
from tests.library.test_crash_consistency import Shop, assert_every_file_reads, engine_counts


@pytest.fixture
def shop(sandbox_b: Any, tmp_path: Path) -> Shop:
    return Shop(sandbox_b, tmp_path / "cache", payments=300)


def damage_pages(path: Path, column: int = 0) -> None:
    """Zero the start of the first data page of the file's ``column``-th column; its footer
    stays whole."""
    first = pq.read_metadata(path).row_group(0).column(column)
    data = bytearray(path.read_bytes())
    start = first.data_page_offset
    data[start : start + 200] = bytes(200)
    path.write_bytes(bytes(data))
    assert _unreadable(path) is None  # the footer still reads: the sync's first check passes


def read(shop: Shop, **kwargs: Any) -> Any:
    return gwtools.read_cache(shop.cache_dir, "payments", account="shop", mode="test", **kwargs)


def synced_then_first_month_damaged(shop: Shop) -> tuple[Dataset, set[str], Path]:
    """A complete sync, then the file of the first month with an open payment damaged in its pages: the dataset, every
    id cached before the damage, and the damaged file."""
    with shop.connect() as gw:
        assert gw.sync().complete
    ds = shop.dataset()
    cached = read(shop)
    everything = set(cached["id"])
    # The first month holding an open payment: the next sync's plan reads those rows (and
    # meets the damage) whatever the sandbox clock, shared with other tests, says.
    first_open = cached.loc[cached["outcome"] == "open", "created_at"].min()
    (damaged,) = list((ds.path / f"created_month={first_open:%Y-%m}").glob("*.parquet"))
    damage_pages(damaged)
    return ds, everything, damaged


def test_a_file_with_damaged_pages_is_left_out_of_reads_and_a_full_sync_repairs_it(
    shop: Shop,
) -> None:
    ds, everything, damaged = synced_then_first_month_damaged(shop)

    # Read: the other months, with a warning naming the file, and not "complete".
    with pytest.warns(gwtools.GatewayDataWarning, match=damaged.name):
        partial = read(shop)
    assert partial.attrs["gwtools_cache"]["complete"] is False
    assert partial.attrs["gwtools_cache"]["damaged_files"] == [str(damaged)]
    assert 0 < len(partial) < len(everything)
    with pytest.raises(gwtools.CacheError, match="sync --full"):
        read(shop, strict=True)

    # What the error says to do repairs it: the damaged file goes to quarantine.
    with shop.connect() as gw, pytest.warns(gwtools.GatewayDataWarning, match="moved it to"):
        result = gw.sync(full=True)
    assert result.complete, result.problems
    assert not damaged.exists()
    assert list(ds.quarantine_path.rglob(damaged.name))
    back = read(shop)
    assert set(back["id"]) == everything and back.attrs["gwtools_cache"]["complete"]
    assert_every_file_reads(ds.path)
    assert engine_counts(ds.path) == (len(everything), len(everything))


def test_an_incremental_sync_that_meets_damaged_pages_fetches_their_month_again(
    shop: Shop,
) -> None:
    ds, everything, damaged = synced_then_first_month_damaged(shop)

    with shop.connect() as gw, pytest.warns(gwtools.GatewayDataWarning, match="moved it to"):
        result = gw.sync()
    assert result.complete, result.problems
    assert result.resources["payments"].mode == "incremental"
    assert not damaged.exists()
    back = read(shop)
    assert set(back["id"]) == everything and back.attrs["gwtools_cache"]["complete"]
    assert engine_counts(ds.path) == (len(everything), len(everything))


def test_a_merge_that_meets_damaged_pages_moves_the_file_aside_and_lowers_the_mark(
    tmp_path: Path,
) -> None:
    """Damage no read before the merge met (the sync's plan reads only some rows): the merge
    moves the file aside, lowers the high-water mark to its month's start so the next sync
    fetches the month again, and merges this sync's rows."""
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    with ds.lock():
        ds.write_batch(frame([(f"pay_{i:04d}", "pending", "2024-05-02") for i in range(2000)]))
        ds.write_state({"high_water": "2024-06-10T00:00:00+00:00"})
    (damaged,) = ds._files("2024-05")
    damage_pages(damaged)
    with ds.lock():
        since = _next_seq()
        months = ds.stage_batch(frame([("pay_0001", "succeeded", "2024-05-02")]))
        with pytest.warns(gwtools.GatewayDataWarning, match="moved it to"):
            stats = ds.compact(months, since_seq=since)
    assert [p.name for p in stats.quarantined] == [damaged.name]
    assert ds.state()["high_water"] == "2024-05-01T00:00:00+00:00"
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync has fetched those months"):
        back = ds.read()  # partial until a sync has fetched the month again
    assert back[["id", "status"]].values.tolist() == [["pay_0001", "succeeded"]]
    assert engine_counts(ds.path) == (1, 1)


def test_a_full_syncs_damaged_staged_batch_keeps_the_months_rows_and_lowers_the_mark(
    tmp_path: Path,
) -> None:
    """A full sync's merge replaces a month by the rows it fetched. When one of its staged
    batches is found damaged (deleted: its rows are gone), the month's cached rows that batch
    held must not go with it: the month is merged without replacing, and the mark lowered to
    its start, so the next (incremental) sync fetches it again."""
    ds = Dataset.at(tmp_path, "acct", "test", "payments")
    cached = [(f"pay_{i:04d}", "pending", "2024-05-02") for i in range(2000)]
    with ds.lock():
        ds.write_batch(frame(cached))
        ds.write_state({"high_water": "2024-06-10T00:00:00+00:00"})
    with ds.lock():
        since = _next_seq()
        ds.stage_batch(frame([(f"pay_{i:04d}", "succeeded", "2024-05-02") for i in range(1000)]))
        months = ds.stage_batch(frame(cached[1000:]))
        lost = max(ds._staged_files("2024-05"), key=ds._file_seq)  # the second batch
        damage_pages(lost)
        stats = ds.compact(months, since_seq=since, replace=True)
    assert [p.name for p in stats.dropped] == [lost.name]
    assert ds.state()["high_water"] == "2024-05-01T00:00:00+00:00"
    back = ds.read()  # (the sync that merged says it is incomplete, in the state it writes)
    assert set(back["id"]) == {i for i, _, _ in cached}  # none of the month's rows lost
    assert set(back.loc[back["status"] == "succeeded", "id"]) == {
        f"pay_{i:04d}" for i in range(1000)
    }
    assert engine_counts(ds.path) == (2000, 2000)


def test_a_killed_syncs_staged_refunds_batch_with_damaged_pages_does_not_stop_every_sync(
    shop: Shop,
) -> None:
    """Before merging refunds, the sync reads the staged batches' payment ids (payments owed
    a re-read). A staged batch whose footer reads but whose pages do not stopped that read
    with a bare Arrow error, before the merge that drops such a batch, so every later sync
    failed the same way until someone deleted the file by hand."""
    with shop.connect() as gw:
        assert gw.sync().complete
    refunds = shop.dataset("refunds")
    cached = set(refunds.read()["id"])
    assert cached  # the generated history holds refunds
    killed = shop.sync_process(crash_at="stage.renamed@1", resources="refunds", full=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    (staged,) = refunds._staged_files()
    damage_pages(staged, pq.read_schema(staged).get_field_index("payment_id"))

    with shop.connect() as gw, warnings.catch_warnings():
        # Whether this sync is complete depends on whether it fetched every row of the lost
        # batch again (the merge reads the batch only for rows nothing newer replaced); if
        # not, it says so and the next sync fetches them.
        warnings.simplefilter("ignore", gwtools.GatewayDataWarning)
        gw.sync()
    assert not staged.exists()
    with shop.connect() as gw:
        assert gw.sync().complete
    assert set(refunds.read()["id"]) == cached
    assert engine_counts(refunds.path) == (len(cached), len(cached))
