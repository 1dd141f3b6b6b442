"""Audit: 401 messages say what to do about the key (DESIGN.md section 3, keys)."""

from __future__ import annotations

from typing import Any

from tests.sandbox.conftest import Payer, error_of


def test_an_unknown_key_is_told_what_to_check(payer: Payer) -> None:
    r = payer.http.get("/v1/payments", headers={"Authorization": "Bearer sk_test_revoked0000"})
    assert r.status_code == 401
    err = error_of(r)
    assert (err["type"], err["code"]) == ("authentication_error", "invalid_api_key")
    assert "sk_test_…0000" in err["message"] and "sk_test_revoked0000" not in r.text
    assert "whole key" in err["message"] and "revoked" in err["message"]


def test_a_rolled_key_past_its_grace_is_told_to_use_the_new_key(
    payer: Payer, account: dict[str, Any]
) -> None:
    old = {"Authorization": f"Bearer {account['secret_key']}"}
    rolled = payer.http.post("/_sandbox/keys/roll", headers=old)
    assert rolled.status_code == 200, rolled.text
    payer.advance(24 * 3600)
    r = payer.http.get("/v1/payments", headers=old)
    assert r.status_code == 401
    err = error_of(r)
    assert err["code"] == "invalid_api_key"
    assert "24-hour grace" in err["message"] and "new key" in err["message"]
