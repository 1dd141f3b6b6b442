"""Listing a resource fast: page-number fan-out (variant A) and time-window cursors (variant B).

:func:`list_pages` fetches the first page, reads the variant from the envelope
(:func:`gwtools.http._wire.page_info`: the wire format is that module's) and hands over to a
strategy:

- :class:`PageNumbers` (variant A, ``meta.totalPages``): the upper creation bound is frozen
  at the newest row seen (``to``), so rows inserted during the sync cannot shift pages;
  every page is then requested, as many at once as the client sends requests.
- :class:`TimeWindows` (variant B, ``has_more`` cursors, newest first): the creation range is
  split into windows, each paged by its own cursor from its upper bound (``to``), all
  concurrently. Only the listing's own lower bound is sent as ``from``; a window stops on the
  first page that reaches into the window below (those few rows, like the second adjacent
  windows share, are read twice and dropped later by id), which costs less than ending each
  window on a part-filled page and an empty one. While pages come slower than the rate limit
  allows (long round trips, windows done), the window with most left splits off its lower
  half, so that the tail of a sync stays busy; pages are handed to the sink without holding
  the cursor back.
  If a window returns rows outside its range, the server ignores ``from``/``to``: the windows
  stop and one plain cursor (:class:`Cursor`) pages through instead.

Pages are handed, as raw bytes with their :class:`PageInfo`, to an async ``sink``; strategies
hold no rows. A page whose body stays malformed through every retry is reported to
``on_malformed`` and the listing is marked incomplete (so the sync state is not advanced).

Completeness is checked, not assumed (a proxy may answer 200 with trailing items missing):

- Variant A: each page must hold what ``meta.total`` leaves for it (``limit`` rows, fewer on
  the last page); a short page is fetched again. The frozen pages must agree on ``total``
  (else the list changed while it was read: it is read once more), and the rows listed must
  add up to it.
- Variant B: a page shorter than the limit while ``has_more`` is true is fetched again; a
  cursor ends only on an empty page (a short last page is followed by one more request,
  since a page cut short looks like a last page).

What stays wrong is written to :attr:`ListOutcome.problems` and makes the listing incomplete.
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import itertools
import logging
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from gwtools.http._client import Client, MalformedBodyError
from gwtools.http._wire import PageInfo, has_damaged_id, list_path, page_info

__all__ = ["ListOutcome", "PageSink", "first_page", "list_cost", "list_pages"]

log = logging.getLogger("gwtools")

PAGE_LIMIT = 100
PageSink = Callable[[bytes, PageInfo], Awaitable[None]]
OnMalformed = Callable[[MalformedBodyError], None]
_SECOND = dt.timedelta(seconds=1)
# Variant B full syncs: windows reaching 1, 2, 4 ... 128 days back, then one open-ended (older
# data is rare, and a window that finds some splits itself).
_WINDOW_DAYS = tuple(2**k for k in range(8))
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MAX_WINDOWS = 12  # in list_cost's pricing of variant B
#: A window with fewer pages left than this does not split.
_SPLIT_PAGES = 4
#: Windows split only while the pages of the last this many seconds came slower than the
#: rate limit allows.
_RATE_HORIZON = 1.0
#: Times a page that came back short is fetched again before the listing is called incomplete.
MAX_REFETCHES = 2


def list_cost(rows: Any, variant: str | None, page_limit: int = PAGE_LIMIT) -> Any:
    """Requests :func:`list_pages` needs for ``rows`` rows (a number or a numpy array).

    Every list costs its first page. Variant A (and unknown) re-reads page 1 under the frozen
    upper bound when there is more than one page. Variant B is priced with about one time
    window per four pages, each ending on a part-filled page and an empty one: an upper bound
    (windows now meet on a page that reaches into the next, about half a request each), kept
    so that incremental plans choose as before.
    """
    pages = np.maximum(1, np.ceil(np.asarray(rows, dtype=float) / page_limit))
    if variant != "B":
        return pages + np.where(pages > 1, 1, 0)
    # A window ending on a part-filled page, then an empty page (a short last page could be
    # one cut short), costs two more requests: what a window costs at most.
    windows = np.where(pages > 1, np.minimum(_MAX_WINDOWS, np.ceil(pages / 4)), 0)
    return pages + 2 * windows + np.where(pages > 1, 0, 1)


@dataclass
class ListOutcome:
    """How a listing went."""

    variant: str | None = None
    complete: bool = True
    strategy: str = ""
    windows: int = 0
    time_filters_ignored: bool = False
    newest: dt.datetime | None = None
    estimated_rows: int | None = None
    #: rows in the pages kept (a page fetched again counts once)
    listed: int = 0
    #: rows the gateway said the listing holds (variant A's ``meta.total``; None in B)
    expected: int | None = None
    #: pages that came back short (fewer rows than the gateway's own figures imply)
    short_pages: int = 0
    #: pages fetched again because they came back short, or because the list changed
    refetched: int = 0
    #: why the listing is incomplete, in words (empty when complete)
    problems: list[str] = field(default_factory=list)

    def problem(self, text: str) -> None:
        """Record why the listing is incomplete."""
        self.complete = False
        if text not in self.problems:
            self.problems.append(text)

    def absorb(self, other: ListOutcome) -> None:
        """Add another listing's figures (the status lists of an incremental sync)."""
        self.listed += other.listed
        if other.expected is not None:
            self.expected = (self.expected or 0) + other.expected
        self.short_pages += other.short_pages
        self.refetched += other.refetched
        for p in other.problems:
            self.problem(p)
        self.complete = self.complete and other.complete


