"""The HTTP client against a gateway that misbehaves: long or dated waits, a used-up rate
limit, a deprecated version, answers that never come, records that echo the key.

A proxy transport (:class:`_Proxy`) in front of the real sandbox plays the misbehaving gateway:
it lets requests through, answers some itself, or changes what comes back. The client's waits
go through a :class:`_FakeClock` that records each one and moves its own time on, so no test
sleeps or depends on the wall clock.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
import warnings
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import orjson
import pytest

from gwtools._config import Settings, normalize_base_url
from gwtools._errors import (
    APIConnectionError,
    APIError,
    InvalidRequestError,
    RateLimitError,
    error_from_response,
    mask_key,
)
from gwtools.http._client import MAX_WAIT, Client, Clock
from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import Shop

T = TypeVar("T")

RATE_LIMITED = {
    "error": {
        "type": "rate_limit_error",
        "code": "rate_limit_exceeded",
        "message": "Too many requests",
    }
}


class _FakeClock(Clock):
    """Starts at the real time; moves on only when the client waits, recording each wait."""

    def __init__(self) -> None:
        self.mono = time.monotonic()
        self.wall = time.time()
        self.waits: list[float] = []

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.wall

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.mono += seconds
        self.wall += seconds
        await asyncio.sleep(0)


Answer = Callable[[httpx.Request, int], httpx.Response | None]
Change = Callable[[httpx.Request, httpx.Response, int], httpx.Response]


class _Proxy(httpx.AsyncBaseTransport):
    """In front of the sandbox: ``answer(request, n)`` may answer the n-th request (from 0)
    itself; else it goes through, and ``change(request, response, n)`` may alter the answer.
    ``key`` replaces the Authorization header sent on (a proxy holding the real key)."""

    def __init__(
        self,
        clock: _FakeClock | None = None,
        *,
        answer: Answer | None = None,
        change: Change | None = None,
        key: str | None = None,
    ) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.clock, self.answer, self.change, self.key = clock, answer, change, key
        self.sent_at: list[float] = []  # the client's (fake) time of each request

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        n = len(self.sent_at)
        self.sent_at.append(self.clock.monotonic() if self.clock else 0.0)
        if self.answer is not None and (mine := self.answer(request, n)) is not None:
            return mine
        if self.key is not None:
            request.headers["Authorization"] = f"Bearer {self.key}"
        response = await self.inner.handle_async_request(request)
        if self.change is None:
            return response
        await response.aread()
        return self.change(request, response, n)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _settings(shop: Shop, tmp_path: Path, **changes: Any) -> Settings:
    values: dict[str, Any] = {
        "api_key": shop.key,
        "base_url": normalize_base_url(shop.base_url),
        "cache_dir": tmp_path,
        "account": "shop",
        "mode": "test",
        **changes,
    }
    return Settings(**values)


def _get(client: Client, path: str = "payments") -> Coroutine[Any, Any, Any]:
    return client.get(path, {"limit": 1}, parse=orjson.loads)


def _run(client: Client, work: Callable[[Client], Coroutine[Any, Any, T]]) -> T:
    async def go() -> T:
        try:
            return await work(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


def _raised(client: Client, work: Callable[[Client], Coroutine[Any, Any, Any]]) -> BaseException:
    try:
        result = _run(client, work)
    except Exception as exc:
        return exc
    raise AssertionError(f"expected an error, got {result!r}")


def _429(request: httpx.Request, body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.Response(429, json=body, headers=headers, request=request)


def _with_body(response: httpx.Response, body: Any, request: httpx.Request) -> httpx.Response:
    """``response`` with another JSON body (its length and encoding headers dropped)."""
    drop = ("content-length", "content-encoding", "transfer-encoding")
    headers = [(k, v) for k, v in response.headers.items() if k.lower() not in drop]
    return httpx.Response(response.status_code, headers=headers, json=body, request=request)


# -- 1. Retry-After as an HTTP date ----------------------------------------------------------


def test_a_retry_after_date_is_waited_out(
    shop: Shop, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """RFC 9110 allows ``Retry-After: <HTTP date>``: the client waits until then (it used to
    read it as no value and retry every second, giving up before the time named)."""
    clock = _FakeClock()
    until = float(int(clock.time()) + 45)  # an HTTP date has whole seconds

    def answer(request: httpx.Request, n: int) -> httpx.Response | None:
        if clock.time() < until:
            return _429(request, RATE_LIMITED, **{"Retry-After": email.utils.formatdate(until)})
        return None

    proxy = _Proxy(clock, answer=answer)
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock)
    caplog.set_level(logging.DEBUG, logger="gwtools")
    body = _run(client, _get)
    assert isinstance(body, dict) and "data" in body
    assert len(proxy.sent_at) == 2 and client.stats.rate_limited == 1  # one wait, not 45 tries
    assert 44 <= proxy.sent_at[1] - proxy.sent_at[0] <= 45.1, clock.waits
    # A long wait is said at WARNING (without the key), not only at DEBUG.
    said = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and "waiting 4" in said[0].getMessage(), caplog.text
    assert "as the gateway asked" in said[0].getMessage()
    assert shop.key not in caplog.text and shop.key[8:-4] not in caplog.text


def test_a_429_with_only_a_reset_header_waits_until_then(shop: Shop, tmp_path: Path) -> None:
    """No Retry-After, no error.retry_after: X-RateLimit-Reset says when (it used to be 1 s)."""
    clock = _FakeClock()
    reset = int(clock.time()) + 20

    def answer(request: httpx.Request, n: int) -> httpx.Response | None:
        bare = {"error": {k: v for k, v in RATE_LIMITED["error"].items()}}
        headers = {"X-RateLimit-Limit": "100", "X-RateLimit-Remaining": "0"}
        return (
            _429(request, bare, **headers, **{"X-RateLimit-Reset": str(reset)}) if n == 0 else None
        )

    proxy = _Proxy(clock, answer=answer)
    _run(Client(_settings(shop, tmp_path), transport=proxy, clock=clock), _get)
    assert len(proxy.sent_at) == 2
    assert 19 <= proxy.sent_at[1] - proxy.sent_at[0] <= 21, clock.waits


def test_a_503_with_retry_after_is_waited_out(shop: Shop, tmp_path: Path) -> None:
    """A gateway down for maintenance answers 503 with ``Retry-After`` (RFC 9110) for as long
    as it is down. The client used to ignore it and back off for about 11 s over its 8
    attempts, then fail the sync while the gateway had said when to come back; now it waits
    as asked (within ``max_wait``), as for a 429."""
    clock = _FakeClock()
    until = clock.time() + 40
    down = {"error": {"type": "api_error", "code": "processing_error", "message": "maintenance"}}

    def answer(request: httpx.Request, n: int) -> httpx.Response | None:
        if clock.time() < until:
            return httpx.Response(503, json=down, headers={"Retry-After": "20"}, request=request)
        return None

    proxy = _Proxy(clock, answer=answer)
    body = _run(Client(_settings(shop, tmp_path), transport=proxy, clock=clock), _get)
    assert isinstance(body, dict) and "data" in body
    assert len(proxy.sent_at) == 3, clock.waits  # down, down, served: waited 20 s twice
    assert all(20 <= w <= 20.1 for w in clock.waits), clock.waits


def test_a_5xx_after_many_429s_is_still_retried(shop: Shop, tmp_path: Path) -> None:
    """429s have their own allowance (``max_429_attempts``, 30) and 5xx theirs
    (``max_attempts``, 8), but both were counted against one attempt number: after 8 429s
    (another program on the key) a single 500 was not retried at all and failed the sync."""
    clock = _FakeClock()
    failed = {"error": {"type": "api_error", "code": "processing_error", "message": "oops"}}

    def answer(request: httpx.Request, n: int) -> httpx.Response | None:
        if n < 9:
            return _429(request, RATE_LIMITED, **{"Retry-After": "1"})
        if n == 9:
            return httpx.Response(500, json=failed, request=request)
        return None

    proxy = _Proxy(clock, answer=answer)
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock)
    body = _run(client, _get)
    assert isinstance(body, dict) and "data" in body
    assert len(proxy.sent_at) == 11 and client.stats.rate_limited == 9


# -- 2. A wait too long to wait out ----------------------------------------------------------


def test_a_wait_longer_than_the_cap_is_raised_at_once(
    shop: Shop, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``Retry-After: 3600`` used to pause the sync silently for an hour (up to 30 times)."""
    clock = _FakeClock()
    proxy = _Proxy(
        clock,
        answer=lambda request, n: _429(
            request,
            {"error": {**RATE_LIMITED["error"], "retry_after": 3600}},
            **{"Retry-After": "3600", "Request-Id": "req_long"},
        ),
    )
    caplog.set_level(logging.DEBUG, logger="gwtools")
    exc = _raised(Client(_settings(shop, tmp_path), transport=proxy, clock=clock), _get)
    assert isinstance(exc, RateLimitError) and exc.http_status == 429, repr(exc)
    assert clock.waits == [] and len(proxy.sent_at) == 1  # neither waited nor retried
    text = str(exc)
    assert (
        "gateway asked to wait 3,600 s before the next request" in text
        and f"({MAX_WAIT:.0f} s)" in text
    )
    assert "What to do: sync again after" in text and "[request id req_long]" in text
    assert exc.retry_after == 3600 and exc.request_id == "req_long"
    assert exc.__context__ is None and shop.key not in text


