"""The OpenAPI 3.1 document of the gateway interface, per variant.

Written by hand (the handlers return pre-rendered bytes, so FastAPI cannot infer it): request
bodies, parameters and every response the sandbox can give, with accurate schemas. Admin and
page routes are not part of the gateway's interface and are left out.
"""

from __future__ import annotations

from typing import Any

from gwtools.sandbox.cards import TOKENS
from gwtools.sandbox.events import EVENT_TYPES
from gwtools.sandbox.fpx import BANKS
from gwtools.sandbox.params import CURRENCIES, MAX_AMOUNT, METADATA_KEYS, REASONS
from gwtools.sandbox.render import PAYMENT_STATUSES, REFUND_STATUSES

Schema = dict[str, Any]

STR: Schema = {"type": "string"}
INT: Schema = {"type": "integer"}
BOOL: Schema = {"type": "boolean"}
NONEMPTY: Schema = {"type": "string", "minLength": 1}


def _null(schema: Schema) -> Schema:
    if "$ref" in schema or "oneOf" in schema:
        return {"oneOf": [schema, {"type": "null"}]}
    return {**schema, "type": [schema["type"], "null"]}


def _obj(
    props: dict[str, Schema], required: list[str] | None = None, *, closed: bool = True
) -> Schema:
    out: Schema = {
        "type": "object",
        "properties": props,
        "required": list(props) if required is None else required,
    }
    if closed:
        out["additionalProperties"] = False
    return out


def _ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


ISO: Schema = {"type": "string", "format": "date-time"}
METADATA_VALUE: Schema = {"type": ["string", "number", "boolean"]}


def _metadata(max_keys: int) -> Schema:
    return {
        "type": "object",
        "maxProperties": max_keys,
        "propertyNames": {"minLength": 1, "maxLength": 40},
        "additionalProperties": {
            "oneOf": [{"type": "string", "maxLength": 500}, {"type": ["number", "boolean"]}]
        },
    }


def _components(variant: str) -> dict[str, Any]:
    a = variant == "A"
    details = {
        "oneOf": [
            _obj(
                {
                    "type": {"const": "card"},
                    "brand": STR,
                    "last4": STR,
                    "exp_month": INT,
                    "exp_year": INT,
                }
            ),
            _obj({"type": {"const": "fpx"}, "bank_code": STR, "bank": STR}),
        ]
    }
    id_pattern = {"type": "string", "pattern": "^pay_[A-Za-z0-9]{24}$"}
    if a:
        payment = _obj(
            {
                "id": id_pattern,
                "object": {"const": "payment"},
                "amount": INT,
                "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                "status": {"enum": PAYMENT_STATUSES["A"]},
                "description": _null(STR),
                "payment_method": {"enum": ["card", "fpx", None]},
                "payment_method_details": _null(details),
                "captured": BOOL,
                "captured_at": _null(ISO),
                "amount_captured": INT,
                "refunded": BOOL,
                "refunded_amount": INT,
                "metadata": {"type": "object"},
                "failure_code": _null(STR),
                "failure_message": _null(STR),
                "created_at": ISO,
                "updated_at": ISO,
                "redirect_url": STR,
                "success_url": STR,
                "cancel_url": STR,
                "expires_at": _null(ISO),
            }
        )
        refund = _obj(
            {
                "id": STR,
                "object": {"const": "refund"},
                "payment_id": STR,
                "amount": INT,
                "currency": STR,
                "reason": {"enum": [*REASONS, None]},
                "status": {"enum": list(REFUND_STATUSES)},
                "metadata": {"type": "object"},
                "created_at": ISO,
            }
        )
        page_list = {
            "type": "object",
            "required": ["data", "meta"],
            "additionalProperties": False,
            "properties": {
                "data": {"type": "array"},
                "meta": _obj({"total": INT, "page": INT, "limit": INT, "totalPages": INT}),
            },
        }
    else:
        error = _obj({"code": STR, "decline_code": _null(STR), "message": STR})
        payment = _obj(
            {
                "id": id_pattern,
                "object": {"const": "payment"},
                "amount": INT,
                "amount_captured": INT,
                "currency": {"type": "string", "pattern": "^[a-z]{3}$"},
                "status": {"enum": PAYMENT_STATUSES["B"]},
                "description": _null(STR),
                "payment_method": _null(STR),
                "payment_method_details": _null(details),
                "customer": {"oneOf": [STR, {"type": "null"}, {"type": "object"}]},
                "capture_method": {"enum": ["automatic", "manual"]},
                "captured": BOOL,
                "captured_at": _null(INT),
                "refunded": BOOL,
                "refunded_amount": INT,
                "metadata": {"type": "object"},
                "receipt_email": _null(STR),
                "receipt_url": STR,
                "client_secret": STR,
                "next_action": _null(
                    _obj(
                        {
                            "type": {"const": "redirect_to_url"},
                            "redirect_to_url": STR,
                            "return_url": _null(STR),
                        }
                    )
                ),
                "last_payment_error": _null(error),
                "created": INT,
                "livemode": BOOL,
            }
        )
        # expand may replace payment_method with the payment method object
        payment["properties"]["payment_method"] = {
            "oneOf": [STR, {"type": "null"}, {"type": "object"}]
        }
        refund = _obj(
            {
                "id": STR,
                "object": {"const": "refund"},
                "payment_id": STR,
                "amount": INT,
                "currency": STR,
                "reason": {"enum": [*REASONS, None]},
                "status": {"enum": list(REFUND_STATUSES)},
                "metadata": {"type": "object"},
                "created": INT,
                "livemode": BOOL,
            }
        )
        page_list = None
    cursor_list = _obj(
        {"object": {"const": "list"}, "data": {"type": "array"}, "has_more": BOOL, "url": STR}
    )
    event = _obj(
        {
            "id": STR,
            "object": {"const": "event"},
            "type": STR,
            "created": INT,
            "livemode": BOOL,
            "api_version": STR,
            "data": _obj({"object": {"type": "object"}}),
        }
    )
    error_body = _obj(
        {
            "error": _obj(
                {
                    "type": {
                        "enum": [
                            "api_error",
                            "authentication_error",
                            "card_error",
                            "invalid_request_error",
                            "rate_limit_error",
                        ]
                    },
                    "code": STR,
                    "message": STR,
                    "param": STR,
                    "decline_code": STR,
                    "retry_after": INT,
                    "payment": _ref("Payment"),
                },
                ["type", "code", "message"],
            )
        }
    )
    schemas: dict[str, Any] = {
        "Payment": payment,
        "Refund": refund,
        "Event": event,
        "Error": error_body,
    }

    def listed(item: str, base: Schema) -> Schema:
        out = {
            **base,
            "properties": {**base["properties"], "data": {"type": "array", "items": _ref(item)}},
        }
        return out

    if a:
        assert page_list is not None
        schemas["PaymentList"] = listed("Payment", page_list)
        schemas["RefundList"] = listed("Refund", page_list)
    else:
        schemas["PaymentList"] = listed("Payment", cursor_list)
        schemas["RefundList"] = listed("Refund", cursor_list)
    schemas["EventList"] = listed("Event", cursor_list)
    return schemas


