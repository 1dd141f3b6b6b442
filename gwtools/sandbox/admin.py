"""The sandbox's admin API under ``/_sandbox/`` (not part of the gateway's interface).

Plain JSON; calls about one account authenticate with its key (``Authorization: Bearer``).
See docs/sandbox.md for every endpoint.
"""

from __future__ import annotations

import asyncio
import functools
import math
from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from gwtools.sandbox import errors, faults, params
from gwtools.sandbox.auth import Auth, parse_networks
from gwtools.sandbox.clock import ClockRangeError, parse_instant
from gwtools.sandbox.gateway import Gateway
from gwtools.sandbox.ratelimit import RateLimiter

router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _json(obj: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(obj), status, media_type="application/json")


def _gw(request: Request) -> Gateway:
    gw: Gateway = request.app.state.gateway
    return gw


def _auth(request: Request) -> Auth:
    """The account a call is about: its key, valid and unexpired (IP allowlists do not apply)."""
    gw = _gw(request)
    header = request.headers.get("authorization", "")
    scheme, _, key = header.partition(" ")
    auth = gw.keys.lookup(key.strip()) if scheme.lower() == "bearer" else None
    if auth is None or (auth.expires_at is not None and gw.clock.now() >= auth.expires_at):
        raise errors.auth_error(
            "This admin call needs 'Authorization: Bearer <a valid key of the account>'."
        )
    return auth


async def _body(request: Request, allowed: tuple[str, ...]) -> dict[str, Any]:
    body = params.parse_json(await request.body(), allow_empty=True)
    params.reject_unknown(body, allowed)
    return body


@router.get("")
async def info(request: Request) -> Response:
    gw = _gw(request)
    return _json(
        {
            "variant": gw.variant,
            "base_url": gw.base_url,
            "clock": gw.clock.describe(),
            "rate_limits": request.app.state.limiter.settings(),
        }
    )


@router.post("/accounts")
async def create_account(request: Request) -> Response:
    await _body(request, ())  # takes no fields: refuse any rather than ignore them
    return _json(_gw(request).create_account(), 201)


@router.post("/keys/roll")
async def roll_key(request: Request) -> Response:
    auth, gw = _auth(request), _gw(request)
    await _body(request, ())
    new, old_expires = gw.roll_key(auth)
    name = "secret_key" if auth.kind == "secret" else "publishable_key"
    # Unix seconds are whole elsewhere; rounded up so the old key is past its grace at that second
    return _json({name: new, "old_key_expires_at": math.ceil(old_expires)})


@router.put("/keys/allowlist")
async def set_allowlist(request: Request) -> Response:
    auth, gw = _auth(request), _gw(request)
    body = await _body(request, ("ips",))
    # only [] lifts the allowlist: a missing ips, null, "" or 0 must not drop it unnoticed
    if body.get("ips") is None:
        raise errors.ApiError(
            400,
            "invalid_request_error",
            "parameter_missing",
            'Missing required parameter: ips. Send {"ips": ["10.0.0.0/8", ...]}, or '
            '{"ips": []} to lift the allowlist.',
            param="ips",
        )
    ips = body["ips"]
    parse_networks(ips)
    gw.set_allowlist(auth, ips)
    return _json({"ips": ips})


@router.get("/clock")
async def get_clock(request: Request) -> Response:
    return _json(_gw(request).clock.describe())


@router.post("/clock")
async def set_clock(request: Request) -> Response:
    gw = _gw(request)
    body = await _body(request, ("now",))
    value = body.get("now")
    if value is None:
        raise errors.missing("now")
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise errors.invalid(
            "now",
            "Invalid now: must be an ISO 8601 string (e.g. 2026-01-01T00:00:00Z) or Unix "
            "seconds (a number).",
        )
    try:
        instant = parse_instant(value)
    except (ValueError, OverflowError):
        raise errors.invalid(
            "now", f"Invalid now {value!r}; expected ISO 8601 or Unix seconds."
        ) from None
    try:
        gw.clock.set(instant)
    except ClockRangeError as exc:
        raise errors.invalid("now", str(exc)) from None
    return await _settle(gw)


async def _settle(gw: Gateway) -> Response:
    """Apply what became due, wait for due webhooks to be attempted, answer the clock."""
    gw.apply_due()
    await gw.webhooks.flush()
    return _json(gw.clock.describe())


@router.post("/clock/advance")
async def advance_clock(request: Request) -> Response:
    gw = _gw(request)
    body = await _body(request, ("seconds",))
    seconds = body.get("seconds")
    if seconds is None:
        raise errors.missing("seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise errors.invalid("seconds", "seconds must be a number >= 0.")
    try:
        gw.clock.advance(float(seconds))
    except ClockRangeError as exc:
        raise errors.invalid("seconds", str(exc)) from None
    return await _settle(gw)


@router.get("/rate_limits")
async def get_rate_limits(request: Request) -> Response:
    return _json(request.app.state.limiter.settings())


@router.put("/rate_limits")
async def put_rate_limits(request: Request) -> Response:
    limiter: RateLimiter = request.app.state.limiter
    body = await _body(request, ("enabled", "all", "create", "refunds"))
    enabled = body.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise errors.invalid("enabled", "enabled must be true or false.")
    figures = {n: params.integer(body, n, high=1_000_000) for n in ("all", "create", "refunds")}
    limiter.configure(enabled=enabled, **figures)
    return _json(limiter.settings())


@router.post("/webhook_endpoints")
async def add_endpoint(request: Request) -> Response:
    auth, gw = _auth(request), _gw(request)
    body = await _body(request, ("url",))
    url = params.url(body, "url", required=True)
    assert url is not None
    return _json(gw.add_endpoint(auth, url), 201)


@router.get("/webhook_deliveries")
async def deliveries(request: Request) -> Response:
    auth, gw = _auth(request), _gw(request)
    return _json({"data": gw.deliveries.list(auth.account, auth.livemode)})


@router.post("/raw_records")
async def raw_record(request: Request) -> Response:
    auth, gw = _auth(request), _gw(request)
    body = await _body(request, ("resource", "object"))
    resource = params.text(body, "resource", required=True, choices=("payments", "refunds"))
    if "object" not in body:
        raise errors.missing("object")
    assert resource is not None
    gw.add_raw(auth, resource, body["object"])
    return _json({"stored": True, "resource": resource}, 201)


@router.post("/customers")
async def create_customer(request: Request) -> Response:
    auth, gw = _auth(request), _gw(request)
    body = await _body(request, ("email", "name", "metadata"))
    return Response(gw.create_customer(auth, body), 201, media_type="application/json")


@router.post("/history")
async def history(request: Request) -> Response:
    from gwtools.sandbox.history import generate_history

    auth, gw = _auth(request), _gw(request)
    body = await _body(request, ("payments", "days", "seed"))
    payments = params.integer(body, "payments", required=True, high=1_000_000)
    days = params.integer(body, "days", high=3650) or 90
    seed = params.integer(body, "seed", low=0, high=2**63) or 0
    assert payments is not None
    # in a worker thread, so that the server keeps answering while a large history is built
    summary = await asyncio.to_thread(
        functools.partial(
            generate_history,
            gw,
            payments=payments,
            days=days,
            seed=seed,
            account=auth.account,
            livemode=auth.livemode,
        )
    )
    return _json(summary, 201)


@router.post("/reset")
async def reset(request: Request) -> Response:
    gw = _gw(request)
    await _body(request, ())
    gw.reset()
    request.app.state.limiter.reset()
    faults.reset(request.scope)
    return _json({"reset": True})
