"""Audit against the spec and DESIGN.md: error bodies and headers a client developer relies on.

Every ``/v1`` response is JSON with the spec's error body and carries ``Service-Version`` and
the ``X-RateLimit-*`` headers (DESIGN.md section 3), unexpected failures and mistyped paths
included; messages name the JSON types a client actually sent.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gwtools.sandbox import create_app
from tests.sandbox.conftest import CARD, Payer, error_of

RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")


def _valid(variant: str) -> dict[str, Any]:
    if variant == "A":
        return {
            "amount": 1000,
            "success_url": "https://shop.example/ok",
            "cancel_url": "https://shop.example/cancel",
        }
    return {
        "amount": 1000,
        "currency": "myr",
        "payment_method_data": {"type": "card", "card": dict(CARD)},
    }


def _broken_app(variant: str, method: str) -> tuple[Any, str]:
    """A private app whose gateway method ``method`` fails as a bug would."""
    app = create_app(variant, now=datetime(2026, 3, 2, 9, tzinfo=UTC))  # type: ignore[arg-type]
    gw = app.state.gateway

    def boom(*args: Any, **kwargs: Any) -> bytes:
        raise RuntimeError("a bug in the sandbox")

    setattr(gw, method, boom)
    return app, gw.default_account["secret_key"]


def _call(
    app: Any,
    key: str,
    method: str,
    path: str,
    *,
    headers: dict[str, str] | None = None,
    **kwargs: Any,
) -> httpx.Response:
    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
            return await client.request(
                method,
                path,
                headers={"Authorization": f"Bearer {key}", **(headers or {})},
                **kwargs,
            )

    return asyncio.run(main())


@pytest.mark.parametrize("variant", ["A", "B"])
def test_unexpected_server_error_keeps_the_error_body_and_the_headers(
    variant: str, caplog: pytest.LogCaptureFixture
) -> None:
    app, key = _broken_app(variant, "list_objects")
    with caplog.at_level(logging.ERROR, logger="gwtools.sandbox"):
        r = _call(app, key, "GET", "/v1/payments")
    assert r.status_code == 500
    err = error_of(r)
    assert (err["type"], err["code"]) == ("api_error", "processing_error")
    assert "retry" in err["message"].lower()
    assert r.headers["service-version"] == "2024-01-01"
    for name in RATE_HEADERS:
        assert r.headers[name].isdigit(), name
    assert "a bug in the sandbox" in caplog.text  # the details go to the log, not the client


def test_unexpected_error_on_an_idempotent_creation_is_not_replayed() -> None:
    app, key = _broken_app("A", "create_payment")
    gw = app.state.gateway
    headers = {"Idempotency-Key": "after-a-500"}
    r = _call(app, key, "POST", "/v1/payments", json=_valid("A"), headers=headers)
    assert r.status_code == 500 and "x-ratelimit-limit" in r.headers, r.text
    del gw.create_payment  # the bug is fixed: the instance attribute shadowed the method
    again = _call(app, key, "POST", "/v1/payments", json=_valid("A"), headers=headers)
    assert again.status_code == 201 and "idempotent-replayed" not in again.headers


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/payments/"), ("POST", "/v1/payments/"), ("GET", "/v1/refunds/")],
)
def test_a_trailing_slash_gets_a_json_404_naming_the_path_to_use(
    payer: Payer, method: str, path: str
) -> None:
    r = payer.http.request(method, path, json=_valid(payer.variant) if method == "POST" else None)
    assert r.status_code == 404, (r.status_code, r.headers)
    err = error_of(r)
    assert (err["type"], err["code"]) == ("invalid_request_error", "resource_missing")
    assert f"use {path.rstrip('/')}" in err["message"]
    assert r.headers["service-version"] == "2024-01-01" and "x-ratelimit-limit" in r.headers
    assert payer.http.get("/v1/payments").json()["data"] == []


def test_a_trailing_slash_is_a_404_for_a_publishable_key_too(
    payer: Payer, account: dict[str, Any]
) -> None:
    pk = {"Authorization": f"Bearer {account['publishable_key']}"}
    r = payer.http.post("/v1/payments/", json=_valid(payer.variant), headers=pk)
    assert r.status_code == 404 and "use /v1/payments" in error_of(r)["message"]
    pid = payer.create(expect=201).json()["id"]
    r = payer.http.get(f"/v1/payments/{pid}/")
    assert r.status_code == 404 and f"use /v1/payments/{pid}" in error_of(r)["message"]


@pytest.mark.parametrize(
    ("change", "param", "sent"),
    [
        ({"description": 5}, "description", "got number 5"),
        ({"description": {"a": 1}}, "description", "got object"),
        ({"metadata": "a=b"}, "metadata", 'got string "a=b"'),
        ({"metadata": ["a"]}, "metadata", "got array"),
    ],
)
def test_wrong_types_are_named_as_json_names_them(
    payer: Payer, change: dict[str, Any], param: str, sent: str
) -> None:
    r = payer.http.post("/v1/payments", json={**_valid(payer.variant), **change})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", param)
    assert sent in err["message"]
    assert not re.search(r"got (int|float|dict|list|str|bool)\b", err["message"])


@pytest.mark.parametrize(
    ("change", "param", "sent"),
    [
        ({"cvc": 123}, "payment_method_data[card][cvc]", "got number 123"),
        ({"number": 4242424242424242}, "payment_method_data[card][number]", "got number"),
    ],
)
def test_wrong_card_field_types_are_named_as_json_names_them(
    payer_b: Payer, change: dict[str, Any], param: str, sent: str
) -> None:
    body = _valid("B")
    body["payment_method_data"]["card"].update(change)
    r = payer_b.http.post("/v1/payments", json=body)
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", param)
    assert sent in err["message"] and "double quotes" in err["message"]


def test_wrong_boolean_and_method_shapes_say_what_was_sent(payer_b: Payer) -> None:
    r = payer_b.http.post("/v1/payments", json={**_valid("B"), "save_payment_method": "yes"})
    err = error_of(r)
    assert err["param"] == "save_payment_method" and 'got string "yes"' in err["message"]
    body = _valid("B")
    body["payment_method_data"] = {"type": "card", "card": "4242424242424242"}
    err = error_of(payer_b.http.post("/v1/payments", json=body))
    assert err["param"] == "payment_method_data[card]"
    assert (
        "number, exp_month, exp_year and cvc" in err["message"] and "got string" in err["message"]
    )


@pytest.mark.parametrize("value", ["MYRR", "ringgit", "RM"])
def test_a_currency_of_the_wrong_length_is_told_the_three_letter_rule(
    payer: Payer, value: str
) -> None:
    r = payer.http.post("/v1/payments", json={**_valid(payer.variant), "currency": value})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "currency")
    assert "three-letter ISO code" in err["message"] and "maximum" not in err["message"]


def test_a_wrong_method_is_told_the_methods_the_path_takes(payer: Payer) -> None:
    r = payer.http.delete("/v1/payments")
    assert r.status_code == 405
    assert "use GET or POST" in error_of(r)["message"]
    pid = payer.create(expect=201).json()["id"]
    r = payer.http.get(f"/v1/payments/{pid}/capture")
    assert r.status_code == 405 and "use POST" in error_of(r)["message"]
    assert r.headers["service-version"] == "2024-01-01" and "x-ratelimit-limit" in r.headers
