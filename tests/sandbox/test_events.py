"""Events (GET /v1/events) and webhooks: signatures, retries on the sandbox clock, callback_url."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.sandbox.conftest import CANCEL_URL, SUCCESS_URL, Payer, Receiver, error_of


def _verify(secret: str, headers: dict[str, str], body: bytes) -> int:
    """The receiver's check of the Gateway-Signature (docs/sandbox.md); returns the timestamp."""
    parts = dict(item.split("=", 1) for item in headers["gateway-signature"].split(","))
    expected = hmac.new(
        secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256
    ).hexdigest()
    assert hmac.compare_digest(expected, parts["v1"])
    return int(parts["t"])


def test_events_list_with_cursor_envelope(payer: Payer) -> None:
    ok = payer.pay()
    payer.pay(card="4000000000000002")
    payer.http.post("/v1/refunds", json={"payment_id": ok["id"], "amount": 100})
    page = payer.http.get("/v1/events", params={"limit": 2}).json()
    assert page["object"] == "list" and page["url"] == "/v1/events"
    assert page["has_more"] is True and len(page["data"]) == 2
    rest = payer.http.get("/v1/events", params={"starting_after": page["data"][-1]["id"]}).json()
    events = page["data"] + rest["data"]
    assert [e["type"] for e in events] == ["refund.created", "payment.failed", "payment.succeeded"]
    for e in events:
        assert set(e) == {"id", "object", "type", "created", "livemode", "api_version", "data"}
        assert e["id"].startswith("evt_") and e["object"] == "event"
        assert isinstance(e["created"], int) and e["api_version"] == "2024-01-01"
        assert e["livemode"] is False
    assert events[2]["data"]["object"]["id"] == ok["id"]
    assert events[0]["data"]["object"]["object"] == "refund"
    only = payer.http.get("/v1/events", params={"type": "payment.failed"}).json()["data"]
    assert [e["type"] for e in only] == ["payment.failed"]
    one = payer.http.get(f"/v1/events/{events[0]['id']}")
    assert one.json() == events[0]


def test_webhook_signed_and_retried_with_backoff(payer: Payer, receiver: Receiver) -> None:
    endpoint = payer.http.post("/_sandbox/webhook_endpoints", json={"url": receiver.url}).json()
    assert endpoint["id"].startswith("we_") and endpoint["secret"].startswith("whsec_")
    receiver.fail_next = 1
    p = payer.pay()
    headers, body = receiver.wait(1)[0]
    clock = payer.http.get("/_sandbox/clock").json()["unix"]
    assert _verify(endpoint["secret"], headers, body) == clock
    event = json.loads(body)
    assert event["type"] == "payment.succeeded" and event["data"]["object"]["id"] == p["id"]
    # the first attempt failed (500): the retry comes 60 s later on the sandbox clock
    payer.advance(59)
    assert len(receiver.requests) == 1
    payer.advance(1)
    second_headers, second_body = receiver.wait(2)[1]
    assert second_body == body  # the same event, signed again at the new time
    assert _verify(endpoint["secret"], second_headers, second_body) == clock + 60
    deliveries = payer.http.get("/_sandbox/webhook_deliveries").json()["data"]
    assert [(d["attempts"], d["state"]) for d in deliveries] == [(2, "succeeded")]


def test_retry_is_timed_from_the_attempt_even_if_the_clock_moves_meanwhile(
    payer: Payer, receiver: Receiver
) -> None:
    """The receiver answers 500 only after the clock has moved 59 s: the retry is still due
    60 s after the attempt (it used to be timed from the answer, 119 s)."""
    payer.http.post("/_sandbox/webhook_endpoints", json={"url": receiver.url})
    receiver.fail_next = 1
    receiver.hold = threading.Event()
    payer.pay()
    receiver.wait(1)  # the attempt is under way; its answer is held back
    start = payer.http.get("/_sandbox/clock").json()["unix"]

    def advance() -> int:
        with httpx.Client(base_url=payer.sb.base_url, timeout=60) as admin:
            return admin.post("/_sandbox/clock/advance", json={"seconds": 59}).status_code

    with ThreadPoolExecutor(1) as pool:
        moved = pool.submit(advance)  # moves the clock, then waits for the held attempt
        for _ in range(10_000):
            if payer.http.get("/_sandbox/clock").json()["unix"] == start + 59:
                break
        else:
            raise AssertionError("the clock never moved")
        receiver.hold.set()
        assert moved.result() == 200
    [delivery] = payer.http.get("/_sandbox/webhook_deliveries").json()["data"]
    assert (delivery["attempts"], delivery["state"], delivery["last_status"]) == (
        1,
        "retrying",
        500,
    )
    assert delivery["next_at"] == start + 60
    payer.advance(1)
    assert len(receiver.wait(2)) == 2


