"""Paging against a gateway that misbehaves in ways the sandbox's faults do not play.

Each test puts a proxy transport in front of the real sandbox (over HTTP) that rewrites what
passes: a cursor the gateway ignores or sends round in a cycle, a row a page repeats from the
page before (hiding one that is never served), a gateway whose pages hold fewer rows than the
``limit`` asked for. The proxy counts list requests and, past a bound, answers an error of its
own, so a listing that would loop forever fails fast instead of hanging.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import Shop, assert_same, fresh

A_ONLY = pytest.mark.parametrize("sandbox", ["A"], indirect=True)
B_ONLY = pytest.mark.parametrize("sandbox", ["B"], indirect=True)
pytestmark = pytest.mark.timeout(120)

#: List requests a proxy lets through before it answers an error of its own: far more than
#: any of these listings needs, far fewer than a loop makes.
_MAX_LISTS = 300


class _Proxy(httpx.AsyncBaseTransport):
    """Something in front of the gateway: requests and answers pass through :meth:`request`
    and :meth:`answer`, which subclasses change for the payments list."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.lists = 0
        self.sent: list[httpx.QueryParams] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method != "GET" or request.url.path != "/v1/payments":
            return await self.inner.handle_async_request(request)
        self.lists += 1
        self.url, self.headers = request.url, request.headers
        if self.lists > _MAX_LISTS:
            body = {"error": {"type": "invalid_request_error", "message": "proxy: a loop?"}}
            return httpx.Response(400, json=body, request=request)
        params = self.request(request.url.params)
        self.sent.append(params)
        forwarded = httpx.Request(
            "GET", request.url.copy_with(params=params), headers=request.headers
        )
        response = await self.inner.handle_async_request(forwarded)
        await response.aread()
        if response.status_code != 200:
            return response
        body = response.json()
        if not await self.answer(params, body):
            content = response.content
        else:  # as the gateway writes JSON (compact), so that metadata texts compare equal
            content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-encoding")
        }
        return httpx.Response(200, headers=headers, content=content, request=request)

    def request(self, params: httpx.QueryParams) -> httpx.QueryParams:
        return params

    async def answer(self, params: httpx.QueryParams, body: dict[str, Any]) -> bool:
        """Change an answer's ``body`` in place; True if it was changed."""
        return False

    async def fetch(self, params: httpx.QueryParams) -> dict[str, Any]:
        """A list page as the gateway serves it, past the rewriting."""
        url = self.url.copy_with(params=params)
        response = await self.inner.handle_async_request(
            httpx.Request("GET", url, headers=self.headers)
        )
        await response.aread()
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    async def aclose(self) -> None:
        await self.inner.aclose()


def _state(gw: Any, resource: str = "payments") -> dict[str, Any]:
    state: dict[str, Any] = gw._dataset(resource).state()
    return state


# --------------------------------------------------------------------- cursors that stay put


class _StuckCursor(_Proxy):
    """``ignored``: the gateway ignores ``starting_after`` (every page of a window is its
    first). ``cycling``: each window's second cursor is ignored, so its pages go round: first,
    second, first, second..."""

    def __init__(self, how: str) -> None:
        super().__init__()
        self.how = how
        self.cursors: dict[str, list[str]] = {}

    def request(self, params: httpx.QueryParams) -> httpx.QueryParams:
        cursor = params.get("starting_after")
        if cursor is None:
            return params
        window = str(params.remove("starting_after"))
        seen = self.cursors.setdefault(window, [])
        if cursor not in seen:
            seen.append(cursor)
        if self.how == "ignored" or seen.index(cursor) == 1:
            return params.remove("starting_after")
        return params


