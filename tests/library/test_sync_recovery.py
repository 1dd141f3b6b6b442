"""A refund changes its payment: however a sync ends (killed while staging, killed after its
merge, a re-read answered with an unusable body, the gateway switching variant), the sync
after it leaves the cache equal to what the gateway holds, or says it did not.

Each test breaks one sync over real HTTP, lets a clean one run, and compares the cache with a
fresh full fetch.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import gwtools
from gwtools.cache import _dataset as _cache
from gwtools.cache._dataset import Dataset, _next_seq
from gwtools.sandbox import Sandbox
from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import Shop, assert_same, fresh
from tests.toolkit.conftest import build_refunds


@pytest.fixture(params=["A", "B"])
def own_shop(request: pytest.FixtureRequest) -> Iterator[Shop]:
    """A sandbox of its own with a fixed clock: the plan (re-read the refunded payment by id,
    not list everything again) must not depend on what other tests did to a shared one."""
    now = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)
    with Sandbox(request.param, now=now, rate_limits=False) as sb:
        shop = Shop(sb, {"secret_key": sb.secret_key})
        yield shop
        shop.close()


class Killed(Exception):
    """Stands for a kill at a named step of writing (the finally blocks still run, as the
    files a kill leaves behind are left by one killed before them)."""


def _refunded_payment(shop: Shop, cache: Path, payments: int = 400) -> str:
    """Sync a history, then refund its oldest cached unrefunded payment a day later (so
    that re-reading it by id is cheaper than listing from it again)."""
    shop.history(payments, days=20, seed=4)
    with shop.connect(cache) as gw:
        assert gw.sync().complete
        cached = gw.payments(refresh=False)
    open_to_refund = cached[(cached["status"] == "succeeded") & ~cached["refunded"].astype(bool)]
    payment = str(open_to_refund.sort_values("created_at")["id"].iloc[0])
    shop.advance(86_400)
    shop.refund(payment, 100)
    return payment


def _clean_sync_matches_the_gateway(shop: Shop, cache: Path, payment: str) -> None:
    """A clean sync completes, and leaves the payments as a fresh full fetch has them (the
    refunded one with the refund)."""
    with shop.connect(cache) as gw:
        assert gw.sync().complete
        cached = gw.payments(refresh=False)
    expected = fresh(shop, cache.parent)["payments"]
    gateway = expected.set_index("id").loc[payment, "refunded_amount"]
    assert gateway >= 100 and cached.set_index("id").loc[payment, "refunded_amount"] == gateway
    assert_same(cached, expected)


def _kill_at(step: str) -> Callable[[str], None]:
    """An ``on_step`` hook that kills the first time the sync (refunds first) passes ``step``."""
    seen = []

    def hook(name: str) -> None:
        if name == step and not seen:
            seen.append(name)
            raise Killed(step)

    return hook


def test_a_killed_syncs_staged_refund_is_news_to_the_next_merge(tmp_path: Path) -> None:
    """A sync killed after staging a batch leaves it in staging; the next sync fetches the
    same refund again. Compared with the dataset (not with the leftover), it is new, so its
    payment is owed a re-read; counted as cached, it was not."""
    ds = Dataset.at(tmp_path, "acct", "test", "refunds")
    ds.write_batch(build_refunds([{"id": "rfnd_old", "payment_id": "pay_1", "amount": 100}]))
    new = build_refunds([{"id": "rfnd_new", "payment_id": "pay_2", "amount": 100}])
    months = ds.stage_batch(new)  # the killed sync's batch, never merged
    since = _next_seq()  # the next sync starts
    months |= ds.stage_batch(new)  # and fetches the refund again
    stats = ds.compact(months, since_seq=since, collect="payment_id")
    assert (stats.new, stats.changed) == (1, {"pay_2"})
    with pytest.warns(GatewayDataWarning, match="partial"):  # (no sync of it ever completed)
        assert sorted(ds.read()["id"]) == ["rfnd_new", "rfnd_old"]


def test_a_refund_merged_by_a_killed_sync_still_updates_its_payment(
    own_shop: Shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed with the refund merged into the dataset, before the state said which payment
    it changed: the next sync still re-reads that payment."""
    shop = own_shop
    step = "compact.replaced"
    cache = tmp_path / "cache"
    payment = _refunded_payment(shop, cache)
    monkeypatch.setattr(_cache, "on_step", _kill_at(step))
    with shop.connect(cache) as gw, pytest.raises(Killed):
        gw.sync()
    monkeypatch.setattr(_cache, "on_step", None)
    _clean_sync_matches_the_gateway(shop, cache, payment)


