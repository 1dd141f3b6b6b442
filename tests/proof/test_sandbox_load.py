"""The sandbox keeps its invariants under a concurrent load of clients, in both variants.

Bounded and loopback only: 24-32 concurrent connections, a few hundred requests per test, each
test a few seconds. Payments get captured or authorized the way a user's would: variant A
through the hosted checkout page (a form POST to ``redirect_url``), variant B by direct creation
with the test card 4242 4242 4242 4242 (``capture_method=manual`` for an authorized payment).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from ._load import (
    Api,
    all_pages,
    assert_error,
    injected_faults,
    new_payment,
    rate_limits,
    run_concurrently,
)

pytestmark = pytest.mark.timeout(60)

CONNECTIONS = 32


@pytest.fixture
def api(sandbox: Any, account: Any) -> Iterator[Api]:
    """The variant under test, as a fresh account, with rate limits off (restored after)."""
    with rate_limits(sandbox.base_url, enabled=False):
        yield Api(sandbox.base_url, account["secret_key"], sandbox.variant)


def test_racing_partial_refunds_never_refund_more_than_captured(api: Api) -> None:
    amount = 10_000
    rng = random.Random(5)
    wanted = [rng.randrange(300, 1500) for _ in range(48)]  # ~43,000 asked for 10,000

    async def scenario() -> tuple[dict[str, Any], list[httpx.Response]]:
        async with api.client(CONNECTIONS) as client:
            payment = await new_payment(client, api, amount=amount, capture="automatic")
            calls = [
                client.post("/v1/refunds", json={"payment_id": payment["id"], "amount": a})
                for a in wanted
            ]
            return payment, await run_concurrently(calls)

    payment, responses = asyncio.run(scenario())

    granted = [a for a, r in zip(wanted, responses, strict=True) if r.status_code in (200, 201)]
    refused = [a for a, r in zip(wanted, responses, strict=True) if r.status_code == 409]
    assert len(granted) + len(refused) == len(wanted), {r.status_code for r in responses}
    for r in responses:
        if r.status_code == 409:
            assert_error(r, 409, "invalid_request_error", "amount_too_large")
    left = amount - sum(granted)
    assert granted and refused and left >= 0
    # What is left only shrinks: a refusal was right only if it asked for more than is left now.
    assert min(refused) > left
    with api.sync_client() as client:
        refunds = all_pages(client, "/v1/refunds", {"payment_id": payment["id"]})
        after = client.get(f"/v1/payments/{payment['id']}").json()
    live = [r for r in refunds if r["status"] in ("pending", "succeeded")]
    assert sorted(r["amount"] for r in live) == sorted(granted)
    assert len(refunds) == len(granted)
    assert after["refunded_amount"] == sum(granted) <= amount
    assert after["refunded"] is (left == 0)


def test_full_refund_races_partial_refunds(api: Api) -> None:
    """A refund without an amount (the rest) racing small ones: never more than the payment."""

    async def scenario() -> tuple[dict[str, Any], list[httpx.Response]]:
        async with api.client(CONNECTIONS) as client:
            payment = await new_payment(client, api, amount=5_000, capture="automatic")
            bodies: list[dict[str, Any]] = [{"payment_id": payment["id"], "amount": 100}] * 20
            bodies[10:10] = [{"payment_id": payment["id"]}] * 4
            return payment, await run_concurrently(
                [client.post("/v1/refunds", json=b) for b in bodies]
            )

    payment, responses = asyncio.run(scenario())

    granted = [r.json()["amount"] for r in responses if r.status_code in (200, 201)]
    assert sum(granted) == 5_000  # a full refund wins once; afterwards nothing is left
    refused = [r for r in responses if r.status_code not in (200, 201)]
    assert len(refused) == len(responses) - len(granted)
    for r in refused:
        assert_error(r, 409, "invalid_request_error", "amount_too_large")
    with api.sync_client() as client:
        assert client.get(f"/v1/payments/{payment['id']}").json()["refunded_amount"] == 5_000


def test_one_idempotency_key_sent_concurrently_creates_one_payment(api: Api) -> None:
    key = f"load-{time.time_ns()}"
    same = api.payment_body(amount=4_200)
    other = api.payment_body(amount=4_300)  # same key, other body: 409 unless it came first
    bodies = [same] * 20 + [other] * 4
    random.Random(7).shuffle(bodies)

    async def scenario() -> list[httpx.Response]:
        async with api.client(CONNECTIONS) as client:
            return await run_concurrently(
                [
                    client.post("/v1/payments", json=b, headers={"Idempotency-Key": key})
                    for b in bodies
                ]
            )

    # Latency inside the request's handling: duplicates arrive while the first is still running.
    with injected_faults(api.base_url, latency_ms=40):
        responses = asyncio.run(scenario())

    with api.sync_client() as client:
        payments = all_pages(client, "/v1/payments", {})
    assert len(payments) == 1, [p["id"] for p in payments]
    created = payments[0]
    winner_body = same if created["amount"] == 4_200 else other
    ok = [r for r in responses if r.status_code in (200, 201)]
    assert {r.json()["id"] for r in ok} == {created["id"]}
    assert len({r.content for r in ok}) == 1  # replays are the first answer, byte for byte
    assert sum(r.headers.get("Idempotent-Replayed") == "true" for r in ok) == len(ok) - 1
    for body, r in zip(bodies, responses, strict=True):
        if body is winner_body:
            # docs/sandbox.md: a concurrent duplicate waits and replays, or is told 409.
            assert r.status_code in (200, 201, 409), r.text
        else:
            assert_error(r, 409, "invalid_request_error", "idempotency_key_reused")


def test_racing_captures_and_voids_of_one_authorized_payment(api: Api) -> None:
    async def scenario() -> tuple[dict[str, Any], list[str], list[httpx.Response]]:
        async with api.client(CONNECTIONS) as client:
            payment = await new_payment(client, api, amount=7_700, capture="manual")
            actions = ["capture"] * 16 + ["void"] * 8
            random.Random(3).shuffle(actions)
            calls = [client.post(f"/v1/payments/{payment['id']}/{a}", json={}) for a in actions]
            return payment, actions, await run_concurrently(calls)

    payment, actions, responses = asyncio.run(scenario())

    assert payment["status"] == "authorized"
    winners = [(a, r) for a, r in zip(actions, responses, strict=True) if r.status_code == 200]
    assert len(winners) == 1, [(a, r.status_code) for a, r in zip(actions, responses, strict=True)]
    for r in responses:
        if r.status_code != 200:
            assert_error(r, 409, "invalid_request_error", "invalid_state")
    action, _ = winners[0]
    with api.sync_client() as client:
        final = client.get(f"/v1/payments/{payment['id']}").json()
    expected = {
        ("capture", "A"): "captured",
        ("capture", "B"): "succeeded",
        ("void", "A"): "cancelled",
        ("void", "B"): "canceled",
    }
    assert final["status"] == expected[action, api.variant]
    assert final["captured"] is (action == "capture")


def test_racing_captures_exactly_one_succeeds(api: Api) -> None:
    async def scenario() -> list[httpx.Response]:
        async with api.client(CONNECTIONS) as client:
            payment = await new_payment(client, api, amount=3_000, capture="manual")
            path = f"/v1/payments/{payment['id']}/capture"
            return await run_concurrently([client.post(path, json={}) for _ in range(24)])

    responses = asyncio.run(scenario())

    assert sum(r.status_code == 200 for r in responses) == 1
    assert all(
        r.json()["error"]["code"] == "invalid_state" for r in responses if r.status_code != 200
    )


def test_rate_limit_holds_per_key_under_a_hammering_client(sandbox: Any, account: Any) -> None:
    """Every bound here holds however slowly the machine runs: the success count is bounded
    by the time the hammering really took (monotonic, the clock the buckets use), and each
    X-RateLimit-Reset by wall-clock readings taken just before and after its own request."""
    limit = 20
    other = httpx.post(f"{sandbox.base_url}/_sandbox/accounts", timeout=10).json()
    hammered = Api(sandbox.base_url, account["secret_key"], sandbox.variant)
    bystander = Api(sandbox.base_url, other["secret_key"], sandbox.variant)

    async def hammer(client: httpx.AsyncClient, total: int) -> list[tuple[float, float, Any]]:
        results: list[tuple[float, float, httpx.Response]] = []
        remaining = iter(range(total))

        async def worker() -> None:
            for _ in remaining:
                sent = time.time()
                r = await client.get("/v1/payments", params={"limit": 1})
                results.append((sent, time.time(), r))

        await asyncio.gather(*(worker() for _ in range(CONNECTIONS - 4)))
        return results

    async def calm(client: httpx.AsyncClient) -> list[httpx.Response]:
        # 8 requests, well under the bystander's own bucket of 20, while the hammer runs
        return [await client.get("/v1/payments", params={"limit": 1}) for _ in range(8)]

    async def scenario() -> tuple[float, float, list[Any], list[httpx.Response]]:
        async with hammered.client(CONNECTIONS) as a, bystander.client(4) as b:
            await a.get("/_sandbox")  # a connection up before timing; not a /v1 call
            start = time.monotonic()
            results, calm_results = await asyncio.gather(hammer(a, 300), calm(b))
            return start, time.monotonic(), results, calm_results

    with rate_limits(sandbox.base_url, enabled=True, all=limit, create=limit, refunds=limit):
        start, end, results, calm_results = asyncio.run(scenario())

    statuses = [r.status_code for _, _, r in results]
    assert set(statuses) <= {200, 429}, set(statuses)
    succeeded = statuses.count(200)
    # A token bucket of ``limit`` refilled at ``limit``/s, full when the hammering starts: at
    # least the full bucket, at most the bucket plus what refilled while it lasted.
    assert limit <= succeeded <= limit + limit * (end - start) + 1, (succeeded, end - start)
    for sent, received, r in results:
        assert int(r.headers["X-RateLimit-Limit"]) == limit
        assert 0 <= int(r.headers["X-RateLimit-Remaining"]) <= limit
        # when the bucket is full again: between the server's reading of the clock (after
        # ``sent``, before ``received``) and one second (a whole bucket) after it
        reset = int(r.headers["X-RateLimit-Reset"])
        assert math.floor(sent) <= reset <= math.ceil(received) + 1, (sent, reset, received)
        if r.status_code == 429:
            error = assert_error(r, 429, "rate_limit_error", "rate_limit_exceeded")
            assert error["retry_after"] >= 1
            assert int(r.headers["Retry-After"]) == error["retry_after"]
    assert [r.status_code for r in calm_results] == [200] * 8