def test_webhook_gives_up_after_three_days(payer: Payer, receiver: Receiver) -> None:
    payer.http.post("/_sandbox/webhook_endpoints", json={"url": receiver.url})
    receiver.always_fail = True
    payer.pay()
    receiver.wait(1)
    for _ in range(8):
        payer.advance(12 * 3600)
    deliveries = payer.http.get("/_sandbox/webhook_deliveries").json()["data"]
    assert deliveries[0]["state"] == "failed" and deliveries[0]["next_at"] is None
    attempts = deliveries[0]["attempts"]
    assert attempts == len(receiver.requests) and 6 <= attempts <= 12
    payer.advance(7 * 86400)
    assert len(receiver.requests) == attempts  # no more tries


def test_callback_url_gets_the_payments_events(payer_a: Payer, receiver: Receiver) -> None:
    payer, account = payer_a, payer_a.account  # callback_url is a variant A parameter
    p = payer.http.post(
        "/v1/payments",
        json={
            "amount": 700,
            "success_url": SUCCESS_URL,
            "cancel_url": CANCEL_URL,
            "callback_url": receiver.url,
        },
    ).json()
    assert payer.checkout(p["id"]).status_code == 303
    headers, body = receiver.wait(1)[0]
    _verify(account["webhook_secret"], headers, body)
    assert json.loads(body)["type"] == "payment.succeeded"
    payer.http.post("/v1/refunds", json={"payment_id": p["id"]})
    types = [json.loads(b)["type"] for _, b in receiver.wait(2)]
    assert types == ["payment.succeeded", "refund.created"]


def test_events_and_webhooks_stay_in_their_mode(payer_b: Payer, receiver: Receiver) -> None:
    payer = payer_b
    live = {"Authorization": f"Bearer {payer.account['live_secret_key']}"}
    endpoint = payer.http.post(
        "/_sandbox/webhook_endpoints", json={"url": receiver.url}, headers=live
    ).json()
    payer.pay()  # test mode: no delivery to the live endpoint
    real = {"number": "4111111111111111", "exp_month": 1, "exp_year": 2031, "cvc": "999"}
    r = payer.http.post(
        "/v1/payments",
        json={
            "amount": 900,
            "currency": "myr",
            "payment_method_data": {"type": "card", "card": real},
        },
        headers=live,
    )
    assert r.status_code == 201
    headers, body = receiver.wait(1)[0]
    _verify(endpoint["secret"], headers, body)
    event = json.loads(body)
    assert event["livemode"] is True and event["data"]["object"]["id"] == r.json()["id"]
    live_events = payer.http.get("/v1/events", headers=live).json()["data"]
    test_events = payer.http.get("/v1/events").json()["data"]
    assert [e["id"] for e in live_events] == [event["id"]]
    assert event["id"] not in {e["id"] for e in test_events}
    assert len(receiver.requests) == 1


def test_unknown_event_type_is_refused(payer: Payer) -> None:
    """A misspelt type used to answer an empty list, as if there were no such events."""
    payer.pay()
    r = payer.http.get("/v1/events", params={"type": "payment.succeded"})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "type")
    assert "payment.succeeded" in err["message"]  # the valid types are named
    ok = payer.http.get("/v1/events", params={"type": "payment.succeeded"})
    assert ok.status_code == 200 and len(ok.json()["data"]) == 1


def test_retrieve_event_refuses_query_parameters(payer: Payer) -> None:
    payer.pay()
    event = payer.http.get("/v1/events").json()["data"][0]
    r = payer.http.get(f"/v1/events/{event['id']}", params={"expand": "data"})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "expand")
    assert "takes no query parameters" in err["message"]


def test_events_of_due_transitions_are_dated_when_the_transition_happened(payer: Payer) -> None:
    """A processing card settles 30 s after creation and a refund of the refund-failing card
    fails a day after it was made: their events carry those times, as the payment's
    ``captured_at`` and the history generator's events do, not the time the clock was next
    moved (here a day and a half later)."""
    start = payer.http.get("/_sandbox/clock").json()["unix"]
    processing = payer.pay(card="4000000000001018")
    failing = payer.pay(card="4000000000005126")
    refund = payer.http.post("/v1/refunds", json={"payment_id": failing["id"]})
    assert refund.status_code == 201, refund.text
    payer.advance(36 * 3600)
    events = payer.http.get("/v1/events", params={"limit": 100}).json()["data"]
    succeeded = [
        e
        for e in events
        if e["type"] == "payment.succeeded" and e["data"]["object"]["id"] == processing["id"]
    ]
    assert [e["created"] for e in succeeded] == [start + 30]
    captured_at = payer.get(processing["id"])["captured_at"]
    if payer.variant == "B":
        assert captured_at == start + 30
    failed = [e for e in events if e["type"] == "refund.failed"]
    assert [e["created"] for e in failed] == [start + 86_400]
    # the list stays newest first by creation time
    created = [e["created"] for e in events]
    assert created == sorted(created, reverse=True)


