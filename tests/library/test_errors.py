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
    assert (
        "400 Bad Request from GET http://gw.example/v1/payments: Missing required param: " in text
    )
    assert "amount (type=invalid_request_error, code=parameter_missing, param=amount)." in text
    assert "What to do" in text
    assert (
        "sk_test_" not in text
        and "status=failed" not in text
        and err.url == "http://gw.example/v1/payments"
    )


@pytest.mark.parametrize("said", ["Amount  must be  positive.", "Amount  must be  positive"])
def test_the_gateways_words_are_quoted_as_written(said: str) -> None:
    """Its spacing kept (a blanket double-space collapse used to change it), its final full
    stop dropped so none doubles up with ours; a status without a reason phrase reads cleanly."""
    text = str(
        error_from_response(response(400, {"type": "invalid_request_error", "message": said}))
    )
    assert ": Amount  must be  positive (type=invalid_request_error). What to do:" in text
    assert ".." not in text and ". (" not in text
    bare = str(error_from_response(response(599, {"type": "api_error", "message": said})))
    assert bare.startswith("599 from GET http://gw.example/v1/payments: Amount  must be  positive")


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


# -- a base URL that is not the gateway's API ------------------------------------------------

SENT = "sk_" + "live_" + "Zq81hG7aPp3kLm0xWv6tRb2N"  # sent as the bearer key below


def sent(
    status: int,
    url: str,
    *,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    request = httpx.Request("GET", url, headers={"Authorization": f"Bearer {SENT}"})
    return httpx.Response(status, content=body, headers=headers, request=request)


def assert_keyless(err: GatewayError) -> None:
    for text in (str(err), repr(err), err.url or ""):
        assert SENT not in text and SENT[8:-4] not in text, text


@pytest.mark.parametrize(
    ("extra", "body"),
    [
        # The sandbox's own 404 for an unknown URL: the gateway's error shape.
        (
            "/api",
            orjson.dumps(
                {
                    "error": {
                        "type": "invalid_request_error",
                        "code": "resource_missing",
                        "message": "Unrecognized request URL (GET /api/v1/payments).",
                    }
                }
            ),
        ),
        ("/v2", b"<html><h1>404 Not Found</h1></html>"),  # a web server's page
        ("/api/v2", b""),
    ],
)
def test_a_404_for_a_list_says_the_base_url_path_is_wrong(extra: str, body: bytes) -> None:
    requested = f"http://gw.example:8080{extra}/v1/payments"
    err = error_from_response(sent(404, f"{requested}?limit=100", body=body), listing=True)
    assert type(err) is NotFoundError and err.http_status == 404 and err.url == requested
    text = str(err)
    assert f"404 Not Found from GET {requested}:" in text and "limit=100" not in text
    assert "base URL's path looks wrong" in text
    assert f"without the extra path {extra!r}: base_url='http://gw.example:8080'" in text
    assert "check the id" not in text and "test/live" not in text
    assert_keyless(err)


def test_a_404_for_a_list_at_the_root_says_to_check_the_address() -> None:
    err = error_from_response(sent(404, "https://gw.example/v1/refunds"), listing=True)
    text = str(err)
    assert type(err) is NotFoundError and "GET https://gw.example/v1/refunds" in text
    assert "base URL's path looks wrong" in text and "extra path" not in text
    assert "base URL (https://gw.example) is the gateway's API address" in text
    assert_keyless(err)


def test_a_404_for_an_id_talks_about_the_id_unless_something_else_answered() -> None:
    url = "http://gw.example/api/v1/payments/pay_123"
    gateway_404 = orjson.dumps(
        {"error": {"type": "invalid_request_error", "code": "resource_missing", "param": "id"}}
    )
    err = error_from_response(sent(404, url, body=gateway_404))
    assert type(err) is NotFoundError and "check the id" in str(err)
    assert "path looks wrong" not in str(err)
    # Not the gateway's JSON: a web server or proxy answered, so the base URL is the suspect.
    err = error_from_response(sent(404, url, body=b"<html>Not Found</html>"))
    assert type(err) is NotFoundError and "check the id" not in str(err)
    assert "not the gateway's JSON error" in str(err)
    assert "without the extra path '/api': base_url='http://gw.example'" in str(err)
    assert_keyless(err)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_names_where_it_points_and_the_base_url_to_use(status: int) -> None:
    err = error_from_response(
        sent(
            status,
            "http://gw.example/v1/payments?limit=100",
            headers={"Location": f"https://gw.example/v1/payments?limit=100&key={SENT}"},
            body=b"<html>Moved</html>",
        ),
        listing=True,
    )
    assert type(err) is APIError and err.http_status == status
    assert err.url == "http://gw.example/v1/payments"
    text = str(err)
    assert text.startswith(f"{status} ") and "from GET http://gw.example/v1/payments:" in text
    assert "redirects to https://gw.example/v1/payments (http -> https)" in text
    assert "does not follow redirects" in text and "use base_url='https://gw.example'" in text
    assert "not the JSON" not in text  # it used to be read as a malformed body
    assert_keyless(err)


def test_a_redirect_elsewhere_or_without_location_still_says_what_to_do() -> None:
    moved = error_from_response(
        sent(302, "https://gw.example/v1/payments", headers={"Location": "/login?next=/v1"})
    )
    assert type(moved) is APIError and moved.http_status == 302
    assert "redirects to https://gw.example/login" in str(moved) and "next=" not in str(moved)
    assert "use the address it points to" in str(moved)
    relative = error_from_response(
        sent(301, "http://gw.example/v1/refunds", headers={"Location": "/gw/v1/refunds"})
    )
    assert "use base_url='http://gw.example/gw'" in str(relative)
    bare = error_from_response(sent(301, "http://gw.example/v1/refunds"))
    assert type(bare) is APIError and "without a Location header" in str(bare)
    assert "What to do: check the base URL" in str(bare)
    for err in (moved, relative, bare):
        assert_keyless(err)


# -- how long a 429 asks to wait -------------------------------------------------------------

AT_0727 = 1792567620.0  # Wed, 21 Oct 2026 07:27:00 GMT


@pytest.mark.parametrize(
    ("headers", "error", "wait"),
    [
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, {}, 60.0),  # RFC 9110's date form
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:00 -0000"}, {}, 60.0),
        ({"Retry-After": "Wed, 21 Oct 2026 07:00:00 GMT"}, {}, 0.0),  # already past
        ({"Retry-After": "7"}, {"retry_after": 3}, 7.0),  # the header first
        ({"Retry-After": "soon"}, {"retry_after": 3}, 3.0),  # then error.retry_after
        ({"Retry-After": "inf"}, {}, None),
        ({"X-RateLimit-Reset": str(int(AT_0727) + 20)}, {}, 20.0),  # then the reset
        ({"X-RateLimit-Reset": str(int(AT_0727) - 5)}, {}, None),  # a reset gone by says nothing
        ({}, {}, None),  # the client then waits 1 s
    ],
)
def test_the_wait_a_429_asks_for(headers: dict, error: dict, wait: float | None) -> None:
    err = error_from_response(
        response(429, {"type": "rate_limit_error", **error}, headers), now=AT_0727
    )
    assert type(err) is RateLimitError and err.retry_after == wait