def _payment_body(variant: str) -> Schema:
    common: Schema = {
        "amount": {"type": "integer", "minimum": 1, "maximum": MAX_AMOUNT},
        "currency": {
            "type": "string",
            "enum": sorted(CURRENCIES | {c.lower() for c in CURRENCIES}),
        },
        "description": {"type": "string", "maxLength": 255},
        "metadata": _metadata(METADATA_KEYS[variant]),
    }
    url = {
        "type": "string",
        "format": "uri",
        "pattern": "^https?://[^\\s/?#]+[^\\s]*$",
        "maxLength": 2048,
    }
    if variant == "A":
        return _obj(
            {**common, "success_url": url, "cancel_url": url, "callback_url": url},
            ["amount", "success_url", "cancel_url"],
        )
    card = {
        "oneOf": [
            _obj(
                {
                    "number": {"type": "string", "pattern": "^[0-9]{12,19}$"},
                    "exp_month": {"type": "integer", "minimum": 1, "maximum": 12},
                    "exp_year": {"type": "integer", "minimum": 2000, "maximum": 2100},
                    "cvc": {"type": "string", "pattern": "^[0-9]{3,4}$"},
                    "name": {"type": "string", "maxLength": 200},
                },
                ["number", "exp_month", "exp_year", "cvc"],
            ),
            _obj(
                {"token": {"enum": sorted(TOKENS)}, "name": {"type": "string", "maxLength": 200}},
                ["token"],
            ),
        ]
    }
    data = {
        "oneOf": [
            _obj({"type": {"const": "card"}, "card": card}),
            _obj({"type": {"const": "fpx"}, "fpx": _obj({"bank_code": {"enum": list(BANKS)}})}),
        ]
    }
    body = _obj(
        {
            **common,
            "payment_method": {"type": "string", "minLength": 1, "maxLength": 100},
            "payment_method_data": data,
            "customer": {"type": "string", "minLength": 1, "maxLength": 100},
            "capture_method": {"enum": ["automatic", "manual"]},
            "receipt_email": {"type": "string", "format": "email", "maxLength": 254},
            "return_url": url,
            "save_payment_method": BOOL,
        },
        ["amount", "currency"],
    )
    fpx = {
        "properties": {
            "payment_method_data": {"properties": {"type": {"const": "fpx"}}, "required": ["type"]}
        },
        "required": ["payment_method_data"],
    }
    body["allOf"] = [
        # exactly one of payment_method and payment_method_data
        {"oneOf": [{"required": ["payment_method"]}, {"required": ["payment_method_data"]}]},
        # FPX needs return_url; saving a method needs customer; FPX is never captured manually
        {"if": fpx, "then": {"required": ["return_url"]}},
        {
            "if": {
                "properties": {"save_payment_method": {"const": True}},
                "required": ["save_payment_method"],
            },
            "then": {"required": ["customer"]},
        },
        {"if": fpx, "then": {"properties": {"capture_method": {"const": "automatic"}}}},
        # FPX moves ringgit only
        {"if": fpx, "then": {"properties": {"currency": {"enum": ["MYR", "myr"]}}}},
    ]
    return body


