"""One sync: list what can have changed, normalise in batches, merge into the cache.

A full sync lists everything. An incremental sync (the default once a dataset has a state)
lists rows created since the high-water mark minus a safety overlap, and re-reads every cached
row still in a non-final state, plus every payment whose refunds are new or changed (a refund
changes its payment's ``refunded``/``refunded_amount``). Those re-reads are done by listing
from an earlier creation time, by status-filtered lists, or by retrieving ids one by one,
whichever needs fewest requests (:func:`choose_cutoff`; a status list is priced by how many
of its rows its first page shows still in the status). Rows left over after the lists are
retrieved by id or, if there are many, their range is listed again. Refunds are synced before
payments, and only new or changed refunds send their payment to be re-read.

Pages are normalised and written every ``pages_per_batch`` pages in a worker thread, so
memory stays flat; touched months are compacted at the end and the state is written last.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import logging
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from gwtools import _schema
from gwtools._config import Settings
from gwtools._errors import InvalidRequestError, NotFoundError
from gwtools._schema import Resource
from gwtools.cache._dataset import Dataset, MergeStats, _next_seq
from gwtools.http._client import Client, MalformedBodyError, RequestStats
from gwtools.http._paging import PAGE_LIMIT, ListOutcome, first_page, list_cost, list_pages
from gwtools.http._wire import (
    MALFORMED_ID,
    PageInfo,
    Variant,
    list_bodies,
    object_path,
    read_object,
)
from gwtools.normalize._normalize import Reject, normalize_bodies

__all__ = ["ResourceResult", "SyncResult", "choose_cutoff", "run_sync"]

log = logging.getLogger("gwtools")

#: Rows created this long before the high-water mark are listed again, in case the gateway
#: committed them late or clocks disagree.
DEFAULT_OVERLAP = dt.timedelta(minutes=10)
PAGES_PER_BATCH = 50


class GatewayDataWarning(UserWarning):
    """The gateway sent data gwtools could only partly use (unknown status, rejected records)."""


@dataclass
class ResourceResult:
    """What a sync did for one resource."""

    resource: str
    fetched: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    requests: int = 0
    rate_limited: int = 0
    retries: int = 0
    seconds: float = 0.0
    mode: str = "full"  # or "incremental"
    strategy: str = ""
    api_variant: str | None = None
    reread_by_id: int = 0
    complete: bool = True
    #: rows in the list pages kept (completeness report; a page fetched again counts once)
    listed: int = 0
    #: rows the gateway said its lists hold (variant A's meta.total; None in variant B)
    expected: int | None = None
    #: list pages that came back short, and pages fetched again
    short_pages: int = 0
    refetched: int = 0
    #: rejected records by why
    rejects_by_reason: dict[str, int] = field(default_factory=dict)
    #: why the sync of this resource is incomplete (empty when complete)
    problems: list[str] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        """The completeness report: rows listed vs expected, requests, retries, rejects, why."""
        return {
            "complete": self.complete,
            "listed": self.listed,
            "expected": self.expected,
            "requests": self.requests,
            "retries": self.retries,
            "rate_limited": self.rate_limited,
            "short_pages": self.short_pages,
            "refetched": self.refetched,
            "rejected": self.rejected,
            "rejects_by_reason": dict(self.rejects_by_reason),
            "problems": list(self.problems),
        }


_FIELDS = ("fetched", "new", "updated", "unchanged", "rejected")
_HTTP = ("requests", "rate_limited", "retries")


@dataclass
class SyncResult:
    """What :meth:`Gateway.sync` did: rows and requests, per resource and in total.

    ``rate_limited`` is the number of 429 answers received. Prints as a small table, in a
    terminal and in Jupyter.
    """

    resources: dict[str, ResourceResult] = field(default_factory=dict)
    seconds: float = 0.0

    def _sum(self, name: str) -> int:
        return sum(int(getattr(r, name)) for r in self.resources.values())

    fetched = property(lambda self: self._sum("fetched"))
    new = property(lambda self: self._sum("new"))
    updated = property(lambda self: self._sum("updated"))
    unchanged = property(lambda self: self._sum("unchanged"))
    rejected = property(lambda self: self._sum("rejected"))
    requests = property(lambda self: self._sum("requests"))
    rate_limited = property(lambda self: self._sum("rate_limited"))
    retries = property(lambda self: self._sum("retries"))

    @property
    def complete(self) -> bool:
        """Whether every resource was listed completely (see :attr:`problems`)."""
        return all(r.complete for r in self.resources.values())

    @property
    def problems(self) -> list[str]:
        """Why the sync is incomplete, one line each (empty when complete)."""
        return [p for r in self.resources.values() for p in r.problems]

    @property
    def report(self) -> dict[str, dict[str, Any]]:
        """Per resource: rows listed vs expected, requests, retries, rejects and why."""
        return {name: r.report() for name, r in self.resources.items()}

    @property
    def rows_per_second(self) -> float:
        return self.fetched / self.seconds if self.seconds > 0 else 0.0

    def _rows(self) -> list[list[str]]:
        head = ["resource", "mode", *_FIELDS, "requests", "429s", "retries", "seconds"]
        rows = [head]
        for r in self.resources.values():
            rows.append(
                [
                    r.resource,
                    r.mode,
                    *(f"{getattr(r, f):,}" for f in (*_FIELDS, *_HTTP)),
                    f"{r.seconds:.2f}",
                ]
            )
        if len(self.resources) > 1:
            rows.append(
                [
                    "total",
                    "",
                    *(f"{getattr(self, f):,}" for f in (*_FIELDS, *_HTTP)),
                    f"{self.seconds:.2f}",
                ]
            )
        return rows

    def __str__(self) -> str:
        rows = self._rows()
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(
                c.rjust(w) if i > 1 else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
            for r in rows
        ]
        return "\n".join(lines) + self._note()

    def _note(self) -> str:
        if self.complete:
            return ""
        why = "".join(f"\n  - {p}" for p in self.problems)
        return (
            "\nincomplete: the high-water mark was not advanced; the next sync lists the "
            f"affected range again{why}"
        )

    def _report_html(self) -> str:
        head = ["resource", "listed", "expected", "short pages", "re-fetched", "rejects"]
        cells = []
        for r in self.resources.values():
            why = ", ".join(f"{k}: {v:,}" for k, v in sorted(r.rejects_by_reason.items()))
            cells.append(
                [
                    r.resource,
                    f"{r.listed:,}",
                    "" if r.expected is None else f"{r.expected:,}",
                    f"{r.short_pages:,}",
                    f"{r.refetched:,}",
                    f"{r.rejected:,}" + (f" ({why})" if why else ""),
                ]
            )
        rows = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in cells
        )
        th = "".join(f"<th>{escape(c)}</th>" for c in head)
        return (
            "<details><summary>completeness</summary>"
            f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table></details>"
        )

    def _repr_html_(self) -> str:
        rows = self._rows()
        head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
        body = "".join(
            "<tr>"
            + "".join(
                f"<td style='text-align:{'left' if i < 2 else 'right'}'>{escape(c)}</td>"
                for i, c in enumerate(r)
            )
            + "</tr>"
            for r in rows[1:]
        )
        note = ""
        if not self.complete:
            items = "".join(f"<li>{escape(p)}</li>" for p in self.problems)
            note = (
                "<p><b>incomplete</b>: the high-water mark was not advanced; the next sync "
                f"lists the affected range again</p><ul>{items}</ul>"
            )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        return table + note + self._report_html()

    def __repr__(self) -> str:
        return (
            f"SyncResult(fetched={self.fetched}, new={self.new}, updated={self.updated}, "
            f"unchanged={self.unchanged}, rejected={self.rejected}, requests={self.requests}, "
            f"rate_limited={self.rate_limited}, retries={self.retries}, seconds={self.seconds:.2f}, "
            f"complete={self.complete})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready values (``gwtools sync --json`` prints this)."""
        return {
            "complete": self.complete,
            "problems": self.problems,
            "seconds": self.seconds,
            **{f: getattr(self, f) for f in (*_FIELDS, *_HTTP)},
            "resources": {k: {**vars(v), "report": v.report()} for k, v in self.resources.items()},
        }


