"""Helpers for the library tests: a :class:`Shop` that makes things happen on a sandbox account.

Everything goes through the sandbox's public API and customer pages over real HTTP, the way
a merchant and their customers would: create payments, pay or abandon them, capture, void,
refund, and move the sandbox clock.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

import gwtools._gateway as gateway
from gwtools._gateway import Gateway

CARD_OK = "4242424242424242"
CARD_DECLINE = "4000000000000002"
CARD_3DS = "4000002500003155"


class Shop:
    """A merchant account on a sandbox, driven over HTTP."""

    def __init__(self, sandbox: Any, account: dict[str, Any]) -> None:
        self.sandbox = sandbox
        self.variant: str = sandbox.variant
        self.base_url: str = sandbox.base_url
        self.key: str = account["secret_key"]
        self.http = httpx.Client(
            base_url=self.base_url, timeout=15, headers={"Authorization": f"Bearer {self.key}"}
        )
        self.pages = httpx.Client(base_url=self.base_url, timeout=15)
        self._amount = itertools.count(1000, 7)

    def close(self) -> None:
        self.http.close()
        self.pages.close()

    def _post(
        self, path: str, body: dict[str, Any] | None = None, ok: tuple[int, ...] = (200, 201)
    ) -> dict[str, Any]:
        r = self.http.post(path, json=body if body is not None else {})
        assert r.status_code in ok, (path, r.status_code, r.text)
        return dict(r.json())

    # -- payments --------------------------------------------------------------------------
    def _create(self, method: dict[str, Any] | None, manual: bool = False) -> dict[str, Any]:
        amount = next(self._amount)
        if self.variant == "A":
            return self._post(
                "/v1/payments",
                {
                    "amount": amount,
                    "success_url": "https://shop.example/ok",
                    "cancel_url": "https://shop.example/cancel",
                },
            )
        body: dict[str, Any] = {
            "amount": amount,
            "currency": "myr",
            "return_url": "https://shop.example/back",
            "capture_method": "manual" if manual else "automatic",
        }
        if method is not None:
            body["payment_method_data"] = method
        created = self._post("/v1/payments", body, ok=(200, 201, 402))
        # A declined direct creation answers 402; the stored payment is in the error body.
        return created["error"]["payment"] if "error" in created else created

    def _page(self, ident: str, form: dict[str, str]) -> None:
        r = self.pages.post(f"/pay/{ident}", data=form)
        assert r.status_code in (200, 303), (r.status_code, r.text[:300])

    def card(self, number: str = CARD_OK, *, manual: bool = False) -> str:
        card = {"number": number, "exp_month": 12, "exp_year": 2031, "cvc": "123"}
        if self.variant == "A":
            pid = self._create(None)["id"]
            self._page(
                pid,
                {
                    "action": "pay",
                    "method": "card",
                    "capture_method": "manual" if manual else "automatic",
                    **{k: str(v) for k, v in card.items()},
                },
            )
            return str(pid)
        return str(self._create({"type": "card", "card": card}, manual=manual)["id"])

    def fpx(self, bank_code: str) -> str:
        if self.variant == "A":
            pid = self._create(None)["id"]
            self._page(pid, {"action": "pay", "method": "fpx", "bank_code": bank_code})
        else:
            pid = self._create({"type": "fpx", "fpx": {"bank_code": bank_code}})["id"]
        # Every FPX payment, test banks included, waits on the bank page (A: pending,
        # B: requires_action) until the customer finishes there.
        if self.status(pid) in ("requires_action", "pending"):
            self._page(pid, {"action": "complete"})
        return str(pid)

    def open_payment(self) -> str:
        """A payment waiting for the customer (A: at checkout; B: 3-D Secure)."""
        if self.variant == "A":
            return str(self._create(None)["id"])
        return self.card(CARD_3DS)

    def complete(self, ident: str) -> None:
        self._page(ident, {"action": "complete"})

    def capture(self, ident: str) -> None:
        self._post(f"/v1/payments/{ident}/capture")

    def void(self, ident: str) -> None:
        self._post(f"/v1/payments/{ident}/void")

    def refund(self, ident: str, amount: int | None = None) -> str:
        body: dict[str, Any] = {"payment_id": ident, "reason": "requested_by_customer"}
        if amount is not None:
            body["amount"] = amount
        return str(self._post("/v1/refunds", body)["id"])

    def status(self, ident: str) -> str:
        return str(self.http.get(f"/v1/payments/{ident}").json()["status"])

    def advance(self, seconds: float) -> None:
        r = httpx.post(
            f"{self.base_url}/_sandbox/clock/advance", json={"seconds": seconds}, timeout=30
        )
        assert r.status_code == 200, r.text

    def history(self, payments: int, days: int = 30, seed: int = 1) -> dict[str, Any]:
        return self._post("/_sandbox/history", {"payments": payments, "days": days, "seed": seed})

    def raw(self, resource: str, obj: Any) -> None:
        self._post("/_sandbox/raw_records", {"resource": resource, "object": obj})

    def faults(self, **settings: Any) -> None:
        r = httpx.put(f"{self.base_url}/_sandbox/faults", json=settings, timeout=10)
        assert r.status_code == 200, r.text

    def clear_faults(self) -> None:
        httpx.delete(f"{self.base_url}/_sandbox/faults", timeout=10)

    def connect(self, cache_dir: Path, **options: Any) -> Gateway:
        return gateway.connect(
            self.key, self.base_url, cache_dir=cache_dir, account="shop", **options
        )


def fresh(shop: Shop, tmp_path: Path, name: str = "fresh") -> dict[str, pd.DataFrame]:
    """A full fetch into a new cache: what the gateway says now."""
    with shop.connect(tmp_path / name) as gw:
        result = gw.sync(full=True)
        assert result.complete and result.rejected == 0, result
        return {r: gw._dataset(r).read() for r in ("payments", "refunds")}  # type: ignore[arg-type]


def assert_same(cached: pd.DataFrame, expected: pd.DataFrame) -> None:
    """Same rows, one per id, equal in every canonical column."""
    assert cached["id"].is_unique
    a = cached.sort_values("id", ignore_index=True)
    b = expected.sort_values("id", ignore_index=True)
    pd.testing.assert_frame_equal(a, b)