@B_ONLY
@pytest.mark.parametrize("how", ["ignored", "cycling"])
def test_b_cursor_that_does_not_move_on_stops_the_listing_and_makes_it_incomplete(
    shop: Shop, tmp_path: Path, how: str
) -> None:
    """A gateway that answers ``starting_after`` with a page already read used to make the
    sync repeat the same requests forever. Now the window stops, the sync says why and is
    incomplete (no high-water mark), and a sync through a well-behaved gateway finishes."""
    shop.history(600, days=1, seed=5)  # a window of several pages under the first one
    proxy = _StuckCursor(how)
    with (
        shop.connect(tmp_path / "cache", transport=proxy, concurrency=1) as gw,
        pytest.warns(GatewayDataWarning, match="incomplete"),
    ):
        result = gw.sync(["payments"])
    assert proxy.lists < 60, proxy.lists  # it stopped; not the proxy's bound
    payments = result.resources["payments"]
    assert not result.complete and not payments.complete
    repeated = [p for p in result.problems if "repeated the payments page after" in p]
    assert repeated and "starting_after=pay_" in repeated[0], result.problems
    assert _state(gw).get("high_water") is None
    with shop.connect(tmp_path / "cache") as gw:
        fixed = gw.sync(["payments"])
        assert fixed.complete and fixed.problems == []
        assert_same(gw.payments(refresh=False), fresh(shop, tmp_path)["payments"])


# --------------------------------------------------------------------- a row served twice


class _RepeatedRow(_Proxy):
    """Page 2 of a frozen listing (one with ``to``) starts with page 1's last row instead of
    its own first one, which is never served: as when a row moves between pages while they
    are read. ``meta`` is left as it is, so the rows still add up to ``meta.total``.
    ``once``: only the first such page 2; else every one."""

    def __init__(self, once: bool) -> None:
        super().__init__()
        self.once = once
        self.hidden: list[str] = []

    async def answer(self, params: httpx.QueryParams, body: dict[str, Any]) -> bool:
        if params.get("page") != "2" or "to" not in params or (self.once and self.hidden):
            return False
        first = await self.fetch(params.set("page", "1"))
        self.hidden.append(body["data"][0]["id"])
        body["data"][0] = first["data"][-1]
        return True


@A_ONLY
@pytest.mark.parametrize("once", [True, False], ids=["once", "every-time"])
def test_a_row_repeated_across_pages_does_not_hide_a_missing_one(
    shop: Shop, tmp_path: Path, once: bool
) -> None:
    """250 payments, then a full sync through a proxy whose page 2 repeats page 1's last row
    in place of its own first. The rows listed still add up to meta.total, and the sync used
    to call itself complete and replace the cache without the row never served. Now distinct
    ids are counted: the listing is read again; if the repeat stays, the sync is incomplete
    and the cache keeps every row."""
    shop.history(250, days=20, seed=4)
    with shop.connect(tmp_path / "cache") as gw:
        assert gw.sync(["payments"]).complete
        mark = _state(gw)["high_water"]
    expected = fresh(shop, tmp_path)["payments"]
    proxy = _RepeatedRow(once)
    with shop.connect(tmp_path / "cache", transport=proxy) as gw:
        if once:
            result = gw.sync(["payments"], full=True)
            payments = result.resources["payments"]
            assert result.complete, result.problems
            assert payments.refetched >= 3 and payments.listed == payments.expected == 250
        else:
            with pytest.warns(GatewayDataWarning, match="incomplete"):
                result = gw.sync(["payments"], full=True)
            assert not result.complete
            assert any("distinct ids" in p for p in result.problems), result.problems
            assert _state(gw)["high_water"] == mark
        cached = gw.payments(refresh=False)
    assert proxy.hidden and set(proxy.hidden) <= set(cached["id"])
    assert_same(cached, expected)


# --------------------------------------------------------------------- smaller pages


class _SmallPages(_Proxy):
    """A gateway that serves at most ``size`` rows a page, whatever ``limit`` asks for (its
    ``has_more`` is right for the rows it serves). ``cut``: besides, the pages picked by
    :meth:`cuts` lose their last 5 rows in transit, every time they are fetched."""

    def __init__(self, size: int = 50, cut: str | None = None) -> None:
        super().__init__()
        self.size, self.cut = size, cut

    def request(self, params: httpx.QueryParams) -> httpx.QueryParams:
        return params.set("limit", str(min(int(params.get("limit", "10")), self.size)))

    async def answer(self, params: httpx.QueryParams, body: dict[str, Any]) -> bool:
        if not self.cuts(params) or len(body["data"]) <= 5:
            return False
        del body["data"][-5:]
        return True

    def cuts(self, params: httpx.QueryParams) -> bool:
        if self.cut == "first":  # the listing's very first page (no window yet)
            return "to" not in params and "starting_after" not in params
        if self.cut == "cursor":  # every page a cursor reaches
            return "starting_after" in params
        return False


