"""Fault injection for the sandbox: 500s, dropped connections, latency, forced 429s, and the
data faults users report against connectors (short pages, late visibility, stale
``updated_at``, rows inserted while paging, truncated and garbled bodies).

Use it to see how a client behaves when the gateway misbehaves. Faults touch only ``/v1/``
requests, never the ``/_sandbox/`` admin API, so a test can always turn them off again::

    PUT /_sandbox/faults   {"error_rate": 0.2, "latency_ms": 50, "seed": 7}
    PUT /_sandbox/faults   {"drop_rate": 1, "count": 3}      # the next 3 requests are dropped
    PUT /_sandbox/faults   {"short_page_rate": 0.1, "late_visibility_s": 30, "seed": 1}
    GET /_sandbox/faults                                      # settings and what was injected
    DELETE /_sandbox/faults                                   # back to the start-up settings

``create_app`` mounts both, the middleware innermost so that the gateway's own middleware
adds ``X-Request-Id``, ``Service-Version`` and the rate-limit headers to injected responses::

    app.include_router(faults.router)
    app.add_middleware(FaultInjector, baseline=FaultSettings(latency_ms=20))

:class:`FaultInjector` is a pure ASGI middleware: with no fault set it costs one attribute
check per request, so it never slows the sandbox down.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any
from urllib.parse import parse_qsl, urlencode

import orjson
from fastapi import APIRouter, Depends, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from starlette.types import ASGIApp, Receive, Scope, Send

from gwtools.sandbox import errors, params

__all__ = [
    "ConnectionDropped",
    "FaultInjector",
    "FaultSettings",
    "FaultState",
    "FaultStatus",
    "reset",
    "router",
]

#: The scope key under which the middleware hands its state to the admin router.
SCOPE_KEY = "gwtools.faults"

Rate = Annotated[float, Field(ge=0.0, le=1.0)]
Millis = Annotated[int, Field(ge=0, le=120_000)]

# Paths whose GET answers a list envelope: the only ones that get a non-JSON 200.
_LIST_PATHS = frozenset({"/v1/payments", "/v1/refunds", "/v1/events"})
# Query parameters that filter lists on creation time (docs/sandbox.md, Conventions).
_TIME_FILTERS = frozenset({b"from", b"to"})
# Lists whose rows the data faults change (events are left alone).
_DATA_LISTS = frozenset({"/v1/payments", "/v1/refunds"})
#: The scope key under which a list request gets its late-visibility setting (delay, seed):
#: the list route passes it to the store, which hides rows not yet visible.
VISIBILITY_KEY = "gwtools.visibility"
# Characters a garbled id gets: never valid in an id, and safe inside a JSON string.
_GARBLE = "{}|~^!#"


class FaultSettings(BaseModel):
    """What goes wrong, and how often. Every setting defaults to off.

    The four ``*_rate`` shares are exclusive outcomes of one draw per request (a request is
    dropped, or answered 500, or 429, or non-JSON, or served normally), so their sum is at
    most 1. Latency is added before the outcome, to every ``/v1/`` request.
    """

    # strict: JSON types as written; lax mode would read "yes" as true, true as 1 ms and
    # 10.0 as 10 (integer settings take integer literals, as everywhere in the sandbox)
    model_config = ConfigDict(extra="forbid", strict=True)

    error_rate: Rate = Field(default=0.0, description="share of requests answered 500 api_error")
    drop_rate: Rate = Field(default=0.0, description="share of requests whose connection is closed")
    force_429_rate: Rate = Field(default=0.0, description="share of requests answered 429")
    non_json_rate: Rate = Field(
        default=0.0, description="share of GET list requests answered 200 with an HTML body"
    )
    latency_ms: Millis = Field(default=0, description="delay added to every request")
    latency_jitter_ms: Millis = Field(
        default=0, description="uniform random delay on top, 0..jitter"
    )
    spike_rate: Rate = Field(default=0.0, description="share of requests that get spike_ms more")
    spike_ms: Millis = Field(default=0, description="extra delay of a spike")
    ignore_time_filters: bool = Field(
        default=False, description="lists ignore their from/to filters, as some gateways do"
    )
    truncated_rate: Rate = Field(
        default=0.0,
        description="share of GET list requests answered 200 with the JSON body cut short",
    )
    short_page_rate: Rate = Field(
        default=0.0,
        description="share of payment/refund list pages answered 200 with 1-10 trailing items "
        "dropped (at least one item is kept; the envelope is unchanged)",
    )
    garbled_id_rate: Rate = Field(
        default=0.0,
        description="share of payment/refund list pages where one character of one record's "
        "id is replaced by one ids never hold (e.g. '{')",
    )
    late_visibility_s: int = Field(
        default=0,
        ge=0,
        le=86_400,
        description="payments and refunds appear in lists only 0..N seconds (sandbox clock, "
        "fixed per row by the seed) after their creation time",
    )
    stale_updated_at: bool = Field(
        default=False,
        description="payments' updated_at stays at their creation time: status changes leave "
        "it unchanged",
    )
    insert_rate: Rate = Field(
        default=0.0,
        description="share of payment list requests before which a new payment is created in "
        "the caller's account (rows inserted while a client pages)",
    )
    seed: int | None = Field(
        default=None, description="seed of the fault sequence, for reproducibility"
    )
    count: int | None = Field(
        default=None,
        ge=1,
        description="apply to the next `count` requests only, then return to the start-up settings",
    )

    @model_validator(mode="after")
    def _shares_fit(self) -> FaultSettings:
        total = (
            self.error_rate
            + self.drop_rate
            + self.force_429_rate
            + self.non_json_rate
            + self.truncated_rate
        )
        if total > 1.0 + 1e-9:
            raise ValueError(
                "error_rate + drop_rate + force_429_rate + non_json_rate + truncated_rate must "
                f"be at most 1 (got {total:g}): each request gets at most one of these faults"
            )
        return self

    @property
    def rewrites(self) -> bool:
        """Whether list or payment bodies are changed on their way out."""
        return bool(self.short_page_rate or self.garbled_id_rate or self.stale_updated_at)

    @property
    def active(self) -> bool:
        """Whether these settings change anything at all."""
        return bool(
            self.error_rate
            or self.drop_rate
            or self.force_429_rate
            or self.non_json_rate
            or self.latency_ms
            or self.latency_jitter_ms
            or (self.spike_rate and self.spike_ms)
            or self.ignore_time_filters
            or self.truncated_rate
            or self.rewrites
            or self.late_visibility_s
            or self.insert_rate
        )


class FaultStatus(BaseModel):
    """The admin API's answer: current settings and what has been injected since they were set."""

    settings: FaultSettings
    active: bool = Field(description="whether any fault is currently on")
    remaining: int | None = Field(description="requests left of a `count` budget, else null")
    seen: int = Field(description="/v1 requests seen while faults were on")
    injected: dict[str, int] = Field(
        description="requests per fault kind: error, drop, rate_limit, non_json, truncated, "
        "delayed, short_page, garbled_id, stale_updated_at, inserted, late_visibility"
    )


