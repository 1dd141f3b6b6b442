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
  (else the list changed while it was read: it is read once more; pages that keep appearing
  are not chased, which would not end while rows arrive as fast as pages are read, and each
  page is asked for once a read), and the distinct ids listed must add up to it (counting
  rows, a row served on two pages, one that moved while the pages were read, would hide a
  row never served): pages that repeat ids while ids are missing are read once more too.
  Ids are kept as 64-bit hashes, 8 bytes a row.
- Variant B: a page shorter than the page size while ``has_more`` is true is fetched again;
  a cursor ends only on an empty page (a short last page is followed by one more request,
  since a page cut short looks like a last page). The page size is the ``limit`` asked for,
  unless the gateway serves fewer (the spec gives only a maximum): a short page with
  ``has_more`` that comes back with the same ids when fetched again, and holds no fewer rows
  than any such page before it, sets the page size of the listing. A later page with more
  rows shows it was cut short after all: a problem.
- Variant B: a cursor must move on. A page after ``starting_after=X`` holding ``X``, or an id
  of the cursor's last few pages, or a row newer than the page before (lists are newest
  first), means the gateway ignored the cursor or sent it round a cycle: that cursor stops
  (it would request the same pages forever) and the listing is incomplete.

What stays wrong is written to :attr:`ListOutcome.problems` and makes the listing incomplete
(a sync then neither advances its high-water mark nor drops cached rows the listing missed).
"""

from __future__ import annotations

import asyncio
import collections
import datetime as dt
import itertools
import logging
import math
from collections.abc import Awaitable, Callable, Collection
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
    #: Variant B: the rows a page with more to come holds: the ``limit`` asked for, until a
    #: short page comes back the same when fetched again (the gateway's own page size)
    page_size: int = PAGE_LIMIT
    #: Variant B: the most rows a page with more to come has held in this listing
    widest: int = 0
    #: Variant B: the page whose row count was taken as the page size (for the problem text)
    sized_by: str | None = None

    def cursor_share(self, info: PageInfo) -> int:
        """Variant B: a page with more to come must be full (hold :attr:`page_size` rows)."""
        return self.page_size if info.has_more else 0

    def repeated(self, params: dict[str, Any]) -> None:
        """Record that a cursor did not move on (see :class:`_Moving`)."""
        cursor = params.get("starting_after")
        where = ", ".join(
            f"{k}={v}" for k, v in params.items() if k not in ("limit", "starting_after")
        )
        self.outcome.problem(
            f"the gateway repeated the {self.resource} page after starting_after={cursor}"
            f"{f' ({where})' if where else ''}: the cursor did not move on past rows already "
            "read, so the rows after them were not listed"
        )

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

        Variant B (``expected`` is :meth:`cursor_share`): a short page with more to come that
        comes back with the same rows when fetched again, and holds at least as many as every
        such page before it, is the gateway's page size (the spec gives only a maximum):
        :attr:`page_size` becomes its row count, and the page is not short.
        """
        # named by what was asked, so that a problem can say which page it was
        where = ", ".join(f"{k}={v}" for k, v in params.items() if k != "limit") or "the first"
        if got is None:
            got = await self.fetch(params)
        if got is None:
            return None
        short, damaged = got[1].count < expected(got[1]), self._damaged(got[0])
        if not (short or damaged):
            return self._widen(got, where)
        self.outcome.short_pages += short
        last = got
        for _ in range(MAX_REFETCHES):
            self.outcome.refetched += 1
            again = await self.fetch(params)
            if again is None:
                break
            again_damaged = self._damaged(again[0])
            if short and not again_damaged and self._sized(last[1], again[1], where):
                self.outcome.short_pages -= 1  # the gateway's page size, not a short page
                return self._widen(again, where)
            last = again
            if (again[1].count, not again_damaged) > (got[1].count, not damaged):
                got, damaged = again, again_damaged
            short = got[1].count < expected(got[1])
            if not (short or damaged):
                return self._widen(got, where)
        if short:
            self.outcome.problem(
                f"a {self.resource} page ({where}) stayed short after {MAX_REFETCHES} "
                f"re-fetches: {got[1].count} rows where the gateway's own figures imply "
                f"{expected(got[1])}"
            )
        return got

    def _damaged(self, body: bytes) -> bool:
        return has_damaged_id(self.resource, body)

    def _sized(self, before: PageInfo, now: PageInfo, where: str) -> bool:
        """Whether a short variant-B page fetched again (``now``, after ``before``) shows the
        gateway's page size: the same rows again, with more to come, no fewer than any page
        with more to come has held. Then :attr:`page_size` becomes its row count.

        A page cut short in transit differs from one fetch to the next (or holds fewer rows
        than pages seen before it); one cut the same way every time, taken as the page size,
        is caught when a later page holds more (:meth:`_widen`).
        """
        if (
            now.variant != "B"
            or not now.has_more
            or now.count < max(1, self.widest)
            or now.ids != before.ids
            or None in now.ids
        ):
            return False
        log.info(
            "the gateway serves %d %s a page where %d were asked for: taking that as its page size",
            now.count,
            self.resource,
            self.page_size,
        )
        self.page_size, self.sized_by = now.count, where
        return True

    def _widen(self, got: tuple[bytes, PageInfo], where: str) -> tuple[bytes, PageInfo]:
        """Note how many rows a variant-B page with more to come held. More than the page size
        taken from a page that came back short (:meth:`_sized`): that page, and any taken as
        full by its size, may have been cut short."""
        info = got[1]
        if info.variant != "B" or not info.has_more:
            return got
        self.widest = max(self.widest, info.count)
        if self.sized_by is not None and info.count > self.page_size:
            self.outcome.problem(
                f"a {self.resource} page ({self.sized_by}) came back with {self.page_size} rows "
                f"twice and was taken as the gateway's page size, but a later page ({where}) "
                f"held {info.count}: the pages taken as full by that size may have been cut short"
            )
            self.page_size, self.sized_by = min(PAGE_LIMIT, info.count), None
        return got


