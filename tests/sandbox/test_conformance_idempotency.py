"""Audit: an Idempotency-Key replays only the same request (DESIGN.md section 3): the query
string is part of the request, as the body is."""

from __future__ import annotations

from tests.sandbox.conftest import Payer, error_of


def _body(payer: Payer) -> dict[str, object]:
    if payer.variant == "A":
        return {
            "amount": 1000,
            "success_url": "https://shop.example/ok",
            "cancel_url": "https://shop.example/cancel",
        }
    card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
    return {
        "amount": 1000,
        "currency": "myr",
        "payment_method_data": {"type": "card", "card": card},
    }


def test_a_retry_without_the_stray_query_is_not_answered_with_the_old_refusal(
    payer: Payer,
) -> None:
    key = {"Idempotency-Key": "stray-query"}
    first = payer.http.post("/v1/payments", params={"amount": 500}, json=_body(payer), headers=key)
    assert first.status_code == 400 and error_of(first)["param"] == "amount"
    retry = payer.http.post("/v1/payments", json=_body(payer), headers=key)
    assert retry.status_code == 409, retry.text
    err = error_of(retry)
    assert err["code"] == "idempotency_key_reused" and "query" in err["message"]
    assert "idempotent-replayed" not in retry.headers
    assert payer.http.get("/v1/payments").json()["data"] == []


def test_the_same_query_in_another_order_is_the_same_request(payer: Payer) -> None:
    key = {"Idempotency-Key": "query-order"}
    first = payer.http.post("/v1/refunds?b=1&a=2", json={"payment_id": "pay_x"}, headers=key)
    again = payer.http.post("/v1/refunds?a=2&b=1", json={"payment_id": "pay_x"}, headers=key)
    assert first.status_code == again.status_code == 400
    assert again.content == first.content and again.headers["idempotent-replayed"] == "true"
