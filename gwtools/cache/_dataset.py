"""The local Parquet cache: one hive-partitioned dataset per account, mode and resource.

Layout (plain Parquet that pyarrow, DuckDB, Polars and Spark read as it is)::

    {cache_dir}/{account}/{test|live}/{payments|refunds}/
        created_month=2024-05/part-00001716900000000000000-1a2b3c4d.parquet   one file a month
        _state.json        high-water mark, last sync, schema version, the gateway (written last)
        _rejects.jsonl     records the gateway sent that could not be used, with the reason
                           (one line a record: a later sync's rejecting it again replaces it)
        _sync.lock         held by the sync that is running (a second one waits)
    {cache_dir}/{account}/{test|live}/_staging/{resource}/     a running sync's batches
    {cache_dir}/{account}/{test|live}/_quarantine/{resource}/  files that could not be read

Consistency for direct readers (DuckDB, Spark, pyarrow reading the folder): a sync writes its
batches to ``_staging`` (beside the dataset, on the same file system, so a rename is atomic),
and only its final step merges them into the dataset, one month at a time: the month's new
file is written in ``_staging`` and renamed over the month's file. So the dataset folder never
holds a temporary or partial file, each month is one file with one row per id, and a reader
sees each month either as it was before the sync or as it is after it; each file is on disk
before its rename, and the rename before the next step, so a power cut leaves no empty or
torn file either. Every month that holds more than one file (an older gwtools, or a sync
killed between two renames) is compacted by the next completed sync. A killed sync's staged
batches are merged by the next sync.

Damage: a part file that cannot be read is moved to ``_quarantine`` by the next sync, with a
warning, and its month is fetched again; disk full, read-only folders and paths that are files
raise :class:`gwtools.CacheError` naming the folder and what to do.

Use :func:`read_cache` to read without any network::

    payments = gwtools.read_cache("data/sample-cache", "payments")
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import itertools
import os
import re
import shutil
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from filelock import FileLock

from gwtools import _schema
from gwtools._config import Filters, cache_folder, check_filters
from gwtools._errors import (
    AmbiguousCacheError,
    CacheError,
    CacheNotFoundError,
    ConfigurationError,
)
from gwtools._memory import ResultMeter
from gwtools._schema import Resource
from gwtools._stack import user_stacklevel

__all__ = ["Dataset", "MergeStats", "read_cache"]

SCHEMA_VERSION = 1
PARTITION = "created_month"
_UNKNOWN_MONTH = "unknown"
_SEQ = "__gw_seq"
_ROW_GROUP = 32 * 1024  # rows per row group, and per chunk a compaction reads at once
_ROW_BITS = 40  # a row's address in a month: file index << _ROW_BITS | row in the file

_seq_lock = threading.Lock()
#: Held while ``_rejects.jsonl`` is read and rewritten: a sync appends from its writer thread
#: and its event loop at once (other processes wait on the dataset's sync lock).
_rejects_lock = threading.Lock()
_last_seq = 0


#: The part files' compression: Snappy, which every engine and version reading the cache decodes
#: (Spark's own default) and the cheapest to decode of those: analyses at 10M payments ran
#: 10-20% faster than on zstd, for files about 1.5x the size. (Parquet's old Hadoop-framed LZ4,
#: pyarrow's "lz4", broke Spark 4.3's reader on our files; LZ4_RAW needs Spark 3.5 or later.)
CODEC = "snappy"

#: A reader racing a compaction re-lists this many times before giving up.
READ_ATTEMPTS = 8

#: Folders beside the dataset (never inside it, so no reader's glob or discovery finds them).
STAGING = "_staging"
QUARANTINE = "_quarantine"
#: A high-water mark later than this machine's clock by more than this cannot be right.
CLOCK_SKEW = dt.timedelta(days=1)

#: Test seam: ``GWTOOLS_TEST_CRASH_AT=step`` (or ``step@n``) kills this process with SIGKILL the
#: first (n-th) time a writer passes ``step`` (see :func:`_step`), so crash tests are exact.
CRASH_ENV = "GWTOOLS_TEST_CRASH_AT"
#: Test seam: called with each step's name as a writer passes it (a test pauses a writer here).
on_step: Callable[[str], None] | None = None
_step_counts: dict[str, int] = {}


def _step(name: str) -> None:
    """A named point in writing: where a crash test kills the writer or a test pauses it."""
    target = os.environ.get(CRASH_ENV)
    if target:
        step, _, nth = target.partition("@")
        if step == name:
            _step_counts[name] = _step_counts.get(name, 0) + 1
            if _step_counts[name] == int(nth or 1):
                os.kill(os.getpid(), signal.SIGKILL)
    if on_step is not None:
        on_step(name)


def _warn(message: str) -> None:
    # Imported here: the sync imports this module.
    from gwtools.sync._result import GatewayDataWarning

    warnings.warn(message, GatewayDataWarning, stacklevel=user_stacklevel())


_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_READ_ONLY = {errno.EROFS, errno.EACCES, errno.EPERM}
_AGAIN = "then run the sync again (`gwtools sync`); nothing already cached was lost."


def _blocking_file(folder: Path) -> Path | None:
    """The file standing where ``folder`` or one of its parents should be a folder."""
    for p in (folder, *folder.parents):
        if p.exists():
            return None if p.is_dir() else p
    return None


def _cache_error(exc: OSError, folder: Path, doing: str) -> CacheError:
    """What went wrong writing the cache at ``folder``, in words a person can act on."""
    code = exc.errno
    if code is None:  # some Arrow messages carry the code in their text only
        found = re.search(r"errno (\d+)", str(exc))
        code = int(found.group(1)) if found else None
    reason = exc.strerror or str(exc)
    blocking = _blocking_file(folder)
    if blocking is not None:
        message = (
            f"cannot use {folder} as a cache folder: {blocking} is a file, not a folder. Move "
            "or rename that file, or point GW_CACHE_DIR (--cache-dir) at a folder, " + _AGAIN
        )
    elif code == errno.EISDIR and (exc.filename2 or exc.filename) is not None:
        # A folder where gwtools keeps a file (its lock, its rejects): that is what to move.
        # (A rename's is its destination: the source is gwtools' own temporary file.)
        in_the_way = os.fsdecode(exc.filename2 or exc.filename)
        message = (
            f"cannot write the cache at {folder} while {doing}: {in_the_way} is a folder, "
            "where gwtools keeps a file of that name. Move it away, " + _AGAIN
        )
    elif code == errno.EXDEV:
        # Running again cannot help: each merged month is renamed from _staging into it.
        message = (
            f"cannot write the cache at {folder} while {doing}: it and {STAGING} beside it "
            f"are on different file systems ({reason}), and the cache renames each merged "
            "file from there into the dataset, which works within one file system only. "
            "Keep the cache's folder for this account and mode on one file system (point "
            "GW_CACHE_DIR, --cache-dir, at the other disk rather than mounting or linking "
            "one folder of it there), " + _AGAIN
        )
    elif code in _FULL:
        message = (
            f"cannot write the cache at {folder} while {doing}: the disk is full ({reason}). "
            "Free some space, or point GW_CACHE_DIR (--cache-dir) at a folder on a disk with "
            "room, " + _AGAIN
        )
    elif code in _READ_ONLY:
        message = (
            f"cannot write the cache at {folder} while {doing}: the folder is read-only or not "
            f"writable by this user ({reason}). Make it writable, or point GW_CACHE_DIR "
            "(--cache-dir) at a writable folder, " + _AGAIN + " To read what is cached as it "
            "is, without syncing: refresh=False (gw.payments(refresh=False)), "
            "gwtools.read_cache or scan_cache of the folder, or `gwtools export --no-refresh`."
        )
    else:
        message = (
            f"cannot write the cache at {folder} while {doing}: {reason}. Check the folder, "
            + _AGAIN
        )
    # (errno/strerror are left unset: OSError would print them instead of the message.)
    return CacheError(message)


@contextlib.contextmanager
def _writing(folder: Path, doing: str) -> Iterator[None]:
    """Turn an OS error while writing the cache into a :class:`CacheError` naming the folder."""
    try:
        yield
    except CacheError:
        raise
    except OSError as exc:
        raise _cache_error(exc, folder, doing) from exc


def _reject_key(line: bytes) -> tuple[Any, bytes] | None:
    """Which record a ``_rejects.jsonl`` line rejects (its resource and raw record); None for
    a line that is not a whole record."""
    try:
        parsed = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    return parsed.get("resource"), orjson.dumps(parsed.get("record"))


def _parse_time(value: Any) -> dt.datetime | None:
    """An ISO 8601 time (naive = UTC) as an aware UTC datetime, or None if it is not one."""
    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value)
    except ValueError:
        return None
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


_IGNORED = "; it is ignored, so the next sync lists everything again (nothing cached is lost)"
#: What :meth:`Dataset._parsed_state` gives for a state file that is not there or not JSON.
_NO_STATE: Any = object()


def state_unreadable(path: str, exc: OSError, *, is_folder: bool) -> CacheError:
    """The error for a ``_state.json`` at ``path`` that is there but cannot be read: unlike
    a damaged one, it cannot be ignored, as the sync could not write its own there either."""
    if is_folder:
        problem = "is a folder, not the file where a sync records its state"
        fix = "Move that folder out of the cache (gwtools never makes it)"
    else:
        problem = f"cannot be read ({exc.strerror or exc})"
        fix = "Make it readable (and writable) by this user, or move it out of the cache"
    return CacheError(
        f"{path} {problem}. {fix}; then `gwtools sync` lists everything again, which "
        "rebuilds it (nothing cached is lost)"
    )


def _checked_state(raw: Any, path: Path) -> dict[str, Any]:
    """The state with every value that cannot be right dropped, with a warning for each.

    Without a usable high-water mark the next sync lists everything (a full sync), which is
    always correct; trusting a wrong one could stop fetching altogether.
    """
    then = _IGNORED
    if not isinstance(raw, dict):
        _warn(f"{path} is not a JSON object (hand-edited?){then}")
        return {}
    state = dict(raw)
    # The high-water mark plans the next sync; the sync times say whether one completed (a
    # cache read as complete on a hand-edited "last_full_sync": 5 would hide missing rows).
    for name, after in (
        ("high_water", then),
        ("last_full_sync", "; it is ignored, so the cache reads as partial until a sync completes"),
        ("last_sync", "; it is ignored"),
    ):
        value = state.get(name)
        if value is None:
            continue
        parsed = _parse_time(value)
        now = dt.datetime.now(dt.UTC)
        if parsed is None:
            problem = f"its {name} {value!r} is not an ISO 8601 time"
        elif parsed > now + CLOCK_SKEW:
            problem = (
                f"its {name} {value!r} is later than this machine's clock "
                f"({now.isoformat(timespec='seconds')})"
            )
        else:
            state[name] = parsed.isoformat()
            continue
        _warn(f"{path}: {problem}{after}")
        del state[name]
    owed = state.get("payments_to_reread")
    if owed is not None and not (isinstance(owed, list) and all(isinstance(i, str) for i in owed)):
        _warn(
            f"{path}: payments_to_reread is not a list of payment ids; it is ignored (run "
            "`gwtools sync --full` to re-read every payment's refunded amount)"
        )
        del state["payments_to_reread"]
    if state.get("api_variant") not in (None, "A", "B"):
        del state["api_variant"]  # only a hint for planning: detected again from the answers
    if "gateway" in state and not isinstance(state["gateway"], dict):
        del state["gateway"]  # a hand edit: the next sync records its own gateway again
    return state


def _next_seq() -> int:
    """A strictly increasing number (nanoseconds) that orders part files by write time."""
    global _last_seq
    with _seq_lock:
        _last_seq = max(_last_seq + 1, time.time_ns())
        return _last_seq


def _pandas_type(t: pa.DataType) -> Any:
    if pa.types.is_large_string(t) or pa.types.is_string(t):
        return _schema.STRING
    if pa.types.is_int64(t):
        return _schema.INT
    if pa.types.is_boolean(t):
        return _schema.BOOL
    return None


def to_pandas(table: pa.Table, resource: Resource) -> pd.DataFrame:
    """An Arrow table in the canonical schema -> the canonical DataFrame (dtypes exact)."""
    frame: pd.DataFrame = table.select(list(_schema.columns(resource))).to_pandas(
        types_mapper=_pandas_type
    )
    return frame


def to_arrow(frame: pd.DataFrame, resource: Resource) -> pa.Table:
    """A canonical DataFrame -> an Arrow table in the cache's schema."""
    return pa.Table.from_pandas(
        frame, schema=_schema.arrow_schema(resource), preserve_index=False
    ).replace_schema_metadata(None)