def _warn_unknown(resource: str, statuses: Iterable[str]) -> None:
    # Once per (resource, status): the warnings module's own registry shows a given message
    # once per location under the default filter; no module-level set of our own.
    for status in sorted(statuses):
        warnings.warn(
            f"the gateway sent {resource} with status {status!r}, which gwtools does not know; "
            "those rows have status 'unknown' (the raw value is in status_raw)",
            GatewayDataWarning,
            stacklevel=2,
        )


@dataclass
class BatchOutcome:
    """What writing one batch produced."""

    months: set[str] = field(default_factory=set)
    rejected: int = 0
    max_created: dt.datetime | None = None
    unknown_statuses: set[str] = field(default_factory=set)
    reasons: dict[str, int] = field(default_factory=dict)


def reject_kind(reject: Reject) -> str:
    """A short category of a reject for counting: its kind, else its reason up to the detail."""
    if reject.kind:
        return reject.kind
    cut = min((i for i in (reject.reason.find(c) for c in ":(=") if i > 0), default=None)
    return reject.reason[:cut].strip().rstrip("`").strip()


def _count_kinds(rejects: Iterable[Reject], into: dict[str, int]) -> None:
    for r in rejects:
        kind = reject_kind(r)
        into[kind] = into.get(kind, 0) + 1


