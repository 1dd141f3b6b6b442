"""One sync, run: list what can have changed, hand the pages to the writer, merge into the cache.

:func:`run_sync` (what :meth:`gwtools.Gateway.sync` runs) takes both datasets' locks and syncs
each resource with :func:`_sync_one`, refunds first: a new or changed refund changes its
payment, which the payments sync then re-reads. For one resource:

1. A full sync lists everything. An incremental sync (the default once a dataset has a state)
   asks the plan (``_plan.py``) what to re-read: it reads the cached rows, fetches the first
   page of the status lists the plan wants to see, and gets the cutoff to list from and how to
   re-read the older open rows (:func:`_plan_incremental`).
2. The new rows and the open ones are listed at the same time (``_paging.list_pages``;
   :func:`_reread_open`); what no list returned is listed again or retrieved by id
   (:func:`_retrieve`).
3. Every page goes to the :class:`~gwtools.sync._writer.BatchWriter`, which normalises and
   stages batches off the loop; the touched months are compacted at the end, and the state
   (high-water mark, completeness report) is written last, advanced only when complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
from filelock import FileLock, Timeout

from gwtools import _schema
from gwtools._config import Settings, shown_base_url
from gwtools._errors import CacheError, InvalidRequestError, NotFoundError
from gwtools._schema import Resource
from gwtools.cache._dataset import Dataset, MergeStats, _next_seq
from gwtools.http._client import Client, MalformedBodyError, RequestStats
from gwtools.http._paging import ListOutcome, first_page, list_pages
from gwtools.http._wire import MALFORMED_ID, PageInfo, Variant, object_path, read_object
from gwtools.normalize._normalize import Reject
from gwtools.sync._plan import (
    DEFAULT_OVERLAP,
    _Plan,
    columns,
    created_us,
    default_cutoff,
    from_us,
    open_statuses,
    survey,
)
from gwtools.sync._progress import Progress
from gwtools.sync._result import GatewayDataWarning, ResourceResult, SyncResult
from gwtools.sync._writer import PAGES_PER_BATCH, BatchWriter, Workers

__all__ = ["SyncContext", "run_sync"]

log = logging.getLogger("gwtools")

_RESOURCES = _schema.RESOURCES
#: Key in the refunds state: ids of payments whose refunds changed and that a payments sync
#: has not re-read yet (a refund changes its payment's refunded_amount).
_OWED = "payments_to_reread"

OnMalformed = Callable[[MalformedBodyError], None]

#: The reject reason of a row re-read by id whose answer stayed unusable: the row may have
#: changed, so the sync is incomplete and the next one reads it again.
UNREAD = "unusable body on re-read"


@dataclass
class SyncContext:
    """Everything a sync needs besides the resources (the Gateway makes one per sync)."""

    client: Client
    settings: Settings
    overlap: dt.timedelta = DEFAULT_OVERLAP
    pages_per_batch: int = PAGES_PER_BATCH
    progress: bool | None = None
    windows: int | None = None
    #: (resource, API variant, unknown status) already warned about: the Gateway's, so that
    #: each is warned about once per Gateway rather than once per sync
    warned: set[tuple[str, str, str]] = field(default_factory=set)


async def run_sync(
    ctx: SyncContext,
    resources: Sequence[Resource],
    *,
    full: bool = False,
    take_over: bool | None = None,
) -> SyncResult:
    """Sync ``resources`` (refunds first, so their payments can be re-read) into the cache.

    A dataset another gateway filled is refused unless ``take_over`` (default: ``full``; a
    full sync the caller did not ask for, as the embedded sandbox's first of a process, may
    not replace another gateway's rows)."""
    take_over = full if take_over is None else take_over
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
            await _acquire(lock)
            acquired.append(lock)
        # Before either dataset is touched or anything listed: a payments dataset refused
        # only after the refunds were synced would leave half a sync behind.
        for ds in datasets.values():
            ds.check_version()
            if not take_over:  # a full sync replaces every row: it may take the folder over
                _refuse_other_gateway(ds, s)
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
            result.resources[r] = res
            if r == "payments" and owed and res.complete:
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


#: How often a sync waiting for another one's lock tries it again, in seconds.
LOCK_POLL = 0.1


async def _acquire(lock: FileLock) -> None:
    """Take a dataset's sync lock, waiting on this loop for another sync to end.

    Tried without blocking, between sleeps: a blocking acquire in a worker thread outlives a
    sync cancelled while it waits (Ctrl-C in a notebook), then takes the lock once the other
    sync ends and never releases it, so every later sync of the cache waits for ever.
    """
    said = False
    while True:
        try:
            lock.acquire(timeout=0)
            return
        except Timeout:
            if not said:  # else a sync beside another one (a notebook's) looks hung
                said = True
                log.warning(
                    "another sync of the cache at %s is running; this sync waits for it to "
                    "end (Ctrl-C stops this one)",
                    Path(lock.lock_file).parent,
                )
            await asyncio.sleep(LOCK_POLL)


def _set_owed(refunds: Dataset, ids: set[str]) -> None:
    state = refunds.state()
    state[_OWED] = sorted(ids)
    refunds.write_state(state)


def gateway_record(settings: Settings) -> dict[str, Any]:
    """Which gateway a sync fetches from, as its datasets' state records it: the base URL,
    the key's mode and the key as :func:`gwtools.secrets.mask_key` shows it (its prefix and
    last four characters, never more); or the embedded sandbox, whose address and key change
    with every process."""
    if settings.embedded:
        return {"embedded_sandbox": True, "mode": settings.mode}
    return {
        "base_url": shown_base_url(settings.base_url, settings.api_key),
        "mode": settings.mode,
        "key": settings.masked_key,
    }


def _same_gateway(recorded: Any, here: dict[str, Any]) -> bool:
    """Whether the gateway ``recorded`` in a dataset's state is the one of ``here``: same
    mode, and the same address or the same key. One of them may change: a gateway moved to a
    new address, or a key rotated. A record without them (hand-edited) is taken as this one."""
    if not isinstance(recorded, dict) or recorded == here:
        return True
    if recorded.get("embedded_sandbox") or here.get("embedded_sandbox"):
        return bool(recorded.get("embedded_sandbox") and here.get("embedded_sandbox"))
    if recorded.get("mode", here["mode"]) != here["mode"]:
        return False
    url, key = recorded.get("base_url"), recorded.get("key")
    return (url is None and key is None) or url == here["base_url"] or key == here["key"]


def _describe_record(record: dict[str, Any]) -> str:
    if record.get("embedded_sandbox"):
        return "the embedded sandbox"
    return f"{record.get('base_url')} (key {record.get('key')})"


def _refuse_other_gateway(ds: Dataset, settings: Settings) -> None:
    """Refuse, before anything is touched, an incremental sync into a dataset another
    gateway filled: it would list from that gateway's high-water mark and mix both gateways'
    rows. A dataset without a record (written before it was kept) is taken as this one's."""
    recorded = ds.state().get("gateway")
    here = gateway_record(settings)
    if recorded is None or _same_gateway(recorded, here):
        return
    raise CacheError(
        f"the cache at {ds.path.parent} holds {ds.resource} synced from "
        f"{_describe_record(recorded)}, and this sync is from {_describe_record(here)}: "
        "synced into one cache, their rows would be mixed, each sync listing from the other's "
        "high-water mark. Nothing was changed. Give this gateway a cache of its own: another "
        "account name (account='…' in gwtools.connect, --account NAME) or another cache "
        "folder (cache_dir=, --cache-dir). If it is the same gateway at a new address with a "
        "new key, a full sync (gw.sync(full=True), `gwtools sync --full`) lists everything "
        "from it, replaces the cached rows and records the new gateway"
    )


async def _sync_one(
    ctx: SyncContext,
    ds: Dataset,
    *,
    full: bool,
    workers: Workers,
    extra_ids: set[str],
) -> ResourceResult:
    """Sync one resource: list (and re-read), write, compact, then record the state."""
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
    progress = Progress(ctx.progress, resource)
    writer = BatchWriter(
        ds,
        livemode=ctx.settings.mode == "live",
        sync_id=sync_id,
        workers=workers,
        pages_per_batch=ctx.pages_per_batch,
        on_rows=progress.update,
        warned=ctx.warned,
        secret=ctx.settings.api_key,
    )

    def on_malformed(exc: MalformedBodyError) -> None:
        reason = f"unusable response body from {exc.url}: {exc.message}"
        writer.add_rejects([Reject(resource, reason, exc.snippet, "unusable body")])

    try:
        if incremental:
            try:
                plan, probes = await _plan_incremental(
                    ctx, ds, str(high_water), extra_ids, on_malformed
                )
            except _MarkLowered:
                # Nothing fetched or written yet: sync again from the lowered mark, so this
                # sync fetches the damaged file's month again.
                return await _sync_one(ctx, ds, full=full, workers=workers, extra_ids=extra_ids)
            outcome, res.reread_by_id = await _list_incremental(
                ctx, plan, probes, writer, progress, on_malformed
            )
            was = state.get("api_variant")
            if outcome.complete and was and outcome.variant and outcome.variant != was:
                # The cached rows this sync did not list again keep the other variant's
                # values (its statuses, fields, nulls): list everything, and replace them.
                log.warning(
                    "the gateway now answers in variant %s, the cached %s in variant %s: "
                    "listing them all again",
                    outcome.variant,
                    resource,
                    was,
                )
                outcome = await _list(ctx, writer, progress, on_malformed, since=None)
                incremental = False
                res.mode = "full"
        else:
            outcome = await _list(ctx, writer, progress, on_malformed, since=None)
        await writer.flush()
    finally:
        progress.close()
    # Every reject of this sync is written: it replaces the earlier syncs' lines for them.
    await asyncio.to_thread(ds.prune_rejects, sync_id)
    malformed = writer.reasons.get(MALFORMED_ID, 0)
    if malformed:
        outcome.problem(
            f"{malformed:,} {resource} record(s) had a malformed id and were rejected "
            "(see _rejects.jsonl)"
        )
    unread = writer.reasons.get(UNREAD, 0)
    if unread:
        outcome.problem(
            f"{unread:,} {resource} record(s) re-read by id got an unusable answer and may be "
            "out of date (see _rejects.jsonl); the next sync reads them again"
        )
    complete = outcome.complete and outcome.variant is not None
    owed: set[str] = set()
    if resource == "refunds":
        # Before the merge, the payments of every staged refund are owed a re-read: killed
        # from here until the state is written, the next sync still re-reads them (more
        # than it must, never fewer). The state written last keeps only the changed ones.
        owed = set(state.get(_OWED, []))
        staged = await asyncio.to_thread(ds.staged_values, "payment_id")
        if not staged <= owed:
            state = {**state, _OWED: sorted(owed | staged)}
            ds.write_state(state)
    stats: MergeStats = await asyncio.get_running_loop().run_in_executor(
        workers.thread,
        lambda: ds.compact(
            writer.months,
            since_seq=since_seq,
            replace=complete and not incremental,
            # A new or changed refund changes its payment's refunded amount.
            collect="payment_id" if resource == "refunds" else None,
        ),
    )
    if stats.dropped or (stats.quarantined and not (complete and not incremental)):
        # Files whose pages could not be read held rows this sync did not list again (a
        # cached file's move lowered the high-water mark to its month's start): keep the
        # mark, so the next sync fetches those rows again.
        outcome.problem(
            f"{len(stats.quarantined) + len(stats.dropped)} {resource} file(s) could not be "
            f"read (cached ones were moved to {ds.quarantine_path}); the next sync fetches "
            "their rows again"
        )
        complete = False
        state = {**state, "high_water": ds.state().get("high_water")}
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
    if resource == "refunds":
        # A new or changed refund changes its payment's refunded amount: owed until a
        # payments sync has re-read it (written with the high-water mark, in one step).
        state = {**state, _OWED: sorted(owed | stats.changed)}
    _write_state(ds, state, res, outcome, writer, incremental=incremental, settings=ctx.settings)
    res.seconds = time.perf_counter() - started
    log.info("synced %s: %s", resource, res)
    return res


async def _list(
    ctx: SyncContext,
    writer: BatchWriter,
    progress: Progress,
    on_malformed: OnMalformed,
    *,
    since: dt.datetime | None,
) -> ListOutcome:
    """The main listing: every row created at or after ``since`` (None: all)."""
    return await list_pages(
        ctx.client,
        writer.resource,
        writer.add_page,
        since=since,
        on_malformed=on_malformed,
        on_estimate=progress.estimate,
        ready=writer.ready,
        windows=ctx.windows,
    )


class _MarkLowered(Exception):
    """Planning moved a damaged file to quarantine and lowered the high-water mark."""


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The error that failed a task group first (its first leaf): the others are what the
    cancellation it caused left behind."""
    first = group.exceptions[0]
    return _first_error(first) if isinstance(first, BaseExceptionGroup) else first


@contextlib.asynccontextmanager
async def _together() -> AsyncIterator[asyncio.TaskGroup]:
    """A task group whose first failure cancels the other tasks and is raised itself.

    Not ``asyncio.gather``: a failure there leaves the other listings running on the loop,
    spending the rate limit (and writing staged batches) after the sync has given up and
    released its locks. Not the group itself either: callers and the CLI expect the gwtools
    error (its class and message), as a single listing raises it.
    """
    failed: BaseException | None = None
    try:
        async with asyncio.TaskGroup() as tg:
            yield tg
    except BaseExceptionGroup as group:
        failed = _first_error(group)
    if failed is not None:
        raise failed  # outside the handler: no __context__ leading back to the group


async def _plan_incremental(
    ctx: SyncContext,
    ds: Dataset,
    high_water: str,
    extra_ids: set[str],
    on_malformed: OnMalformed,
) -> tuple[_Plan, dict[str, tuple[bytes, PageInfo]]]:
    """The plan of an incremental sync (see ``_plan.py``), and the probed first pages of the
    status lists, by status.

    What a status list is worth depends on how many of its old rows are still in the status,
    so the first page of each status's list the plan asks about is fetched before choosing.
    """
    cached, created = _candidates(ds, default_cutoff(high_water, ctx.overlap), extra_ids)
    if ds.state().get("high_water") != high_water:
        raise _MarkLowered  # a damaged file moved aside took rows the plan would not list
    draft = survey(
        cached,
        ds.resource,
        high_water=high_water,
        overlap=ctx.overlap,
        variant=ds.state().get("api_variant"),
        extra_ids=extra_ids,
        created=created,
    )
    statuses = {s.status: s for s in draft.statuses}
    probes: dict[str, tuple[bytes, PageInfo]] = {}

    async def probe(status: str) -> None:
        with contextlib.suppress(InvalidRequestError):  # not filterable: by id
            got = await first_page(
                ctx.client,
                ds.resource,
                since=statuses[status].first,
                until=draft.until,
                filters={"status": status},
                on_malformed=on_malformed,
            )
            if got is not None:
                probes[status] = got

    async with _together() as tg:
        for s in draft.to_probe():
            tg.create_task(probe(s))
    return draft.plan({s: info for s, (_, info) in probes.items()}), probes


def _candidates(ds: Dataset, default: int, extra_ids: set[str]) -> tuple[pa.Table, np.ndarray]:
    """The cached rows an incremental sync may re-read (in an open status, or among
    ``extra_ids``) and the creation times the plan prices lists with: from the earliest of
    those rows, or the default cutoff, on. Only these are read: every row's id and status
    took 36 s and 13 GB at 100M rows (``benchmarks/plan.py``)."""
    cols = columns(ds.resource)
    # A file these reads find damaged (its footer read, its pages do not) is moved aside.
    found = [ds.read_table(status=open_statuses(ds.resource), columns=cols, quarantine=True)]
    if extra_ids:
        found.append(ds.read_table(ids=extra_ids, columns=cols, quarantine=True))
    cached = pa.concat_tables(found)
    at = created_us(cached)
    lowest = min(default, int(at.min())) if len(at) else default
    # (a second early: a time in float seconds may round past the row itself)
    times = ds.read_table(
        since=from_us(lowest - 1_000_000), columns=["created_at"], quarantine=True
    )
    return cached, created_us(times)


async def _list_incremental(
    ctx: SyncContext,
    plan: _Plan,
    probes: dict[str, tuple[bytes, PageInfo]],
    writer: BatchWriter,
    progress: Progress,
    on_malformed: OnMalformed,
) -> tuple[ListOutcome, int]:
    """List from the plan's cutoff while re-reading the older open rows; then retrieve what is
    left by id. Returns what the lists found, and how many rows were retrieved by id."""
    # The new rows and the open ones are listed at the same time.
    async with _together() as tg:
        main = tg.create_task(_list(ctx, writer, progress, on_malformed, since=plan.since))
        reread = tg.create_task(_reread_open(ctx, plan, probes, writer, on_malformed))
    outcome, (by_id, rereads) = main.result(), reread.result()
    outcome.absorb(rereads)
    if by_id:
        await _retrieve(ctx.client, writer.resource, by_id, writer)
    return outcome, len(by_id)


async def _reread_open(
    ctx: SyncContext,
    plan: _Plan,
    probes: dict[str, tuple[bytes, PageInfo]],
    writer: BatchWriter,
    on_malformed: OnMalformed,
) -> tuple[list[str], ListOutcome]:
    """List the statuses the plan lists; then re-read what no list returned
    (:meth:`_Plan.leftover`). Returns the ids to retrieve one by one, and what the lists'
    completeness checks found."""
    found = ListOutcome()
    seen: set[str] = set()  # across statuses: a row can move from one open status to another

    async def sink(body: bytes, info: PageInfo) -> None:
        seen.update(i for i in info.ids if i is not None)
        await writer.add_page(body, info)

    for s in plan.statuses:
        # Current rows, whatever is decided: keep them. A status listed below gets its
        # probed page as its first page, handed over by the list (not twice).
        if s.status in probes and not s.by_list:
            await sink(*probes[s.status])

    async def one(status: str, since: dt.datetime) -> ListOutcome:
        return await list_pages(
            ctx.client,
            writer.resource,
            sink,
            since=since,
            until=plan.until,
            on_malformed=on_malformed,
            ready=writer.ready,
            filters={"status": status},
            first=probes[status],
        )

    # All statuses at once: the client's pacing, not round trips, sets the speed.
    async with _together() as tg:
        listed = [tg.create_task(one(s.status, s.first)) for s in plan.statuses if s.by_list]
    for task in listed:
        found.absorb(task.result())
    left = plan.leftover(seen)
    if left.relist_from is not None:
        outcome = await list_pages(
            ctx.client,
            writer.resource,
            writer.add_page,
            since=left.relist_from,
            until=plan.since,
            on_malformed=on_malformed,
            ready=writer.ready,
        )
        found.absorb(outcome)
    return left.by_id, found


async def _retrieve(client: Client, resource: str, ids: Sequence[str], writer: BatchWriter) -> None:
    """Retrieve ids concurrently (the client paces them), in chunks to bound memory."""

    async def one(ident: str) -> tuple[Variant, bytes] | None:
        try:
            return await client.get(object_path(resource, ident), parse=read_object)
        except NotFoundError as exc:
            if exc.type is None:
                # Not the gateway's error object: something else answered (a wrong base URL
                # or a proxy), so the id says nothing about the payment; fail the sync.
                raise
            reason = f"cached id no longer found on the gateway: {exc.message}"
            record = orjson.dumps({"id": ident}).decode()
            writer.add_rejects([Reject(resource, reason, record, "not found")])
            return None
        except MalformedBodyError as exc:
            reason = f"unusable body for {ident}: {exc.message}"
            writer.add_rejects([Reject(resource, reason, exc.snippet, UNREAD)])
            return None

    chunk = 1000
    for i in range(0, len(ids), chunk):
        async with _together() as tg:
            tasks = [tg.create_task(one(x)) for x in ids[i : i + chunk]]
        bodies = [t.result() for t in tasks]
        await writer.add_objects([b for b in bodies if b is not None])


def _write_state(
    ds: Dataset,
    state: dict[str, Any],
    res: ResourceResult,
    outcome: ListOutcome,
    writer: BatchWriter,
    *,
    incremental: bool,
    settings: Settings,
) -> None:
    """Record the sync in the dataset's state, last: an incomplete sync keeps the old
    high-water mark, so the next one lists the gap again. Rows from the embedded sandbox are
    recorded as such (``sandbox_data``), so whoever reads the folder later labels them
    "sandbox data"; and which gateway filled the dataset (``gateway``): a full sync from
    another one takes the dataset over only once it is complete, having replaced every row."""
    high_water = state.get("high_water")
    here = gateway_record(settings)
    recorded = state.get("gateway")
    taken_over = res.complete and not incremental
    same = recorded is None or _same_gateway(recorded, here)
    gateway = here if same or taken_over else recorded
    top = None if writer.max_created is None else writer.max_created.isoformat()
    if not incremental:
        # A complete full listing replaced every row, so the old mark says nothing about the
        # rows now cached: kept, a mark from another gateway (or one whose rows are all
        # older, or none) would start the next listing after rows it never fetched.
        new_high = top
    elif top is not None and (not high_water or top > str(high_water)):
        new_high = top
    else:
        new_high = high_water
    now = dt.datetime.now(dt.UTC).isoformat()
    ds.write_state(
        {
            **state,
            "high_water": new_high if res.complete else high_water,
            "last_sync": now,
            "last_full_sync": now
            if (not incremental and res.complete)
            else state.get("last_full_sync"),
            # Only a complete listing says every cached row is in this variant: after an
            # incomplete one the next sync must still see a switch, and list everything again.
            "api_variant": (outcome.variant if res.complete else None) or state.get("api_variant"),
            "strategy": outcome.strategy,
            "time_filters_ignored": outcome.time_filters_ignored,
            # Until a complete full sync has replaced every row, the sandbox's rows stay in
            # the dataset whichever gateway synced last, and keep it labelled.
            "sandbox_data": settings.embedded
            or (not taken_over and state.get("sandbox_data") is True),
            "gateway": gateway,
            # What this sync's checks found (`gwtools check` reports an incomplete last sync).
            "completeness": res.report(),
        }
    )
