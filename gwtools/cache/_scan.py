"""Lazy tables over the Parquet cache, on DuckDB in this process.

:func:`scan_cache` (and :meth:`gwtools.Gateway.scan`) return a ``duckdb.DuckDBPyRelation``: a
query plan over the cache's Parquet files that reads nothing until a result is asked for
(``.df()``, ``.arrow()``, ``len()``, or any :mod:`gwtools.analysis` function, which runs its
filters and group-bys in DuckDB and brings back only the small result)::

    payments = gwtools.scan_cache("data/sample-cache", "payments", since="2026-09-01")
    analysis.decline_rate(payments, freq="week", tz="Asia/Kuala_Lumpur")
    first_week = analysis.to_pandas(analysis.between(payments, "2026-09-01", "2026-09-07"))
    # payments.df() gives DuckDB's own dtypes; analysis.to_pandas the canonical ones

The table has the canonical columns in the canonical order with the cache's types (timestamps
``TIMESTAMP WITH TIME ZONE`` on a UTC connection, amounts ``BIGINT``, strings ``VARCHAR``).
:func:`gwtools.analysis.to_pandas` turns any lazy result into a DataFrame with the canonical
pandas dtypes.

A cache on shared storage is read through a filesystem: a URL (``s3://bucket/gwtools``,
``gs://…``, ``file:///…``, any fsspec protocol) or ``filesystem=`` a ``pyarrow.fs.FileSystem``
or an fsspec filesystem. Those are scanned as a pyarrow dataset that DuckDB reads lazily, with
the same columns, filters and deduplication.

A lazy table sees the files present when it was made: scan again after a sync.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
import threading
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import narwhals as nw
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from gwtools import _schema
from gwtools._config import check_filters
from gwtools._errors import CacheError, ConfigurationError
from gwtools._memory import ResultMeter
from gwtools._schema import Resource
from gwtools._stack import user_stacklevel
from gwtools.cache._dataset import (
    QUARANTINE,
    READ_ATTEMPTS,
    Dataset,
    _arrow_schema,
    _is_dir,
    _unreadable,
    dataset_file_infos,
    dataset_files,
    find_dataset,
    local_path,
    locate,
    set_cache_attrs,
    state_unreadable,
    to_pandas,
)

__all__ = ["connection", "scan_cache"]

_FILE = "__gw_file"
_lock = threading.Lock()

#: Every part file a lazy table of this process was made on, as its filesystem names it, to
#: that filesystem (None: a local file). An engine's error naming one of them is about the
#: cache, however the engine words it around the name (see :func:`unreadable_part`).
_parts: dict[str, pafs.FileSystem | None] = {}
#: Part files on shared storage a query found unreadable: (filesystem, path) to the size and
#: modification time the listing gave them then, and why. While the listing still gives those,
#: scans leave the file out, as a local scan leaves out a file whose footer it cannot read.
_unreadable_shared: dict[tuple[str, str], tuple[int, Any, str]] = {}
#: A Parquet file is at least "PAR1", a footer's length (4 bytes) and "PAR1".
_SMALLEST_PARQUET = 12

#: DuckDB's working memory for lazy tables unless ``GW_DUCKDB_MEMORY_LIMIT`` says otherwise
#: (DuckDB's own default is 80% of the machine). Past it, the large group-bys and sorts of the
#: order-based analyses spill to disk instead of taking the notebook's memory with them.
DEFAULT_MEMORY_LIMIT = "3GB"
MEMORY_ENV = "GW_DUCKDB_MEMORY_LIMIT"


@functools.cache
def _connection() -> duckdb.DuckDBPyConnection:
    limit = os.environ.get(MEMORY_ENV) or DEFAULT_MEMORY_LIMIT
    # Spilled files go to a folder of this process's own in the system's temporary folder: not
    # a .tmp in the working folder, and not one fixed name, which the first user to spill on a
    # shared server (JupyterHub) would own and every other user's spill would then fail on.
    # DuckDB makes it at the first spill only, so a kernel killed without spilling leaves none.
    spill = os.path.join(tempfile.gettempdir(), f"gwtools-duckdb-{os.getpid()}-{uuid.uuid4().hex}")
    atexit.register(shutil.rmtree, spill, ignore_errors=True)
    try:
        con = duckdb.connect(":memory:", config={"memory_limit": limit, "temp_directory": spill})
    except duckdb.Error as exc:
        raise ConfigurationError(
            f"{MEMORY_ENV}={limit!r} is not a memory size DuckDB understands ({exc}); "
            "use e.g. '3GB' or '16GB', or unset it for the default of "
            f"{DEFAULT_MEMORY_LIMIT}"
        ) from None
    # Timestamps come back in the connection's zone: UTC, as every canonical timestamp.
    con.execute("SET TimeZone = 'UTC'")
    # Every step of a lazy table is bound anew, and each bind of a multi-file scan reads every
    # file's footer again (0.2 s per step over 100M payments). DuckDB keeps them instead, and
    # reads a footer again when its file has changed since.
    con.execute("SET parquet_metadata_cache = true")
    return con


def connection() -> duckdb.DuckDBPyConnection:
    """The in-process DuckDB connection every lazy table of this process lives on.

    Relations from one connection can be joined with each other, so payments and refunds
    scanned separately still go into one query. Its time zone is UTC.
    """
    with _lock:
        return _connection()


def files_gone(exc: BaseException, again: str) -> CacheError | None:
    """The :class:`gwtools.CacheError` to raise instead of ``exc`` when it is DuckDB's for a
    part file a lazy table was made on and that is gone: a sync since then merged its month
    into a new file (None for any other error). ``again``: how to see the cache as it is
    now, e.g. "scan it again"."""
    text = str(exc)
    if not isinstance(exc, duckdb.IOException) or "No files found that match" not in text:
        return None
    # The file's whole path, as a lazy table of this process named it: DuckDB's quotes
    # around it end at the first '"' of a folder's name.
    name = _named_part(text) or text.partition('pattern "')[2].partition('"')[0]
    return _gone(name or None, again)


def _named_part(text: str) -> str | None:
    """The path of the part file (of those lazy tables were made on) an engine's error text
    names, whatever the words and quotes around it; None if it names none."""
    named = [p for p in tuple(_parts) if p in text]  # a copy: another thread may scan
    return max(named, key=len) if named else None  # "x/a.parquet" is in "b/x/a.parquet" too


def _gone(name: str | None, again: str) -> CacheError:
    return CacheError(
        f"the cache changed since this lazy table was made: {name or 'a file it reads'} is "
        f"gone (a sync merged its month into a new file). {again[:1].upper()}{again[1:]} "
        "to read the cache as it is now",
        path=name,
    )


def unreadable_part(exc: BaseException, again: str | None) -> CacheError | None:
    """The :class:`gwtools.CacheError` to raise instead of ``exc`` when it is an engine's error
    about a part file a lazy table reads that cannot be read (zero bytes, cut short, not
    Parquet), or that is gone (as :func:`files_gone`), with the file as ``path`` (None for any
    other error). ``again``: what reads the cache without it meanwhile, e.g. "scan the cache
    again" (None: nothing does).

    The file is recognised by its path in the error's text, whatever the words around it
    (DuckDB's and pyarrow's differ, and change between versions), then its footer is read to
    tell a damaged file from storage that failed once. A file on shared storage is remembered,
    so the next scan leaves it out while it stays as it is."""
    # OSError: pyarrow hands some of DuckDB's errors out of a batch stream as an IOError.
    if not isinstance(exc, duckdb.Error | pa.ArrowException | OSError):
        return None
    text = str(exc)
    path = _named_part(text)
    if path is None:
        return None
    fs = _parts.get(path)
    if not _exists(path, fs):  # shared storage's way of saying what files_gone says
        return _gone(path, again or "run it again")
    why = _footer_damage(path, fs)
    if why is None:  # its footer reads: bytes lost inside it, or storage that failed once
        said = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        return CacheError(
            f"cannot read {path}, a part file of the cache ({said}). Try again; if it fails "
            "again, the file is damaged inside: `gwtools sync --full` into the cache reads "
            f"every file, moves a damaged one to {QUARANTINE} and fetches its month again",
            path=path,
        )
    if fs is not None:
        info = fs.get_file_info(path)
        _unreadable_shared[(fs.type_name, path)] = (info.size, info.mtime, why)
    meanwhile = f"; meanwhile, {again}: that leaves it out (its rows missing), with a warning"
    return CacheError(
        f"cannot read {path} ({why}): the part file is damaged (cut short, or not Parquet). "
        f"The next `gwtools sync` into the cache moves it to {QUARANTINE} and fetches its "
        f"month again{meanwhile if again else ''}",
        path=path,
    )


def read_error(exc: BaseException, again: str) -> CacheError | None:
    """:func:`files_gone`'s or :func:`unreadable_part`'s error for ``exc`` (``again``: how
    to read the cache as it is now, e.g. "scan the cache again"), None for any other."""
    gone = files_gone(exc, again)
    if gone is not None:
        return gone
    return unreadable_part(exc, again)


def _exists(path: str, fs: pafs.FileSystem | None) -> bool:
    """Whether the part file at ``path`` (on ``fs``; None: local) is still there."""
    if fs is None:
        return os.path.exists(path)
    return bool(fs.get_file_info(path).type != pafs.FileType.NotFound)


def _footer_damage(path: str, fs: pafs.FileSystem | None) -> str | None:
    """Why the footer of the part file at ``path`` (on ``fs``; None: local) shows it damaged,
    or None if it reads, or could not be fetched (storage failing is not damage)."""
    if fs is None:
        return _unreadable(Path(path))
    try:
        pq.read_metadata(path, filesystem=fs)
    except pa.ArrowInvalid as exc:  # zero bytes, no magic bytes: what is there is not Parquet
        return str(exc).splitlines()[0] or type(exc).__name__
    except (pa.ArrowException, OSError):
        return None
    return None


def _known_unreadable(fs: pafs.FileSystem, info: pafs.FileInfo) -> str | None:
    """Why a part file on shared storage is known not to be readable from its listing alone
    (no request spent): too small to be Parquet, or found damaged by a query and unchanged."""
    if info.size is not None and info.size < _SMALLEST_PARQUET:
        return f"{info.size} bytes, too small to be a Parquet file"
    known = _unreadable_shared.get((fs.type_name, info.path))
    if known is not None and known[:2] == (info.size, info.mtime):
        return known[2]
    return None


def _needs_dedup(files: Sequence[str]) -> bool:
    """Several files in one month: an interrupted sync; the newest version of an id must win."""
    months = [os.path.basename(os.path.dirname(f)) for f in files]
    return len(set(months)) != len(months)


def _resolve_filesystem(
    cache_dir: str | os.PathLike[str], filesystem: Any
) -> tuple[pafs.FileSystem, str] | None:
    """``(filesystem, path)`` for a cache on shared storage, ``None`` for a local path."""
    if not isinstance(cache_dir, str | os.PathLike):
        raise ConfigurationError(
            f"the cache folder must be a path or URL, got {cache_dir!r}: for the configured "
            "gateway's cache use gwtools.cache_path(), or gw.scan(...) / gw.payments()"
        )
    if not os.fspath(cache_dir).strip():
        raise ConfigurationError(
            'the cache folder is an empty string: give its path or URL ("." for here)'
        )
    if filesystem is None:
        text = os.fspath(cache_dir)
        if local_path(text) is not None:
            return None
        try:
            fs, path = pafs.FileSystem.from_uri(text)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            try:
                import fsspec.core
            except ImportError:
                raise ConfigurationError(
                    f"cannot open {text!r}: pyarrow does not know the scheme and fsspec is not "
                    "installed; pip install fsspec (and the protocol's package, e.g. s3fs)"
                ) from None
            try:
                fsspec_fs, path = fsspec.core.url_to_fs(text)
            except (ImportError, ValueError) as exc:
                # fsspec: "Protocol not known: …", or the protocol's package is missing.
                raise ConfigurationError(
                    f"cannot open {text!r}: {exc}. Check the URL's scheme (s3://, gs://, "
                    "abfs://, hdfs://, file://, or any fsspec protocol whose package is "
                    "installed, such as s3fs or gcsfs)"
                ) from None
            fs = pafs.PyFileSystem(pafs.FSSpecHandler(fsspec_fs))
        return fs, path.rstrip("/")
    if not isinstance(filesystem, pafs.FileSystem):
        if not all(hasattr(filesystem, a) for a in ("info", "ls", "open")):
            raise ConfigurationError(
                f"filesystem= must be a pyarrow.fs.FileSystem or an fsspec filesystem, got "
                f"{filesystem!r}; or leave it out and give a URL (s3://bucket/gwtools)"
            )
        # An fsspec filesystem: pyarrow reads through it.
        filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    return filesystem, os.fspath(cache_dir).rstrip("/")


class _RemoteDataset(Dataset):
    """A dataset folder on a filesystem: only its state is read here (for ``completed()``),
    and checked as a local one's is."""

    def __init__(self, fs: pafs.FileSystem, folder: str, resource: Resource) -> None:
        super().__init__(folder, resource)
        self.fs, self.folder = fs, folder

    def _state_bytes(self) -> bytes | None:
        path = f"{self.folder}/_state.json"
        try:
            with self.fs.open_input_stream(path) as fh:
                return bytes(fh.read())
        except FileNotFoundError:
            return None
        except OSError as exc:
            try:
                is_folder = _is_dir(self.fs, path)
            except OSError:  # the storage failing again: say what the read said
                is_folder = False
            raise state_unreadable(repr(path), exc, is_folder=is_folder) from None


