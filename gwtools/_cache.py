"""The local Parquet cache: one hive-partitioned dataset per account, mode and resource.

Layout (plain Parquet that pyarrow, DuckDB, Polars and Spark read as it is)::

    {cache_dir}/{account}/{test|live}/{payments|refunds}/
        created_month=2024-05/part-00001716900000000000000-1a2b3c4d.parquet
        _state.json        high-water mark, last sync, schema version (written last)
        _rejects.jsonl     records the gateway sent that could not be used, with the reason
        _sync.lock         held by the sync that is running (a second one waits)

Files whose names start with ``_`` or ``.`` are ignored by every Parquet reader, so the state,
the lock and half-written temporary files (``.tmp-*``) never show up as data.

Crash safety: a part file is written to a temporary name and renamed into place, so every
visible file is complete. File names sort in write order; when a partition holds several files
(a sync was interrupted before compacting it) readers keep the newest version of each id, so
the cache is always readable and correct, and the next sync compacts it again.

Use :func:`read_cache` to read without any network::

    payments = gwtools.read_cache("data/sample-cache", "payments")
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from filelock import FileLock

from gwtools import _schema
from gwtools._config import check_filters
from gwtools._schema import Resource

__all__ = ["Dataset", "MergeStats", "read_cache"]

SCHEMA_VERSION = 1
PARTITION = "created_month"
_UNKNOWN_MONTH = "unknown"
_SEQ = "__gw_seq"
_ROW_GROUP = 32 * 1024  # rows per row group, and per chunk a compaction reads at once
_ROW_BITS = 40  # a row's address in a month: file index << _ROW_BITS | row in the file

_seq_lock = threading.Lock()
_last_seq = 0


#: A reader racing a compaction re-lists this many times before giving up.
READ_ATTEMPTS = 8


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
    return table.select(list(_schema.columns(resource))).to_pandas(types_mapper=_pandas_type)


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

    def __iadd__(self, other: MergeStats) -> MergeStats:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.changed |= other.changed
        return self


class Dataset:
    """One cached table (account x mode x resource) on disk.

    Writers (the sync) take :meth:`lock`, append batches with :meth:`write_batch`, then
    :meth:`compact` the months they touched and finally :meth:`write_state`.
    """

    def __init__(self, path: str | os.PathLike[str], resource: Resource) -> None:
        _schema.columns(resource)  # validates the name
        self.path = Path(path)
        self.resource: Resource = resource
        self.schema = _schema.arrow_schema(resource)

    @classmethod
    def at(
        cls, cache_dir: str | os.PathLike[str], account: str, mode: str, resource: Resource
    ) -> Dataset:
        return cls(Path(cache_dir) / account / mode / resource, resource)

    def __repr__(self) -> str:
        return f"Dataset({str(self.path)!r}, {self.resource!r})"

    # -- state, lock, rejects ------------------------------------------------------------
    @property
    def state_path(self) -> Path:
        return self.path / "_state.json"

    @property
    def rejects_path(self) -> Path:
        return self.path / "_rejects.jsonl"

    def exists(self) -> bool:
        return self.path.is_dir() and (self.state_path.exists() or any(self._partitions()))

    def state(self) -> dict[str, Any]:
        """The state written by the last completed sync ({} if there was none)."""
        try:
            state: dict[str, Any] = orjson.loads(self.state_path.read_bytes())
        except FileNotFoundError:
            return {}
        except orjson.JSONDecodeError:
            # Only a hand-edited file can be half-written (we write it atomically):
            # treat it as absent, so the next sync is a full one.
            return {}
        return state

    def write_state(self, state: dict[str, Any]) -> None:
        state = {"schema_version": SCHEMA_VERSION, "resource": self.resource, **state}
        self._atomic_write(self.state_path, orjson.dumps(state, option=orjson.OPT_INDENT_2))

    def file_lock(self, timeout: float = -1) -> FileLock:
        """The dataset's sync lock (usable across threads); a second sync waits on it."""
        self.path.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path / "_sync.lock"), timeout=timeout, thread_local=False)

    @contextlib.contextmanager
    def lock(self, timeout: float = -1) -> Iterator[None]:
        """Hold the sync lock and clear temporaries a killed writer left behind."""
        with self.file_lock(timeout):
            self.remove_temporaries()
            yield

    def append_rejects(self, rejects: Iterable[Any], *, sync_id: str) -> int:
        """Append rejected records (reason, raw record, time) as JSON lines; returns how many."""
        now = dt.datetime.now(dt.UTC).isoformat()
        lines = [
            orjson.dumps(
                {
                    "time": now,
                    "sync_id": sync_id,
                    "resource": getattr(r, "resource", self.resource),
                    "reason": getattr(r, "reason", str(r)),
                    "record": getattr(r, "record", None),
                },
                default=_json_default,
            )
            for r in rejects
        ]
        if lines:
            self.path.mkdir(parents=True, exist_ok=True)
            with open(self.rejects_path, "ab") as fh:
                fh.write(b"\n".join(lines) + b"\n")
                fh.flush()
                os.fsync(fh.fileno())
        return len(lines)

    def rejects(self) -> pd.DataFrame:
        """The rejected records so far (columns time, sync_id, resource, reason, record)."""
        try:
            raw = self.rejects_path.read_bytes().splitlines()
        except FileNotFoundError:
            raw = []
        rows = [orjson.loads(line) for line in raw if line.strip()]
        return pd.DataFrame(rows, columns=["time", "sync_id", "resource", "reason", "record"])

    # -- writing -------------------------------------------------------------------------
    def write_batch(self, frame: pd.DataFrame | pa.Table) -> set[str]:
        """Write canonical rows as new part files, one per creation month; returns the months.

        Within the batch, the last row of an id wins. Each file appears atomically.
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
        for month in pc.unique(months).to_pylist():
            part = table.filter(pc.equal(table.column(PARTITION), month)).drop_columns([PARTITION])
            self._write_part(
                month, (part.slice(i, _ROW_GROUP) for i in range(0, part.num_rows, _ROW_GROUP))
            )
            written.add(month)
        return written

    def compact(
        self,
        months: Iterable[str],
        *,
        since_seq: int = 0,
        replace: bool = False,
        collect: str | None = None,
    ) -> MergeStats:
        """Rewrite each month as one file with one row per id (newest wins).

        Rows in files written at or after ``since_seq`` (this sync) are compared with the
        rows written before it, to count new, updated and unchanged rows; the non-null values
        of column ``collect`` in the new and updated rows are returned too. ``replace=True``
        (after a complete full sync) keeps only this sync's rows: months it did not touch are
        removed, and ids it did not see are dropped, so the cache equals what was fetched.
        """
        stats = MergeStats()
        months = set(months)
        if replace:
            for p in self._partitions():
                if p.name.split("=", 1)[1] not in months:
                    for f in self._files_in(p):
                        f.unlink(missing_ok=True)
                    with contextlib.suppress(OSError):
                        p.rmdir()
        for month in sorted(months):  # one month at a time: memory stays flat
            stats += self._compact_month(month, since_seq, replace, collect)
        return stats

    def _compact_month(
        self, month: str, since_seq: int, replace: bool, collect: str | None
    ) -> MergeStats:
        """Stream one month into one file: choose rows by their keys, then copy them in chunks.

        Only ``id``, ``created_at`` and each row's position are held for the whole month;
        full rows are read, compared and written ``_ROW_GROUP`` at a time, so memory does not
        grow with the month.
        """
        files = self._files(month)
        if not files:
            return MergeStats()
        seqs = [self._file_seq(f) for f in files]
        if len(files) == 1 and seqs[0] < since_seq:
            return MergeStats()
        source = _Files(files, self.schema)
        keys = source.keys()
        file_is_new = pa.array([s >= since_seq for s in seqs])
        is_new = file_is_new.take(pc.shift_right(keys.column(_SEQ), _ROW_BITS))
        stats = self._merge_stats(source, keys, is_new, collect)
        keep = keys.filter(is_new) if replace else keys
        if keep.num_rows:
            rows = keep.column(_SEQ).take(_keep_indices(keep, by_time=True))
            del keys, keep, is_new
            self._write_part(month, source.chunks(rows))
        for f in files:
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
    ) -> pa.Table:
        """The cached rows (one per id, newest version) as Arrow, filtered and projected.

        Safe while another process syncs: compaction writes a month's new file before it
        removes the old ones, so when a listed file has gone, listing again finds a
        complete set.
        """
        # The one check of what a read selects (unknown status, since >= until: errors).
        since, until, status = check_filters(self.resource, since, until, status)
        for attempt in range(READ_ATTEMPTS):
            try:
                return self._read_table_once(since, until, status, columns)
            except FileNotFoundError:
                if attempt == READ_ATTEMPTS - 1:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")

    def _read_table_once(
        self,
        since: Any,
        until: Any,
        status: str | Sequence[str] | None,
        columns: Sequence[str] | None,
    ) -> pa.Table:
        cols = list(columns) if columns is not None else list(_schema.columns(self.resource))
        need = list(dict.fromkeys([*cols, "id", *(["status"] if status is not None else [])]))
        # One listing decides both the files and whether they need deduplicating: a batch
        # written after it is simply not part of this read.
        listed = [self._files_in(p) for p in self._partitions()]
        files = [f for month in listed for f in month]
        if not files:
            return self.schema.empty_table().select(cols)
        time_filter = _time_filter(since, until)
        if all(len(month) <= 1 for month in listed):
            dataset = ds.dataset(
                [str(f) for f in files], schema=self.schema, format="parquet", partitioning=None
            )
            table = dataset.to_table(columns=need, filter=time_filter)
        else:
            # Interrupted sync: several versions of an id can coexist; newest file wins.
            pieces = []
            for seq, f in enumerate(files):
                t = pq.read_table(f, schema=self.schema, columns=need)
                if time_filter is not None:
                    t = t.filter(time_filter)
                pieces.append(
                    t.append_column(_SEQ, pa.repeat(pa.scalar(seq, pa.int64()), t.num_rows))
                )
            table = _newest_per_id(pa.concat_tables(pieces)).drop_columns([_SEQ])
            table = (
                table.sort_by([("created_at", "ascending"), ("id", "ascending")])
                if "created_at" in need
                else table
            )
        if status is not None:
            wanted = [status] if isinstance(status, str) else list(status)
            table = table.filter(
                pc.is_in(table.column("status"), value_set=pa.array(wanted, pa.large_string()))
            )
        return table.select(cols)

    def read(
        self,
        *,
        since: Any = None,
        until: Any = None,
        status: str | Sequence[str] | None = None,
    ) -> pd.DataFrame:
        """The cached canonical table as a DataFrame (see :func:`read_cache`)."""
        return to_pandas(self.read_table(since=since, until=until, status=status), self.resource)

    # -- files ---------------------------------------------------------------------------
    def _partitions(self) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(self.path), key=lambda e: e.name)
        except FileNotFoundError:
            return
        for e in entries:
            if e.is_dir() and e.name.startswith(f"{PARTITION}="):
                yield Path(e.path)

    @staticmethod
    def _files_in(partition: Path) -> list[Path]:
        return sorted(
            Path(e.path)
            for e in os.scandir(partition)
            if e.is_file() and e.name.endswith(".parquet") and not e.name.startswith((".", "_"))
        )

    def _files(self, month: str) -> list[Path]:
        p = self.path / f"{PARTITION}={month}"
        return self._files_in(p) if p.is_dir() else []

    @staticmethod
    def _file_seq(path: Path) -> int:
        try:
            return int(path.name.split("-")[1])
        except (IndexError, ValueError):
            return 0  # a file not written by gwtools: treat as oldest

    def _write_part(self, month: str, chunks: Iterable[pa.Table]) -> Path:
        """Write ``chunks`` (one row group each) as one part file, atomically."""
        directory = self.path / f"{PARTITION}={month}"
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / f"part-{_next_seq():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = directory / f".tmp-{final.name}"
        with pq.ParquetWriter(tmp, self.schema, compression="lz4") as writer:
            for chunk in chunks:
                writer.write_table(chunk)
        os.replace(tmp, final)
        return final

    def remove_temporaries(self) -> None:
        for p in self._partitions():
            for e in os.scandir(p):
                if e.name.startswith(".tmp-"):
                    Path(e.path).unlink(missing_ok=True)
        for e in os.scandir(self.path):
            if e.name.startswith(".tmp-"):
                Path(e.path).unlink(missing_ok=True)

    @staticmethod
    def _atomic_write(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{path.name}-{uuid.uuid4().hex[:8]}")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray | memoryview):
        return bytes(obj).decode("utf-8", errors="replace")
    if isinstance(obj, dt.datetime | dt.date | pd.Timestamp):
        return obj.isoformat()
    if isinstance(obj, set | frozenset | tuple):
        return list(obj)
    return str(obj)


def _timestamp(value: Any, name: str) -> pd.Timestamp:
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name}={value!r} is not a date or time; use e.g. '2024-05-01' or a datetime"
        ) from exc
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def _time_filter(since: Any, until: Any) -> ds.Expression | None:
    """``since <= created_at < until``; naive values are UTC."""
    expr = None
    if since is not None:
        expr = ds.field("created_at") >= pa.scalar(
            _timestamp(since, "since"), pa.timestamp("us", "UTC")
        )
    if until is not None:
        upper = ds.field("created_at") < pa.scalar(
            _timestamp(until, "until"), pa.timestamp("us", "UTC")
        )
        expr = upper if expr is None else expr & upper
    return expr


def find_dataset(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
) -> Dataset:
    """Locate a dataset: the directory itself, ``{dir}/{resource}``, or ``{dir}/{account}/{mode}/{resource}``.

    With ``account``/``mode`` left out, the only matching dataset under ``cache_dir`` is used;
    if several match, the error lists them so you can pick one.
    """
    _schema.columns(resource)
    root = Path(cache_dir).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(
            f"no cache at {root}: run gwtools.connect().sync() (or `gwtools sync`) first, "
            "or pass the directory that holds the cache"
        )
    for candidate in (root, root / resource):
        if candidate.name == resource and Dataset(candidate, resource).exists():
            return Dataset(candidate, resource)
    accounts = [account] if account else sorted(p.name for p in root.iterdir() if p.is_dir())
    modes = [mode] if mode else ["test", "live"]
    found = [
        Dataset(root / a / m / resource, resource)
        for a in accounts
        for m in modes
        if Dataset(root / a / m / resource, resource).exists()
    ]
    if len(found) == 1:
        return found[0]
    if not found:
        raise FileNotFoundError(
            f"no cached {resource} under {root}"
            f"{f' for account {account!r}' if account else ''}{f' in {mode} mode' if mode else ''}: "
            "run a sync first, or check the directory"
        )
    choices = ", ".join(
        f"account={d.path.parent.parent.name!r} mode={d.path.parent.name!r}" for d in found
    )
    raise ValueError(
        f"several cached {resource} datasets under {root} ({choices}); pass account= and mode="
    )


def read_cache(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
    since: Any = None,
    until: Any = None,
    status: str | Sequence[str] | None = None,
) -> pd.DataFrame:
    """The cached canonical table, without any network.

    ``cache_dir`` may be the cache root (as given to :func:`gwtools.connect`), an account
    directory's dataset, or a dataset directory itself. ``since``/``until`` bound
    ``created_at`` (``since <= created_at < until``; naive times are UTC); ``status`` is one
    canonical status or several. Example::

        payments = gwtools.read_cache("data/sample-cache", "payments", status="failed")
    """
    check_filters(resource, since, until, status)  # before looking for the cache
    return find_dataset(cache_dir, resource, account=account, mode=mode).read(
        since=since, until=until, status=status
    )