def _page(body: bytes) -> tuple[bytes, PageInfo]:
    return body, page_info(body)


def _bounds(info: PageInfo) -> tuple[dt.datetime | None, dt.datetime | None]:
    stamps = [t for t in (info.first_created, info.last_created) if t is not None]
    return (min(stamps), max(stamps)) if stamps else (None, None)


@dataclass
class _Run:
    """What every strategy shares: the client, the resource, the sink and the outcome."""

    client: Client
    resource: str
    sink: PageSink
    on_malformed: OnMalformed
    outcome: ListOutcome
    on_estimate: Callable[[int], None] = lambda _n: None
    ready: Callable[[], Awaitable[None]] | None = None

    async def fetch(self, params: dict[str, Any]) -> tuple[bytes, PageInfo] | None:
        if self.ready is not None:
            await self.ready()  # the sink is behind: fetch no more until it catches up
        try:
            return await self.client.get(list_path(self.resource), params, parse=_page)
        except MalformedBodyError as exc:
            self.outcome.problem(f"a {self.resource} list response stayed unreadable")
            self.on_malformed(exc)
            return None

    async def fetch_checked(
        self,
        params: dict[str, Any],
        expected: Callable[[PageInfo], int],
        got: tuple[bytes, PageInfo] | None = None,
    ) -> tuple[bytes, PageInfo] | None:
        """Fetch a page (unless ``got`` is it already); while it holds fewer rows than
        ``expected`` says, or an id damaged in transit, fetch it again.

        Returns the fullest undamaged version. A page that stays short is recorded as a
        problem; one that keeps a damaged id is left to normalisation, which rejects the
        record (and so makes the sync incomplete).
        """
        if got is None:
            got = await self.fetch(params)
        if got is None:
            return None
        short, damaged = got[1].count < expected(got[1]), self._damaged(got[0])
        if not (short or damaged):
            return got
        self.outcome.short_pages += short
        for _ in range(MAX_REFETCHES):
            self.outcome.refetched += 1
            again = await self.fetch(params)
            if again is None:
                break
            again_damaged = self._damaged(again[0])
            if (again[1].count, not again_damaged) > (got[1].count, not damaged):
                got, damaged = again, again_damaged
            short = got[1].count < expected(got[1])
            if not (short or damaged):
                return got
        if short:
            where = ", ".join(f"{k}={v}" for k, v in params.items() if k != "limit")
            self.outcome.problem(
                f"a {self.resource} page ({where}) stayed short after {MAX_REFETCHES} "
                f"re-fetches: {got[1].count} rows where the gateway's own figures imply "
                f"{expected(got[1])}"
            )
        return got

    def _damaged(self, body: bytes) -> bool:
        return has_damaged_id(self.resource, body)


def _tally(info: PageInfo) -> PageInfo:
    """A page's figures without its ids: what a listing keeps of every page until its totals
    are checked (a hundred ids a page held 8 GB at 100M rows)."""
    return replace(info, ids=())