class ConnectionDropped(ConnectionError):
    """Raised instead of dropping the connection when the server gives no socket to close.

    Under uvicorn the middleware closes the connection itself and the client sees it go away
    without a response; under an in-process transport (``httpx.ASGITransport``) this exception
    reaches the caller instead.
    """


@dataclass
class FaultState:
    """The live fault settings of one sandbox, shared by the middleware and the admin router."""

    baseline: FaultSettings = field(default_factory=FaultSettings)
    settings: FaultSettings = field(init=False)
    remaining: int | None = field(init=False, default=None)
    seen: int = field(init=False, default=0)
    injected: dict[str, int] = field(init=False)
    # Read on every request: kept as a plain attribute so the no-fault path stays one check.
    active: bool = field(init=False, default=False)
    _rng: random.Random = field(init=False, repr=False)
    # The data faults draw from their own sequence, so adding them leaves the seeded
    # sequence of the older faults as it was.
    _data_rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.apply(self.baseline)

    def apply(self, settings: FaultSettings) -> None:
        """Replace the settings (fields not given are off) and restart the counters."""
        self.settings = settings
        self.remaining = settings.count
        self.seen = 0
        self.injected = dict.fromkeys(_KINDS, 0)
        self._rng = random.Random(settings.seed)
        self._data_rng = random.Random(None if settings.seed is None else f"data-{settings.seed}")
        self.active = settings.active

    def reset(self) -> None:
        """Return to the start-up settings (the sandbox's ``--latency-ms``, or nothing)."""
        self.apply(self.baseline)

    def status(self) -> FaultStatus:
        return FaultStatus(
            settings=self.settings,
            active=self.active,
            remaining=self.remaining,
            seen=self.seen,
            injected=dict(self.injected),
        )

    def draw(self, is_list: bool) -> tuple[str | None, float]:
        """Pick this request's fault (or None) and its added delay in seconds."""
        s = self.settings
        rng = self._rng
        # Always three draws, whatever the outcome: a seed then fixes the whole sequence.
        outcome, jitter, spike = rng.random(), rng.random(), rng.random()
        delay_ms = s.latency_ms + jitter * s.latency_jitter_ms
        if spike < s.spike_rate:
            delay_ms += s.spike_ms
        fault: str | None = None
        for kind, share in (
            ("drop", s.drop_rate),
            ("error", s.error_rate),
            ("rate_limit", s.force_429_rate),
            ("non_json", s.non_json_rate if is_list else 0.0),
            ("truncated", s.truncated_rate if is_list else 0.0),
        ):
            if outcome < share:
                fault = kind
                break
            outcome -= share
        self.seen += 1
        if fault is not None:
            self.injected[fault] += 1
        if delay_ms > 0:
            self.injected["delayed"] += 1
        if self.remaining is not None:
            self.remaining -= 1
            if self.remaining <= 0:
                # Budget spent: back to the start-up settings, counters kept for GET.
                self.settings, self.remaining = self.baseline, None
                self.active = self.baseline.active
        return fault, delay_ms / 1000.0

    def draw_data(self, s: FaultSettings, path: str, is_get: bool, is_list: bool) -> DataFaults:
        """The data faults of one served request under settings ``s`` (those in force when it
        arrived; always six draws per list request, so a seed fixes the whole sequence)."""
        stale = s.stale_updated_at and is_get and path.startswith("/v1/payments")
        out = DataFaults(stale_updated_at=stale)
        if not is_list or path not in _DATA_LISTS:
            return out
        u = [self._data_rng.random() for _ in range(6)]
        if u[0] < s.short_page_rate:
            out.drop = 1 + int(u[1] * 10)
        if u[2] < s.garbled_id_rate:
            out.garble = (u[3], _GARBLE[int(u[4] * len(_GARBLE))])
        out.insert = path == "/v1/payments" and u[5] < s.insert_rate
        if s.late_visibility_s:
            seed = 0 if s.seed is None else s.seed % 2**31
            out.visibility = (s.late_visibility_s, seed)
            self.injected["late_visibility"] += 1
        if out.insert:
            self.injected["inserted"] += 1
        return out


