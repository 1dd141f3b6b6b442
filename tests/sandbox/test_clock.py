"""The admin clock refuses instants outside the range the sandbox works in (2000 to 2100)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from gwtools.sandbox import Sandbox
from tests.sandbox.conftest import error_of

NOW = datetime(2026, 2, 1, 8, 0, tzinfo=UTC)
LATEST = 4_102_444_800  # 2100-01-01T00:00:00Z
RANGE = "2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def sb() -> Iterator[Sandbox]:
    with Sandbox("B", now=NOW) as sandbox:
        yield sandbox


@pytest.fixture
def client(sb: Sandbox) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=sb.base_url,
        verify=False,
        timeout=10,
        headers={"Authorization": f"Bearer {sb.secret_key}"},
    ) as c:
        c.post("/_sandbox/clock", json={"now": NOW.isoformat()}).raise_for_status()
        yield c


def _create(client: httpx.Client) -> httpx.Response:
    card = {"type": "card", "card": {"token": "tok_visa"}}
    return client.post(
        "/v1/payments", json={"amount": 100, "currency": "myr", "payment_method_data": card}
    )


def _refused(r: httpx.Response, param: str) -> dict[str, Any]:
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["type"], err["code"], err["param"]) == (
        "invalid_request_error",
        "parameter_invalid",
        param,
    )
    assert RANGE in err["message"]
    return err


def test_advancing_past_2100_is_refused_and_payments_keep_working(client: httpx.Client) -> None:
    before = client.get("/_sandbox/clock").json()
    for huge in (1_000_000_000_000, 10**30):
        r = client.post("/_sandbox/clock/advance", json={"seconds": huge})
        _refused(r, "seconds")
    assert client.get("/_sandbox/clock").json() == before
    assert _create(client).status_code == 201


def test_advance_up_to_the_last_instant(client: httpx.Client) -> None:
    room = LATEST - int(NOW.timestamp())
    err = _refused(client.post("/_sandbox/clock/advance", json={"seconds": room + 1}), "seconds")
    assert f"between 0 and {room}" in err["message"]
    r = client.post("/_sandbox/clock/advance", json={"seconds": room})
    assert r.status_code == 200 and r.json()["now"] == "2100-01-01T00:00:00Z"
    assert _create(client).status_code == 201  # the sandbox still works at the edge
    _refused(client.post("/_sandbox/clock/advance", json={"seconds": 1}), "seconds")


@pytest.mark.parametrize(
    "bad",
    [
        1_000_000_000_000,
        "9999-01-01T00:00:00Z",
        "2100-01-01T00:00:01Z",
        "1999-12-31T23:59:59Z",
        0,
        -5,
        "99999999999999999999999",
    ],
)
def test_setting_outside_the_range_is_refused(client: httpx.Client, bad: Any) -> None:
    before = client.get("/_sandbox/clock").json()
    _refused(client.post("/_sandbox/clock", json={"now": bad}), "now")
    assert client.get("/_sandbox/clock").json() == before
    assert _create(client).status_code == 201


@pytest.mark.parametrize(
    ("edge", "shown"),
    [("2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z"), (LATEST, "2100-01-01T00:00:00Z")],
)
def test_setting_the_edges_is_accepted(client: httpx.Client, edge: Any, shown: str) -> None:
    r = client.post("/_sandbox/clock", json={"now": edge})
    assert r.status_code == 200, r.text
    assert r.json()["now"] == shown


def test_a_sandbox_cannot_start_outside_the_range() -> None:
    from gwtools.sandbox.clock import Clock, ClockRangeError

    with pytest.raises(ClockRangeError, match="2000-01-01T00:00:00Z"):
        Clock(datetime(1999, 1, 1, tzinfo=UTC))
    assert Clock(datetime(2000, 1, 1, tzinfo=UTC)).iso() == "2000-01-01T00:00:00Z"


@pytest.mark.parametrize("bad", [[1], True, {"unix": 1}])
def test_setting_a_wrong_type_is_invalid_not_missing(client: httpx.Client, bad: Any) -> None:
    r = client.post("/_sandbox/clock", json={"now": bad})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "now")
    assert "ISO 8601" in err["message"] and "Unix seconds" in err["message"]


def test_advance_without_seconds_is_missing(client: httpx.Client) -> None:
    for r in (
        client.post("/_sandbox/clock/advance", json={}),
        client.post("/_sandbox/clock/advance"),
    ):
        assert r.status_code == 400, r.text
        err = error_of(r)
        assert (err["code"], err["param"]) == ("parameter_missing", "seconds")
