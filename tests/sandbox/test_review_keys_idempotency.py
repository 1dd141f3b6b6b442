"""Idempotency keys are scoped per API key and endpoint: a rolled key, the other mode's key and
the publishable key each have their own."""

from __future__ import annotations

import uuid
from typing import Any

from gwtools.sandbox import Sandbox
from tests.sandbox.conftest import CANCEL_URL, SUCCESS_URL, Payer


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def _body(payer: Payer) -> dict[str, Any]:
    if payer.variant == "A":
        return {"amount": 1500, "success_url": SUCCESS_URL, "cancel_url": CANCEL_URL}
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
    return {
        "amount": 1500,
        "currency": "myr",
        "payment_method_data": {"type": "card", "card": card},
    }


def _ids(payer: Payer) -> list[str]:
    body = payer.http.get("/v1/payments", params={"limit": 100}).json()
    return [p["id"] for p in body["data"]]


def _roll(payer: Payer, key: str) -> str:
    r = payer.http.post("/_sandbox/keys/roll", headers=_bearer(key))
    assert r.status_code == 200, r.text
    new: str = r.json()["secret_key"]
    return new


def test_a_rolled_keys_replacement_has_its_own_idempotency_keys(
    payer: Payer, account: dict[str, Any]
) -> None:
    # Keys are scoped per API key (the documented rule): the replacement starts afresh, so a
    # client retrying across a roll must keep using the key it started with (it stays valid
    # for 24 hours).
    old = account["secret_key"]
    ikey = {"Idempotency-Key": str(uuid.uuid4())}
    first = payer.http.post("/v1/payments", json=_body(payer), headers={**ikey, **_bearer(old)})
    assert first.status_code == 201, first.text
    new = _roll(payer, old)
    again = payer.http.post("/v1/payments", json=_body(payer), headers={**ikey, **_bearer(old)})
    assert again.headers["idempotent-replayed"] == "true" and again.content == first.content
    other = payer.http.post("/v1/payments", json=_body(payer), headers={**ikey, **_bearer(new)})
    assert other.status_code == 201 and "idempotent-replayed" not in other.headers
    assert other.json()["id"] != first.json()["id"]


def test_test_and_live_mode_do_not_share_idempotency_keys(
    sandbox_a: Sandbox, payer_a: Payer
) -> None:
    # variant A: a live creation needs no card, so both modes can create the same body
    acct = payer_a.account
    ikey = {"Idempotency-Key": "same-in-both-modes"}
    body = _body(payer_a)
    test = payer_a.http.post("/v1/payments", json=body, headers=ikey)
    live = payer_a.http.post(
        "/v1/payments", json=body, headers={**ikey, **_bearer(acct["live_secret_key"])}
    )
    assert test.status_code == live.status_code == 201
    assert "idempotent-replayed" not in live.headers
    assert live.json()["id"] != test.json()["id"]


def test_publishable_and_secret_keys_do_not_share_idempotency_keys(
    payer: Payer, account: dict[str, Any]
) -> None:
    # a publishable key is public: it must not read back what the secret key created
    ikey = {"Idempotency-Key": "order-8"}
    secret = payer.http.post("/v1/payments", json=_body(payer), headers=ikey)
    public = payer.http.post(
        "/v1/payments", json=_body(payer), headers={**ikey, **_bearer(account["publishable_key"])}
    )
    assert secret.status_code == public.status_code == 201
    assert "idempotent-replayed" not in public.headers
    assert public.json()["id"] != secret.json()["id"]
