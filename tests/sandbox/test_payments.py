"""Payment creation, retrieval and the exact field lists of both variants."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import httpx

from gwtools.sandbox import Sandbox
from tests.sandbox.conftest import CANCEL_URL, LOOPBACK, SUCCESS_URL, Payer, error_of

ID = re.compile(r"^(pay|rfnd|pm|cus|evt|acct|we)_[A-Za-z0-9]{24}$")
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

FIELDS_A = {
    "id",
    "object",
    "amount",
    "currency",
    "status",
    "description",
    "payment_method",
    "payment_method_details",
    "captured",
    "captured_at",
    "refunded",
    "refunded_amount",
    "metadata",
    "created_at",
    "updated_at",
    "redirect_url",
    "success_url",
    "cancel_url",
    "expires_at",
}
FIELDS_B = {
    "id",
    "object",
    "amount",
    "currency",
    "status",
    "description",
    "payment_method",
    "payment_method_details",
    "captured",
    "captured_at",
    "refunded",
    "refunded_amount",
    "metadata",
    "receipt_email",
    "receipt_url",
    "client_secret",
    "next_action",
    "last_payment_error",
    "created",
    "livemode",
}
# Documented extensions (docs/sandbox.md): partial-capture amount, failure fields, customer.
EXTRA_A = {"amount_captured", "failure_code", "failure_message"}
EXTRA_B = {"amount_captured", "customer", "capture_method"}


def test_variant_a_creation_is_pending_with_checkout(sandbox_a: Sandbox) -> None:
    acct = LOOPBACK.post(f"{sandbox_a.base_url}/_sandbox/accounts").json()
    with httpx.Client(
        verify=False,
        base_url=sandbox_a.base_url,
        headers={"Authorization": f"Bearer {acct['secret_key']}"},
    ) as http:
        r = http.post(
            "/v1/payments",
            json={
                "amount": 2500,
                "success_url": SUCCESS_URL,
                "cancel_url": CANCEL_URL,
                "description": "Order 7",
                "metadata": {"order": "7"},
            },
        )
        assert r.status_code == 201, r.text
        p = r.json()
        assert set(p) == FIELDS_A | EXTRA_A
        assert ID.match(p["id"]) and p["id"].startswith("pay_")
        assert p["object"] == "payment" and p["status"] == "pending"
        assert p["currency"] == "MYR"  # default, upper case in variant A
        assert p["redirect_url"] == f"{sandbox_a.base_url}/pay/{p['id']}"
        assert ISO_Z.match(p["created_at"]) and ISO_Z.match(p["expires_at"])
        assert p["payment_method"] is None and p["payment_method_details"] is None
        assert p["captured"] is False and p["refunded_amount"] == 0
        clock = http.get("/_sandbox/clock").json()
        assert p["created_at"] == clock["now"]
        created = datetime.fromisoformat(p["created_at"])
        assert datetime.fromisoformat(p["expires_at"]) - created == timedelta(minutes=60)
        assert http.get(f"/v1/payments/{p['id']}").json() == p


def test_variant_b_direct_card_succeeds(sandbox_b: Sandbox) -> None:
    acct = LOOPBACK.post(f"{sandbox_b.base_url}/_sandbox/accounts").json()
    with httpx.Client(
        verify=False,
        base_url=sandbox_b.base_url,
        headers={"Authorization": f"Bearer {acct['secret_key']}"},
    ) as http:
        payer = Payer(sandbox_b, http)
        p = payer.create(1999, currency="MYR", receipt_email="a@b.example", expect=201).json()
        assert set(p) == FIELDS_B | EXTRA_B
        assert p["status"] == "succeeded" and p["captured"] is True
        assert p["currency"] == "myr"  # lower case in variant B
        assert isinstance(p["created"], int) and p["captured_at"] == p["created"]
        assert p["payment_method"].startswith("pm_") and ID.match(p["payment_method"])
        assert p["payment_method_details"] == {
            "type": "card",
            "brand": "visa",
            "last4": "4242",
            "exp_month": 12,
            "exp_year": 2030,
        }
        assert p["livemode"] is False and p["next_action"] is None
        assert p["last_payment_error"] is None and p["receipt_email"] == "a@b.example"
        assert p["client_secret"].startswith(p["id"] + "_secret_")
        assert http.get(f"/v1/payments/{p['id']}").json() == p


def test_retrieve_unknown_is_404(payer: Payer) -> None:
    r = payer.http.get("/v1/payments/pay_doesnotexist000000000000")
    assert r.status_code == 404
    err = error_of(r)
    assert err == {
        **err,
        "type": "invalid_request_error",
        "code": "resource_missing",
        "param": "id",
    }


def test_a_404_says_what_to_check_and_names_an_id_of_another_kind(payer: Payer) -> None:
    unknown = error_of(payer.http.get("/v1/payments/pay_doesnotexist000000000000"))
    assert unknown["message"].startswith("No such payment: 'pay_doesnotexist000000000000'.")
    assert "mode (test or live)" in unknown["message"]
    refund_id = error_of(payer.http.get("/v1/payments/rfnd_0000000000001abc"))
    assert "'rfnd_…' ids are refund ids, not payment ids" in refund_id["message"]
    pasted = "pay_" + "x" * 5000
    long = error_of(payer.http.get(f"/v1/payments/{pasted}"))
    assert pasted[:63] + "\u2026'" in long["message"] and len(long["message"]) < 300


def test_accounts_are_isolated(sandbox: Sandbox, payer: Payer) -> None:
    p = payer.create(expect=201).json()
    other = LOOPBACK.post(f"{sandbox.base_url}/_sandbox/accounts").json()
    r = LOOPBACK.get(
        f"{sandbox.base_url}/v1/payments/{p['id']}",
        headers={"Authorization": f"Bearer {other['secret_key']}"},
    )
    assert r.status_code == 404
    listed = LOOPBACK.get(
        f"{sandbox.base_url}/v1/payments",
        headers={"Authorization": f"Bearer {other['secret_key']}"},
    ).json()
    assert listed["data"] == []


def test_live_and_test_data_are_separate(
    sandbox: Sandbox, payer: Payer, account: dict[str, Any]
) -> None:
    p = payer.create(expect=201).json()
    live = {"Authorization": f"Bearer {account['live_secret_key']}"}
    assert payer.http.get(f"/v1/payments/{p['id']}", headers=live).status_code == 404
    assert payer.http.get("/v1/payments", headers=live).json()["data"] == []
    if sandbox.variant == "B":
        # a test card never succeeds with a live key
        r = payer.create(headers=live)
        assert r.status_code == 402
        assert error_of(r)["code"] == "card_declined"
        # a real (non-test) card does, in live mode only
        real = {"number": "4111111111111111", "exp_month": 1, "exp_year": 2031, "cvc": "999"}
        body = {
            "amount": 500,
            "currency": "myr",
            "payment_method_data": {"type": "card", "card": real},
        }
        ok = payer.http.post("/v1/payments", json=body, headers=live)
        assert ok.status_code == 201 and ok.json()["livemode"] is True
        assert payer.http.post("/v1/payments", json=body).status_code == 402


def test_variant_b_customer_save_and_expand(sandbox_b: Sandbox) -> None:
    acct = LOOPBACK.post(f"{sandbox_b.base_url}/_sandbox/accounts").json()
    auth = {"Authorization": f"Bearer {acct['secret_key']}"}
    with httpx.Client(verify=False, base_url=sandbox_b.base_url, headers=auth) as http:
        cus = http.post("/_sandbox/customers", json={"email": "c@x.example"}).json()
        assert ID.match(cus["id"]) and cus["id"].startswith("cus_")
        payer = Payer(sandbox_b, http)
        missing = payer.create(customer="cus_" + "x" * 24)
        assert missing.status_code == 404 and error_of(missing)["param"] == "customer"
        p = payer.create(customer=cus["id"], save_payment_method=True, expect=201).json()
        assert p["customer"] == cus["id"]
        again = payer.create(
            payment_method=p["payment_method"],
            customer=cus["id"],
            payment_method_data=None,
            expect=201,
        ).json()
        assert again["payment_method"] == p["payment_method"]
        expanded = http.get(
            f"/v1/payments/{p['id']}",
            params=[("expand[]", "customer"), ("expand[]", "payment_method")],
        )
        body = expanded.json()
        assert body["customer"]["id"] == cus["id"] and body["customer"]["email"] == "c@x.example"
        assert body["payment_method"]["id"] == p["payment_method"]
        assert body["payment_method"]["card"]["last4"] == "4242"
        bad = http.get(f"/v1/payments/{p['id']}", params={"expand": "balance"})
        assert bad.status_code == 400 and error_of(bad)["param"] == "expand"
        types = [e["type"] for e in http.get("/v1/events").json()["data"]]
        assert "customer.created" in types and "payment_method.attached" in types
        without = payer.create(save_payment_method=True)
        assert without.status_code == 400 and error_of(without)["param"] == "customer"


def test_variant_b_a_declined_card_is_not_saved_to_the_customer(sandbox_b: Sandbox) -> None:
    acct = LOOPBACK.post(f"{sandbox_b.base_url}/_sandbox/accounts").json()
    auth = {"Authorization": f"Bearer {acct['secret_key']}"}
    with httpx.Client(verify=False, base_url=sandbox_b.base_url, headers=auth) as http:
        cus = http.post("/_sandbox/customers", json={"email": "d@x.example"}).json()["id"]
        payer = Payer(sandbox_b, http)
        declined = payer.create(
            card="4000000000009995", customer=cus, save_payment_method=True, expect=402
        )
        failed = error_of(declined)["payment"]
        assert failed["status"] == "failed" and failed["customer"] == cus
        seen = http.get(
            f"/v1/payments/{failed['id']}", params=[("expand[]", "payment_method")]
        ).json()
        assert seen["payment_method"]["id"] == failed["payment_method"]
        assert seen["payment_method"]["customer"] is None
        ok = payer.create(customer=cus, save_payment_method=True, expect=201).json()
        attached = [
            e["data"]["object"]["id"]
            for e in http.get("/v1/events").json()["data"]
            if e["type"] == "payment_method.attached"
        ]
        assert attached == [ok["payment_method"]]
