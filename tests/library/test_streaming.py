"""Gateway.iter_payments()/iter_refunds(): canonical records streamed page by page, no cache."""

from __future__ import annotations

import asyncio
import itertools
import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest

import gwtools
from gwtools._schema import columns
from tests.library._shop import CARD_DECLINE, Shop


def test_records_are_canonical_dicts_and_nothing_is_cached(shop: Shop, tmp_path: Path) -> None:
    ok = shop.card()
    declined = shop.card(CARD_DECLINE)
    refund = shop.refund(ok, 500)
    with shop.connect(tmp_path / "cache") as gw:
        payments = {p["id"]: p for p in gw.iter_payments()}
        refunds = list(gw.iter_refunds())
        failed = [p["id"] for p in gw.iter_payments(status="FAILED")]
        none_yet = list(gw.iter_payments(until="2000-01-01"))
    assert set(payments) == {ok, declined}
    assert payments[ok]["status"] == "succeeded" and payments[declined]["status"] == "failed"
    assert list(payments[ok]) == list(columns("payments"))
    assert failed == [declined]
    assert none_yet == []
    assert [(r["id"], r["payment_id"], r["amount"]) for r in refunds] == [(refund, ok, 500)]
    assert list(refunds[0]) == list(columns("refunds"))
    # Missing values are None, not NaN/NaT/NA: a record can go to json.dumps as it is.
    assert all(v is None or v == v for v in payments[ok].values())
    assert not (tmp_path / "cache").exists()


def test_the_stream_equals_a_sync_and_pages_on_demand(shop: Shop, tmp_path: Path) -> None:
    shop.history(payments=250, days=10)  # three pages of 100
    with shop.connect(tmp_path) as gw:
        streamed = list(gw.iter_payments())
        cached = gw.payments()
        first = gw.iter_payments()
        head = list(itertools.islice(first, 3))
        first.close()  # stopping early stops the listing; the gateway stays usable
        again = list(itertools.islice(gw.iter_payments(), 2))
    assert len(streamed) == 250 == len({p["id"] for p in streamed})
    by_id = pd.DataFrame(streamed).set_index("id").sort_index()
    expected = cached.set_index("id").sort_index()
    assert by_id.index.equals(expected.index)
    assert (by_id["amount"] == expected["amount"]).all()
    assert (by_id["status"] == expected["status"]).all()
    assert len(head) == 3 and len(again) == 2


def test_filters_are_checked_when_called(shop: Shop, tmp_path: Path) -> None:
    with shop.connect(tmp_path) as gw:
        with pytest.raises(gwtools.ConfigurationError, match="did you mean 'failed'"):
            gw.iter_payments(status="declined")  # before the first next(): nothing sent
        with pytest.raises(gwtools.ConfigurationError, match="swap them"):
            gw.iter_refunds(since="2024-06-02", until="2024-06-01")