_KINDS = (
    "error",
    "drop",
    "rate_limit",
    "non_json",
    "truncated",
    "delayed",
    "short_page",
    "garbled_id",
    "stale_updated_at",
    "inserted",
    "late_visibility",
)


@dataclass
class DataFaults:
    """What one served request gets: trailing items to drop, an id to garble (position in
    the page and the character), updated_at kept at creation, an insert before serving,
    and the late-visibility setting (delay, seed) for the store."""

    drop: int = 0
    garble: tuple[float, str] | None = None
    stale_updated_at: bool = False
    insert: bool = False
    visibility: tuple[int, int] | None = None

    @property
    def rewrites(self) -> bool:
        return bool(self.drop or self.garble or self.stale_updated_at)


def _rewrite(body: bytes, faults: DataFaults, injected: dict[str, int]) -> bytes:
    """Apply the body faults to a 200 answer (a list envelope or one payment)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if not isinstance(obj, dict):
        return body
    data = obj.get("data") if isinstance(obj.get("data"), list) else None
    records = data if data is not None else [obj]
    if faults.stale_updated_at:
        for r in records:
            if isinstance(r, dict) and "updated_at" in r and "created_at" in r:
                r["updated_at"] = r["created_at"]
        injected["stale_updated_at"] += 1
    if data is not None and faults.drop and len(data) > 1:
        del data[-min(faults.drop, len(data) - 1) :]
        injected["short_page"] += 1
    if data is not None and faults.garble is not None and data:
        where, char = faults.garble
        rec = data[int(where * len(data))]
        ident = rec.get("id") if isinstance(rec, dict) else None
        if isinstance(ident, str) and len(ident) > 5:
            # Keep the prefix: the damage is in the part a client cannot guess.
            pos = 5 + int(where * 7919) % (len(ident) - 5)
            rec["id"] = ident[:pos] + char + ident[pos + 1 :]
            injected["garbled_id"] += 1
    return orjson.dumps(obj)


def _insert_payment(scope: Scope) -> None:
    """Create a payment in the caller's account, as another client of the gateway would."""
    app = scope.get("app")
    gateway = getattr(getattr(app, "state", None), "gateway", None)
    auth = scope.get("state", {}).get("auth")
    if gateway is None or auth is None or auth.kind != "secret":
        return
    if gateway.variant == "A":
        body = {
            "amount": 1234,
            "success_url": "https://x.example/ok",
            "cancel_url": "https://x.example/no",
        }
    else:
        year = time.gmtime(gateway.clock.now()).tm_year + 2
        card = {"number": "4242424242424242", "exp_month": 12, "exp_year": year, "cvc": "123"}
        body = {
            "amount": 1234,
            "currency": "myr",
            "payment_method_data": {"type": "card", "card": card},
        }
    with contextlib.suppress(errors.ApiError):  # the list is served whatever happens here
        gateway.create_payment(auth, orjson.dumps(body))


