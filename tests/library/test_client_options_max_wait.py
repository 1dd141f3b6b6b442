"""``connect(max_wait=...)``: the longest rate-limit wait a sync waits out is the user's to set.

A gateway that asks for a 2-minute ``Retry-After`` could not be synced at all: the client's
``max_wait`` (60 s) was not an option of ``connect()``. A proxy transport in front of the real
sandbox (over HTTP) answers the first payments list with a 429; everything else goes through.
The long waits are checked on a client made from the Gateway's own options with a clock that
records waits instead of sleeping, so no test waits out minutes or depends on the wall clock.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import gwtools
from gwtools import ConfigurationError, RateLimitError
from gwtools.http._client import MAX_WAIT, Client, Clock
from tests.library._shop import Shop
from tests.library.test_client_hostile import _FakeClock as _RecordingClock

B_ONLY = pytest.mark.parametrize("sandbox", ["B"], indirect=True)
pytestmark = pytest.mark.timeout(120)


class _SlowDown(httpx.AsyncBaseTransport):
    """The first payments list is answered ``429`` with ``Retry-After: {retry_after}``; the
    rest goes on to the sandbox. ``lists`` counts payments lists that reached the proxy."""

    def __init__(self, retry_after: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.retry_after = retry_after
        self.lists = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/payments":
            self.lists += 1
            if self.lists == 1:
                body = {
                    "error": {
                        "type": "rate_limit_error",
                        "code": "rate_limit_exceeded",
                        "message": "Too many requests",
                    }
                }
                headers = {"Retry-After": self.retry_after, "Request-Id": "req_slow"}
                return httpx.Response(429, json=body, headers=headers, request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _list_once(gw: gwtools.Gateway, clock: Clock) -> Any:
    """One payments list through a client built from ``gw``'s own options, on ``clock``."""

    async def run() -> Any:
        client = Client(gw.settings, **gw._client_args, clock=clock)
        try:
            return await client.get("payments", {"limit": 1}, parse=orjson.loads)
        finally:
            await client.aclose()

    return asyncio.run(run())


@B_ONLY
def test_a_sync_with_a_small_max_wait_raises_on_a_longer_retry_after(
    shop: Shop, tmp_path: Path
) -> None:
    """The gateway asks for 120 s, max_wait allows 90: nothing is waited, nothing more sent,
    and the error says how to let gwtools wait that long."""
    shop.card()
    proxy = _SlowDown("120")
    with (
        shop.connect(tmp_path, transport=proxy, max_wait=90) as gw,
        pytest.raises(RateLimitError) as info,
    ):
        gw.sync(["payments"])
    text = str(info.value)
    assert "asked to wait 120 s" in text and "longer than gwtools waits (90 s)" in text, text
    assert "max_wait=120" in text and "What to do: sync again after" in text, text
    assert proxy.lists == 1 and info.value.retry_after == 120
    assert shop.key not in text and info.value.__context__ is None


@B_ONLY
def test_a_sync_waits_out_what_max_wait_allows_and_not_more(shop: Shop, tmp_path: Path) -> None:
    """Through Gateway.sync on the Gateway's own client: a Retry-After of 0.3 s is raised under
    max_wait=0.2 and waited out under max_wait=1 (waits short enough to spend for real; the
    result does not depend on how long they take)."""
    paid = shop.card()
    proxy = _SlowDown("0.3")
    with (
        shop.connect(tmp_path / "small", transport=proxy, max_wait=0.2) as gw,
        pytest.raises(RateLimitError, match=r"longer than gwtools waits \(0\.2 s\)"),
    ):
        gw.sync(["payments"])
    assert proxy.lists == 1
    proxy = _SlowDown("0.3")
    with shop.connect(tmp_path / "large", transport=proxy, max_wait=1) as gw:
        result = gw.sync(["payments"])
        assert result.complete and result.rate_limited == 1, result
        assert paid in set(gw.payments(refresh=False)["id"])
    assert proxy.lists >= 2


@B_ONLY
def test_a_two_minute_retry_after_is_waited_out_with_max_wait_180(
    shop: Shop, tmp_path: Path
) -> None:
    """The client connect() builds carries max_wait: with max_wait=180 a 120 s Retry-After is
    waited out (on a recording clock) and the request retried; with the default it is raised."""
    shop.card()
    proxy = _SlowDown("120")
    clock = _RecordingClock()
    with shop.connect(tmp_path, transport=proxy, max_wait=180) as gw:
        assert gw._client is not None and gw._client.max_wait == 180
        page = _list_once(gw, clock)
    assert len(page["data"]) == 1 and proxy.lists == 2
    assert [w for w in clock.waits if w >= 120] and all(w < 121 for w in clock.waits)

    proxy, clock = _SlowDown("120"), _RecordingClock()
    with (
        shop.connect(tmp_path, transport=proxy) as gw,
        pytest.raises(RateLimitError, match=rf"gwtools waits \({MAX_WAIT:.0f} s\)"),
    ):
        _list_once(gw, clock)
    assert clock.waits == [] and proxy.lists == 1


@pytest.mark.parametrize(
    "value", [-1, -0.5, "60", None, True, float("nan"), float("inf"), dt.timedelta(minutes=2)]
)
def test_max_wait_that_is_not_a_number_of_seconds_is_refused(tmp_path: Path, value: object) -> None:
    """As max_rps= and timeout= are: a ConfigurationError naming the option and the value,
    before anything is sent (the base URL is never contacted)."""
    key = "sk_test_" + "a1B2" * 6
    with pytest.raises(ConfigurationError) as info:
        gwtools.connect(key, "http://127.0.0.1:9", cache_dir=tmp_path, max_wait=value)  # type: ignore[arg-type]
    assert info.value.param == "max_wait"
    assert str(info.value).startswith(
        f"max_wait must be a number of seconds of 0 or more, got {value!r}"
    )
    assert key not in str(info.value)


def test_max_wait_of_zero_or_more_is_accepted(tmp_path: Path) -> None:
    key = "sk_test_" + "a1B2" * 6
    for value in (0, 0.5, 180, 7200.0):
        with gwtools.connect(key, "http://127.0.0.1:9", cache_dir=tmp_path, max_wait=value) as gw:
            assert gw._client is not None and gw._client.max_wait == value
