"""The HTTP client: authentication, a pinned ``Service-Version``, pacing and retries.

One :class:`Client` per :class:`~gwtools.Gateway`, wrapping one ``httpx.AsyncClient`` (an
HTTP/1.1 keep-alive pool). Every request:

- waits for a token of a leaky bucket (aiolimiter) that runs just under the gateway's
  documented 100 requests/s, starting with a small burst, and follows what the
  ``X-RateLimit-Limit`` header announces (down at once, back up once a lower limit has not
  been announced for :data:`LIMIT_MEMORY` seconds); when ``X-RateLimit-Remaining`` runs
  out, every request pauses until ``X-RateLimit-Reset``, and when a 429 arrives, for as long
  as it asks;
- is retried by tenacity with jittered exponential back-off on 5xx (after ``Retry-After``
  instead, when a 5xx gives one within ``max_wait``; a longer one is raised at once, as for a
  429), timeouts, dropped connections and bodies
  that are not the expected JSON; a 429 waits ``Retry-After`` (seconds
  or an HTTP date), else ``error.retry_after``, else until ``X-RateLimit-Reset``, else 1 s (a
  wait of 0 counts as none), and is retried; a wait longer than ``max_wait`` (60 s;
  ``connect(max_wait=...)``) is not waited out but raised as a
  :class:`~gwtools.RateLimitError` saying so, and waits over 5 s are logged at WARNING;
  other 4xx raise at once (:func:`~gwtools._errors.error_from_response`), and so do
  redirects (3xx), which are never followed: the ``Authorization`` header must not be sent
  on to another host.

A response with a ``Deprecation`` header (the pinned ``Service-Version`` is deprecated) warns
once per client (:class:`~gwtools.GatewayDataWarning`). :class:`Clock` is where the client reads
the time and waits: tests replace it to see the waits without spending them.

Nothing it raises leads back to the key: an httpx error (whose request carries the
``Authorization`` header) is never chained; the GatewayError raised instead keeps its class
name and its message, with the key masked (:func:`~gwtools._errors.summarize`). Nor does
anything it returns: a body echoing the key (a proxy's, say) has it masked before parsing, so
it never reaches the cache. A base URL holding a key is refused: it would be in every request
line and in httpx's log.

:class:`RequestStats` counts requests, 429s and retries for the :class:`~gwtools.SyncResult`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import math
import random
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

import httpx
from aiolimiter import AsyncLimiter
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    wait_exponential_jitter,
)

from gwtools._config import (
    SERVICE_VERSIONS,
    Settings,
    check_key_text,
    check_url_holds_no_key,
    shown_base_url,
)
from gwtools._errors import (
    APIConnectionError,
    APIError,
    GatewayError,
    MalformedBodyError,
    RateLimitError,
    error_from_response,
    looks_like_key,
    redact,
    safe_url,
    seconds_until_reset,
    summarize,
)
from gwtools.http._wire import is_list_path
from gwtools.sync._result import GatewayDataWarning

__all__ = ["Client", "Clock", "MalformedBodyError", "RequestStats"]

log = logging.getLogger("gwtools")
T = TypeVar("T")


class _MaskKeys(logging.Filter):
    """Masks anything shaped like an API key in a log record (only records of the loggers it
    is added to, and only when they are emitted: with DEBUG off it is never called)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if looks_like_key(message):
            record.msg, record.args = redact(message), None
        return True


#: httpcore logs every response's headers at DEBUG, and httpx each request's URL at INFO: a
#: gateway echoing the Authorization header in a response header (AWS API Gateway's
#: x-amzn-Remapped-Authorization, a debugging proxy) would put the key in the log. A filter
#: acts on the records of the very logger it is added to, hence each of them here.
_HTTP_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)
_MASK_KEYS = _MaskKeys()
for _name in _HTTP_LOGGERS:
    logging.getLogger(_name).addFilter(_MASK_KEYS)

