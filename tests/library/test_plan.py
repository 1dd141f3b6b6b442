"""The incremental sync's plan, as pure functions: cached rows and probed pages in, choices out.

No HTTP and no monkeypatching: the plan is called with the plain data a run would give it
(the cached rows' ids, statuses and creation times; the page info of probed first pages).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pyarrow as pa

from gwtools._schema import arrow_schema
from gwtools.http._paging import list_cost
from gwtools.http._wire import PageInfo
from gwtools.sync._plan import OpenGroup, _relist_from, choose_cutoff, columns, survey, us

T0 = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
HIGH_WATER = T0 + dt.timedelta(days=1)
OVERLAP = dt.timedelta(minutes=10)


def cached(rows: list[tuple[str, str, str, dt.datetime]]) -> pa.Table:
    """The columns a survey reads: (id, status, status as the gateway names it, created)."""
    schema = arrow_schema("payments")
    names = columns("payments")
    values = zip(*rows, strict=True)
    return pa.table(
        {n: pa.array(list(v), schema.field(n).type) for n, v in zip(names, values, strict=True)}
    )


def settled(n: int) -> list[tuple[str, str, str, dt.datetime]]:
    """``n`` succeeded payments between an hour after T0 and the high-water mark."""
    step = (HIGH_WATER - T0 - dt.timedelta(hours=1)) / n
    at = [T0 + dt.timedelta(hours=1) + step * (i + 1) for i in range(n)]
    return [(f"pay_ok{i:04d}", "succeeded", "succeeded", t) for i, t in enumerate(at)]


def b_page(ids: list[str], created: list[dt.datetime], has_more: bool = False) -> PageInfo:
    """A variant B list page, newest first, as page_info reads it."""
    return PageInfo(
        "B",
        len(ids),
        has_more=has_more,
        first_id=ids[0] if ids else None,
        last_id=ids[-1] if ids else None,
        first_created=created[0] if created else None,
        last_created=created[-1] if created else None,
        ids=tuple(ids),
    )


def test_open_rows_reread_through_status_lists_variant_b() -> None:
    """Old open rows are re-read by status-filtered lists; those that moved on, by id."""
    waiting, still_waiting, held = "pay_wait1", "pay_wait2", "pay_held"
    rows = [
        (waiting, "requires_action", "requires_action", T0),
        (still_waiting, "requires_action", "requires_action", T0 + dt.timedelta(seconds=1)),
        (held, "authorized", "requires_capture", T0 + dt.timedelta(seconds=2)),
        *settled(1000),  # listing again from the open rows would cost many pages
    ]
    draft = survey(
        cached(rows), "payments", high_water=HIGH_WATER.isoformat(), overlap=OVERLAP, variant="B"
    )
    assert draft.until == HIGH_WATER - OVERLAP
    # Two rows waiting: their status list is worth a look; one held row goes by id.
    assert draft.to_probe() == ["requires_action"]
    # The first page of the list shows one of them still waiting: the other moved on.
    probe = b_page([still_waiting], [T0 + dt.timedelta(seconds=1)])
    plan = draft.plan({"requires_action": probe})
    assert plan.since == HIGH_WATER - OVERLAP  # list the new rows only
    by_status = {s.status: s for s in plan.statuses}
    assert set(by_status) == {"requires_action", "requires_capture"}
    # Its page said everything: nothing more to list; the held row has no list.
    assert not by_status["requires_action"].by_list and by_status["requires_action"].probe
    assert not by_status["requires_capture"].by_list
    # What left its open state is retrieved by id; what stayed came back in the list.
    left = plan.leftover(seen={still_waiting})
    assert left.relist_from is None and left.by_id == sorted([held, waiting])
    # The survey is not changed by planning: it can be planned again.
    assert draft.plan({}).since == plan.since and len(draft.statuses[0].rows) == 2


def test_open_rows_reread_through_status_lists_variant_a() -> None:
    """In A the checkouts expired during the first day, so only the held payment is open."""
    held = "pay_held"
    rows = [(held, "authorized", "requires_capture", T0), *settled(1000)]
    draft = survey(
        cached(rows), "payments", high_water=HIGH_WATER.isoformat(), overlap=OVERLAP, variant="A"
    )
    assert draft.to_probe() == []
    plan = draft.plan({})
    assert plan.since == HIGH_WATER - OVERLAP
    assert plan.leftover(seen=set()).by_id == [held]


def test_a_status_whose_rows_stay_is_listed() -> None:
    """250 rows held for capture; the first page of their list (variant A, total 250) holds
    the newest 100 and says 150 more are still held: three pages beat 150 retrieves."""
    held = [(f"pay_h{i:03d}", "authorized", "requires_capture", T0 + dt.timedelta(seconds=i))
            for i in range(250)]  # fmt: skip
    draft = survey(
        cached([*held, *settled(10_000)]),
        "payments",
        high_water=HIGH_WATER.isoformat(),
        overlap=OVERLAP,
        variant="A",
    )
    assert draft.to_probe() == ["requires_capture"]
    newest = held[:-101:-1]
    probe = PageInfo(
        "A",
        100,
        total=250,
        total_pages=3,
        page=1,
        limit=100,
        first_created=newest[0][3],
        last_created=newest[-1][3],
        ids=tuple(r[0] for r in newest),
    )
    plan = draft.plan({"requires_capture": probe})
    assert plan.since == HIGH_WATER - OVERLAP
    (status,) = plan.statuses
    assert status.by_list and status.first == T0
    # The list returned them all: nothing is left to retrieve.
    left = plan.leftover(seen={r[0] for r in held})
    assert left.relist_from is None and left.by_id == []


def test_rows_to_reread_whatever_their_status_and_ids_not_cached() -> None:
    """Payments whose refunds changed are re-read even when final; an id the cache does not
    hold can only be retrieved."""
    rows = [("pay_old", "succeeded", "succeeded", T0), *settled(1000)]
    draft = survey(
        cached(rows),
        "payments",
        high_water=HIGH_WATER.isoformat(),
        overlap=OVERLAP,
        variant="B",
        extra_ids={"pay_old", "pay_gone"},
    )
    assert draft.extra == {"pay_old": us(T0)} and draft.unknown == ["pay_gone"]
    plan = draft.plan({})
    assert plan.statuses == [] and plan.leftover(set()).by_id == ["pay_old", "pay_gone"]


def test_a_survey_of_the_rows_to_reread_plans_what_one_of_every_row_plans() -> None:
    """A sync of a large cache reads only the open rows, the ids to re-read, and the creation
    times from the oldest of those on (``created=``): the plan is the same."""
    old = T0 - dt.timedelta(days=30)
    rows = [
        ("pay_very_old", "succeeded", "succeeded", old),
        ("pay_wait", "requires_action", "requires_action", T0),
        ("pay_auth", "authorized", "authorized", T0 + dt.timedelta(minutes=5)),
        ("pay_refunded", "succeeded", "succeeded", T0 + dt.timedelta(minutes=7)),
        *settled(700),
    ]
    kw: dict[str, Any] = {
        "high_water": HIGH_WATER.isoformat(),
        "overlap": OVERLAP,
        "variant": "A",
        "extra_ids": {"pay_refunded", "pay_gone"},
    }
    whole = survey(cached(rows), "payments", **kw)
    picked = [r for r in rows if r[1] != "succeeded" or r[0] == "pay_refunded"]
    created = np.array([us(r[3]) for r in rows if r[3] >= T0], dtype=np.int64)
    part = survey(cached(picked), "payments", created=created, **kw)
    assert (whole.extra, whole.unknown) == (part.extra, part.unknown)
    assert [(s.status, s.rows) for s in whole.statuses] == [
        (s.status, s.rows) for s in part.statuses
    ]
    a, b = whole.plan({}), part.plan({})
    assert (a.since, a.until) == (b.since, b.until)
    assert a.leftover(set()) == b.leftover(set())
    assert a.leftover({"pay_wait"}) == b.leftover({"pay_wait"})


def test_pending_refunds_are_grouped_by_their_status() -> None:
    """Refunds have no status_raw column, so the survey's raw status column was taken by
    position from the columns it reads, which for refunds is ``created_at``: old pending
    refunds were grouped by creation time, their "status" lists asked for
    ``status=<a time>`` (refused, so every pending refund was retrieved by id or its range
    listed again). They are grouped under ``pending``, the refund list's filter value."""
    schema = arrow_schema("refunds")
    names = columns("refunds")
    at = [T0, T0, T0 + dt.timedelta(minutes=1), HIGH_WATER]
    rows = {
        "id": ["rfnd_a", "rfnd_b", "rfnd_c", "rfnd_new"],
        "status": ["pending", "pending", "pending", "succeeded"],
        "created_at": at,
    }
    table = pa.table({n: pa.array(rows[n], schema.field(n).type) for n in names})
    draft = survey(
        table, "refunds", high_water=HIGH_WATER.isoformat(), overlap=OVERLAP, variant="B"
    )
    assert [s.status for s in draft.statuses] == ["pending"]
    assert draft.statuses[0].rows == {i: us(t) for i, t in zip(rows["id"][:3], at[:3], strict=True)}