def dataset_state(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
    filesystem: Any = None,
) -> dict[str, Any]:
    """The ``_state.json`` of ``resource``'s dataset under ``cache_dir`` (a folder or URL, or a
    path on ``filesystem``, as :func:`scan_cache` finds it), ``{}`` when nothing was synced
    there. Part files that cannot
    be read (zero bytes, cut short) are added as ``unreadable_files`` ({path: why}): the readers
    leave their rows out, so the data is partial. On shared storage, where reading each footer
    costs a request, those are the files its listing shows too small to be Parquet and those a
    query of this process found damaged."""
    remote = _resolve_filesystem(cache_dir, filesystem)
    try:
        dataset = _find(cache_dir, resource, remote, account, mode)
    except FileNotFoundError:  # CacheNotFoundError: nothing synced there yet
        return {}
    state = dataset.state()
    if isinstance(dataset, _RemoteDataset):  # footers not read: a request per file
        infos = dataset_file_infos(dataset.fs, dataset.folder)
        unreadable = {i.path: why for i in infos if (why := _known_unreadable(dataset.fs, i))}
    else:
        files = dataset_files(pafs.LocalFileSystem(), str(dataset.path))
        unreadable = {f: why for f in files if (why := _unreadable(Path(f))) is not None}
    if unreadable:
        state = {**state, "unreadable_files": unreadable}
    return state