async def _serve_rewritten(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, rewrite: Callable[[bytes], bytes]
) -> None:
    """Serve the request, passing a 200 answer's whole body through ``rewrite``."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def capture(message: Any) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return
        if message["type"] != "http.response.body" or not start:
            await send(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(chunks)
        if start["status"] == 200:
            body = rewrite(body)
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    await app(scope, receive, capture)


def _error_body(type_: str, code: str, message: str, **extra: Any) -> bytes:
    return orjson.dumps({"error": {"type": type_, "code": code, "message": message, **extra}})


_BODY_500 = _error_body(
    "api_error",
    "processing_error",
    "The gateway had a problem processing the request (injected by the sandbox's fault "
    "settings). Retry the request; use an Idempotency-Key to retry a creation safely.",
)
_BODY_429 = _error_body(
    "rate_limit_error",
    "rate_limit_exceeded",
    "Too many requests (forced by the sandbox's fault settings). Retry after 1 second.",
    retry_after=1,
)
_BODY_HTML = (
    b"<!DOCTYPE html><html><head><title>Service temporarily unavailable</title></head>"
    b"<body><h1>Service temporarily unavailable</h1><p>Please try again later.</p></body></html>"
)
_JSON = (b"content-type", b"application/json")
_HTML = (b"content-type", b"text/html; charset=utf-8")


class FaultInjector:
    """Pure ASGI middleware that injects the faults of a :class:`FaultState` into ``/v1/`` requests.

    Place it inside the middleware that adds the gateway's headers: injected responses carry
    only their content type (and ``Retry-After`` on a 429).

    Example::

        asgi = FaultInjector(app, baseline=FaultSettings(latency_ms=20))
        asgi.state.apply(FaultSettings(error_rate=1.0, count=2))
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        baseline: FaultSettings | None = None,
        state: FaultState | None = None,
    ) -> None:
        self.app = app
        self.state = state if state is not None else FaultState(baseline or FaultSettings())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if not path.startswith("/v1/"):
            if path.startswith("/_sandbox/"):
                scope[SCOPE_KEY] = state
            await self.app(scope, receive, send)
            return
        if not state.active:
            await self.app(scope, receive, send)
            return

        is_list = scope["method"] == "GET" and path.rstrip("/") in _LIST_PATHS
        if is_list and state.settings.ignore_time_filters:
            scope = {**scope, "query_string": _strip_time_filters(scope["query_string"])}
        settings = state.settings  # a `count` budget may run out in draw()
        fault, delay = state.draw(is_list)
        if delay > 0:
            await asyncio.sleep(delay)
        if fault is None:
            data = state.draw_data(settings, path.rstrip("/"), scope["method"] == "GET", is_list)
            if data.visibility is not None:
                scope = {**scope, VISIBILITY_KEY: data.visibility}
            if data.insert:
                _insert_payment(scope)
            if data.rewrites:
                injected = state.injected
                await _serve_rewritten(
                    self.app, scope, receive, send, lambda b: _rewrite(b, data, injected)
                )
            else:
                await self.app(scope, receive, send)
        elif fault == "truncated":
            rng = state._data_rng
            cut = rng.random()

            def truncate(body: bytes) -> bytes:
                return body[: max(1, int(len(body) * cut * 0.9))]

            await _serve_rewritten(self.app, scope, receive, send, truncate)
        elif fault == "drop":
            await _drop_connection(receive, send)
        elif fault == "error":
            await _respond(send, 500, _BODY_500, _JSON)
        elif fault == "rate_limit":
            await _respond(send, 429, _BODY_429, _JSON, (b"retry-after", b"1"))
        else:
            await _respond(send, 200, _BODY_HTML, _HTML)