#: The documented limit (requests per second per key) and what we aim for: a little under
#: it, so timing jitter between client and server never empties the server's bucket.
DOCUMENTED_RPS = 100.0
DEFAULT_MAX_RPS = 99.0
#: Share of the announced limit (X-RateLimit-Limit) to run at.
RATE_SHARE = 0.99
DEFAULT_BURST = 10
DEFAULT_CONCURRENCY = 16
#: The longest one wait the gateway asks for (Retry-After, X-RateLimit-Reset) that gwtools
#: waits out; asked for longer, it raises RateLimitError instead of hanging a sync.
MAX_WAIT = 60.0
#: The longest wait for a connection to be made (seconds), whatever the request timeout.
CONNECT_TIMEOUT = 10.0
#: Waits longer than this are logged at WARNING (shorter ones at DEBUG).
LOUD_WAIT = 5.0
#: How long (seconds) a lower X-RateLimit-Limit an endpoint announced is kept after it was last
#: announced: past it, a higher one the endpoint announces is followed (a throttle was lifted).
LIMIT_MEMORY = 60.0


class Clock:
    """Where the client reads the time and waits. Tests pass one whose ``sleep`` records the
    wait and moves its own time on, so nothing depends on the wall clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        """Unix seconds (for ``Retry-After`` dates and ``X-RateLimit-Reset``)."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _user_agent() -> str:
    try:
        v = version("gwtools")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        v = "0"
    return f"gwtools/{v} httpx/{httpx.__version__}"


@dataclass
class RequestStats:
    """What the client did: requests sent, 429s received, retries made."""

    requests: int = 0
    rate_limited: int = 0
    retries: int = 0

    def snapshot(self) -> RequestStats:
        return RequestStats(self.requests, self.rate_limited, self.retries)

    def __sub__(self, other: RequestStats) -> RequestStats:
        return RequestStats(
            self.requests - other.requests,
            self.rate_limited - other.rate_limited,
            self.retries - other.retries,
        )


class _Retry(Exception):
    """Internal: this attempt failed in a way worth retrying; ``final`` is raised if none is left."""

    def __init__(self, final: GatewayError, *, retry_after: float | None = None) -> None:
        super().__init__(final.message)
        self.final = final
        self.retry_after = retry_after


