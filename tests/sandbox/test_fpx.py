"""FPX test bank codes and the simulated bank page of real bank codes, both variants."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.conftest import CANCEL_URL, RETURN_URL, SUCCESS_URL, Payer, error_of

#: Each test bank's page ends one way (docs/sandbox.md): (status right after the page,
#: final status 30 s later, failure code).
ENDINGS = {
    "TEST0001": ("succeeded", "succeeded", None),
    "TEST0002": ("failed", "failed", "payment_method_not_available"),
    "TEST0003": ("processing", "succeeded", None),
    "TEST0004": ("processing", "failed", "processing_error"),
    "TEST0005": ("canceled", "canceled", None),
}


def _failure_code(payer: Payer, p: dict[str, Any]) -> str | None:
    if payer.variant == "A":
        code: str | None = p["failure_code"]
        return code
    return (p["last_payment_error"] or {}).get("code")


@pytest.mark.parametrize("bank", ENDINGS)
def test_test_banks_go_through_the_bank_page(payer: Payer, bank: str) -> None:
    """Every FPX creation in B answers requires_action with a redirect (A: the checkout sends
    the customer to the bank page); the test bank decides how that page ends."""
    if payer.variant == "B":
        created = payer.create(bank=bank, expect=201).json()
        assert created["status"] == "requires_action"
        assert created["next_action"]["type"] == "redirect_to_url"
        assert (
            created["next_action"]["redirect_to_url"] == f"{payer.sb.base_url}/pay/{created['id']}"
        )
        assert created["last_payment_error"] is None
        pid = created["id"]
    else:
        pid = payer.create(expect=201).json()["id"]
        chosen = payer.checkout(pid, bank=bank)
        assert chosen.status_code == 303 and chosen.headers["location"] == f"/pay/{pid}"
    waiting = payer.get(pid)
    assert waiting["status"] == payer.status("requires_action")
    assert waiting["payment_method_details"]["bank_code"] == bank
    page = payer.http.get(f"/pay/{pid}")
    assert page.status_code == 200 and "value='complete'" in page.text
    for other in ("fail", "cancel", "timeout"):
        assert f"value='{other}'" not in page.text
    # the ending is the test bank's: another action is refused and changes nothing
    wrong = payer.act(pid, "cancel" if bank != "TEST0005" else "fail")
    assert wrong.status_code == 400 and "test bank" in wrong.text
    assert payer.get(pid)["status"] == payer.status("requires_action")

    after, final, code = ENDINGS[bank]
    done = payer.act(pid, "complete")
    assert done.status_code == 303
    ok = final == "succeeded" or after == "processing"
    if payer.variant == "A":
        assert done.headers["location"] == (SUCCESS_URL if ok else CANCEL_URL)
    else:
        assert done.headers["location"] == RETURN_URL
    p = payer.get(pid)
    assert p["status"] == payer.status(after)
    if after == "processing":
        payer.advance(29)
        assert payer.get(pid)["status"] == payer.status("processing")
        payer.advance(1)
        p = payer.get(pid)
    assert p["status"] == payer.status(final)
    assert _failure_code(payer, p) == code
    assert p["captured"] is (final == "succeeded")
    # the page is over
    assert payer.act(pid, "complete").status_code == 409


def test_test_bank_events(payer: Payer) -> None:
    for bank in ("TEST0001", "TEST0002", "TEST0005"):
        payer.pay(bank=bank)
    types = [e["type"] for e in payer.http.get("/v1/events").json()["data"]]
    assert sorted(types) == ["payment.canceled", "payment.failed", "payment.succeeded"]


def test_test_banks_need_a_test_key(payer_b: Payer) -> None:
    live = {"Authorization": f"Bearer {payer_b.account['live_secret_key']}"}
    r = payer_b.create(bank="TEST0001", headers=live)
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == (
        "payment_method_not_available",
        "payment_method_data[fpx][bank_code]",
    )


def test_test0003_pending_then_succeeds(payer: Payer) -> None:
    p = payer.pay(bank="TEST0003")
    assert p["status"] == payer.status("processing")
    payer.advance(30)
    assert payer.get(p["id"])["status"] == payer.status("succeeded")


def test_test0004_times_out_with_processing_error(payer: Payer) -> None:
    p = payer.pay(bank="TEST0004")
    assert p["status"] == payer.status("processing")
    payer.advance(30)
    done = payer.get(p["id"])
    assert done["status"] == "failed"
    code = done["failure_code"] if payer.variant == "A" else done["last_payment_error"]["code"]
    assert code == "processing_error"


@pytest.mark.parametrize(
    ("action", "final"), [("complete", "succeeded"), ("fail", "failed"), ("cancel", "canceled")]
)
def test_real_bank_page(payer: Payer, action: str, final: str) -> None:
    if payer.variant == "B":
        p = payer.create(bank="MB2U0227", expect=201).json()
        assert p["status"] == "requires_action"
        assert p["next_action"]["redirect_to_url"].endswith(f"/pay/{p['id']}")
    else:
        p = payer.create(expect=201).json()
        assert payer.checkout(p["id"], bank="MB2U0227").status_code == 303
    page = payer.http.get(f"/pay/{p['id']}")
    assert page.status_code == 200 and "Maybank2u" in page.text
    assert payer.act(p["id"], action).status_code == 303
    stored = payer.get(p["id"])
    assert stored["status"] == payer.status(final)
    assert stored["payment_method_details"] == {
        "type": "fpx",
        "bank_code": "MB2U0227",
        "bank": "Maybank2u",
    }


def test_real_bank_that_does_not_answer_times_out(payer: Payer) -> None:
    """The bank page's fourth choice: processing, then failed like TEST0004."""
    if payer.variant == "B":
        pid = payer.create(bank="BIMB0340", expect=201).json()["id"]
    else:
        pid = payer.create(expect=201).json()["id"]
        assert payer.checkout(pid, bank="BIMB0340").status_code == 303
    assert "value='timeout'" in payer.http.get(f"/pay/{pid}").text
    assert payer.act(pid, "timeout").status_code == 303
    assert payer.get(pid)["status"] == payer.status("processing")
    payer.advance(30)
    done = payer.get(pid)
    assert done["status"] == "failed"
    code = done["failure_code"] if payer.variant == "A" else done["last_payment_error"]["code"]
    assert code == "processing_error"


