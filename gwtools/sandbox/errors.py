"""Gateway errors: one exception type and the spec's error body (docs/sandbox.md, Errors)."""

from __future__ import annotations

from typing import Any, Final

import orjson


class SandboxConfigError(ValueError):
    """A sandbox set up wrongly (an unknown incident, incidents without a history, bad sizes).

    The sandbox's own error: it is a separate part and imports nothing of the library.
    """


class ApiError(Exception):
    """An error the gateway answers with ``{"error": {...}}`` and an HTTP status."""

    def __init__(
        self,
        status: int,
        type_: str,
        code: str,
        message: str,
        *,
        param: str | None = None,
        decline_code: str | None = None,
        retry_after: int | None = None,
        payment: bytes | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.code = code
        self.message = message
        self.param = param
        self.decline_code = decline_code
        self.retry_after = retry_after
        #: the failed payment's JSON, when a declined creation stored one (variant B)
        self.payment = payment

    def body(self) -> bytes:
        err: dict[str, Any] = {"type": self.type, "code": self.code, "message": self.message}
        if self.param is not None:
            err["param"] = self.param
        if self.decline_code is not None:
            err["decline_code"] = self.decline_code
        if self.retry_after is not None:
            err["retry_after"] = self.retry_after
        if self.payment is not None:
            return b'{"error":' + orjson.dumps(err)[:-1] + b',"payment":' + self.payment + b"}}"
        return orjson.dumps({"error": err})


def missing(param: str) -> ApiError:
    return ApiError(
        400,
        "invalid_request_error",
        "parameter_missing",
        f"Missing required parameter: {param}.",
        param=param,
    )


def invalid(param: str | None, message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", "parameter_invalid", message, param=param)


#: What each id prefix names, to tell an id of one kind given where another is expected.
_KINDS: Final = {
    "pay_": "payment",
    "rfnd_": "refund",
    "evt_": "event",
    "cus_": "customer",
    "pm_": "payment method",
}
#: Longer ids are shown cut: the message names the id, it need not repeat a pasted page.
_SHOWN_ID = 64


def not_found(kind: str, ident: str, param: str = "id") -> ApiError:
    shown = ident if len(ident) <= _SHOWN_ID else ident[: _SHOWN_ID - 1] + "\u2026"
    prefix, named = next(((p, k) for p, k in _KINDS.items() if ident.startswith(p)), ("", kind))
    if named != kind:
        hint = f"'{prefix}…' ids are {named} ids, not {kind} ids: check which id goes here."
    else:
        hint = (
            "Check the id, and that the key belongs to the account and mode (test or live) "
            "the object was made in."
        )
    return ApiError(
        404,
        "invalid_request_error",
        "resource_missing",
        f"No such {kind}: '{shown}'. {hint}",
        param=param,
    )


def invalid_state(message: str) -> ApiError:
    return ApiError(409, "invalid_request_error", "invalid_state", message)


def unknown_url(method: str, path: str) -> ApiError:
    """The 404 of a path no route serves; a trailing slash is named, as it is an easy slip."""
    if path == "/_sandbox" or path.startswith("/_sandbox/"):
        hint = (
            "Check the path against the sandbox's Admin API (docs/sandbox.md; e.g. "
            "GET /_sandbox/clock, POST /_sandbox/clock/advance)."
        )
    else:
        hint = "Check the path against the API reference (paths start with /v1/)."
    trimmed = path.rstrip("/")
    if trimmed != path and len(trimmed) > len("/v1"):
        hint = f"Paths take no trailing slash: use {trimmed}."
    return ApiError(
        404,
        "invalid_request_error",
        "resource_missing",
        f"Unrecognized request URL ({method} {path}). {hint}",
    )


def server_error() -> ApiError:
    return ApiError(
        500,
        "api_error",
        "processing_error",
        "The sandbox hit an internal error (its log has the details). Retry the request; "
        "retry a creation with the same Idempotency-Key so it is not made twice.",
    )


def auth_error(message: str) -> ApiError:
    return ApiError(401, "authentication_error", "invalid_api_key", message)


def card_error(
    code: str,
    message: str,
    *,
    decline_code: str | None = None,
    param: str | None = None,
    payment: bytes | None = None,
) -> ApiError:
    return ApiError(
        402, "card_error", code, message, decline_code=decline_code, param=param, payment=payment
    )