def test_webhook_urls_no_client_can_request_are_refused(payer_a: Payer) -> None:
    """A URL with a port that is no number (a typo such as :80a) or a broken IPv6 host passed
    the http(s) check, and then every delivery to it failed before it was sent: the
    delivery stayed 'sending' with no attempt, never retried nor failed."""
    for url in ("http://shop.example:80a/hook", "http://[::1/hook", "http://shop.example:70000/"):
        endpoint = payer_a.http.post("/_sandbox/webhook_endpoints", json={"url": url})
        assert endpoint.status_code == 400, endpoint.text
        err = error_of(endpoint)
        assert err["param"] == "url" and url in err["message"], err
        created = payer_a.http.post(
            "/v1/payments",
            json={
                "amount": 700,
                "success_url": SUCCESS_URL,
                "cancel_url": CANCEL_URL,
                "callback_url": url,
            },
        )
        assert created.status_code == 400 and error_of(created)["param"] == "callback_url"


def test_a_delivery_to_an_unusable_url_is_retried_not_stuck(payer_b: Payer) -> None:
    """An endpoint stored before URLs were checked (here added behind the API's back) gets
    failed attempts with the reason, retried as any failed delivery, instead of a delivery
    left 'sending' for ever."""
    gateway = payer_b.sb.gateway
    auth = gateway.keys.lookup(payer_b.account["secret_key"])
    assert auth is not None
    gateway.add_endpoint(auth, "http://shop.example:80a/hook")
    payer_b.pay()
    payer_b.advance(0)  # waits for the deliveries due now
    [delivery] = payer_b.http.get("/_sandbox/webhook_deliveries").json()["data"]
    assert delivery["attempts"] == 1 and delivery["state"] == "retrying", delivery
    assert "InvalidURL" in delivery["last_error"]
    # a host the URL check lets through but the client cannot encode (IDNA) fails the same way
    endpoint = payer_b.http.post("/_sandbox/webhook_endpoints", json={"url": "http://xn--a.com/"})
    assert endpoint.status_code == 201
    payer_b.pay()
    payer_b.advance(0)
    deliveries = payer_b.http.get("/_sandbox/webhook_deliveries").json()["data"]
    assert [d["state"] for d in deliveries if d["url"] == "http://xn--a.com/"] == ["retrying"]


def test_clock_advance_waits_for_every_delivery_due_not_two_batches() -> None:
    """Deliveries are sent 200 at a time; clock/advance ran at most two batches and answered,
    leaving the other due deliveries to the ticker (here none: an in-process app without its
    lifespan), though it promises to wait for every delivery that became due."""
    import asyncio
    import socket
    from datetime import UTC, datetime

    from gwtools.sandbox import create_app

    with socket.socket() as s:  # a loopback port nothing listens on: refused at once
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/hook"
    app = create_app("B", now=datetime(2026, 3, 2, 9, tzinfo=UTC), rate_limits=False)
    key = app.state.gateway.default_account["secret_key"]

    async def main() -> list[dict[str, object]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://sb", headers={"Authorization": f"Bearer {key}"}
        ) as client:
            for _ in range(450):
                r = await client.post("/_sandbox/webhook_endpoints", json={"url": url})
                assert r.status_code == 201
            card = {"type": "card", "card": {"token": "tok_visa"}}
            r = await client.post(
                "/v1/payments",
                json={"amount": 100, "currency": "myr", "payment_method_data": card},
            )
            assert r.status_code == 201
            for seconds in (0, 60):  # the first attempts, then every retry is due
                r = await client.post("/_sandbox/clock/advance", json={"seconds": seconds})
                assert r.status_code == 200
            found: list[dict[str, object]] = (
                await client.get("/_sandbox/webhook_deliveries")
            ).json()["data"]
            return found

    deliveries = asyncio.run(main())
    assert len(deliveries) == 450
    assert {d["attempts"] for d in deliveries} == {2}


def test_a_failed_delivery_is_logged_without_the_urls_secrets(
    payer_b: Payer, caplog: pytest.LogCaptureFixture
) -> None:
    """Webhook URLs often carry a token (query string, or user:password@): the log line of a
    failed delivery printed the whole URL, so the token went into the sandbox's log."""
    import socket

    with socket.socket() as s:  # a loopback port nothing listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://hook-user:hook-pass@127.0.0.1:{port}/hook?token=tok-s3cr3t#frag"
    endpoint = payer_b.http.post("/_sandbox/webhook_endpoints", json={"url": url})
    assert endpoint.status_code == 201, endpoint.text
    with caplog.at_level(logging.INFO, logger="gwtools.sandbox.webhooks"):
        payer_b.pay()
        payer_b.advance(0)
    lines = [r.getMessage() for r in caplog.records if r.name == "gwtools.sandbox.webhooks"]
    failed = [line for line in lines if "failed" in line]
    assert failed, lines
    for line in failed:
        assert f"http://127.0.0.1:{port}/hook" in line, line
        for secret in ("tok-s3cr3t", "hook-pass", "hook-user"):
            assert secret not in line, line
