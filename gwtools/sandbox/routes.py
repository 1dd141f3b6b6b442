"""The gateway's ``/v1`` endpoints: thin handlers over :class:`~gwtools.sandbox.gateway.Gateway`.

Handlers return pre-rendered JSON bytes in a plain ``Response`` (no per-request model
serialisation); the OpenAPI document describing them is written by hand in ``openapi.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gwtools.sandbox import errors
from gwtools.sandbox.auth import Auth
from gwtools.sandbox.faults import VISIBILITY_KEY
from gwtools.sandbox.gateway import EXPANDABLE, Gateway

JSON = "application/json"
Handler = Callable[[Request], Awaitable[Response]]
#: Starlette routes, not FastAPI ones: no dependency solving on the hot path
routes: list[Route] = []


def _route(path: str, method: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        routes.append(Route(path, handler, methods=[method], include_in_schema=False))
        return handler

    return register


def _ctx(request: Request) -> tuple[Gateway, Auth]:
    return request.app.state.gateway, request.scope["state"]["auth"]


def _ok(body: bytes, status: int = 200) -> Response:
    return Response(body, status, media_type=JSON)


def _no_query(request: Request, hint: str) -> None:
    """Refuse query parameters on a call that reads none: ignoring ``?amount=500`` on a
    capture or refund would move the full amount instead of the one the caller meant."""
    if request.query_params:
        name = next(iter(request.query_params))
        raise errors.invalid(name, f"Received unknown query parameter: {name}. {hint}")


_IN_BODY = "Parameters of this call go in the JSON body, not in the URL."


@_route("/v1/payments", "POST")
async def create_payment(request: Request) -> Response:
    gw, auth = _ctx(request)
    _no_query(request, _IN_BODY)
    return _ok(gw.create_payment(auth, await request.body()), 201)


@_route("/v1/payments", "GET")
async def list_payments(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(
        gw.list_objects(
            "payments",
            auth,
            request.query_params,
            cursor=gw.variant == "B",
            url="/v1/payments",
            visibility=request.scope.get(VISIBILITY_KEY),
        )
    )


@_route("/v1/payments/{ident}", "GET")
async def get_payment(request: Request) -> Response:
    ident = request.path_params["ident"]
    gw, auth = _ctx(request)
    query = request.query_params
    expand: list[str] = []
    for name in query:
        if name not in ("expand", "expand[]") or gw.variant == "A":
            raise errors.invalid(
                name,
                f"Received unknown parameter: {name}."
                + (" Variant B accepts expand." if gw.variant == "A" else ""),
            )
        for value in query.getlist(name):
            expand += [v.strip() for v in value.split(",") if v.strip()]
    for item in expand:
        if item not in EXPANDABLE:
            raise errors.invalid(
                "expand", f"Cannot expand {item!r}; expandable: {', '.join(EXPANDABLE)}."
            )
    return _ok(gw.get_payment(auth, ident, expand))


@_route("/v1/payments/{ident}/capture", "POST")
async def capture_payment(request: Request) -> Response:
    ident = request.path_params["ident"]
    gw, auth = _ctx(request)
    _no_query(request, _IN_BODY)
    return _ok(gw.capture(auth, ident, await request.body()))


@_route("/v1/payments/{ident}/void", "POST")
async def void_payment(request: Request) -> Response:
    ident = request.path_params["ident"]
    gw, auth = _ctx(request)
    _no_query(request, "Void takes no parameters.")
    return _ok(gw.void(auth, ident, await request.body()))


@_route("/v1/refunds", "POST")
async def create_refund(request: Request) -> Response:
    gw, auth = _ctx(request)
    _no_query(request, _IN_BODY)
    return _ok(gw.create_refund(auth, await request.body()), 201)


@_route("/v1/refunds", "GET")
async def list_refunds(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(
        gw.list_objects(
            "refunds",
            auth,
            request.query_params,
            cursor=gw.variant == "B",
            url="/v1/refunds",
            visibility=request.scope.get(VISIBILITY_KEY),
        )
    )


@_route("/v1/refunds/{ident}", "GET")
async def get_refund(request: Request) -> Response:
    ident = request.path_params["ident"]
    gw, auth = _ctx(request)
    _no_query(request, "This endpoint takes no query parameters.")
    return _ok(gw.get_refund(auth, ident))


@_route("/v1/events", "GET")
async def list_events(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(gw.list_objects("events", auth, request.query_params, cursor=True, url="/v1/events"))


@_route("/v1/events/{ident}", "GET")
async def get_event(request: Request) -> Response:
    ident = request.path_params["ident"]
    gw, auth = _ctx(request)
    _no_query(request, "This endpoint takes no query parameters.")
    row = gw.store.get("events", auth.account, auth.livemode, ident)
    if row is None:
        raise errors.not_found("event", ident)
    return _ok(row.body)
