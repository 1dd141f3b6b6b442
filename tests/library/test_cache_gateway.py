"""A cache folder records which gateway filled it (its base URL, key mode and masked key, never
the key), and a sync from another gateway into it is refused before anything is touched: two
gateways given the same ``account=`` merged their payments into one cache, each incremental
sync listing from the other's high-water mark. The same address with another key (a rotated
key), or the same key at another address (a gateway moved), is the same gateway.

Real syncs against the two session sandboxes over loopback HTTP.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import gwtools
from gwtools.secrets import mask_key
from tests.library._shop import Shop as ShopOnAccount
from tests.library.test_crash_consistency import Shop


def _shops(sandbox_a: Any, sandbox_b: Any, tmp_path: Path) -> tuple[Shop, Shop]:
    """Two gateways' accounts, both synced as account 'shop' into one cache folder."""
    cache = tmp_path / "cache"
    return Shop(sandbox_a, cache, payments=40), Shop(sandbox_b, cache, payments=30)


def _ids(shop: Shop) -> set[str]:
    return set(shop.dataset().read()["id"])


def test_a_sync_from_another_gateway_into_a_filled_folder_is_refused(
    sandbox_a: Any, sandbox_b: Any, tmp_path: Path
) -> None:
    first, second = _shops(sandbox_a, sandbox_b, tmp_path)
    cached = first.synced_ids()
    states = {r: first.dataset(r).state_path.read_bytes() for r in ("payments", "refunds")}
    with second.connect() as gw, pytest.raises(gwtools.CacheError) as info:
        gw.sync()
    said = str(info.value)
    assert f"{first.base_url}/v1" in said and f"{second.base_url}/v1" in said, said
    assert "account=" in said and "--account" in said and "--full" in said, said
    assert str(first.dataset().path.parent) in said, said
    assert first.key not in said and second.key not in said
    # Nothing touched: the rows and both states are the first gateway's.
    assert _ids(first) == cached
    assert {r: first.dataset(r).state_path.read_bytes() for r in states} == states
    recorded = gwtools.cache_state(first.cache_dir, "payments", account="shop", mode="test")
    assert recorded["gateway"] == {
        "base_url": f"{first.base_url}/v1",
        "mode": "test",
        "key": mask_key(first.key),
    }
    for r in states:
        assert first.key not in first.dataset(r).state_path.read_text()
    # The gateway that filled it syncs on as before.
    with first.connect() as gw:
        assert gw.sync().complete


def test_a_cache_synced_before_the_record_is_adopted_by_its_next_sync(
    sandbox_a: Any, sandbox_b: Any, tmp_path: Path
) -> None:
    first, second = _shops(sandbox_a, sandbox_b, tmp_path)
    cached = first.synced_ids()
    # As an older gwtools wrote it (no record), or a hand edit (an empty one, not an object).
    for record in (None, {}, "shop"):
        for r in ("payments", "refunds"):
            path = first.dataset(r).state_path
            state = orjson.loads(path.read_bytes())
            del state["gateway"]
            if record is not None:
                state["gateway"] = record
            path.write_bytes(orjson.dumps(state))
        assert _ids(first) == cached  # read as it is
        with first.connect() as gw:
            result = gw.sync()
        assert result.complete and result.resources["payments"].mode == "incremental"
    recorded = first.dataset().state()["gateway"]
    assert recorded["base_url"] == f"{first.base_url}/v1" and recorded["mode"] == "test"
    with second.connect() as gw, pytest.raises(gwtools.CacheError):
        gw.sync()


def test_a_full_sync_from_the_other_gateway_replaces_the_cache_and_its_record(
    sandbox_a: Any, sandbox_b: Any, tmp_path: Path
) -> None:
    # The way out the error names when it is the same gateway at a new address: a full
    # sync makes the cache equal to what it lists, and records where it came from.
    first, second = _shops(sandbox_a, sandbox_b, tmp_path)
    first_ids = first.synced_ids()
    with second.connect() as gw:
        assert gw.sync(full=True).complete
    assert _ids(second).isdisjoint(first_ids) and len(_ids(second)) == 30
    assert second.dataset().state()["gateway"]["base_url"] == f"{second.base_url}/v1"
    with second.connect() as gw:
        assert gw.sync().complete
    with first.connect() as gw, pytest.raises(gwtools.CacheError):
        gw.sync()


