"""Admin API, pages, OpenAPI document, SQLite persistence and the in-process ASGI app."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest
from openapi_spec_validator import validate

from gwtools.sandbox import Sandbox, create_app
from tests.sandbox.conftest import LOOPBACK, Payer, error_of

NOW = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)


def test_clock_set_and_advance() -> None:
    with Sandbox("B", now=NOW) as sb, httpx.Client(base_url=sb.base_url, verify=False) as c:
        assert c.get("/_sandbox/clock").json() == {
            "now": "2026-02-01T08:00:00Z",
            "unix": 1769932800,
            "frozen": True,
        }
        assert c.post("/_sandbox/clock/advance", json={"seconds": 90}).json()["now"] == (
            "2026-02-01T08:01:30Z"
        )
        assert (
            c.post("/_sandbox/clock", json={"now": "2026-03-01T00:00:00+08:00"}).json()["now"]
            == "2026-02-28T16:00:00Z"
        )
        assert c.post("/_sandbox/clock", json={"now": 1767225600}).json()["now"] == (
            "2026-01-01T00:00:00Z"
        )
        for bad in ({"seconds": -1}, {"seconds": "1"}, {"secs": 1}):
            r = c.post("/_sandbox/clock/advance", json=bad)
            assert r.status_code == 400
        assert c.post("/_sandbox/clock", json={"now": "soon"}).status_code == 400
        info = c.get("/_sandbox").json()
        assert info["variant"] == "B" and info["base_url"] == sb.base_url


def test_following_clock_moves_with_real_time() -> None:
    app = create_app("B")
    gw = app.state.gateway
    before = gw.clock.now()
    gw.clock.advance(3600)
    assert gw.clock.now() - before >= 3600 and gw.clock.frozen is False


def test_reset_keeps_the_default_account_only() -> None:
    with Sandbox("A", now=NOW) as sb, httpx.Client(base_url=sb.base_url, verify=False) as c:
        other = c.post("/_sandbox/accounts").json()
        auth = {"Authorization": f"Bearer {sb.secret_key}"}
        body = {
            "amount": 100,
            "success_url": "https://x.example/a",
            "cancel_url": "https://x.example/b",
        }
        assert c.post("/v1/payments", json=body, headers=auth).status_code == 201
        c.put("/_sandbox/rate_limits", json={"all": 1})
        assert c.put("/_sandbox/faults", json={"error_rate": 1.0}).status_code == 200
        assert c.post("/_sandbox/reset").json() == {"reset": True}
        assert c.get("/_sandbox/faults").json()["active"] is False
        assert c.get("/v1/payments", headers=auth).json()["meta"]["total"] == 0
        gone = c.get("/v1/payments", headers={"Authorization": f"Bearer {other['secret_key']}"})
        assert gone.status_code == 401
        assert c.get("/_sandbox/rate_limits").json()["all"] == 100


def test_admin_calls_need_a_valid_key(payer: Payer) -> None:
    for method, path in (
        ("POST", "/_sandbox/keys/roll"),
        ("PUT", "/_sandbox/keys/allowlist"),
        ("POST", "/_sandbox/customers"),
        ("POST", "/_sandbox/raw_records"),
        ("POST", "/_sandbox/webhook_endpoints"),
        ("GET", "/_sandbox/webhook_deliveries"),
    ):
        r = payer.http.request(method, path, headers={"Authorization": "Bearer sk_test_no"})
        assert r.status_code == 401, path
        assert error_of(r)["type"] == "authentication_error"
    bad = payer.http.post("/_sandbox/raw_records", json={"resource": "customers", "object": {}})
    assert bad.status_code == 400 and error_of(bad)["param"] == "resource"
    bad = payer.http.put("/_sandbox/rate_limits", json={"all": 0})
    assert bad.status_code == 400


@pytest.mark.parametrize("variant", ["A", "B"])
def test_openapi_document(variant: str, sandbox_a: Sandbox, sandbox_b: Sandbox) -> None:
    sb = sandbox_a if variant == "A" else sandbox_b
    doc = LOOPBACK.get(f"{sb.base_url}/openapi.json").json()
    validate(doc)
    assert set(doc["paths"]) == {
        "/v1/payments",
        "/v1/payments/{id}",
        "/v1/payments/{id}/capture",
        "/v1/payments/{id}/void",
        "/v1/refunds",
        "/v1/refunds/{id}",
        "/v1/events",
        "/v1/events/{id}",
    }
    payment = doc["components"]["schemas"]["Payment"]["properties"]
    assert ("created_at" in payment) == (variant == "A")
    assert ("next_action" in payment) == (variant == "B")


def test_pages_for_finished_and_unknown_payments(payer: Payer) -> None:
    p = payer.pay()
    page = payer.http.get(f"/pay/{p['id']}")
    assert page.status_code == 200 and "nothing more to do" in page.text
    assert payer.http.get("/pay/pay_unknown").status_code == 404
    assert payer.act("pay_unknown", "complete").status_code == 404
    receipt = payer.http.get(f"/receipts/{p['id']}")
    assert receipt.status_code == 200 and p["id"] in receipt.text
    if payer.variant == "B":
        assert p["receipt_url"] == f"{payer.sb.base_url}/receipts/{p['id']}"


@pytest.mark.parametrize(
    ("amount", "currency", "shown"),
    [(100, "jpy", "100 JPY"), (150_000, "krw", "150,000 KRW"), (123_456, "myr", "1,234.56 MYR")],
)
def test_pages_show_amounts_with_the_currencys_digits(
    payer: Payer, amount: int, currency: str, shown: str
) -> None:
    """Checkout, 3-D Secure and receipt pages show major units with the currency's own
    digits (Babel's table): 100 JPY is 100 yen, not 1.00."""
    pages = []
    if payer.variant == "A":
        pid = payer.create(amount, currency=currency, expect=201).json()["id"]
        pages.append(payer.http.get(f"/pay/{pid}"))  # the checkout page
        assert payer.checkout(pid, card="4000002500003155").status_code == 303
    else:
        created = payer.create(amount, card="4000002500003155", currency=currency, expect=201)
        pid = created.json()["id"]
    pages.append(payer.http.get(f"/pay/{pid}"))  # 3-D Secure
    assert payer.act(pid, "complete").status_code == 303
    pages.append(payer.http.get(f"/receipts/{pid}"))
    for page in pages:
        assert page.status_code == 200
        assert f"<strong>{shown}</strong>" in page.text, page.text


def test_state_survives_a_restart_in_a_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "sandbox.sqlite"
    with Sandbox("B", db=db, now=NOW) as first:
        key = first.secret_key
        auth = {"Authorization": f"Bearer {key}"}
        card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
        created = LOOPBACK.post(
            f"{first.base_url}/v1/payments",
            headers=auth,
            json={
                "amount": 321,
                "currency": "myr",
                "return_url": "https://x.example/r",
                "payment_method_data": {
                    "type": "card",
                    "card": {**card, "number": "4000002500003155"},
                },
            },
        )
        pid = created.json()["id"]
    # reopened as variant A on another port: same account and data, re-rendered
    with Sandbox("A", db=db, now=NOW) as second:
        assert second.secret_key == key
        got = LOOPBACK.get(f"{second.base_url}/v1/payments/{pid}", headers=auth).json()
        assert got["status"] == "pending" and got["created_at"] == "2026-02-01T08:00:00Z"
        assert got["redirect_url"] == f"{second.base_url}/pay/{pid}"
    # The last connection to close folds the write-ahead log (which holds the issued keys, and
    # which the session's secret scan does not recognise as a database) back into the file.
    for sb in (first, second):
        sb.gateway.store.close()
    assert not db.with_name(db.name + "-wal").exists()


def test_events_are_rendered_again_with_their_objects_after_a_restart(tmp_path: Path) -> None:
    # Reopened in the other variant (and on another port), GET /v1/events showed the objects
    # in the variant they were created in, beside payments re-rendered in the served one.
    db = tmp_path / "sandbox.sqlite"
    with Sandbox("B", db=db, now=NOW) as first:
        auth = {"Authorization": f"Bearer {first.secret_key}"}
        card = {"number": "4242424242424242", "exp_month": 12, "exp_year": 2030, "cvc": "123"}
        created = LOOPBACK.post(
            f"{first.base_url}/v1/payments",
            headers=auth,
            json={"amount": 321, "currency": "myr", "return_url": "https://x.example/r",
                  "payment_method_data": {"type": "card", "card": card}},
        )  # fmt: skip
        assert created.status_code == 201, created.text
        pid = created.json()["id"]
        first.gateway.store.close()
    for variant in ("A", "B"):
        with Sandbox(variant, db=db, now=NOW) as again:
            got = LOOPBACK.get(f"{again.base_url}/v1/payments/{pid}", headers=auth).json()
            events = LOOPBACK.get(f"{again.base_url}/v1/events", headers=auth).json()["data"]
            again.gateway.store.close()
        (event,) = [e for e in events if e["type"] == "payment.succeeded"]
        # the payment has not changed since its event: the same object, as the variant shows it
        assert event["data"]["object"] == got, variant
        assert event["data"]["object"]["currency"] == ("MYR" if variant == "A" else "myr")


def test_in_process_asgi_app() -> None:
    app = create_app("A", now=NOW)
    key = app.state.gateway.default_account["secret_key"]

    async def main() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://sandbox") as client:
            return await client.get("/v1/payments", headers={"Authorization": f"Bearer {key}"})

    r = asyncio.run(main())
    assert r.status_code == 200 and r.json()["meta"]["total"] == 0


def test_idle_connections_outlive_an_httpx_clients_keep_alive(sandbox_a: Sandbox) -> None:
    """A client reusing an idle connection must never meet a server that has just closed it
    ("Server disconnected without sending a response"): the sandbox keeps idle connections
    longer than httpx does (5 s), so the client is always the one to drop them."""
    from httpx._config import DEFAULT_LIMITS

    assert sandbox_a._server is not None
    server_keeps = sandbox_a._server.config.timeout_keep_alive
    assert DEFAULT_LIMITS.keepalive_expiry is not None
    assert server_keeps > DEFAULT_LIMITS.keepalive_expiry


def test_admin_calls_without_fields_refuse_a_body(payer: Payer) -> None:
    """A body given to a call that takes none used to be ignored."""

    def refused(r: httpx.Response) -> None:
        assert r.status_code == 400, r.text
        err = error_of(r)
        assert (err["code"], err["param"]) == ("parameter_invalid", "everything")
        assert "Allowed: none" in err["message"]

    for path in ("/_sandbox/accounts", "/_sandbox/keys/roll"):
        refused(payer.http.post(path, json={"everything": True}))
    assert payer.http.get("/v1/payments").status_code == 200  # the key was not rolled
    # reset on a private server: the shared ones must keep their accounts
    with Sandbox("B", now=NOW) as sb, httpx.Client(base_url=sb.base_url, verify=False) as c:
        auth = {"Authorization": f"Bearer {sb.secret_key}"}
        assert c.put("/_sandbox/rate_limits", json={"all": 7}).status_code == 200
        refused(c.post("/_sandbox/reset", json={"everything": True}))
        assert c.get("/_sandbox/rate_limits").json()["all"] == 7  # nothing was reset
        assert c.get("/v1/payments", headers=auth).status_code == 200


def test_customer_email_is_checked(payer: Payer) -> None:
    r = payer.http.post("/_sandbox/customers", json={"email": "nobody"})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "email")
    assert "not an e-mail address" in err["message"]


def test_an_unknown_admin_path_points_at_the_admin_api(sandbox_b: Sandbox) -> None:
    # "paths start with /v1/" sent someone who mistyped /_sandbox/clocks to the wrong place.
    r = LOOPBACK.post(f"{sandbox_b.base_url}/_sandbox/clocks", json={"seconds": 60})
    assert r.status_code == 404
    said = error_of(r)["message"]
    assert "/_sandbox/clocks" in said and "/v1/" not in said, said
    assert "Admin API" in said and "GET /_sandbox/clock" in said, said
    key = {"Authorization": f"Bearer {sandbox_b.secret_key}"}
    api = LOOPBACK.get(f"{sandbox_b.base_url}/v1/payment", headers=key)
    assert "paths start with /v1/" in error_of(api)["message"]