@B_ONLY
def test_b_gateway_serving_smaller_pages_than_asked_syncs_complete(
    shop: Shop, tmp_path: Path
) -> None:
    """The spec says only that a page holds at most 100 rows. A gateway serving 50 (with
    has_more) used to have every page fetched three times and called short, so no sync ever
    completed. The first page, the same 50 rows again when fetched again, sets the page size
    the listing expects."""
    shop.history(600, days=20, seed=4)
    expected = fresh(shop, tmp_path)["payments"]
    proxy = _SmallPages(50)
    with shop.connect(tmp_path / "cache", transport=proxy) as gw:
        result = gw.sync(["payments"])
        payments = result.resources["payments"]
        assert result.complete and result.problems == [], result.problems
        assert (payments.short_pages, payments.refetched) == (0, 1)
        assert _state(gw)["high_water"] is not None
        assert_same(gw.payments(refresh=False), expected)
        shop.advance(60)
        new = shop.card()
        again = gw.sync(["payments"])
        assert again.complete and new in set(gw.payments(refresh=False)["id"])
    assert {p["limit"] for p in proxy.sent} == {"50"}


@B_ONLY
@pytest.mark.parametrize("cut", ["first", "cursor"])
def test_b_pages_cut_below_the_gateways_page_size_are_still_caught(
    shop: Shop, tmp_path: Path, cut: str
) -> None:
    """A gateway serving 50 rows a page, behind a proxy that cuts some pages to 45 every time.
    ``cursor``: the pages after a cursor stay shorter than the first pages: short. ``first``:
    the first page, cut the same way when fetched again, was taken as the page size, but later
    pages hold more: the pages taken as full may have been cut. Either way, incomplete."""
    shop.history(600, days=20, seed=4)
    with (
        shop.connect(tmp_path / "cache", transport=_SmallPages(50, cut)) as gw,
        pytest.warns(GatewayDataWarning, match="incomplete"),
    ):
        result = gw.sync(["payments"])
    assert not result.complete
    words = "stayed short" if cut == "cursor" else "taken as the gateway's page size"
    assert any(words in p for p in result.problems), result.problems
    assert _state(gw).get("high_water") is None


# --------------------------------------------------------------------- oldest first


class _OldestFirst(_Proxy):
    """A variant A gateway whose lists run oldest first (the spec fixes no order for page
    numbers; the sandbox serves newest first): every page is cut from the whole filtered list
    as the sandbox serves it, reversed. ``meta`` stays as it is."""

    async def answer(self, params: httpx.QueryParams, body: dict[str, Any]) -> bool:
        query = params.remove("page").set("limit", "100")
        first = await self.fetch(query.set("page", "1"))
        rows = list(first["data"])
        for n in range(2, first["meta"]["totalPages"] + 1):
            rows += (await self.fetch(query.set("page", str(n))))["data"]
        rows.reverse()
        limit, page = int(params.get("limit", "20")), int(params.get("page", "1"))
        body["data"] = rows[(page - 1) * limit : page * limit]
        return True


@A_ONLY
def test_a_gateway_listing_oldest_first_is_listed_whole(shop: Shop, tmp_path: Path) -> None:
    """Page 1 of an oldest-first list starts with the oldest row. The freeze meant for a page
    1 within one second took it for one and listed only up to a second past the oldest row:
    a full sync of 250 payments called itself complete with 1 row and replaced the cache with
    it. Now only a page 1 within one second is frozen one second past it."""
    shop.history(250, days=20, seed=4)
    expected = fresh(shop, tmp_path)["payments"]
    with shop.connect(tmp_path / "cache", transport=_OldestFirst()) as gw:
        result = gw.sync(["payments"], full=True)
        assert result.complete, result.problems
        assert_same(gw.payments(refresh=False), expected)
