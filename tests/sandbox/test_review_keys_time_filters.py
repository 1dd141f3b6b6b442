"""A date-only ``from``/``to`` is a whole UTC day: ``from`` its first instant, ``to`` up to the
next day's (so ``from=D&to=D`` lists day D); a date-time ``to`` stays exclusive."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.sandbox.conftest import Payer, error_of


def _listed(payer: Payer, **query: str) -> list[str]:
    r = payer.http.get("/v1/payments", params=query)
    assert r.status_code == 200, r.text
    return [p["id"] for p in r.json()["data"]]


def test_date_only_bounds_cover_the_whole_day(payer: Payer) -> None:
    pid = payer.create(expect=201).json()["id"]
    now = datetime.fromtimestamp(payer.http.get("/_sandbox/clock").json()["unix"], UTC)
    day = now.date()
    d, prev, nxt = (
        day.isoformat(),
        (day - timedelta(1)).isoformat(),
        (day + timedelta(1)).isoformat(),
    )
    assert _listed(payer, to=d) == [pid]
    assert _listed(payer, **{"from": d, "to": d}) == [pid]
    assert _listed(payer, **{"from": d}) == [pid]
    assert _listed(payer, to=prev) == []
    assert _listed(payer, **{"from": nxt}) == []
    # a date-time `to` is exclusive, as before
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert _listed(payer, to=stamp) == []
    assert _listed(payer, **{"from": stamp}) == [pid]


def test_a_date_only_to_before_from_is_refused(payer: Payer) -> None:
    r = payer.http.get("/v1/payments", params={"from": "2026-03-02", "to": "2026-03-01"})
    assert r.status_code == 400, r.text
    err = error_of(r)
    assert err["param"] == "to" and "swap" in err["message"]
    # the last instant of the day is still within a date-only `to` of that day
    ok = payer.http.get("/v1/payments", params={"from": "2026-03-01T23:59:59Z", "to": "2026-03-01"})
    assert ok.status_code == 200, ok.text
