"""The client's pacing over a long life: limits the gateway lowers for a while come back up,
and an endpoint's own lower limit stays put.

The real sandbox answers (its limits changed through its admin API); the client's time is a
:class:`_FakeClock` that moves only when a test moves it, so nothing depends on the wall clock.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gwtools._errors import MalformedBodyError, RateLimitError
from gwtools.http._client import LIMIT_MEMORY, Client
from gwtools.http._paging import ListOutcome, TimeWindows, _no_sink, _Run, first_page
from tests.library._shop import Shop
from tests.library.test_client_hostile import (
    RATE_LIMITED,
    _429,
    _FakeClock,
    _get,
    _Proxy,
    _raised,
    _run,
    _settings,
)


@pytest.fixture
def limits(shop: Shop) -> Iterator[Shop]:
    """The sandbox's rate limits may be changed by the test; they are put back after it."""
    before = shop.http.get("/_sandbox/rate_limits").json()
    try:
        yield shop
    finally:
        shop.http.put("/_sandbox/rate_limits", json=before).raise_for_status()


def _set_limits(shop: Shop, **figures: int) -> None:
    shop.http.put("/_sandbox/rate_limits", json=figures).raise_for_status()


def test_a_temporary_throttle_is_lifted_when_the_gateway_lifts_it(
    limits: Shop, tmp_path: Path
) -> None:
    """The gateway lowers its limit to 40/s for a while, then goes back to 100/s: a Gateway
    kept open (a monitor loop, a notebook) follows it back up once the lower limit has not
    been announced for LIMIT_MEMORY seconds. It stayed at 39.6/s until it reconnected."""
    clock = _FakeClock()
    client = Client(_settings(limits, tmp_path), transport=_Proxy(clock), clock=clock)

    async def work(c: Client) -> list[float | None]:
        paces = []
        _set_limits(limits, all=40)
        await _get(c)
        paces.append(c.pace_of("payments"))
        _set_limits(limits, all=100)
        await _get(c)  # just after: the lower limit may be back any moment
        paces.append(c.pace_of("payments"))
        clock.mono += LIMIT_MEMORY + 1
        await _get(c)
        paces.append(c.pace_of("payments"))
        return paces

    assert _run(client, work) == [pytest.approx(40 * 0.99), pytest.approx(40 * 0.99), 99.0]
    assert client.stats.rate_limited == 0