def _iso(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


def _page_share(page: int) -> Callable[[PageInfo], int]:
    """Variant A: the rows page ``page`` must hold, by its own ``meta.total`` and ``limit``."""

    def expected(info: PageInfo) -> int:
        if info.total is None:
            return 0
        limit = info.limit or PAGE_LIMIT
        return max(0, min(limit, info.total - (page - 1) * limit))

    return expected


@dataclass
class PageNumbers:
    """Variant A: ``page=1..totalPages`` requested concurrently, upper bound frozen."""

    run: _Run
    first_body: bytes
    first: PageInfo
    base: dict[str, Any]
    first_params: dict[str, Any] = field(default_factory=dict)

    async def __call__(self) -> None:
        total_pages = self.first.total_pages or 1
        if self.first.total is not None:
            self.run.on_estimate(self.first.total)
        params = dict(self.base)
        first, last = self.first.first_created, self.first.last_created
        if total_pages > 1 and first is not None and last is not None and first > last:
            # Newest first: an insert would push rows to later pages. Freeze the list below
            # the newest second (`to`, exclusive), where rows are still being added, and
            # re-read it under that filter. Page 1 as it came holds every row of that second
            # (it reaches older ones), so it is kept too.
            got = await self.run.fetch_checked(
                {**self.first_params, "page": 1}, _page_share(1), (self.first_body, self.first)
            )
            assert got is not None
            await self.run.sink(*got)
            params["to"] = _iso(first)
            # At least the newest row is left out: the frozen list may need a page less (if it
            # needs more, the pages' own totalPages say so).
            limit = self.first.limit or PAGE_LIMIT
            pages = math.ceil((self.first.total - 1) / limit) if self.first.total else total_pages
            frozen = await self._listing(params, max(1, pages), {})
            if frozen is not None and self.first.total is not None:
                # The newest second's rows, which came on page 1: listed and expected too.
                newest = max(0, self.first.total - frozen)
                self.run.outcome.listed += newest
                self.run.outcome.expected = (self.run.outcome.expected or 0) + newest
            return
        if total_pages > 1 and first is not None and last is not None:
            # Page 1 lies within one second: freeze one second past it (rows added in that
            # second would shift pages; the totals check below notices).
            params["to"] = _iso(first + _SECOND)
            await self._listing(params, total_pages, {})
            return
        # Page 1 as it came (one page, or rows without usable times), checked against its meta.
        got = await self.run.fetch_checked(
            {**self.first_params, "page": 1}, _page_share(1), (self.first_body, self.first)
        )
        assert got is not None
        await self.run.sink(*got)
        await self._listing(params, total_pages, {1: _tally(got[1])})

    async def _listing(
        self, params: dict[str, Any], total_pages: int, kept: dict[int, PageInfo]
    ) -> int | None:
        """Fetch pages 1..total_pages (those not in ``kept``) and check they add up.

        Returns the listing's ``meta.total`` (None if the gateway gave none)."""
        given = dict(kept)
        for attempt in range(2):
            kept = dict(given)
            todo = range(1, total_pages + 1)
            while todo:
                kept.update(await self._fetch(params, [n for n in todo if n not in kept]))
                # A list that grew (no usable `to`, or rows becoming visible late): fetch the
                # pages that appeared.
                reported = max((i.total_pages or 0 for i in kept.values()), default=0)
                todo = range(max(kept, default=0) + 1, reported + 1)
            totals = sorted({i.total for i in kept.values() if i.total is not None})
            if len(totals) <= 1:
                break
            if attempt == 0:
                # The list changed while it was read: rows may have moved between pages.
                self.run.outcome.refetched += len(kept) - len(given)
                continue
            self.run.outcome.problem(
                f"the {self.run.resource} list kept changing while it was read "
                f"(meta.total {totals[0]} to {totals[-1]}): rows may have been skipped"
            )
        listed = sum(i.count for i in kept.values())
        total = max(totals, default=None)
        self.run.outcome.listed += listed
        if total is not None:
            self.run.outcome.expected = (self.run.outcome.expected or 0) + total
            if listed < total:
                self.run.outcome.problem(
                    f"{self.run.resource}: {listed} rows listed where meta.total promised {total}"
                )
        return total

    async def _fetch(self, params: dict[str, Any], pages: list[int]) -> dict[int, PageInfo]:
        # As many workers as the client sends requests at once, taking the pages in order:
        # more would only queue for its limiter and would pass the sink's ``ready`` before
        # any page had arrived, and a task per page would hold a million of them at 100M
        # rows. A task group stops the others when one fails.
        todo = iter(pages)
        found: dict[int, PageInfo] = {}

        async def worker() -> None:
            for n in todo:  # one iterator shared: each page is taken once
                got = await self.run.fetch_checked({**params, "page": n}, _page_share(n))
                if got is not None:
                    await self.run.sink(*got)
                    found[n] = _tally(got[1])

        async with asyncio.TaskGroup() as tg:
            for _ in range(min(len(pages), max(1, self.run.client.concurrency))):
                tg.create_task(worker())
        return found


class _TimeFiltersIgnored(Exception):
    pass


def _cursor_share(info: PageInfo) -> int:
    """Variant B: a page with more to come must be full."""
    return PAGE_LIMIT if info.has_more else 0


def _more(info: PageInfo) -> bool:
    """Whether a cursor goes on after this page: while ``has_more``, and once more after a
    short last page (a page cut short in transit looks like a last page; an empty page ends).

    The extra request is made only when the page's last record has the id the cursor
    continues from (else it would return records already seen).
    """
    if not info.last_id:
        return False
    if info.has_more:
        return True
    if not 0 < info.count < PAGE_LIMIT:
        return False
    return bool(info.ids) and info.ids[-1] == info.last_id


@dataclass
class Cursor:
    """Variant B: one cursor from ``first`` onwards, stopping below ``since``."""

    run: _Run
    first_body: bytes
    first: PageInfo
    base: dict[str, Any]
    since: dt.datetime | None
    include_first: bool = True

    async def __call__(self) -> None:
        body, info = self.first_body, self.first
        if self.include_first:
            await self.run.sink(body, info)
            self.run.outcome.listed += info.count
        while _more(info):
            lo, _ = _bounds(info)
            if self.since is not None and lo is not None and lo < self.since:
                return
            got = await self.run.fetch_checked(
                {**self.base, "starting_after": info.last_id}, _cursor_share
            )
            if got is None:
                return
            await self.run.sink(*got)
            body, info = got
            self.run.outcome.listed += info.count


@dataclass
class _Window:
    """One cursor's share of the creation range: from ``hi`` (sent as ``to``) down to ``lo``.

    Only the listing's own lower bound is sent as ``from`` (``hard``). Elsewhere the window
    below covers what is older, so the cursor stops on the first page that reaches below
    ``stop_below``: the few rows of that page the window below reads too cost less than a
    ``from`` bound would (a part-filled last page, and the empty page that confirms it).
    """

    lo: dt.datetime
    hi: dt.datetime
    hard: bool = False
    stop_below: dt.datetime | None = None  # lo when soft; set when the lower part is split off

    def __post_init__(self) -> None:
        if not self.hard and self.stop_below is None:
            self.stop_below = self.lo


@dataclass
class TimeWindows:
    """Variant B: the creation range cut into windows, each a cursor, run concurrently."""

    run: _Run
    first_body: bytes
    first: PageInfo
    base: dict[str, Any]
    since: dt.datetime | None
    windows_target: int
    active: int = 0
    #: when the windows' pages arrived (monotonic seconds): the rate they come at
    arrivals: collections.deque[float] = field(default_factory=collections.deque)
    #: pages each running window has left, as its last page suggests (by the window's id)
    pages_left: dict[int, float] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def __call__(self) -> None:
        lo, hi = _bounds(self.first)
        if not self.first.has_more or lo is None or hi is None:
            await Cursor(self.run, self.first_body, self.first, self.base, self.since)()
            return
        # The first page already covers [lo, hi]; the windows cover what is older.
        await self.run.sink(self.first_body, self.first)
        self.run.outcome.listed += self.first.count
        if self.since is not None:
            # Incremental: the range is known; cut it evenly.
            span = max((hi - lo).total_seconds(), 1.0)
            est_pages = max(1.0, (lo - self.since).total_seconds() / span)
            self.run.on_estimate(int((est_pages + 1) * max(self.first.count, 1)))
            n = max(1, min(self.windows_target, math.ceil(est_pages / 4)))
            edges = [self.since + (lo - self.since) * i / n for i in range(n + 1)]
            edges = [e.replace(microsecond=0) for e in edges[:-1]] + [lo]
        else:
            # Full: the oldest row is unknown. Windows of 1, 2, 4 ... 128 days back from the
            # first page, the last one open-ended; windows that turn out big split themselves.
            edges = [_EPOCH] + [lo - dt.timedelta(days=d) for d in reversed(_WINDOW_DAYS)] + [lo]
            edges = [e.replace(microsecond=0) for e in edges[:-1]] + [lo]
        try:
            async with asyncio.TaskGroup() as tg:
                self.tg = tg
                for i, (a, b) in enumerate(itertools.pairwise(edges)):
                    # Only an incremental listing's lowest window has a bound to keep to.
                    self._spawn(_Window(a, max(a, b), hard=i == 0 and self.since is not None))
        except* _TimeFiltersIgnored:
            self.run.outcome.time_filters_ignored = True
            log.warning(
                "the gateway ignores the from/to filters on %s; paging with one cursor instead",
                self.run.resource,
            )
            await Cursor(
                self.run, self.first_body, self.first, self.base, self.since, include_first=False
            )()

    def _spawn(self, w: _Window) -> None:
        self.run.outcome.windows += 1
        self.active += 1
        self.tg.create_task(self._window(w))

    async def _window(self, w: _Window) -> None:
        try:
            params = {
                **self.base,
                **({"from": int(w.lo.timestamp())} if w.hard else {}),
                "to": math.ceil(w.hi.timestamp()) + 1,
            }
            cursor: str | None = None
            while True:
                got = await self.run.fetch_checked(
                    {**params, **({"starting_after": cursor} if cursor else {})}, _cursor_share
                )
                if got is None:
                    return
                body, info = got
                lo, hi = _bounds(info)
                if (
                    lo is not None
                    and hi is not None
                    and ((w.hard and lo < w.lo - _SECOND) or hi > w.hi + _SECOND)
                ):
                    raise _TimeFiltersIgnored
                self.arrivals.append(time.monotonic())
                # The cursor goes on while the page is handed over: a sink that writes a batch
                # would otherwise hold this window's next request back.
                self.tg.create_task(self._hand_over(body, info))
                self.run.outcome.listed += info.count
                if not _more(info) or lo is None or hi is None:
                    return
                if w.stop_below is not None and lo < w.stop_below:
                    return
                cursor = info.last_id
                self._maybe_split(w, lo, hi, info.count)
        finally:
            self.active -= 1
            self.pages_left.pop(id(w), None)

    async def _hand_over(self, body: bytes, info: PageInfo) -> None:
        await self.run.sink(body, info)

    def _maybe_split(self, w: _Window, lo: dt.datetime, hi: dt.datetime, count: int) -> None:
        """Hand the lower half of what is left to a new window when there is spare capacity."""
        bottom = w.stop_below or w.lo
        left = (lo - bottom).total_seconds()
        span = max((hi - lo).total_seconds(), 1.0)
        pages = self.pages_left[id(w)] = left / span
        if self.active >= self.windows_target or self._at_rate_limit():
            return
        # A few pages left are not worth a window (each split costs part of a page). The
        # window with most left splits: halves of a short one would soon end and split again.
        if pages < max(_SPLIT_PAGES, 0.8 * max(self.pages_left.values())) or left < 8:
            return
        mid = bottom + (lo - bottom) / 2
        if bottom == _EPOCH:
            # The open-ended window: where its rows end is unknown, so hand over what lies
            # further back than it has read so far, not half of everything since 1970.
            mid = max(mid, lo - max(w.hi - lo, dt.timedelta(seconds=span * _SPLIT_PAGES)))
        mid = mid.replace(microsecond=0)
        # The part below goes to the new window: a hard bound stays with it.
        below = _Window(bottom, mid, hard=w.hard and w.stop_below is None)
        w.stop_below = mid
        self.pages_left[id(w)] = (lo - mid).total_seconds() / span
        self.pages_left[id(below)] = (mid - bottom).total_seconds() / span
        self._spawn(below)

    def _at_rate_limit(self) -> bool:
        """Whether the pages of the last second came at the client's rate limit already: then
        more windows would only wait for the rate limit, and each costs part of a page.
        Slower (long round trips, windows finished), another window adds a request in flight.
        """
        now = time.monotonic()
        if now - self.started < _RATE_HORIZON:
            return False  # the rate limiter's burst: requests may go faster than its rate
        while self.arrivals and now - self.arrivals[0] > _RATE_HORIZON:
            self.arrivals.popleft()
        pace = self.run.client.pace
        if pace is None or not self.arrivals:
            return False
        seconds = max(now - self.arrivals[0], _RATE_HORIZON / 4)
        return len(self.arrivals) / seconds >= 0.95 * pace


def _params(
    since: dt.datetime | None, until: dt.datetime | None, filters: dict[str, str] | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(parameters of every request, parameters of the first request)."""
    base: dict[str, Any] = {"limit": PAGE_LIMIT, **(filters or {})}
    if until is not None:
        base["to"] = _iso(until)
    return base, {**base, **({"from": _iso(since)} if since is not None else {})}


async def first_page(
    client: Client,
    resource: str,
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    filters: dict[str, str] | None = None,
    on_malformed: OnMalformed,
) -> tuple[bytes, PageInfo] | None:
    """The first page :func:`list_pages` would fetch (None if its body stays malformed).

    A caller can look at it (how many rows, which ones) before deciding to list the rest:
    pass it back as ``list_pages(..., first=...)`` with the same arguments.
    """
    run = _Run(client, resource, _no_sink, on_malformed, ListOutcome())
    return await run.fetch(_params(since, until, filters)[1])


async def _no_sink(_body: bytes, _info: PageInfo) -> None:
    return None


async def list_pages(
    client: Client,
    resource: str,
    sink: PageSink,
    *,
    since: dt.datetime | None = None,
    until: dt.datetime | None = None,
    on_malformed: OnMalformed,
    on_estimate: Callable[[int], None] = lambda _n: None,
    ready: Callable[[], Awaitable[None]] | None = None,
    windows: int | None = None,
    filters: dict[str, str] | None = None,
    first: tuple[bytes, PageInfo] | None = None,
) -> ListOutcome:
    """Hand every page of ``resource`` created at or after ``since`` (and before ``until``) to ``sink``.

    ``filters`` are sent with every request (e.g. ``{"status": "pending"}``). ``ready`` is
    awaited before every request: a sink that falls behind makes fetching wait,
    so pages never pile up in memory. ``first`` is the page :func:`first_page` returned for
    the same arguments: it is not fetched again.
    """
    outcome = ListOutcome()
    run = _Run(client, resource, sink, on_malformed, outcome, on_estimate, ready)
    base, first_params = _params(since, until, filters)
    got = first if first is not None else await run.fetch(first_params)
    if got is None:
        return outcome
    if got[1].variant == "B":
        got = await run.fetch_checked(first_params, _cursor_share, got)
        assert got is not None
    body, info = got
    outcome.variant = info.variant
    outcome.newest = _bounds(info)[1]
    if info.variant == "A":
        outcome.strategy = "page numbers"
        if since is not None:
            base["from"] = _iso(since)
        await PageNumbers(run, body, info, base, first_params)()
        return outcome
    outcome.strategy = "time windows"
    lo, _ = _bounds(info)
    if since is not None and lo is not None and lo < since - _SECOND:
        # The first page already reaches before `since`: from/to are ignored.
        outcome.time_filters_ignored = True
    if outcome.time_filters_ignored:
        outcome.strategy = "cursor"
        await Cursor(run, body, info, base, since)()
        return outcome
    # Each window is one cursor, one request in flight: as many windows as the client lets
    # requests fly keeps the rate limit busy however long the round trips (a window and a
    # split cost about half a page, the rows read twice where two windows meet).
    target = windows or max(1, client.concurrency)
    await TimeWindows(run, body, info, base, since, windows_target=target)()
    if outcome.time_filters_ignored:
        outcome.strategy = "cursor (server ignores from/to)"
    return outcome
