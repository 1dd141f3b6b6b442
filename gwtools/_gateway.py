"""The Gateway: sync a gateway's payments and refunds into the cache, read them as DataFrames.

Example::

    import gwtools

    gw = gwtools.connect()                  # the embedded sandbox; or connect(key, url)
    result = gw.sync()                      # incremental after the first time
    print(result)                           # rows new/updated/unchanged, requests, 429s
    failed = gw.payments(since="2026-11-01", status="failed")
    refunds = gw.refunds(refresh=False)     # no network: just the cache

Each Gateway owns one event loop, in a background thread, and one ``httpx.AsyncClient`` on
it; ``sync()`` submits to that loop and waits, so it works the same from a script and inside
Jupyter (whose own loop is already running).

Frames read from the embedded sandbox's data carry ``attrs["gwtools_source"] ==
"sandbox data"`` (:data:`SANDBOX_DATA`), so a chart or export made from them can say so.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import datetime as dt
import os
import sys
import threading
import warnings
import weakref
from collections.abc import Coroutine, Hashable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

import httpx
import pandas as pd

from gwtools import _schema
from gwtools._config import (
    Filters,
    Settings,
    cache_folder,
    check_filters,
    check_kinds,
    check_resource,
    hide_url,
    resolve_settings,
    shown_base_url,
)
from gwtools._errors import ConfigurationError, GatewayError, hide_key
from gwtools._schema import Resource
from gwtools.cache._dataset import SANDBOX_DATA, Dataset
from gwtools.http._client import (
    DEFAULT_BURST,
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_RPS,
    MAX_WAIT,
    Client,
)
from gwtools.sync._plan import DEFAULT_OVERLAP
from gwtools.sync._result import SyncResult
from gwtools.sync._run import SyncContext, run_sync
from gwtools.sync._writer import PAGES_PER_BATCH, unknown_by_variant, unknown_status_message

__all__ = ["SANDBOX_DATA", "Gateway", "cache_path", "cache_state", "connect"]

T = TypeVar("T")
RESOURCES = _schema.RESOURCES

#: Pages :meth:`Gateway.iter_payments` fetches ahead of the records it has handed out.
_PAGES_AHEAD = 4


class _LoopThread:
    """An event loop running in a daemon thread; ``run`` submits a coroutine and waits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._serve, name="gwtools-loop", daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            self.loop.run_forever()
        finally:
            try:
                # What is still running (a half-read stream's listing) is cancelled and let
                # finish, as asyncio.run does: a task dropped pending with its loop is
                # reported at exit ("Task was destroyed but it is pending!").
                self.loop.run_until_complete(_cancel_all(self.loop))
            finally:
                self.loop.close()  # stopped from inside too (release), where nobody joins it

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            # KeyboardInterrupt in a notebook: stop the sync rather than leave it running.
            future.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()

    def release(self, client: Client | None) -> None:
        """Close ``client`` and stop, without waiting for either: what the garbage collector
        may do. A finalizer runs in whatever thread collects, possibly this loop's own or one
        holding an import lock the loop needs, so waiting there can deadlock."""

        async def close_then_stop() -> None:
            try:
                if client is not None:
                    await client.aclose()
            finally:
                self.loop.stop()

        with contextlib.suppress(RuntimeError):  # the loop has already stopped and closed
            asyncio.run_coroutine_threadsafe(close_then_stop(), self.loop)