def test_an_endpoints_own_limit_does_not_flip_on_the_shared_one(
    limits: Shop, tmp_path: Path
) -> None:
    """Refunds have their own 30/s under the shared 100/s, and the gateway reports whichever
    bucket has fewest requests left: a refunds answer announcing 100 (the shared bucket was
    tighter just then) says nothing about the refunds limit, which stays as long as 30 keeps
    being announced now and then."""
    clock = _FakeClock()

    def shared_tighter(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        if n in (1, 3):
            response.headers["X-RateLimit-Limit"] = "100"
        return response

    proxy = _Proxy(clock, change=shared_tighter)
    client = Client(_settings(limits, tmp_path), transport=proxy, clock=clock)

    async def work(c: Client) -> list[float | None]:
        paces = []
        for step in range(4):
            if step == 2:
                clock.mono += LIMIT_MEMORY / 2
            await _get(c, "refunds")
            paces.append(c.pace_of("refunds"))
        return paces

    assert _run(client, work) == [pytest.approx(30 * 0.99)] * 4
    assert client.pace_of("payments") == 99.0


def test_the_fan_out_judges_its_pages_rate_on_the_clients_clock(shop: Shop, tmp_path: Path) -> None:
    """Variant B's windows stop splitting once pages come at the pace: that is judged on the
    client's clock, like every other wait of the client. It read the wall clock, so a client
    whose clock said a second of 99 pages had passed was still in its start-up burst."""
    clock = _FakeClock()
    client = Client(_settings(shop, tmp_path), transport=_Proxy(clock), clock=clock)

    async def work(c: Client) -> list[bool]:
        run = _Run(c, "payments", _no_sink, _raise, ListOutcome())
        first = await first_page(c, "payments", on_malformed=_raise)
        assert first is not None
        windows = TimeWindows(run, *first, {}, None, windows_target=16)
        seen = [windows._at_rate_limit()]  # the start-up burst: not judged yet
        clock.mono += 1.0
        windows.arrivals.extend(clock.mono - i / 99 for i in reversed(range(99)))
        seen.append(windows._at_rate_limit())  # 99 pages in the last second: at the pace
        clock.mono += 2.0
        windows.arrivals.extend(clock.mono - i / 10 for i in reversed(range(10)))
        seen.append(windows._at_rate_limit())  # those dropped, then 10 in a second: slower
        return seen

    assert _run(client, work) == [False, True, False]


def _raise(exc: MalformedBodyError) -> None:
    raise exc


@pytest.mark.parametrize("limit", [None, "0", "nan"], ids=["no-limit", "limit-0", "limit-nan"])
def test_nothing_left_pauses_whatever_the_limit_header_says(
    shop: Shop, tmp_path: Path, limit: str | None
) -> None:
    """``X-RateLimit-Remaining: 0`` with a reset 30 s away pauses the next request until then,
    also when ``X-RateLimit-Limit`` is missing, 0 or not a number (a gateway sending only
    what is left). Those answers were ignored whole: the next request went at once, to be
    refused. And a limit that is not a number does not stick: refunds still get their own."""
    clock = _FakeClock()
    reset = str(int(clock.time()) + 30)

    def change(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        if n == 0:
            del response.headers["X-RateLimit-Limit"]
            if limit is not None:
                response.headers["X-RateLimit-Limit"] = limit
            response.headers["X-RateLimit-Remaining"] = "0"
            response.headers["X-RateLimit-Reset"] = reset
        return response

    proxy = _Proxy(clock, change=change)
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock)

    async def work(c: Client) -> None:
        await _get(c)
        await _get(c)
        await _get(c, "refunds")

    _run(client, work)
    assert 28.5 <= proxy.sent_at[1] - proxy.sent_at[0] <= 30, clock.waits
    assert client.stats.rate_limited == 0
    assert client.pace_of("refunds") == pytest.approx(30 * 0.99)


@pytest.mark.parametrize(
    "headers",
    [{"X-RateLimit-Reset": "ms"}, {"Retry-After": "1e300"}],
    ids=["reset-in-milliseconds", "retry-after-huge"],
)
def test_a_wait_past_any_date_is_still_a_rate_limit_error(
    shop: Shop, tmp_path: Path, headers: dict[str, str]
) -> None:
    """A 429 whose ``X-RateLimit-Reset`` is in milliseconds (a common gateway slip) asks for a
    wait of 55,000 years: too long, so raised at once, as any wait past ``max_wait``. Saying
    when to sync again built a date past year 9999, and the sync failed with a bare
    ``ValueError: year ... is out of range`` instead."""
    clock = _FakeClock()
    if headers.get("X-RateLimit-Reset") == "ms":
        headers = {"X-RateLimit-Reset": str(int(clock.time() * 1000))}
    proxy = _Proxy(clock, answer=lambda request, n: _429(request, RATE_LIMITED, **headers))
    exc = _raised(Client(_settings(shop, tmp_path), transport=proxy, clock=clock), _get)
    assert isinstance(exc, RateLimitError), repr(exc)
    assert clock.waits == [] and len(proxy.sent_at) == 1
    text = str(exc)
    assert re.search(r"The gateway asked to wait \d(\.\d+)?e\+\d+ s ", text), text  # not 300 digits
    assert "nothing more was sent" in text
    assert "What to do: sync again later" in text and "max_wait=" not in text
    assert shop.key not in text


class _FirstHeld(_Proxy):
    """Holds the first request's answer (``X-RateLimit-Remaining: 0``, reset 30 s away) until
    the second request is sent: by then the third and fourth wait for their pacer tokens."""

    def __init__(self, clock: _FakeClock) -> None:
        super().__init__(clock)
        self.hold = asyncio.Event()
        self.reset = str(int(clock.time()) + 30)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        n = len(self.sent_at)
        if n == 1:
            self.hold.set()
        if n > 0:
            return await super().handle_async_request(request)  # on to the sandbox
        self.sent_at.append(self.clock.monotonic() if self.clock else 0.0)
        await self.hold.wait()
        headers = {
            "X-RateLimit-Limit": "100",
            "X-RateLimit-Remaining": "0",
            "X-RateLimit-Reset": self.reset,
        }
        return httpx.Response(200, json={"data": []}, headers=headers, request=request)


def test_requests_waiting_for_their_turn_keep_the_pause_too(shop: Shop, tmp_path: Path) -> None:
    """Requests already waiting for a pacer token when an answer says nothing is left wait
    for its reset too. They were checked for a pause only before waiting for their token,
    so they went out during it, into 429s."""
    clock = _FakeClock()
    proxy = _FirstHeld(clock)
    # 10 requests/s after a burst of 2: the third and fourth wait for tokens.
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock, max_rps=10, burst=1)

    async def four(c: Client) -> None:
        await asyncio.gather(*(_get(c) for _ in range(4)))

    _run(client, four)
    sent = [t - proxy.sent_at[0] for t in proxy.sent_at]
    assert sent[1] == 0 and all(28.5 <= t <= 30 for t in sent[2:]), (sent, clock.waits)