class _Pacer:
    """Leaky buckets (aiolimiter) sized from the gateway's rate-limit headers, and a shared pause.

    Before any answer, requests go at ``max_rps`` after a small burst. The first answer's
    ``X-RateLimit-Limit``/``-Remaining`` then size the bucket: a rate just under the limit and
    a burst of what the gateway still allows, minus what may be in flight, so a sync starts
    at full speed without ever emptying the gateway's bucket. An endpoint that reports a
    lower limit than the rest (refunds: 30/s) gets a bucket of its own, on top of the shared one.
    That limit is the lowest the endpoint announced in the last :data:`LIMIT_MEMORY` seconds:
    a throttle the gateway lifts is followed back up, while an answer announcing the shared
    limit now and then (the gateway reports whichever bucket has fewest requests left) does
    not make an endpoint's own limit flip back and forth. An answer saying nothing is left
    (``X-RateLimit-Remaining: 0``) pauses every request until ``X-RateLimit-Reset`` (at most
    ``max_wait``), so a gateway counting fixed windows is not sent requests it can only
    refuse.
    """

    def __init__(
        self,
        max_rps: float | None,
        burst: int,
        in_flight: int,
        *,
        clock: Clock | None = None,
        max_wait: float = MAX_WAIT,
    ) -> None:
        self.max_rps = max_rps
        self.burst = max(1, burst)
        self.margin = in_flight + 5
        self.limits: dict[str, float] = {}  # bucket -> the limit it is paced under
        # group -> (monotonic time, limit) announced, the limits rising front to back: the
        # front is the lowest announced in the last LIMIT_MEMORY seconds (a sliding minimum).
        self.announced: dict[str, deque[tuple[float, float]]] = {}
        self.limiters: dict[str, AsyncLimiter] = {}
        self.clock = clock or Clock()
        self.max_wait = max_wait
        self.pause_until = 0.0

    def _rate(self, bucket: str) -> float:
        assert self.max_rps is not None
        return min(self.max_rps, self.limits.get(bucket, DOCUMENTED_RPS) * RATE_SHARE)

    def rate_of(self, group: str) -> float:
        """What ``group``'s requests are paced at: the shared bucket's rate, or their own
        bucket's when the gateway announced a lower limit for them (see :meth:`acquire`)."""
        rate = self._rate("*")
        return min(rate, self._rate(group)) if group in self.limits else rate

    def _limiter(self, bucket: str) -> AsyncLimiter:
        limiter = self.limiters.get(bucket)
        if limiter is None:
            limiter = self._size(bucket, self.burst)
        return limiter

    def _size(self, bucket: str, capacity: float) -> AsyncLimiter:
        capacity = max(2.0, capacity)
        limiter = self.limiters[bucket] = AsyncLimiter(capacity, capacity / self._rate(bucket))
        return limiter

    async def acquire(self, group: str) -> None:
        # Before the tokens, so that requests after a pause are paced as they take them...
        await self._paused()
        if self.max_rps is not None:
            await self._limiter("*").acquire()
            if group in self.limits:
                await self._limiter(group).acquire()
        # ...and after, right before sending: a pause that began while this request waited
        # for its turn (an answer saying nothing is left, a 429) holds it too.
        await self._paused()

    async def _paused(self) -> None:
        """Wait for the end of a pause, if one is on."""
        while (delay := self.pause_until - self.clock.monotonic()) > 0:
            await self.clock.sleep(delay)

    def observe(self, group: str, headers: Mapping[str, str]) -> None:
        if self.max_rps is None:  # pacing is off: nothing to size
            return
        # Each header is read on its own: a gateway may send what is left without a limit
        # (or a limit of 0), and that still says when to pause.
        limit = _header_number(headers, "X-RateLimit-Limit")
        remaining = _header_number(headers, "X-RateLimit-Remaining")
        if limit is not None and limit > 0:
            self._follow(group, limit, limit if remaining is None else remaining)
        else:
            limit = None
        if remaining is not None and remaining < 1:
            # Used up (someone else is using this key too, or a fixed window is full): nothing
            # more before X-RateLimit-Reset (at most max_wait; a 429 says if that was too
            # little), or without one for one token's worth of refill.
            reset = seconds_until_reset(headers, self.clock.time())
            token = 1.0 / (limit or self._rate(group))
            wait = max(token, min(reset or 0.0, self.max_wait))
            if self.pause(wait) and wait > LOUD_WAIT:
                if reset is None:
                    until = "one request's worth of the limit (no X-RateLimit-Reset)"
                elif reset <= self.max_wait:
                    until = "until X-RateLimit-Reset"
                else:
                    until = (
                        f"(max_wait) although X-RateLimit-Reset is {reset:,.0f} s away: the "
                        "next request may be refused (connect(max_wait=...) waits longer)"
                    )
                log.warning(
                    "the gateway's rate limit is used up (X-RateLimit-Remaining: 0): pausing "
                    "requests for %.0f s %s",
                    wait,
                    until,
                )

    def _follow(self, group: str, limit: float, remaining: float) -> None:
        """Size the buckets from ``limit``, announced on an answer to ``group``, and
        ``remaining``."""
        own = self._lowest_announced(group, limit)
        # A limit below the shared one belongs to this endpoint's own bucket.
        if own < self.limits.get("*", DOCUMENTED_RPS):
            self._set_limit(group, own, remaining)
        else:
            if self.limits.pop(group, None) is not None:
                # Its own lower limit was not announced for LIMIT_MEMORY s: lifted.
                del self.limiters[group]
            if "*" not in self.limits:
                self._set_limit("*", limit, remaining)

    def _lowest_announced(self, group: str, limit: float) -> float:
        """The lowest limit ``group``'s answers announced in the last LIMIT_MEMORY seconds,
        ``limit`` (announced now) included."""
        now = self.clock.monotonic()
        seen = self.announced.setdefault(group, deque())
        while seen and seen[-1][1] >= limit:
            seen.pop()
        seen.append((now, limit))
        while now - seen[0][0] > LIMIT_MEMORY:
            seen.popleft()
        return seen[0][1]

    def _set_limit(self, bucket: str, limit: float, remaining: float) -> None:
        """Pace ``bucket`` under ``limit``. A new bucket's burst is what the gateway still
        allows minus what may be in flight; a resized one keeps its burst (at most ``limit``)."""
        if self.limits.get(bucket) == limit:
            return
        first = bucket not in self.limits
        self.limits[bucket] = limit
        old = self.limiters.get(bucket)
        capacity = (
            min(limit, remaining) - self.margin if first else (old.max_rate if old else self.burst)
        )
        self._size(bucket, min(capacity, limit))

    def pause(self, seconds: float) -> bool:
        """Send nothing for ``seconds``; whether this starts a pause (none was running)."""
        now = self.clock.monotonic()
        started = self.pause_until <= now
        self.pause_until = max(self.pause_until, now + seconds)
        return started


