"""Idempotency keys: byte-for-byte replay, reuse with another body, scope, expiry, races."""

from __future__ import annotations

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from gwtools.sandbox import Sandbox
from tests.sandbox.conftest import CANCEL_URL, LOOPBACK, SUCCESS_URL, Payer, error_of


def _body(payer: Payer, amount: int = 1000) -> dict[str, Any]:
    if payer.variant == "A":
        return {"amount": amount, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
    return {
        "amount": amount,
        "currency": "myr",
        "payment_method_data": {"type": "card", "card": card},
    }


def _count(payer: Payer) -> int:
    body = payer.http.get("/v1/payments", params={"limit": 100}).json()
    return len(body["data"])


def test_replay_is_byte_for_byte(payer: Payer) -> None:
    key = {"Idempotency-Key": str(uuid.uuid4())}
    first = payer.http.post("/v1/payments", json=_body(payer), headers=key)
    assert first.status_code == 201 and "idempotent-replayed" not in first.headers
    # same content, other key order and spacing: still the same request
    same = json.dumps(dict(reversed(list(_body(payer).items()))), indent=2)
    second = payer.http.post(
        "/v1/payments", content=same, headers={**key, "Content-Type": "application/json"}
    )
    assert second.status_code == 201
    assert second.content == first.content
    assert second.headers["idempotent-replayed"] == "true"
    assert "x-ratelimit-limit" in second.headers
    assert _count(payer) == 1


def test_reuse_with_another_body_is_409(payer: Payer) -> None:
    key = {"Idempotency-Key": "order-42"}
    assert payer.http.post("/v1/payments", json=_body(payer, 100), headers=key).status_code == 201
    r = payer.http.post("/v1/payments", json=_body(payer, 200), headers=key)
    assert r.status_code == 409 and error_of(r)["code"] == "idempotency_key_reused"
    assert _count(payer) == 1


def test_scope_is_key_and_endpoint(sandbox: Sandbox, payer: Payer) -> None:
    key = {"Idempotency-Key": "shared-key"}
    p = payer.http.post("/v1/payments", json=_body(payer), headers=key).json()
    if payer.variant == "A":
        payer.checkout(p["id"])
    refund = payer.http.post("/v1/refunds", json={"payment_id": p["id"]}, headers=key)
    assert refund.status_code == 201 and refund.json()["object"] == "refund"
    other = httpx.post(f"{sandbox.base_url}/_sandbox/accounts", verify=False).json()
    again = payer.http.post(
        "/v1/payments",
        json=_body(payer),
        headers={**key, "Authorization": f"Bearer {other['secret_key']}"},
    )
    assert again.status_code == 201 and again.json()["id"] != p["id"]


def test_errors_are_replayed_and_keys_expire_after_24_hours(payer: Payer) -> None:
    key = {"Idempotency-Key": "bad-then-good"}
    bad = payer.http.post("/v1/payments", json={"amount": -1}, headers=key)
    assert bad.status_code == 400
    replay = payer.http.post("/v1/payments", json={"amount": -1}, headers=key)
    assert replay.content == bad.content and replay.headers["idempotent-replayed"] == "true"
    payer.advance(24 * 3600)
    fresh = payer.http.post("/v1/payments", json=_body(payer), headers=key)
    assert fresh.status_code == 201 and "idempotent-replayed" not in fresh.headers


def test_declined_creation_is_replayed(payer_b: Payer) -> None:
    payer = payer_b
    body = _body(payer)
    body["payment_method_data"]["card"]["number"] = "4000000000000002"
    key = {"Idempotency-Key": "declined"}
    first = payer.http.post("/v1/payments", json=body, headers=key)
    second = payer.http.post("/v1/payments", json=body, headers=key)
    assert first.status_code == second.status_code == 402
    assert first.content == second.content
    assert _count(payer) == 1


def test_concurrent_duplicates_wait_for_the_first(
    sandbox: Sandbox, payer: Payer, account: dict[str, Any]
) -> None:
    admin = httpx.Client(base_url=sandbox.base_url, verify=False)
    admin.put("/_sandbox/faults", json={"latency_ms": 300}).raise_for_status()
    try:

        def send(_: int) -> httpx.Response:
            with httpx.Client(base_url=sandbox.base_url, verify=False, timeout=10) as c:
                return c.post(
                    "/v1/payments",
                    json=_body(payer),
                    headers={
                        "Idempotency-Key": "race",
                        "Authorization": f"Bearer {account['secret_key']}",
                    },
                )

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(send, range(4)))
    finally:
        admin.delete("/_sandbox/faults").raise_for_status()
        admin.close()
    assert {r.status_code for r in results} == {201}
    assert len({r.content for r in results}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in results) == 3
    assert _count(payer) == 1


