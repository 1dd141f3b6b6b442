"""``create_app``: the sandbox gateway as an ASGI (FastAPI) application."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from gwtools.sandbox import admin, errors, pages, routes
from gwtools.sandbox.clock import Clock
from gwtools.sandbox.gateway import Gateway
from gwtools.sandbox.idempotency import Idempotency
from gwtools.sandbox.middleware import GatewayMiddleware
from gwtools.sandbox.openapi import build_openapi
from gwtools.sandbox.ratelimit import RateLimiter
from gwtools.sandbox.store import Store

log = logging.getLogger("gwtools.sandbox")
TICK_SECONDS = 0.5


def _error_response(exc: errors.ApiError) -> Response:
    return Response(exc.body(), exc.status, media_type="application/json")


def create_app(
    variant: Literal["A", "B"] = "B",
    *,
    db: str | Path | None = None,
    rate_limits: bool = True,
    latency_ms: float = 0,
    now: datetime | None = None,
    expiry_minutes: float | None = 60,
    base_url: str | None = None,
    gateway: Gateway | None = None,
) -> FastAPI:
    """The sandbox gateway as an ASGI app (serve it with uvicorn, or use httpx.ASGITransport).

    ``now`` freezes the sandbox clock at that instant (advance it with the admin API);
    without it the clock follows real time. ``db`` is a SQLite file, or None for memory.

    Example::

        app = create_app("A", now=datetime(2026, 1, 1, tzinfo=UTC))
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://sb")
    """
    if gateway is None:
        gateway = Gateway(
            Store(db), Clock(now), variant, expiry_minutes=expiry_minutes, base_url=base_url
        )

    idempotency = Idempotency(gateway.store)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(_ticker(gateway, idempotency))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app = FastAPI(
        title=f"Payment gateway sandbox (variant {gateway.variant})",
        version="2024-01-01",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI would load its assets from a CDN: no run-time downloads
        redoc_url=None,
    )
    limiter = RateLimiter(enabled=rate_limits)
    app.state.gateway = gateway
    app.state.limiter = limiter
    app.router.routes.extend(routes.routes)
    app.include_router(pages.router)
    app.include_router(admin.router)
    document = build_openapi(gateway.variant)
    app.openapi = lambda: document  # type: ignore[method-assign]

    @app.exception_handler(errors.ApiError)
    async def api_error(request: Request, exc: errors.ApiError) -> Response:
        return _error_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        allowed = _allowed(app, request.scope) if exc.status_code == 405 else []
        if exc.status_code == 405:
            err = errors.ApiError(
                405,
                "invalid_request_error",
                "method_not_allowed",
                f"{request.method} is not allowed on {request.url.path}; use "
                f"{' or '.join(allowed)}.",
            )
        elif exc.status_code == 404:
            err = errors.unknown_url(request.method, request.url.path)
        else:
            err = errors.ApiError(
                exc.status_code, "invalid_request_error", "parameter_invalid", str(exc.detail)
            )
        response = _error_response(err)
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(allowed)
        return response

    @app.exception_handler(Exception)
    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("sandbox error on %s %s", request.method, request.url.path)
        return _error_response(errors.server_error())

    # Fault injection (gwtools/sandbox/faults.py): innermost, so the gateway middleware adds
    # Service-Version and rate-limit headers to injected responses too.
    try:
        from gwtools.sandbox import faults
    except ImportError:  # pragma: no cover - faults is part of the package
        faults = None  # type: ignore[assignment]
    if faults is not None:
        app.include_router(faults.router)
        app.add_middleware(
            faults.FaultInjector, baseline=faults.FaultSettings(latency_ms=int(latency_ms))
        )
    app.add_middleware(GatewayMiddleware, gateway=gateway, limiter=limiter, idempotency=idempotency)
    return app


def _allowed(app: FastAPI, scope: Any) -> list[str]:
    """Every method some route accepts on this path (Starlette lists only the first route's)."""
    methods: set[str] = set()
    routes = list(app.router.routes)
    while routes:
        route = routes.pop()
        inner = getattr(route, "original_router", None)  # an included router
        if inner is not None:
            routes.extend(inner.routes)
            continue
        match, _ = route.matches(scope)
        route_methods = getattr(route, "methods", None)
        if match != Match.NONE and route_methods:
            methods |= set(route_methods)
    return sorted(methods - {"HEAD"})


async def _ticker(gateway: Gateway, idempotency: Idempotency) -> None:
    """Apply due transitions and send due webhooks while the clock runs on its own; now and
    then forget expired idempotency records (they are checked on use anyway)."""
    ticks = 0
    while True:
        await asyncio.sleep(TICK_SECONDS)
        ticks += 1
        try:
            gateway.apply_due()
            if ticks % 120 == 0:
                idempotency.purge(gateway.clock.now())
        except Exception:  # keep ticking: one bad record must not stop the sandbox
            log.exception("sandbox ticker failed")


def app_gateway(app: Any) -> Gateway:
    """The :class:`Gateway` behind an app made by :func:`create_app`."""
    gw: Gateway = app.state.gateway
    return gw
