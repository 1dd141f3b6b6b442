"""The gateway's ``/v1`` endpoints: thin handlers over :class:`~gwtools.sandbox.gateway.Gateway`.

Handlers return pre-rendered JSON bytes in a plain ``Response`` (no per-request model
serialisation); the OpenAPI document describing them is written by hand in ``openapi.py``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from gwtools.sandbox import errors
from gwtools.sandbox.auth import Auth
from gwtools.sandbox.gateway import EXPANDABLE, Gateway

router = APIRouter(include_in_schema=False)
JSON = "application/json"


def _ctx(request: Request) -> tuple[Gateway, Auth]:
    return request.app.state.gateway, request.scope["state"]["auth"]


def _ok(body: bytes, status: int = 200) -> Response:
    return Response(body, status, media_type=JSON)


@router.post("/v1/payments")
async def create_payment(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(gw.create_payment(auth, await request.body()), 201)


@router.get("/v1/payments")
async def list_payments(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(
        gw.list_objects(
            "payments", auth, request.query_params, cursor=gw.variant == "B", url="/v1/payments"
        )
    )


@router.get("/v1/payments/{ident}")
async def get_payment(ident: str, request: Request) -> Response:
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


@router.post("/v1/payments/{ident}/capture")
async def capture_payment(ident: str, request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(gw.capture(auth, ident, await request.body()))


@router.post("/v1/payments/{ident}/void")
async def void_payment(ident: str, request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(gw.void(auth, ident, await request.body()))


@router.post("/v1/refunds")
async def create_refund(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(gw.create_refund(auth, await request.body()), 201)


@router.get("/v1/refunds")
async def list_refunds(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(
        gw.list_objects(
            "refunds", auth, request.query_params, cursor=gw.variant == "B", url="/v1/refunds"
        )
    )


@router.get("/v1/refunds/{ident}")
async def get_refund(ident: str, request: Request) -> Response:
    gw, auth = _ctx(request)
    if request.query_params:
        raise errors.invalid(
            next(iter(request.query_params)), "This endpoint takes no query parameters."
        )
    return _ok(gw.get_refund(auth, ident))


@router.get("/v1/events")
async def list_events(request: Request) -> Response:
    gw, auth = _ctx(request)
    return _ok(gw.list_objects("events", auth, request.query_params, cursor=True, url="/v1/events"))


@router.get("/v1/events/{ident}")
async def get_event(ident: str, request: Request) -> Response:
    gw, auth = _ctx(request)
    row = gw.store.get("events", auth.account, auth.livemode, ident)
    if row is None:
        raise errors.not_found("event", ident)
    return _ok(row.body)
