"""A publishable (browser) key creates payments from details the customer enters; it cannot
charge or save a customer's payment methods (variant B ``customer``, ``payment_method``,
``save_payment_method``): those need the secret key, on the merchant's server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.conftest import CARD, Payer, error_of


def _pk(account: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {account['publishable_key']}"}


def _saved(payer: Payer) -> tuple[str, str]:
    """A customer and a payment method saved for them (made with the secret key)."""
    cus = payer.http.post("/_sandbox/customers", json={"email": "c@shop.example"})
    assert cus.status_code == 201, cus.text
    cid = cus.json()["id"]
    p = payer.create(customer=cid, save_payment_method=True, expect=201).json()
    return cid, p["payment_method"]


def _count(payer: Payer) -> int:
    return len(payer.http.get("/v1/payments", params={"limit": 100}).json()["data"])


@pytest.mark.parametrize("use", ["saved method", "saved method alone", "save for customer"])
def test_publishable_key_cannot_use_customers_or_saved_methods(payer_b: Payer, use: str) -> None:
    payer = payer_b
    cid, pm = _saved(payer)
    body: dict[str, Any] = {"amount": 1000, "currency": "myr"}
    if use == "saved method":
        body.update(customer=cid, payment_method=pm)
        param = "customer"
    elif use == "saved method alone":
        body.update(payment_method=pm)
        param = "payment_method"
    else:
        body.update(
            customer=cid,
            save_payment_method=True,
            payment_method_data={"type": "card", "card": CARD},
        )
        param = "customer"
    before = _count(payer)
    r = payer.http.post("/v1/payments", json=body, headers=_pk(payer.account))
    assert r.status_code == 401, r.text
    err = error_of(r)
    assert (err["type"], err["code"], err["param"]) == (
        "authentication_error",
        "invalid_api_key",
        param,
    )
    assert "publishable key" in err["message"] and "secret key (sk_" in err["message"]
    assert "payment_method_data" in err["message"]  # what the browser may send instead
    assert payer.account["publishable_key"] not in r.text
    assert _count(payer) == before  # nothing charged


def test_publishable_key_cannot_save_a_method(payer_b: Payer) -> None:
    # save_payment_method without a customer is refused for the key, not as a missing customer
    body = {
        "amount": 1000,
        "currency": "myr",
        "save_payment_method": True,
        "payment_method_data": {"type": "card", "card": CARD},
    }
    r = payer_b.http.post("/v1/payments", json=body, headers=_pk(payer_b.account))
    assert r.status_code == 401, r.text
    assert error_of(r)["param"] == "save_payment_method"


def test_publishable_key_still_creates_with_payment_method_data(payer_b: Payer) -> None:
    r = payer_b.create(headers=_pk(payer_b.account), save_payment_method=False)
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "succeeded"


def test_publishable_key_creates_variant_a_checkouts(payer_a: Payer) -> None:
    r = payer_a.create(headers=_pk(payer_a.account))
    assert r.status_code == 201, r.text
