"""Events and webhook delivery: stored events, signed POSTs, retries with back-off.

Each event goes to every webhook endpoint of its account and mode, and (variant A) to the
payment's ``callback_url`` signed with the account's webhook secret. A delivery is retried on
the sandbox clock (1 min, then x3 each time, at most 12 h apart) for up to 3 days.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
from typing import TYPE_CHECKING, Final
from urllib.parse import urlsplit, urlunsplit

import httpx

if TYPE_CHECKING:
    from gwtools.sandbox.gateway import Gateway

log = logging.getLogger("gwtools.sandbox.webhooks")
RETRY_WINDOW: Final = 3 * 24 * 3600
SIGNATURE_HEADER: Final = "Gateway-Signature"
#: The spec's event kinds: what ``GET /v1/events?type=`` may filter on.
EVENT_TYPES: Final = (
    "payment.succeeded",
    "payment.failed",
    "payment.canceled",
    "refund.created",
    "refund.failed",
    "customer.created",
    "customer.updated",
    "payment_method.attached",
    "payment_method.detached",
)


def _shown(url: str) -> str:
    """``url`` for a log line: receivers often put a token in the query string or the
    user:password part, and a log is no place for it."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Gateway-Signature`` value: ``t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def backoff(attempts: int) -> float:
    return float(min(60 * 3 ** (attempts - 1), 12 * 3600))


class Webhooks:
    """Sends due deliveries; ``kick`` schedules a run on the server's event loop."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._task: asyncio.Task[None] | None = None
        self._again = False

    def kick(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop in this thread: the server's ticker will send them
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = loop.create_task(self.run())

    async def run(self) -> None:
        """Send every due delivery (repeating while new ones become due)."""
        self._again = True
        while self._again:
            self._again = False
            due = self.gateway.take_due_deliveries()
            if due:
                # a client per batch: the loop may differ between calls (in-process transports)
                async with httpx.AsyncClient(timeout=10.0, follow_redirects=False) as client:
                    await asyncio.gather(*(self._send(client, *d) for d in due))
                # a batch is limited in size: more may be due (an attempt is never due again
                # at once, its retry waits a minute at least, so this ends)
                self._again = True

    async def flush(self) -> None:
        """Wait until every delivery due now has been attempted."""
        if self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        await self.run()

    async def _send(
        self, client: httpx.AsyncClient, rid: int, url: str, secret: str, body: bytes
    ) -> None:
        attempted = self.gateway.clock.now()
        stamp = int(attempted)
        headers = {
            "Content-Type": "application/json",
            SIGNATURE_HEADER: sign(secret, stamp, body),
            "User-Agent": "gwtools-sandbox-webhooks/1",
        }
        status: int | None = None
        error: str | None = None
        try:
            response = await client.post(url, content=body, headers=headers)
            status = response.status_code
        except Exception as exc:  # every failure to deliver is a failed attempt
            # not only httpx.HTTPError: an InvalidURL, or an IDNA error on an xn-- host,
            # uncaught, left the delivery 'sending' for ever and failed the whole batch
            error = f"{type(exc).__name__}: {exc}"
        ok = status is not None and 200 <= status < 300
        if not ok:
            log.info("webhook delivery %s to %s failed: %s", rid, _shown(url), status or error)
        self.gateway.delivery_done(rid, ok, status, error, attempted)
