"""The gateway's pure ASGI middleware for ``/v1``: auth, rate limits, versioning, idempotency.

Every ``/v1`` response, errors included, carries ``Service-Version`` and the three
``X-RateLimit-*`` headers.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gwtools.sandbox import errors
from gwtools.sandbox.faults import ConnectionDropped
from gwtools.sandbox.gateway import API_VERSION, DEPRECATED_VERSION, Gateway
from gwtools.sandbox.idempotency import Idempotency, fingerprint, key_problem
from gwtools.sandbox.params import MAX_BODY
from gwtools.sandbox.ratelimit import RateLimiter, Verdict

JSON = (b"content-type", b"application/json")
#: RFC 9745 Deprecation header: deprecated since 2024-01-01T00:00:00Z
DEPRECATION = (b"deprecation", b"@1704067200")
log = logging.getLogger("gwtools.sandbox")


def _rate_headers(v: Verdict) -> list[tuple[bytes, bytes]]:
    return [
        (b"x-ratelimit-limit", str(v.limit).encode()),
        (b"x-ratelimit-remaining", str(v.remaining).encode()),
        (b"x-ratelimit-reset", str(v.reset).encode()),
    ]


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [JSON, (b"content-length", str(len(body)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _limited(verdict: Verdict, extra: list[tuple[bytes, bytes]]) -> errors.ApiError:
    """The 429 of a request its bucket refused; adds ``Retry-After`` to ``extra``."""
    extra.append((b"retry-after", str(verdict.retry_after).encode()))
    return errors.ApiError(
        429,
        "rate_limit_error",
        "rate_limit_exceeded",
        f"Too many requests; retry after {verdict.retry_after} s.",
        retry_after=verdict.retry_after,
    )


class GatewayMiddleware:
    """Wraps the app: only ``/v1`` requests are touched."""

    def __init__(
        self, app: ASGIApp, gateway: Gateway, limiter: RateLimiter, idempotency: Idempotency
    ) -> None:
        self.app = app
        self.gateway = gateway
        self.limiter = limiter
        self.idem = idempotency

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1"):
            await self.app(scope, receive, send)
            return
        headers: dict[bytes, bytes] = dict(scope["headers"])
        version = headers.get(b"service-version", API_VERSION.encode()).strip()
        extra: list[tuple[bytes, bytes]] = [
            (b"x-request-id", b"req_" + os.urandom(12).hex().encode()),
            (
                b"service-version",
                version
                if version in (API_VERSION.encode(), DEPRECATED_VERSION.encode())
                else API_VERSION.encode(),
            ),
        ]
        if version == DEPRECATED_VERSION.encode():
            extra.append(DEPRECATION)
        client = scope.get("client")
        client_ip = client[0] if client else None
        gw = self.gateway
        method, path = scope["method"], scope["path"]
        try:
            auth_header = headers.get(b"authorization")
            auth = gw.keys.authenticate(
                None if auth_header is None else auth_header.decode("latin-1"),
                client_ip,
                gw.clock.now(),
            )
        except errors.ApiError as exc:
            # a refused key counts against the client's address, and is limited like a key
            verdict = self.limiter.check(f"ip:{client_ip}", method, path)
            answer = exc if verdict.allowed else _limited(verdict, extra)
            await _respond(send, answer.status, answer.body(), extra + _rate_headers(verdict))
            return
        verdict = self.limiter.check(auth.key, method, path)
        error: errors.ApiError | None = None
        if not verdict.allowed:
            error = _limited(verdict, extra)
        elif len(path) > len("/v1/") and path.endswith("/"):
            # Starlette would answer 307 to the path without the slash: an empty body no JSON
            # client can read, and a pk_ key would meet a 401 there instead of the redirect
            error = errors.unknown_url(method, path)
        elif auth.kind == "publishable" and not (method == "POST" and path == "/v1/payments"):
            error = errors.auth_error(
                "A publishable key can only create payments; use a secret "
                "key (sk_…) for this request."
            )
        elif version not in (API_VERSION.encode(), DEPRECATED_VERSION.encode()):
            error = errors.invalid(
                "Service-Version",
                f"Unsupported Service-Version "
                f"{version.decode('latin-1')!r}; use {API_VERSION} (current) "
                f"or {DEPRECATED_VERSION} (deprecated).",
            )
        else:
            length = headers.get(b"content-length")
            if length is not None and length.isdigit() and int(length) > MAX_BODY:
                error = errors.ApiError(
                    413,
                    "invalid_request_error",
                    "parameter_invalid",
                    f"The request body is {int(length)} bytes; the limit is {MAX_BODY}.",
                )
        if error is not None:
            await _respond(send, error.status, error.body(), extra + _rate_headers(verdict))
            return
        scope.setdefault("state", {})["auth"] = auth
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                # the rate-limit figures as the response leaves, not as the request came in
                rate = _rate_headers(self.limiter.current(verdict))
                message["headers"] = list(message.get("headers", [])) + extra + rate
            await send(message)

        try:
            ikey = headers.get(b"idempotency-key")
            if ikey is not None and method == "POST":
                await self._idempotent(scope, receive, send_with_headers, auth.key, ikey)
            else:
                await self.app(scope, receive, send_with_headers)
        except ConnectionDropped:
            raise  # an injected drop means no response at all, not a 500
        except Exception:
            # Starlette's outermost handler would answer without the headers every /v1
            # response carries; once the response has started, nothing can be added
            if started:
                raise
            log.exception("sandbox error on %s %s", method, path)
            await _respond(send_with_headers, 500, errors.server_error().body(), [])

    async def _idempotent(
        self, scope: Scope, receive: Receive, send: Send, key: str, ikey: bytes
    ) -> None:
        problem = key_problem(ikey)
        if problem is not None:
            await _respond(send, 400, errors.invalid("Idempotency-Key", problem).body(), [])
            return
        body = await _read_body(receive)
        fp = fingerprint(body, scope.get("query_string", b""))
        name = f"{key}|{scope['method']} {scope['path']}|{ikey.decode('latin-1')}"
        # Wait while another request with this key runs. Again after it ends: if it stored no
        # answer (a 5xx or 429), the next waiter runs in its place and the others wait for that.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 30
        while (running := self.idem.in_flight.get(name)) is not None:
            try:
                await asyncio.wait_for(running.wait(), max(0.0, deadline - loop.time()))
            except TimeoutError:
                err = errors.ApiError(
                    409,
                    "invalid_request_error",
                    "idempotency_key_in_use",
                    "A request with this Idempotency-Key is still running; retry this one "
                    "with the same key once it has answered, to get its result.",
                )
                await _respond(send, 409, err.body(), [])
                return
        now = self.gateway.clock.now()
        found = self.idem.lookup(name, now)
        if found is not None:
            old_fp, status, headers, old_body = found
            if old_fp != fp:
                err = errors.ApiError(
                    409,
                    "invalid_request_error",
                    "idempotency_key_reused",
                    "This Idempotency-Key was used with a different request (another body or "
                    "query string); resend the first request unchanged to get its answer, or "
                    "use a new key for a new request.",
                )
                await _respond(send, 409, err.body(), [])
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
                    + [(b"idempotent-replayed", b"true")],
                }
            )
            await send({"type": "http.response.body", "body": old_body})
            return
        done = asyncio.Event()
        self.idem.in_flight[name] = done
        captured: dict[str, Any] = {"body": []}
        sent = False

        async def replay_receive() -> Message:
            nonlocal sent
            if sent:
                return await receive()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                captured["status"] = message["status"]
                captured["headers"] = [
                    [k.decode("latin-1"), v.decode("latin-1")]
                    for k, v in message.get("headers", [])
                ]
            elif message["type"] == "http.response.body":
                captured["body"].append(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, replay_receive, capture)
            status = captured.get("status", 500)
            if status < 500 and status != 429:
                self.idem.save(
                    name, fp, status, captured["headers"], b"".join(captured["body"]), now
                )
        finally:
            done.set()
            self.idem.in_flight.pop(name, None)