async def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel every task of ``loop`` but this one and wait for them to end."""
    tasks = [t for t in asyncio.all_tasks(loop) if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await loop.shutdown_asyncgens()


#: Tuning arguments that count something: at least 1 (0 would send nothing and wait for ever).
_COUNTS: Final = ("burst", "concurrency", "max_attempts", "max_429_attempts", "pages_per_batch")


def _check_tuning(**given: Any) -> None:
    """Refuse tuning a sync could not run with, naming the argument (before anything starts)."""
    for name in _COUNTS:
        value = given[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigurationError(f"{name} must be a whole number of at least 1, got {value!r}",
                                     param=name)  # fmt: skip
    units = {"max_rps": "requests per second above 0, or None for no pacing",
             "timeout": "seconds above 0",
             "max_wait": "seconds of 0 or more"}  # fmt: skip
    for name, unit in units.items():
        value = given[name]
        if value is None and name == "max_rps":
            continue  # no pacing
        # max_wait=0 is meaningful (never wait out a rate limit: raise at once); a pace or a
        # timeout of 0 would send nothing or fail every request.
        low_ok = name == "max_wait" and value == 0
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (0 < value < 1e9 or low_ok)
        ):
            raise ConfigurationError(
                f"{name} must be a number of {unit}, got {value!r}", param=name
            )
    overlap = given["overlap"]
    if not isinstance(overlap, dt.timedelta) or overlap < dt.timedelta(0):
        raise ConfigurationError(
            f"overlap must be a datetime.timedelta of 0 or more, got {overlap!r}", param="overlap"
        )
    if given["progress"] not in (None, True, False):
        raise ConfigurationError(
            f"progress must be True, False or None, got {given['progress']!r}", param="progress"
        )


def _first_gateway_error(group: BaseExceptionGroup[Any]) -> GatewayError | None:
    """The first GatewayError in a group raised by concurrent requests, if any."""
    for exc in group.exceptions:
        if isinstance(exc, GatewayError):
            return exc
        if isinstance(exc, BaseExceptionGroup) and (found := _first_gateway_error(exc)):
            return found
    return None


def _release(loop: _LoopThread, client: Client | None) -> None:
    """A Gateway dropped without :meth:`Gateway.close`: let go without waiting."""
    loop.release(client)


def _shutdown(loop: _LoopThread | None, client: Client | None) -> None:
    """Close ``client`` and stop ``loop``, waiting for both (:meth:`Gateway.close`)."""
    if loop is None:
        return
    if client is not None and loop.loop.is_running():
        with contextlib.suppress(Exception):  # the interpreter may be exiting
            loop.run(client.aclose())
    loop.stop()


class Gateway:
    """A connection to one gateway (or the embedded sandbox) and its local cache.

    Create it with :func:`gwtools.connect` (which resolves the key, URL and environment into
    a :class:`gwtools.Settings`); ``Gateway(settings, ...)`` takes the same keyword options
    as ``connect()``. Use :meth:`sync` to bring the cache up to date,
    :meth:`payments`/:meth:`refunds` to get canonical DataFrames, :meth:`iter_payments`/
    :meth:`iter_refunds` to stream records without the cache, :meth:`close` (or ``with``)
    to release the connection pool.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        max_rps: float | None = DEFAULT_MAX_RPS,
        burst: int = DEFAULT_BURST,
        concurrency: int = DEFAULT_CONCURRENCY,
        timeout: float = 30.0,
        max_attempts: int = 8,
        max_429_attempts: int = 30,
        max_wait: float = MAX_WAIT,
        overlap: dt.timedelta = DEFAULT_OVERLAP,
        pages_per_batch: int = PAGES_PER_BATCH,
        progress: bool | None = None,
    ) -> None:
        self.settings = settings
        _check_tuning(
            max_rps=max_rps, burst=burst, concurrency=concurrency, timeout=timeout,
            max_attempts=max_attempts, max_429_attempts=max_429_attempts, max_wait=max_wait,
            pages_per_batch=pages_per_batch, overlap=overlap, progress=progress,
        )  # fmt: skip
        self._client_args: dict[str, Any] = {
            "transport": transport,
            "max_rps": max_rps,
            "burst": burst,
            "concurrency": concurrency,
            "timeout": timeout,
            "max_attempts": max_attempts,
            "max_429_attempts": max_429_attempts,
            "max_wait": float(max_wait),
        }
        self.overlap = overlap
        self.pages_per_batch = pages_per_batch
        self.progress = progress
        self._loop: _LoopThread | None = None
        self._client: Client | None = None
        self._sync_lock = threading.Lock()
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.last_result: SyncResult | None = None
        #: (resource, API variant, unknown status) already warned about: once per Gateway
        self._warned: set[tuple[str, str, str]] = set()
        # Build the client now: httpx's first client imports its transport stack and makes
        # an SSL context, about a second that should not count against the first sync.
        self._ensure()

    def __repr__(self) -> str:
        s = self.settings
        where = "embedded sandbox" if s.embedded else shown_base_url(s.base_url, s.api_key)
        return (
            f"<Gateway {where} key={s.masked_key} account={s.account!r} mode={s.mode} "
            f"cache={str(self.cache_path)!r}>"
        )

    @property
    def cache_path(self) -> Path:
        """Where this gateway's datasets live: ``{cache_dir}/{account}/{mode}``."""
        return self.settings.cache_folder

    def _dataset(self, resource: Resource) -> Dataset:
        """The cached dataset of ``resource`` (its state, rejects or path; internal)."""
        return Dataset(self.settings.cache_folder / resource, resource)

    # -- lifecycle -----------------------------------------------------------------------
    def _ensure(self) -> _LoopThread:
        if self._loop is None:
            self._loop = _LoopThread()

            async def make() -> Client:
                return Client(self.settings, **self._client_args)

            try:
                self._client = self._loop.run(make())
            except BaseException:
                # E.g. a key that cannot be sent: no thread left running behind the error.
                self._loop.stop()
                self._loop = None
                raise
            self._finalizer = weakref.finalize(self, _release, self._loop, self._client)
        return self._loop

    def close(self) -> None:
        """Close the connection pool and stop the background loop (idempotent)."""
        # Detached: the finalizer (for a Gateway nobody closes) must not wait; close() may.
        if self._finalizer is not None and self._finalizer.detach() is not None:
            _shutdown(self._loop, self._client)
        self._loop = None
        self._client = None

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the work ------------------------------------------------------------------------
    def sync(
        self,
        resources: Sequence[Resource] | Resource = RESOURCES,
        *,
        full: bool = False,
        progress: bool | None = None,
    ) -> SyncResult:
        """Bring the cache up to date and say what changed.

        The first sync of a dataset (or ``full=True``) lists everything and makes the cache
        equal to it; later ones fetch only what can have changed. A payment refunded since the
        last refunds sync is re-read when the refunds are synced: sync both (the default) for
        current refunded amounts. ``progress=None`` shows a bar only for big interactive syncs.
        Example::

            result = gw.sync()
            result.new, result.updated, result.rate_limited
        """
        if not isinstance(resources, str | Sequence) or not resources:
            raise ConfigurationError(
                f"resources={resources!r}: name 'payments', 'refunds' or both (the default)",
                param="resources",
            )
        wanted: tuple[Resource, ...] = (
            (resources,) if isinstance(resources, str) else tuple(resources)
        )
        for resource in wanted:
            check_resource(resource)
        asked = full  # only a full sync asked for may take over a cache another gateway filled
        if self.settings.embedded:
            from gwtools._embedded import REGISTRY

            full = full or not REGISTRY.filled(self.settings)
        with self._sync_lock:
            loop = self._ensure()
            assert self._client is not None
            ctx = SyncContext(
                client=self._client,
                settings=self.settings,
                overlap=self.overlap,
                pages_per_batch=self.pages_per_batch,
                progress=progress if progress is not None else self.progress,
                warned=self._warned,
            )
            failed: GatewayError | None = None
            try:
                result = loop.run(run_sync(ctx, wanted, full=full, take_over=asked))
            except BaseExceptionGroup as group:
                # Concurrent requests (a task group) fail together: raise the gateway's
                # error itself, which says what to do, rather than a group of them.
                failed = _first_gateway_error(group)
                if failed is None:
                    raise
            if failed is not None:
                raise failed  # outside the handler: no __context__ leading to the group
        if self.settings.embedded and result.complete and set(wanted) >= set(RESOURCES):
            REGISTRY.mark_filled(self.settings)
        self.last_result = result
        return result

    def payments(
        self,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
        *,
        refresh: bool = True,
    ) -> pd.DataFrame:
        """Canonical payments (``since <= created_at < until``, canonical ``status``).

        Syncs first unless ``refresh=False``; a refresh syncs refunds too, because a new
        refund changes its payment's ``refunded_amount``. An unknown ``status`` (``"declined"``:
        did you mean ``"failed"``?), a value that is not a date, or ``since`` not before
        ``until`` raise :class:`~gwtools.ConfigurationError` before anything is sent; case
        does not matter (``"FAILED"`` is ``"failed"``).
        """
        where = check_filters("payments", since, until, status)
        if refresh:
            self.sync(RESOURCES)
        return self._read("payments", *where)

    def refunds(
        self,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
        *,
        refresh: bool = True,
    ) -> pd.DataFrame:
        """Canonical refunds; syncs first unless ``refresh=False``. Filters are checked as in
        :meth:`payments`, against the refund statuses (pending, succeeded, failed, unknown)."""
        where = check_filters("refunds", since, until, status)
        if refresh:
            self.sync(("refunds",))
        return self._read("refunds", *where)

    def scan(
        self,
        resource: Resource,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
    ) -> Any:
        """The cached ``resource`` as a lazy DuckDB table (see :func:`gwtools.scan_cache`).

        Reads the cache only, never the network: call :meth:`sync` first for fresh data.
        Nothing is read until a result is asked for; pass it to any ``gwtools.analysis``
        function, which runs in DuckDB and returns a small DataFrame::

            analysis.decline_rate(gw.scan("payments"), freq="week", tz="Asia/Kuala_Lumpur")
        """
        from gwtools.cache._scan import _empty, connection, scan_cache

        check_filters(resource, since, until, status)  # refused even before the first sync
        dataset = self._dataset(resource)
        if not dataset.exists():
            self._warn_never_synced(dataset, stacklevel=2)
            return _empty(resource, connection())
        return scan_cache(dataset.path, resource, since=since, until=until, status=status)

    @staticmethod
    def _warn_never_synced(dataset: Any, stacklevel: int) -> None:
        """An empty table from a cache no sync has written must not pass for "no payments"."""
        from gwtools.sync._result import GatewayDataWarning

        warnings.warn(
            f"nothing is cached at {dataset.path} yet, so this {dataset.resource} table is "
            "empty: no sync of them has completed. Call gw.sync() (or `gwtools sync`) first",
            GatewayDataWarning,
            stacklevel=stacklevel + 1,
        )

    def _read(self, resource: Resource, since: Any, until: Any, status: Any) -> pd.DataFrame:
        ds = self._dataset(resource)
        if not ds.exists():
            from gwtools._schema import empty
            from gwtools.cache._dataset import set_cache_attrs

            self._warn_never_synced(ds, stacklevel=3)
            frame = empty(resource)
            message = "no sync has completed: call gw.sync() first"
            set_cache_attrs(frame, str(ds.path), {}, message)
        else:
            frame = ds.read(since=since, until=until, status=status)
        if self.settings.embedded:
            frame.attrs["gwtools_source"] = SANDBOX_DATA
        return frame

    # -- streaming, no cache ---------------------------------------------------------------
    def iter_payments(
        self,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Canonical payments, one dict per record (the canonical columns), fetched page by
        page as you iterate; nothing is read from or written to the cache.

        For streaming users (a pipeline that forwards records, a one-off count) who do not
        want a Parquet cache. Pages are fetched on demand, a few ahead of the consumer (four,
        and the requests in flight when it paused), so few pages are held whatever the size
        (the ids already yielded are, about 110 bytes each: 1.1 GB at 10M records);
        stopping early stops the listing. Each record comes once; the order is the gateway's
        page order (not sorted). An id served twice on a page comes as its last row, as a
        sync keeps it; one served again on a later page (listings overlap where their time
        windows meet) is not yielded again, so if it changed in between, the stream has the
        version read first where a sync keeps the later. Filters are checked as in
        :meth:`payments`, when called. Records the normaliser rejects are reported as one
        :class:`~gwtools.GatewayDataWarning` with their count when the stream ends (or is
        closed), unknown statuses as one each; a page that stays
        unreadable raises its :class:`~gwtools.MalformedBodyError` after the pages before
        it. Example::

            for p in gw.iter_payments(since="2026-11-01", status="failed"):
                print(p["id"], p["amount"], p["decline_code"])
        """
        return self._stream("payments", check_filters("payments", since, until, status))

    def iter_refunds(
        self,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Canonical refunds, streamed as :meth:`iter_payments` streams payments."""
        return self._stream("refunds", check_filters("refunds", since, until, status))

    def _stream(self, resource: Resource, where: Filters) -> Iterator[dict[str, Any]]:
        # A generator: nothing is sent until the first next(); filters were checked eagerly.
        from gwtools.http._paging import list_pages
        from gwtools.normalize._normalize import normalize_bodies
        from gwtools.sync._result import GatewayDataWarning

        loop = self._ensure()
        assert self._client is not None
        client = self._client
        done = object()
        # The hand-over, touched only on the gateway's loop. The pager awaits ``room`` before
        # each request, so fetching stays a few pages ahead of the consumer however many
        # windows it lists at once. The consumer waits for a page or for the listing's end,
        # whichever comes: an ending listing (done, failed or cancelled) always wakes it.
        pages: collections.deque[bytes] = collections.deque()
        room, changed, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()
        room.set()
        malformed: list[GatewayError] = []

        async def sink(body: bytes, _info: Any) -> None:
            pages.append(body)
            changed.set()
            if len(pages) >= _PAGES_AHEAD:
                room.clear()

        async def ready() -> None:
            await room.wait()

        async def listing() -> Any:
            try:
                return await list_pages(
                    client,
                    resource,
                    sink,
                    since=where.since.to_pydatetime() if where.since is not None else None,
                    until=where.until.to_pydatetime() if where.until is not None else None,
                    on_malformed=malformed.append,
                    ready=ready,
                )
            finally:
                finished.set()
                changed.set()

        async def next_body() -> Any:
            while not pages:
                if finished.is_set():
                    return done
                changed.clear()
                await changed.wait()
            if len(pages) <= _PAGES_AHEAD:
                room.set()
            return pages.popleft()

        def next_page() -> Any:
            if not loop.loop.is_closed():
                waiting = asyncio.run_coroutine_threadsafe(next_body(), loop.loop)
                # Cancelled: the Gateway was closed (its loop cancels what is left) while this
                # waited for a page. Sent while it was closing, the wait may never run: the
                # closed loop says so.
                with contextlib.suppress(concurrent.futures.CancelledError):
                    while True:
                        with contextlib.suppress(TimeoutError):
                            return waiting.result(timeout=1.0)
                        if loop.loop.is_closed():
                            break
            raise ConfigurationError(
                f"the Gateway was closed while its {resource} were being streamed: finish "
                f"iterating before gw.close() (or the with-block's end), or call "
                f"gw.iter_{resource}() again"
            )

        future = asyncio.run_coroutine_threadsafe(listing(), loop.loop)
        # Time windows overlap by a second: a record may come again on a later page. It was
        # yielded already, so the first page's version stands (a sync keeps the later one).
        seen: set[str] = set()
        livemode = self.settings.mode == "live"
        # Said once, when the stream ends (however it ends), as a sync says it: per page, a
        # long stream over a damaged listing repeated it page after page.
        skipped = 0
        first_reason = ""
        unknown_said: set[tuple[str, str]] = set()
        try:
            while (body := next_page()) is not done:
                batch = normalize_bodies(resource, [body], livemode=livemode, check_ids=True)
                unknown = unknown_by_variant(resource, batch.frame, batch.unknown_statuses)
                for variant, status in sorted(unknown - unknown_said):
                    unknown_said.add((variant, status))
                    warnings.warn(
                        unknown_status_message(resource, variant, status, "records"),
                        GatewayDataWarning,
                        stacklevel=2,
                    )
                if batch.rejects:
                    first_reason = first_reason or batch.rejects[0].reason
                    skipped += len(batch.rejects)
                # An id twice on one page: its last row wins, as in a sync's batch (before
                # the filters, so that a stale first row cannot pass them).
                page = batch.frame.drop_duplicates("id", keep="last")
                for record in where.apply(page).to_dict("records"):
                    if record["id"] not in seen:
                        seen.add(record["id"])
                        yield _plain(record)
            failed: GatewayError | None = None
            try:
                outcome = future.result()
            except BaseExceptionGroup as group:
                failed = _first_gateway_error(group)  # as in sync(): the error itself
                if failed is None:
                    raise
            if failed is not None:
                raise failed
        finally:
            # Not at interpreter exit: a stream left half-read then ends silently.
            if skipped and not sys.is_finalizing():
                warnings.warn(
                    f"{skipped} {resource} records could not be read and were skipped "
                    f"(first: {first_reason})",
                    GatewayDataWarning,
                    stacklevel=2,
                )
            # Stopped early (or failed): stop the listing too. Through the loop, not with
            # future.cancel(), whose callback raises "Event loop is closed" once the loop has
            # stopped (a stream dropped at exit, after its Gateway), when there is nothing
            # left to cancel anyway.
            with contextlib.suppress(RuntimeError):
                loop.loop.call_soon_threadsafe(future.cancel)
        if malformed:
            raise malformed[0]
        if not outcome.complete:
            warnings.warn(
                f"the {resource} stream may be incomplete: {'; '.join(outcome.problems)}",
                GatewayDataWarning,
                stacklevel=2,
            )


def _plain(record: Mapping[Hashable, Any]) -> dict[str, Any]:
    """A record with pandas' missing values as None (NaN, NaT and NA are not JSON)."""
    return {str(k): (None if _missing(v) else v) for k, v in record.items()}


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)


