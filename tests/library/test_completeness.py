"""Complete or loud: every sync checks what it listed, and says so when it could not.

Pages cut short in transit (the sandbox's ``short_page_rate``), ids damaged in transit
(``garbled_id_rate``) or stored damaged (a raw record): each test sets the fault, syncs over
real HTTP, and checks the cache against a fresh full fetch, the completeness report, the
high-water mark and the warning.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from gwtools.cli import main
from gwtools.http._wire import MALFORMED_ID
from gwtools.normalize._normalize import normalize_bodies
from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import Shop, assert_same, fresh

A_ONLY = pytest.mark.parametrize("sandbox", ["A"], indirect=True)
B_ONLY = pytest.mark.parametrize("sandbox", ["B"], indirect=True)


@pytest.mark.parametrize("damaged", ["pay_abc{23", "pay_abc 23", "pay_abc_23", "pi_abc123", "pay_"])
def test_ids_outside_the_documented_format_are_rejected_when_asked(damaged: str) -> None:
    good = {"id": "pay_abc123", "object": "payment", "amount": 100, "currency": "myr",
            "status": "succeeded", "created": 1767225600}  # fmt: skip
    others = [{**good, "id": f"pay_{n}X{n}"} for n in range(3)]  # any length of [A-Za-z0-9]
    body = json.dumps(
        {"object": "list", "data": [good, {**good, "id": damaged}, *others], "has_more": False}
    ).encode()
    checked = normalize_bodies("payments", [body], check_ids=True)
    assert list(checked.frame["id"]) == ["pay_abc123", "pay_0X0", "pay_1X1", "pay_2X2"]
    assert [r.kind for r in checked.rejects] == [MALFORMED_ID]
    assert damaged in checked.rejects[0].record
    assert len(normalize_bodies("payments", [body]).frame) == 5  # not asked: kept


def _state(gw: Any, resource: str = "payments") -> dict[str, Any]:
    state: dict[str, Any] = gw._dataset(resource).state()
    return state


@A_ONLY
def test_a_short_page_mid_listing_is_fetched_again(shop: Shop, tmp_path: Path) -> None:
    """250 payments: page 1 as it came, then pages 1-3 under the frozen bound, one at a time
    (concurrency 1), so the seeded draws are fixed: seed 50 at a half share cuts the third
    request short, frozen page 2 (meta.total still says 250), and nothing else."""
    shop.history(250, days=20, seed=4)
    expected = fresh(shop, tmp_path)
    shop.faults(short_page_rate=0.5, seed=50)
    try:
        with shop.connect(tmp_path / "cache", concurrency=1) as gw:
            result = gw.sync(["payments"])
    finally:
        shop.clear_faults()
    payments = result.resources["payments"]
    assert result.complete, result.problems
    assert (payments.short_pages, payments.refetched) == (1, 1)
    assert payments.listed == payments.expected == 250
    assert_same(gw.payments(refresh=False), expected["payments"])


@A_ONLY
def test_a_list_that_changes_while_read_is_read_again(shop: Shop, tmp_path: Path) -> None:
    """150 payments in the current second (page 1 lies within it, so the bound is one second
    past it) and a payment added before each of the first three list requests, as another
    client would: the frozen pages disagree on meta.total, and the pages are read once more."""
    now = httpx.get(f"{shop.base_url}/_sandbox/clock").json()["unix"]
    at = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for i in range(150):  # ids below the sandbox's own sequence: added payments sort newer
        shop.raw("payments", {"id": f"pay_00000000old{i:04d}", "object": "payment",
                              "amount": 100 + i, "currency": "MYR", "status": "captured",
                              "created_at": at})  # fmt: skip
    shop.faults(insert_rate=1.0, count=3)
    try:
        with shop.connect(tmp_path / "cache", concurrency=1) as gw:
            result = gw.sync(["payments"])
    finally:
        shop.clear_faults()
    payments = result.resources["payments"]
    assert result.complete, result.problems
    assert payments.refetched == 2 and payments.listed == payments.expected == 153
    assert_same(gw.payments(refresh=False), fresh(shop, tmp_path)["payments"])


@B_ONLY
def test_b_short_page_with_has_more_is_fetched_again(shop: Shop, tmp_path: Path) -> None:
    shop.history(250, days=20, seed=4)
    expected = fresh(shop, tmp_path)
    shop.faults(short_page_rate=1.0, count=1)  # the first page only
    try:
        with shop.connect(tmp_path / "cache") as gw:
            result = gw.sync(["payments"])
    finally:
        shop.clear_faults()
    payments = result.resources["payments"]
    assert result.complete and (payments.short_pages, payments.refetched) == (1, 1)
    assert payments.expected is None  # variant B gives no totals
    assert_same(gw.payments(refresh=False), expected["payments"])


@B_ONLY
def test_b_short_last_page_is_followed_by_one_more_request(shop: Shop, tmp_path: Path) -> None:
    """A page cut short looks like a last page (has_more false): the cursor asks once more."""
    shop.history(50, days=20, seed=4)
    expected = fresh(shop, tmp_path)
    shop.faults(short_page_rate=1.0, count=1)
    try:
        with shop.connect(tmp_path / "cache") as gw:
            result = gw.sync(["payments"])
    finally:
        shop.clear_faults()
    assert result.complete and result.resources["payments"].listed == 50
    assert result.requests == 3  # the short page, the rest of it, an empty page
    assert_same(gw.payments(refresh=False), expected["payments"])


def test_page_that_stays_short_makes_the_sync_incomplete_and_the_next_one_completes(
    shop: Shop, tmp_path: Path
) -> None:
    shop.history(250, days=20, seed=4)
    shop.faults(short_page_rate=1.0, seed=2)  # every page, every re-fetch
    try:
        with (
            shop.connect(tmp_path / "cache") as gw,
            pytest.warns(GatewayDataWarning, match="incomplete"),
        ):
            broken = gw.sync(["payments"])
    finally:
        shop.clear_faults()
    payments = broken.resources["payments"]
    assert not broken.complete and not payments.complete
    assert any("stayed short after 2 re-fetches" in p for p in broken.problems)
    assert payments.short_pages >= 1 and payments.refetched >= 2
    if shop.variant == "A":
        assert payments.expected == 250 and payments.listed < 250
    assert _state(gw).get("high_water") is None  # nothing is taken as done
    kept = _state(gw)["completeness"]  # for `gwtools check`, after the process is gone
    assert kept["complete"] is False and kept["problems"] == payments.problems
    assert "incomplete" in str(broken) and "stayed short" in str(broken)
    assert "incomplete" in broken._repr_html_() and "completeness" in broken._repr_html_()
    with shop.connect(tmp_path / "cache") as gw:
        fixed = gw.sync(["payments"])
        assert fixed.complete and fixed.problems == []
        assert _state(gw)["completeness"] == fixed.resources["payments"].report()
        assert_same(gw.payments(refresh=False), fresh(shop, tmp_path)["payments"])


def test_id_damaged_in_transit_is_rejected_and_the_mark_kept(shop: Shop, tmp_path: Path) -> None:
    shop.history(60, days=20, seed=4)
    with shop.connect(tmp_path / "cache") as gw:
        assert gw.sync().complete
        mark = _state(gw)["high_water"]
        shop.advance(60)
        new = [shop.card() for _ in range(3)]
        shop.faults(garbled_id_rate=1.0, seed=3)  # one id per page, re-fetches included
        try:
            with pytest.warns(GatewayDataWarning, match="malformed id"):
                damaged = gw.sync(["payments"])
        finally:
            shop.clear_faults()
        payments = damaged.resources["payments"]
        assert not damaged.complete and payments.rejects_by_reason["malformed id"] >= 1
        assert payments.refetched >= 2  # fetched again before giving up
        assert any("malformed id" in p for p in damaged.problems)
        assert _state(gw)["high_water"] == mark  # the new rows' range is listed again
        rejects = gw._dataset("payments").rejects()
        bad = json.loads(rejects["record"].iloc[-1])["id"]
        assert bad.startswith("pay_") and not bad[4:].isalnum()
        assert bad not in set(gw.payments(refresh=False)["id"])
        fixed = gw.sync()
        assert fixed.complete and _state(gw)["high_water"] > mark
        assert set(new) <= set(gw.payments(refresh=False)["id"])
        expected = fresh(shop, tmp_path)
        assert_same(gw.payments(refresh=False), expected["payments"])


def test_id_stored_damaged_keeps_every_sync_incomplete(shop: Shop, tmp_path: Path) -> None:
    good = shop.card()
    created = (
        {"created": 1767225600} if shop.variant == "B" else {"created_at": "2026-01-01T00:00:00Z"}
    )
    shop.raw(
        "payments",
        {"id": "pay_000003A8kA{XK1Bt7LJV8xeT", "object": "payment", "amount": 500,
         "currency": "myr", "status": "succeeded", **created},
    )  # fmt: skip
    with shop.connect(tmp_path) as gw:
        for _ in range(2):
            with pytest.warns(GatewayDataWarning, match="malformed id"):
                result = gw.sync(["payments"])
            assert not result.complete
            assert result.resources["payments"].rejects_by_reason == {"malformed id": 1}
            assert _state(gw).get("high_water") is None
        # no sync ever completed, so reading the cache says its rows may be missing
        with pytest.warns(GatewayDataWarning, match="no sync of them has completed"):
            assert gw.payments(refresh=False)["id"].tolist() == [good]
    reason = gw._dataset("payments").rejects()["reason"].iloc[0]
    assert "'pay_'" in reason and "letters and digits" in reason


def test_report_of_a_complete_sync(shop: Shop, tmp_path: Path) -> None:
    shop.history(150, days=20, seed=4)
    with shop.connect(tmp_path) as gw:
        result = gw.sync()
    report = result.report
    assert set(report) == {"payments", "refunds"} and result.problems == []
    payments = report["payments"]
    assert payments["complete"] and payments["rejected"] == 0
    if shop.variant == "A":
        assert payments["listed"] == payments["expected"] == 150
    else:  # no totals; adjacent time windows share a second, so a row can come twice
        assert payments["expected"] is None and payments["listed"] >= 150
    assert payments["requests"] == result.resources["payments"].requests > 0
    assert result.to_dict()["resources"]["payments"]["report"] == payments


def _cli(shop: Shop, tmp_path: Path, *args: str) -> tuple[int, str]:
    env = {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url, "GW_CACHE_DIR": str(tmp_path)}
    result = CliRunner().invoke(main, ["sync", "--account", "shop", *args], env=env)
    assert shop.key not in result.output
    return result.exit_code, result.output


def test_cli_exits_non_zero_and_reports_json_when_incomplete(shop: Shop, tmp_path: Path) -> None:
    shop.history(250, days=20, seed=4)
    shop.faults(short_page_rate=1.0, seed=2)
    try:
        code, out = _cli(shop, tmp_path, "--json", "--resource", "payments")
    finally:
        shop.clear_faults()
    assert code == 3
    report = json.loads(out)
    assert report["complete"] is False and report["problems"]
    payments = report["resources"]["payments"]["report"]
    assert payments["complete"] is False and payments["short_pages"] >= 1
    assert report["cache"].startswith(str(tmp_path))
    code, out = _cli(shop, tmp_path)
    assert code == 0, out
    code, out = _cli(shop, tmp_path, "--json")
    assert code == 0 and json.loads(out)["complete"] is True


@B_ONLY
def test_b_windows_meet_without_a_from_bound_or_an_empty_page_each(
    shop: Shop, tmp_path: Path
) -> None:
    """Variant B's time windows of a full listing send no ``from``: each stops on the page
    that reaches into the window below, so only the windows past the oldest row and the
    oldest row's own window end on an empty page (a ``from`` bound would end each window on
    a part-filled page and an empty one)."""
    import asyncio

    from gwtools.http._client import Client
    from gwtools.http._paging import list_pages
    from gwtools.http._wire import PageInfo

    shop.history(1500, days=20, seed=4)
    sent: list[httpx.QueryParams] = []

    class Recording(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.url.params)
            return await super().handle_async_request(request)

    pages: list[PageInfo] = []

    async def sink(_body: bytes, info: PageInfo) -> None:
        pages.append(info)

    async def listing() -> Any:
        with shop.connect(tmp_path) as gw:
            client = Client(gw.settings, transport=Recording())
        try:
            # One window in flight at most: no window splits, so the windows are the first
            # page's 1, 2, 4 ... 128 days back and one open-ended.
            return await list_pages(client, "payments", sink, on_malformed=print, windows=1)
        finally:
            await client.aclose()

    outcome = asyncio.run(listing())
    assert outcome.complete and outcome.strategy == "time windows"
    assert len({i for p in pages for i in p.ids}) == 1500
    assert not [p for p in sent if "from" in p]
    # Windows reach 1, 2, 4 ... 128 days back from the first page's oldest row, then one is
    # open-ended. The oldest row's window confirms a short last page with an empty one (a full
    # last page needs none), and every window wholly older than the oldest row is one empty
    # page; no other window ends empty. (Counted from the rows: where the history falls
    # against the edges depends on the sandbox clock, which earlier tests move.)
    lo = pages[0].last_created
    oldest = min(p.last_created for p in pages if p.count)
    assert lo is not None and oldest is not None
    age_days = (lo - oldest).total_seconds() / 86_400
    past = sum(1 for edge in (1, 2, 4, 8, 16, 32, 64, 128) if edge > age_days)
    short = sum(1 for p in pages if 0 < p.count < 100)
    assert short <= 1
    assert [p.count for p in pages].count(0) == short + past
