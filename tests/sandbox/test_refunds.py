"""Refunds: creation rules, the payment's refund fields, FPX settlement, refund listing."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from tests.sandbox.conftest import Payer, error_of

FIELDS = {"id", "object", "payment_id", "amount", "currency", "reason", "status", "metadata"}


def test_card_refund_succeeds_at_once(payer: Payer) -> None:
    p = payer.pay(1000)
    r = payer.http.post(
        "/v1/refunds",
        json={
            "payment_id": p["id"],
            "amount": 300,
            "reason": "requested_by_customer",
            "metadata": {"ticket": "T-1"},
        },
    )
    assert r.status_code == 201, r.text
    refund = r.json()
    extra = {"created_at"} if payer.variant == "A" else {"created", "livemode"}
    assert set(refund) == FIELDS | extra
    assert re.match(r"^rfnd_[A-Za-z0-9]{24}$", refund["id"])
    assert refund["status"] == "succeeded" and refund["amount"] == 300
    assert refund["currency"] == ("MYR" if payer.variant == "A" else "myr")
    after = payer.get(p["id"])
    assert after["refunded_amount"] == 300 and after["refunded"] is False
    rest = payer.http.post("/v1/refunds", json={"payment": p["id"]})  # alias, default amount
    assert rest.status_code == 201 and rest.json()["amount"] == 700
    done = payer.get(p["id"])
    assert done["refunded_amount"] == 1000 and done["refunded"] is True
    over = payer.http.post("/v1/refunds", json={"payment_id": p["id"], "amount": 1})
    assert over.status_code == 409 and error_of(over)["code"] == "amount_too_large"
    assert payer.http.get(f"/v1/refunds/{refund['id']}").json() == refund
    events = [e["type"] for e in payer.http.get("/v1/events").json()["data"]]
    assert events.count("refund.created") == 2


def test_refund_rules(payer: Payer) -> None:
    p = payer.pay(1000)
    other = payer.pay(500)
    both = payer.http.post("/v1/refunds", json={"payment_id": p["id"], "payment": other["id"]})
    assert both.status_code == 400 and error_of(both)["param"] == "payment"
    same = payer.http.post(
        "/v1/refunds", json={"payment_id": p["id"], "payment": p["id"], "amount": 10}
    )
    assert same.status_code == 201
    missing = payer.http.post("/v1/refunds", json={"amount": 10})
    assert missing.status_code == 400
    assert error_of(missing) | {} == {
        **error_of(missing),
        "code": "parameter_missing",
        "param": "payment_id",
    }
    bad_reason = payer.http.post("/v1/refunds", json={"payment_id": p["id"], "reason": "meh"})
    assert bad_reason.status_code == 400 and error_of(bad_reason)["param"] == "reason"
    negative = payer.http.post("/v1/refunds", json={"payment_id": p["id"], "amount": -5})
    assert negative.status_code == 400 and error_of(negative)["param"] == "amount"
    unknown = payer.http.post("/v1/refunds", json={"payment_id": "pay_" + "0" * 24})
    assert unknown.status_code == 404 and error_of(unknown)["param"] == "payment_id"
    uncaptured = payer.pay(capture="manual")
    r = payer.http.post("/v1/refunds", json={"payment_id": uncaptured["id"]})
    assert r.status_code == 409 and error_of(r)["code"] == "invalid_state"


def test_fpx_refund_pending_for_3_to_5_business_days(payer: Payer) -> None:
    p = payer.pay(2000, bank="TEST0001")
    refund = payer.http.post("/v1/refunds", json={"payment_id": p["id"]}).json()
    assert refund["status"] == "pending"
    assert payer.get(p["id"])["refunded_amount"] == 2000  # pending refunds count
    clock = payer.http.get("/_sandbox/clock").json()
    start = datetime.fromtimestamp(clock["unix"], UTC)
    # walk the clock a day at a time; it must settle between 3 and 5 business days later
    business = 0
    settled_after = None
    for _ in range(8):
        payer.advance(86_400)
        start = start.fromtimestamp(start.timestamp() + 86_400, UTC)
        if start.weekday() < 5:
            business += 1
        status = payer.http.get(f"/v1/refunds/{refund['id']}").json()["status"]
        if status == "succeeded":
            settled_after = business
            break
        assert status == "pending"
    assert settled_after is not None and 3 <= settled_after <= 5


def test_refund_of_refund_failing_card(payer: Payer) -> None:
    p = payer.pay(800, card="4000000000005126")
    refund = payer.http.post("/v1/refunds", json={"payment_id": p["id"]}).json()
    assert refund["status"] == "pending"
    payer.advance(86_400)
    failed = payer.http.get(f"/v1/refunds/{refund['id']}").json()
    assert failed["status"] == "failed"
    after = payer.get(p["id"])
    assert after["refunded_amount"] == 0 and after["refunded"] is False
    types = [e["type"] for e in payer.http.get("/v1/events").json()["data"]]
    assert "refund.failed" in types


def test_refund_list_filters_and_envelope(payer: Payer) -> None:
    a = payer.pay(1000)
    b = payer.pay(1000, bank="TEST0001")
    r1 = payer.http.post("/v1/refunds", json={"payment_id": a["id"], "amount": 100}).json()
    r2 = payer.http.post("/v1/refunds", json={"payment_id": b["id"], "amount": 100}).json()
    listed = payer.http.get("/v1/refunds").json()
    ids = [r["id"] for r in listed["data"]]
    assert sorted(ids) == sorted([r1["id"], r2["id"]])
    if payer.variant == "A":
        assert listed["meta"] == {"total": 2, "page": 1, "limit": 20, "totalPages": 1}
    else:
        assert listed["object"] == "list" and listed["has_more"] is False
        assert listed["url"] == "/v1/refunds"
    by_payment = payer.http.get("/v1/refunds", params={"payment_id": b["id"]}).json()["data"]
    assert [r["id"] for r in by_payment] == [r2["id"]]
    pending = payer.http.get("/v1/refunds", params={"status": "pending"}).json()["data"]
    assert [r["id"] for r in pending] == [r2["id"]]
    bad = payer.http.get("/v1/refunds", params={"status": "done"})
    assert bad.status_code == 400 and error_of(bad)["param"] == "status"


def test_refunds_of_a_payment_this_key_cannot_see_are_404_not_an_empty_list(
    payer: Payer, account: dict[str, Any]
) -> None:
    # An empty list reads as "this payment has no refunds": for a mistyped id, a refund id, or
    # another mode's payment that answer is wrong, and nothing would say so (an unknown cursor
    # id is already 404).
    paid = payer.pay(1000)
    refund = payer.http.post("/v1/refunds", json={"payment_id": paid["id"]}).json()
    live = {"Authorization": f"Bearer {account['live_secret_key']}"}
    for ident, headers, hint in (
        ("pay_nope", None, "Check the id"),
        (refund["id"], None, "are refund ids, not payment ids"),
        (paid["id"], live, "mode (test or live)"),
    ):
        r = payer.http.get("/v1/refunds", params={"payment_id": ident}, headers=headers)
        assert r.status_code == 404, (ident, r.text)
        err = error_of(r)
        assert (err["code"], err["param"]) == ("resource_missing", "payment_id"), err
        assert hint in err["message"], err
    # A payment without refunds is still an empty list.
    other = payer.pay(500)
    r = payer.http.get("/v1/refunds", params={"payment_id": other["id"]})
    assert r.status_code == 200 and r.json()["data"] == []


def test_refunding_a_fully_refunded_payment_says_nothing_is_left(payer: Payer) -> None:
    p = payer.pay(1000)
    assert payer.http.post("/v1/refunds", json={"payment_id": p["id"]}).status_code == 201
    again = payer.http.post("/v1/refunds", json={"payment_id": p["id"]})
    assert again.status_code == 409
    err = error_of(again)
    assert err["code"] == "amount_too_large"
    assert err["message"] == (
        f"Payment {p['id']} is already fully refunded (1000 of 1000 captured, pending refunds "
        "included); nothing is left to refund."
    )
    assert "param" not in err  # no amount was sent
    # with an amount, the amount is what was wrong
    given = error_of(payer.http.post("/v1/refunds", json={"payment_id": p["id"], "amount": 5}))
    assert given["code"] == "amount_too_large" and given["param"] == "amount"
    assert "already fully refunded" in given["message"]
    # something left: the amount exceeds it
    q = payer.pay(1000)
    payer.http.post("/v1/refunds", json={"payment_id": q["id"], "amount": 400})
    over = error_of(payer.http.post("/v1/refunds", json={"payment_id": q["id"], "amount": 700}))
    assert over["param"] == "amount"
    assert over["message"] == (
        f"Refund amount 700 exceeds what is left to refund on {q['id']} (600 of 1000 captured)."
    )


def test_unknown_payment_given_as_the_alias_is_blamed_on_the_alias(payer: Payer) -> None:
    """A refund naming its payment by the alias ``payment`` gets its 404 on ``payment``: the
    caller never sent ``payment_id``, so an error on it points at a field they cannot find."""
    unknown = payer.http.post("/v1/refunds", json={"payment": "pay_" + "0" * 24})
    assert unknown.status_code == 404 and error_of(unknown)["param"] == "payment"
    both = payer.http.post(
        "/v1/refunds", json={"payment_id": "pay_" + "0" * 24, "payment": "pay_" + "0" * 24}
    )
    assert both.status_code == 404 and error_of(both)["param"] == "payment_id"