RATE_HEADERS = {
    name: {"description": desc, "schema": INT}
    for name, desc in (
        ("X-RateLimit-Limit", "requests per second allowed"),
        ("X-RateLimit-Remaining", "requests left in the current window"),
        ("X-RateLimit-Reset", "Unix seconds at which the window is full again"),
    )
}


def _responses(ok: int, schema: str, extra: tuple[int, ...] = ()) -> dict[str, Any]:
    def err(desc: str) -> dict[str, Any]:
        return {
            "description": desc,
            "headers": RATE_HEADERS,
            "content": {"application/json": {"schema": _ref("Error")}},
        }

    out: dict[str, Any] = {
        str(ok): {
            "description": "OK",
            "headers": RATE_HEADERS,
            "content": {"application/json": {"schema": _ref(schema)}},
        }
    }
    for code, desc in (
        (400, "invalid parameters"),
        (401, "invalid API key"),
        (404, "no such resource"),
        (405, "method not allowed"),
        (409, "conflict with the current state"),
        (413, "body too large"),
        (429, "rate limit exceeded"),
        (500, "server error"),
        *((c, "card declined") for c in extra),
    ):
        out[str(code)] = err(desc)
    return out


def _query(name: str, schema: Schema, desc: str) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": desc}


def build_openapi(variant: str) -> dict[str, Any]:
    """The document for one variant (served at ``/openapi.json``)."""
    a = variant == "A"
    version_header = {
        "name": "Service-Version",
        "in": "header",
        "required": False,
        "schema": {"enum": ["2024-01-01", "2023-12-01"]},
        "description": "date-based version; absent = 2024-01-01",
    }
    idem = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": 255,
            # printable ASCII; spaces inside only (HTTP drops them at either end)
            "pattern": "^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$",
        },
        "description": "1 to 255 printable ASCII characters, e.g. a UUID",
    }
    ident = {"name": "id", "in": "path", "required": True, "schema": STR}
    instant = {
        "description": "ISO 8601 or Unix seconds",
        "anyOf": [
            {"type": "string", "pattern": "^[0-9]{1,10}$"},
            {"type": "string", "format": "date-time"},
            {"type": "string", "format": "date"},
        ],
    }
    window = [
        _query(
            "from",
            instant,
            "created at or after (inclusive); a date alone: from 00:00:00Z of that day",
        ),
        _query(
            "to",
            instant,
            "created before (exclusive); a date alone includes that whole UTC day "
            "(before 00:00:00Z of the next)",
        ),
    ]
    limit_default = 20 if a else 10
    paging = (
        [
            _query("page", {"type": "integer", "minimum": 1, "maximum": 10**9}, "page"),
            _query(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 100, "default": limit_default},
                "page size",
            ),
        ]
        if a
        else [
            _query(
                "limit",
                {"type": "integer", "minimum": 1, "maximum": 100, "default": limit_default},
                "page size",
            ),
            _query("starting_after", NONEMPTY, "id of the last object of the previous page"),
            _query("ending_before", NONEMPTY, "id of the first object of the next page"),
        ]
    )
    cursor = [
        _query(
            "limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 10}, "page size"
        ),
        _query("starting_after", NONEMPTY, "cursor"),
        _query("ending_before", NONEMPTY, "cursor"),
    ]
    status_p = _query("status", {"enum": PAYMENT_STATUSES[variant]}, "payment status")
    refund_status = _query("status", {"enum": list(REFUND_STATUSES)}, "refund status")
    empty_ok = {"required": False, "content": {"application/json": {"schema": _obj({})}}}
    capture_body = {
        "required": False,
        "content": {
            "application/json": {
                "schema": _obj(
                    {"amount": {"type": "integer", "minimum": 1, "maximum": MAX_AMOUNT}}, []
                )
            }
        },
    }
    refund_body = {
        "required": True,
        "content": {
            "application/json": {
                "schema": _obj(
                    {
                        "payment_id": {"type": "string", "minLength": 1, "maxLength": 100},
                        "payment": {"type": "string", "minLength": 1, "maxLength": 100},
                        "amount": {"type": "integer", "minimum": 1, "maximum": MAX_AMOUNT},
                        "reason": {"enum": list(REASONS)},
                        "metadata": _metadata(50),
                    },
                    [],
                )
                | {"anyOf": [{"required": ["payment_id"]}, {"required": ["payment"]}]}
            }
        },
    }

    def op(
        summary: str,
        responses: dict[str, Any],
        params: list[Any] | None = None,
        body: dict[str, Any] | None = None,
        operation_id: str = "",
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "summary": summary,
            "operationId": operation_id,
            "parameters": [version_header, *(params or [])],
            "responses": responses,
            "security": [{"bearer": []}],
        }
        if body is not None:
            out["requestBody"] = body
        return out

    expand = (
        []
        if a
        else [
            {
                "name": "expand[]",
                "in": "query",
                "required": False,
                "schema": {"type": "array", "items": {"enum": ["customer", "payment_method"]}},
                "style": "form",
                "explode": True,
            }
        ]
    )
    paths = {
        "/v1/payments": {
            "post": op(
                "Create a payment",
                _responses(201, "Payment", () if a else (402,)),
                [idem],
                {
                    "required": True,
                    "content": {"application/json": {"schema": _payment_body(variant)}},
                },
                "createPayment",
            ),
            "get": op(
                "List payments",
                _responses(200, "PaymentList"),
                [status_p, *window, *paging],
                operation_id="listPayments",
            ),
        },
        "/v1/payments/{id}": {
            "get": op(
                "Retrieve a payment",
                _responses(200, "Payment"),
                [ident, *expand],
                operation_id="getPayment",
            )
        },
        "/v1/payments/{id}/capture": {
            "post": op(
                "Capture an authorized payment",
                _responses(200, "Payment"),
                [ident, idem],
                capture_body,
                "capturePayment",
            )
        },
        "/v1/payments/{id}/void": {
            "post": op(
                "Void a payment not yet captured",
                _responses(200, "Payment"),
                [ident, idem],
                empty_ok,
                "voidPayment",
            )
        },
        "/v1/refunds": {
            "post": op(
                "Create a refund", _responses(201, "Refund"), [idem], refund_body, "createRefund"
            ),
            "get": op(
                "List refunds",
                _responses(200, "RefundList"),
                [
                    _query(
                        "payment_id",
                        NONEMPTY,
                        "refunds of this payment (one this key cannot see: 404)",
                    ),
                    refund_status,
                    *window,
                    *paging,
                ],
                operation_id="listRefunds",
            ),
        },
        "/v1/refunds/{id}": {
            "get": op(
                "Retrieve a refund", _responses(200, "Refund"), [ident], operation_id="getRefund"
            )
        },
        "/v1/events": {
            "get": op(
                "List events",
                _responses(200, "EventList"),
                [_query("type", {"enum": list(EVENT_TYPES)}, "event type"), *window, *cursor],
                operation_id="listEvents",
            )
        },
        "/v1/events/{id}": {
            "get": op(
                "Retrieve an event", _responses(200, "Event"), [ident], operation_id="getEvent"
            )
        },
    }
    by_id = {"id": "$response.body#/id"}
    paths["/v1/payments"]["post"]["responses"]["201"]["links"] = {
        "GetPayment": {"operationId": "getPayment", "parameters": by_id},
        "CapturePayment": {"operationId": "capturePayment", "parameters": by_id},
        "VoidPayment": {"operationId": "voidPayment", "parameters": by_id},
    }
    paths["/v1/refunds"]["post"]["responses"]["201"]["links"] = {
        "GetRefund": {"operationId": "getRefund", "parameters": by_id}
    }
    paths["/v1/events"]["get"]["responses"]["200"]["links"] = {
        "GetEvent": {"operationId": "getEvent", "parameters": {"id": "$response.body#/data/0/id"}}
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"Payment gateway (sandbox, variant {variant})",
            "version": "2024-01-01",
            "description": "The payment gateway's interface as the gwtools sandbox "
            "serves it; see docs/sandbox.md.",
        },
        "paths": paths,
        "components": {
            "schemas": _components(variant),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
