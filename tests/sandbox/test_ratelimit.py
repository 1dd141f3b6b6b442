"""Rate limits: token buckets per key, headers on every response, 429 with retry_after."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gwtools.sandbox import Sandbox, create_app
from tests.sandbox.conftest import LOOPBACK, Payer, error_of

HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


@pytest.fixture
def limits(sandbox: Sandbox) -> Iterator[Any]:
    """Set the server's figures for one test; the spec's figures come back afterwards."""
    url = f"{sandbox.base_url}/_sandbox/rate_limits"

    def put(**figures: Any) -> dict[str, Any]:
        r = LOOPBACK.put(url, json=figures)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    yield put
    put(enabled=True, all=100, create=50, refunds=30)


def test_headers_on_every_response(payer: Payer) -> None:
    calls = [
        lambda: payer.create(),
        lambda: payer.http.get("/v1/payments"),
        lambda: payer.http.get("/v1/payments/pay_x"),
        lambda: payer.http.get("/v1/payments", params={"limit": 0}),
        lambda: payer.http.get("/v1/payments", headers={"Authorization": "Bearer sk_test_wrong"}),
        lambda: payer.http.post("/v1/refunds", json={}),
    ]
    responses = []
    for call in calls:
        # The server reads the same wall clock between these two readings, so the reset (when
        # the bucket is full again: at most one second on) lies between them whatever the load.
        before = time.time()
        r = call()
        after = time.time()
        for name in HEADERS:
            assert r.headers[name].isdigit(), (r.status_code, name)
        assert math.floor(before) <= int(r.headers["x-ratelimit-reset"]) <= math.ceil(after) + 1
        responses.append(r)
    assert responses[0].status_code == 201
    assert responses[0].headers["x-ratelimit-limit"] == "50"  # creation: its 50/s bucket
    assert responses[1].headers["x-ratelimit-limit"] == "100"
    assert responses[5].headers["x-ratelimit-limit"] == "30"


class ManualTime:
    """The rate limiter's time, moved only by the test (both its monotonic and wall clocks)."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now


@pytest.fixture(scope="module", params=["A", "B"])
def _still_sandbox(request: pytest.FixtureRequest) -> Iterator[tuple[Sandbox, ManualTime]]:
    clock = ManualTime()
    with Sandbox(request.param, now=datetime(2026, 3, 2, 9, tzinfo=UTC)) as sb:
        sb.app.state.limiter.clock = sb.app.state.limiter.wall = clock
        yield sb, clock


@pytest.fixture
def still(_still_sandbox: tuple[Sandbox, ManualTime]) -> Iterator[tuple[Payer, ManualTime]]:
    """A private sandbox whose rate limits run on :class:`ManualTime`: no token comes back
    unless the test moves time, however slowly the machine runs. Each test sets its figures
    (which also refills the buckets)."""
    sb, clock = _still_sandbox
    with httpx.Client(base_url=sb.base_url, verify=False, timeout=10, headers=sb.headers()) as c:
        yield Payer(sb, c), clock
    LOOPBACK.put(
        f"{sb.base_url}/_sandbox/rate_limits", json={"all": 100, "create": 50, "refunds": 30}
    )


