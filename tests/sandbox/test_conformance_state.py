"""Audit: a 409 invalid_state says what the caller can do about the payment's status
(wait, send the customer on, capture, refund, or start again), not only which status it is."""

from __future__ import annotations

from tests.sandbox.conftest import Payer, error_of


def _refused(payer: Payer, path: str, json: dict[str, object] | None = None) -> str:
    r = payer.http.post(path, json=json)
    assert r.status_code == 409, r.text
    err = error_of(r)
    assert (err["type"], err["code"]) == ("invalid_request_error", "invalid_state")
    message: str = err["message"]
    return message


def test_awaiting_the_customer_points_to_the_redirect(payer: Payer) -> None:
    if payer.variant == "A":
        pid, where = payer.create(expect=201).json()["id"], "redirect_url"
    else:
        pid = payer.create(card="4000002500003155", expect=201).json()["id"]
        where = "next_action.redirect_to_url"
    for path, body in ((f"/v1/payments/{pid}/capture", None), ("/v1/refunds", {"payment_id": pid})):
        message = _refused(payer, path, body)
        assert f"send them to {where}" in message


def test_authorized_is_told_to_capture_first(payer: Payer) -> None:
    p = payer.pay(capture="manual")
    assert p["status"] == "authorized"
    message = _refused(payer, "/v1/refunds", {"payment_id": p["id"]})
    assert f"capture it first (POST /v1/payments/{p['id']}/capture)" in message


def test_captured_is_told_to_refund_instead_of_void_or_capture(payer: Payer) -> None:
    p = payer.pay()
    assert p["status"] == payer.status("succeeded")
    void = _refused(payer, f"/v1/payments/{p['id']}/void")
    assert "refund it instead (POST /v1/refunds" in void
    capture = _refused(payer, f"/v1/payments/{p['id']}/capture")
    assert "already captured; there is nothing left to capture" in capture


def test_processing_is_told_to_retrieve_it_later(payer: Payer) -> None:
    p = payer.pay(card="4000000000001018")
    assert p["status"] == payer.status("processing")
    message = _refused(payer, "/v1/refunds", {"payment_id": p["id"]})
    assert "retrieve it again later" in message


def test_failed_is_told_to_create_a_new_payment(payer: Payer) -> None:
    p = payer.pay(card="4000000000000002")
    assert p["status"] == "failed"
    for path, body in (
        (f"/v1/payments/{p['id']}/capture", None),
        (f"/v1/payments/{p['id']}/void", None),
        ("/v1/refunds", {"payment_id": p["id"]}),
    ):
        assert "create a new payment" in _refused(payer, path, body)
