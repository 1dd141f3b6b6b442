"""``Sandbox``: the gateway served by a real uvicorn server in a background thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import uvicorn

from gwtools.sandbox.app import create_app
from gwtools.sandbox.auth import mask
from gwtools.sandbox.clock import Clock
from gwtools.sandbox.errors import SandboxConfigError
from gwtools.sandbox.gateway import Gateway
from gwtools.sandbox.store import Store

#: How long the sandbox keeps an idle connection open: past httpx's 5 s keep-alive expiry.
KEEP_ALIVE_SECONDS = 65


class Sandbox:
    """A local gateway over real HTTP, for tests, notebooks and the demo.

    Example::

        with Sandbox("A", seed_payments=500, now=datetime(2026, 1, 1, tzinfo=UTC),
                     incidents=["card-testing", "bank-outage:MB2U0227"]) as sb:
            httpx.get(f"{sb.base_url}/v1/payments",
                      headers={"Authorization": f"Bearer {sb.secret_key}"})
    """

    def __init__(
        self,
        variant: Literal["A", "B"] = "B",
        *,
        db: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        rate_limits: bool = True,
        latency_ms: float = 0,
        seed_payments: int = 0,
        days: int = 90,
        seed: int = 0,
        now: datetime | None = None,
        expiry_minutes: float | None = 60,
        progress: Callable[[int], None] | None = None,
        incidents: Sequence[str] = (),
    ) -> None:
        from gwtools.sandbox.history import parse_incident

        # Checked here, before anything starts, so a typo fails at once.
        self._incidents = [parse_incident(i) for i in incidents]
        if self._incidents and not seed_payments:
            raise SandboxConfigError(
                "incidents are placed in the generated history: give seed_payments as well"
            )
        #: The generated history's summary (counts, incident windows); None before start().
        self.history: dict[str, Any] | None = None
        self.variant = variant
        self.host = host
        self.port = port
        self.gateway = Gateway(Store(db), Clock(now), variant, expiry_minutes=expiry_minutes)
        self.app = create_app(
            variant, rate_limits=rate_limits, latency_ms=latency_ms, gateway=self.gateway
        )
        self._seed = (seed_payments, days, seed)
        self._progress = progress
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        acct = self.gateway.default_account
        self.account_id: str = acct["id"]
        self.secret_key: str = acct["secret_key"]
        self.publishable_key: str = acct["publishable_key"]
        self.live_secret_key: str = acct["live_secret_key"]
        self.live_publishable_key: str = acct["live_publishable_key"]
        self.webhook_secret: str = acct["webhook_secret"]

    def __repr__(self) -> str:
        return (
            f"Sandbox(variant={self.variant!r}, base_url={self.base_url!r}, "
            f"secret_key={mask(self.secret_key)!r})"
        )

    @property
    def base_url(self) -> str:
        """``http://host:port`` without ``/v1``; API paths are ``/v1/...``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def clock(self) -> Clock:
        return self.gateway.clock

    def start(self) -> Sandbox:
        """Bind, seed the history if asked, serve; return once connections are accepted."""
        if self._thread is not None:
            return self
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.listen(2048)
        except BaseException:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self._socket = sock
        try:
            self._seed_and_serve(sock)
        except BaseException:
            # Seeding interrupted (Ctrl-C) or the server not starting: nothing may keep
            # listening on the port, or a rerun on the same --port fails with "in use".
            self.stop()
            raise
        return self

    def _seed_and_serve(self, sock: socket.socket) -> None:
        self.gateway.set_base_url(self.base_url)
        payments, days, seed = self._seed
        if payments:
            from gwtools.sandbox.history import generate_history

            self.history = generate_history(
                self.gateway,
                payments=payments,
                days=days,
                seed=seed,
                progress=self._progress,
                incidents=self._incidents,
            )
        config = uvicorn.Config(
            self.app,
            loop="uvloop",
            http="httptools",
            lifespan="on",
            log_level="warning",
            access_log=False,
            # Longer than any client keeps an idle connection (httpx: 5 s, uvicorn's default
            # too): with equal times, a request sent on a connection as the server closes it
            # fails with "Server disconnected without sending a response".
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name=f"gwtools-sandbox-{self.port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the sandbox server did not start; see the log above")
            time.sleep(0.005)

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> Sandbox:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and close the database: nothing, not even SQLite's write-ahead log
        (which holds the issued keys), stays open. The sandbox cannot be started again."""
        self.stop()
        self.gateway.store.close()

    def headers(self, key: str | None = None) -> dict[str, Any]:
        """``Authorization`` header for ``key`` (default: the test secret key)."""
        return {"Authorization": f"Bearer {key or self.secret_key}"}