def test_429_with_retry_after(still: tuple[Payer, ManualTime]) -> None:
    payer, clock = still
    assert payer.http.put("/_sandbox/rate_limits", json={"create": 3}).status_code == 200
    assert [payer.create().status_code for _ in range(3)] == [201] * 3
    r = payer.create()
    assert r.status_code == 429
    err = error_of(r)
    assert (err["type"], err["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    assert err["retry_after"] == 1 and r.headers["retry-after"] == "1"
    assert r.headers["x-ratelimit-remaining"] == "0" and r.headers["x-ratelimit-limit"] == "3"
    # empty: full again in one second (3 tokens at 3 per second)
    assert int(r.headers["x-ratelimit-reset"]) == clock.now + 1
    # other endpoints still have room in the all-endpoints bucket
    assert payer.http.get("/v1/payments").status_code == 200
    clock.now += 0.3  # 0.9 tokens: not yet one
    assert payer.create().status_code == 429
    clock.now += 0.04  # 1.02 tokens
    assert payer.create().status_code == 201
    assert payer.create().status_code == 429


def test_buckets_are_per_key(still: tuple[Payer, ManualTime]) -> None:
    payer, _ = still
    payer.http.put("/_sandbox/rate_limits", json={"all": 3}).raise_for_status()
    assert [payer.http.get("/v1/payments").status_code for _ in range(4)] == [200] * 3 + [429]
    other = payer.http.post("/_sandbox/accounts").json()
    r = payer.http.get("/v1/payments", headers={"Authorization": f"Bearer {other['secret_key']}"})
    assert r.status_code == 200


def test_refunds_bucket(still: tuple[Payer, ManualTime]) -> None:
    payer, _ = still
    payer.http.put("/_sandbox/rate_limits", json={"refunds": 2}).raise_for_status()
    codes = [payer.http.get("/v1/refunds").status_code for _ in range(3)]
    assert codes == [200, 200, 429]
    assert payer.http.get("/v1/payments").status_code == 200


def test_bucket_refills_continuously_up_to_its_size(still: tuple[Payer, ManualTime]) -> None:
    payer, clock = still
    payer.http.put("/_sandbox/rate_limits", json={"all": 10}).raise_for_status()
    remaining = [int(payer.http.get("/v1/payments").headers["x-ratelimit-remaining"])]
    assert remaining == [9]
    clock.now += 60  # a minute idle: full again, never more than one second's worth
    seen = [payer.http.get("/v1/payments") for _ in range(11)]
    assert [r.status_code for r in seen] == [200] * 10 + [429]
    assert [int(r.headers["x-ratelimit-remaining"]) for r in seen[:10]] == list(range(9, -1, -1))
    clock.now += 0.5
    assert payer.http.get("/v1/payments").headers["x-ratelimit-remaining"] == "4"


def test_headers_describe_the_bucket_when_the_response_leaves() -> None:
    """Time spent inside the sandbox (here a 0.3 s injected latency, during which the test
    moves the limiter's time 7 s on) is not left out of X-RateLimit-Reset/-Remaining."""
    app = create_app("B", now=datetime(2026, 3, 2, 9, tzinfo=UTC))
    clock = ManualTime()
    app.state.limiter.clock = app.state.limiter.wall = clock
    auth = {"Authorization": f"Bearer {app.state.gateway.default_account['secret_key']}"}
    start = clock.now

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as c:
            (await c.put("/_sandbox/rate_limits", json={"all": 10})).raise_for_status()
            (await c.put("/_sandbox/faults", json={"latency_ms": 300})).raise_for_status()
            reads = clock.reads
            request = asyncio.create_task(c.get("/v1/payments", headers=auth))
            # The limiter admits the request (reads the clock), then the latency holds it: one
            # event loop runs both, so this turn comes before the 0.3 s timer's, however late.
            for _ in range(100_000):
                if clock.reads != reads:
                    break
                await asyncio.sleep(0)
            else:
                raise AssertionError("the rate limiter never read its clock")
            clock.now += 7
            return await request

    r = asyncio.run(main())
    assert r.status_code == 200
    assert r.headers["x-ratelimit-remaining"] == "10"  # refilled during the 7 s
    assert int(r.headers["x-ratelimit-reset"]) == start + 7


def test_disabled_limits(payer: Payer, limits: Any) -> None:
    assert limits(enabled=False, all=2)["enabled"] is False
    assert {payer.http.get("/v1/payments").status_code for _ in range(20)} == {200}
    r = payer.http.get("/v1/payments")
    assert all(name in r.headers for name in HEADERS)


def test_bad_keys_are_limited_per_address(still: tuple[Payer, ManualTime]) -> None:
    """A 401 counts against the caller's address; once that bucket is empty the answer is the
    429 a key gets (docs/sandbox.md), not one more 401: guessing keys is rate limited."""
    payer, clock = still
    payer.http.put("/_sandbox/rate_limits", json={"all": 3}).raise_for_status()
    wrong = {"Authorization": "Bearer sk_test_wrong"}
    seen = [payer.http.get("/v1/payments", headers=wrong) for _ in range(4)]
    assert [r.status_code for r in seen] == [401, 401, 401, 429]
    assert [r.headers["x-ratelimit-remaining"] for r in seen] == ["2", "1", "0", "0"]
    limited = seen[-1]
    err = error_of(limited)
    assert (err["type"], err["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    assert err["retry_after"] == 1 and limited.headers["retry-after"] == "1"
    assert limited.headers["x-ratelimit-limit"] == "3"
    assert int(limited.headers["x-ratelimit-reset"]) == math.ceil(clock.now + 1)
    assert "retry-after" not in seen[0].headers
    # the address's bucket is not the key's: a valid key still gets through
    assert payer.http.get("/v1/payments").status_code == 200
    clock.now += 0.34  # one token back (3 per second)
    assert payer.http.get("/v1/payments", headers=wrong).status_code == 401