def test_a_retry_after_date_counts_from_now() -> None:
    err = error_from_response(response(429, {}, {"Retry-After": "Fri, 01 Jan 2100 00:00:00 GMT"}))
    assert err.retry_after is not None and err.retry_after > 365 * 86400


@pytest.mark.parametrize(
    ("code", "param", "advice", "not_said"),
    [
        ("invalid_state", None, "the object's current state does not allow this", "parameter"),
        ("invalid_state", None, "retrieve the object to see its status", "parameter"),
        ("idempotency_key_reused", None, "send a new request with a new key", "parameter"),
        ("idempotency_key_in_use", None, "still running", "parameter"),
        ("amount_too_large", "amount", "what is left", "parameter named above"),
        ("parameter_invalid", "limit", "fix the parameter named above", "state"),
        ("something_new", None, "refused the request as sent", "parameter named above"),
    ],
)
def test_a_400_or_409_gets_advice_for_its_code(
    code: str, param: str | None, advice: str, not_said: str
) -> None:
    body = {"type": "invalid_request_error", "code": code, "message": "No."}
    err = error_from_response(response(409, {**body, **({"param": param} if param else {})}))
    assert type(err) is InvalidRequestError
    said = str(err).partition("What to do:")[2]
    assert advice in said and not_said not in said, said


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        (5, "…"),
        (b"sk_test_51Habcdefabcd", "sk_test_…abcd"),
        (bytearray(b"sk_live_51Habcdefwxyz"), "sk_live_…wxyz"),
    ],
)
def test_masking_a_value_that_is_not_text_shows_no_more_and_does_not_fail(
    given: object, shown: str
) -> None:
    # Called on error paths, where a crash hides the error being reported: mask_key(5) raised
    # AttributeError ('int' object has no attribute 'startswith').
    from gwtools.secrets import mask_key, redact

    assert mask_key(given) == shown  # type: ignore[arg-type]
    assert redact(b"sent with sk_test_51Habcdefabcd") == "sent with sk_test_…abcd"  # type: ignore[arg-type]
    assert redact(None) == "None"  # type: ignore[arg-type]


def test_a_gateway_error_without_a_message_is_not_called_a_foreign_body() -> None:
    # The gateway's error object with no `message` (the spec's rules need only type, code,
    # param): it was called "not a gateway error object" beside its own type and code.
    err = error_from_response(
        response(
            400,
            {"type": "invalid_request_error", "code": "parameter_missing", "param": "amount"},
        )
    )
    assert "not a gateway error object" not in err.message
    assert "gave no message" in err.message
    assert "(type=invalid_request_error, code=parameter_missing, param=amount)" in err.message
    assert (err.code, err.param) == ("parameter_missing", "amount")
    # A body that is not the gateway's error object is still called so.
    other = error_from_response(response(400, body=b'{"message": 1}'))
    assert "the body is not a gateway error object" in other.message


def test_error_fields_that_are_numbers_are_kept_as_text() -> None:
    # .code/.param/.decline_code are text: a gateway sending a number must not hand the
    # caller an int that `err.code == "..."` or `.startswith` trips over.
    err = error_from_response(
        response(402, {"type": "card_error", "code": 51, "decline_code": 5, "param": 0})
    )
    assert (err.code, err.decline_code, err.param) == ("51", "5", "0")