def test_a_503_asking_for_longer_than_the_cap_is_raised_at_once(shop: Shop, tmp_path: Path) -> None:
    """A gateway down for maintenance for an hour (503, ``Retry-After: 3600``) was asked again
    8 times within about 11 s of back-off against what it said, then the sync failed with
    "the gateway failed; retry later", not saying how long. Now, as for a 429: once, and the
    error says when to sync again."""
    clock = _FakeClock()
    down = {"error": {"type": "api_error", "code": "processing_error", "message": "maintenance"}}
    proxy = _Proxy(
        clock,
        answer=lambda request, n: httpx.Response(
            503, json=down, headers={"Retry-After": "3600", "Request-Id": "req_down"},
            request=request,
        ),
    )  # fmt: skip
    exc = _raised(Client(_settings(shop, tmp_path), transport=proxy, clock=clock), _get)
    assert isinstance(exc, APIError) and exc.http_status == 503, repr(exc)
    assert clock.waits == [] and len(proxy.sent_at) == 1  # neither waited nor retried
    text = str(exc)
    assert "gateway asked to wait 3,600 s before the next request" in text
    assert "What to do: sync again after" in text and "max_wait=3600" in text
    assert "if something else shares this key" not in text  # that is for a 429
    assert exc.retry_after == 3600 and exc.request_id == "req_down"
    assert exc.code == "processing_error" and exc.__context__ is None