async def _respond(send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    all_headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


def _strip_time_filters(query: bytes) -> bytes:
    if b"from" not in query and b"to" not in query:
        return query
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k.encode("latin-1") not in _TIME_FILTERS]
    return urlencode(kept).encode("latin-1")


async def _drop_connection(receive: Receive, send: Send) -> None:
    """Close the client's connection without a response.

    Raising would not do: Starlette's error middleware and uvicorn both answer an exception
    with a 500. So the middleware closes the socket itself, found through the server's
    ``receive``/``send`` callables (see :func:`_find_transport`).
    """
    transport = _find_transport(receive, send)
    if transport is None:
        raise ConnectionDropped("connection dropped by the sandbox's fault settings")
    transport.close()
    # Let the server see the connection go (connection_lost) before the app returns, so it
    # does not try to write a 500 of its own to a closed socket.
    for _ in range(3):
        await asyncio.sleep(0)


def _find_transport(*callables: Any) -> Any:
    """The asyncio transport behind the server's ASGI callables, or None.

    uvicorn's ``receive`` and ``send`` are methods of its request cycle, which holds the
    transport; middlewares above this one may wrap them in closures, so those are followed
    a few levels deep. Under another server (or ``httpx.ASGITransport``) there is none.
    """
    todo = [(c, 0) for c in callables]
    while todo:
        fn, depth = todo.pop(0)
        transport = getattr(getattr(fn, "__self__", None), "transport", None)
        if transport is not None and hasattr(transport, "close"):
            return transport
        if depth < 4:
            cells = getattr(fn, "__closure__", None) or ()
            todo.extend((c.cell_contents, depth + 1) for c in cells if _callable_cell(c))
    return None


def _callable_cell(cell: Any) -> bool:
    try:
        return callable(cell.cell_contents)
    except ValueError:  # an empty cell
        return False


def reset(scope: Scope) -> None:
    """Turn injected faults off for the app serving this ``/_sandbox/`` request.

    For ``POST /_sandbox/reset``: ``faults.reset(request.scope)``.
    """
    state = scope.get(SCOPE_KEY)
    if isinstance(state, FaultState):
        state.reset()


# --- admin API ---------------------------------------------------------------------------

# Not part of the gateway's interface: kept out of its OpenAPI document, like the other
# /_sandbox/ endpoints.
router = APIRouter(prefix="/_sandbox", include_in_schema=False)


def _state(request: Request) -> FaultState:
    state = request.scope.get(SCOPE_KEY)
    if not isinstance(state, FaultState):
        raise HTTPException(
            503,
            "fault injection is not installed: wrap the app in gwtools.sandbox.faults."
            "FaultInjector to use /_sandbox/faults",
        )
    return state


StateDep = Annotated[FaultState, Depends(_state)]


def _settings(raw: bytes) -> FaultSettings:
    body = params.parse_json(raw, allow_empty=True)
    try:
        return FaultSettings.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        param = ".".join(str(part) for part in first["loc"]) or None
        if first["type"] == "extra_forbidden":
            known = ", ".join(FaultSettings.model_fields)
            message = f"Unknown fault setting {param!r}; the settings are: {known}."
        else:
            where = f"{param}: " if param else ""
            message = f"Invalid fault settings: {where}{first['msg']}."
        raise errors.invalid(param, message) from None


def _json(status: FaultStatus) -> Response:
    return Response(status.model_dump_json(), media_type="application/json")


@router.get("/faults")
async def get_faults(state: StateDep) -> Response:
    """Current settings and the number of faults injected since they were set."""
    return _json(state.status())


@router.put("/faults")
async def put_faults(request: Request, state: StateDep) -> Response:
    """Replace the settings: fields left out are off (this includes the start-up latency)."""
    state.apply(_settings(await request.body()))
    return _json(state.status())


@router.delete("/faults")
async def delete_faults(request: Request, state: StateDep) -> Response:
    """Back to the start-up settings: no faults, plus the sandbox's ``--latency-ms`` if given."""
    params.reject_unknown(params.parse_json(await request.body(), allow_empty=True), ())
    state.reset()
    return _json(state.status())