def write_batch(
    path: str, resource: Resource, livemode: bool, sync_id: str, bodies: list[bytes]
) -> BatchOutcome:
    """Normalise raw bodies and write them as part files (runs in the writer thread)."""
    ds = Dataset(path, resource)
    batch = normalize_bodies(resource, bodies, livemode=livemode, check_ids=True)
    del bodies
    out = BatchOutcome(unknown_statuses=set(batch.unknown_statuses))
    if batch.rejects:
        out.rejected = ds.append_rejects(batch.rejects, sync_id=sync_id)
        _count_kinds(batch.rejects, out.reasons)
    if len(batch.frame):
        table = pa.Table.from_pandas(batch.frame, schema=ds.schema, preserve_index=False)
        out.months = ds.stage_batch(table)  # merged into the dataset by compact() at the end
        out.max_created = pc.max(table.column("created_at")).as_py()
    return out


class Workers:
    """Where batches are normalised, written and compacted: one thread, off the event loop.

    (A worker process would keep normalisation off the GIL entirely, but ``spawn`` re-runs an
    unguarded user script in the child, and ``fork`` from this threaded process is unsafe.)
    """

    def __init__(self) -> None:
        self.thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gwtools-write")

    def pick(self) -> concurrent.futures.Executor:
        return self.thread

    def shutdown(self) -> None:
        self.thread.shutdown(wait=True)


class BatchWriter:
    """Collects raw pages; every ``pages_per_batch`` normalises and writes them off the loop."""

    def __init__(
        self,
        dataset: Dataset,
        *,
        livemode: bool,
        sync_id: str,
        workers: Workers,
        pages_per_batch: int = PAGES_PER_BATCH,
        on_rows: Callable[[int], None] = lambda _n: None,
    ) -> None:
        self.dataset = dataset
        self.resource: Resource = dataset.resource
        self.livemode = livemode
        self.sync_id = sync_id
        self.workers = workers
        self.pages_per_batch = pages_per_batch
        self.on_rows = on_rows
        self.bodies: list[bytes] = []
        # One batch written at a time: fetching waits when the writer falls behind, so
        # pages never pile up in memory (backpressure).
        self.writing = asyncio.Lock()
        self.room = asyncio.Event()
        self.room.set()
        self.months: set[str] = set()
        self.pages = 0
        self.fetched = 0
        self.rejected = 0
        self.reasons: dict[str, int] = {}
        self.max_created: dt.datetime | None = None

    async def add_page(self, body: bytes, info: PageInfo) -> None:
        self.pages += 1
        self.fetched += info.count
        self.on_rows(info.count)
        self.bodies.append(body)
        if len(self.bodies) >= 2 * self.pages_per_batch:
            self.room.clear()  # a batch is being written and another is full: stop fetching
        if len(self.bodies) >= self.pages_per_batch:
            await self.flush(force=False)

    async def ready(self) -> None:
        """Wait until there is room for more pages (see :func:`list_pages`'s ``ready``)."""
        await self.room.wait()

    async def add_objects(self, objects: Sequence[tuple[Variant, bytes]]) -> None:
        self.fetched += len(objects)
        self.on_rows(len(objects))
        self.bodies.extend(list_bodies(objects))
        await self.flush()

    def add_rejects(self, rejects: Sequence[Reject]) -> None:
        self.rejected += self.dataset.append_rejects(rejects, sync_id=self.sync_id)
        _count_kinds(rejects, self.reasons)

    async def flush(self, *, force: bool = True) -> None:
        """Write what is collected (only a full batch unless ``force``)."""
        async with self.writing:
            if not force and len(self.bodies) < self.pages_per_batch:
                return  # someone else wrote while we waited
            bodies, self.bodies = self.bodies, []
            self.room.set()
            if bodies:
                await self._write(bodies)

    async def _write(self, bodies: list[bytes]) -> None:
        out: BatchOutcome = await asyncio.get_running_loop().run_in_executor(
            self.workers.pick(),
            write_batch,
            str(self.dataset.path),
            self.resource,
            self.livemode,
            self.sync_id,
            bodies,
        )
        _warn_unknown(self.resource, out.unknown_statuses)
        self.months |= out.months
        self.rejected += out.rejected
        for kind, n in out.reasons.items():
            self.reasons[kind] = self.reasons.get(kind, 0) + n
        if out.max_created is not None and (
            self.max_created is None or out.max_created > self.max_created
        ):
            self.max_created = out.max_created