#: What a listing keeps of a page until its totals are checked: its figures without its ids,
#: and its ids as 64-bit hashes (8 bytes a row: the ids themselves held 8 GB at 100M rows).
_Tally = tuple[PageInfo, np.ndarray]


def _tally(info: PageInfo) -> _Tally:
    """What a listing keeps of a page (see :data:`_Tally`)."""
    hashes = np.fromiter((hash(i) for i in info.ids if i is not None), dtype=np.int64)
    return replace(info, ids=()), hashes


def _distinct(pages: Collection[_Tally]) -> int:
    """Distinct ids on the pages (a record without an id counts as one of its own). Ids are
    compared by 64-bit hash: two ids that collide (about one chance in 4,000 at 100M rows)
    count as one, which makes the listing look incomplete, never complete."""
    nones = sum(info.count - len(hashes) for info, hashes in pages)
    if not pages:
        return 0
    return nones + int(np.unique(np.concatenate([h for _, h in pages])).size)


def _figures(pages: Collection[_Tally]) -> tuple[list[int], list[int]]:
    """Variant A: the distinct ``meta.total`` and ``meta.totalPages`` the pages reported,
    in order (one each when the list did not change while it was read)."""
    totals = sorted({i.total for i, _ in pages if i.total is not None})
    counts = sorted({i.total_pages for i, _ in pages if i.total_pages})
    return totals, counts


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
        if total_pages > 1 and first is not None and first == last:
            # Page 1 lies within one second: freeze one second past it (rows added in that
            # second would shift pages; the totals check below notices). Not a page 1 that
            # runs oldest first (the spec fixes no order for page numbers): its first row is
            # the oldest, and a bound past it would leave out every later row.
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
        self, params: dict[str, Any], total_pages: int, kept: dict[int, _Tally]
    ) -> int | None:
        """Fetch pages 1..total_pages (those not in ``kept``) and check they add up.

        Returns the listing's ``meta.total`` (None if the gateway gave none)."""
        given = dict(kept)
        for attempt in range(2):
            kept = dict(given)
            # Each page at most once a read: a page whose body stays unreadable is not kept,
            # and asking for it again after every round never ended.
            asked = set(kept)
            todo = range(1, total_pages + 1)
            while todo:
                pages = [n for n in todo if n not in asked]
                asked.update(pages)
                kept.update(await self._fetch(params, pages))
                totals, counts = _figures(kept.values())
                if len(totals) > 1 or len(counts) > 1:
                    # The list is changing while it is read: this read is read again or
                    # called incomplete below, whatever more it fetches. Fetching the pages
                    # that keep appearing would not end while rows arrive as fast as pages
                    # are read (a gateway ignoring `to`).
                    break
                # The pages agree, and say there are more (the estimate was low, or no
                # usable `to`): fetch them. They must report the same count again, else
                # the list changed, so this goes round at most once more.
                todo = range(max(asked, default=0) + 1, max(counts, default=0) + 1)
            totals, counts = _figures(kept.values())
            listed = sum(i.count for i, _ in kept.values())
            distinct = _distinct(kept.values())
            total = max(totals, default=None)
            # Rows served twice where rows are missing: a row moved between pages while
            # they were read (the count alone would add up to meta.total).
            doubled = total is not None and distinct < min(listed, total)
            # meta.total is what the listing is checked against; only a gateway that gives
            # none shows a changing list by its page counts alone.
            changed = len(totals) > 1 or (not totals and len(counts) > 1)
            if not changed and not doubled:
                break
            if attempt == 0:
                # The list changed while it was read: rows may have moved between pages.
                self.run.outcome.refetched += len(kept) - len(given)
                continue
            if changed:
                figure, seen = ("total", totals) if len(totals) > 1 else ("totalPages", counts)
                self.run.outcome.problem(
                    f"the {self.run.resource} list kept changing while it was read "
                    f"(meta.{figure} {seen[0]} to {seen[-1]}): rows may have been skipped"
                )
        self.run.outcome.listed += listed
        if total is not None:
            self.run.outcome.expected = (self.run.outcome.expected or 0) + total
            if listed < total:
                self.run.outcome.problem(
                    f"{self.run.resource}: {listed} rows listed where meta.total promised {total}"
                )
            elif distinct < total:
                self.run.outcome.problem(
                    f"{self.run.resource}: {listed} rows listed but {distinct} distinct ids "
                    f"where meta.total promised {total}: pages served some rows twice (rows "
                    "moving between pages while they were read?), so others were never served"
                )
        return total

    async def _fetch(self, params: dict[str, Any], pages: list[int]) -> dict[int, _Tally]:
        # As many workers as the client sends requests at once, taking the pages in order:
        # more would only queue for its limiter and would pass the sink's ``ready`` before
        # any page had arrived, and a task per page would hold a million of them at 100M
        # rows. A task group stops the others when one fails.
        todo = iter(pages)
        found: dict[int, _Tally] = {}

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


