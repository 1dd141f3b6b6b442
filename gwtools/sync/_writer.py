"""Where pages become cache files: collected in batches, normalised and staged off the loop.

:class:`BatchWriter` collects the raw pages (and retrieved objects) a run hands it; every
``pages_per_batch`` pages :func:`write_batch` normalises them and stages them as part files in
the :class:`Workers` thread, so memory stays flat and the event loop keeps fetching. Fetching
waits while a batch is written and another is full (backpressure). The run compacts the
touched months at the end.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
import warnings
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from gwtools._schema import Resource
from gwtools.cache._dataset import CLOCK_SKEW, Dataset
from gwtools.http._wire import PageInfo, Variant
from gwtools.normalize._normalize import Reject, normalize_bodies
from gwtools.sync._result import GatewayDataWarning

__all__ = ["PAGES_PER_BATCH", "BatchWriter", "Workers", "reject_kind", "write_batch"]

PAGES_PER_BATCH = 50


def unknown_by_variant(
    resource: str, frame: pd.DataFrame, statuses: Collection[str]
) -> set[tuple[str, str]]:
    """(API variant, raw status) of each unknown status value in ``frame``'s rows.

    A value is reported to the gateway per variant (each variant has its own vocabulary: A's
    ``succeeded`` is unknown in B), so the warning must say which one sent it. Normalisation
    gives the values only, and a batch mixes variants (a variant change, retrieved objects),
    so the variant is read from the rows that hold each value: only rows whose status became
    ``unknown``, a handful.
    """
    if not statuses:
        return set()
    rows = frame.loc[frame["status"] == "unknown"]
    raws = (
        rows["status_raw"]
        if resource == "payments"
        # refunds have no status_raw column: normalisation keeps their raw status in extra
        else rows["extra"].map(_extra_status)
    )
    pairs = {
        (str(variant), raw)
        for variant, raw in zip(rows["api_variant"], raws, strict=True)
        if isinstance(raw, str) and raw in statuses
    }
    # Never expected; but a value the rows do not explain must still be warned about.
    found = {raw for _, raw in pairs}
    pairs |= {("unknown", raw) for raw in statuses if raw not in found}
    return pairs


def _extra_status(extra: object) -> object:
    if not isinstance(extra, str):
        return None
    try:
        fields = orjson.loads(extra)
    except orjson.JSONDecodeError:
        return None
    return fields.get("status") if isinstance(fields, dict) else None


def unknown_status_message(resource: str, variant: str, status: str, rows: str = "rows") -> str:
    """What the warning about an unknown status says (a sync's and a stream's)."""
    # refunds have no status_raw column: normalisation keeps their raw status in extra
    kept = "status_raw" if resource == "payments" else 'extra, under "status"'
    return (
        f"the gateway sent {resource} with status {status!r} (API variant {variant}), which "
        f"gwtools does not know; those {rows} have status 'unknown' (the raw value is in "
        f"{kept}). Report the value to the gateway with its API variant"
    )


def _warn_unknown(
    resource: str, unknown: Iterable[tuple[str, str]], warned: set[tuple[str, str, str]]
) -> None:
    """Warn once per (resource, API variant, status) and ``warned`` set: the caller's (the
    Gateway's)."""
    for variant, status in sorted(unknown):
        key = (resource, variant, status)
        if key in warned:
            continue
        warned.add(key)
        warnings.warn(
            unknown_status_message(resource, variant, status),
            GatewayDataWarning,
            stacklevel=2,
        )


@dataclass
class BatchOutcome:
    """What writing one batch produced."""

    months: set[str] = field(default_factory=set)
    rejected: int = 0
    max_created: dt.datetime | None = None
    #: (API variant, raw status) of the statuses gwtools does not know
    unknown_statuses: set[tuple[str, str]] = field(default_factory=set)
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
    path: str,
    resource: Resource,
    livemode: bool,
    sync_id: str,
    bodies: list[bytes | tuple[Variant, bytes]],
    secret: str | None = None,
) -> BatchOutcome:
    """Normalise raw list bodies and retrieved objects (``(variant, body)``) and write them
    as part files (runs in the writer thread); ``secret``, the API key, is masked in rejects."""
    ds = Dataset(path, resource)
    batch = normalize_bodies(resource, bodies, livemode=livemode, check_ids=True)
    del bodies
    out = BatchOutcome(
        unknown_statuses=unknown_by_variant(resource, batch.frame, batch.unknown_statuses)
    )
    if batch.rejects:
        out.rejected = ds.append_rejects(batch.rejects, sync_id=sync_id, secret=secret)
        _count_kinds(batch.rejects, out.reasons)
    if len(batch.frame):
        table = pa.Table.from_pandas(batch.frame, schema=ds.schema, preserve_index=False)
        out.months = ds.stage_batch(table)  # merged into the dataset by compact() at the end
        # The high-water mark's candidate: rows dated past what a state may hold (a gateway's
        # bad data, e.g. 2099) would make the mark one the next sync ignores, and every sync
        # a full one. They are left out of it; the next sync lists them again (they are new).
        created = table.column("created_at")
        bound = pa.scalar(dt.datetime.now(dt.UTC) + CLOCK_SKEW, created.type)
        out.max_created = pc.max(created.filter(pc.less_equal(created, bound))).as_py()
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
        warned: set[tuple[str, str, str]] | None = None,
        secret: str | None = None,
    ) -> None:
        self.dataset = dataset
        #: the API key: a rejected record may echo it, and is written with it masked
        self.secret = secret
        self.resource: Resource = dataset.resource
        self.livemode = livemode
        self.sync_id = sync_id
        self.workers = workers
        self.pages_per_batch = pages_per_batch
        self.on_rows = on_rows
        #: (resource, API variant, unknown status) already warned about, shared across syncs
        self.warned: set[tuple[str, str, str]] = set() if warned is None else warned
        #: list bodies, and retrieved objects as ``(variant, body)``, waiting to be written
        self.bodies: list[bytes | tuple[Variant, bytes]] = []
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
        self.bodies.extend(objects)
        await self.flush()

    def add_rejects(self, rejects: Sequence[Reject]) -> None:
        self.rejected += self.dataset.append_rejects(
            rejects, sync_id=self.sync_id, secret=self.secret
        )
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

    async def _write(self, bodies: list[bytes | tuple[Variant, bytes]]) -> None:
        out: BatchOutcome = await asyncio.get_running_loop().run_in_executor(
            self.workers.pick(),
            write_batch,
            str(self.dataset.path),
            self.resource,
            self.livemode,
            self.sync_id,
            bodies,
            self.secret,
        )
        _warn_unknown(self.resource, out.unknown_statuses, self.warned)
        self.months |= out.months
        self.rejected += out.rejected
        for kind, n in out.reasons.items():
            self.reasons[kind] = self.reasons.get(kind, 0) + n
        if out.max_created is not None and (
            self.max_created is None or out.max_created > self.max_created
        ):
            self.max_created = out.max_created