def _null_safe_equal(a: pa.ChunkedArray, b: pa.ChunkedArray) -> pa.ChunkedArray:
    eq = pc.fill_null(pc.equal(a, b), False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(eq, both_null)


def _newest_rows(table: pa.Table) -> pa.Array:
    """Indices of one row per id: the one with the highest ``_SEQ`` (later file, later row)."""
    keys = table.select(["id", _SEQ])
    order = pc.sort_indices(keys, sort_keys=[("id", "ascending"), (_SEQ, "descending")])
    ids = keys.column("id").take(order).combine_chunks()
    if len(ids) <= 1:
        return order
    first = pa.concat_arrays(
        [pa.array([True]), pc.not_equal(ids.slice(1), ids.slice(0, len(ids) - 1))]
    )
    return order.filter(pc.fill_null(first, True))


def _both(a: ds.Expression | None, b: ds.Expression | None) -> ds.Expression | None:
    """Two scan filters that may be missing, as one."""
    return b if a is None else a if b is None else a & b


def _newest_per_id(table: pa.Table, *, by_time: bool = False) -> pa.Table:
    """One row per id (newest ``_SEQ`` wins); ``by_time`` orders the result by creation time."""
    if table.num_rows == 0:
        return table
    return table.take(_keep_indices(table, by_time=by_time))


def _keep_indices(table: pa.Table, *, by_time: bool) -> pa.Array:
    """Indices of :func:`_newest_per_id`'s rows; only the key columns are sorted."""
    # Sorting the keys costs far less memory than a hash of the ids (count_distinct).
    keep = _newest_rows(table)
    if by_time and "created_at" in table.column_names:
        times = table.select(["created_at", "id"]).take(keep)
        keep = keep.take(
            pc.sort_indices(times, sort_keys=[("created_at", "ascending"), ("id", "ascending")])
        )
    return keep


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns and types (a file gwtools did not write)."""
    if table.schema.equals(schema):
        return table
    columns = [
        table.column(f.name).cast(f.type)
        if f.name in table.column_names
        else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _release_memory() -> None:
    """Hand freed Arrow memory back to the system.

    The allocator keeps freed pages for reuse; over a compaction's sorts and reads they add up
    to more than the rows held (this keeps a 1,000,000-row sync's peak under 500 MB).
    """
    pa.default_memory_pool().release_unused()


class _Files:
    """A month's part files, addressed row by row without reading them whole.

    A row's address (``_SEQ``) is ``file index << _ROW_BITS | row in file``: files are in
    write order, so a higher address is a newer version of the row.
    """

    def __init__(self, paths: Sequence[Path], schema: pa.Schema) -> None:
        self.paths = list(paths)
        self.schema = schema
        #: first row of each row group, per file (and the file's row count at the end)
        self.starts: list[np.ndarray] = []

    def keys(self) -> pa.Table:
        """``id``, ``created_at`` and the address of every row of every file."""
        key_schema = pa.schema([self.schema.field("id"), self.schema.field("created_at")])
        pieces = []
        for i, path in enumerate(self.paths):
            with pq.ParquetFile(path) as pf:
                sizes = [pf.metadata.row_group(g).num_rows for g in range(pf.num_row_groups)]
                present = [n for n in key_schema.names if n in pf.schema_arrow.names]
                table = _conform(pf.read(columns=present, use_threads=False), key_schema)
            self.starts.append(np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]))
            address = (i << _ROW_BITS) + np.arange(table.num_rows, dtype=np.int64)
            pieces.append(table.append_column(_SEQ, pa.array(address)))
        return pa.concat_tables(pieces) if pieces else key_schema.empty_table()

    def chunks(self, addresses: pa.Array | pa.ChunkedArray) -> Iterator[pa.Table]:
        """The rows at ``addresses``, ``_ROW_GROUP`` at a time."""
        for start in range(0, len(addresses), _ROW_GROUP):
            _release_memory()
            yield self.gather(addresses.slice(start, _ROW_GROUP))
        _release_memory()

    def gather(
        self, addresses: pa.Array | pa.ChunkedArray, columns: Sequence[str] | None = None
    ) -> pa.Table:
        """The rows at ``addresses``, in that order; reads only the row groups needed."""
        schema = (
            self.schema if columns is None else pa.schema([self.schema.field(c) for c in columns])
        )
        where = np.asarray(addresses.to_numpy(), dtype=np.int64)
        file_of = where >> _ROW_BITS
        row_of = where & ((1 << _ROW_BITS) - 1)
        pieces: list[pa.Table] = []
        positions: list[np.ndarray] = []
        for i in np.unique(file_of):
            mine = np.flatnonzero(file_of == i)
            rows = row_of[mine]
            starts = self.starts[i]
            groups = np.unique(np.searchsorted(starts, rows, side="right") - 1)
            with pq.ParquetFile(self.paths[i]) as pf:
                present = [n for n in schema.names if n in pf.schema_arrow.names]
                table = _conform(
                    pf.read_row_groups(groups.tolist(), present, use_threads=False), schema
                )
            # Row r of the file is row r - starts[g] + (rows of the groups read before g).
            sizes = starts[groups + 1] - starts[groups]
            offset = np.zeros(len(starts), dtype=np.int64)
            offset[groups] = np.cumsum(sizes) - sizes - starts[groups]
            group_of = np.searchsorted(starts, rows, side="right") - 1
            pieces.append(table.take(pa.array(rows + offset[group_of])))
            positions.append(mine)
            del table
        if not pieces:
            return schema.empty_table()
        gathered = pa.concat_tables(pieces)
        order = np.argsort(np.concatenate(positions), kind="stable")
        return gathered.take(pa.array(order))


@dataclass
class MergeStats:
    """What a merge did to the rows already cached."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0
    #: values of the ``collect`` column of the new and updated rows (see Dataset.compact)
    changed: set[Any] = field(default_factory=set)
    #: part files found damaged while merging, moved to quarantine (see Dataset.compact)
    quarantined: list[Path] = field(default_factory=list)
    #: staged batches found damaged while merging, deleted: their rows are missing
    dropped: list[Path] = field(default_factory=list)

    def __iadd__(self, other: MergeStats) -> MergeStats:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.changed |= other.changed
        self.quarantined += other.quarantined
        self.dropped += other.dropped
        return self


#: A resource's Parquet schema (built once per process by :func:`gwtools._schema.arrow_schema`).
_arrow_schema = _schema.arrow_schema


class Dataset:
    """One cached table (account x mode x resource) on disk.

    Writers (the sync) take :meth:`lock`, append batches with :meth:`write_batch`, then
    :meth:`compact` the months they touched and finally :meth:`write_state`.
    """

    def __init__(self, path: str | os.PathLike[str], resource: Resource) -> None:
        _schema.columns(resource)  # validates the name
        self.path = Path(path)
        self.resource: Resource = resource
        self.schema = _arrow_schema(resource)

    @classmethod
    def at(
        cls, cache_dir: str | os.PathLike[str], account: str, mode: str, resource: Resource
    ) -> Dataset:
        return cls(cache_folder(cache_dir, account, mode) / resource, resource)

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r}, {self.resource!r})"

    # -- state, lock, rejects ------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.path / "_state.json"

    @property
    def rejects_path(self) -> Path:
        return self.path / "_rejects.jsonl"

    @property
    def staging_path(self) -> Path:
        """Where a sync's batches wait to be merged: beside the dataset, never inside it."""
        return self.path.parent / STAGING / self.path.name

    @property
    def quarantine_path(self) -> Path:
        """Where files that could not be read are moved: beside the dataset."""
        return self.path.parent / QUARANTINE / self.path.name

    def exists(self) -> bool:
        return self.path.is_dir() and (self.state_path.exists() or any(self._partitions()))

    def state(self) -> dict[str, Any]:
        """The state written by the last completed sync ({} if there was none).

        Values that cannot be right (a hand-edited file) are dropped with a warning, so the
        next sync lists everything rather than trusting them. Raises :class:`CacheError` if
        a newer gwtools wrote it (see :meth:`check_version`).
        """
        parsed = self._parsed_state(warn=True)
        if parsed is _NO_STATE:
            return {}
        self._refuse_newer(parsed)
        return _checked_state(parsed, self.state_path)

    def check_version(self) -> None:
        """Raise :class:`CacheError` if a newer gwtools (a higher ``schema_version``) wrote
        this dataset: this one cannot know what its files and state mean, and its sync would
        rewrite them in the older format. An older or missing version is read as it is."""
        self._refuse_newer(self._parsed_state(warn=False))

    def _state_bytes(self) -> bytes | None:
        """``_state.json``'s bytes, None if there is none."""
        try:
            return self.state_path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise state_unreadable(
                str(self.state_path), exc, is_folder=self.state_path.is_dir()
            ) from None

    def _parsed_state(self, *, warn: bool) -> Any:
        """``_state.json`` as parsed JSON; ``_NO_STATE`` if there is none, or it is not JSON
        (JSON's ``null`` is parsed, so that :func:`_checked_state` says it is no object)."""
        raw = self._state_bytes()
        if raw is None:
            return _NO_STATE
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            if warn:
                # We write it atomically: only a hand-edited or damaged file is unparsable.
                _warn(f"{self.state_path} is not valid JSON (hand-edited or damaged){_IGNORED}")
            return _NO_STATE

    def _refuse_newer(self, parsed: Any) -> None:
        version = parsed.get("schema_version") if isinstance(parsed, dict) else None
        # bool is an int: ``true`` is a hand edit, not a version.
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise CacheError(
                f"the cache at {self.path} was written by a newer gwtools (cache schema version "
                f"{version}; this gwtools reads version {SCHEMA_VERSION} and older), so it is "
                "left as it is. Upgrade gwtools (pip install -U gwtools) to use it, or sync "
                "into another cache folder (GW_CACHE_DIR, --cache-dir or "
                "connect(cache_dir=...))"
            )

    def completed(self, state: dict[str, Any] | None = None) -> bool:
        """Whether a sync of this dataset has ever completed (else what is cached is partial);
        pass ``state`` when it was already read."""
        state = self.state() if state is None else state
        return bool(state.get("last_full_sync") or state.get("high_water"))

    def write_state(self, state: dict[str, Any]) -> None:
        # This gwtools wrote it: an older version read back (state() refuses newer ones) is
        # stamped with this one, which reads every older cache as it is.
        state = {"schema_version": SCHEMA_VERSION, "resource": self.resource, **state}
        state["schema_version"] = SCHEMA_VERSION
        with _writing(self.path, "writing the sync state"):
            self._atomic_write(self.state_path, orjson.dumps(state, option=orjson.OPT_INDENT_2))
            self._remove_empty_staging()

    def file_lock(self, timeout: float = -1) -> FileLock:
        """The dataset's sync lock (usable across threads); a second sync waits on it.

        Raises :class:`CacheError` at once if the folder cannot be written, rather than
        failing half-way through a sync.
        """
        lock_path = self.path / "_sync.lock"
        with _writing(self.path, "creating the cache folder"):
            _make_folder(self.path)
            with open(lock_path, "a"):
                pass
        return FileLock(str(lock_path), timeout=timeout, thread_local=False)

    @contextlib.contextmanager
    def lock(self, timeout: float = -1) -> Iterator[None]:
        """Hold the sync lock; clear what a killed writer left and quarantine damaged files."""
        with self.file_lock(timeout):
            self.recover()
            yield

    def append_rejects(
        self, rejects: Iterable[Any], *, sync_id: str, secret: str | None = None
    ) -> int:
        """Append rejected records (reason, raw record, time) as JSON lines; returns how many.

        A record may echo the API key (a proxy repeating the request's headers): the reason and
        the record are written with ``secret`` (the key the sync sent), and anything shaped
        like a key, masked (``sk_test_…abcd``).
        """
        from gwtools._errors import redact

        def masked(value: Any) -> Any:
            if isinstance(value, bytes | bytearray | memoryview):
                value = bytes(value).decode("utf-8", errors="replace")
            if isinstance(value, str):
                return redact(value, secret)
            if isinstance(value, dict):
                return {masked(k): masked(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [masked(v) for v in value]
            return value

        now = dt.datetime.now(dt.UTC).isoformat()
        lines = [
            orjson.dumps(
                {
                    "time": now,
                    "sync_id": sync_id,
                    "resource": getattr(r, "resource", self.resource),
                    "reason": masked(getattr(r, "reason", str(r))),
                    "record": masked(getattr(r, "record", None)),
                },
                default=_json_default,
            )
            for r in rejects
        ]
        if lines:
            with _rejects_lock, _writing(self.path, "recording rejected records"):
                self.path.mkdir(parents=True, exist_ok=True)
                with open(self.rejects_path, "ab+") as fh:
                    # A sync killed while appending leaves a last line without its end: end
                    # it, so this append's records stay lines of their own.
                    fh.seek(max(fh.seek(0, os.SEEK_END) - 1, 0))
                    ended = fh.read(1) in (b"", b"\n")  # empty, or its last line is whole
                    fh.write((b"" if ended else b"\n") + b"\n".join(lines) + b"\n")
                    fh.flush()
                    os.fsync(fh.fileno())
        return len(lines)

    def prune_rejects(self, sync_id: str) -> None:
        """Drop the lines of earlier syncs that reject a record sync ``sync_id`` rejected
        again; called once a sync has appended all its rejects.

        Every full sync lists a bad record again (and every incremental one re-reads a
        vanished id again): a line per sync grew the file without bound. Only the newest
        sync's line for a record is kept; a sync keeps all its own, so they still add up to
        its ``rejected`` count. Done once per sync, not per append: rewriting the file for
        each batch would cost its whole size every time.
        """
        mine = b'"sync_id":' + orjson.dumps(sync_id)
        with _rejects_lock, _writing(self.path, "recording rejected records"):
            try:
                old = self.rejects_path.read_bytes().splitlines()
            except FileNotFoundError:
                return
            again = {_reject_key(line) for line in old if mine in line}
            again.discard(None)
            kept = [
                line
                for line in old
                if line.strip() and (mine in line or _reject_key(line) not in again)
            ]
            if len(kept) == len(old):
                return
            # Rewritten whole, so a kill leaves the old file or the new one; a torn line (a
            # sync killed while appending) stays a line of its own.
            self._atomic_write(
                self.rejects_path, b"".join(line + b"\n" for line in kept), step=None
            )
            self._remove_empty_staging()

    def rejects(self) -> pd.DataFrame:
        """The rejected records so far (columns time, sync_id, resource, reason, record)."""
        try:
            raw = self.rejects_path.read_bytes().splitlines()
        except FileNotFoundError:
            raw = []
        rows, torn = [], []
        for number, line in enumerate(raw, 1):
            if not line.strip():
                continue
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError:
                torn.append(number)
        if torn:
            # Only a sync killed mid-append writes such a line; the next sync fetched (and
            # recorded) those records again, as it fetches everything after the last one
            # completed.
            _warn(
                f"{self.rejects_path}: line {', '.join(map(str, torn))} is not a whole record "
                "(a sync was stopped while writing it) and is left out; the next sync "
                "fetches those records again, from the last completed sync on, and records "
                "what it rejects anew"
            )
        return pd.DataFrame(rows, columns=["time", "sync_id", "resource", "reason", "record"])

    # -- recovery --------------------------------------------------------------------------
    def recover(self) -> list[Path]:
        """Under the sync lock, before writing: clear temporaries a killed writer left, and
        quarantine part files that cannot be read (returns where they went)."""
        # First: files in a newer gwtools' format could look unreadable and be moved aside.
        self.check_version()
        with _writing(self.path, "clearing what an interrupted sync left"):
            self.remove_temporaries()
            self._remove_empty_months()
            moved = self.quarantine_unreadable()
        self._number_after_files()
        return moved

    def _number_after_files(self) -> None:
        """Number what this process writes next after every part file already there.

        A file's number (its name) says which version of a row is newer, and comes from the
        clock of the machine that wrote it: a cache synced from a machine whose clock runs
        ahead (a shared folder), or before the clock was set back, holds numbers above this
        clock's, and this sync's newer rows would lose to them.
        """
        global _last_seq
        files = [f for p in self._partitions() for f in self._files_in(p)]
        newest = max(map(self._file_seq, [*files, *self._staged_files()]), default=0)
        with _seq_lock:
            _last_seq = max(_last_seq, newest)

    def quarantine_unreadable(self) -> list[Path]:
        """Move every part file whose Parquet footer cannot be read (zero bytes, truncated,
        not Parquet) to :attr:`quarantine_path`, and lower the high-water mark to the start of
        its month, so the next incremental sync fetches that month (and later ones) again.

        Staged batches that cannot be read are deleted: they were never part of the dataset.
        """
        for f in self._staged_files():
            if _unreadable(f) is not None:
                f.unlink(missing_ok=True)
        damaged = [
            (f, why)
            for p in self._partitions()
            for f in self._files_in(p)
            if (why := _unreadable(f)) is not None
        ]
        return self._quarantine(damaged, lower=True)

    def _quarantine(
        self, damaged: Sequence[tuple[Path, str]], *, lower: bool, then: str = "The sync fetches"
    ) -> list[Path]:
        """Move the part files ``damaged`` (with why each cannot be read) to
        :attr:`quarantine_path`, with a warning each (``then``: who fetches their months again);
        ``lower``: first lower the high-water mark to the start of their earliest month, so the
        next incremental sync fetches it again."""
        if not damaged:
            return []
        if lower:
            # First the state, then the move: killed in between, the file is still there and
            # the next sync quarantines it again.
            self._lower_mark(f.parent.name.split("=", 1)[1] for f, _ in damaged)
        moved = []
        for f, why in damaged:
            partition = f.parent
            target_dir = self.quarantine_path / partition.name
            # Named for the folder it goes to: a file standing in its way is what to move.
            with _writing(target_dir, "moving a file that cannot be read aside"):
                _make_folder(target_dir)
                target = target_dir / f.name
                if target.exists():
                    target = target_dir / f"{f.stem}-{uuid.uuid4().hex[:8]}{f.suffix}"
                os.replace(f, target)
                # On disk in quarantine before a flush of its month (the merge's) makes its
                # removal there last: kept for inspection, not lost with a power cut.
                _fsync_dir(target_dir)
            # The move's time, where a copy of the cache keeps it (its ctime is the copy's):
            # a read compares it with the last sync's, to say whether the month is still owed.
            with contextlib.suppress(OSError):
                os.utime(target)
            _step("quarantine.moved")
            moved.append(target)
            _warn(
                f"{f} could not be read ({why}); moved it to {target}. {then} "
                f"{partition.name.split('=', 1)[1]} again, so nothing is lost once it completes; "
                "delete the quarantined file when you no longer need it"
            )
        return moved

    def _lower_mark(self, months: Iterable[str]) -> None:
        """Lower the high-water mark to the start of the earliest of ``months``, so the next
        incremental sync fetches them (and every later one) again."""
        state = self.state()
        if not state.get("high_water"):
            return
        starts = [_month_start(m) for m in months]
        # An unknown month (no creation time) can be anywhere: list everything.
        lowest = None if None in starts else min(s for s in starts if s is not None)
        high = _parse_time(state["high_water"])
        if lowest is None or high is None or lowest < high:
            state["high_water"] = None if lowest is None else lowest.isoformat()
            self.write_state(state)

    # -- writing -------------------------------------------------------------------------
    def stage_batch(self, frame: pd.DataFrame | pa.Table) -> set[str]:
        """Write canonical rows to :attr:`staging_path`, one file per creation month; returns
        the months. Nothing is visible to readers until :meth:`compact` merges them.

        Within the batch, the last row of an id wins. Each staged file appears atomically.
        """
        table = frame if isinstance(frame, pa.Table) else to_arrow(frame, self.resource)
        if table.num_rows == 0:
            return set()
        seq = pa.array(np.arange(table.num_rows, dtype=np.int64))
        # In creation order, so compaction finds a chunk's rows in few row groups.
        table = _newest_per_id(table.append_column(_SEQ, seq), by_time=True).drop_columns([_SEQ])
        months = pc.fill_null(pc.strftime(table.column("created_at"), "%Y-%m"), _UNKNOWN_MONTH)
        table = table.append_column(PARTITION, months)
        written: set[str] = set()
        with _writing(self.staging_path, "writing a batch"):
            for month in pc.unique(months).to_pylist():
                part = table.filter(pc.equal(table.column(PARTITION), month)).drop_columns(
                    [PARTITION]
                )
                self._write_part(
                    self.staging_path / f"{PARTITION}={month}",
                    (part.slice(i, _ROW_GROUP) for i in range(0, part.num_rows, _ROW_GROUP)),
                    step="stage",
                )
                written.add(month)
        return written

    def write_batch(self, frame: pd.DataFrame | pa.Table) -> set[str]:
        """Write canonical rows into the dataset at once (stage, then :meth:`compact` their
        months); returns the months. A sync stages all its batches and compacts once."""
        months = self.stage_batch(frame)
        self.compact(months)
        return months

    def compact(
        self,
        months: Iterable[str],
        *,
        since_seq: int = 0,
        replace: bool = False,
        collect: str | None = None,
    ) -> MergeStats:
        """Merge the staged batches into the dataset: each month becomes one file with one
        row per id (newest wins). The last step of every sync (hold the lock).

        Besides ``months``, every month with staged batches (a killed sync's too) or with
        several files (an older gwtools, an interrupted compaction) is compacted, so the
        dataset always ends with one row per id for engines that read the files directly.

        Staged rows (this sync's, and any a killed sync left, which never reached the
        dataset) are compared with the dataset's rows, to count new, updated and unchanged
        rows; the non-null values of column ``collect`` in the new and updated rows are
        returned too. ``replace=True`` (after a complete full sync) keeps only the rows in
        files written at or after ``since_seq`` (this sync): months it did not touch are
        removed, and ids it did not see are dropped, so the cache equals what was fetched.
        """
        stats = MergeStats()
        months = set(months)
        with _writing(self.path, "merging this sync's batches into the cache"):
            _step("compact.start")
            pending = self._staged_months() | {
                p.name.split("=", 1)[1] for p in self._partitions() if len(self._files_in(p)) > 1
            }
            todo = months if replace else months | pending
            for month in sorted(todo):  # one month at a time: memory stays flat
                stats += self._merge_month(month, since_seq, replace, collect)
                _step("compact.month-done")
            if replace:
                dropped = False
                for p in self._partitions():
                    if p.name.split("=", 1)[1] not in months:
                        for f in self._files_in(p):
                            f.unlink(missing_ok=True)
                        # On disk before the state that says the cache equals the gateway: a
                        # month brought back by a power cut would hold rows it no longer lists.
                        _fsync_dir(p)
                        with contextlib.suppress(OSError):
                            p.rmdir()
                        dropped = True
                        _step("compact.removed-month")
                if dropped:
                    _fsync_dir(self.path)
                for f in self._staged_files():  # a killed sync's batches of removed months
                    f.unlink(missing_ok=True)
            if self.staging_path.is_dir():
                # The merged batches' deletions on disk before the state moves on: one brought
                # back by a power cut would be merged again, over newer rows of a later sync
                # (its number is above the month file's, whose name a merge keeps). They are
                # entries of their month's folder, which flushing staging's does not cover.
                for p in self._partitions(self.staging_path):
                    _fsync_dir(p)
                _fsync_dir(self.staging_path)
            self._remove_empty_staging()
        return stats

    def _merge_month(
        self, month: str, since_seq: int, replace: bool, collect: str | None
    ) -> MergeStats:
        """:meth:`_compact_month`; a part file whose pages cannot be read (its footer can: the
        sync's first step did not see it) is moved to quarantine and the month merged without
        it. Unless this is a full sync's replace (which fetched the month again), the
        high-water mark is lowered to the month's start, so the next sync fetches it again. A
        damaged staged batch is deleted (:attr:`MergeStats.dropped`: the sync is incomplete),
        and its month merged without replacing (its cached rows kept) and fetched again."""
        try:
            return self._compact_month(month, since_seq, replace, collect)
        except (pa.ArrowException, OSError) as exc:
            if isinstance(exc, FileNotFoundError) or getattr(exc, "errno", None) in (
                _FULL | _READ_ONLY
            ):
                raise  # a write that failed: no file to look for
            staged = [f for f in self._staged_files(month) if _damaged(f)]
            damaged = [(f, why) for f in self._files(month) if (why := _damaged(f))]
            if not damaged and not staged:
                raise  # not a damaged file: a full disk, a read-only folder, ...
            if staged:
                # Their rows are gone: a full sync's replace would drop the month's cached
                # versions of them too. Keep the month's rows instead, and fetch it again.
                replace = False
                self._lower_mark([month])  # first the mark: killed after, it is still owed
            for f in staged:  # never part of the dataset: listed again by an incomplete sync
                f.unlink(missing_ok=True)
            then = (
                "This full sync fetched"
                if replace
                else "This sync says it is incomplete, and the next one fetches"
            )
            moved = self._quarantine(damaged, lower=not replace, then=then)
        stats = self._compact_month(month, since_seq, replace, collect)
        stats.quarantined += moved
        stats.dropped += staged
        return stats

    def _compact_month(
        self, month: str, since_seq: int, replace: bool, collect: str | None
    ) -> MergeStats:
        """Stream one month's file and staged batches into one file: choose rows by their
        keys, then copy them in chunks; rename the result over the month's file.

        Only ``id``, ``created_at`` and each row's position are held for the whole month;
        full rows are read, compared and written ``_ROW_GROUP`` at a time, so memory does not
        grow with the month.
        """
        current = self._files(month)
        staged = self._staged_files(month)
        if not staged and len(current) <= 1:
            return MergeStats()
        # Write order (the name's sequence number): a later file holds newer versions.
        files = sorted([*current, *staged], key=lambda f: (self._file_seq(f), f.name))
        seqs = [self._file_seq(f) for f in files]
        source = _Files(files, self.schema)
        keys = source.keys()
        file_of_row = pc.shift_right(keys.column(_SEQ), _ROW_BITS)
        # A killed sync's staged rows are news to the dataset too: counted as old, their
        # changes (a refund's payment to re-read) would be lost with that sync.
        unmerged = set(staged)
        is_new = pa.array([f in unmerged for f in files]).take(file_of_row)
        stats = self._merge_stats(source, keys, is_new, collect)
        if replace:
            keep = keys.filter(pa.array([s >= since_seq for s in seqs]).take(file_of_row))
        else:
            keep = keys
        directory = self.path / f"{PARTITION}={month}"
        # The month keeps the name of its newest file: renaming over it swaps the month for
        # readers in one step (no moment with both versions, or with none).
        newest = max(current, key=lambda f: (self._file_seq(f), f.name)) if current else None
        if keep.num_rows:
            rows = keep.column(_SEQ).take(_keep_indices(keep, by_time=True))
            del keys, keep, is_new
            final = self._write_part(
                directory, source.chunks(rows), step="compact", name=newest.name if newest else None
            )
        else:
            final = None
        for f in current:
            if f != final:
                f.unlink(missing_ok=True)
        _step("compact.replaced")
        for f in staged:
            f.unlink(missing_ok=True)
        return stats

    def _merge_stats(
        self, source: _Files, keys: pa.Table, is_new: pa.ChunkedArray, collect: str | None
    ) -> MergeStats:
        """New, updated and unchanged rows of this sync's files against the older files."""
        new = _newest_per_id(keys.filter(is_new))
        if new.num_rows == 0:
            return MergeStats()
        old = _newest_per_id(keys.filter(pc.invert(is_new)))
        # Match versions of an id by sorting (a hash of a month's ids costs far more memory):
        # ids sorted, this sync's version first, so a match is a row and the next one.
        both = pa.table(
            {
                "id": pa.chunked_array([*new.column("id").chunks, *old.column("id").chunks]),
                "new": pa.chunked_array(
                    [
                        pa.repeat(pa.scalar(True), new.num_rows),
                        pa.repeat(pa.scalar(False), old.num_rows),
                    ]
                ),
                _SEQ: pa.chunked_array([*new.column(_SEQ).chunks, *old.column(_SEQ).chunks]),
            }
        )
        both = both.take(
            pc.sort_indices(both, sort_keys=[("id", "ascending"), ("new", "descending")])
        )
        ids = both.column("id").combine_chunks()
        flags = both.column("new").to_numpy(zero_copy_only=False)
        same_id = np.asarray(pc.equal(ids.slice(1), ids.slice(0, len(ids) - 1)), dtype=bool)
        matched = np.flatnonzero(same_id)  # row i is this sync's version, row i + 1 the cached one
        seqs = both.column(_SEQ).to_numpy()
        n_common = len(matched)
        in_old = np.zeros(len(ids), dtype=bool)
        in_old[matched] = True
        changed: set[Any] = set()
        if collect is not None:
            added = pa.array(seqs[flags & ~in_old])
            for start in range(0, len(added), _ROW_GROUP):
                chunk = source.gather(added.slice(start, _ROW_GROUP), [collect])
                changed.update(chunk.column(collect).drop_null().to_pylist())
        # Pairs (this sync's version, the cached version) of one id, in the cached file's
        # order, so each chunk reads few row groups.
        pairs = pa.table({"new": seqs[matched], "old": seqs[matched + 1]}).sort_by("old")
        unchanged = 0
        for start in range(0, n_common, _ROW_GROUP):
            chunk = pairs.slice(start, _ROW_GROUP)
            a = source.gather(chunk.column("new"))
            b = source.gather(chunk.column("old"))
            same: pa.ChunkedArray | pa.Array = pa.array([True] * chunk.num_rows)
            for name in _schema.columns(self.resource):
                same = pc.and_(same, _null_safe_equal(a.column(name), b.column(name)))
            unchanged += int(pc.sum(same).as_py() or 0)
            if collect is not None:
                updated = a.column(collect).filter(pc.invert(same))
                changed.update(updated.drop_null().to_pylist())
        return MergeStats(
            new=new.num_rows - n_common,
            updated=n_common - unchanged,
            unchanged=unchanged,
            changed=changed,
        )

    # -- reading -------------------------------------------------------------------------
    def read_table(
        self,
        *,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
        columns: Sequence[str] | None = None,
        ids: Collection[str] | None = None,
        quarantine: bool = False,
    ) -> pa.Table:
        """The cached rows (one per id, newest version) as Arrow, filtered and projected;
        ``ids`` keeps only the rows with those ids (the sync's: the few rows it re-reads).

        Raises :class:`CacheError` naming a part file that cannot be read (the next sync
        quarantines it). Safe while another process syncs: compaction renames a month's new
        file over the old one, and when a listed file has gone, listing again finds a
        complete set. ``quarantine`` (the sync's reads, under its lock): such a file is moved
        to quarantine instead, lowering the high-water mark to its month's start, and the
        others are read.
        """
        table, damaged = self._read(since, until, status, columns, skip_damaged=quarantine, ids=ids)
        if damaged:
            self._quarantine(list(damaged.items()), lower=True)
        return table

    def _read(
        self,
        since: Any,
        until: Any,
        status: str | Sequence[str] | None,
        columns: Sequence[str] | None,
        *,
        skip_damaged: bool,
        meter: ResultMeter | None = None,
        ids: Collection[str] | None = None,
    ) -> tuple[pa.Table, dict[Path, str]]:
        # The one check of what a read selects (unknown status, since >= until: errors).
        where = check_filters(self.resource, since, until, status)
        # Every version of an id passes alike: a filter for any file, before the newest wins.
        picked = None if ids is None else ds.field("id").isin(sorted(ids))
        for attempt in range(READ_ATTEMPTS):
            try:
                return self._read_table_once(where, columns, skip_damaged, meter, picked)
            except FileNotFoundError:
                if attempt == READ_ATTEMPTS - 1:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    def _read_table_once(
        self,
        where: Filters,
        columns: Sequence[str] | None,
        skip_damaged: bool,
        meter: ResultMeter | None,
        picked: ds.Expression | None = None,
    ) -> tuple[pa.Table, dict[Path, str]]:
        cols = list(columns) if columns is not None else list(_schema.columns(self.resource))
        filtered = [
            *(["created_at"] if where.since is not None or where.until is not None else []),
            *(["status"] if where.status is not None else []),
        ]
        need = list(dict.fromkeys([*cols, "id", *filtered]))
        # One listing decides both the files and whether they need deduplicating: a batch
        # written after it is simply not part of this read.
        listed = [self._files_in(p) for p in self._partitions()]
        damaged: dict[Path, str] = {}
        while True:
            try:
                table = self._read_files(listed, need, where, meter, picked)
                break
            except (pa.ArrowInvalid, OSError) as exc:
                if isinstance(exc, FileNotFoundError):
                    raise
                # Find the culprits (a footer, else a page, that cannot be read), then read
                # the others.
                found = {f: why for m in listed for f in m if (why := _unreadable(f))}
                pages = not found
                if pages:
                    found = {f: why for m in listed for f in m if (why := _damaged(f))}
                if not found or set(found) <= set(damaged):
                    raise CacheError(
                        f"cannot read the cache at {self.path}: {exc}. Run `gwtools sync --full` "
                        "to rebuild it"
                    ) from exc
                damaged.update(found)
                if not skip_damaged:
                    f, why = next(iter(found.items()))
                    # A damaged page is found only by reading it: a full sync reads every file.
                    who = "`gwtools sync --full`" if pages else "The next `gwtools sync`"
                    raise CacheError(
                        f"cannot read {f} ({why}). {who} moves it to {self.quarantine_path} "
                        "and fetches its month again"
                    ) from exc
                listed = [[f for f in m if f not in damaged] for m in listed]
        # The time bounds were pushed into the scan; the statuses apply after the newest
        # version of each id is chosen (an older file may hold an old status).
        statuses = Filters(None, None, where.status)
        return statuses.apply(table).select(cols), damaged

    def _read_files(
        self,
        listed: list[list[Path]],
        need: list[str],
        where: Filters,
        meter: ResultMeter | None = None,
        picked: ds.Expression | None = None,
    ) -> pa.Table:
        """The listed files' rows (newest version per id) within ``where``'s times, and its
        statuses where each id is in one file (a read of failed payments then holds, and
        counts, only them); ``meter`` sees every batch read and stops a read that outgrows it."""
        files = [f for month in listed for f in month]
        if meter is not None:
            meter.reset()  # a read tried again (a file gone, one damaged) counts from zero
        if not files:
            return self.schema.empty_table().select(need)
        if all(len(month) <= 1 for month in listed):
            dataset = ds.dataset(
                [str(f) for f in files], schema=self.schema, format="parquet", partitioning=None
            )
            scanner = dataset.scanner(
                columns=need, filter=_both(where.arrow(statuses=True), picked)
            )
            if meter is None:
                return scanner.to_table()
            return meter.table(scanner.to_batches(), scanner.projected_schema)
        # Interrupted compaction: several versions of an id can coexist; newest file wins.
        pieces = []
        time_filter = _both(where.arrow(), picked)
        for seq, f in enumerate(files):
            t = pq.read_table(f, schema=self.schema, columns=need)
            if time_filter is not None:
                t = t.filter(time_filter)
            if meter is not None:
                meter.add(t.nbytes, t.num_rows)
            pieces.append(t.append_column(_SEQ, pa.repeat(pa.scalar(seq, pa.int64()), t.num_rows)))
        table = _newest_per_id(pa.concat_tables(pieces)).drop_columns([_SEQ])
        if "created_at" in need:
            table = table.sort_by([("created_at", "ascending"), ("id", "ascending")])
        return table

    def read(
        self,
        *,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
        strict: bool = False,
    ) -> pd.DataFrame:
        """The cached canonical table as a DataFrame (see :func:`read_cache`).

        ``frame.attrs["gwtools_cache"]`` says whether the cache is complete; a partial one
        (no sync ever completed, or a file that cannot be read) warns, or with ``strict=True``
        raises :class:`CacheError`.
        """
        # Before the files: a newer gwtools' files could fail to read, with an error that
        # hides the reason (and names a `sync --full` that would be refused).
        state = self.state()
        meter = ResultMeter(
            f"Reading the cached {self.resource} at {self.path} into pandas",
            f"Ask for part of them (since=, until=, status=), or work on them without loading "
            f"them: gwtools.scan_cache(path, {self.resource!r}) or gw.scan({self.resource!r}) "
            "is a lazy table every analysis takes.",
        )
        table, damaged = self._read(since, until, status, None, skip_damaged=True, meter=meter)
        frame = to_pandas(table, self.resource)
        completed = self.completed(state)
        problems = []
        if not completed:
            started = state.get("last_sync") or self._oldest_file_time()
            problems.append(
                f"the cached {self.resource} at {self.path} are partial: no sync of them has "
                f"completed ({len(frame):,} rows{' read' if since or until or status else ''}, "
                f"written since {started or 'an unknown time'}), so rows may be missing"
            )
        for f, why in damaged.items():
            # Its footer reads (its pages do not): only a sync that reads it whole, a full
            # one, finds it.
            who = "the next sync" if _unreadable(f) else "`gwtools sync --full`"
            problems.append(
                f"{f} cannot be read ({why}), so its rows are missing; {who} moves it "
                f"to {self.quarantine_path} and fetches its month again"
            )
        # Moved aside after the last sync wrote its state: their months are not back yet.
        synced_at = _parse_time(state.get("last_sync"))
        waiting = sorted(
            p.name.split("=", 1)[1]
            for p in self._partitions(self.quarantine_path)
            for f in self._files_in(p)
            if synced_at is None or f.stat().st_mtime > synced_at.timestamp()
        )
        if waiting:
            problems.append(
                f"files of {', '.join(dict.fromkeys(waiting))} that could not be read were moved "
                f"to {self.quarantine_path}, and no sync has fetched those months again yet"
            )
        message = None
        if problems:
            message = (
                "; ".join(problems) + ". Run `gwtools sync` (or gwtools.connect().sync()) to "
                "complete the cache"
            )
            if strict:
                raise CacheError(message)
            _warn(message + "; read_cache(..., strict=True) raises instead of warning")
        set_cache_attrs(frame, str(self.path), state, message, damaged)
        return frame

    def _oldest_file_time(self) -> str | None:
        times = [f.stat().st_mtime for p in self._partitions() for f in self._files_in(p)]
        if not times:
            return None
        return dt.datetime.fromtimestamp(min(times), dt.UTC).isoformat(timespec="seconds")

    # -- files ---------------------------------------------------------------------------
    def _partitions(self, root: Path | None = None) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(root or self.path), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return
        for e in entries:
            if e.is_dir() and e.name.startswith(f"{PARTITION}="):
                yield Path(e.path)

    @staticmethod
    def _files_in(partition: Path) -> list[Path]:
        try:
            entries = list(os.scandir(partition))
        except FileNotFoundError:  # removed by a full sync since it was listed
            return []
        return sorted(Path(e.path) for e in entries if e.is_file() and visible(e.name))

    def _files(self, month: str) -> list[Path]:
        return self._files_in(self.path / f"{PARTITION}={month}")

    def _staged_files(self, month: str | None = None) -> list[Path]:
        if month is not None:
            return self._files_in(self.staging_path / f"{PARTITION}={month}")
        return [f for p in self._partitions(self.staging_path) for f in self._files_in(p)]

    def staged_values(self, column: str) -> set[Any]:
        """The non-null values of ``column`` in the staged batches (this sync's, and a killed
        sync's): what the next :meth:`compact` may bring into the dataset."""
        values: set[Any] = set()
        for f in self._staged_files():
            try:
                table = pq.read_table(f, columns=[column])
            except (pa.ArrowException, OSError):
                if _damaged(f) is None:
                    raise
                # Bytes lost inside it: the merge drops it and says the sync is incomplete,
                # so its rows (and these values) are fetched again, not read from it.
                continue
            values.update(table.column(column).drop_null().to_pylist())
        return values

    def _staged_months(self) -> set[str]:
        return {
            p.name.split("=", 1)[1]
            for p in self._partitions(self.staging_path)
            if self._files_in(p)
        }

    def _remove_empty_staging(self) -> None:
        for p in self._partitions(self.staging_path):
            with contextlib.suppress(OSError):
                p.rmdir()
        for p in (self.staging_path, self.staging_path.parent):
            with contextlib.suppress(OSError):
                p.rmdir()

    @staticmethod
    def _file_seq(path: Path) -> int:
        try:
            return int(path.name.split("-")[1])
        except (IndexError, ValueError):
            return 0  # a file not written by gwtools: treat as oldest

    def _write_part(
        self, directory: Path, chunks: Iterable[pa.Table], *, step: str, name: str | None = None
    ) -> Path:
        """Write ``chunks`` (one row group each) as one part file in ``directory``, atomically:
        written under a temporary name in the staging folder, then renamed into place. A new
        month's folder in the dataset is built in the staging folder and renamed into place
        with its file: a write that fails or is killed leaves no empty month folder, which
        would read as a dataset (a cache holding an account that has nothing cached)."""
        into_dataset = directory.is_relative_to(self.path)
        new_month = into_dataset and not directory.is_dir()
        self.staging_path.mkdir(parents=True, exist_ok=True)
        if new_month:
            _make_folder(self.path)
            building = self.staging_path / f".tmp-{uuid.uuid4().hex[:8]}-{directory.name}"
            building.mkdir()
        else:
            building = directory
            directory.mkdir(parents=True, exist_ok=True)
        final = building / (name or f"part-{_next_seq():020d}-{uuid.uuid4().hex[:8]}.parquet")
        tmp = self.staging_path / f".tmp-{uuid.uuid4().hex[:8]}-{final.name}"
        # The rename itself on disk before the sync goes on to the state that counts on it.
        # (A staged batch's rename may be lost: the mark has not moved, and the next sync
        # lists its rows again.)
        # (The writer closes, its footer written, before replacing flushes and renames.)
        try:
            with (
                replacing(final, tmp, step=f"{step}.tmp-written", flush_folder=into_dataset),
                pq.ParquetWriter(tmp, self.schema, compression=CODEC) as writer,
            ):
                for i, chunk in enumerate(chunks):
                    writer.write_table(chunk)
                    if i == 0:
                        _step(f"{step}.tmp-open")
            if new_month:
                os.replace(building, directory)
                final = directory / final.name
        except BaseException:
            if new_month:
                shutil.rmtree(building, ignore_errors=True)  # a full disk wants its space back
            raise
        if new_month:
            _fsync_dir(self.path)
        _step(f"{step}.renamed")
        return final

    def remove_temporaries(self) -> None:
        """Delete half-written files a killed writer left (in staging, and where older gwtools
        versions wrote them: the month folders)."""
        for root in (self.path, self.staging_path):
            for p in [root, *self._partitions(root)]:
                try:
                    entries = list(os.scandir(p))
                except (FileNotFoundError, NotADirectoryError):
                    continue
                for e in entries:
                    if not e.name.startswith(".tmp-"):
                        continue
                    if not e.is_dir(follow_symlinks=False):
                        Path(e.path).unlink(missing_ok=True)
                    elif p == self.staging_path:  # a new month being built; not ours elsewhere
                        shutil.rmtree(e.path, ignore_errors=True)

    def _remove_empty_months(self) -> None:
        """Remove month folders holding nothing (older versions left one where a merge
        failed): an empty one reads as a dataset, an account or mode with nothing cached."""
        for p in self._partitions():
            with contextlib.suppress(OSError):  # not empty: rmdir leaves it, cheaper than a listing
                p.rmdir()

    def _atomic_write(
        self, path: Path, data: bytes, *, step: str | None = "state.tmp-written"
    ) -> None:
        _make_folder(path.parent)
        self.staging_path.mkdir(parents=True, exist_ok=True)  # no temporary in the dataset
        tmp = self.staging_path / f".tmp-{path.name}-{uuid.uuid4().hex[:8]}"
        # The folder flushed too: the state written before a merge (the refunds' payments
        # owed a re-read) must not be lost while the merge's renames survive.
        with replacing(path, tmp, step=step):
            tmp.write_bytes(data)


@contextlib.contextmanager
def replacing(
    target: Path, tmp: Path, *, step: str | None = None, flush_folder: bool = True
) -> Iterator[Path]:
    """Replace ``target`` whole or not at all: the ``with`` body writes ``tmp`` (on the same
    file system), which is then flushed to disk, passes ``step`` (see :func:`_step`) and is
    renamed over ``target``; ``flush_folder`` flushes the rename too. ``tmp`` is removed on
    any exception, Ctrl-C included.

    The one way the cache's part files and state and the exported files are written: after
    a power cut, ``target`` is its old version or the whole new one, never empty or torn."""
    try:
        yield tmp
        # On disk before its name is: a renamed file whose bytes never were would be empty.
        _fsync_file(tmp)
        if step is not None:
            _step(step)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk wants its space back
        raise
    if flush_folder:
        _fsync_dir(target.parent)


def _fsync_file(path: Path) -> None:
    """Flush a file written by another writer (pyarrow's) to disk."""
    # Read-write: Windows flushes only a handle that may write. A file made read-only (an
    # export given the mode of the one it replaces) is flushed read-only, as POSIX allows.
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_BINARY", 0))
    except PermissionError:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: What fsync of a directory answers where the file system cannot do it (not a failure).
_NO_DIR_SYNC = {errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EBADF}


def _fsync_dir(path: Path) -> None:
    """Flush a directory's entries (a rename into it) to disk, where the platform can."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # Windows cannot open a directory: there the rename is as durable as NTFS makes it
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIR_SYNC:
            raise
    finally:
        os.close(fd)


def _make_folder(path: Path) -> None:
    """``mkdir -p path``, each folder it creates flushed into the one holding it: a file
    flushed into a folder whose own name was never flushed is lost with it at a power cut
    (the first sync's cache, account, mode and dataset folders; the quarantine's folders).
    Folders that already exist cost one ``stat``."""
    missing = list(itertools.takewhile(lambda p: not p.is_dir(), [path, *path.parents]))
    if not missing:
        return
    path.mkdir(parents=True, exist_ok=True)  # a file in the way raises: callers name it
    for created in missing:  # deepest first: a folder's name reaches the disk after its entries
        _fsync_dir(created.parent)


def _unreadable(path: Path | str, filesystem: pafs.FileSystem | None = None) -> str | None:
    """Why ``path``'s Parquet footer (on ``filesystem``, else local) cannot be read, or None
    if it can."""
    try:
        pq.read_metadata(path, filesystem=filesystem)
    except FileNotFoundError:
        return None  # gone since it was listed: nothing to move
    except (pa.ArrowException, OSError) as exc:
        return str(exc).splitlines()[0] or type(exc).__name__
    return None


def _damaged(path: Path) -> str | None:
    """Why ``path`` cannot be read whole (its footer, or any page), or None if it can; reads
    every page, so only where a read has already failed."""
    why = _unreadable(path)
    if why is not None:
        return why
    try:
        with pq.ParquetFile(path) as pf:
            for group in range(pf.num_row_groups):
                pf.read_row_group(group, use_threads=False)
    except FileNotFoundError:
        return None
    except (pa.ArrowException, OSError) as exc:
        return str(exc).splitlines()[0] or type(exc).__name__
    return None


def _month_start(month: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(month, "%Y-%m").replace(tzinfo=dt.UTC)
    except ValueError:
        return None


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray | memoryview):
        return bytes(obj).decode("utf-8", errors="replace")
    if isinstance(obj, dt.datetime | dt.date | pd.Timestamp):
        return obj.isoformat()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def _is_dir(fs: pafs.FileSystem, path: str) -> bool:
    return bool(fs.get_file_info(path).type == pafs.FileType.Directory)


def _holds_dataset(fs: pafs.FileSystem, path: str) -> bool:
    """A dataset folder: a sync's state file or at least one month folder."""
    if not _is_dir(fs, path):
        return False
    return any(
        (i.type == pafs.FileType.Directory and i.base_name.startswith(f"{PARTITION}="))
        or i.base_name == "_state.json"
        for i in fs.get_file_info(pafs.FileSelector(path))
    )


#: ``DataFrame.attrs["gwtools_source"]`` of frames of sandbox data (from the embedded sandbox,
#: or read from a cache it filled): not real payments.
SANDBOX_DATA = "sandbox data"


def set_cache_attrs(
    frame: pd.DataFrame,
    path: str,
    state: dict[str, Any],
    message: str | None,
    damaged: Iterable[Path | str] = (),
) -> None:
    """What a frame read from the cache says of it: ``attrs["gwtools_cache"]`` (complete
    unless ``message`` says what is missing) and, for data the embedded sandbox synced,
    ``attrs["gwtools_source"]``, so figures and reports made from it say so."""
    frame.attrs["gwtools_cache"] = {
        "complete": message is None,
        "path": path,
        "last_sync": state.get("last_sync"),
        "last_full_sync": state.get("last_full_sync"),
        "damaged_files": [str(f) for f in damaged],
        "message": message,
    }
    if state.get("sandbox_data") is True:
        frame.attrs["gwtools_source"] = SANDBOX_DATA


def _subfolders(fs: pafs.FileSystem, root: str) -> list[str]:
    return sorted(
        i.base_name
        for i in fs.get_file_info(pafs.FileSelector(root))
        if i.type == pafs.FileType.Directory
    )


def _refuse_other(
    folder: str, where: str, resource: Resource, account: str | None, mode: str | None
) -> None:
    """Refuse an ``account``/``mode`` that the dataset ``folder`` (named as the cache lays it
    out: ``{account}/{mode}/{resource}``) is not, rather than read its rows as theirs."""
    parts = folder.rstrip("/").split("/")
    held_account, held_mode = (parts[-3], parts[-2]) if len(parts) >= 3 else (None, None)
    if account in (None, held_account) and mode in (None, held_mode):
        return
    asked = " in ".join(
        x for x in (f"account {account!r}" if account else "", f"{mode} mode" if mode else "") if x
    )
    raise CacheNotFoundError(
        f"{where} holds the {resource} of account {held_account!r} in {held_mode} mode, not "
        f"{asked}: give the cache's folder (the one holding its accounts' folders) to read "
        f"{asked}, or leave account and mode out to read this one",
        resource=resource,
        where=where,
    )


def locate(
    fs: pafs.FileSystem,
    root: str,
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
) -> str:
    """The dataset folder of ``resource`` under ``root`` on ``fs``: ``root`` itself,
    ``{root}/{resource}``, ``{root}/{account}/{mode}/{resource}``, or, ``root`` being an
    account's folder, ``{root}/{mode}/{resource}``; one rule for local and shared storage.

    With ``account``/``mode`` left out, the only matching dataset under ``root`` is used; if
    several match, the error lists them so you can pick one.
    """
    _schema.columns(resource)
    if mode is not None:
        if not isinstance(mode, str) or mode.strip().lower() not in ("test", "live"):
            raise ConfigurationError(
                f"mode={mode!r} is not a mode: pass mode='test' or mode='live', or leave it "
                "out to use the only one the cache holds",
                param="mode",
            )
        mode = mode.strip().lower()  # 'TEST' is the test mode too
    if account is not None and (not isinstance(account, str) or not account.strip()):
        raise ConfigurationError(
            f"account={account!r} names no account: pass the account's folder name, or leave "
            "it out to use the only one the cache holds",
            param="account",
        )
    root = root.rstrip("/") or "/"
    protocol = fs.type_name.removeprefix("py::fsspec+")  # pyarrow's name of an fsspec one
    where = root if isinstance(fs, pafs.LocalFileSystem) else f"{root!r} on {protocol}"
    if fs.get_file_info(root).type == pafs.FileType.File:
        raise CacheNotFoundError(
            f"{where} is a file, not a cache folder: pass the folder that holds the cache "
            "(the one given to gwtools.connect(cache_dir=…), or GW_CACHE_DIR)",
            resource=resource,
            where=where,
            is_file=True,
        )
    if not _is_dir(fs, root):
        raise CacheNotFoundError(
            f"no cache at {where}: run gwtools.connect().sync() (or `gwtools sync`) first, "
            "or pass the directory that holds the cache",
            resource=resource,
            where=where,
        )
    for candidate in (root, f"{root}/{resource}"):
        if candidate.rsplit("/", 1)[-1] == resource and _holds_dataset(fs, candidate):
            _refuse_other(candidate, where, resource, account, mode)
            return candidate
    parent, _, name = root.rpartition("/")
    if name != resource and name in _schema.RESOURCES and _holds_dataset(fs, root):
        # the other table's dataset: "run a sync first" would not help, the folder above does
        local = isinstance(fs, pafs.LocalFileSystem)
        above, beside = (p if local else repr(p) for p in (parent, f"{parent}/{resource}"))
        raise CacheNotFoundError(
            f"{where} holds the cached {name}, not {resource}: use {above}, the folder that "
            f"holds both, or {beside}",
            resource=resource,
            where=where,
        )
    # Every dataset under root, then those of the account and mode asked for: the error can
    # then say what the folder does hold, so that a mistyped account or mode is plain to see.
    held = {
        (a, m): folder
        for a in _subfolders(fs, root)
        for m in ("test", "live")
        if _holds_dataset(fs, folder := f"{root}/{a}/{m}/{resource}")
    }
    if not held:  # root may be an account's folder, holding its modes
        name = root.rsplit("/", 1)[-1]
        held = {
            (name, m): folder
            for m in ("test", "live")
            if _holds_dataset(fs, folder := f"{root}/{m}/{resource}")
        }
    found = [f for (a, m), f in held.items() if account in (None, a) and mode in (None, m)]
    if len(found) == 1:
        return found[0]
    if not found:
        there = f" (it holds {_labels(held)})" if held and (account or mode) else ""
        raise CacheNotFoundError(
            f"no cached {resource} under {where}"
            f"{f' for account {account!r}' if account else ''}{f' in {mode} mode' if mode else ''}"
            f"{there}: run a sync first, or check the directory",
            resource=resource,
            where=where,
            datasets=held,
        )
    choices = _labels({k: f for k, f in held.items() if f in found})
    # The folders themselves serve both audiences: a source= here, a --source on the CLI.
    folders = ", ".join(f.rsplit("/", 1)[0] for f in found)
    raise AmbiguousCacheError(
        f"several cached {resource} datasets under {where} ({choices}); pass account= and "
        f"mode=, or give one of their folders as the source ({folders})",
        resource=resource,
        where=where,
        datasets={k: f for k, f in held.items() if f in found},
    )


def _labels(datasets: dict[tuple[str, str], str]) -> str:
    return ", ".join(f"account={a!r} mode={m!r}" for a, m in datasets)


def visible(name: str) -> bool:
    """A part file readers take: state, locks and half-written temporaries start with ``_``
    or ``.``, and are never data."""
    return name.endswith(".parquet") and not name.startswith((".", "_"))


def dataset_files(fs: pafs.FileSystem, folder: str) -> list[str]:
    """The part files of the dataset at ``folder``, month by month in write order."""
    return [f.path for f in dataset_file_infos(fs, folder)]


def dataset_file_infos(fs: pafs.FileSystem, folder: str) -> list[pafs.FileInfo]:
    """:func:`dataset_files` with what the listing says of each (size, modification time)."""
    months = sorted(
        i.path
        for i in fs.get_file_info(pafs.FileSelector(folder))
        if i.type == pafs.FileType.Directory and i.base_name.startswith(f"{PARTITION}=")
    )
    return [
        f
        for m in months
        for f in sorted(
            fs.get_file_info(pafs.FileSelector(m, allow_not_found=True)), key=lambda i: i.path
        )
        if f.type == pafs.FileType.File and visible(f.base_name)
    ]


def local_path(location: str | os.PathLike[str]) -> Path | None:
    """The local folder ``location`` names: a path (``~`` expanded) or a ``file:`` URL, whose
    escapes are decoded (``Path.as_uri()`` writes a space as ``%20``); None for another URL."""
    text = os.fspath(location)
    parts = urlsplit(text)
    if parts.scheme == "file":
        return Path(url2pathname(parts.path))
    if "://" in text:
        return None
    return Path(text).expanduser()


def find_dataset(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
) -> Dataset:
    """The local dataset of ``resource`` under ``cache_dir``, a folder or a ``file://`` URL
    (see :func:`locate`)."""
    folder_path = local_path(cache_dir)
    if folder_path is None:  # the callers send other URLs to the shared-storage readers
        raise ConfigurationError(f"{os.fspath(cache_dir)!r} is a URL, not a local folder")
    root = os.fspath(folder_path)
    folder = locate(pafs.LocalFileSystem(), root, resource, account=account, mode=mode)
    return Dataset(Path(folder), resource)


def read_cache(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
    since: Any = None,
    until: Any = None,
    status: str | Sequence[str] | None = None,
    filesystem: Any = None,
    strict: bool = False,
) -> pd.DataFrame:
    """The cached canonical table, without any gateway.

    ``cache_dir`` may be the cache root (as given to :func:`gwtools.connect`), an account
    directory's dataset, or a dataset directory itself (``account``/``mode`` given there must be
    the folder's own, else :class:`gwtools.CacheNotFoundError`). ``since``/``until`` bound
    ``created_at`` (``since <= created_at < until``; naive times are UTC); ``status`` is one
    canonical status or several. Example::

        payments = gwtools.read_cache("data/sample-cache", "payments", status="failed")

    A cache on shared storage is read as :func:`gwtools.scan_cache` reads it: give a URL
    (``s3://bucket/gwtools``, any fsspec protocol) or ``filesystem=`` (a
    ``pyarrow.fs.FileSystem`` or fsspec filesystem, with ``cache_dir`` a path on it).

    A cache no sync has completed (interrupted, or a disk that filled up), or one with a file
    that cannot be read, is returned with a :class:`gwtools.GatewayDataWarning` saying how
    many rows it holds and how to complete it; ``frame.attrs["gwtools_cache"]["complete"]``
    is False. ``strict=True`` raises :class:`gwtools.CacheError` instead.
    """
    where = check_filters(resource, since, until, status)  # before looking for the cache
    # Imported here: the lazy scans build on this module.
    from gwtools.cache._scan import _resolve_filesystem, read_shared

    remote = _resolve_filesystem(cache_dir, filesystem)
    if remote is not None:
        return read_shared(
            cache_dir, resource, remote, where.expressions(), account=account, mode=mode,
            strict=strict,
        )  # fmt: skip
    return find_dataset(cache_dir, resource, account=account, mode=mode).read(
        since=since, until=until, status=status, strict=strict
    )
