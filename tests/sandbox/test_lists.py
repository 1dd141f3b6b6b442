"""List endpoints: envelopes, paging in both styles, ordering, time and status filters."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sandbox.conftest import Payer, error_of


def _make(payer: Payer, n: int, step: int = 60) -> list[str]:
    """n payments one ``step`` apart on the sandbox clock; ids oldest first."""
    ids = []
    for i in range(n):
        ids.append(payer.create(100 + i, expect=201).json()["id"])
        payer.advance(step)
    return ids


def _walk_cursor(payer: Payer, path: str, limit: int, **params: Any) -> list[str]:
    seen: list[str] = []
    after = None
    while True:
        q = {"limit": limit, **params, **({"starting_after": after} if after else {})}
        page = payer.http.get(path, params=q).json()
        seen += [p["id"] for p in page["data"]]
        if not page["has_more"]:
            return seen
        after = page["data"][-1]["id"]


def test_pages_newest_first(payer: Payer) -> None:
    ids = _make(payer, 7)
    newest_first = ids[::-1]
    if payer.variant == "A":
        first = payer.http.get("/v1/payments", params={"limit": 3}).json()
        assert first["meta"] == {"total": 7, "page": 1, "limit": 3, "totalPages": 3}
        got = []
        for page in (1, 2, 3):
            got += [
                p["id"]
                for p in payer.http.get("/v1/payments", params={"limit": 3, "page": page}).json()[
                    "data"
                ]
            ]
        assert got == newest_first
        beyond = payer.http.get("/v1/payments", params={"limit": 3, "page": 4}).json()
        assert beyond["data"] == [] and beyond["meta"]["total"] == 7
        default = payer.http.get("/v1/payments").json()
        assert default["meta"]["limit"] == 20 and len(default["data"]) == 7
    else:
        assert _walk_cursor(payer, "/v1/payments", 3) == newest_first
        default = payer.http.get("/v1/payments").json()
        assert len(default["data"]) == 7 and default["has_more"] is False
        assert default["url"] == "/v1/payments" and default["object"] == "list"
        before = payer.http.get("/v1/payments", params={"ending_before": ids[2], "limit": 2}).json()
        assert [p["id"] for p in before["data"]] == [ids[4], ids[3]]
        assert before["has_more"] is True


def test_same_second_ties_break_by_id_desc(payer: Payer) -> None:
    ids = [payer.create(expect=201).json()["id"] for _ in range(5)]
    if payer.variant == "A":
        got = [p["id"] for p in payer.http.get("/v1/payments").json()["data"]]
    else:
        got = _walk_cursor(payer, "/v1/payments", 2)
    assert got == sorted(ids, reverse=True)


def test_limit_bounds(payer: Payer) -> None:
    r = payer.http.get("/v1/payments", params={"limit": 101})
    assert r.status_code == 400 and error_of(r)["code"] == "parameter_invalid"
    assert error_of(r)["param"] == "limit"
    for bad in ("0", "x", "-1"):
        assert payer.http.get("/v1/payments", params={"limit": bad}).status_code == 400
    assert payer.http.get("/v1/payments", params={"limit": 100}).status_code == 200
    unknown = payer.http.get("/v1/payments", params={"colour": "red"})
    assert unknown.status_code == 400 and error_of(unknown)["param"] == "colour"


def test_time_filters_from_inclusive_to_exclusive(payer: Payer) -> None:
    ids = _make(payer, 4, step=3600)
    created = [payer.get(i) for i in ids]
    key = "created_at" if payer.variant == "A" else "created"
    # ISO 8601 and Unix seconds both work
    lo, hi = created[1][key], created[3][key]
    r = payer.http.get("/v1/payments", params={"from": lo, "to": hi}).json()
    assert {p["id"] for p in r["data"]} == {ids[1], ids[2]}
    if payer.variant == "B":
        iso = "2026-01-01T00:00:00Z"
        assert payer.http.get("/v1/payments", params={"from": iso}).status_code == 200
    bad = payer.http.get("/v1/payments", params={"from": "yesterday"})
    assert bad.status_code == 400 and error_of(bad)["param"] == "from"
    # equal bounds are an empty window; reversed ones a mistake, said so
    assert payer.http.get("/v1/payments", params={"from": lo, "to": lo}).json()["data"] == []
    for path in ("/v1/payments", "/v1/refunds", "/v1/events"):
        rev = payer.http.get(path, params={"from": hi, "to": lo})
        assert rev.status_code == 400, (path, rev.text)
        err = error_of(rev)
        assert (err["code"], err["param"]) == ("parameter_invalid", "to")
        assert "before from" in err["message"] and "swap them" in err["message"]


def test_status_filter_uses_variant_vocabulary(payer: Payer) -> None:
    ok = payer.pay()
    manual = payer.pay(capture="manual")
    r = payer.http.get("/v1/payments", params={"status": "authorized"}).json()["data"]
    assert [p["id"] for p in r] == [manual["id"]]
    done = payer.status("succeeded")
    r = payer.http.get("/v1/payments", params={"status": done}).json()["data"]
    assert [p["id"] for p in r] == [ok["id"]]
    other = "succeeded" if payer.variant == "A" else "captured"
    assert payer.http.get("/v1/payments", params={"status": other}).status_code == 400


def test_cursor_errors(payer: Payer) -> None:
    if payer.variant == "A":
        assert payer.http.get("/v1/payments", params={"starting_after": "x"}).status_code == 400
        return
    r = payer.http.get("/v1/payments", params={"starting_after": "pay_" + "0" * 24})
    assert r.status_code == 404 and error_of(r)["param"] == "starting_after"
    both = payer.http.get("/v1/payments", params={"starting_after": "a", "ending_before": "b"})
    assert both.status_code == 400


@pytest.mark.parametrize("resource", ["payments", "refunds"])
def test_raw_records_are_served_verbatim(payer: Payer, resource: str) -> None:
    real = payer.pay()
    if resource == "refunds":
        payer.http.post("/v1/refunds", json={"payment_id": real["id"], "amount": 1})
    payer.advance(1)  # a record without a usable timestamp is placed at the sandbox's now
    odd = [
        {"object": "payment", "amount": 5, "status": "mystery", "created": 1},  # no id
        {"id": "pay_badtime", "created_at": "not a time", "status": "weird", "x": [1, 2]},
    ]
    for obj in odd:
        r = payer.http.post("/_sandbox/raw_records", json={"resource": resource, "object": obj})
        assert r.status_code == 201, r.text
    data = payer.http.get(f"/v1/{resource}", params={"limit": 10}).json()["data"]
    assert odd[0] in data and odd[1] in data
    # placed by its timestamp when parseable (1970 -> last), else newest (first)
    assert data[-1] == odd[0] and data[0] == odd[1]
    weird = payer.http.get(f"/v1/{resource}", params={"status": "weird"})
    if resource == "payments":
        assert weird.status_code == 400  # not the variant's vocabulary


def test_empty_filter_values_are_400(payer: Payer) -> None:
    names = ["from", "to", "status"] + (["ending_before"] if payer.variant == "B" else [])
    for name in names:
        r = payer.http.get("/v1/payments", params={name: ""})
        assert r.status_code == 400 and error_of(r)["param"] == name
    r = payer.http.get("/v1/refunds", params={"payment_id": ""})
    assert r.status_code == 400 and error_of(r)["param"] == "payment_id"


@pytest.mark.parametrize("name", ["status", "limit", "from"])
def test_repeated_query_parameters_are_refused(payer: Payer, name: str) -> None:
    """``status=failed&status=pending`` used to filter on one of them and drop the other."""
    value = {"status": payer.status("failed"), "limit": "5", "from": "2026-01-01"}[name]
    r = payer.http.get("/v1/payments", params=[(name, value), (name, value)])
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert (err["code"], err["param"]) == ("parameter_invalid", name)
    assert "given 2 times" in err["message"] and "give it once" in err["message"]


def test_fractional_unix_seconds_message(payer: Payer) -> None:
    r = payer.http.get("/v1/payments", params={"from": "1706659200.5"})
    assert r.status_code == 400
    err = error_of(r)
    assert err["param"] == "from" and "whole Unix seconds" in err["message"]


def test_unencoded_plus_in_a_time_offset_is_explained(payer: Payer) -> None:
    """``?to=...T00:00:00+08:00`` sent as is arrives as '... 08:00' (form decoding makes '+' a
    space): the 400 says to send %2B, and the value is never guessed at."""
    for name in ("from", "to"):
        r = payer.http.get(f"/v1/payments?{name}=2026-11-20T00:00:00+08:00")
        assert r.status_code == 400
        err = error_of(r)
        assert (err["code"], err["param"]) == ("parameter_invalid", name)
        assert err["message"] == (
            f"Invalid {name}: '2026-11-20T00:00:00 08:00' has a space where its offset's sign "
            "belongs: a '+' in a query string is read as a space, so send it as %2B (e.g. "
            f"{name}=2026-11-20T00:00:00%2B08:00), or use Z (UTC) or a negative offset."
        )
    # encoded, it works (httpx encodes '+' in params); other nonsense keeps the general message
    fine = payer.http.get("/v1/payments", params={"to": "2026-11-20T00:00:00+08:00"})
    assert fine.status_code == 200
    other = error_of(payer.http.get("/v1/refunds", params={"to": "2026-11-20T00:00:00 tomorrow"}))
    assert "expected ISO 8601" in other["message"] and "%2B" not in other["message"]
