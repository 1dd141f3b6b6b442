"""An incremental sync runs several listings at once (the new rows, the open rows' status
lists, retrieves by id). When one of them fails, the others stop before the sync raises, and
the sync raises that listing's own gwtools error (not a group of errors); the next sync then
completes with every row.

A proxy transport in front of the real sandbox (over HTTP) plays the failure: a key revoked
in the middle of a sync (a status list's second page answered 401 while the main listing's
request is held), or something other than the gateway answering a retrieve by id (a 404 that
is not the gateway's error, while the other retrieves are held). Held requests are let
through only once the test has checked them. Nothing depends on timing: the failure is answered only once
another request is held, and whether the held requests were cancelled is known when the sync
returns (the test's waits are guards against a hang).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gwtools._errors import AuthenticationError, NotFoundError
from tests.library._shop import Shop, assert_same, fresh

REVOKED = "The API key was revoked while the sync ran (the test's proxy)"


class _RevokedMidSync(httpx.AsyncBaseTransport):
    """Holds every payments list request without a status filter (the main listing) until the
    sync cancels it or the test calls :meth:`release`; lets each status's first request (the
    plan's probe) through, and answers any later request of a status list 401, once the main
    listing is held."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.statuses: set[str] = set()
        self.main_held = asyncio.Event()
        self.released = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        #: set (from the sync's loop) when the status list's request is answered 401
        self.failed = threading.Event()
        self.cancelled = 0  # held requests the sync cancelled
        self.after_failure: list[httpx.URL] = []  # requests that reached the proxy after it

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.loop = asyncio.get_running_loop()
        if self.failed.is_set():
            self.after_failure.append(request.url)
        params = request.url.params
        if request.method != "GET" or request.url.path != "/v1/payments":
            return await self.inner.handle_async_request(request)
        status = params.get("status")
        if status is None:
            self.main_held.set()
            try:
                await self.released.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return await self.inner.handle_async_request(request)
        if status not in self.statuses:
            self.statuses.add(status)
            return await self.inner.handle_async_request(request)
        await self.main_held.wait()  # the main listing is in flight when the list fails
        self.failed.set()
        body = {
            "error": {"type": "authentication_error", "code": "api_key_revoked", "message": REVOKED}
        }
        return httpx.Response(401, json=body, request=request)

    def release(self) -> None:
        """Let held requests through (from the test's thread)."""
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.released.set)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.fixture
def shop(sandbox_b: Any) -> Iterator[Shop]:
    # Variant B's history holds over 100 payments waiting on 3-D Secure: their status list
    # has a second page, which the plan lists at the same time as the new rows.
    s = Shop(sandbox_b, {"secret_key": _new_key(sandbox_b)})
    s.history(3000, days=30, seed=3)
    yield s
    s.close()


def _new_key(sandbox: Any) -> str:
    with httpx.Client(base_url=sandbox.base_url, timeout=60) as http:
        r = http.post("/_sandbox/accounts")
        r.raise_for_status()
        return str(r.json()["secret_key"])


def test_a_failing_listing_stops_the_others_and_the_next_sync_completes(
    shop: Shop, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    with shop.connect(cache) as gw:
        assert gw.sync().complete
    shop.advance(3600)
    shop.card()  # a new row: the main listing has something to list

    proxy = _RevokedMidSync()
    with (
        shop.connect(cache, transport=proxy) as gw,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        syncing = pool.submit(gw.sync, ["payments"])
        try:
            # (A guard only: the plan lists a status's second page within a second.)
            assert proxy.failed.wait(120), "the sync never listed a status list's second page"
            with pytest.raises(AuthenticationError) as info:
                syncing.result(timeout=120)
            # Checked as the sync returns: the main listing was stopped, not left running.
            assert proxy.cancelled == 1, "the main listing's request was left running"
            assert proxy.after_failure == []
        finally:
            proxy.release()
    # The listing's own error, as a sync with one listing raises it.
    assert type(info.value) is AuthenticationError
    assert REVOKED in str(info.value)
    assert not isinstance(info.value.__context__, BaseExceptionGroup)

    with shop.connect(cache) as gw:
        result = gw.sync()
        assert result.complete, result.problems
        expected = fresh(shop, tmp_path)
        assert_same(gw.payments(refresh=False), expected["payments"])
        assert_same(gw.refunds(refresh=False), expected["refunds"])


class _NotTheGateway(httpx.AsyncBaseTransport):
    """Holds every retrieve of a payment by id until the sync cancels it or the test calls
    :meth:`release`, but one: answered, once another is held, with a 404 that is not the
    gateway's error object (something else answering on the gateway's address)."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.some_held = asyncio.Event()
        self.released = asyncio.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.failed = threading.Event()
        self.held = 0
        self.cancelled = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.loop = asyncio.get_running_loop()
        if request.method != "GET" or not request.url.path.startswith("/v1/payments/"):
            return await self.inner.handle_async_request(request)
        if not self.some_held.is_set() or self.failed.is_set():
            self.held += 1
            self.some_held.set()
            try:
                await self.released.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
            return await self.inner.handle_async_request(request)
        self.failed.set()
        return httpx.Response(404, text="<html>Not Found</html>", request=request)

    def release(self) -> None:
        if self.loop is not None and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.released.set)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_failing_retrieve_by_id_stops_the_other_retrieves(shop: Shop, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with shop.connect(cache) as gw:
        assert gw.sync().complete
        succeeded = gw.payments(status="succeeded", refresh=False).sort_values("created_at")
        # Ones with something left to refund (the shop's history and earlier tests refund some)
        succeeded = succeeded[succeeded["refunded_amount"].fillna(0).eq(0)]
    # Refunds of payments days apart: the next sync retrieves those payments by id (listing
    # the days between them again would cost more requests), all at once.
    for at in (0, 800, 1600):
        shop.refund(succeeded["id"].iloc[at])

    proxy = _NotTheGateway()
    with (
        shop.connect(cache, transport=proxy) as gw,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        syncing = pool.submit(gw.sync)
        try:
            assert proxy.failed.wait(120), "the sync retrieved fewer than two payments by id"
            with pytest.raises(NotFoundError) as info:
                syncing.result(timeout=120)
            assert proxy.held >= 1 and proxy.cancelled == proxy.held, (
                f"{proxy.held - proxy.cancelled} of {proxy.held} retrieves were left running"
            )
        finally:
            proxy.release()
    assert type(info.value) is NotFoundError

    with shop.connect(cache) as gw:
        assert gw.sync().complete
        expected = fresh(shop, tmp_path)
        assert_same(gw.payments(refresh=False), expected["payments"])
        assert_same(gw.refunds(refresh=False), expected["refunds"])