def test_an_unreadable_page_raises_malformed_body_error(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    shop.faults(non_json_rate=1.0)
    try:
        with shop.connect(tmp_path, max_attempts=2) as gw, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(gwtools.MalformedBodyError) as info:
                list(gw.iter_payments())
    finally:
        shop.clear_faults()
    assert isinstance(info.value, gwtools.APIError) and info.value.http_status == 200


def test_a_listing_that_fails_midway_raises_its_error_and_ends(shop: Shop, tmp_path: Path) -> None:
    """The pages before the failure come, then its error: never a consumer left waiting (on
    variant B the windows run in a task group, whose cancellation bookkeeping once read as
    "the consumer left", so no end was handed over and ``next()`` waited for ever)."""
    shop.history(payments=3000, days=10)  # 30 pages: most are still to fetch after the first
    got: list[Any] = []
    errors: list[BaseException] = []
    with shop.connect(tmp_path, max_attempts=1, concurrency=4) as gw:
        stream = gw.iter_payments()
        got.append(next(stream))
        shop.faults(error_rate=1.0)  # every request from now on fails
        try:
            # In a thread, joined with a bound far past the run, so a hang fails the test
            # instead of the suite.
            worker = threading.Thread(target=_drain, args=(stream, got, errors), daemon=True)
            worker.start()
            worker.join(120)
        finally:
            shop.clear_faults()
        assert not worker.is_alive(), "the stream never ended"
    assert len(errors) == 1 and isinstance(errors[0], gwtools.APIError), errors
    assert errors[0].http_status == 500 and 1 <= len(got) < 3000


def _drain(stream: Any, got: list[Any], errors: list[BaseException]) -> None:
    try:
        got.extend(stream)
    except BaseException as exc:  # handed to the test thread
        errors.append(exc)


def test_the_pager_sends_no_request_past_a_closed_gate(shop: Shop, tmp_path: Path) -> None:
    """``ready`` is awaited just before each request: once the consumer's gate closes, only
    the requests already in flight complete (at most the client's concurrency on variant A;
    on B one per time window). Variant A asked for every page at once, so all 30 passed the
    gate before any page arrived."""
    from gwtools.http._paging import _WINDOW_DAYS, list_pages

    shop.history(payments=3000, days=10)  # 30 pages
    with shop.connect(tmp_path, concurrency=4) as gw:
        loop = gw._ensure()
        client = gw._client
        assert client is not None

        async def run() -> int:
            gate, settled = asyncio.Event(), asyncio.Event()
            gate.set()
            count = {"passed": 0, "sunk": 0}

            async def ready() -> None:
                await gate.wait()
                count["passed"] += 1

            async def sink(_body: bytes, _info: Any) -> None:
                count["sunk"] += 1
                if count["sunk"] == 2:
                    gate.clear()
                if not gate.is_set() and count["sunk"] >= count["passed"]:
                    settled.set()

            task = asyncio.ensure_future(
                list_pages(client, "payments", sink, on_malformed=lambda _e: None, ready=ready)
            )
            try:
                await asyncio.wait_for(settled.wait(), 120)
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            return count["passed"]

        passed = loop.run(run())
    in_flight = 4 if shop.variant == "A" else len(_WINDOW_DAYS) + 1
    assert 2 <= passed <= 2 + in_flight < 30, passed


def test_page_numbers_hold_a_task_per_client_slot_not_per_page(shop: Shop, tmp_path: Path) -> None:
    """Variant A's pages are taken in order by as many workers as the client has slots: at
    100M rows a task per page was a million tasks waiting on a semaphore. Every page still
    comes once."""
    if shop.variant != "A":
        pytest.skip("page numbers are variant A's listing")
    from gwtools.http._paging import list_pages

    shop.history(payments=3000, days=10)  # 30 pages
    with shop.connect(tmp_path, concurrency=4) as gw:
        loop = gw._ensure()
        client = gw._client
        assert client is not None

        async def run() -> tuple[int, int, list[int]]:
            before = len(_pager_tasks())
            most = 0
            pages: list[int] = []

            async def sink(_body: bytes, info: Any) -> None:
                nonlocal most
                most = max(most, len(_pager_tasks()))
                pages.append(info.page)

            await list_pages(client, "payments", sink, on_malformed=lambda _e: None)
            return before, most, pages

        before, most, pages = loop.run(run())
    # (newest first, page 1 comes as listed and again under the frozen bound)
    assert set(pages) == set(range(1, max(pages) + 1)) and len(pages) >= 30, pages
    assert most - before <= 4, (before, most)


def _pager_tasks() -> list[asyncio.Task[Any]]:
    """The running loop's tasks whose coroutine the pager's module defines (httpx's own,
    such as connection attempts, come and go with the requests)."""
    return [
        t
        for t in asyncio.all_tasks()
        if getattr(t.get_coro(), "cr_code", None) is not None
        and t.get_coro().cr_code.co_filename.endswith("_paging.py")  # type: ignore[union-attr]
    ]


def test_a_stream_read_after_its_gateway_closed_says_so(shop: Shop, tmp_path: Path) -> None:
    shop.history(payments=300, days=5)
    gw = shop.connect(tmp_path)
    stream = gw.iter_payments()
    next(stream)
    gw.close()
    with pytest.raises(gwtools.ConfigurationError, match="closed while its payments were being"):
        list(stream)


_CONNECT = """
import os, sys
import gwtools

gw = gwtools.connect(os.environ["SHOP_KEY"], sys.argv[1], cache_dir=sys.argv[2], account="shop")
"""


@pytest.mark.parametrize(
    "rest",
    [
        # the gateway and its half-read stream both left to the interpreter's exit
        "stream = gw.iter_payments()\nprint(next(stream)['id'])",
        # the gateway closed under a half-read stream
        "stream = gw.iter_payments()\nprint(next(stream)['id'])\ngw.close()",
        "with gw:\n    stream = gw.iter_payments()\n    print(next(stream)['id'])",
    ],
    ids=["left", "closed", "with"],
)
def test_a_half_read_stream_left_to_interpreter_exit_is_silent(
    shop: Shop, tmp_path: Path, rest: str
) -> None:
    # Many pages, so the listing is still fetching when the process ends.
    shop.history(payments=2000, days=5)
    proc = subprocess.run(
        [sys.executable, "-c", _CONNECT + rest, shop.base_url, str(tmp_path)],
        env={**os.environ, "SHOP_KEY": shop.key},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("pay_")
    # Nothing at exit: no "Event loop is closed", no "Task was destroyed but it is pending".
    assert proc.stderr == ""


def test_an_id_twice_on_a_page_streams_as_its_last_row_as_a_sync_keeps_it(
    shop: Shop, tmp_path: Path
) -> None:
    # A gateway that serves one id twice on a page (read while it changed): a sync's batch
    # keeps the last row of an id, and so must the stream, filters applied to that row.
    ident = "pay_00000000dupdupdupdup0001"
    base: dict[str, Any] = {"object": "payment", "id": ident, "amount": 500, "currency": "MYR",
                            "livemode": False, "payment_method": "card"}  # fmt: skip
    if shop.variant == "A":
        base["created_at"], before = "2026-01-01T00:00:00Z", "pending"
    else:
        base["created"], before = 1767225600, "processing"
    shop.raw("payments", {**base, "status": before})
    shop.raw("payments", {**base, "status": "failed"})
    # (variant A's meta.total counts the row twice: the listing is called incomplete, as it is)
    with shop.connect(tmp_path) as gw, warnings.catch_warnings():
        warnings.simplefilter("ignore", gwtools.GatewayDataWarning)
        streamed = [(p["id"], p["status"]) for p in gw.iter_payments()]
        still_open = list(gw.iter_payments(status=before))
        gw.sync()
        cached = gw.payments()
    assert streamed == [(ident, "failed")]
    assert still_open == []
    assert cached[["id", "status"]].values.tolist() == [[ident, "failed"]]


class _Stall(httpx.AsyncBaseTransport):
    """Lets the first request through to the sandbox; later ones never get an answer (a
    gateway gone quiet). Once the stream's consumer waits for a page (its ``next_body`` is
    waiting on the loop), ``on_stall`` runs in another thread: what a user closing the
    Gateway from elsewhere (a notebook's other cell, a signal handler) does."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.passes = 1
        self.on_stall: Callable[[], None] = lambda: None
        self.closer: threading.Thread | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.passes -= 1
        if self.passes >= 0:
            return await self.inner.handle_async_request(request)
        if self.closer is None:
            self.closer = threading.Thread(target=self.on_stall)
            for _ in range(100_000):  # yields to the loop until the consumer waits there
                if any(_waits_for_a_page(t) for t in asyncio.all_tasks()):
                    self.closer.start()
                    break
                await asyncio.sleep(0)
        await asyncio.Event().wait()  # until cancelled
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        await self.inner.aclose()


def _waits_for_a_page(task: asyncio.Task[Any]) -> bool:
    return getattr(task.get_coro(), "__qualname__", "").endswith("next_body")


def test_closing_the_gateway_under_a_waiting_stream_ends_the_stream(
    shop: Shop, tmp_path: Path
) -> None:
    # A consumer waiting for the next page when another thread closes the Gateway: its wait
    # never ended (the loop stopped with the listing pending), or, once pending tasks were
    # cancelled at close, ended in a bare CancelledError instead of the error that says why.
    shop.history(payments=2000, days=5)
    stall = _Stall()
    gw = shop.connect(tmp_path, transport=stall)
    stall.on_stall = gw.close
    outcome: list[BaseException | None] = []

    def consume() -> None:
        try:
            for _ in gw.iter_payments():
                pass
            outcome.append(None)
        except BaseException as exc:  # what ended the stream is the test
            outcome.append(exc)

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    consumer.join(60)  # a bound for a hang, not a wait for something to happen
    assert stall.closer is not None and stall.closer.ident is not None  # closed while waiting
    stall.closer.join(60)
    assert not consumer.is_alive(), "the stream still waits after gw.close()"
    assert len(outcome) == 1 and isinstance(outcome[0], gwtools.ConfigurationError), outcome
    assert "closed while its payments were being streamed" in str(outcome[0])


def test_records_skipped_on_several_pages_are_reported_once_with_their_count(
    shop: Shop, tmp_path: Path
) -> None:
    """A sync says once how many records it rejected; a stream said it once per page that had
    any, so a long stream over a damaged listing repeated the warning page after page."""
    shop.history(payments=250, days=10)  # three pages of 100
    shop.faults(garbled_id_rate=1.0, seed=3)  # one damaged id on every page
    try:
        with shop.connect(tmp_path) as gw:
            with pytest.warns(gwtools.GatewayDataWarning) as said:
                streamed = list(gw.iter_payments())
            # stopped early, it still says what it skipped on the pages it read
            stopped = gw.iter_payments()
            next(stopped)
            with pytest.warns(gwtools.GatewayDataWarning, match="^1 payments records could"):
                stopped.close()
    finally:
        shop.clear_faults()
    skipped = [str(w.message) for w in said if "could not be read" in str(w.message)]
    assert len(skipped) == 1, skipped
    # the pages' rejects summed: one per page, on more than one page
    count, rest = skipped[0].split(" ", 1)
    assert int(count) > 1 and len(streamed) < 250
    assert rest.startswith("payments records could not be read and were skipped (first: ")
    assert "(first: malformed id 'pay_" in rest