def connect(
    api_key: str | None = None,
    base_url: str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    service_version: str = "2024-01-01",
    account: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    max_rps: float | None = DEFAULT_MAX_RPS,
    burst: int = DEFAULT_BURST,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = 30.0,
    max_attempts: int = 8,
    max_429_attempts: int = 30,
    max_wait: float = MAX_WAIT,
    overlap: dt.timedelta = DEFAULT_OVERLAP,
    pages_per_batch: int = PAGES_PER_BATCH,
    progress: bool | None = None,
    embedded: bool = False,
) -> Gateway:
    """Connect to a gateway, or, with neither key nor base URL, to the embedded sandbox.

    ``api_key``, ``base_url`` and ``cache_dir`` default to ``GW_API_KEY``, ``GW_BASE_URL`` and
    ``GW_CACHE_DIR`` (else the per-user cache directory). ``account`` names the cache
    directory (default: a hash of the key). Nothing is sent until the first sync. Tuning:

    - ``max_rps`` paces requests (``None``: no pacing), ``burst`` how many may go at once
      after a pause, ``concurrency`` bounds requests in flight;
    - ``timeout`` (seconds) per request; ``max_attempts`` tries for a failed request,
      ``max_429_attempts`` for one the gateway keeps rate limiting;
    - ``max_wait`` (seconds, default 60): the longest wait a 429 may ask for
      (``Retry-After``, else until ``X-RateLimit-Reset``) that is waited out; a longer one
      raises :class:`~gwtools.RateLimitError` at once (``0``: never wait). It also caps the
      pause when ``X-RateLimit-Remaining`` runs out;
    - ``overlap``: how far before the last sync's newest row an incremental sync lists
      again; ``pages_per_batch``: pages normalised and written together;
    - ``progress``: a bar (``None``: only for big interactive syncs);
    - ``transport`` is passed to httpx (e.g. ``httpx.ASGITransport(app)``);
    - ``embedded=True``: the embedded sandbox even when ``GW_API_KEY``/``GW_BASE_URL`` are
      set (``gwtools demo`` uses it); give no key or base URL with it.

    The embedded sandbox needs the ``sandbox`` extra: without it, connecting with no key
    raises :class:`~gwtools.ConfigurationError` naming ``pip install "gwtools[sandbox]"``.
    Example::

        gw = gwtools.connect()                         # embedded sandbox, seeded demo data
        gw = gwtools.connect(account="shop-my")        # GW_API_KEY and GW_BASE_URL from env
    """
    # Masked in this frame's locals, as a traceback shows them (pytest -l, rich).
    api_key, base_url = hide_key(api_key), hide_url(base_url, api_key)
    check_kinds(api_key=api_key, base_url=base_url, account=account, cache_dir=cache_dir)
    if embedded and (api_key is not None or base_url is not None):
        raise ConfigurationError(
            "embedded=True connects to the embedded sandbox, which needs no key or base URL: "
            "leave api_key and base_url out, or drop embedded=True to use that gateway",
            param="embedded",
        )
    settings = (
        None
        if embedded
        else resolve_settings(
            api_key, base_url, cache_dir=cache_dir, service_version=service_version, account=account
        )
    )
    if settings is None:
        from gwtools._embedded import embedded_settings

        settings = embedded_settings(
            cache_dir=cache_dir, service_version=service_version, account=account
        )
    return Gateway(
        settings,
        transport=transport,
        max_rps=max_rps,
        burst=burst,
        concurrency=concurrency,
        timeout=timeout,
        max_attempts=max_attempts,
        max_429_attempts=max_429_attempts,
        max_wait=max_wait,
        overlap=overlap,
        pages_per_batch=pages_per_batch,
        progress=progress,
    )


