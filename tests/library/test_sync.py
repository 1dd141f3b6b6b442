"""Syncs against the sandbox over real HTTP, both variants: the cache tracks the gateway."""

from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path

import httpx
import orjson
import pytest

from gwtools import GatewayDataWarning
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


def test_a_record_rejected_again_replaces_its_earlier_line(shop: Shop, tmp_path: Path) -> None:
    # Every full sync lists a bad record again: appending it each time grew the file
    # without bound, one copy per sync.
    shop.card()
    created = (
        {"created": 1767225600} if shop.variant == "B" else {"created_at": "2026-01-01T00:00:00Z"}
    )
    base = {"object": "payment", "currency": "myr", "captured": False, **created}
    shop.raw("payments", {**base, "amount": 500, "status": "succeeded"})  # no id
    shop.raw("payments", {**base, "amount": 700, "status": "succeeded"})  # another, no id
    with shop.connect(tmp_path) as gw:
        results = [gw.sync(full=True) for _ in range(3)]
        rejects = gw._dataset("payments").rejects()
    assert [r.rejected for r in results] == [2, 2, 2]
    # One line per rejected record, from the last sync that rejected it.
    assert len(rejects) == 2 and rejects["record"].nunique() == 2
    assert set(rejects["sync_id"]) == {rejects["sync_id"].iloc[-1]}


def test_an_unknown_refund_status_is_kept_in_extra_and_the_warning_says_so(
    shop: Shop, tmp_path: Path
) -> None:
    weird = f"refunding_{shop.variant}"  # warned once per process and value: one per variant
    created = (
        {"created": 1767225600} if shop.variant == "B" else {"created_at": "2026-01-01T00:00:00Z"}
    )
    refund = {"object": "refund", "id": "rfnd_weird", "payment_id": "pay_x", "amount": 100}
    shop.raw("refunds", {**refund, "currency": "myr", **created, "status": weird})
    with shop.connect(tmp_path) as gw:
        with pytest.warns(GatewayDataWarning) as caught:
            gw.sync("refunds")
        refunds = gw.refunds(refresh=False).set_index("id")
    said = [str(w.message) for w in caught if weird in str(w.message)]
    assert said == [
        f"the gateway sent refunds with status {weird!r} (API variant {shop.variant}), which "
        "gwtools does not know; those rows have status 'unknown' (the raw value is in extra, "
        'under "status"). Report the value to the gateway with its API variant'
    ]
    assert refunds.loc["rfnd_weird", "status"] == "unknown"
    assert json.loads(refunds.loc["rfnd_weird", "extra"])["status"] == weird


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


def test_a_record_dated_in_the_future_does_not_make_every_sync_a_full_one(
    shop: Shop, tmp_path: Path
) -> None:
    """The high-water mark came from the newest creation time listed, whatever it was. One
    record dated 2099 (a gateway's bad data, usable as a time) made it 2099; the next read of
    the state ignores a mark that far ahead of the clock (rightly: it would stop fetching), so
    every later sync was a full one, with a warning. Now the mark stops at this machine's
    clock plus the skew allowed: later syncs are incremental and still list the record."""
    shop.card()
    base = {"object": "payment", "amount": 500, "currency": "myr", "captured": False}
    future = (
        {"created": 4102444800} if shop.variant == "B" else {"created_at": "2100-01-01T00:00:00Z"}
    )
    status = "succeeded" if shop.variant == "B" else "captured"
    shop.raw("payments", {**base, **future, "id": "pay_fromthefuture", "status": status})
    with shop.connect(tmp_path) as gw:
        assert gw.sync().complete
        shop.advance(60)
        new = shop.card()
        with warnings.catch_warnings():
            warnings.simplefilter("error", GatewayDataWarning)
            again = gw.sync()
        assert again.complete and again.resources["payments"].mode == "incremental"
        ids = set(gw.payments(refresh=False)["id"])
        assert {new, "pay_fromthefuture"} <= ids


class _Recorder(httpx.AsyncBaseTransport):
    """In front of the sandbox: lets every request through and keeps its query."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.sent: list[httpx.URL] = []
        #: rows the gateway answered with, by path (a list's rows, or 1 for a retrieve)
        self.rows: collections.Counter[str] = collections.Counter()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request.url)
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        if response.status_code == 200:
            _, _, kind, *one = request.url.path.split("/")  # /v1/refunds[/rfnd_…]
            self.rows[f"/v1/{kind}"] += 1 if one else len(orjson.loads(body)["data"])
        decoded = ("content-encoding", "content-length")  # the body is read, and decoded
        return httpx.Response(
            response.status_code,
            headers=[(k, v) for k, v in response.headers.items() if k.lower() not in decoded],
            content=body,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("sandbox", ["B"], indirect=True)
def test_old_pending_refunds_are_reread_through_the_pending_list(
    shop: Shop, tmp_path: Path
) -> None:
    """Pending refunds (FPX, days to settle) older than the overlap are re-read by the
    ``status=pending`` refund list, as open payments are by theirs. The plan grouped them
    by creation time instead (the wrong column), so that list was never asked for: each
    such refund was retrieved by id, or the whole range since the oldest listed again."""
    summary = shop.history(20000, days=30, seed=2)
    assert summary["refund_statuses"]["pending"] > 10
    recorder = _Recorder()
    with shop.connect(tmp_path / "cache", transport=recorder) as gw:
        assert gw.sync().complete
        shop.advance(3600)
        recorder.sent.clear()
        recorder.rows.clear()
        result = gw.sync()
        assert result.complete and result.resources["refunds"].mode == "incremental"
        expected = fresh(shop, tmp_path)
        assert_same(gw.refunds(refresh=False), expected["refunds"])
    lists = [u.params for u in recorder.sent if u.path == "/v1/refunds"]
    assert {p.get("status") for p in lists} == {None, "pending"}, lists
    # Each row the gateway sent is counted once: a status list's first page, read for the
    # plan, was handed to the cache again when that status was listed (counted twice).
    for kind in ("payments", "refunds"):
        assert result.resources[kind].fetched == recorder.rows[f"/v1/{kind}"], kind
