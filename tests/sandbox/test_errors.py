"""Bad input of every kind gets a 4xx with the spec's error body, never a 500."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.sandbox.conftest import CANCEL_URL, SUCCESS_URL, Payer, error_of

CARD = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}


def _valid(variant: str) -> dict[str, Any]:
    if variant == "A":
        return {"amount": 1000, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
    return {
        "amount": 1000,
        "currency": "myr",
        "payment_method_data": {"type": "card", "card": dict(CARD)},
    }


# (change to a valid body, expected status, code, param); None value = remove the field
CASES: list[tuple[str, dict[str, Any], int, str, str | None]] = [
    ("amount zero", {"amount": 0}, 400, "parameter_invalid", "amount"),
    ("amount negative", {"amount": -100}, 400, "parameter_invalid", "amount"),
    ("amount string", {"amount": "100"}, 400, "parameter_invalid", "amount"),
    ("amount fraction", {"amount": 10.5}, 400, "parameter_invalid", "amount"),
    ("amount bool", {"amount": True}, 400, "parameter_invalid", "amount"),
    ("amount huge", {"amount": 10**12}, 400, "parameter_invalid", "amount"),
    ("amount missing", {"amount": None}, 400, "parameter_missing", "amount"),
    ("currency unknown", {"currency": "XYZ"}, 400, "parameter_invalid", "currency"),
    ("currency number", {"currency": 458}, 400, "parameter_invalid", "currency"),
    ("description too long", {"description": "x" * 256}, 400, "parameter_invalid", "description"),
    ("description type", {"description": ["a"]}, 400, "parameter_invalid", "description"),
    ("metadata not object", {"metadata": "a=b"}, 400, "parameter_invalid", "metadata"),
    ("metadata nested", {"metadata": {"a": {"b": 1}}}, 400, "parameter_invalid", "metadata[a]"),
    (
        "metadata long key",
        {"metadata": {"k" * 41: "v"}},
        400,
        "parameter_invalid",
        "metadata[" + "k" * 41 + "]",
    ),
    ("unknown field", {"colour": "red"}, 400, "parameter_invalid", "colour"),
]
A_CASES = [
    ("success_url missing", {"success_url": None}, 400, "parameter_missing", "success_url"),
    ("cancel_url not a url", {"cancel_url": "shop/cancel"}, 400, "parameter_invalid", "cancel_url"),
    (
        "metadata 11 keys",
        {"metadata": {f"k{i}": "v" for i in range(11)}},
        400,
        "parameter_invalid",
        "metadata",
    ),
    ("B-only field", {"capture_method": "manual"}, 400, "parameter_invalid", "capture_method"),
]
B_CASES = [
    ("currency missing", {"currency": None}, 400, "parameter_missing", "currency"),
    ("no method", {"payment_method_data": None}, 400, "parameter_missing", "payment_method"),
    (
        "metadata 51 keys",
        {"metadata": {f"k{i}": "v" for i in range(51)}},
        400,
        "parameter_invalid",
        "metadata",
    ),
    (
        "capture_method unknown",
        {"capture_method": "later"},
        400,
        "parameter_invalid",
        "capture_method",
    ),
    (
        "method type unknown",
        {"payment_method_data": {"type": "paypal"}},
        400,
        "parameter_invalid",
        "payment_method_data[type]",
    ),
    (
        "card missing number",
        {"payment_method_data": {"type": "card", "card": {"cvc": "123"}}},
        400,
        "parameter_missing",
        "payment_method_data[card][number]",
    ),
    (
        "card unknown field",
        {"payment_method_data": {"type": "card", "card": {**CARD, "pin": 1}}},
        400,
        "parameter_invalid",
        "payment_method_data[card][pin]",
    ),
    (
        "exp_month string",
        {"payment_method_data": {"type": "card", "card": {**CARD, "exp_month": "12"}}},
        400,
        "parameter_invalid",
        "payment_method_data[card][exp_month]",
    ),
    ("receipt_email", {"receipt_email": "nobody"}, 400, "parameter_invalid", "receipt_email"),
    (
        "unknown payment_method",
        {"payment_method_data": None, "payment_method": "pm_nope"},
        404,
        "resource_missing",
        "payment_method",
    ),
    ("save without customer", {"save_payment_method": True}, 400, "parameter_missing", "customer"),
    ("A-only field", {"success_url": SUCCESS_URL}, 400, "parameter_invalid", "success_url"),
]


def _ids(value: Any) -> str:
    return value if isinstance(value, str) and " " in value else ""


@pytest.mark.parametrize(("name", "change", "status", "code", "param"), CASES, ids=_ids)
def test_bad_creation_parameters(
    payer: Payer, name: str, change: dict[str, Any], status: int, code: str, param: str | None
) -> None:
    _check(payer, change, status, code, param)


@pytest.mark.parametrize(("name", "change", "status", "code", "param"), A_CASES, ids=_ids)
def test_bad_creation_parameters_a(
    payer_a: Payer, name: str, change: dict[str, Any], status: int, code: str, param: str | None
) -> None:
    _check(payer_a, change, status, code, param)


@pytest.mark.parametrize(("name", "change", "status", "code", "param"), B_CASES, ids=_ids)
def test_bad_creation_parameters_b(
    payer_b: Payer, name: str, change: dict[str, Any], status: int, code: str, param: str | None
) -> None:
    _check(payer_b, change, status, code, param)


def _check(payer: Payer, change: dict[str, Any], status: int, code: str, param: str | None) -> None:
    body = _valid(payer.variant)
    for key, value in change.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    r = payer.http.post("/v1/payments", json=body)
    assert r.status_code == status, r.text
    err = error_of(r)
    assert err["type"] == "invalid_request_error" and err["code"] == code
    assert err.get("param") == param
    assert payer.http.get("/v1/payments").json()["data"] == []  # nothing was stored


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"{not json", 400),
        (b"[1, 2]", 400),
        (b'"text"', 400),
        (b"", 400),
        (b"\xff\xfe", 400),
        (b'{"amount": 1' + b" " * 70_000 + b"}", 413),
    ],
)
def test_malformed_bodies(payer: Payer, raw: bytes, status: int) -> None:
    r = payer.http.post("/v1/payments", content=raw, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    assert error_of(r)["type"] == "invalid_request_error"


def test_huge_body_without_content_length_is_413(payer: Payer) -> None:
    def chunks() -> Any:
        yield b'{"amount": 1, "description": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}'

    r = payer.http.post(
        "/v1/payments", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 413 and error_of(r)["code"] == "parameter_invalid"


def test_unknown_routes_and_methods(payer: Payer) -> None:
    r = payer.http.get("/v1/balance")
    assert r.status_code == 404 and error_of(r)["code"] == "resource_missing"
    r = payer.http.delete("/v1/payments")
    assert r.status_code == 405 and r.headers["allow"] == "GET, POST"
    assert error_of(r)["type"] == "invalid_request_error"


@pytest.mark.parametrize("call", ["create", "capture", "void", "refund"])
def test_post_query_parameters_are_refused(payer: Payer, call: str) -> None:
    """``?amount=500`` on a POST used to be ignored: a full capture or refund instead of the
    partial one meant."""
    p = payer.pay(1000, capture="manual" if call in ("capture", "void") else "automatic")
    path, body = {
        "create": ("/v1/payments", _valid(payer.variant)),
        "capture": (f"/v1/payments/{p['id']}/capture", {}),
        "void": (f"/v1/payments/{p['id']}/void", {}),
        "refund": ("/v1/refunds", {"payment_id": p["id"]}),
    }[call]
    r = payer.http.post(path, params={"amount": 500}, json=body)
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "amount")
    assert "JSON body" in err["message"] or "no parameters" in err["message"]
    after = payer.get(p["id"])
    assert (after["status"], after["amount_captured"], after["refunded_amount"]) == (
        p["status"],
        p["amount_captured"],
        0,
    )
    assert len(payer.http.get("/v1/payments").json()["data"]) == 1  # nothing was created


def test_duplicate_json_names_are_refused(payer: Payer) -> None:
    """orjson keeps the last of two equal names: {"amount": 1000, "amount": 5} charged 5."""
    body = orjson.dumps(_valid(payer.variant))[:-1] + b', "amount": 5}'
    r = payer.http.post("/v1/payments", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["code"] == "parameter_invalid"
    assert "'amount' more than once" in err["message"] and "give each field once" in err["message"]
    assert err["param"] == "amount"  # the name given twice is the offending parameter
    nested = orjson.dumps({**_valid(payer.variant), "metadata": {"a": "1"}})
    nested = nested.replace(b'{"a":"1"}', b'{"a":"1","a":"2"}')
    r = payer.http.post(
        "/v1/payments", content=nested, headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 400 and "'a' more than once" in error_of(r)["message"]
    assert error_of(r)["param"] == "metadata[a]"  # named as the other nested errors are
    assert payer.http.get("/v1/payments").json()["data"] == []


def test_body_errors_say_what_to_send(payer: Payer) -> None:
    form = payer.http.post("/v1/payments", data={"amount": "1000"})
    assert form.status_code == 400
    assert "Content-Type: application/json" in error_of(form)["message"]
    array = payer.http.post("/v1/payments", json=[_valid(payer.variant)])
    assert array.status_code == 400 and "got array" in error_of(array)["message"]


def test_metadata_numbers_that_would_lose_digits_are_refused(payer: Payer) -> None:
    """A number beyond 2**53 is read as a double: 12345678901234567890123 came back as
    1.2345678901234568e+22."""
    body = (
        orjson.dumps(_valid(payer.variant))[:-1]
        + b', "metadata": {"order": 12345678901234567890123}}'
    )
    r = payer.http.post("/v1/payments", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "metadata[order]")
    assert "send it as a string" in err["message"]
    assert payer.http.get("/v1/payments").json()["data"] == []
    # integers up to 64 bits are kept exactly
    body = orjson.dumps({**_valid(payer.variant), "metadata": {"order": 12345678901234567890}})
    r = payer.http.post("/v1/payments", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 201 and b'"order":12345678901234567890' in r.content


def test_missing_method_names_both_ways_to_give_one(payer_b: Payer) -> None:
    """Variant B: neither payment_method nor payment_method_data. Naming payment_method only
    sent callers who pass card details looking for a pm_ id."""
    body = {k: v for k, v in _valid("B").items() if k != "payment_method_data"}
    r = payer_b.http.post("/v1/payments", json=body)
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_missing", "payment_method")
    assert err["message"] == (
        "Missing required parameter: payment_method or payment_method_data. Give "
        "payment_method (a saved pm_ id) or payment_method_data (type card or fpx, with its "
        "card or fpx object)."
    )
    assert payer_b.http.get("/v1/payments").json()["data"] == []