def _find(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    remote: tuple[pafs.FileSystem, str] | None,
    account: str | None,
    mode: str | None,
) -> Dataset:
    """``resource``'s dataset under ``cache_dir``: local, or on ``remote``'s filesystem."""
    if remote is None:
        return find_dataset(cache_dir, resource, account=account, mode=mode)
    fs, root = remote
    return _RemoteDataset(fs, locate(fs, root, resource, account=account, mode=mode), resource)


def _partial(message: str, strict: bool, caller: str) -> None:
    """Say that a lazy table's data is partial: a warning at the user's line, or (``strict``)
    a :class:`gwtools.CacheError`."""
    if strict:
        raise CacheError(message)
    from gwtools.sync._result import GatewayDataWarning

    warnings.warn(
        message + f"; {caller}(..., strict=True) raises instead of warning",
        GatewayDataWarning,
        stacklevel=user_stacklevel(),
    )


def _check_complete(
    dataset: Dataset, strict: bool, caller: str, state: dict[str, Any] | None = None
) -> None:
    """Warn (or raise, ``strict``) when no sync of the dataset has completed, as read_cache
    does; pass ``state`` when it was already read (each read warns of what is wrong in it)."""
    if dataset.completed(state):
        return
    message = (
        f"the cached {dataset.resource} at {dataset.path} are partial: no sync of them has "
        "completed, so rows may be missing. Run `gwtools sync` (or gwtools.connect().sync()) "
        "to complete the cache"
    )
    _partial(message, strict, caller)


