"""Helpers for the sandbox's own tests: create payments in either variant and drive them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gwtools.sandbox import Sandbox

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
SUCCESS_URL = "https://shop.example/ok"
CANCEL_URL = "https://shop.example/cancel"
RETURN_URL = "https://shop.example/return"
#: for one-off calls; loopback HTTP needs no TLS, so skip loading the CA bundle (slow)
LOOPBACK = httpx.Client(verify=False, timeout=10)


@pytest.fixture(scope="session", autouse=True)
def _close_loopback() -> Iterator[None]:
    yield
    LOOPBACK.close()


class Payer:
    """Creates payments the way a merchant and a customer would, in the sandbox's variant."""

    def __init__(
        self, sandbox: Sandbox, http: httpx.Client, account: dict[str, Any] | None = None
    ) -> None:
        self.sb = sandbox
        self.http = http
        self.account: dict[str, Any] = account or {}
        self.variant = sandbox.variant

    def create(
        self,
        amount: int = 1000,
        *,
        card: str | None = "4242424242424242",
        bank: str | None = None,
        capture: str = "automatic",
        expect: int | None = None,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> httpx.Response:
        """POST /v1/payments (B with the given card or bank; A a plain checkout)."""
        body: dict[str, Any] = {"amount": amount, **extra}
        if self.variant == "A":
            body.setdefault("success_url", SUCCESS_URL)
            body.setdefault("cancel_url", CANCEL_URL)
        else:
            body.setdefault("currency", "myr")
            body.setdefault("capture_method", capture)
            if "payment_method" not in body:
                if bank is not None:
                    body.setdefault(
                        "payment_method_data", {"type": "fpx", "fpx": {"bank_code": bank}}
                    )
                    body.setdefault("return_url", RETURN_URL)
                else:
                    body.setdefault(
                        "payment_method_data", {"type": "card", "card": {**CARD, "number": card}}
                    )
                    if card == "4000002500003155":
                        body.setdefault("return_url", RETURN_URL)
        r = self.http.post("/v1/payments", json=body, headers=headers)
        if expect is not None:
            assert r.status_code == expect, r.text
        return r

    def checkout(
        self,
        pid: str,
        *,
        card: str | None = "4242424242424242",
        bank: str | None = None,
        capture: str = "automatic",
        action: str = "pay",
    ) -> httpx.Response:
        """Variant A: the customer's form POST on the hosted checkout page."""
        form = {"action": action, "capture_method": capture}
        if bank is not None:
            form.update(method="fpx", bank_code=bank)
        else:
            form.update(
                method="card", number=card or "", exp_month="12", exp_year="2030", cvc="123"
            )
        return self.http.post(f"/pay/{pid}", data=form, follow_redirects=False)

    def act(self, pid: str, action: str) -> httpx.Response:
        return self.http.post(f"/pay/{pid}", data={"action": action}, follow_redirects=False)

    def pay(
        self,
        amount: int = 1000,
        *,
        card: str | None = "4242424242424242",
        bank: str | None = None,
        capture: str = "automatic",
        **extra: Any,
    ) -> dict[str, Any]:
        """A payment that went through the method (whatever the outcome), as now stored.

        With ``bank`` the customer also presses the bank page's ``complete`` (on a test
        bank's page its one button, which ends the page the test bank's way)."""
        r = self.create(amount, card=card, bank=bank, capture=capture, **extra)
        if self.variant == "B" and bank is None:
            body = r.json()
            return body["error"]["payment"] if r.status_code == 402 else body
        assert r.status_code == 201, r.text
        pid = r.json()["id"]
        if self.variant == "A":
            page = self.checkout(pid, card=card, bank=bank, capture=capture)
            assert page.status_code == 303, page.text
        if bank is not None:
            assert self.get(pid)["status"] == self.status("requires_action")
            done = self.act(pid, "complete")
            assert done.status_code == 303, done.text
        return self.get(pid)

    def get(self, pid: str) -> dict[str, Any]:
        r = self.http.get(f"/v1/payments/{pid}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        return body

    def advance(self, seconds: float) -> None:
        r = self.http.post("/_sandbox/clock/advance", json={"seconds": seconds})
        assert r.status_code == 200, r.text

    def status(self, name: str) -> str:
        """A variant-neutral status name -> the served variant's raw value."""
        table = {
            "A": {
                "succeeded": "captured",
                "canceled": "cancelled",
                "requires_action": "pending",
                "processing": "pending",
            },
            "B": {},
        }
        return table[self.variant].get(name, name)


@pytest.fixture
def payer(sandbox: Sandbox, http: httpx.Client, account: dict[str, Any]) -> Payer:
    return Payer(sandbox, http, account)


def _payer(sb: Sandbox) -> Iterator[Payer]:
    acct = LOOPBACK.post(f"{sb.base_url}/_sandbox/accounts").json()
    with httpx.Client(
        base_url=sb.base_url,
        timeout=10,
        verify=False,
        headers={"Authorization": f"Bearer {acct['secret_key']}"},
    ) as http:
        yield Payer(sb, http, acct)


@pytest.fixture
def payer_a(sandbox_a: Sandbox) -> Iterator[Payer]:
    """A Payer on the variant A server only (for rules of one variant)."""
    yield from _payer(sandbox_a)


@pytest.fixture
def payer_b(sandbox_b: Sandbox) -> Iterator[Payer]:
    yield from _payer(sandbox_b)


def error_of(r: httpx.Response) -> dict[str, Any]:
    body = r.json()
    assert set(body) == {"error"}, body
    err: dict[str, Any] = body["error"]
    assert {"type", "code", "message"} <= set(err), err
    return err


class Receiver:
    """A webhook receiver on loopback that records requests; ``fail_next`` makes it answer 500."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.fail_next = 0
        self.always_fail = False
        #: when set, each request is recorded at once but answered only once it is set
        self.hold: threading.Event | None = None
        # notified on every request, so ``wait`` wakes when one arrives instead of polling
        self.lock = threading.Condition()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with outer.lock:
                    outer.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                    failing = outer.always_fail or outer.fail_next > 0
                    if outer.fail_next > 0:
                        outer.fail_next -= 1
                    outer.lock.notify_all()
                hold = outer.hold
                if hold is not None:
                    hold.wait(60)
                self.send_response(500 if failing else 200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def wait(self, count: int, timeout: float = 60.0) -> list[tuple[dict[str, str], bytes]]:
        """The first ``count`` requests, once they have arrived (``timeout`` only guards
        against a delivery that never comes; a busy machine just makes it slower)."""
        with self.lock:
            if not self.lock.wait_for(lambda: len(self.requests) >= count, timeout):
                raise AssertionError(f"expected {count} webhook requests, got {len(self.requests)}")
            return list(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()