def test_the_cap_is_a_setting(shop: Shop, tmp_path: Path) -> None:
    clock = _FakeClock()
    proxy = _Proxy(
        clock,
        answer=lambda request, n: (
            _429(request, RATE_LIMITED, **{"Retry-After": "3600"}) if n == 0 else None
        ),
    )
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock, max_wait=7200)
    assert "data" in _run(client, _get)
    assert len(proxy.sent_at) == 2 and proxy.sent_at[1] - proxy.sent_at[0] >= 3600


def test_a_sync_told_to_wait_an_hour_stops_with_advice(shop: Shop, tmp_path: Path) -> None:
    """Through ``Gateway.sync`` (real time: nothing is waited, so nothing is slow)."""
    shop.card()
    proxy = _Proxy(answer=lambda request, n: _429(request, RATE_LIMITED, **{"Retry-After": "3600"}))
    with shop.connect(tmp_path, transport=proxy) as gw, pytest.raises(RateLimitError) as info:
        gw.sync()
    assert "asked to wait 3,600 s" in str(info.value) and len(proxy.sent_at) == 1


def test_the_last_rate_limit_error_says_how_many_attempts(shop: Shop, tmp_path: Path) -> None:
    clock = _FakeClock()
    shop.faults(force_429_rate=1.0)  # the sandbox answers 429 (Retry-After: 1) to everything
    try:
        client = Client(_settings(shop, tmp_path), clock=clock, max_attempts=2, max_429_attempts=4)
        exc = _raised(client, _get)
    finally:
        shop.clear_faults()
    assert isinstance(exc, RateLimitError), repr(exc)
    assert client.stats.requests == 4 and len(clock.waits) == 3
    assert "still answered 429 after 4 attempts over 3 s of waiting" in str(exc)
    assert "max_rps=" in str(exc) and "max_429_attempts=" in str(exc)


