"""Service-Version: default, deprecated, unsupported; echoed on every response."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import Payer, error_of


def test_default_and_echo(payer: Payer) -> None:
    for r in (
        payer.http.get("/v1/payments"),
        payer.http.get("/v1/payments/pay_nope"),
        payer.create(),
    ):
        assert r.headers["service-version"] == "2024-01-01"
        assert "deprecation" not in r.headers


def test_deprecated_version_is_answered_with_deprecation(payer: Payer) -> None:
    r = payer.http.get("/v1/payments", headers={"Service-Version": "2023-12-01"})
    assert r.status_code == 200
    assert r.headers["service-version"] == "2023-12-01"
    assert r.headers["deprecation"] == "@1704067200"
    current = payer.http.get("/v1/payments", headers={"Service-Version": "2024-01-01"})
    assert current.headers["service-version"] == "2024-01-01"


@pytest.mark.parametrize("version", ["2025-01-01", "latest", "2024-1-1", ""])
def test_unsupported_version_is_400(payer: Payer, version: str) -> None:
    r = payer.http.get("/v1/payments", headers={"Service-Version": version})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "Service-Version")
    assert r.headers["service-version"] == "2024-01-01"
    assert "x-ratelimit-limit" in r.headers
