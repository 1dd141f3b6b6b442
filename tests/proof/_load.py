"""Plain-HTTP helpers for the load tests: clients, payments made the way users make them,
both list envelopes, and the sandbox's rate-limit switch."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import httpx

TEST_CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2035, "cvc": "123"}


@dataclass(frozen=True)
class Api:
    """One account on one sandbox: where, which key, which variant."""

    base_url: str
    key: str
    variant: str

    def client(self, connections: int) -> httpx.AsyncClient:
        """An async client with up to ``connections`` connections open at once."""
        return httpx.AsyncClient(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.key}"},
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
            timeout=httpx.Timeout(20.0, pool=30.0),
        )

    def sync_client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.base_url, headers={"Authorization": f"Bearer {self.key}"}, timeout=20
        )

    def payment_body(
        self, amount: int, capture: Literal["automatic", "manual"] = "automatic"
    ) -> dict[str, Any]:
        """A creation body: variant A hosted checkout, variant B the 4242 test card."""
        if self.variant == "A":
            return {
                "amount": amount,
                "currency": "MYR",
                "success_url": "https://shop.example/ok",
                "cancel_url": "https://shop.example/cancel",
            }
        return {
            "amount": amount,
            "currency": "myr",
            "payment_method_data": {"type": "card", "card": TEST_CARD},
            "capture_method": capture,
        }


async def new_payment(
    client: httpx.AsyncClient, api: Api, *, amount: int, capture: Literal["automatic", "manual"]
) -> dict[str, Any]:
    """A captured (``automatic``) or authorized (``manual``) card payment, as the API shows it."""
    created = await client.post("/v1/payments", json=api.payment_body(amount, capture))
    assert created.status_code in (200, 201), created.text
    payment: dict[str, Any] = created.json()
    if api.variant == "A":
        # The customer's part: the hosted checkout page's form, posted like a browser would.
        form = {**{k: str(v) for k, v in TEST_CARD.items()}, "method": "card"}
        form |= {"capture_method": capture, "action": "pay"}
        paid = await client.post(payment["redirect_url"], data=form, follow_redirects=False)
        assert paid.status_code == 303, paid.text
        assert paid.headers["location"] == "https://shop.example/ok"
    shown = await client.get(f"/v1/payments/{payment['id']}")
    assert shown.status_code == 200, shown.text
    payment = shown.json()
    want = {"automatic": {"captured", "succeeded"}, "manual": {"authorized"}}[capture]
    assert payment["status"] in want, payment
    return payment


async def run_concurrently(calls: Iterable[Awaitable[httpx.Response]]) -> list[httpx.Response]:
    """Send every request at once (the client's pool bounds how many are on the wire)."""
    return list(await asyncio.gather(*calls))


def all_pages(client: httpx.Client, path: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Every object of a list endpoint, following either envelope (``meta`` or ``has_more``)."""
    out: list[dict[str, Any]] = []
    query: dict[str, Any] = {**params, "limit": 100}
    for _ in range(1000):
        r = client.get(path, params=query)
        assert r.status_code == 200, r.text
        body = r.json()
        out += body["data"]
        if "meta" in body:
            if body["meta"]["page"] >= body["meta"]["totalPages"]:
                return out
            query["page"] = body["meta"]["page"] + 1
        else:
            if not body["has_more"]:
                return out
            query["starting_after"] = body["data"][-1]["id"]
    raise AssertionError(f"{path} kept paging past 1000 pages")


def assert_error(r: httpx.Response, status: int, type_: str, code: str) -> dict[str, Any]:
    """The response is the spec's error body with this status, type and code; its ``error``."""
    assert r.status_code == status, (r.status_code, r.text)
    error: dict[str, Any] = r.json()["error"]
    assert (error["type"], error["code"]) == (type_, code), error
    assert error["message"]
    return error


@contextmanager
def rate_limits(base_url: str, **settings: Any) -> Iterator[dict[str, Any]]:
    """Change the sandbox's rate limits (``PUT /_sandbox/rate_limits``); restore them after."""
    with httpx.Client(base_url=base_url, timeout=10) as admin:
        before = admin.get("/_sandbox/rate_limits")
        assert before.status_code == 200, before.text
        changed = admin.put("/_sandbox/rate_limits", json=settings)
        assert changed.status_code == 200, changed.text
        try:
            yield changed.json()
        finally:
            admin.put("/_sandbox/rate_limits", json=before.json()).raise_for_status()


@contextmanager
def injected_faults(base_url: str, **settings: Any) -> Iterator[None]:
    """Set ``/_sandbox/faults`` (e.g. ``latency_ms``) for a block; back to start-up settings after."""
    with httpx.Client(base_url=base_url, timeout=10) as admin:
        changed = admin.put("/_sandbox/faults", json=settings)
        assert changed.status_code == 200, changed.text
        try:
            yield
        finally:
            admin.delete("/_sandbox/faults").raise_for_status()
