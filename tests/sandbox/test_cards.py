"""Every test card of docs/sandbox.md, in both variants (direct in B, checkout page in A)."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import CANCEL_URL, SUCCESS_URL, Payer, error_of

SUCCEEDING = {
    "4242424242424242": "visa",
    "5555555555554444": "mastercard",
    "378282246310005": "amex",
    "6011111111111117": "discover",
    "3566002020360505": "jcb",
}
DECLINES = {
    "4000000000000002": ("card_declined", "generic_decline"),
    "4000000000009995": ("card_declined", "insufficient_funds"),
    "4000000000009987": ("card_declined", "lost_card"),
    "4000000000009979": ("card_declined", "stolen_card"),
    "4000000000000069": ("expired_card", "expired_card"),
    "4000000000000127": ("incorrect_cvc", "incorrect_cvc"),
    "4000000000000119": ("processing_error", "processing_error"),
}


@pytest.mark.parametrize(("number", "brand"), SUCCEEDING.items())
def test_succeeding_cards(payer: Payer, number: str, brand: str) -> None:
    cvc = "1234" if brand == "amex" else "123"
    if payer.variant == "B":
        card = {"number": number, "exp_month": 1, "exp_year": 2031, "cvc": cvc}
        p = payer.create(payment_method_data={"type": "card", "card": card}, expect=201).json()
    else:
        pid = payer.create(expect=201).json()["id"]
        form = {
            "action": "pay",
            "method": "card",
            "number": number,
            "exp_month": "1",
            "exp_year": "2031",
            "cvc": cvc,
        }
        r = payer.http.post(f"/pay/{pid}", data=form, follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == SUCCESS_URL
        p = payer.get(pid)
    assert p["status"] == payer.status("succeeded") and p["captured"] is True
    assert p["payment_method_details"]["brand"] == brand
    assert p["payment_method_details"]["last4"] == number[-4:]


@pytest.mark.parametrize(("number", "codes"), DECLINES.items())
def test_declining_cards(payer: Payer, number: str, codes: tuple[str, str]) -> None:
    code, decline = codes
    if payer.variant == "B":
        r = payer.create(card=number)
        assert r.status_code == 402
        err = error_of(r)
        assert (err["type"], err["code"], err["decline_code"]) == ("card_error", code, decline)
        stored = payer.get(err["payment"]["id"])
        assert stored["status"] == "failed"
        assert stored["last_payment_error"]["code"] == code
        assert stored["last_payment_error"]["decline_code"] == decline
        assert stored["last_payment_error"]["message"]
        listed = payer.http.get("/v1/payments", params={"status": "failed"}).json()["data"]
        assert [p["id"] for p in listed] == [stored["id"]]
    else:
        pid = payer.create(expect=201).json()["id"]
        r = payer.checkout(pid, card=number)
        assert r.status_code == 303 and r.headers["location"] == CANCEL_URL
        stored = payer.get(pid)
        assert stored["status"] == "failed" and stored["failure_code"] == code


#: The sandbox's own declining numbers of the other brands (docs/sandbox.md): a brand prefix and
#: the last four digits of the Visa number with the same decline.
BRAND_PREFIXES = {
    "mastercard": "510000003000",
    "amex": "37000000000",
    "discover": "601100001000",
    "jcb": "356600004000",
}


@pytest.mark.parametrize(("brand", "prefix"), BRAND_PREFIXES.items())
def test_declining_cards_of_other_brands(payer_b: Payer, brand: str, prefix: str) -> None:
    cvc = "1234" if brand == "amex" else "123"
    for visa, (code, decline) in DECLINES.items():
        number = prefix + visa[-4:]
        card = {"number": number, "exp_month": 1, "exp_year": 2031, "cvc": cvc}
        r = payer_b.create(payment_method_data={"type": "card", "card": card})
        assert r.status_code == 402, r.text
        err = error_of(r)
        assert (err["code"], err["decline_code"]) == (code, decline)
        details = payer_b.get(err["payment"]["id"])["payment_method_details"]
        assert (details["brand"], details["last4"]) == (brand, visa[-4:])


@pytest.mark.parametrize(
    ("card", "code", "param"),
    [
        ({"number": "4242424242424241"}, "invalid_number", "number"),
        ({"exp_month": 13}, "invalid_expiry_month", "exp_month"),
        ({"exp_year": 2020}, "invalid_expiry_year", "exp_year"),
        ({"cvc": "12"}, "incorrect_cvc", "cvc"),
        # digits of other scripts are digits to str.isdigit(), and these two pass the Luhn
        # check read code point by code point: they were charged (live mode) as real cards
        # with last4 "４２４２" and brand "unknown"
        ({"number": "\uff14\uff12" * 8}, "invalid_number", "number"),
        ({"number": "\u0664" + "\u0661" * 14 + "\u0667"}, "invalid_number", "number"),
        ({"cvc": "\uff11\uff12\uff13"}, "incorrect_cvc", "cvc"),
    ],
)
def test_unusable_card_details(
    payer: Payer, card: dict[str, object], code: str, param: str
) -> None:
    base = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
    if payer.variant == "B":
        r = payer.create(payment_method_data={"type": "card", "card": {**base, **card}})
        assert r.status_code == 402
        err = error_of(r)
        assert (err["type"], err["code"]) == ("card_error", code)
        assert err["param"] == f"payment_method_data[card][{param}]"
        assert payer.http.get("/v1/payments").json()["data"] == []
    else:
        pid = payer.create(expect=201).json()["id"]
        form = {
            "action": "pay",
            "method": "card",
            **{k: str(v) for k, v in {**base, **card}.items()},
        }
        r = payer.http.post(f"/pay/{pid}", data=form, follow_redirects=False)
        assert r.status_code == 400 and "<form" in r.text
        assert payer.get(pid)["status"] == "pending"  # the customer may try again


def test_three_d_secure(payer: Payer) -> None:
    for action, final in (("complete", "succeeded"), ("fail", "failed"), ("cancel", "canceled")):
        if payer.variant == "B":
            p = payer.create(card="4000002500003155", expect=201).json()
            assert p["status"] == "requires_action"
            url = p["next_action"]["redirect_to_url"]
            assert url == f"{payer.sb.base_url}/pay/{p['id']}"
        else:
            pid = payer.create(expect=201).json()["id"]
            r = payer.checkout(pid, card="4000002500003155")
            assert r.status_code == 303 and r.headers["location"] == f"/pay/{pid}"
            p = payer.get(pid)
            assert p["status"] == "pending"
        page = payer.http.get(f"/pay/{p['id']}")
        assert page.status_code == 200 and "3-D Secure" in page.text
        done = payer.act(p["id"], action)
        assert done.status_code == 303
        stored = payer.get(p["id"])
        assert stored["status"] == payer.status(final), (action, stored)
        if payer.variant == "B":
            assert done.headers["location"] == "https://shop.example/return"
            assert stored["next_action"] is None
        again = payer.act(p["id"], "complete")
        assert again.status_code == 409


def test_processing_card_succeeds_after_30_seconds(payer: Payer) -> None:
    p = payer.pay(card="4000000000001018")
    assert p["status"] == payer.status("processing")
    payer.advance(29)
    assert payer.get(p["id"])["status"] == payer.status("processing")
    payer.advance(1)
    done = payer.get(p["id"])
    assert done["status"] == payer.status("succeeded") and done["captured"] is True


def test_manual_capture_card_is_authorized(payer: Payer) -> None:
    p = payer.pay(capture="manual")
    assert p["status"] == "authorized" and p["captured"] is False


def test_tokens_stand_for_test_cards(payer_b: Payer) -> None:
    payer = payer_b
    ok = payer.create(
        payment_method_data={"type": "card", "card": {"token": "tok_visa"}}, expect=201
    ).json()
    assert ok["status"] == "succeeded" and ok["payment_method_details"]["brand"] == "visa"
    declined = payer.create(
        payment_method_data={"type": "card", "card": {"token": "tok_chargeDeclined"}}
    )
    assert declined.status_code == 402
    unknown = payer.create(payment_method_data={"type": "card", "card": {"token": "tok_nope"}})
    assert unknown.status_code == 400
    assert error_of(unknown)["param"] == "payment_method_data[card][token]"


@pytest.mark.parametrize("extra", [{"exp_month": 1, "exp_year": 2020}, {"cvc": "1"}])
def test_token_with_card_details_is_refused(payer_b: Payer, extra: dict[str, object]) -> None:
    """A token carries its own number and expiry: details given with it used to be ignored."""
    card = {"token": "tok_visa", **extra}
    r = payer_b.http.post(
        "/v1/payments",
        json={
            "amount": 100,
            "currency": "myr",
            "payment_method_data": {"type": "card", "card": card},
        },
    )
    assert r.status_code == 400, r.text
    err = error_of(r)
    first = next(iter(extra))
    assert (err["code"], err["param"]) == (
        "parameter_invalid",
        f"payment_method_data[card][{first}]",
    )
    assert "either a token or card details" in err["message"]
    assert payer_b.http.get("/v1/payments").json()["data"] == []
