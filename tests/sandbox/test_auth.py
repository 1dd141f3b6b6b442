"""Keys: 401s, publishable-key limits, rolling with a 24 h grace, IP allowlists."""

from __future__ import annotations

from typing import Any

import pytest

from gwtools.sandbox import Sandbox
from tests.sandbox.conftest import LOOPBACK, Payer, error_of


def _bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.mark.parametrize(
    "header", [None, "Bearer", "Bearer sk_test_nope", "Basic abc", "sk_test_x"]
)
def test_invalid_keys_are_401(sandbox: Sandbox, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    r = LOOPBACK.get(f"{sandbox.base_url}/v1/payments", headers=headers)
    assert r.status_code == 401
    err = error_of(r)
    assert (err["type"], err["code"]) == ("authentication_error", "invalid_api_key")
    assert "sk_test_nope" not in r.text  # a key is never echoed in full
    assert "x-ratelimit-limit" in r.headers and r.headers["service-version"] == "2024-01-01"


@pytest.mark.parametrize(
    ("key", "shown", "hidden"),
    [
        ("sk_test_nope", "sk_test_…", ["nope"]),  # all of its secret part
        ("hunter2", "…", ["hun", "ter2"]),  # not a key at all: a password pasted by mistake
        ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_…p7dc", ["4eC39HqL"]),
    ],
)
def test_a_refused_key_is_shown_as_the_library_masks_it(
    sandbox: Sandbox, key: str, shown: str, hidden: list[str]
) -> None:
    # The 401 names the key so the sender can tell which one was refused, but shows no more
    # of it than gwtools.mask_key would: the message ends up in the client's errors and logs,
    # where the client can only mask the key it sent, not a part of it cut by the sandbox.
    r = LOOPBACK.get(f"{sandbox.base_url}/v1/payments", headers=_bearer(key))
    assert r.status_code == 401
    said = error_of(r)["message"]
    assert f"provided: {shown}." in said, said
    for part in hidden:
        assert part not in said, said


def test_publishable_key_may_only_create_payments(payer: Payer, account: dict[str, Any]) -> None:
    pk = _bearer(account["publishable_key"])
    created = payer.create(headers=pk)
    assert created.status_code == 201, created.text
    pid = created.json()["id"]
    for method, path in (
        ("GET", f"/v1/payments/{pid}"),
        ("GET", "/v1/payments"),
        ("POST", f"/v1/payments/{pid}/capture"),
        ("GET", "/v1/refunds"),
        ("POST", "/v1/refunds"),
        ("GET", "/v1/events"),
    ):
        r = payer.http.request(method, path, headers=pk)
        assert r.status_code == 401, (method, path)
        assert error_of(r)["type"] == "authentication_error"


def test_roll_key_keeps_old_key_for_24_hours(payer: Payer, account: dict[str, Any]) -> None:
    old = account["secret_key"]
    r = payer.http.post("/_sandbox/keys/roll", headers=_bearer(old))
    assert r.status_code == 200
    new = r.json()["secret_key"]
    assert new.startswith("sk_test_") and new != old
    for key in (old, new):
        assert payer.http.get("/v1/payments", headers=_bearer(key)).status_code == 200
    payer.advance(24 * 3600 - 1)
    assert payer.http.get("/v1/payments", headers=_bearer(old)).status_code == 200
    payer.advance(1)
    gone = payer.http.get("/v1/payments", headers=_bearer(old))
    assert gone.status_code == 401 and error_of(gone)["code"] == "invalid_api_key"
    assert payer.http.get("/v1/payments", headers=_bearer(new)).status_code == 200


def _status(payer: Payer, key: str) -> int:
    return payer.http.get("/v1/payments", headers=_bearer(key)).status_code


def test_a_rolled_key_cannot_be_rolled_again(payer: Payer, account: dict[str, Any]) -> None:
    """Rotation gives one new key; rolling the old one again would leave a third key valid."""
    old = account["secret_key"]
    first = payer.http.post("/_sandbox/keys/roll", headers=_bearer(old))
    assert first.status_code == 200
    new, expires = first.json()["secret_key"], first.json()["old_key_expires_at"]
    assert type(expires) is int  # Unix seconds, as every other time of the sandbox
    payer.advance(3600)
    again = payer.http.post("/_sandbox/keys/roll", headers=_bearer(old))
    assert again.status_code == 409, again.text
    err = error_of(again)
    assert err["code"] == "invalid_state" and "already rolled" in err["message"]
    assert old not in again.text and old[-4:] in err["message"]  # masked, not echoed
    # nothing changed: the replacement works, the old key keeps its original 24 h
    assert _status(payer, new) == 200 and _status(payer, old) == 200
    clock = payer.http.get("/_sandbox/clock").json()["unix"]
    payer.advance(expires - clock - 1)
    assert _status(payer, old) == 200
    payer.advance(1)
    assert _status(payer, old) == 401 and _status(payer, new) == 200


def test_rolling_the_replacement_ends_the_older_grace(
    payer: Payer, account: dict[str, Any]
) -> None:
    """At most two keys are valid after a roll: the new one and the one just rolled."""
    k0 = account["secret_key"]
    k1 = payer.http.post("/_sandbox/keys/roll", headers=_bearer(k0)).json()["secret_key"]
    payer.advance(600)
    r = payer.http.post("/_sandbox/keys/roll", headers=_bearer(k1))
    assert r.status_code == 200
    k2 = r.json()["secret_key"]
    assert len({k0, k1, k2}) == 3
    assert [_status(payer, k) for k in (k0, k1, k2)] == [401, 200, 200]
    payer.advance(24 * 3600)
    assert [_status(payer, k) for k in (k0, k1, k2)] == [401, 401, 200]
    # the account's other keys were never touched (a pk_ key may only create payments; a
    # test card with a live key is declined, which still shows the key was accepted)
    assert _status(payer, account["live_secret_key"]) == 200
    for other in ("publishable_key", "live_publishable_key"):
        assert payer.create(headers=_bearer(account[other])).status_code != 401, other


@pytest.mark.parametrize(
    ("ips", "allowed"),
    [
        (["127.0.0.1"], True),
        (["10.0.0.0/8"], False),
        (["127.0.0.0/8", "::1"], True),
        (["2001:db8::/32"], False),
        (["::ffff:127.0.0.1"], True),  # IPv4-mapped IPv6 form of the loopback client
        ([], True),  # empty list: no restriction
    ],
)
def test_ip_allowlist(payer: Payer, account: dict[str, Any], ips: list[str], allowed: bool) -> None:
    r = payer.http.put("/_sandbox/keys/allowlist", json={"ips": ips})
    assert r.status_code == 200 and r.json()["ips"] == ips
    got = payer.http.get("/v1/payments")
    assert got.status_code == (200 if allowed else 401)
    if not allowed:
        assert "allowlist" in error_of(got)["message"]
    # the other keys of the account are not restricted
    assert (
        payer.http.get("/v1/payments", headers=_bearer(account["live_secret_key"])).status_code
        == 200
    )


def test_ipv6_client_against_allowlist(account: dict[str, Any], sandbox: Sandbox) -> None:
    # a second server on ::1 shows that IPv6 client addresses are matched
    with Sandbox(sandbox.variant, host="::1") as sb6:  # type: ignore[arg-type]
        acct = LOOPBACK.post(f"{sb6.base_url}/_sandbox/accounts").json()
        key = _bearer(acct["secret_key"])
        for ips, status in ((["::1/128"], 200), (["127.0.0.1"], 401), (["::/0"], 200)):
            LOOPBACK.put(
                f"{sb6.base_url}/_sandbox/keys/allowlist", json={"ips": ips}, headers=key
            ).raise_for_status()
            assert LOOPBACK.get(f"{sb6.base_url}/v1/payments", headers=key).status_code == status


def test_bad_allowlist_entry_is_400(payer: Payer) -> None:
    r = payer.http.put("/_sandbox/keys/allowlist", json={"ips": ["300.1.1.1"]})
    assert r.status_code == 400 and error_of(r)["param"] == "ips"


@pytest.mark.parametrize("body", [{}, {"ips": None}, {"ips": ""}, {"ips": 0}, {"ips": False}])
def test_allowlist_is_lifted_only_by_an_empty_list(payer: Payer, body: dict[str, Any]) -> None:
    """A missing or falsy ``ips`` used to lift the key's allowlist without a word."""
    assert payer.http.put("/_sandbox/keys/allowlist", json={"ips": ["10.0.0.0/8"]}).is_success
    r = payer.http.put("/_sandbox/keys/allowlist", json=body)
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["param"] == "ips"
    if "ips" not in body or body["ips"] is None:
        assert err["code"] == "parameter_missing" and '{"ips": []}' in err["message"]
    else:
        assert err["code"] == "parameter_invalid"
    assert payer.http.get("/v1/payments").status_code == 401  # still restricted