class Client:
    """Paced, retrying GETs against one gateway; use inside one event loop.

    ``max_rps=None`` turns pacing off (for servers without limits); ``transport`` lets tests
    pass ``httpx.ASGITransport(app)``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        max_rps: float | None = DEFAULT_MAX_RPS,
        burst: int = DEFAULT_BURST,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = 30.0,
        max_attempts: int = 8,
        max_429_attempts: int = 30,
        max_wait: float = MAX_WAIT,
        clock: Clock | None = None,
    ) -> None:
        # First: a traceback's locals show this client by repr, also when it is refused.
        self.settings = settings
        # A key httpx cannot put in a header would fail in httpx with the whole key in the
        # error (UnicodeEncodeError's repr); refuse it here with the masked key instead. A
        # base URL holding a key would be in every request line and httpx's log: refused too
        # (connect() refuses both; Settings made by hand are checked here).
        check_key_text(settings.api_key)
        check_url_holds_no_key(settings.base_url, settings.api_key)
        self._key_bytes = settings.api_key.encode("ascii")
        self.stats = RequestStats()
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.max_429_attempts = max_429_attempts
        self.max_wait = max_wait
        self._clock = clock or Clock()
        self._deprecation_warned = False
        self._pacer = _Pacer(max_rps, burst, concurrency, clock=self._clock, max_wait=max_wait)
        self._slots = asyncio.Semaphore(concurrency)
        self._backoff = wait_exponential_jitter(multiplier=0.1, max=5.0, jitter=0.2)
        self._http = httpx.AsyncClient(
            base_url=settings.base_url.rstrip("/") + "/",
            headers={
                "Authorization": f"Bearer {settings.api_key}",
                "Service-Version": settings.service_version,
                "User-Agent": _user_agent(),
                "Accept": "application/json",
            },
            transport=transport,
            # timeout= bounds a whole request, its connection included; a longer one (a slow
            # gateway) still gives up connecting after CONNECT_TIMEOUT.
            timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
            follow_redirects=False,
        )

    @property
    def pace(self) -> float | None:
        """The requests per second this client paces at now (``None``: pacing is off); the
        gateway's rate limit headers can lower it. One endpoint's may be lower still:
        :meth:`pace_of`."""
        return None if self._pacer.max_rps is None else self._pacer._rate("*")

    @property
    def clock(self) -> Clock:
        """Where this client reads the time and waits (what else times its requests reads it
        too, so a test's clock governs all of it)."""
        return self._clock

    def pace_of(self, group: str) -> float | None:
        """The requests per second the requests of ``group`` (the first part of their path:
        ``"payments"``) are paced at now; ``None``: pacing is off. Lower than :attr:`pace`
        while the gateway announces a lower limit on them (a limit below the shared one
        belongs to the endpoint that announced it, until it has not been announced for
        :data:`LIMIT_MEMORY` seconds)."""
        return None if self._pacer.max_rps is None else self._pacer.rate_of(group)

    def __repr__(self) -> str:
        s = self.settings
        return f"Client({shown_base_url(s.base_url, s.api_key)!r}, key={s.masked_key!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def get(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        parse: Callable[[bytes], T],
    ) -> T:
        """GET ``path`` (relative to ``/v1``) and return ``parse(body)``.

        ``parse`` raising ``ValueError`` means the body is malformed: the request is retried,
        then :class:`MalformedBodyError` is raised.
        """
        group = path.strip("/").split("/", 1)[0]
        # Failed attempts of each kind (429s, other failures) of this request: each kind has
        # its own allowance, so a 5xx after many 429s is still retried, and the reverse.
        failures = {True: 0, False: 0}

        def stop(state: RetryCallState) -> bool:
            exc = state.outcome.exception() if state.outcome else None
            rate_limited = isinstance(exc, _Retry) and isinstance(exc.final, RateLimitError)
            failures[rate_limited] += 1
            limit = self.max_429_attempts if rate_limited else self.max_attempts
            return failures[rate_limited] >= limit

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(_Retry),
            wait=self._wait,
            stop=stop,
            before_sleep=self._before_sleep,
            sleep=self._clock.sleep,
            reraise=True,
        )
        attempts = 0
        try:
            async for attempt in retrying:
                attempts = attempt.retry_state.attempt_number
                with attempt:
                    return await self._once(group, path.lstrip("/"), params, parse)
        except _Retry as exc:
            final = exc.final
        else:  # pragma: no cover
            raise AssertionError("unreachable")
        if isinstance(final, RateLimitError):
            waited = float(retrying.statistics.get("idle_for", 0.0))
            final = _rewritten(
                final,
                f"The gateway still answered 429 after {attempts} attempts over {waited:.0f} s "
                "of waiting as it asked.",
                "another program may be using this key's rate limit: sync again in a minute, "
                "or lower max_rps= in gwtools.connect() (max_429_attempts= allows more tries)",
            )
        elif (final.http_status or 0) >= 500 and attempts > 1:
            waited = float(retrying.statistics.get("idle_for", 0.0))
            final = _rewritten(
                final,
                f"The gateway still failed after {attempts} attempts over {waited:.0f} s.",
                "the gateway is failing; sync again later (what is cached so far is kept), "
                "and report the request id if it persists (max_attempts= in "
                "gwtools.connect() allows more tries)",
            )
        # Raised outside the handler, so the error has no __context__ to lead anywhere.
        raise final

    async def _once(
        self,
        group: str,
        path: str,
        params: Mapping[str, Any] | None,
        parse: Callable[[bytes], T],
    ) -> T:
        async with self._slots:
            await self._pacer.acquire(group)
            self.stats.requests += 1
            failure: tuple[GatewayError, bool] | None = None  # (error, worth retrying)
            try:
                response = await self._http.get(path, params=params)
            except httpx.RequestError as exc:
                # Not raised in here: the httpx error (and its request, whose headers hold the
                # key) would become the new error's __context__. Only a summary is kept.
                failure = (self._request_failed(exc, path), True)
            except Exception as exc:
                # Anything else from below httpx (an ExceptionGroup of connection attempts, an
                # OSError): no point retrying, but still a GatewayError without a chain.
                failure = (self._request_failed(exc, path, retried=False), False)
        if failure is not None:
            error, retry = failure
            raise _Retry(error) if retry else error
        self._pacer.observe(group, response.headers)
        if "Deprecation" in response.headers and not self._deprecation_warned:
            self._deprecation_warned = True
            self._warn_deprecated(response)
        status = response.status_code
        if status == 429:
            self.stats.rate_limited += 1
            error = error_from_response(response, now=self._clock.time())
            wait = error.retry_after if error.retry_after is not None else 1.0
            if wait == 0 and self.max_wait > 0:
                # Rate limited yet told to retry now (a sub-second wait rounded down, a date
                # already past): at once it would be refused again, spending every try in a
                # second. As with no wait given: until the reset, else 1 s (within max_wait).
                reset = seconds_until_reset(response.headers, self._clock.time())
                wait = min(reset or 1.0, self.max_wait)
            if wait > self.max_wait:
                shared = "; if something else shares this key, let it slow down"
                raise self._too_long(error, wait, shared)
            self._pacer.pause(wait)
            raise _Retry(error, retry_after=wait)
        if status >= 500:
            # A gateway down for a while (503) may say when to come back (RFC 9110): waited
            # out as asked when within max_wait; longer, asking again meanwhile only goes
            # against what it said (and fails the same), so raised at once as for a 429.
            error = error_from_response(response, now=self._clock.time())
            asked = error.retry_after
            if asked is not None and asked > self.max_wait:
                raise self._too_long(error, asked)
            raise _Retry(error, retry_after=asked or None)
        if not 200 <= status < 300:
            # A redirect too: not followed (the key must not go to another host) nor retried.
            raise error_from_response(response, listing=is_list_path(path))
        body = response.content
        if self._key_bytes in body:
            # A gateway (or a proxy in between) that echoes the request's Authorization header
            # into a record would put the key in the cache, its rejects, exports and reports:
            # nothing past the client sees it (the key is ASCII, so masking it inside a JSON
            # string keeps the JSON valid).
            body = body.replace(self._key_bytes, self.settings.masked_key.encode())
        try:
            return parse(body)
        except ValueError as exc:
            failed = self._malformed(response, exc)
        raise _Retry(failed)

    def _too_long(self, error: GatewayError, wait: float, more: str = "") -> GatewayError:
        """``error``, whose answer asked to wait ``wait`` s, longer than :attr:`max_wait`: not
        waited out (a sync would hang for it) nor retried, but raised saying when to come back;
        ``more`` ends its advice."""
        # A wait of 1e300 s (a malformed header) would be a 300-digit number in full.
        shown = f"{wait:,.0f}" if wait < 1e12 else f"{wait:.3g}"
        happened = (
            f"The gateway asked to wait {shown} s before the next request, longer than "
            f"gwtools waits ({self.max_wait:,g} s); nothing more was sent."
        )
        try:
            until = dt.datetime.fromtimestamp(
                math.ceil((self._clock.time() + wait) / 60) * 60, dt.UTC
            )
        except (ValueError, OverflowError, OSError):
            # Past year 9999: no wait anyone means (an X-RateLimit-Reset in milliseconds, say).
            return _rewritten(
                error,
                happened,
                "sync again later (what is cached so far is kept); a wait that long is no "
                "date: the gateway's Retry-After or X-RateLimit-Reset is likely malformed "
                f"(X-RateLimit-Reset is Unix seconds, not milliseconds){more}",
            )
        return _rewritten(
            error,
            happened,
            f"sync again after {until:%Y-%m-%d %H:%M} UTC (what is cached so far is kept), or "
            f"let gwtools wait that long with gwtools.connect(..., max_wait={math.ceil(wait)})"
            f"{more}",
        )

    def _request_failed(self, exc: Exception, path: str, *, retried: bool = True) -> GatewayError:
        """The GatewayError for a request that got no usable answer (a summary, no chain);
        ``retried``: whether such a failure is retried (the message says so)."""
        key = self.settings.api_key
        tried = (
            "the request was retried with back-off before giving up"
            if retried
            else "this failure is not retried"
        )
        url = redact(safe_url(self._http.base_url.join(path)), key)
        if isinstance(exc, httpx.ReadTimeout):
            limits = self._http.timeout
            return APIConnectionError(
                f"the gateway did not answer GET {url} within the read timeout: "
                f"{summarize(exc, key)} (limits: connect {limits.connect} s, read {limits.read} "
                "s); the connection was made, so the address is right. What to do: retry "
                "later; if the gateway is just slow, raise the timeout, e.g. "
                "gwtools.connect(..., timeout=120) (the request was retried with back-off "
                "before giving up).",
                url=url,
            )
        if not isinstance(exc, httpx.RequestError) or isinstance(exc, httpx.TransportError):
            waited = ""
            if isinstance(exc, httpx.TimeoutException):
                limits = self._http.timeout
                waited = f" (limits: connect {limits.connect} s, read {limits.read} s)"
            return APIConnectionError(
                f"could not reach the gateway at GET {url}: {summarize(exc, key)}{waited}. What "
                f"to do: check the base URL and the network; {tried}.",
                url=url,
            )
        # Decoding errors, redirect loops: the gateway answered, but not usably.
        return APIError(
            f"the answer to GET {url} could not be read: {summarize(exc, key)}. What to do: "
            "retry later; if it persists, the gateway or a proxy in between is broken.",
            url=url,
        )

    def _malformed(self, response: httpx.Response, exc: ValueError) -> MalformedBodyError:
        """A 2xx whose body ``parse`` refused; body and parser message have the key masked
        (a proxy that echoes requests would send the Authorization header back)."""
        key = self.settings.api_key
        url = redact(safe_url(response.request.url), key)
        # Redact before cutting, so a key that straddles the cut is still masked whole.
        head = response.content[: 200 + len(key)].decode("utf-8", errors="replace")
        snippet = redact(head, key)[:200]
        return MalformedBodyError(
            f"{response.status_code} from GET {url} is not the JSON the gateway should answer "
            f"({redact(str(exc), key)}); body starts {snippet[:80]!r}. What to do: retry "
            "later; if it persists, the gateway or a proxy in between is broken.",
            url=url,
            snippet=snippet,
        )

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retry) and exc.retry_after is not None:
            return exc.retry_after + random.uniform(0, 0.05)
        return float(self._backoff(state))

    def _before_sleep(self, state: RetryCallState) -> None:
        self.stats.retries += 1
        exc = state.outcome.exception() if state.outcome else None
        if not isinstance(exc, _Retry):  # pragma: no cover - only _Retry is retried
            return
        sleep = state.next_action.sleep if state.next_action else 0.0
        if sleep > LOUD_WAIT:
            # Its URL is shown without query string and with any key masked.
            log.warning(
                "%s from GET %s: waiting %.0f s%s, then trying again (attempt %d)",
                exc.final.http_status or type(exc.final).__name__,
                exc.final.url,
                sleep,
                " as the gateway asked" if exc.retry_after is not None else "",
                state.attempt_number + 1,
            )
        else:
            log.debug("retrying after: %s", exc.final.message)

    def _warn_deprecated(self, response: httpx.Response) -> None:
        """The gateway says the pinned Service-Version is deprecated: say so, and what to use."""
        used = self.settings.service_version
        raw = redact(response.headers.get("Deprecation", ""), self.settings.api_key)[:80]
        since = ""
        if raw.startswith("@") and raw[1:].isdigit():  # RFC 9745: @<Unix seconds>
            # A date Python cannot hold is shown only as sent: a notice must not fail a sync.
            with contextlib.suppress(ValueError, OverflowError, OSError):
                since = f" since {dt.datetime.fromtimestamp(int(raw[1:]), dt.UTC):%Y-%m-%d}"
        sunset = response.headers.get("Sunset")
        ends = (
            f"; it stops answering it on {redact(sunset, self.settings.api_key)[:80]}"
            if sunset
            else ""
        )
        current = SERVICE_VERSIONS[0]
        fix = (
            f'use service_version="{current}" in gwtools.connect() (the current version)'
            if used != current
            else "check the gateway's changelog for the version to move to"
        )
        warnings.warn(
            f"the gateway says Service-Version {used}, which gwtools pins on every request, is "
            f"deprecated{since} (Deprecation: {raw}){ends}: it may stop answering it. {fix}.",
            GatewayDataWarning,
            stacklevel=2,
        )


def _header_number(headers: Mapping[str, str], name: str) -> float | None:
    """The finite number in header ``name``; ``None`` when it is missing or is none (a
    ``nan`` taken as a limit would stop every comparison with it from holding)."""
    try:
        value = float(headers[name])
    except (KeyError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _rewritten(error: GatewayError, happened: str, advice: str) -> GatewayError:
    """``error`` (a 429's or a 5xx's) with ``happened`` added to what it says and ``advice``
    as what to do."""
    said = error.message.partition(" What to do: ")[0]
    return type(error)(
        f"{said} {happened} What to do: {advice}.",
        type=error.type,
        code=error.code,
        param=error.param,
        http_status=error.http_status,
        request_id=error.request_id,
        decline_code=error.decline_code,
        url=error.url,
        retry_after=error.retry_after,
    )