def test_three_d_secure_page_has_no_timeout(payer_b: Payer) -> None:
    pid = payer_b.create(card="4000002500003155", expect=201).json()["id"]
    assert "value='timeout'" not in payer_b.http.get(f"/pay/{pid}").text
    assert payer_b.act(pid, "timeout").status_code == 400
    assert payer_b.get(pid)["status"] == "requires_action"


def test_fpx_needs_return_url_and_known_bank(payer: Payer) -> None:
    if payer.variant == "A":
        pid = payer.create(expect=201).json()["id"]
        r = payer.checkout(pid, bank="NOPE0000")
        assert r.status_code == 400
        return
    body = {
        "amount": 100,
        "currency": "myr",
        "payment_method_data": {"type": "fpx", "fpx": {"bank_code": "TEST0001"}},
    }
    r = payer.http.post("/v1/payments", json=body)
    assert r.status_code == 400 and error_of(r)["param"] == "return_url"
    body["payment_method_data"]["fpx"]["bank_code"] = "NOPE0000"  # type: ignore[index]
    body["return_url"] = "https://shop.example/r"
    r = payer.http.post("/v1/payments", json=body)
    assert r.status_code == 400
    assert error_of(r)["param"] == "payment_method_data[fpx][bank_code]"


FPX_MYR_ONLY = (
    "FPX payments must be in MYR (FPX is Malaysian online banking, in ringgit only); this "
    "payment is in USD. Use currency myr, or a card for USD."
)


def test_fpx_is_for_myr_only(payer: Payer) -> None:
    """FPX moves ringgit only: another currency is refused (B creation) or not offered, and
    refused if posted anyway (A checkout)."""
    if payer.variant == "B":
        for bank in ("TEST0001", "MB2U0227"):
            r = payer.create(bank=bank, currency="usd")
            assert r.status_code == 400, r.text
            err = error_of(r)
            assert (err["code"], err["param"]) == ("parameter_invalid", "currency")
            assert err["message"] == FPX_MYR_ONLY
        assert payer.http.get("/v1/payments").json()["data"] == []  # nothing was stored
        assert payer.create(bank="TEST0001", currency="MYR", expect=201)
        return
    myr = payer.create(expect=201).json()["id"]
    assert "value='fpx'" in payer.http.get(f"/pay/{myr}").text
    pid = payer.create(currency="USD", expect=201).json()["id"]
    page = payer.http.get(f"/pay/{pid}")
    assert page.status_code == 200
    assert "value='fpx'" not in page.text and "MB2U0227" not in page.text
    assert "FPX online banking is available for payments in MYR only." in page.text
    refused = payer.checkout(pid, bank="MB2U0227")
    assert refused.status_code == 400
    assert FPX_MYR_ONLY in refused.text and "<form" in refused.text
    p = payer.get(pid)
    assert p["status"] == "pending" and p["payment_method"] is None
    # the customer can still pay by card
    assert payer.checkout(pid).status_code == 303
    assert payer.get(pid)["status"] == "captured"


def test_a_saved_fpx_method_is_for_myr_only(payer_b: Payer) -> None:
    cus = payer_b.http.post("/_sandbox/customers", json={}).json()["id"]
    first = payer_b.create(bank="TEST0001", customer=cus, save_payment_method=True, expect=201)
    pm = first.json()["payment_method"]
    r = payer_b.create(
        customer=cus,
        payment_method=pm,
        currency="usd",
        return_url="https://shop.example/r",
    )
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["param"], err["message"]) == ("currency", FPX_MYR_ONLY)