def _more(info: PageInfo, page_size: int) -> bool:
    """Whether a cursor goes on after this page: while ``has_more``, and once more after a
    short last page (a page cut short in transit looks like a last page; an empty page ends).

    The extra request is made only when the page's last record has the id the cursor
    continues from (else it would return records already seen).
    """
    if not info.last_id:
        return False
    if info.has_more:
        return True
    if not 0 < info.count < page_size:
        return False
    return bool(info.ids) and info.ids[-1] == info.last_id


#: Pages of a cursor whose ids :class:`_Moving` keeps to tell a page already read.
_RECENT_PAGES = 8


@dataclass
class _Moving:
    """Whether a cursor moves on: a gateway that ignores ``starting_after``, or sends cursors
    round in a cycle, would otherwise have the same pages requested forever.

    A page after ``starting_after=X`` has not moved on when it holds ``X``, or an id of the
    last few pages this cursor read, or a row created after the oldest row of the page before
    (lists are newest first). Only the last :data:`_RECENT_PAGES` pages' ids are kept (a cycle
    longer than that goes back up in creation time).
    """

    recent: collections.deque[frozenset[str]] = field(
        default_factory=lambda: collections.deque(maxlen=_RECENT_PAGES)
    )
    floor: dt.datetime | None = None  # the oldest creation time of the page before

    def read(self, info: PageInfo) -> None:
        self.recent.append(frozenset(i for i in info.ids if i is not None))
        lo, _ = _bounds(info)
        self.floor = lo if lo is not None else self.floor

    def moved_on(self, cursor: str, info: PageInfo) -> bool:
        ids = {i for i in info.ids if i is not None}
        if cursor in ids or any(not ids.isdisjoint(page) for page in self.recent):
            return False
        _, hi = _bounds(info)
        return hi is None or self.floor is None or hi <= self.floor


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
        moving = _Moving()
        moving.read(info)
        while _more(info, self.run.page_size):
            lo, _ = _bounds(info)
            if self.since is not None and lo is not None and lo < self.since:
                return
            assert info.last_id is not None  # (_more)
            params = {**self.base, "starting_after": info.last_id}
            got = await self.run.fetch_checked(params, self.run.cursor_share)
            if got is None:
                return
            if not moving.moved_on(info.last_id, got[1]):
                self.run.repeated(params)
                return
            await self.run.sink(*got)
            body, info = got
            moving.read(info)
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
    #: when the windows' pages arrived (the client's monotonic seconds): the rate they come at
    arrivals: collections.deque[float] = field(default_factory=collections.deque)
    #: pages each running window has left, as its last page suggests (by the window's id)
    pages_left: dict[int, float] = field(default_factory=dict)
    started: float = field(init=False)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        # The client's clock, as its pacer's: the pages' rate is compared with that pace.
        self.started = self.run.client.clock.monotonic()

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
            moving = _Moving()
            while True:
                sent = {**params, **({"starting_after": cursor} if cursor else {})}
                got = await self.run.fetch_checked(sent, self.run.cursor_share)
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
                if cursor is not None and not moving.moved_on(cursor, info):
                    self.run.repeated(sent)
                    return
                moving.read(info)
                self.arrivals.append(self.run.client.clock.monotonic())
                # The cursor goes on while the page is handed over: a sink that writes a batch
                # would otherwise hold this window's next request back.
                self.tg.create_task(self._hand_over(body, info))
                self.run.outcome.listed += info.count
                if not _more(info, self.run.page_size) or lo is None or hi is None:
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
        now = self.run.client.clock.monotonic()
        if now - self.started < _RATE_HORIZON:
            return False  # the rate limiter's burst: requests may go faster than its rate
        while self.arrivals and now - self.arrivals[0] > _RATE_HORIZON:
            self.arrivals.popleft()
        pace = self.run.client.pace_of(self.run.resource)
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
        got = await run.fetch_checked(first_params, run.cursor_share, got)
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
