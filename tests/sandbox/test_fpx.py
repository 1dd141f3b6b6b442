"""FPX test bank codes and the simulated bank page of real bank codes, both variants."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import Payer, error_of

IMMEDIATE = {"TEST0001": "succeeded", "TEST0002": "failed", "TEST0005": "canceled"}


@pytest.mark.parametrize(("bank", "final"), IMMEDIATE.items())
def test_immediate_test_banks(payer: Payer, bank: str, final: str) -> None:
    p = payer.pay(bank=bank)
    assert p["status"] == payer.status(final)
    assert p["payment_method_details"]["type"] == "fpx"
    assert p["payment_method_details"]["bank_code"] == bank
    assert p["payment_method_details"]["bank"]
    assert p["payment_method"] == ("fpx" if payer.variant == "A" else p["payment_method"])
    if final == "failed" and payer.variant == "B":
        assert p["last_payment_error"]["code"] == "payment_method_not_available"


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
