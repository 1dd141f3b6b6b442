"""One function maps a gateway response to the exception named after its error type."""

from __future__ import annotations

import httpx
import orjson
import pytest

from gwtools._errors import (
    APIError,
    AuthenticationError,
    CardError,
    GatewayError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    error_from_response,
    mask_key,
    redact,
    summarize,
)

URL = "http://gw.example/v1/payments?status=failed&api_key=sk_test_secretsecret1234"


def response(
    status: int, error: dict | None = None, headers: dict | None = None, body: bytes | None = None
) -> httpx.Response:
    content = body if body is not None else orjson.dumps({"error": error or {}})
    return httpx.Response(
        status, content=content, headers=headers, request=httpx.Request("GET", URL)
    )


@pytest.mark.parametrize(
    ("status", "etype", "cls"),
    [
        (401, "authentication_error", AuthenticationError),
        (400, "invalid_request_error", InvalidRequestError),
        (409, "invalid_request_error", InvalidRequestError),
        (404, "invalid_request_error", NotFoundError),
        (402, "card_error", CardError),
        (429, "rate_limit_error", RateLimitError),
        (500, "api_error", APIError),
    ],
)
def test_type_decides_the_class(status: int, etype: str, cls: type[GatewayError]) -> None:
    err = error_from_response(
        response(
            status,
            {"type": etype, "code": "c", "message": "m", "param": "p"},
            {"X-Request-Id": "req_1"},
        )
    )
    assert type(err) is cls and isinstance(err, GatewayError)
    assert (err.type, err.code, err.param, err.http_status, err.request_id) == (
        etype,
        "c",
        "p",
        status,
        "req_1",
    )


def test_status_decides_without_a_body() -> None:
    assert type(error_from_response(response(401, body=b""))) is AuthenticationError
    assert type(error_from_response(response(503, body=b"<html>"))) is APIError
    assert type(error_from_response(response(418, body=b"nope"))) is InvalidRequestError


def test_message_names_status_url_and_what_to_do_without_query() -> None:
    err = error_from_response(
        response(
            400,
            {
                "type": "invalid_request_error",
                "code": "parameter_missing",
                "param": "amount",
                "message": "Missing required param: amount.",
            },
        )
    )
    text = str(err)
    assert "400" in text and "GET http://gw.example/v1/payments" in text
    assert "Missing required param: amount." in text and "param=amount" in text
    assert "What to do" in text
    assert (
        "sk_test_" not in text
        and "status=failed" not in text
        and err.url == "http://gw.example/v1/payments"
    )


def test_card_error_carries_decline_code_and_rate_limit_its_wait() -> None:
    card = error_from_response(
        response(
            402,
            {"type": "card_error", "code": "card_declined", "decline_code": "insufficient_funds"},
        )
    )
    assert card.decline_code == "insufficient_funds"
    assert (
        error_from_response(
            response(429, {"type": "rate_limit_error", "retry_after": 1})
        ).retry_after
        == 1.0
    )
    assert error_from_response(response(429, {}, {"Retry-After": "2"})).retry_after == 2.0


def test_what_the_gateway_echoes_back_is_masked() -> None:
    """A gateway or proxy that repeats the key (in the message, a field, a header) gets it masked."""
    key = "sk_live_Zq81hG7aPp3kLm0xWv6tRb2N"
    token = "proxy-token-9f8e7d6c5b4a"  # not shaped like a key: masked because it was sent
    for sent in (key, token):
        request = httpx.Request(
            "GET",
            f"http://gw.example/{sent}/v1/payments",
            headers={"Authorization": f"Bearer {sent}"},
        )
        body = {"type": "invalid_request_error", "message": f"bad key {sent}", "param": sent}
        err = error_from_response(
            httpx.Response(
                400,
                content=orjson.dumps({"error": body}),
                headers={"Request-Id": f"req_{sent}"},
                request=request,
            )
        )
        texts = [str(err), repr(err), err.param or "", err.url or "", err.request_id or ""]
        assert all(sent[5:-4] not in t for t in texts), texts
        assert f"bad key {mask_key(sent)}" in str(err) and err.param == mask_key(sent)


def test_key_shaped_text_is_masked_in_every_gateway_error() -> None:
    key = "pk_test_Zq81hG7aPp3kLm0xWv6tRb2N"
    err = GatewayError(f"the key {key} failed", url=f"http://x/{key}", code=key)
    assert str(err) == "the key pk_test_…Rb2N failed" and err.args == (str(err),)
    assert err.url == "http://x/pk_test_…Rb2N" and err.code == "pk_test_…Rb2N"
    assert GatewayError("use sk_test_ or sk_live_ keys").message == "use sk_test_ or sk_live_ keys"
    assert redact("x sk_test_…Rb2N y") == "x sk_test_…Rb2N y"  # already masked: left alone


def test_summary_of_an_underlying_error() -> None:
    key = "weird-but-sent-key-1234"
    assert summarize(ValueError(f"cannot send {key}"), key) == "ValueError: cannot send …1234"
    assert summarize(httpx.ReadTimeout("")) == "ReadTimeout"
