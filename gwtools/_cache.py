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
from dataclasses import dataclass
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
from gwtools._schema import Resource

__all__ = ["Dataset", "MergeStats", "read_cache"]

SCHEMA_VERSION = 1
PARTITION = "created_month"
_UNKNOWN_MONTH = "unknown"
_SEQ = "__gw_seq"
_ROW_GROUP = 64 * 1024

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
    if pc.count_distinct(table.column("id")).as_py() == table.num_rows:
        keep = pa.array(np.arange(table.num_rows, dtype=np.uint64))  # no duplicates: no sort
    else:
        keep = _newest_rows(table)
    if by_time and "created_at" in table.column_names:
        times = table.select(["created_at", "id"]).take(keep)
        keep = keep.take(
            pc.sort_indices(times, sort_keys=[("created_at", "ascending"), ("id", "ascending")])
        )
    return keep


@dataclass
class MergeStats:
    """What a merge did to the rows already cached."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0

    def __iadd__(self, other: MergeStats) -> MergeStats:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
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
        table = _newest_per_id(table.append_column(_SEQ, seq)).drop_columns([_SEQ])
        months = pc.fill_null(pc.strftime(table.column("created_at"), "%Y-%m"), _UNKNOWN_MONTH)
        table = table.append_column(PARTITION, months)
        written: set[str] = set()
        for month in pc.unique(months).to_pylist():
            part = table.filter(pc.equal(table.column(PARTITION), month)).drop_columns([PARTITION])
            self._write_part(month, part)
            written.add(month)
        return written

    def compact(
        self, months: Iterable[str], *, since_seq: int = 0, replace: bool = False
    ) -> MergeStats:
        """Rewrite each month as one file with one row per id (newest wins).

        Rows in files written at or after ``since_seq`` (this sync) are compared with the
        rows written before it, to count new, updated and unchanged rows. ``replace=True``
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
            stats += self._compact_month(month, since_seq, replace)
        return stats

    def _compact_month(self, month: str, since_seq: int, replace: bool) -> MergeStats:
        files = self._files(month)
        if not files:
            return MergeStats()
        seqs = [self._file_seq(f) for f in files]
        if len(files) == 1 and seqs[0] < since_seq:
            return MergeStats()
        tables = [self._read_file_with_seq(f, i) for i, f in enumerate(files)]
        old = [t for t, s in zip(tables, seqs, strict=True) if s < since_seq]
        new = [t for t, s in zip(tables, seqs, strict=True) if s >= since_seq]
        stats = self._merge_stats(old, new) if new else MergeStats()
        keep = new if replace else tables
        if keep:
            source = pa.concat_tables(keep)
            del tables, old, new, keep
            rows = _keep_indices(source, by_time=True)
            self._write_part(month, source.drop_columns([_SEQ]), rows)
            del source
        for f in files:
            f.unlink(missing_ok=True)
        return stats

    def _merge_stats(self, old: Sequence[pa.Table], new: Sequence[pa.Table]) -> MergeStats:
        new_t = _newest_per_id(pa.concat_tables(new))
        if not old:
            return MergeStats(new=new_t.num_rows)
        old_t = _newest_per_id(pa.concat_tables(old))
        in_old = pc.is_in(new_t.column("id"), value_set=old_t.column("id").combine_chunks())
        common_new = new_t.filter(in_old).sort_by("id")
        common_old = old_t.filter(
            pc.is_in(old_t.column("id"), value_set=common_new.column("id").combine_chunks())
        ).sort_by("id")
        n_common = common_new.num_rows
        same: pa.ChunkedArray | pa.Array = pa.array([True] * n_common)
        for name in _schema.columns(self.resource):
            same = pc.and_(same, _null_safe_equal(common_new.column(name), common_old.column(name)))
        unchanged = int(pc.sum(same).as_py() or 0)
        return MergeStats(
            new=new_t.num_rows - n_common, updated=n_common - unchanged, unchanged=unchanged
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

    def _read_file_with_seq(self, path: Path, seq: int) -> pa.Table:
        t = pq.read_table(path, schema=self.schema)
        return t.append_column(_SEQ, pa.repeat(pa.scalar(seq, pa.int64()), t.num_rows))

    def _write_part(self, month: str, table: pa.Table, rows: pa.Array | None = None) -> Path:
        """Write ``table`` (or its ``rows``, in that order) as one part file, atomically.

        Rows are gathered one row group at a time, so a month being compacted is held once.
        """
        directory = self.path / f"{PARTITION}={month}"
        directory.mkdir(parents=True, exist_ok=True)
        final = directory / f"part-{_next_seq():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = directory / f".tmp-{final.name}"
        with pq.ParquetWriter(tmp, self.schema, compression="lz4") as writer:
            n = table.num_rows if rows is None else len(rows)
            for start in range(0, n, _ROW_GROUP):
                if rows is None:
                    writer.write_table(table.slice(start, _ROW_GROUP))
                else:
                    writer.write_table(table.take(rows.slice(start, _ROW_GROUP)))
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
    return find_dataset(cache_dir, resource, account=account, mode=mode).read(
        since=since, until=until, status=status
    )
