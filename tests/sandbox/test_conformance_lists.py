"""Audit: a list given the other variant's paging parameter says how this one pages
(DESIGN.md section 3: A page/limit with meta.totalPages, B limit/starting_after/ending_before)."""

from __future__ import annotations

import pytest

from tests.sandbox.conftest import Payer, error_of


@pytest.mark.parametrize("path", ["/v1/payments", "/v1/refunds"])
def test_page_on_a_cursor_list_points_to_starting_after(payer_b: Payer, path: str) -> None:
    r = payer_b.http.get(path, params={"page": 2})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", "page")
    assert "starting_after=" in err["message"] and "has_more" in err["message"]


@pytest.mark.parametrize("name", ["starting_after", "ending_before"])
@pytest.mark.parametrize("path", ["/v1/payments", "/v1/refunds"])
def test_a_cursor_on_a_numbered_list_points_to_page(payer_a: Payer, path: str, name: str) -> None:
    r = payer_a.http.get(path, params={name: "pay_x"})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", name)
    assert "page=2" in err["message"] and "meta.totalPages" in err["message"]


def test_events_stay_cursor_paged_in_variant_a(payer_a: Payer) -> None:
    r = payer_a.http.get("/v1/events", params={"page": 2})
    assert r.status_code == 400 and "starting_after=" in error_of(r)["message"]
    assert payer_a.http.get("/v1/events", params={"starting_after": "evt_x"}).status_code == 404


@pytest.mark.parametrize("name", ["limit", "page"])
def test_a_long_number_is_out_of_range_not_a_non_integer(payer_a: Payer, name: str) -> None:
    r = payer_a.http.get("/v1/payments", params={name: "9" * 13})
    assert r.status_code == 400
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", name)
    assert "expected 1 to" in err["message"] and "not an integer" not in err["message"]


def test_a_long_limit_on_a_cursor_list_is_out_of_range(payer_b: Payer) -> None:
    err = error_of(payer_b.http.get("/v1/refunds", params={"limit": "1" + "0" * 15}))
    assert err["param"] == "limit" and "expected 1 to 100" in err["message"]


@pytest.mark.parametrize("name", ["from", "to"])
def test_time_filters_take_ascii_digits_only(payer: Payer, name: str) -> None:
    """The message promises "digits only, e.g. 1706659200"; Python's int() would also read
    Arabic-Indic or full-width digits, which no ISO 8601 or Unix-seconds writer produces."""
    for value in (
        "\u0661\u0667\u0660\u0666\u0666\u0665\u0669\u0662\u0660\u0660",
        "１７０６６５９２００",
    ):
        r = payer.http.get("/v1/payments", params={name: value})
        assert r.status_code == 400, r.text
        err = error_of(r)
        assert (err["code"], err["param"]) == ("parameter_invalid", name)
        assert "Unix seconds" in err["message"]
    assert payer.http.get("/v1/payments", params={name: "1706659200"}).status_code == 200