def test_the_last_server_error_says_how_many_attempts(shop: Shop, tmp_path: Path) -> None:
    """A 5xx that outlasts every retry said only "the gateway failed; retry later", so a
    user could not tell one failed request from a gateway failing it again and again."""
    clock = _FakeClock()
    shop.faults(error_rate=1.0)  # the sandbox answers 500 api_error to everything
    try:
        client = Client(_settings(shop, tmp_path), clock=clock, max_attempts=3)
        exc = _raised(client, _get)
    finally:
        shop.clear_faults()
    assert isinstance(exc, APIError) and exc.http_status == 500, repr(exc)
    assert client.stats.requests == 3
    text = str(exc)
    assert "The gateway still failed after 3 attempts" in text and "max_attempts=" in text
    assert exc.code == "processing_error" and exc.request_id and exc.request_id in text


# -- 4. The rate limit used up: wait for X-RateLimit-Reset ------------------------------------


@pytest.mark.parametrize(("reset_in", "waited"), [(30, 30), (3600, MAX_WAIT)])
def test_nothing_is_sent_before_the_reset_when_nothing_is_left(
    shop: Shop, tmp_path: Path, reset_in: int, waited: float
) -> None:
    """A fixed or sliding window (or another program on the key) used the limit up: the next
    request waits for ``X-RateLimit-Reset`` (at most the cap), not one token's refill (10 ms),
    which only earned 429s."""
    clock = _FakeClock()
    reset = str(int(clock.time()) + reset_in)

    def change(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        if n == 0:
            response.headers["X-RateLimit-Remaining"] = "0"
            response.headers["X-RateLimit-Reset"] = reset
        return response

    proxy = _Proxy(clock, change=change)
    client = Client(_settings(shop, tmp_path), transport=proxy, clock=clock)

    async def twice(c: Client) -> None:
        await _get(c)
        await _get(c)

    _run(client, twice)
    gap = proxy.sent_at[1] - proxy.sent_at[0]
    assert waited - 1.5 <= gap <= waited, clock.waits
    assert client.stats.rate_limited == 0


# -- 5. A deprecated Service-Version ---------------------------------------------------------


def test_a_deprecated_version_warns_once_per_gateway(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with shop.connect(tmp_path, service_version="2023-12-01") as gw:
            assert gw.sync().complete
            gw.payments(refresh=True)  # more requests, each answered with `Deprecation`
    said = [w for w in seen if "deprecated" in str(w.message)]
    assert len(said) == 1 and said[0].category is GatewayDataWarning, [str(w.message) for w in seen]
    text = str(said[0].message)
    assert "Service-Version 2023-12-01" in text and 'service_version="2024-01-01"' in text
    assert "since 2024-01-01" in text
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with shop.connect(tmp_path / "current") as gw:
            gw.sync()
    assert not [w for w in seen if "deprecated" in str(w.message)]


def test_a_deprecation_date_out_of_range_still_warns(shop: Shop, tmp_path: Path) -> None:
    """``Deprecation: @<Unix seconds>`` (RFC 9745) beyond the years Python can hold raised
    ValueError out of the request: the sync failed on a header meant as a notice. It is
    warned about, the date shown as sent."""
    clock = _FakeClock()
    value = "@99999999999999"

    def change(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        response.headers["Deprecation"] = value
        return response

    client = Client(_settings(shop, tmp_path), transport=_Proxy(clock, change=change), clock=clock)
    with pytest.warns(GatewayDataWarning, match="deprecated") as said:
        body = _run(client, _get)
    assert isinstance(body, dict) and "data" in body
    assert f"(Deprecation: {value})" in str(said[0].message)


# -- 6. Messages -----------------------------------------------------------------------------


def test_a_read_timeout_says_the_gateway_did_not_answer(shop: Shop, tmp_path: Path) -> None:
    """The gateway was reached and said nothing in time: not "could not reach … check the
    base URL", but the read timeout and how to raise it."""
    clock = _FakeClock()

    def silent(request: httpx.Request, n: int) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    client = Client(
        _settings(shop, tmp_path),
        transport=_Proxy(clock, answer=silent),
        clock=clock,
        max_attempts=2,
        timeout=7.0,
    )
    exc = _raised(client, _get)
    assert isinstance(exc, APIConnectionError), repr(exc)
    text = str(exc)
    assert "did not answer GET " in text and "within the read timeout" in text
    assert "ReadTimeout: timed out (limits: connect 7.0 s, read 7.0 s)" in text
    assert "timeout=" in text and "could not reach" not in text and "base URL" not in text
    assert exc.__context__ is None and shop.key not in text

    def refused(request: httpx.Request, n: int) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    client = Client(
        _settings(shop, tmp_path), transport=_Proxy(clock, answer=refused), clock=clock,
        max_attempts=2,
    )  # fmt: skip
    assert "could not reach the gateway" in str(_raised(client, _get))


def test_a_timeout_below_ten_seconds_bounds_the_connection_too(shop: Shop, tmp_path: Path) -> None:
    """timeout= is what one request may take: a connection that cannot be made within it
    fails then, not after the 10 s a longer timeout allows for connecting."""
    asked: list[dict[str, float]] = []

    def note(request: httpx.Request, n: int) -> httpx.Response | None:
        asked.append(request.extensions["timeout"])
        return None  # on to the sandbox

    client = Client(_settings(shop, tmp_path), transport=_Proxy(answer=note), timeout=3.0)
    _run(client, _get)
    assert asked[0] == {"connect": 3.0, "read": 3.0, "write": 3.0, "pool": 3.0}

    def unreachable(request: httpx.Request, n: int) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    clock = _FakeClock()
    client = Client(
        _settings(shop, tmp_path), transport=_Proxy(clock, answer=unreachable), clock=clock,
        max_attempts=2, timeout=3.0,
    )  # fmt: skip
    assert "(limits: connect 3.0 s, read 3.0 s)" in str(_raised(client, _get))
    # A longer timeout (a slow gateway) still gives up connecting after 10 s.
    asked.clear()
    _run(Client(_settings(shop, tmp_path), transport=_Proxy(answer=note), timeout=120), _get)
    assert asked[0]["connect"] == 10.0 and asked[0]["read"] == 120


def test_a_limit_below_the_documented_one_sets_the_pace_of_its_requests(
    shop: Shop, tmp_path: Path
) -> None:
    """A gateway announcing 40 requests/s (below the documented 100) on its payments list:
    that list's requests are paced at 39.6/s, and the pace the fan-out compares its pages
    with says so too. It said 99/s, so a variant B listing kept splitting windows (each
    costing part of a page) to reach a rate the gateway would never allow."""

    def forty(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        headers = httpx.Headers(response.headers)
        headers["X-RateLimit-Limit"], headers["X-RateLimit-Remaining"] = "40", "39"
        return httpx.Response(response.status_code, headers=headers, content=response.content)

    client = Client(_settings(shop, tmp_path), transport=_Proxy(change=forty))
    assert client.pace_of("payments") == 99.0  # nothing announced yet: under the documented 100
    _run(client, _get)
    assert client.pace_of("payments") == pytest.approx(40 * 0.99)
    # Refunds have limits of their own (30/s documented): not judged from the payments list's.
    assert client.pace_of("refunds") == 99.0


class _Broken(httpx.AsyncBaseTransport):
    """A transport failing below httpx (an OSError, not an httpx error): not retried."""

    def __init__(self) -> None:
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        raise OSError(24, "Too many open files")


def test_a_failure_that_is_not_retried_does_not_say_it_was(shop: Shop, tmp_path: Path) -> None:
    """An error from below httpx is raised after one request, but its message said "the
    request was retried with back-off before giving up"."""
    broken = _Broken()
    exc = _raised(Client(_settings(shop, tmp_path), transport=broken, clock=_FakeClock()), _get)
    assert isinstance(exc, APIConnectionError) and broken.calls == 1, repr(exc)
    assert "Too many open files" in str(exc)
    assert "retried with back-off" not in str(exc)
    assert exc.__context__ is None


def test_a_409_from_the_sandbox_gets_advice_for_its_code(shop: Shop) -> None:
    """A refund of a payment that is not paid: ``invalid_state``, no parameter to fix."""
    answer = shop.http.post("/v1/refunds", json={"payment_id": shop.open_payment()})
    exc = error_from_response(answer)
    assert type(exc) is InvalidRequestError and exc.code == "invalid_state", repr(exc)
    assert "parameter named above" not in str(exc)
    assert "state does not allow this" in str(exc) and "retrieve" in str(exc)


def test_a_refused_service_version_names_the_option_that_sets_it(
    shop: Shop, tmp_path: Path
) -> None:
    """A gateway that no longer answers the pinned version: the advice names connect()'s
    service_version= (what gwtools sends as Service-Version), not "the parameter named
    above", which no gwtools user wrote."""
    settings = _settings(shop, tmp_path, service_version="2022-06-01")  # a sunset version
    exc = _raised(Client(settings), _get)
    assert isinstance(exc, InvalidRequestError) and exc.param == "Service-Version", repr(exc)
    said = str(exc)
    assert "parameter named above" not in said, said
    assert 'service_version="2024-01-01"' in said and "gwtools.connect(" in said, said
    assert "2022-06-01" in said, said


# -- 3. A record that echoes the key goes to the rejects file masked -------------------------


@pytest.mark.parametrize("odd", [False, True], ids=["key-shaped", "any-key"])
def test_a_rejected_record_echoing_the_key_is_written_masked(
    shop: Shop, tmp_path: Path, odd: bool
) -> None:
    """An echoing proxy puts the request's Authorization header into a record whose id is
    damaged, so it is rejected: neither the reason (which quotes the id) nor the record in
    ``_rejects.jsonl`` may hold the key. ``any-key``: a key not shaped like the gateway's
    (``-`` in it), which only the client's own key can mask; the proxy sends the real one on."""
    shop.card()
    key = f"sk_test_odd-{shop.key[8:]}" if odd else shop.key

    def change(request: httpx.Request, response: httpx.Response, n: int) -> httpx.Response:
        body = orjson.loads(response.content)
        if request.url.path != "/v1/payments" or not body.get("data"):
            return response
        said = sent_auth[-1]
        echo = {**body["data"][0], "id": f"{body['data'][0]['id']}#{said}", "description": said}
        body["data"].insert(0, echo)  # first: the last one is the next page's cursor
        return _with_body(response, body, request)

    sent_auth: list[str] = []

    class _Echo(_Proxy):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent_auth.append(request.headers["Authorization"])
            return await super().handle_async_request(request)

    proxy = _Echo(change=change, key=shop.key if odd else None)
    with (
        gateway_connect(key, shop, tmp_path, proxy) as gw,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("ignore")
        result = gw.sync(["payments"])
        rejects = gw._dataset("payments").rejects()
    assert result.rejected >= 1 and len(rejects) >= 1
    assert all(key in said for said in sent_auth)  # the key really was echoed
    text = (tmp_path / "shop" / "test" / "payments" / "_rejects.jsonl").read_text()
    assert mask_key(key) in text
    for p in tmp_path.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            for secret in (key, key[8:-4], shop.key[8:-4]):
                assert secret.encode() not in data, p


def gateway_connect(key: str, shop: Shop, tmp_path: Path, proxy: _Proxy) -> Any:
    import gwtools._gateway as gateway

    return gateway.connect(key, shop.base_url, cache_dir=tmp_path, account="shop", transport=proxy)