def test_a_pause_cut_short_by_max_wait_says_so(
    shop: Shop, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing left until a reset an hour away: the pause lasts max_wait (60 s), and the
    warning says that, not "until X-RateLimit-Reset" (which suggested the limit would be
    back after 60 s, when the next request may well be refused)."""
    clock = _FakeClock()
    reset = str(int(clock.time()) + 3600)

    def change(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        if n == 0:
            response.headers["X-RateLimit-Remaining"] = "0"
            response.headers["X-RateLimit-Reset"] = reset
        return response

    client = Client(_settings(shop, tmp_path), transport=_Proxy(clock, change=change), clock=clock)
    caplog.set_level(logging.WARNING, logger="gwtools")

    async def twice(c: Client) -> None:
        await _get(c)
        await _get(c)

    _run(client, twice)
    said = [r.getMessage() for r in caplog.records if "used up" in r.getMessage()]
    assert len(said) == 1, said
    assert "pausing requests for 60 s" in said[0] and "until X-RateLimit-Reset" not in said[0]
    assert re.search(
        r"for 60 s \(max_wait\) although X-RateLimit-Reset is 3,[56]\d\d s away", said[0]
    )


def test_a_429_asking_for_no_wait_is_not_retried_at_once(shop: Shop, tmp_path: Path) -> None:
    """``Retry-After: 0`` on a 429 (a sub-second wait rounded down, a date already past):
    retried at once it is refused again, and the 30 tries allowed went in about a second,
    failing the sync. It waits as when no wait is given: 1 s (or until the reset)."""
    clock = _FakeClock()

    def answer(request: httpx.Request, n: int) -> httpx.Response | None:
        return _429(request, RATE_LIMITED, **{"Retry-After": "0"}) if n < 3 else None

    proxy = _Proxy(clock, answer=answer)
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock)
    assert "data" in _run(client, _get)
    assert len(proxy.sent_at) == 4 and client.stats.rate_limited == 3
    gaps = [b - a for a, b in zip(proxy.sent_at, proxy.sent_at[1:], strict=False)]
    assert all(1.0 <= g <= 1.1 for g in gaps), (gaps, clock.waits)