@dataclass
class OpenGroup:
    """Cached rows in one open status created before the default cutoff, as priced for
    :func:`choose_cutoff` (creation times as sorted integers).

    ``left`` rows fell within the span of the status list's first page but were not on it:
    they left the status, and only a listing or a retrieve by id re-reads them. Of the
    ``unknown`` rows, a share ``stay`` is expected to still be in the status, and the rest of
    the status list returns them for ``rest`` more requests; the others are retrieved by id.
    ``rest=None``: the list was not probed, and costs what listing the rows that stay costs.
    """

    unknown: np.ndarray
    left: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))
    stay: float = 1.0
    rest: float | None = None

    def costs(
        self, options: np.ndarray, variant: str | None, page_limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(requests by id, requests by the status list) to re-read the rows before each option."""
        unknown = np.searchsorted(self.unknown, options, side="left")
        left = np.searchsorted(self.left, options, side="left")
        rest = (
            list_cost(unknown * self.stay, variant, page_limit) if self.rest is None else self.rest
        )
        by_status = np.where(unknown > 0, rest + (1 - self.stay) * unknown, 0) + left
        return unknown + left, by_status


def choose_cutoff(
    cached_created: np.ndarray,
    candidate_created: np.ndarray,
    default: np.int64 | int,
    page_limit: int = PAGE_LIMIT,
    open_created: np.ndarray | None = None,
    *,
    groups: Sequence[OpenGroup] = (),
    variant: str | None = None,
) -> int:
    """The creation time to list from so that re-reading what may have changed costs fewest requests.

    Listing from ``c`` costs what :func:`list_cost` says for the cached rows created at or
    after ``c``. Before ``c``, every candidate costs one retrieve by id, and the open rows of
    each status (``groups``; ``open_created``: one status whose rows all stay) cost their
    status-filtered list or their retrieves by id, whichever is cheaper. ``c`` is at most
    ``default`` (the high-water mark minus the overlap); listing from the oldest cached row
    is an option, so the plan never costs more than a fresh full listing. Times are integers.
    """
    cached = np.sort(cached_created)
    cands = np.sort(candidate_created[candidate_created < default])
    groups = list(groups)
    if open_created is not None:
        groups.append(OpenGroup(np.sort(open_created[open_created < default])))
    points: list[np.ndarray] = [cands, np.array([default]), cached[:1]]
    points += [g.unknown for g in groups] + [g.left for g in groups]
    options = np.unique(np.concatenate(points).astype(np.int64))
    options = options[options <= default]
    listed = len(cached) - np.searchsorted(cached, options, side="left")
    cost = list_cost(listed, variant, page_limit) + np.searchsorted(cands, options, side="left")
    for g in groups:
        cost = cost + np.minimum(*g.costs(options, variant, page_limit))
    best = len(cost) - 1 - int(np.argmin(cost[::-1]))  # on a tie, the latest: fewer rows listed
    return int(options[best])


def _us(t: dt.datetime) -> int:
    return int(t.timestamp() * 1_000_000)


def _from_us(us: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(us / 1_000_000, dt.UTC)


@dataclass
class SyncContext:
    """Everything a sync needs besides the resources."""

    client: Client
    settings: Settings
    overlap: dt.timedelta = DEFAULT_OVERLAP
    pages_per_batch: int = PAGES_PER_BATCH
    progress: bool | None = None
    windows: int | None = None


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class _Progress:
    """A tqdm.auto bar (a widget in Jupyter): on when asked, or for big interactive syncs."""

    BIG_ROWS = 20_000

    def __init__(self, enabled: bool | None, resource: str) -> None:
        self.enabled = enabled
        self.resource = resource
        self.total: int | None = None
        self.bar: Any = None
        self.done = 0

    def _open(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(
            total=self.total, unit=" rows", desc=f"sync {self.resource}", unit_scale=True
        )
        self.bar.update(self.done)

    def _wanted(self) -> bool:
        if self.enabled is not None:
            return self.enabled
        big = max(self.done, self.total or 0) >= self.BIG_ROWS
        return big and _interactive()

    def estimate(self, rows: int) -> None:
        self.total = rows
        if self.bar is not None:
            self.bar.total = max(rows, self.done)
            self.bar.refresh()
        elif self._wanted():
            self._open()

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self._wanted():
            self._open()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.total = self.done
            self.bar.refresh()
            self.bar.close()


async def run_sync(
    ctx: SyncContext,
    resources: Sequence[Resource],
    *,
    full: bool = False,
) -> SyncResult:
    """Sync ``resources`` (refunds first, so their payments can be re-read) into the cache."""
    wanted = list(dict.fromkeys(resources))
    for r in wanted:
        _schema.columns(r)
    order: list[Resource] = sorted(wanted, key=lambda r: r != "refunds")
    started = time.perf_counter()
    result = SyncResult()
    s = ctx.settings
    datasets = {r: Dataset.at(s.cache_dir, s.account, s.mode, r) for r in _RESOURCES}
    # Both locks, always, in one global order: the refunds state carries the payments that
    # new refunds changed, until a payments sync has re-read them.
    locks = [datasets[r].file_lock() for r in _RESOURCES]
    acquired = []
    workers = Workers()
    try:
        for lock in locks:
            await asyncio.to_thread(lock.acquire)
            acquired.append(lock)
        for r in order:
            refunds = datasets["refunds"]
            owed = set(refunds.state().get(_OWED, []))
            res = await _sync_one(
                ctx,
                datasets[r],
                full=full,
                workers=workers,
                extra_ids=owed if r == "payments" else set(),
            )
            result.resources[r] = res.result
            if r == "refunds" and res.payment_ids:
                _set_owed(refunds, owed | res.payment_ids)
            elif r == "payments" and owed and res.result.complete:
                _set_owed(refunds, set())
    finally:
        workers.shutdown()
        for lock in reversed(acquired):
            lock.release()
    result.resources = {r: result.resources[r] for r in wanted if r in result.resources}
    result.seconds = time.perf_counter() - started
    if not result.complete:
        # Loud: a notebook shows warnings; the CLI also exits non-zero.
        warnings.warn(
            "the sync is incomplete, so the high-water mark was not advanced and the next sync "
            "lists the affected range again (sync again; if it stays incomplete, the gateway or "
            "something between it and you is changing responses): " + "; ".join(result.problems),
            GatewayDataWarning,
            stacklevel=2,
        )
    return result


_RESOURCES: tuple[Resource, ...] = ("payments", "refunds")
#: Key in the refunds state: ids of payments whose refunds changed and that a payments sync
#: has not re-read yet (a refund changes its payment's refunded_amount).
_OWED = "payments_to_reread"


def _set_owed(refunds: Dataset, ids: set[str]) -> None:
    state = refunds.state()
    state[_OWED] = sorted(ids)
    refunds.write_state(state)


@dataclass
class _OneResult:
    result: ResourceResult
    payment_ids: set[str]


async def _sync_one(
    ctx: SyncContext,
    ds: Dataset,
    *,
    full: bool,
    workers: Workers,
    extra_ids: set[str],
) -> _OneResult:
    resource = ds.resource
    started = time.perf_counter()
    before = ctx.client.stats.snapshot()
    ds.recover()  # leftovers of a killed sync; unreadable files to quarantine
    state = ds.state()
    high_water = state.get("high_water")
    incremental = bool(not full and high_water)
    res = ResourceResult(resource, mode="incremental" if incremental else "full")
    sync_id = uuid.uuid4().hex[:12]
    since_seq = _next_seq()
    progress = _Progress(ctx.progress, resource)
    writer = BatchWriter(
        ds,
        livemode=ctx.settings.mode == "live",
        sync_id=sync_id,
        workers=workers,
        pages_per_batch=ctx.pages_per_batch,
        on_rows=progress.update,
    )

    def on_malformed(exc: MalformedBodyError) -> None:
        reason = f"unusable response body from {exc.url}: {exc.message}"
        writer.add_rejects([Reject(resource, reason, exc.snippet, "unusable body")])

    plan = (
        await _plan_incremental(ctx, ds, str(high_water), extra_ids, on_malformed)
        if incremental
        else None
    )
    since = plan.since if plan is not None else None
    try:
        listing = list_pages(
            ctx.client,
            resource,
            writer.add_page,
            since=since,
            on_malformed=on_malformed,
            on_estimate=progress.estimate,
            ready=writer.ready,
            windows=ctx.windows,
        )
        if plan is None:
            outcome: ListOutcome = await listing
        else:
            # The new rows and the open ones are listed at the same time.
            outcome, (left, rereads) = await asyncio.gather(
                listing, _reread_open(ctx, plan, writer, on_malformed)
            )
            outcome.absorb(rereads)
            by_id = left
            res.reread_by_id = len(by_id)
            if by_id:
                await _retrieve(ctx.client, resource, by_id, writer)
        await writer.flush()
    finally:
        progress.close()
    malformed = writer.reasons.get(MALFORMED_ID, 0)
    if malformed:
        outcome.problem(
            f"{malformed:,} {resource} record(s) had a malformed id and were rejected "
            "(see _rejects.jsonl)"
        )
    complete = outcome.complete and outcome.variant is not None
    replace = complete and not incremental
    stats: MergeStats = await asyncio.get_running_loop().run_in_executor(
        workers.thread,
        lambda: ds.compact(
            writer.months,
            since_seq=since_seq,
            replace=replace,
            # A new or changed refund changes its payment's refunded amount.
            collect="payment_id" if resource == "refunds" else None,
        ),
    )
    new_high = high_water
    if writer.max_created is not None and complete:
        top = writer.max_created.isoformat()
        new_high = top if not high_water or top > high_water else high_water
    http: RequestStats = ctx.client.stats.snapshot() - before
    res.fetched, res.rejected = writer.fetched, writer.rejected
    res.new, res.updated, res.unchanged = stats.new, stats.updated, stats.unchanged
    res.requests, res.rate_limited, res.retries = http.requests, http.rate_limited, http.retries
    res.strategy, res.api_variant, res.complete = outcome.strategy, outcome.variant, complete
    res.listed, res.expected = outcome.listed, outcome.expected
    res.short_pages, res.refetched = outcome.short_pages, outcome.refetched
    res.rejects_by_reason, res.problems = dict(writer.reasons), list(outcome.problems)
    if not complete and not res.problems:
        res.problems.append(f"{resource}: the first list page could not be read")
    now = dt.datetime.now(dt.UTC).isoformat()
    ds.write_state(
        {
            **state,
            # An incomplete sync keeps the old mark, so the next one lists the gap again.
            "high_water": new_high if complete else high_water,
            "last_sync": now,
            "last_full_sync": now
            if (not incremental and complete)
            else state.get("last_full_sync"),
            "api_variant": outcome.variant or state.get("api_variant"),
            "strategy": outcome.strategy,
            "time_filters_ignored": outcome.time_filters_ignored,
            # What this sync's checks found (`gwtools check` reports an incomplete last sync).
            "completeness": res.report(),
        }
    )
    res.seconds = time.perf_counter() - started
    log.info("synced %s: %s", resource, res)
    return _OneResult(res, stats.changed)


@dataclass
class _Status:
    """The cached rows of one open status created before the cutoff, and how to re-read them."""

    status: str  # as the gateway names it (the filter value)
    rows: dict[str, int]  # id -> creation time
    probe: tuple[bytes, PageInfo] | None = None
    by_list: bool = False  # list the rest of the status (else: retrieve the rows not seen)

    @property
    def first(self) -> dt.datetime:
        return _from_us(min(self.rows.values()))


@dataclass
class _Plan:
    """What an incremental sync re-reads besides the rows created since ``since``."""

    since: dt.datetime
    #: the default cutoff: status lists stop there (later rows are in the main listing)
    until: dt.datetime
    variant: str | None
    #: creation times of every cached row, sorted (what listing a range costs)
    created: np.ndarray
    #: cached rows to re-read whatever their status (payments whose refunds changed): id -> created
    extra: dict[str, int]
    #: ids to re-read that are not cached: only their id is known
    unknown: list[str]
    statuses: list[_Status]


#: A status with fewer old open rows is retrieved by id without probing its list.
_PROBE_MIN_ROWS = 2


def _page_ids(info: PageInfo) -> set[str]:
    return {i for i in info.ids if i is not None}


async def _plan_incremental(
    ctx: SyncContext,
    ds: Dataset,
    high_water: str,
    extra_ids: set[str],
    on_malformed: Callable[[MalformedBodyError], None],
) -> _Plan:
    """List from the cheapest cutoff; older open rows by status lists or by id, the rest by id.

    What a status list is worth depends on how many of its old rows are still in the status,
    so the first page of each status's list (from its oldest cached row to the default
    cutoff) is fetched before choosing: see :func:`_probed_group`.
    """
    default = dt.datetime.fromisoformat(high_water) - ctx.overlap
    variant = ds.state().get("api_variant")
    # Refunds have no status_raw: their raw and canonical statuses are the same words.
    raw = "status_raw" if ds.resource == "payments" else "status"
    cached = ds.read_table(columns=list(dict.fromkeys(["id", "status", raw, "created_at"])))
    open_statuses = (
        _schema.OPEN_PAYMENT_STATUSES if ds.resource == "payments" else _schema.OPEN_REFUND_STATUSES
    )
    is_open = pc.is_in(
        cached.column("status"), value_set=pa.array(sorted(open_statuses), pa.large_string())
    )
    as_int = lambda t: t.column("created_at").cast(pa.int64()).to_numpy()  # noqa: E731
    old_open = cached.filter(pc.and_(is_open, pc.less(as_int(cached), _us(default))))
    extra = cached.filter(
        pc.is_in(cached.column("id"), value_set=pa.array(sorted(extra_ids), pa.large_string()))
    )
    created = np.sort(as_int(cached))
    del cached
    extra_at = dict(zip(extra.column("id").to_pylist(), as_int(extra).tolist(), strict=True))
    rows: dict[str, dict[str, int]] = {}  # status -> id -> created
    for ident, status, at in zip(
        old_open.column("id").to_pylist(),
        old_open.column(raw).to_pylist(),
        as_int(old_open).tolist(),
        strict=True,
    ):
        rows.setdefault(status, {})[ident] = at
    statuses = [_Status(status, r) for status, r in sorted(rows.items())]
    extra_created = np.array(list(extra_at.values()), dtype=np.int64)

    def cutoff(groups: Sequence[OpenGroup]) -> int:
        return choose_cutoff(created, extra_created, _us(default), groups=groups, variant=variant)

    # A status whose rows the cutoff covers even if they all stay (its list at its cheapest)
    # needs no probe.
    optimistic = cutoff([OpenGroup(np.sort(list(s.rows.values()))) for s in statuses])
    to_probe = [s for s in statuses if len(s.rows) >= _PROBE_MIN_ROWS and _us(s.first) < optimistic]

    async def probe(s: _Status) -> None:
        with contextlib.suppress(InvalidRequestError):  # not filterable: by id
            s.probe = await first_page(
                ctx.client,
                ds.resource,
                since=s.first,
                until=default,
                filters={"status": s.status},
                on_malformed=on_malformed,
            )

    await asyncio.gather(*(probe(s) for s in to_probe))
    groups = [_probed_group(s, variant) for s in statuses]
    chosen = cutoff(groups)
    at = np.array([chosen], dtype=np.int64)
    for s, g in zip(statuses, groups, strict=True):
        by_id_cost, by_status_cost = g.costs(at, variant, PAGE_LIMIT)
        s.by_list = s.probe is not None and bool(by_status_cost[0] < by_id_cost[0])
        s.rows = {i: c for i, c in s.rows.items() if c < chosen}
    return _Plan(
        since=_from_us(chosen),
        until=default,
        variant=variant,
        created=created,
        extra={i: c for i, c in extra_at.items() if c < chosen},
        unknown=sorted(i for i in extra_ids if i not in extra_at),
        statuses=[s for s in statuses if s.rows or s.probe],
    )


def _probed_group(s: _Status, variant: str | None) -> OpenGroup:
    """What the first page of a status's list says about its cached rows (see OpenGroup).

    Cached rows within the page's time span that are not on it have left the status. For the
    older ones, variant A's total says how many rows are still in the status. Variant B gives
    no total; its first page holds the newest rows, the ones most likely to have moved on, so
    their share would overstate how many older rows left: those are expected to stay (the
    rows left over are relisted or retrieved by id after the lists, see :func:`_relist_from`).
    """
    created = np.sort(np.array(list(s.rows.values()), dtype=np.int64))
    if s.probe is None:  # not probed, or not listable: only by id
        return OpenGroup(created, stay=0.0, rest=0.0)
    _, info = s.probe
    on_page = _page_ids(info)
    complete = not info.has_more if info.variant == "B" else (info.total_pages or 1) <= 1
    stamps = [t for t in (info.first_created, info.last_created) if t is not None]
    # A complete list spans all the rows; otherwise the page spans its own time range.
    low = _us(min(stamps)) if stamps and not complete else np.iinfo(np.int64).min
    unseen = [c for i, c in s.rows.items() if i not in on_page]
    left = np.sort(np.array([c for c in unseen if c >= low], dtype=np.int64))
    unknown = np.sort(np.array([c for c in unseen if c < low], dtype=np.int64))
    if complete:
        return OpenGroup(unknown, left, stay=1.0, rest=0.0)
    if info.variant == "A":
        still = max(0, (info.total or 0) - info.count)  # in the status, older than the page
        stay = min(1.0, still / len(unknown)) if len(unknown) else 1.0
        return OpenGroup(unknown, left, stay=stay, rest=float(info.total_pages or 1))
    return OpenGroup(unknown, left, stay=1.0, rest=float(list_cost(len(unknown), variant)))


def _relist_from(
    created: np.ndarray, todo: np.ndarray, until: int, variant: str | None
) -> int | None:
    """Where listing again up to ``until`` beats retrieving the ``todo`` rows by id, if anywhere.

    Listing from ``x`` re-reads every ``todo`` row created at or after ``x``; the others are
    retrieved by id. ``created``: every cached row's creation time, sorted.
    """
    todo = np.sort(todo)
    if len(todo) == 0:
        return None
    listed = np.searchsorted(created, until, side="left") - np.searchsorted(
        created, todo, side="left"
    )
    cost = list_cost(listed, variant) + np.arange(len(todo))
    best = len(cost) - 1 - int(np.argmin(cost[::-1]))  # on a tie, the latest: fewer rows listed
    return int(todo[best]) if cost[best] < len(todo) else None


async def _reread_open(
    ctx: SyncContext,
    plan: _Plan,
    writer: BatchWriter,
    on_malformed: Callable[[MalformedBodyError], None],
) -> tuple[list[str], ListOutcome]:
    """List the statuses the plan lists; then re-read what no list returned.

    Old open rows not returned and the plan's other rows go by id, or, when there are more of
    them than expected, by listing their creation range again where that is cheaper. Returns
    the ids to retrieve one by one, and what the lists' completeness checks found.
    """
    found = ListOutcome()
    seen: set[str] = set()  # across statuses: a row can move from one open status to another

    async def sink(body: bytes, info: PageInfo) -> None:
        seen.update(_page_ids(info))
        await writer.add_page(body, info)

    for s in plan.statuses:
        if s.probe is not None:  # current rows, whatever is decided: keep them
            await sink(*s.probe)

    async def one(s: _Status) -> ListOutcome:
        return await list_pages(
            ctx.client,
            writer.resource,
            sink,
            since=s.first,
            until=plan.until,
            on_malformed=on_malformed,
            ready=writer.ready,
            filters={"status": s.status},
            first=s.probe,
        )

    # All statuses at once: the client's pacing, not round trips, sets the speed.
    for outcome in await asyncio.gather(*(one(s) for s in plan.statuses if s.by_list)):
        found.absorb(outcome)
    todo = dict(plan.extra)
    for s in plan.statuses:
        todo.update((i, c) for i, c in s.rows.items() if i not in seen)
    start = _relist_from(
        plan.created, np.array(list(todo.values()), dtype=np.int64), _us(plan.since), plan.variant
    )
    if start is not None:
        outcome = await list_pages(
            ctx.client,
            writer.resource,
            writer.add_page,
            since=_from_us(start),
            until=plan.since,
            on_malformed=on_malformed,
            ready=writer.ready,
        )
        found.absorb(outcome)
        todo = {i: c for i, c in todo.items() if c < start}
    return sorted(todo) + plan.unknown, found


async def _retrieve(client: Client, resource: str, ids: Sequence[str], writer: BatchWriter) -> None:
    """Retrieve ids concurrently (the client paces them), in chunks to bound memory."""

    async def one(ident: str) -> tuple[Variant, bytes] | None:
        try:
            return await client.get(object_path(resource, ident), parse=read_object)
        except NotFoundError as exc:
            writer.add_rejects(
                [
                    Reject(
                        resource,
                        f"cached id no longer found on the gateway: {exc.message}",
                        orjson.dumps({"id": ident}).decode(),
                        "not found",
                    )
                ]
            )
            return None
        except MalformedBodyError as exc:
            writer.add_rejects(
                [
                    Reject(
                        resource,
                        f"unusable body for {ident}: {exc.message}",
                        exc.snippet,
                        "unusable body",
                    )
                ]
            )
            return None

    chunk = 1000
    for i in range(0, len(ids), chunk):
        bodies = await asyncio.gather(*(one(x) for x in ids[i : i + chunk]))
        await writer.add_objects([b for b in bodies if b is not None])
