"""Integer parameters take integer literals only: 1e3 and 1000.0 are refused like 1.5 is.

JSON has one number type, so the rule is about how the number is written: digits only, no
decimal point or exponent. Bodies are sent as raw bytes, since a JSON encoder would never
write ``1e3`` for us.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.sandbox.conftest import CANCEL_URL, SUCCESS_URL, Payer, error_of

NOT_INTEGERS = ["1e3", "1E3", "1000.0", "1.0e3", "1.5", "-0.0", "100000000000000000000"]


def _post(payer: Payer, path: str, raw: str) -> httpx.Response:
    return payer.http.post(path, content=raw, headers={"Content-Type": "application/json"})


def _refused(r: httpx.Response, param: str) -> None:
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["type"], err["code"], err["param"]) == (
        "invalid_request_error",
        "parameter_invalid",
        param,
    )
    assert "must be an integer" in err["message"] and "digits only" in err["message"]


def _creation(payer: Payer, amount: str) -> str:
    if payer.variant == "A":
        return (
            f'{{"amount": {amount}, "success_url": "{SUCCESS_URL}", "cancel_url": "{CANCEL_URL}"}}'
        )
    card = '{"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}'
    return (
        f'{{"amount": {amount}, "currency": "myr", '
        f'"payment_method_data": {{"type": "card", "card": {card}}}}}'
    )


def _count(payer: Payer, path: str) -> int:
    return len(payer.http.get(path, params={"limit": 100}).json()["data"])


@pytest.mark.parametrize("amount", NOT_INTEGERS)
def test_creation_amount(payer: Payer, amount: str) -> None:
    _refused(_post(payer, "/v1/payments", _creation(payer, amount)), "amount")
    assert _count(payer, "/v1/payments") == 0
    assert _post(payer, "/v1/payments", _creation(payer, "1000")).status_code == 201


@pytest.mark.parametrize("amount", NOT_INTEGERS)
def test_capture_amount(payer: Payer, amount: str) -> None:
    p = payer.pay(1000, capture="manual")
    _refused(_post(payer, f"/v1/payments/{p['id']}/capture", f'{{"amount": {amount}}}'), "amount")
    assert payer.get(p["id"])["status"] == "authorized"
    r = _post(payer, f"/v1/payments/{p['id']}/capture", '{"amount": 500}')
    assert r.status_code == 200 and r.json()["amount_captured"] == 500


@pytest.mark.parametrize("amount", NOT_INTEGERS)
def test_refund_amount(payer: Payer, amount: str) -> None:
    p = payer.pay(1000)
    body = f'{{"payment_id": "{p["id"]}", "amount": {amount}}}'
    _refused(_post(payer, "/v1/refunds", body), "amount")
    assert _count(payer, "/v1/refunds") == 0
    ok = _post(payer, "/v1/refunds", f'{{"payment_id": "{p["id"]}", "amount": 100}}')
    assert ok.status_code == 201 and ok.json()["amount"] == 100


@pytest.mark.parametrize(
    ("field", "written"),
    [("exp_month", "12.0"), ("exp_month", "1.2e1"), ("exp_year", "2030.0"), ("exp_year", "2.03e3")],
)
def test_card_expiry(payer_b: Payer, field: str, written: str) -> None:
    card = {"number": '"4242424242424242"', "exp_month": "12", "exp_year": "2030", "cvc": '"123"'}
    card[field] = written
    fields = ", ".join(f'"{k}": {v}' for k, v in card.items())
    raw = (
        '{"amount": 100, "currency": "myr", '
        f'"payment_method_data": {{"type": "card", "card": {{{fields}}}}}}}'
    )
    _refused(_post(payer_b, "/v1/payments", raw), f"payment_method_data[card][{field}]")
    assert _count(payer_b, "/v1/payments") == 0


@pytest.mark.parametrize("written", ["1e1", "10.0", " 10", "+10", "1_0", "\u0661\u0660", "0x0a"])
def test_list_limit_and_page(payer: Payer, written: str) -> None:
    r = payer.http.get("/v1/payments", params={"limit": written})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["param"] == "limit" and "digits only" in err["message"]
    if payer.variant == "A":
        r = payer.http.get("/v1/payments", params={"page": written})
        assert r.status_code == 400 and error_of(r)["param"] == "page"
    assert payer.http.get("/v1/payments", params={"limit": "10"}).status_code == 200


@pytest.mark.parametrize(
    "written",
    ["\u00b2", "\uff11\uff12", "\u0661\u0662", "1" * 5000],
    ids=["superscript 2", "full-width 12", "Arabic-Indic 12", "5000 digits"],
)
def test_checkout_page_expiry_digits(payer_a: Payer, written: str) -> None:
    """The hosted checkout refuses non-ASCII digits (int() would read "١٢" as 12, and "²"
    used to end in a 500) and shows the form again."""
    pid = payer_a.create(expect=201).json()["id"]
    form = {"action": "pay", "method": "card", "number": "4242424242424242", "cvc": "123"}
    page = payer_a.http.post(f"/pay/{pid}", data={**form, "exp_month": written, "exp_year": "2030"})
    assert page.status_code == 400 and "expiry month" in page.text
    assert payer_a.get(pid)["status"] == "pending"


def test_admin_integers(payer: Payer) -> None:
    before: dict[str, Any] = payer.http.get("/_sandbox/rate_limits").json()
    r = payer.http.put("/_sandbox/rate_limits", json={"all": 100.0})
    _refused(r, "all")
    assert payer.http.get("/_sandbox/rate_limits").json() == before
    _refused(_post(payer, "/_sandbox/history", '{"payments": 1e1, "days": 5}'), "payments")
    _refused(_post(payer, "/_sandbox/history", '{"payments": 10, "days": 5.0}'), "days")
    assert _count(payer, "/v1/payments") == 0


def test_integers_beyond_64_bits_are_called_too_large(payer: Payer) -> None:
    """orjson reads 99999999999999999999999 as a float: the message used to show "1e+23" and
    ask for digits only, which the caller had written."""
    r = _post(payer, "/v1/payments", _creation(payer, "99999999999999999999999"))
    _refused(r, "amount")
    message = error_of(r)["message"]
    assert "too large" in message and "from 1 to 99999999" in message
    assert "e+" not in message
    assert _count(payer, "/v1/payments") == 0
