"""``_state.json``'s ``schema_version``: a cache a newer gwtools wrote is refused, with one
error naming the folder, both versions and what to do, and left exactly as it was; a cache
without the version, or with an older one, is synced as before and stamped with this one.

Real syncs against the sandbox over loopback HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import gwtools
from gwtools.cache._dataset import SCHEMA_VERSION, Dataset
from gwtools.cli import main
from tests.library.test_crash_consistency import Shop


@pytest.fixture
def shop(sandbox_b: Any, tmp_path: Path) -> Shop:
    return Shop(sandbox_b, tmp_path / "cache", payments=200)


def _set_version(ds: Dataset, version: int | None) -> None:
    state = orjson.loads(ds.state_path.read_bytes())
    if version is None:
        del state["schema_version"]
    else:
        state["schema_version"] = version
    ds.state_path.write_bytes(orjson.dumps(state))


def _snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (but the sync locks), by path, with its bytes."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "_sync.lock"
    }


def test_a_cache_written_by_a_newer_gwtools_is_refused_and_left_as_it_was(
    shop: Shop, tmp_path: Path
) -> None:
    shop.synced_ids()
    payments = shop.dataset("payments")
    newer = SCHEMA_VERSION + 1
    _set_version(payments, newer)
    before = _snapshot(shop.cache_dir)

    def assert_says_what_to_do(message: str) -> None:
        assert str(payments.path) in message
        assert f"version {newer}" in message and f"version {SCHEMA_VERSION}" in message
        assert "Upgrade gwtools" in message and "another cache folder" in message

    with shop.connect() as gw, pytest.raises(gwtools.CacheError) as info:
        gw.sync()
    assert_says_what_to_do(str(info.value))
    with shop.connect() as gw, pytest.raises(gwtools.CacheError) as info:
        gw.sync(["refunds"], full=True)  # the refunds state names the payments owed a re-read
    assert_says_what_to_do(str(info.value))
    with pytest.raises(gwtools.CacheError) as info:
        gwtools.read_cache(shop.cache_dir, "payments", account="shop", mode="test")
    assert_says_what_to_do(str(info.value))

    # The CLI says it in one line and fails.
    env = {
        "GW_API_KEY": shop.key,
        "GW_BASE_URL": shop.base_url,
        "GW_CACHE_DIR": str(shop.cache_dir),
    }
    cli = CliRunner().invoke(main, ["sync", "--account", "shop"], env=env)
    assert cli.exit_code == 1, cli.output
    assert_says_what_to_do(" ".join(cli.output.split()))
    assert "Traceback" not in cli.output

    # Nothing was written, moved or stamped with the older version.
    assert _snapshot(shop.cache_dir) == before


@pytest.mark.parametrize("version", [None, 0], ids=["missing", "older"])
def test_a_cache_without_the_version_or_with_an_older_one_syncs_as_before(
    shop: Shop, version: int | None
) -> None:
    ids = shop.synced_ids()
    for resource in ("payments", "refunds"):
        _set_version(shop.dataset(resource), version)

    with shop.connect() as gw:
        result = gw.sync()
    assert result.complete, result.problems
    assert result.resources["payments"].mode == "incremental"  # the state was used
    assert set(shop.dataset().read()["id"]) == ids
    for resource in ("payments", "refunds"):
        state = json.loads(shop.dataset(resource).state_path.read_text())
        assert state["schema_version"] == SCHEMA_VERSION


def test_a_newer_cache_on_shared_storage_is_refused_as_a_local_one(shop: Shop) -> None:
    # Read through a filesystem (s3://… in use; pyarrow's in-memory one here), the cache's
    # state is read by another path than a local cache's: the same refusal must hold there.
    import pyarrow.fs as pafs

    shop.synced_ids()
    _set_version(shop.dataset("payments"), SCHEMA_VERSION + 1)
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(shop.cache_dir), "shared/gwtools", destination_filesystem=memory)
    with pytest.raises(gwtools.CacheError, match=f"version {SCHEMA_VERSION + 1}"):
        gwtools.scan_cache("shared/gwtools", "payments", filesystem=memory)
    # The refunds beside it, at this version, are read as usual.
    refunds = gwtools.scan_cache("shared/gwtools", "refunds", filesystem=memory)
    assert len(refunds) == len(gwtools.read_cache(shop.cache_dir, "refunds"))
