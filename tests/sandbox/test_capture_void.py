"""Capture (full, partial, empty body) and void, with their state errors."""

from __future__ import annotations

from tests.sandbox.conftest import Payer, error_of


def test_capture_full_with_empty_body(payer: Payer) -> None:
    p = payer.pay(1500, capture="manual")
    for body in ({"content": b""}, {"json": {}}):
        r = payer.http.post(f"/v1/payments/{p['id']}/capture", **body)  # type: ignore[arg-type]
        if r.status_code == 409:  # second round: already captured
            assert error_of(r)["code"] == "invalid_state"
            continue
        assert r.status_code == 200, r.text
        c = r.json()
        assert c["status"] == payer.status("succeeded") and c["captured"] is True
        assert c["captured_at"] is not None and c["amount_captured"] == 1500
    assert payer.get(p["id"])["captured"] is True


def test_partial_capture_limits_refunds(payer: Payer) -> None:
    p = payer.pay(1000, capture="manual")
    r = payer.http.post(f"/v1/payments/{p['id']}/capture", json={"amount": 600})
    assert r.status_code == 200 and r.json()["amount_captured"] == 600
    assert r.json()["amount"] == 1000
    too_much = payer.http.post("/v1/refunds", json={"payment_id": p["id"], "amount": 601})
    assert too_much.status_code == 409 and error_of(too_much)["code"] == "amount_too_large"
    full = payer.http.post("/v1/refunds", json={"payment_id": p["id"]})
    assert full.status_code == 201 and full.json()["amount"] == 600
    assert payer.get(p["id"])["refunded"] is True


def test_capture_errors(payer: Payer) -> None:
    p = payer.pay(1000, capture="manual")
    over = payer.http.post(f"/v1/payments/{p['id']}/capture", json={"amount": 1001})
    assert over.status_code == 400 and error_of(over)["param"] == "amount"
    zero = payer.http.post(f"/v1/payments/{p['id']}/capture", json={"amount": 0})
    assert zero.status_code == 400
    unknown = payer.http.post(f"/v1/payments/{p['id']}/capture", json={"amout": 5})
    assert unknown.status_code == 400 and error_of(unknown)["param"] == "amout"
    captured = payer.pay(1000)
    again = payer.http.post(f"/v1/payments/{captured['id']}/capture")
    assert again.status_code == 409 and error_of(again)["code"] == "invalid_state"
    missing = payer.http.post("/v1/payments/pay_000000000000000000000000/capture")
    assert missing.status_code == 404


def test_void_authorized_then_not_capturable(payer: Payer) -> None:
    p = payer.pay(capture="manual")
    r = payer.http.post(f"/v1/payments/{p['id']}/void")
    assert r.status_code == 200 and r.json()["status"] == payer.status("canceled")
    assert r.json()["captured"] is False
    cap = payer.http.post(f"/v1/payments/{p['id']}/capture")
    assert cap.status_code == 409 and error_of(cap)["code"] == "invalid_state"
    again = payer.http.post(f"/v1/payments/{p['id']}/void")
    assert again.status_code == 409
    events = [e["type"] for e in payer.http.get("/v1/events").json()["data"]]
    assert "payment.canceled" in events


def test_void_captured_is_409(payer: Payer) -> None:
    p = payer.pay()
    r = payer.http.post(f"/v1/payments/{p['id']}/void", json={})
    assert r.status_code == 409 and error_of(r)["code"] == "invalid_state"
    body = payer.http.post(f"/v1/payments/{p['id']}/void", json={"reason": "x"})
    assert body.status_code == 400


def test_variant_a_expiry_after_60_minutes(payer_a: Payer) -> None:
    payer = payer_a
    p = payer.create(expect=201).json()
    payer.advance(59 * 60)
    assert payer.get(p["id"])["status"] == "pending"
    payer.advance(60)
    assert payer.get(p["id"])["status"] == "expired"
    assert payer.checkout(p["id"]).status_code == 409
    listed = payer.http.get("/v1/payments", params={"status": "expired"}).json()["data"]
    assert [x["id"] for x in listed] == [p["id"]]


def test_variant_a_cancel_at_checkout(payer_a: Payer) -> None:
    payer = payer_a
    p = payer.create(expect=201).json()
    page = payer.http.get(f"/pay/{p['id']}")
    assert page.status_code == 200 and "<form" in page.text
    r = payer.checkout(p["id"], action="cancel")
    assert r.status_code == 303 and r.headers["location"] == "https://shop.example/cancel"
    assert payer.get(p["id"])["status"] == "cancelled"


def test_void_while_processing_says_to_wait_for_the_outcome(payer: Payer) -> None:
    """Variant A shows a processing payment as pending, which can otherwise be voided: the
    409 says what is going on instead of 'is pending; only ... awaiting the customer'."""
    p = payer.pay(card="4000000000001018")  # processing 30 s, then succeeds
    assert p["status"] == payer.status("processing")
    r = payer.http.post(f"/v1/payments/{p['id']}/void")
    assert r.status_code == 409
    err = error_of(r)
    assert err["code"] == "invalid_state"
    shown = " (shown as pending in variant A)" if payer.variant == "A" else ""
    assert err["message"] == (
        f"Payment {p['id']} is processing{shown}: it awaits the card's or the bank's answer "
        "and cannot be voided now; retrieve it again later to see the outcome."
    )
    assert payer.get(p["id"])["status"] == payer.status("processing")  # nothing changed
    payer.advance(30)
    assert payer.get(p["id"])["status"] == payer.status("succeeded")