@pytest.mark.parametrize("variant", ["A", "B"])
def test_duplicates_of_a_failed_first_request_run_one_at_a_time(variant: str) -> None:
    """The first request ends in a 500 (nothing stored) while duplicates wait for it: one of
    them runs in its place and the others replay its answer, so one payment is made. Every
    request takes 0.3 s inside the sandbox (its start-up latency), so a duplicate that ran
    beside another would still be running when the next one looked."""
    with Sandbox(variant, latency_ms=300, rate_limits=False) as sb:  # type: ignore[arg-type]
        payer = Payer(sb, httpx.Client(base_url=sb.base_url, verify=False, headers=sb.headers()))
        # the next request (the first past the idempotency check) gets a 500 after 0.3 s
        LOOPBACK.put(
            f"{sb.base_url}/_sandbox/faults",
            json={"error_rate": 1.0, "latency_ms": 300, "count": 1},
        ).raise_for_status()

        def send(_: int) -> httpx.Response:
            with httpx.Client(base_url=sb.base_url, verify=False, timeout=60) as c:
                return c.post(
                    "/v1/payments",
                    json=_body(payer),
                    headers={"Idempotency-Key": "after-a-500", **sb.headers()},
                )

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(send, range(4)))
        statuses = sorted(r.status_code for r in results)
        created = [r for r in results if r.status_code == 201]
        assert _count(payer) == 1, statuses
        payer.http.close()
    assert statuses == [201, 201, 201, 500], statuses
    assert len({r.content for r in created}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in created) == 2


@pytest.mark.parametrize(
    ("key", "why"),
    [
        (b"x" * 256, "256 bytes"),
        ("caf\u00e9-1".encode(), "non-ASCII"),
        ("\u8ba2\u53551".encode(), "non-ASCII"),
        (b"caf\xe9-1", "non-ASCII"),  # the same key sent as Latin-1
        (b"a\tb", "control character 0x09"),
        (b"", "empty"),
    ],
    ids=["256 characters", "UTF-8", "Chinese", "Latin-1", "tab", "empty"],
)
def test_bad_idempotency_key(payer: Payer, key: bytes, why: str) -> None:
    r = payer.http.post("/v1/payments", json=_body(payer), headers={"Idempotency-Key": key})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "Idempotency-Key")
    assert "1 to 255 printable ASCII characters" in err["message"] and why in err["message"]
    assert _count(payer) == 0  # nothing was created


def test_longest_and_punctuated_keys_are_accepted(payer: Payer) -> None:
    for key in ("x" * 255, "order 42/retry #1: {ok}~", "0b6f1c1e-4a7e-4c1e-9a51-6f0f5f2d9c3a"):
        first = payer.http.post("/v1/payments", json=_body(payer), headers={"Idempotency-Key": key})
        again = payer.http.post("/v1/payments", json=_body(payer), headers={"Idempotency-Key": key})
        assert first.status_code == 201, first.text
        assert again.headers.get("idempotent-replayed") == "true"
        assert again.content == first.content
    assert _count(payer) == 3


def test_purge_forgets_only_expired_records(payer: Payer) -> None:
    from gwtools.sandbox.idempotency import Idempotency

    store = payer.sb.gateway.store
    idem = Idempotency(store)
    now = payer.sb.gateway.clock.now()
    idem.save("old", b"fp", 201, [], b"{}", now - 24 * 3600)
    idem.save("new", b"fp", 201, [], b"{}", now - 60)
    assert idem.purge(now) >= 1
    assert idem.lookup("old", now) is None and idem.lookup("new", now) is not None
