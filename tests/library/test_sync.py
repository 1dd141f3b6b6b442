"""Syncs against the sandbox over real HTTP, both variants: the cache tracks the gateway."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gwtools.http._paging import list_cost
from gwtools.sync._sync import GatewayDataWarning, OpenGroup, _relist_from, choose_cutoff
from tests.library._shop import CARD_3DS, CARD_DECLINE, CARD_OK, Shop, assert_same, fresh


def test_incremental_syncs_converge_to_a_fresh_full_fetch(shop: Shop, tmp_path: Path) -> None:
    authorized = [shop.card(manual=True) for _ in range(3)]
    succeeded = [shop.card() for _ in range(4)]
    shop.card(CARD_DECLINE)
    waiting = [shop.open_payment() for _ in range(2)]
    fpx_slow = shop.fpx("TEST0003")  # pending, succeeds 30 s later
    fpx_ok = shop.fpx("TEST0001")
    gw = shop.connect(tmp_path / "cache")
    first = gw.sync()
    assert first.complete and first.resources["payments"].mode == "full"
    assert first.new == first.fetched == 12 and first.rate_limited == 0

    # Between syncs: captures, voids, refunds (card and FPX), a 3-D Secure completion,
    # the FPX delay passing, new payments.
    shop.capture(authorized[0])
    shop.void(authorized[1])
    shop.refund(succeeded[0])
    shop.refund(succeeded[1], amount=100)
    fpx_refund = shop.refund(fpx_ok)
    if shop.variant == "B":
        shop.complete(waiting[0])
    shop.advance(31)
    new = [shop.card(), shop.fpx("TEST0002"), shop.card(manual=True)]
    second = gw.sync()
    assert second.complete and second.resources["payments"].mode == "incremental"
    payments = gw.payments(refresh=False)
    status = payments.set_index("id")["status"]
    assert status[authorized[0]] == "succeeded" and status[authorized[1]] == "canceled"
    assert status[fpx_slow] == "succeeded" and set(new) <= set(status.index)
    assert payments.set_index("id").loc[succeeded[0], "refunded_amount"] > 0
    expected = fresh(shop, tmp_path)
    assert_same(payments, expected["payments"])
    assert_same(gw.refunds(refresh=False), expected["refunds"])

    # Days later: FPX refunds settle, unpaid checkouts expire; nothing new is created.
    shop.advance(8 * 86400)
    third = gw.sync()
    assert third.new == 0 and third.updated >= 1
    refunds = gw.refunds(refresh=False).set_index("id")
    assert refunds.loc[fpx_refund, "status"] != "pending"
    expected = fresh(shop, tmp_path, "fresh2")
    assert_same(gw.payments(refresh=False), expected["payments"])
    assert_same(gw.refunds(refresh=False), expected["refunds"])
    gw.close()


def test_unchanged_gateway_means_an_unchanged_cache(shop: Shop, tmp_path: Path) -> None:
    for _ in range(3):
        shop.card()
    with shop.connect(tmp_path) as gw:
        gw.sync()
        before = gw.payments(refresh=False)
        again = gw.sync()
        assert again.new == again.updated == 0
        assert_same(gw.payments(refresh=False), before)


def test_bad_records_are_rejected_not_lost(shop: Shop, tmp_path: Path) -> None:
    good = shop.card()
    weird = f"teleported_{shop.variant}"  # warned once per process and value: one per variant
    base = {"object": "payment", "amount": 500, "currency": "myr", "captured": False}
    created = (
        {"created": 1767225600} if shop.variant == "B" else {"created_at": "2026-01-01T00:00:00Z"}
    )
    shop.raw("payments", {**base, **created, "status": "succeeded"})  # no id
    bad_time = {"created": "yesterday"} if shop.variant == "B" else {"created_at": "not a time"}
    shop.raw("payments", {**base, **bad_time, "id": "pay_badtime", "status": "succeeded"})
    shop.raw("payments", {**base, **created, "id": "pay_weird", "status": weird})
    with shop.connect(tmp_path) as gw, pytest.warns(GatewayDataWarning, match=weird):
        result = gw.sync()
    assert result.rejected == 2 and result.complete
    payments = gw.payments(refresh=False).set_index("id")
    assert set(payments.index) == {good, "pay_weird"}
    assert payments.loc["pay_weird", "status"] == "unknown"
    assert payments.loc["pay_weird", "status_raw"] == weird
    rejects = gw._dataset("payments").rejects()
    assert len(rejects) == 2
    assert any("id" in r for r in rejects["reason"]) and any(
        "pay_badtime" in r for r in rejects["record"]
    )


def test_concurrent_syncs_of_one_cache_wait_for_each_other(shop: Shop, tmp_path: Path) -> None:
    import threading

    for number in (CARD_OK, CARD_DECLINE, CARD_3DS):
        shop.card(number)
    results = []

    def run() -> None:
        with shop.connect(tmp_path) as gw:
            results.append(gw.sync(full=True))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 2 and all(r.complete for r in results)
    with shop.connect(tmp_path) as gw:
        assert len(gw.payments(refresh=False)) == 3


def test_refund_synced_alone_still_updates_its_payment_later(shop: Shop, tmp_path: Path) -> None:
    paid = shop.card()
    with shop.connect(tmp_path) as gw:
        gw.sync()
        shop.refund(paid, amount=300)
        gw.sync(["refunds"])  # e.g. gw.refunds(): the payment is not re-read yet
        assert gw.payments(refresh=False).set_index("id").loc[paid, "refunded_amount"] == 0
        gw.sync(["payments"])
        row = gw.payments(refresh=False).set_index("id").loc[paid]
        assert row["refunded_amount"] == 300
        assert gw._dataset("refunds").state()["payments_to_reread"] == []


def test_open_rows_reread_through_status_lists(
    shop: Shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Old open rows are re-read by status-filtered lists; those that moved on, by id."""
    # Always list from the high-water mark, so that old open rows take the status-list path,
    # and retrieve what the lists did not return by id (here listing again would be cheaper).
    monkeypatch.setattr(
        "gwtools.sync._sync.choose_cutoff", lambda cached, cands, default, *a, **k: int(default)
    )
    monkeypatch.setattr("gwtools.sync._sync._relist_from", lambda *a, **k: None)
    waiting = shop.open_payment()  # A: at checkout; B: waiting for 3-D Secure
    still_waiting = shop.open_payment()
    held = shop.card(manual=True)
    shop.advance(86400)
    shop.card()
    with shop.connect(tmp_path) as gw:
        gw.sync()
        shop.capture(held)
        if shop.variant == "B":
            shop.complete(waiting)
        shop.advance(600)
        shop.card()
        result = gw.sync()
        assert result.resources["payments"].mode == "incremental"
        # What left its open state is retrieved by id; what stayed comes back in the list.
        # (In A the checkouts expired during the first day, so only the held payment is open.)
        assert result.resources["payments"].reread_by_id == (2 if shop.variant == "B" else 1)
        status = gw.payments(refresh=False).set_index("id")["status"]
        assert status[held] == "succeeded"
        assert status[waiting] == ("succeeded" if shop.variant == "B" else status[still_waiting])
        expected = fresh(shop, tmp_path)
        assert_same(gw.payments(refresh=False), expected["payments"])


def test_incremental_sync_never_costs_more_than_a_full_fetch(shop: Shop, tmp_path: Path) -> None:
    """Days later every old open row has moved on (refunds settled, holds and checkouts
    expired): their range is listed again rather than each row retrieved by id, and neither
    resource takes more requests than a fresh full fetch."""
    shop.history(6000, days=30)  # open rows of every age, refunds pending for days
    with shop.connect(tmp_path / "cache") as gw:
        gw.sync()
        shop.advance(8 * 86400)
        result = gw.sync()
        with shop.connect(tmp_path / "fresh") as other:
            full = other.sync(full=True)
        for resource in ("payments", "refunds"):
            incremental = result.resources[resource]
            assert incremental.mode == "incremental" and incremental.complete
            assert incremental.requests <= full.resources[resource].requests, (result, full)
            assert_same(gw._dataset(resource).read(), other._dataset(resource).read())
        assert result.resources["refunds"].updated > 0  # the pending refunds settled


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
