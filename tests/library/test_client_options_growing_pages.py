"""Variant A page numbers end, whatever ``meta.totalPages`` does while the pages are read.

The pager fetches the pages that appear while it reads (a page-count estimate that was low,
rows that became visible late). Against a list that keeps growing as fast as it is read
(a gateway that ignores ``to`` while payments arrive, one a request, on pages of one row),
that chase never ended; nor did a last page whose body stays unreadable, which was requested
again and again. Each test puts a proxy transport in front of the real sandbox (over HTTP)
that counts payment lists and, past a bound, answers an error of its own, so a listing that
would loop fails fast instead of hanging.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import Shop, assert_same, fresh

pytestmark = [pytest.mark.parametrize("sandbox", ["A"], indirect=True), pytest.mark.timeout(120)]

#: Payment lists a proxy lets through: far more than these listings need, far fewer than a loop.
_MAX_LISTS = 400


class _Proxy(httpx.AsyncBaseTransport):
    """In front of the sandbox: payment lists are counted, sent with ``limit`` rewritten to
    ``page_size`` (when given), and answered by :meth:`answer` when it returns a response."""

    def __init__(self, page_size: int | None = None) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.page_size = page_size
        self.lists = 0
        self.pages: list[str | None] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET" or request.url.path != "/v1/payments":
            return await self.inner.handle_async_request(request)
        self.lists += 1
        if self.lists > _MAX_LISTS:
            body = {"error": {"type": "invalid_request_error", "message": "proxy: a loop?"}}
            return httpx.Response(400, json=body, request=request)
        params = request.url.params
        self.pages.append(params.get("page"))
        if (mine := self.answer(request, params)) is not None:
            return mine
        if self.page_size is not None:
            params = params.set("limit", str(self.page_size))
        forwarded = httpx.Request(
            "GET", request.url.copy_with(params=params), headers=request.headers
        )
        return await self.inner.handle_async_request(forwarded)

    def answer(self, request: httpx.Request, params: httpx.QueryParams) -> httpx.Response | None:
        return None

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_a_list_growing_as_fast_as_it_is_read_ends_incomplete(shop: Shop, tmp_path: Path) -> None:
    """20 payments on pages of one row; the gateway ignores ``to`` and a payment arrives
    before each list request, so every page read shows one page more. The pager used to chase
    the new pages for ever (the proxy's bound stopped it with an error). Now the pages that
    disagree on meta.total are read once more, and the sync ends incomplete, saying the list
    kept changing: it does not claim a listing it could not check."""
    shop.history(20, days=1, seed=3)
    shop.faults(ignore_time_filters=True, insert_rate=1.0)
    proxy = _Proxy(page_size=1)
    try:
        with (
            shop.connect(tmp_path / "cache", transport=proxy, concurrency=4) as gw,
            pytest.warns(GatewayDataWarning, match="incomplete"),
        ):
            result = gw.sync(["payments"])
    finally:
        shop.clear_faults()
    assert proxy.lists <= 100, proxy.lists  # two reads of ~21 pages, not the proxy's bound
    assert not result.complete
    assert any("kept changing while it was read" in p for p in result.problems), result.problems


def test_a_stable_list_whose_page_count_was_underestimated_is_read_once(
    shop: Shop, tmp_path: Path
) -> None:
    """The same 20 one-row pages, nothing arriving: the frozen listing's estimate (one page
    less than page 1 said) is topped up by the pages' own totalPages, each page is requested
    once, and the sync is complete and equal to a fresh fetch."""
    shop.history(20, days=1, seed=3)
    proxy = _Proxy(page_size=1)
    with shop.connect(tmp_path / "cache", transport=proxy, concurrency=4) as gw:
        result = gw.sync(["payments"])
        cached = gw.payments(refresh=False)
    assert result.complete, result.problems
    listing = result.resources["payments"]
    assert listing.listed == listing.expected == 20 and listing.refetched == 0
    numbered = [p for p in proxy.pages if p is not None]
    assert sorted(numbered, key=int) == [str(n) for n in range(1, 21)], proxy.pages
    assert proxy.lists == len(numbered) + 1  # and the first, unnumbered, request
    assert_same(cached, fresh(shop, tmp_path)["payments"])


class _UnreadableLastPage(_Proxy):
    """Page ``last`` is answered 200 with an HTML page, every time."""

    def __init__(self, last: int) -> None:
        super().__init__()
        self.last = str(last)

    def answer(self, request: httpx.Request, params: httpx.QueryParams) -> httpx.Response | None:
        if params.get("page") != self.last:
            return None
        return httpx.Response(200, text="<html>proxy error</html>", request=request)


def test_a_last_page_that_stays_unreadable_is_not_requested_for_ever(
    shop: Shop, tmp_path: Path
) -> None:
    """250 payments, 3 pages; page 3 stays unreadable. Its number was put back on the list of
    pages to fetch after every round, so the pager requested it for ever. Now it is requested
    once per read (with the client's retries) and the sync is incomplete."""
    shop.history(250, days=20, seed=4)
    proxy = _UnreadableLastPage(3)
    with (
        shop.connect(tmp_path / "cache", transport=proxy, max_attempts=2) as gw,
        pytest.warns(GatewayDataWarning, match="incomplete"),
    ):
        result = gw.sync(["payments"])
    assert proxy.pages.count("3") <= 4, proxy.pages  # 2 attempts, in at most two reads
    assert not result.complete
    problems: list[Any] = result.problems
    assert any("stayed unreadable" in p for p in problems), problems