def _empty(resource: Resource, con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyRelation:
    return con.from_arrow(_arrow_schema(resource).empty_table())


def scan_cache(
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
) -> duckdb.DuckDBPyRelation:
    """The cached canonical table as a lazy DuckDB table: nothing is read until asked.

    Same arguments as :func:`gwtools.read_cache` (``since <= created_at < until``, naive times
    UTC; one status or several), plus ``filesystem`` for a cache on shared storage: a
    ``pyarrow.fs.FileSystem`` or fsspec filesystem, with ``cache_dir`` a path on it; or leave
    it out and give a URL (``s3://bucket/gwtools``). Pass the result to any
    :mod:`gwtools.analysis` function, or call ``.df()``/``.arrow()`` on it. As with
    ``read_cache``, a dataset no sync has completed warns (:class:`gwtools.GatewayDataWarning`),
    or with ``strict=True`` raises :class:`gwtools.CacheError`. Example::

        payments = gwtools.scan_cache("data/sample-cache", "payments", status="failed")
        analysis.decline_breakdown(payments)
    """
    filters = check_filters(resource, since, until, status).expressions()  # before the cache
    remote = _resolve_filesystem(cache_dir, filesystem)
    where = (account, mode, filters, strict)
    return _relation(cache_dir, resource, remote, *where, caller="scan_cache").rel


def scan_dataset(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    *,
    account: str | None = None,
    mode: str | None = None,
) -> tuple[duckdb.DuckDBPyRelation, Dataset]:
    """:func:`scan_cache`'s whole table and the dataset it reads (whose state says more of
    it), found once."""
    remote = _resolve_filesystem(cache_dir, None)
    scan = _relation(cache_dir, resource, remote, account, mode, [], False, caller="scan_cache")
    return scan.rel, scan.dataset


class _Scan(NamedTuple):
    """A lazy table, the dataset it reads, and the part files it leaves out (with why)."""

    rel: duckdb.DuckDBPyRelation
    dataset: Dataset
    damaged: dict[str, str]


def _relation(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    remote: tuple[pafs.FileSystem, str] | None,
    account: str | None,
    mode: str | None,
    filters: list[nw.Expr],
    strict: bool,
    *,
    caller: str,
) -> _Scan:
    """:func:`scan_cache`'s table and the dataset it reads; ``caller`` names who warns of a
    partial cache or of files left out."""
    dataset = _find(cache_dir, resource, remote, account, mode)
    _check_complete(dataset, strict, caller)
    scan = _table(dataset, filters)
    if scan.damaged:
        _say_damaged(dataset, scan.damaged, strict, caller)
    return scan


def _table(dataset: Dataset, filters: list[nw.Expr]) -> _Scan:
    """The lazy table of ``dataset``'s part files as listed now, with the files it leaves out
    (not said here)."""
    columns = list(_schema.columns(dataset.resource))
    con = connection()
    rel: duckdb.DuckDBPyRelation
    if not isinstance(dataset, _RemoteDataset):
        for attempt in range(READ_ATTEMPTS):
            try:
                local, damaged = _scan_local(con, dataset)
                break
            except duckdb.IOException as exc:
                # A sync merged a month (or dropped one) since the listing: list again, as
                # read_cache does, so a scan during a sync reads a complete set of files.
                gone = files_gone(exc, "scan the cache again")
                if gone is None:
                    raise
                if attempt == READ_ATTEMPTS - 1:
                    raise gone from None
        if local is None:
            return _Scan(_empty(dataset.resource, con), dataset, damaged)
        rel = local
    else:
        for attempt in range(READ_ATTEMPTS):
            try:
                remote, damaged = _scan_remote(con, dataset, columns)
                break
            except FileNotFoundError:
                # A sync merged a month since the listing, as above.
                if attempt == READ_ATTEMPTS - 1:
                    raise _gone(None, "scan the cache again") from None
        if remote is None:
            return _Scan(_empty(dataset.resource, con), dataset, damaged)
        rel = remote
    lf = nw.from_native(rel)
    if "filename" in lf.columns:
        lf = lf.rename({"filename": _FILE})
    if _FILE in lf.columns:
        newest = nw.col(_FILE).max().over("id")
        lf = lf.filter(nw.col(_FILE) == newest)
    if filters:
        lf = lf.filter(*filters)
    if lf.columns != columns:  # another tool's files, or the file names of a deduplication
        lf = lf.select(columns)
    return _Scan(lf.to_native(), dataset, damaged)


def _scan_remote(
    con: duckdb.DuckDBPyConnection, dataset: _RemoteDataset, columns: list[str]
) -> tuple[duckdb.DuckDBPyRelation | None, dict[str, str]]:
    """The lazy scan of a dataset's part files on shared storage as listed now (None: there
    are none), and the files left out as known unreadable (with why)."""
    fs = dataset.fs
    # Known from the listing alone: reading every footer first would cost a request per
    # file. A file found damaged only when a query reads it is named by that query's
    # error (unreadable_part), and left out from then on.
    infos = dataset_file_infos(fs, dataset.folder)
    damaged = {i.path: why for i in infos if (why := _known_unreadable(fs, i)) is not None}
    files = [i.path for i in infos if i.path not in damaged]
    _parts.update(dict.fromkeys(files, fs))
    if not files:
        return None, damaged
    schema = dataset.schema
    if not _needs_dedup(files):
        return con.from_arrow(
            pads.dataset(files, filesystem=fs, format="parquet", schema=schema)
        ), damaged
    # One dataset per file: the file's name (write order) decides which version wins.
    parts = [pads.dataset(f, filesystem=fs, format="parquet", schema=schema) for f in files]
    tables = [
        con.from_arrow(p).project(
            *[duckdb.ColumnExpression(c) for c in columns],
            duckdb.ConstantExpression(f).alias(_FILE),
        )
        for p, f in zip(parts, files, strict=True)
    ]
    return functools.reduce(lambda a, b: a.union(b), tables), damaged


def _scan_local(
    con: duckdb.DuckDBPyConnection, dataset: Dataset
) -> tuple[duckdb.DuckDBPyRelation | None, dict[str, str]]:
    """The lazy scan of a local dataset's part files as listed now (None: there are none),
    and the files left out because their footers cannot be read (with why)."""
    files = dataset_files(pafs.LocalFileSystem(), os.fspath(dataset.path))
    _parts.update(dict.fromkeys(files))
    if not files:
        return None, {}
    # union_by_name: a file missing a column (written by another tool) gives nulls there.
    # No hive partitioning: the month folder's column would need a projection to drop,
    # and DuckDB pushes a filter on an expression (the JSON order id of the customer
    # chains) into the Parquet scan only when no projection sits between (0.95 s -> 0.52 s
    # for that filter over 10M payments).
    try:
        return _read_parquet(con, files), {}
    except duckdb.Error:
        # A part file whose footer cannot be read (zero bytes, truncated, not Parquet):
        # its rows are left out and said, as read_cache does; the other files are read.
        damaged = {f: why for f in files if (why := _unreadable(Path(f))) is not None}
        if not damaged:
            raise
        files = [f for f in files if f not in damaged]
        if not files:
            return None, damaged
        return _read_parquet(con, files), damaged


def _read_parquet(con: duckdb.DuckDBPyConnection, files: list[str]) -> duckdb.DuckDBPyRelation:
    """The lazy scan of local part ``files`` (DuckDB reads their footers now)."""
    return con.read_parquet(
        files, hive_partitioning=False, union_by_name=True, filename=_needs_dedup(files)
    )


def _say_damaged(dataset: Dataset, damaged: dict[str, str], strict: bool, caller: str) -> None:
    """Warn (or raise, ``strict``) that the part files ``damaged`` (with why each cannot be
    read) are left out of a lazy table, in read_cache's words."""
    _partial(_damaged_message(dataset, damaged), strict, caller)


def _damaged_message(dataset: Dataset, damaged: dict[str, str]) -> str:
    return (
        "; ".join(
            f"{f} cannot be read ({why}), so its rows are missing; the next sync moves it to "
            f"{dataset.quarantine_path} and fetches its month again"
            for f, why in damaged.items()
        )
        + ". Run `gwtools sync` (or gwtools.connect().sync()) to complete the cache"
    )


def read_shared(
    cache_dir: str | os.PathLike[str],
    resource: Resource,
    remote: tuple[pafs.FileSystem, str],
    filters: list[nw.Expr],
    *,
    account: str | None,
    mode: str | None,
    strict: bool,
) -> pd.DataFrame:
    """:func:`gwtools.read_cache` of a cache on shared storage (``filters`` already checked):
    :func:`scan_cache`'s table in ``read_cache``'s order (creation time, then id), counted
    batch by batch as it arrives."""
    meter = ResultMeter(
        f"Reading the cached {resource} at {os.fspath(cache_dir)} into pandas",
        f"Ask for part of them (since=, until=, status=), or work on them without loading "
        f"them: gwtools.scan_cache(url, {resource!r}) is a lazy table every analysis takes.",
    )
    dataset = _find(cache_dir, resource, remote, account, mode)
    state = dataset.state()
    _check_complete(dataset, strict, "read_cache", state)
    # Only reading a footer tells whether a file is damaged (a request per file): a file the
    # read finds damaged is left out of the next one, as a local read leaves it out, and
    # the files left out are said once, the read done.
    found: set[str] = set()
    gone = 0
    while True:
        scan = _table(dataset, filters)
        if strict and scan.damaged:
            _say_damaged(dataset, scan.damaged, strict, "read_cache")
        ordered = nw.from_native(scan.rel).sort("created_at", "id", nulls_last=True).to_native()
        meter.reset()
        try:
            frame = to_pandas(metered_arrow(ordered, meter), resource)
            break
        except duckdb.Error as exc:
            error = unreadable_part(exc, None)
            if error is None:
                raise
            if error.path is not None and not _exists(error.path, _fs(dataset)):
                gone += 1  # a sync merged its month since the listing: list again
                if gone < READ_ATTEMPTS:
                    continue
            if error.path in found or not _left_out(dataset, error.path):
                raise error from None  # not damaged (storage that failed), or still read
            found.add(str(error.path))
    problems = [] if dataset.completed(state) else [_NOT_COMPLETED]
    if scan.damaged:
        _say_damaged(dataset, scan.damaged, strict, "read_cache")
        problems.append(_damaged_message(dataset, scan.damaged))
    partial = "; ".join(problems) or None
    set_cache_attrs(frame, os.fspath(cache_dir), state, partial, scan.damaged)
    return frame


def _fs(dataset: Dataset) -> pafs.FileSystem | None:
    return dataset.fs if isinstance(dataset, _RemoteDataset) else None


def _left_out(dataset: Dataset, path: str | None) -> bool:
    """Whether ``path`` is a file of ``dataset`` (on shared storage) that scans leave out."""
    return (
        isinstance(dataset, _RemoteDataset) and (dataset.fs.type_name, path) in _unreadable_shared
    )


_NOT_COMPLETED = "no sync of them has completed: run `gwtools sync`"

#: Rows per batch fetched from DuckDB.
_BATCH_ROWS = 1_000_000


def metered_arrow(rel: duckdb.DuckDBPyRelation, meter: ResultMeter) -> pa.Table:
    """``rel``'s rows as one Arrow table, fetched batch by batch so that ``meter`` stops a
    result too large for this machine before it is all in memory."""
    # to_arrow_reader from DuckDB 1.5 on, where fetch_record_batch is deprecated
    read = getattr(rel, "to_arrow_reader", None) or rel.fetch_record_batch
    # Closed however it ends: a result left open blocks the connection's next query.
    with read(_BATCH_ROWS) as reader:
        return meter.table(reader, reader.schema)