def cache_path(
    api_key: str | None = None,
    base_url: str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    account: str | None = None,
) -> Path:
    """The folder :func:`connect` with the same arguments caches into (its
    :attr:`Gateway.cache_path`), found without connecting: with neither key nor base URL,
    the embedded sandbox's cache, and nothing is started. Pass it to
    :func:`~gwtools.read_cache` or :func:`~gwtools.scan_cache` to read offline::

        folder = gwtools.cache_path(account="shop-my")     # GW_* variables as connect() reads
        failed = gwtools.read_cache(folder, "payments", status="failed")

    Raises :class:`~gwtools.ConfigurationError` where :func:`connect` would.
    """
    # Masked in this frame's locals, as a traceback shows them (pytest -l, rich).
    api_key, base_url = hide_key(api_key), hide_url(base_url, api_key)
    settings = resolve_settings(api_key, base_url, cache_dir=cache_dir, account=account)
    if settings is None:
        from gwtools._embedded import embedded_cache

        return cache_folder(*embedded_cache(cache_dir, account))
    return settings.cache_folder


def cache_state(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
    filesystem: Any = None,
) -> dict[str, Any]:
    """What the last sync recorded about a cached dataset (its ``_state.json``: high-water
    mark, last full sync, the completeness report), ``{}`` if nothing was synced there.
    ``filesystem``: a ``pyarrow.fs.FileSystem`` or fsspec filesystem, ``cache_dir`` a path on
    it, as :func:`~gwtools.read_cache` takes them.

    ``cache_dir`` is a folder as :func:`cache_path` returns (or the dataset's own folder, or
    a cache's URL on shared storage); ``account``/``mode`` pick one of several datasets under
    it, as in :func:`~gwtools.read_cache`. ``sandbox_data`` says the embedded sandbox filled it;
    ``unreadable_files`` ({path: why}) names part files that cannot be read, whose rows the
    readers leave out until a sync fetches their months again (on shared storage, where each
    footer costs a request: those too small to be Parquet, and those a read found damaged).
    Use it to check a cache's freshness or completeness without reading its rows.
    """
    from gwtools.cache._scan import dataset_state

    check_resource(resource)
    return dataset_state(cache_dir, resource, account=account, mode=mode, filesystem=filesystem)
