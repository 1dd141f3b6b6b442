"""Fault injection (/_sandbox/faults) over real HTTP, in both variants.

Every test leaves the shared session server with faults off (the ``faults`` fixture resets
them), and uses ``count`` budgets or a seed so that what it asserts is deterministic.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest

from gwtools.sandbox import create_app
from gwtools.sandbox.app import app_gateway
from gwtools.sandbox.faults import ConnectionDropped
from tests.sandbox.conftest import Payer

PAYMENTS = "/v1/payments"


@pytest.fixture
def payment(payer: Payer) -> dict[str, Any]:
    """One payment of the fresh account, created before any fault is set."""
    r = payer.create()
    assert r.status_code in (200, 201), r.text
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture
def faults(sandbox: Any) -> Iterator[Any]:
    """Set faults with ``faults(**settings)``; they are turned off again after the test."""
    admin = httpx.Client(base_url=sandbox.base_url, timeout=10)

    def put(**settings: Any) -> dict[str, Any]:
        r = admin.put("/_sandbox/faults", json=settings)
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    put.admin = admin  # type: ignore[attr-defined]
    try:
        yield put
    finally:
        admin.delete("/_sandbox/faults").raise_for_status()
        admin.close()


def _status(faults: Any) -> dict[str, Any]:
    body: dict[str, Any] = faults.admin.get("/_sandbox/faults").json()
    return body


def _assert_error(r: httpx.Response, status: int, type_: str, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    err: dict[str, Any] = r.json()["error"]
    assert (err["type"], err["code"]) == (type_, code)
    assert err["message"]
    # Injected responses look like every other response of the gateway.
    for header in (
        "x-request-id",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    ):
        assert header in r.headers, f"{header} missing from an injected {status}"
    return err


def test_faults_are_off_by_default(http: httpx.Client, faults: Any) -> None:
    status = _status(faults)
    assert status["active"] is False
    assert status["remaining"] is None
    assert [http.get(PAYMENTS).status_code for _ in range(5)] == [200] * 5


def test_count_budget_gives_exactly_that_many_500s(http: httpx.Client, faults: Any) -> None:
    faults(error_rate=1.0, count=2)
    first, second = http.get(PAYMENTS), http.get(PAYMENTS)
    for r in (first, second):
        _assert_error(r, 500, "api_error", "processing_error")
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
    # The budget is spent: the gateway is healthy again without anyone resetting it.
    assert http.get(PAYMENTS).status_code == 200
    status = _status(faults)
    assert status["active"] is False
    assert status["injected"]["error"] == 2
    assert status["seen"] == 2


def test_injected_500_does_not_process_the_request(
    http: httpx.Client, faults: Any, payer: Payer
) -> None:
    faults(error_rate=1.0, count=1)
    _assert_error(payer.create(), 500, "api_error", "processing_error")
    assert http.get(PAYMENTS).json()["data"] == []


def test_error_rate_is_the_share_of_500s(http: httpx.Client, faults: Any) -> None:
    faults(error_rate=0.3, seed=11)
    # 90 requests stay inside a fresh account's burst of 100, so no real 429 mixes in.
    codes = [http.get(PAYMENTS).status_code for _ in range(90)]
    assert set(codes) == {200, 500}
    # Binomial(90, 0.3): 27 expected, sd ~ 4.3; 4 sd either side.
    assert 27 - 17 <= codes.count(500) <= 27 + 17
    assert _status(faults)["injected"]["error"] == codes.count(500)


def test_a_seed_repeats_the_same_fault_sequence(http: httpx.Client, faults: Any) -> None:
    def sequence() -> list[int]:
        faults(error_rate=0.25, force_429_rate=0.25, seed=2024)
        return [http.get(PAYMENTS).status_code for _ in range(40)]

    first, second = sequence(), sequence()
    assert first == second
    assert {200, 429, 500} <= set(first)


def test_dropped_connection_gets_no_response(http: httpx.Client, faults: Any) -> None:
    faults(drop_rate=1.0, count=2)
    for _ in range(2):
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            http.get(PAYMENTS)
    # A new connection works once the budget is spent.
    assert http.get(PAYMENTS).status_code == 200
    assert _status(faults)["injected"]["drop"] == 2


def test_dropped_creation_is_safe_to_retry_with_its_idempotency_key(
    http: httpx.Client, faults: Any, payer: Payer
) -> None:
    key = {"Idempotency-Key": "retry-after-drop-1"}
    faults(drop_rate=1.0, count=1)
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        payer.create(headers=key)
    retried = payer.create(headers=key)
    assert retried.status_code in (200, 201), retried.text
    assert "idempotent-replayed" not in retried.headers  # the dropped try stored nothing
    replayed = payer.create(headers=key)
    assert replayed.headers["idempotent-replayed"] == "true"
    assert replayed.content == retried.content
    assert [p["id"] for p in http.get(PAYMENTS).json()["data"]] == [retried.json()["id"]]


def test_forced_429_carries_retry_after(http: httpx.Client, faults: Any) -> None:
    faults(force_429_rate=1.0, count=1)
    r = http.get(PAYMENTS)
    err = _assert_error(r, 429, "rate_limit_error", "rate_limit_exceeded")
    assert err["retry_after"] == 1
    assert r.headers["retry-after"] == "1"


def test_non_json_body_only_on_list_endpoints(
    http: httpx.Client, faults: Any, payment: dict[str, Any]
) -> None:
    faults(non_json_rate=1.0)
    r = http.get(PAYMENTS)
    assert r.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.text)
    # Retrieving one payment is not a list: it is served normally.
    one = http.get(f"{PAYMENTS}/{payment['id']}")
    assert one.status_code == 200
    assert one.json()["id"] == payment["id"]


def test_latency_is_added_to_v1_requests(http: httpx.Client, faults: Any) -> None:
    http.get(PAYMENTS)  # open the connection first: time the request, not the handshake
    faults(latency_ms=150, latency_jitter_ms=50)
    started = time.perf_counter()
    assert http.get(PAYMENTS).status_code == 200
    assert time.perf_counter() - started >= 0.150
    assert _status(faults)["injected"]["delayed"] == 1


def test_latency_spikes(http: httpx.Client, faults: Any) -> None:
    http.get(PAYMENTS)
    faults(spike_rate=1.0, spike_ms=120, count=1)
    started = time.perf_counter()
    http.get(PAYMENTS)
    assert time.perf_counter() - started >= 0.120


def test_ignore_time_filters(http: httpx.Client, faults: Any, payment: dict[str, Any]) -> None:
    future: dict[str, str | int] = {"from": "2999-01-01T00:00:00Z", "limit": 100}
    assert http.get(PAYMENTS, params=future).json()["data"] == []
    faults(ignore_time_filters=True)
    ids = [p["id"] for p in http.get(PAYMENTS, params=future).json()["data"]]
    assert payment["id"] in ids


def test_admin_api_is_never_faulted(sandbox: Any, faults: Any) -> None:
    faults(error_rate=0.5, drop_rate=0.5, latency_ms=1_000)
    started = time.perf_counter()
    for _ in range(5):
        assert _status(faults)["active"] is True
    assert time.perf_counter() - started < 1.0
    # /_sandbox/ requests do not use up a budget either.
    faults(error_rate=1.0, count=1)
    _status(faults)
    assert _status(faults)["remaining"] == 1


def test_delete_turns_faults_off(http: httpx.Client, faults: Any) -> None:
    faults(error_rate=1.0)
    assert http.get(PAYMENTS).status_code == 500
    r = faults.admin.delete("/_sandbox/faults")
    assert r.status_code == 200
    assert r.json()["active"] is False
    assert http.get(PAYMENTS).status_code == 200


@pytest.mark.parametrize(
    ("settings", "param"),
    [
        ({"error_rate": 1.5}, "error_rate"),
        ({"latency_ms": -1}, "latency_ms"),
        ({"count": 0}, "count"),
        ({"eror_rate": 0.1}, "eror_rate"),
        ({"error_rate": 0.6, "drop_rate": 0.6}, None),
        ({"error_rate": 0.6, "truncated_rate": 0.6}, None),
        ({"late_visibility_s": -1}, "late_visibility_s"),
        ({"short_page_rate": 2}, "short_page_rate"),
    ],
)
def test_bad_settings_are_refused_and_change_nothing(
    faults: Any, settings: dict[str, Any], param: str | None
) -> None:
    r = faults.admin.put("/_sandbox/faults", json=settings)
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    if param is not None:
        assert err.get("param") == param
    else:
        assert "at most 1" in err["message"]
    assert _status(faults)["active"] is False


# --- data faults: short pages, garbled ids, truncated bodies, late visibility, stale
# updated_at, inserts while paging ------------------------------------------------------------


def _seed(http: httpx.Client, payments: int = 30) -> None:
    r = http.post("/_sandbox/history", json={"payments": payments, "days": 5, "seed": 1})
    assert r.status_code == 201, r.text


def _ids(r: httpx.Response) -> list[str]:
    assert r.status_code == 200, r.text
    return [p["id"] for p in r.json()["data"]]


def test_short_pages_drop_1_to_10_trailing_items_and_keep_the_envelope(
    http: httpx.Client, faults: Any
) -> None:
    _seed(http)
    url = f"{PAYMENTS}?limit=20"
    truth = http.get(url).json()

    def short_pages() -> list[list[str]]:
        faults(short_page_rate=1.0, seed=3)
        return [_ids(http.get(url)) for _ in range(8)]

    pages = short_pages()
    ids = [p["id"] for p in truth["data"]]
    for page in pages:
        assert 10 <= len(page) <= 19 and page == ids[: len(page)]  # a prefix: trailing dropped
    assert len({len(p) for p in pages}) > 1
    assert _status(faults)["injected"]["short_page"] == 8
    served = http.get(url).json()
    assert {k: v for k, v in served.items() if k != "data"} == {
        k: v for k, v in truth.items() if k != "data"
    }
    assert short_pages() == pages  # the seed fixes which items go


def test_short_page_keeps_at_least_one_item(http: httpx.Client, faults: Any) -> None:
    _seed(http, 2)
    faults(short_page_rate=1.0, seed=1)
    assert len(_ids(http.get(PAYMENTS))) == 1


def test_garbled_id_changes_one_character_of_one_id(http: httpx.Client, faults: Any) -> None:
    _seed(http)
    truth = _ids(http.get(PAYMENTS))
    faults(garbled_id_rate=1.0, seed=5)
    served = _ids(http.get(PAYMENTS))
    changed = [(a, b) for a, b in zip(truth, served, strict=True) if a != b]
    assert len(changed) == 1
    good, bad = changed[0]
    assert len(bad) == len(good) and bad.startswith("pay_")
    assert sum(x != y for x, y in zip(good, bad, strict=True)) == 1
    assert any(c in bad for c in "{}|~^!#")
    assert _status(faults)["injected"]["garbled_id"] == 1


def test_truncated_body_is_a_200_cut_short(http: httpx.Client, faults: Any) -> None:
    _seed(http)
    truth = http.get(PAYMENTS).content
    faults(truncated_rate=1.0, count=1, seed=2)
    r = http.get(PAYMENTS)
    assert r.status_code == 200 and 0 < len(r.content) < len(truth)
    assert truth.startswith(r.content)
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.content)
    assert http.get(PAYMENTS).content == truth  # budget spent
    assert _status(faults)["injected"]["truncated"] == 1


def test_late_visibility_hides_new_rows_from_lists_for_a_while(
    http: httpx.Client, faults: Any, payer: Payer
) -> None:
    made = []
    for _ in range(20):
        r = payer.create()
        assert r.status_code in (200, 201), r.text
        made.append(r.json()["id"])
    faults(late_visibility_s=60, seed=9)
    listed = set(_ids(http.get(f"{PAYMENTS}?limit=100")))
    assert listed < set(made)  # some are not visible yet (each row has its own delay)
    hidden = sorted(set(made) - listed)
    assert http.get(f"{PAYMENTS}/{hidden[0]}").status_code == 200  # retrieve sees it
    assert set(_ids(http.get(f"{PAYMENTS}?limit=100"))) == listed  # fixed per row
    r = faults.admin.post("/_sandbox/clock/advance", json={"seconds": 30})
    assert r.status_code == 200
    later = set(_ids(http.get(f"{PAYMENTS}?limit=100")))
    assert listed <= later <= set(made)
    faults.admin.post("/_sandbox/clock/advance", json={"seconds": 30})
    assert set(_ids(http.get(f"{PAYMENTS}?limit=100"))) == set(made)


def test_stale_updated_at_stays_at_creation(http: httpx.Client, faults: Any, payer: Payer) -> None:
    r = payer.create()
    assert r.status_code in (200, 201), r.text
    ident = r.json()["id"]
    faults.admin.post("/_sandbox/clock/advance", json={"seconds": 20})
    if payer.variant == "A":
        assert http.post(f"{PAYMENTS}/{ident}/void", json={}).status_code == 200
        fresh = http.get(f"{PAYMENTS}/{ident}").json()
        assert fresh["updated_at"] > fresh["created_at"]
    faults(stale_updated_at=True)
    for body in (http.get(f"{PAYMENTS}/{ident}").json(), http.get(PAYMENTS).json()["data"][0]):
        if payer.variant == "A":
            assert body["status"] == "cancelled" and body["updated_at"] == body["created_at"]
        else:
            assert "updated_at" not in body  # variant B has none


def test_insert_while_paging_creates_a_payment_before_each_list(
    http: httpx.Client, faults: Any
) -> None:
    _seed(http, 5)
    faults(insert_rate=1.0, count=2)
    first, second = _ids(http.get(PAYMENTS)), _ids(http.get(PAYMENTS))
    assert len(second) == len(first) + 1 == 7 and set(first) < set(second)
    assert _status(faults)["injected"]["inserted"] == 2
    assert len(_ids(http.get(PAYMENTS))) == 7  # budget spent: no more inserts


# --- in process (httpx.ASGITransport): start-up settings and what a drop becomes there --------


def _inprocess(steps: Callable[[httpx.AsyncClient, str], Awaitable[None]]) -> None:
    """Run ``steps`` against a fresh in-process variant B app started with ``latency_ms=120``."""
    app = create_app("B", latency_ms=120)
    key = app_gateway(app).default_account["secret_key"]

    async def main() -> None:
        transport = httpx.ASGITransport(app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
            await steps(client, key)

    asyncio.run(main())


def test_start_up_latency_is_the_baseline_that_delete_restores() -> None:
    async def steps(client: httpx.AsyncClient, key: str) -> None:
        status = (await client.get("/_sandbox/faults")).json()
        assert status["settings"]["latency_ms"] == 120
        # PUT replaces everything, the start-up latency included ...
        assert (await client.put("/_sandbox/faults", json={})).json()["active"] is False
        # ... and DELETE returns to the start-up settings.
        restored = (await client.delete("/_sandbox/faults")).json()
        assert restored["settings"]["latency_ms"] == 120
        assert restored["active"] is True

    _inprocess(steps)


def test_without_a_socket_a_drop_raises_connection_dropped() -> None:
    async def steps(client: httpx.AsyncClient, key: str) -> None:
        await client.put("/_sandbox/faults", json={"drop_rate": 1.0, "count": 1})
        with pytest.raises(ConnectionDropped):
            await client.get(PAYMENTS, headers={"Authorization": f"Bearer {key}"})

    _inprocess(steps)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("ignore_time_filters", "yes"),
        ("latency_ms", True),
        ("latency_ms", 10.0),
        ("error_rate", "0.5"),
    ],
)
def test_fault_settings_take_json_types_as_written(faults: Any, setting: str, value: Any) -> None:
    """Lax parsing read "yes" as true, true as 1 ms and "0.5" as a rate."""
    r = faults.admin.put("/_sandbox/faults", json={setting: value})
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert (err["code"], err["param"]) == ("parameter_invalid", setting)
    assert _status(faults)["active"] is False


def test_fault_reset_refuses_a_body(faults: Any) -> None:
    faults(error_rate=0.5, seed=1)
    r = faults.admin.request("DELETE", "/_sandbox/faults", json={"error_rate": 0})
    assert r.status_code == 400 and r.json()["error"]["param"] == "error_rate"
    assert _status(faults)["active"] is True