class _UnusableRetrieves(httpx.AsyncBaseTransport):
    """A proxy answering every payment retrieve with a 200 HTML page; lists pass through."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.answered = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/v1/payments/pay_"):
            self.answered += 1
            return httpx.Response(200, headers={"content-type": "text/html"}, content=b"<p>busy")
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_payment_re_read_with_an_unusable_answer_makes_the_sync_incomplete(
    own_shop: Shop, tmp_path: Path
) -> None:
    shop = own_shop
    cache = tmp_path / "cache"
    payment = _refunded_payment(shop, cache)
    proxy = _UnusableRetrieves()
    with (
        shop.connect(cache, transport=proxy, max_attempts=2) as gw,
        pytest.warns(GatewayDataWarning, match="incomplete"),
    ):
        result = gw.sync()
    assert proxy.answered >= 1  # the refunded payment was re-read by id
    assert not result.complete
    assert any("re-read by id got an unusable answer" in p for p in result.problems)
    # still owed: the next sync reads it again, and the cache ends as the gateway says
    _clean_sync_matches_the_gateway(shop, cache, payment)


@pytest.mark.parametrize(("before", "after"), [("A", "B"), ("B", "A")])
def test_a_gateway_switching_variant_gets_every_row_listed_again(
    tmp_path: Path, before: str, after: str
) -> None:
    now = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)
    db = tmp_path / "sandbox.sqlite"
    options: dict[str, Any] = {"db": str(db), "now": now, "rate_limits": False}

    def cached(sb: Sandbox, folder: str) -> Any:
        with gwtools.connect(sb.secret_key, sb.base_url, cache_dir=tmp_path / folder,
                             account="x") as gw:  # fmt: skip
            assert gw.sync().complete
            return gw.payments(refresh=False)

    with Sandbox(before, seed_payments=120, **options) as sb:
        assert set(cached(sb, "cache")["api_variant"]) == {before}
    with Sandbox(after, **options) as sb:
        synced = cached(sb, "cache")
        expected = cached(sb, "fresh")
    assert set(synced["api_variant"]) == {after}
    assert_same(synced, expected)


def test_a_variant_switch_whose_listing_stayed_incomplete_is_listed_again_by_the_next_sync(
    tmp_path: Path,
) -> None:
    # The switch's full listing came back incomplete, yet its state recorded the new variant:
    # the next sync saw no switch, synced incrementally, and the rows that listing missed kept
    # the old variant's values for good (here one payment stayed variant B).
    now = dt.datetime(2026, 3, 2, 9, tzinfo=dt.UTC)
    options: dict[str, Any] = {"db": str(tmp_path / "sandbox.sqlite"), "now": now,
                               "rate_limits": False}  # fmt: skip

    def sync(sb: Sandbox, folder: str) -> Any:
        with gwtools.connect(sb.secret_key, sb.base_url, cache_dir=tmp_path / folder,
                             account="x") as gw:  # fmt: skip
            return gw.sync()

    with Sandbox("B", seed_payments=120, **options) as sb:
        assert sync(sb, "cache").complete
    with Sandbox("A", **options) as sb:
        faults = f"{sb.base_url}/_sandbox/faults"
        garbled = {"garbled_id_rate": 1.0, "seed": 2}  # a damaged id on every page: rejected
        httpx.put(faults, json=garbled, timeout=10).raise_for_status()
        with pytest.warns(GatewayDataWarning, match="incomplete"):
            assert not sync(sb, "cache").complete
        httpx.delete(faults, timeout=10).raise_for_status()
        again = sync(sb, "cache")
        assert again.complete
        assert {r.mode for r in again.resources.values()} == {"full"}
        assert sync(sb, "fresh").complete
    for resource in ("payments", "refunds"):
        synced = gwtools.read_cache(tmp_path / "cache", resource)
        assert set(synced["api_variant"]) == {"A"}, resource
        assert_same(synced, gwtools.read_cache(tmp_path / "fresh", resource))