def test_choose_cutoff_minimises_requests() -> None:
    cached = np.arange(1000)  # one row per time unit
    # Two open rows long ago, three recent ones; listing from 900 costs 1 page + 2 by id.
    cands = np.array([5, 10, 950, 960, 990])
    assert choose_cutoff(cached, cands, default=995, page_limit=100) == 950
    # With few rows per page, retrieving every candidate by id is cheaper.
    assert choose_cutoff(cached, cands, default=995, page_limit=1) == 995
    # Open rows are re-read by status-filtered lists (100 per request), not one by one:
    # listing from the high-water mark plus one status page costs what relisting from 950
    # costs, and lists fewer rows.
    assert choose_cutoff(cached, np.array([], dtype=int), 995, 100, open_created=cands) == 995
    # Nothing open: list from the high-water mark.
    assert choose_cutoff(cached, np.array([], dtype=int), default=995) == 995


def test_rows_left_over_are_listed_again_where_that_is_cheaper() -> None:
    created = np.arange(1000)  # one cached row per time unit
    # Two rows far apart: two retrieves cost no more than any listing.
    assert _relist_from(created, np.array([10, 990]), until=1000, variant="A") is None
    # Thirty of them: listing the 50 rows from the oldest one costs a single request.
    todo = np.arange(950, 980)
    assert _relist_from(created, todo, until=1000, variant="A") == 950
    # One old straggler stays by id rather than listing 900 more rows.
    assert _relist_from(created, np.append(todo, 10), until=1000, variant="A") == 950


def test_status_lists_priced_by_what_stays_in_the_status() -> None:
    cached = np.arange(10_000)
    rows = np.arange(9_000, 9_900, 3)  # 300 open rows in the last 1,000
    # They all stay: three pages of their status list beat listing 1,000 rows again.
    stays = OpenGroup(rows, stay=1.0, rest=3.0)
    assert choose_cutoff(cached, np.array([], dtype=int), 9_990, groups=[stays]) == 9_990
    # They all left: listing the range again beats retrieving 300 rows by id.
    gone = OpenGroup(rows, stay=0.0, rest=1.0)
    assert choose_cutoff(cached, np.array([], dtype=int), 9_990, groups=[gone]) == 9_000
    # Variant B's time windows make long lists dearer than A's page numbers.
    assert list_cost(1_000, "B") > list_cost(1_000, "A") == 11