def test_a_rotated_key_or_a_moved_gateway_is_the_same_gateway(
    sandbox_a: Any, tmp_path: Path
) -> None:
    first = Shop(sandbox_a, tmp_path / "cache", payments=20)
    first.synced_ids()
    # The same address with another key, as a rotated key is.
    rotated = Shop(sandbox_a, tmp_path / "cache", payments=5)
    with rotated.connect() as gw:
        assert gw.sync().resources["payments"].mode == "incremental"
    assert rotated.dataset().state()["gateway"]["key"] == mask_key(rotated.key)
    # The same key at another address (here the sandbox by name instead of by number).
    moved = rotated.base_url.replace("127.0.0.1", "localhost")
    assert moved != rotated.base_url
    with gwtools.connect(rotated.key, moved, cache_dir=rotated.cache_dir, account="shop") as gw:
        assert gw.sync().resources["payments"].mode == "incremental"
    assert rotated.dataset().state()["gateway"]["base_url"] == f"{moved}/v1"


def test_the_embedded_sandbox_does_not_take_over_a_folder_a_gateway_filled(
    sandbox_a: Any, tmp_path: Path
) -> None:
    # connect(account="shop") with GW_API_KEY unset is the embedded sandbox: its first sync
    # of a process is a full one, which replaced the gateway's cached rows with sandbox data.
    first = Shop(sandbox_a, tmp_path / "cache", payments=20)
    cached = first.synced_ids()
    with (
        gwtools.connect(cache_dir=first.cache_dir, account="shop", progress=False) as gw,
        pytest.raises(gwtools.CacheError, match="the embedded sandbox"),
    ):
        gw.sync()
    assert _ids(first) == cached


@pytest.mark.parametrize("sandbox", ["B"], indirect=True)
def test_an_incomplete_full_sync_over_sandbox_data_keeps_it_labelled(
    shop: ShopOnAccount, tmp_path: Path
) -> None:
    # The embedded sandbox fills account "shop"; a gateway's full sync into it fails half-way
    # (every page cut short). The rows it could not replace are still the sandbox's, and the
    # record still says the embedded sandbox filled the dataset: a read must say so too.
    cache = tmp_path / "cache"
    with gwtools.connect(cache_dir=cache, account="shop", progress=False) as gw:
        assert gw.sync().complete
    sandbox_ids = set(gwtools.read_cache(cache, "payments", account="shop", mode="test")["id"])
    shop.history(250, days=20, seed=4)
    shop.faults(short_page_rate=1.0, seed=2)
    try:
        with (
            shop.connect(cache) as gw,
            pytest.warns(gwtools.GatewayDataWarning, match="incomplete"),
        ):
            assert not gw.sync(["payments"], full=True).complete
    finally:
        shop.clear_faults()
    state = gwtools.cache_state(cache, "payments", account="shop", mode="test")
    assert state["gateway"].get("embedded_sandbox") is True
    frame = gwtools.read_cache(cache, "payments", account="shop", mode="test")
    assert sandbox_ids & set(frame["id"])
    assert frame.attrs.get("gwtools_source") == "sandbox data"
    assert gwtools.open_source(str(cache), account="shop").sandbox_data


@pytest.mark.parametrize("payments", [0, 10])
def test_a_full_sync_takes_its_high_water_mark_from_what_it_listed(
    sandbox_b: Any, tmp_path: Path, payments: int
) -> None:
    # A complete full sync kept the higher of its newest row and the old mark: taken over
    # by a gateway whose rows are all older (a sandbox set to an earlier date) or that has
    # none, the cache kept the first gateway's mark, and the next incremental sync listed
    # from there, missing the rows the new gateway made later but before that mark.
    from gwtools.sandbox import Sandbox
    from tests.conftest import FROZEN_NOW

    first = Shop(sandbox_b, tmp_path / "cache", payments=20)
    first.synced_ids()
    with Sandbox("B", now=FROZEN_NOW - dt.timedelta(days=200)) as older:
        if payments:
            key = Shop(older, first.cache_dir, payments=payments).key
        else:  # an account with no history yet
            with httpx.Client(base_url=older.base_url, timeout=60) as http:
                key = http.post("/_sandbox/accounts").json()["secret_key"]

        def connect() -> gwtools.Gateway:
            return gwtools.connect(key, older.base_url, cache_dir=first.cache_dir, account="shop")

        with connect() as gw:
            assert gw.sync(full=True).complete
        listed = first.dataset().read()["created_at"]
        mark = first.dataset().state().get("high_water")
        assert mark == (listed.max().isoformat() if payments else None)
        paid = ShopOnAccount(older, {"secret_key": key})
        try:
            later = paid.card()
        finally:
            paid.close()
        with connect() as gw:
            assert gw.sync().complete
        assert later in _ids(first)
