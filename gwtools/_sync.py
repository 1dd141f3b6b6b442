"""One sync: list what can have changed, normalise in batches, merge into the cache.

A full sync lists everything. An incremental sync (the default once a dataset has a state)
lists rows created since the high-water mark minus a safety overlap, and re-reads every cached
row still in a non-final state, plus every payment whose refunds are new or changed (a refund
changes its payment's ``refunded``/``refunded_amount``). Those re-reads are done either by
listing from an earlier creation time or by retrieving ids one by one, whichever needs fewer
requests (:func:`choose_cutoff`). Refunds are therefore synced before payments.

Pages are normalised and written every ``pages_per_batch`` pages in a worker thread, so
memory stays flat; touched months are compacted at the end and the state is written last.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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
from gwtools._cache import Dataset, MergeStats, _next_seq
from gwtools._client import Client, MalformedBodyError, RequestStats
from gwtools._config import Settings
from gwtools._errors import InvalidRequestError, NotFoundError
from gwtools._normalize import PageInfo, Reject, normalize_bodies
from gwtools._paging import PAGE_LIMIT, ListOutcome, list_pages
from gwtools._schema import Resource

__all__ = ["ResourceResult", "SyncResult", "choose_cutoff", "run_sync"]

log = logging.getLogger("gwtools")

#: Rows created this long before the high-water mark are listed again, in case the gateway
#: committed them late or clocks disagree.
DEFAULT_OVERLAP = dt.timedelta(minutes=10)
PAGES_PER_BATCH = 50
_warned_statuses: set[tuple[str, str]] = set()


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
        return all(r.complete for r in self.resources.values())

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
        note = (
            ""
            if self.complete
            else "\nincomplete: some pages could not be read; the next sync retries them"
        )
        return "\n".join(lines) + note

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
        note = (
            ""
            if self.complete
            else "<p><b>incomplete</b>: the next sync retries what could not be read</p>"
        )
        return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"

    def __repr__(self) -> str:
        return (
            f"SyncResult(fetched={self.fetched}, new={self.new}, updated={self.updated}, "
            f"unchanged={self.unchanged}, rejected={self.rejected}, requests={self.requests}, "
            f"rate_limited={self.rate_limited}, retries={self.retries}, seconds={self.seconds:.2f})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            **{f: getattr(self, f) for f in (*_FIELDS, *_HTTP)},
            "resources": {k: vars(v) for k, v in self.resources.items()},
        }


def _warn_unknown(resource: str, statuses: Iterable[str]) -> None:
    for status in sorted(statuses):
        if (resource, status) in _warned_statuses:
            continue
        _warned_statuses.add((resource, status))
        warnings.warn(
            f"the gateway sent {resource} with status {status!r}, which gwtools does not know; "
            "those rows have status 'unknown' (the raw value is in status_raw)",
            GatewayDataWarning,
            stacklevel=2,
        )


def _envelope(objects: Sequence[tuple[bytes, str]]) -> list[bytes]:
    """Retrieved single objects (body, variant) -> list envelopes, for normalize_bodies."""
    a = [b for b, v in objects if v == "A"]
    b_ = [b for b, v in objects if v != "A"]
    out = []
    if a:
        meta = b'"meta":{"total":%d,"page":1,"limit":%d,"totalPages":1}' % (len(a), len(a))
        out.append(b'{"data":[' + b",".join(a) + b"]," + meta + b"}")
    if b_:
        out.append(b'{"object":"list","data":[' + b",".join(b_) + b'],"has_more":false}')
    return out


@dataclass
class BatchOutcome:
    """What writing one batch produced."""

    months: set[str] = field(default_factory=set)
    rejected: int = 0
    max_created: dt.datetime | None = None
    payment_ids: set[str] = field(default_factory=set)
    unknown_statuses: set[str] = field(default_factory=set)


def write_batch(
    path: str, resource: Resource, livemode: bool, sync_id: str, bodies: list[bytes]
) -> BatchOutcome:
    """Normalise raw bodies and write them as part files (runs in the writer thread)."""
    ds = Dataset(path, resource)
    batch = normalize_bodies(resource, bodies, livemode=livemode)
    del bodies
    out = BatchOutcome(unknown_statuses=set(batch.unknown_statuses))
    if batch.rejects:
        out.rejected = ds.append_rejects(batch.rejects, sync_id=sync_id)
    if len(batch.frame):
        table = pa.Table.from_pandas(batch.frame, schema=ds.schema, preserve_index=False)
        out.months = ds.write_batch(table)
        out.max_created = pc.max(table.column("created_at")).as_py()
        if resource == "refunds":
            out.payment_ids = {p for p in pc.unique(table.column("payment_id")).to_pylist() if p}
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
        self.max_created: dt.datetime | None = None
        self.payment_ids: set[str] = set()

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

    async def add_objects(self, objects: Sequence[tuple[bytes, str]]) -> None:
        self.fetched += len(objects)
        self.on_rows(len(objects))
        self.bodies.extend(_envelope(objects))
        await self.flush()

    def add_rejects(self, rejects: Sequence[Any]) -> None:
        self.rejected += self.dataset.append_rejects(rejects, sync_id=self.sync_id)

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
        self.payment_ids |= out.payment_ids
        if out.max_created is not None and (
            self.max_created is None or out.max_created > self.max_created
        ):
            self.max_created = out.max_created


def choose_cutoff(
    cached_created: np.ndarray,
    candidate_created: np.ndarray,
    default: np.int64 | int,
    page_limit: int = PAGE_LIMIT,
    open_created: np.ndarray | None = None,
) -> int:
    """The creation time to list from so that re-reading what may have changed costs fewest requests.

    Listing from ``c`` costs one request per ``page_limit`` cached rows created at or after
    ``c``. Before ``c``, every candidate costs one retrieve by id, and every row in an open
    state (``open_created``) a ``1/page_limit`` share of a status-filtered list. ``c`` is at
    most ``default`` (the high-water mark minus the overlap). Times are integers.
    """
    cached = np.sort(cached_created)
    cands = np.sort(candidate_created[candidate_created < default])
    opens = np.sort(open_created[open_created < default]) if open_created is not None else cands[:0]
    options = np.unique(np.concatenate([cands, opens, [default]]))
    listed = len(cached) - np.searchsorted(cached, options, side="left")
    by_id = np.searchsorted(cands, options, side="left")
    by_status = np.ceil(np.searchsorted(opens, options, side="left") / page_limit)
    cost = np.ceil(listed / page_limit) + by_id + by_status
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
    ds.remove_temporaries()
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
        writer.add_rejects(
            [Reject(resource, f"unusable response body from {exc.url}: {exc.message}", exc.snippet)]
        )

    plan = _plan_incremental(ctx, ds, str(high_water), extra_ids) if incremental else None
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
            outcome, (left, listed_all) = await asyncio.gather(
                listing, _reread_open(ctx, plan, writer, on_malformed)
            )
            outcome.complete = outcome.complete and listed_all
            by_id = plan.by_id + left
            res.reread_by_id = len(by_id)
            if by_id:
                await _retrieve(ctx.client, resource, by_id, writer)
        await writer.flush()
    finally:
        progress.close()
    complete = outcome.complete and outcome.variant is not None
    replace = complete and not incremental
    stats: MergeStats = await asyncio.get_running_loop().run_in_executor(
        workers.thread, lambda: ds.compact(writer.months, since_seq=since_seq, replace=replace)
    )
    new_high = high_water
    if writer.max_created is not None and complete:
        top = writer.max_created.isoformat()
        new_high = top if not high_water or top > high_water else high_water
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
        }
    )
    http: RequestStats = ctx.client.stats.snapshot() - before
    res.fetched, res.rejected = writer.fetched, writer.rejected
    res.new, res.updated, res.unchanged = stats.new, stats.updated, stats.unchanged
    res.requests, res.rate_limited, res.retries = http.requests, http.rate_limited, http.retries
    res.strategy, res.api_variant, res.complete = outcome.strategy, outcome.variant, complete
    res.seconds = time.perf_counter() - started
    log.info("synced %s: %s", resource, res)
    return _OneResult(res, writer.payment_ids)


@dataclass
class _Plan:
    """What an incremental sync re-reads besides the rows created since ``since``."""

    since: dt.datetime
    by_id: list[str]
    #: raw status -> (ids cached in it and created before ``since``, earliest creation)
    open_before: dict[str, tuple[set[str], dt.datetime]]


def _plan_incremental(ctx: SyncContext, ds: Dataset, high_water: str, extra_ids: set[str]) -> _Plan:
    """List from the cheapest cutoff; older open rows by status lists, the rest by id."""
    default = dt.datetime.fromisoformat(high_water) - ctx.overlap
    # Refunds have no status_raw: their raw and canonical statuses are the same words.
    raw = "status_raw" if ds.resource == "payments" else "status"
    cached = ds.read_table(columns=list(dict.fromkeys(["id", "status", raw, "created_at"])))
    open_statuses = (
        _schema.OPEN_PAYMENT_STATUSES if ds.resource == "payments" else _schema.OPEN_REFUND_STATUSES
    )
    is_open = pc.is_in(
        cached.column("status"), value_set=pa.array(sorted(open_statuses), pa.large_string())
    )
    opens = cached.filter(is_open)
    extra = cached.filter(
        pc.is_in(cached.column("id"), value_set=pa.array(sorted(extra_ids), pa.large_string()))
    )
    as_int = lambda t: t.column("created_at").cast(pa.int64()).to_numpy()  # noqa: E731
    cutoff = choose_cutoff(as_int(cached), as_int(extra), _us(default), open_created=as_int(opens))
    older = pc.less(opens.column("created_at").cast(pa.int64()), cutoff)
    open_before: dict[str, tuple[set[str], dt.datetime]] = {}
    for row in opens.filter(older).to_pylist():
        ids, first = open_before.get(row[raw], (set(), row["created_at"]))
        ids.add(row["id"])
        open_before[row[raw]] = (ids, min(first, row["created_at"]))
    by_id = extra.filter(pc.less(extra.column("created_at").cast(pa.int64()), cutoff))
    ids = by_id.column("id").to_pylist()
    # Refunded payments not in the cache at all: only their id is known.
    known = set(extra.column("id").to_pylist())
    ids += sorted(i for i in extra_ids if i not in known)
    return _Plan(_from_us(cutoff), ids, open_before)


async def _reread_open(
    ctx: SyncContext,
    plan: _Plan,
    writer: BatchWriter,
    on_malformed: Callable[[MalformedBodyError], None],
) -> tuple[list[str], bool]:
    """List each open status from its earliest cached row; rows that left it go by id.

    Returns the ids to retrieve one by one, and whether every list was complete.
    """

    async def one(status: str, ids: set[str], first: dt.datetime) -> tuple[list[str], bool]:
        seen: set[str] = set()

        async def sink(body: bytes, info: PageInfo) -> None:
            seen.update(
                r["id"]
                for r in orjson.loads(body).get("data", [])
                if isinstance(r, dict) and "id" in r
            )
            await writer.add_page(body, info)

        try:
            outcome = await list_pages(
                ctx.client,
                writer.resource,
                sink,
                since=first,
                on_malformed=on_malformed,
                ready=writer.ready,
                filters={"status": status},
            )
        except InvalidRequestError:
            return sorted(ids), True  # the gateway does not filter on this status: by id
        return sorted(ids - seen), outcome.complete

    # All statuses at once: the client's pacing, not round trips, sets the speed.
    done = await asyncio.gather(
        *(one(status, ids, first) for status, (ids, first) in sorted(plan.open_before.items()))
    )
    return [i for left, _ in done for i in left], all(ok for _, ok in done)


def _object(body: bytes) -> tuple[bytes, str]:
    """A retrieved object's body and variant (B objects carry ``created``, as in normalisation)."""
    obj = orjson.loads(body)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return body, "B" if "created" in obj else "A"


async def _retrieve(client: Client, resource: str, ids: Sequence[str], writer: BatchWriter) -> None:
    """Retrieve ids concurrently (the client paces them), in chunks to bound memory."""

    async def one(ident: str) -> tuple[bytes, str] | None:
        try:
            return await client.get(f"{resource}/{ident}", parse=_object)
        except NotFoundError as exc:
            writer.add_rejects(
                [
                    Reject(
                        resource,
                        f"cached id no longer found on the gateway: {exc.message}",
                        orjson.dumps({"id": ident}).decode(),
                    )
                ]
            )
            return None
        except MalformedBodyError as exc:
            writer.add_rejects(
                [Reject(resource, f"unusable body for {ident}: {exc.message}", exc.snippet)]
            )
            return None

    chunk = 1000
    for i in range(0, len(ids), chunk):
        bodies = await asyncio.gather(*(one(x) for x in ids[i : i + chunk]))
        await writer.add_objects([b for b in bodies if b is not None])
