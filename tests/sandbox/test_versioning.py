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


@pytest.mark.parametrize("sandbox", ["B"], indirect=True)
def test_events_carry_the_version_their_object_is_rendered_in(payer: Payer) -> None:
    # A request pinned to the deprecated version still causes events rendered, and labelled,
    # in the current one: both versions render objects alike, and an event is rendered once,
    # for every reader (the webhook receiver too), not per request.
    old = {"Service-Version": "2023-12-01"}
    created = payer.create(headers=old, expect=201)
    assert created.headers["service-version"] == "2023-12-01"
    events = payer.http.get("/v1/events", params={"limit": 100}, headers=old).json()["data"]
    mine = [e for e in events if e["data"]["object"]["id"] == created.json()["id"]]
    assert [e["type"] for e in mine] == ["payment.succeeded"]
    assert mine[0]["api_version"] == "2024-01-01"
    assert mine[0]["data"]["object"] == created.json()
