"""Rate limits: token buckets per key, headers on every response, 429 with retry_after."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from gwtools.sandbox import Sandbox
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
    p = payer.create(expect=201)
    responses = [
        p,
        payer.http.get("/v1/payments"),
        payer.http.get("/v1/payments/pay_x"),
        payer.http.get("/v1/payments", params={"limit": 0}),
        payer.http.get("/v1/payments", headers={"Authorization": "Bearer sk_test_wrong"}),
        payer.http.post("/v1/refunds", json={}),
    ]
    for r in responses:
        for name in HEADERS:
            assert r.headers[name].isdigit(), (r.status_code, name)
        assert int(r.headers["x-ratelimit-reset"]) >= int(time.time())
    assert p.headers["x-ratelimit-limit"] == "50"  # creation counts against its 50/s bucket
    assert responses[1].headers["x-ratelimit-limit"] == "100"
    assert responses[5].headers["x-ratelimit-limit"] == "30"


def test_429_with_retry_after(payer: Payer, limits: Any) -> None:
    limits(all=100, create=3, refunds=30)
    seen = [payer.create().status_code for _ in range(5)]
    assert seen[:3] == [201, 201, 201] and 429 in seen[3:]
    r = payer.create()
    assert r.status_code == 429
    err = error_of(r)
    assert (err["type"], err["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    assert err["retry_after"] == 1 and r.headers["retry-after"] == "1"
    assert r.headers["x-ratelimit-remaining"] == "0"
    # other endpoints still have room in the all-endpoints bucket
    assert payer.http.get("/v1/payments").status_code == 200
    time.sleep(0.4)  # 3 tokens/s: one is back
    assert payer.create().status_code == 201


def test_buckets_are_per_key(sandbox: Sandbox, payer: Payer, limits: Any) -> None:
    limits(all=3)
    for _ in range(3):
        payer.http.get("/v1/payments")
    assert payer.http.get("/v1/payments").status_code == 429
    other = LOOPBACK.post(f"{sandbox.base_url}/_sandbox/accounts").json()
    r = LOOPBACK.get(
        f"{sandbox.base_url}/v1/payments",
        headers={"Authorization": f"Bearer {other['secret_key']}"},
    )
    assert r.status_code == 200


def test_refunds_bucket(payer: Payer, limits: Any) -> None:
    limits(refunds=2)
    codes = [payer.http.get("/v1/refunds").status_code for _ in range(4)]
    assert codes[:2] == [200, 200] and codes[-1] == 429
    assert payer.http.get("/v1/payments").status_code == 200


def test_disabled_limits(payer: Payer, limits: Any) -> None:
    assert limits(enabled=False, all=2)["enabled"] is False
    assert {payer.http.get("/v1/payments").status_code for _ in range(20)} == {200}
    r = payer.http.get("/v1/payments")
    assert all(name in r.headers for name in HEADERS)
