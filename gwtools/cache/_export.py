"""Write a table of any size to CSV or Parquet in batches, never whole in memory.

:func:`write_table` takes what the analyses take (a pandas DataFrame, a lazy DuckDB table from
:func:`gwtools.scan_cache`/``Gateway.scan``, a PySpark DataFrame, or a Narwhals frame over one)
and streams it: DuckDB hands over Arrow record batches, Spark rows come through
``toLocalIterator``. Canonical payments and refunds become the canonical pandas dtypes batch by
batch; any other lazy DuckDB result is typed as its ``.df()`` types it (sums and decimals
float64, dates naive times, integers holding a null ``Int64``) and goes to Parquet as Arrow,
never through text. A Parquet file's schema is the whole table's, fixed before the first row
(the engine's result schema; a pandas frame's from all its rows), whatever the first batch
holds; a Spark table that is not canonical takes its first batch's. So a file holds exactly
what ``frame.to_csv(index=False)``/``frame.to_parquet(index=False)`` of the same rows would
hold, whatever the size (in CSV, batch by batch: a time's fraction has the digits its batch
needs; for a lazy table's integers the Parquet's pandas metadata says ``Int64``, as whether a
column holds a null is known only at the end; a text cell holding a carriage return is quoted,
as one holding a line feed is, which Python's csv writer leaves bare before 3.13).
UTC times are spelled for CSV in one vectorised pass, as pandas spells them; pandas goes value
by value, which was half of a canonical CSV export's time. ``gwtools export``, the notebooks'
``save_tables`` and the dashboards' export buttons use it.

CSV only: a text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
(a payment's description, metadata, e-mail, failure message: text customers typed) is written
with a leading ``'``, so that a spreadsheet shows it as text instead of running it as a formula
(OWASP "CSV Injection"); see :func:`write_table`'s ``formula_guard``. Numbers, flags and times
are never touched, nor is Parquet.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, cast

import narwhals as nw
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gwtools import _schema
from gwtools._errors import ConfigurationError
from gwtools.cache._dataset import PARTITION, QUARANTINE, STAGING, replacing

__all__ = ["BATCH_ROWS", "batches", "check_export_path", "write_table"]

#: Rows per batch: a few tens of MB of canonical payments at most.
BATCH_ROWS = 100_000

log = logging.getLogger("gwtools")


def canonical_resource(columns: list[str]) -> _schema.Resource | None:
    """The resource whose canonical columns ``columns`` are, in order; else None."""
    for resource in _schema.RESOURCES:
        if columns == list(_schema.columns(resource)):
            return resource
    return None


def _to_frame(batch: pa.Table, resource: _schema.Resource | None) -> pd.DataFrame:
    """One Arrow batch as pandas: canonical tables exactly as ``read_cache`` types them, any
    other as DuckDB's ``.df()`` types it (numbers stay numbers, dates times, never text)."""
    from gwtools.analysis._engine import from_arrow
    from gwtools.cache._dataset import to_pandas as canonical_frame

    if resource is not None:
        return canonical_frame(batch, resource)
    return from_arrow(batch)


def _nullable_dtype(kind: pa.DataType) -> str | None:
    """The pandas nullable dtype ``.df()`` gives an Arrow integer/flag column holding a null."""
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_integer(kind):
        return f"{'U' if pa.types.is_unsigned_integer(kind) else ''}Int{kind.bit_width}"
    return None


def _file_schema(schema: pa.Schema) -> pa.Schema:
    """The Parquet schema of a (non-canonical) lazy result whose Arrow schema is ``schema``:
    what ``rel.df().to_parquet(index=False)`` writes (decimals double, dates ``timestamp[us]``,
    text ``large_string``), known before the first row, so that every batch has it.

    Whether an integer or flag column holds a null is known only at the end: the pandas
    metadata says the nullable dtype (``Int64``, ``boolean``), so that reading the file back
    never turns integers into floats.
    """
    empty = _to_frame(schema.empty_table(), None)
    for i, field in enumerate(schema):
        nullable = _nullable_dtype(field.type)
        if nullable is not None:
            empty.isetitem(i, empty.iloc[:, i].astype(pd.api.types.pandas_dtype(nullable)).array)
    pandas = pa.Schema.from_pandas(empty, preserve_index=False)
    # pandas has no type of its own for some (times of day, lists, ...): an empty object
    # column says null, where ``to_parquet`` of the values would give Arrow's own type.
    fields = [
        p.with_type(a.type) if pa.types.is_null(p.type) and not pa.types.is_null(a.type) else p
        for a, p in zip(schema, pandas, strict=True)
    ]
    return pa.schema(fields, metadata=pandas.metadata)


def _native(table: Any) -> Any:
    return table.to_native() if isinstance(table, nw.DataFrame | nw.LazyFrame) else table


def _pieces(
    table: Any, rows: int, *, typed: bool = True
) -> tuple[pa.Schema | None, Iterator[pd.DataFrame | pa.Table]]:
    """``table`` as the file's schema (None: that of its first piece, whose dtypes are fixed)
    and its pieces of at most ``rows`` rows (at least one, maybe empty): pandas DataFrames, or
    Arrow tables already in that schema (a lazy table that is not canonical). ``typed=False``:
    no Arrow schema is asked of a pandas frame (CSV, which does not use it, writes an object
    column mixing numbers and text as ``to_csv`` does, where Arrow has no type for it)."""
    native = _native(table)
    if isinstance(native, pd.DataFrame):
        frame = native.copy(deep=False)
        # pyarrow writes DataFrame.attrs into the file's metadata as JSON and warns (naming
        # this file's path) on values it cannot encode, such as a monitor's Timestamps;
        # attrs describe the frame in memory, not the exported rows.
        frame.attrs = {}
        if not typed:
            return None, _frame_pieces(frame, rows)
        # The whole frame's types (it is in memory): an object column's first rows do not say
        # what the rest hold (1, 2 then 3.5; nulls then text).
        return pa.Schema.from_pandas(frame, preserve_index=False), _frame_pieces(frame, rows)
    import duckdb

    if isinstance(native, duckdb.DuckDBPyRelation):
        resource = canonical_resource(list(native.columns))
        # One schema for the whole result, whatever the first batch holds (all nulls, say).
        with _part_files_said():
            reader = native.to_arrow_reader(rows)
        if resource is not None:
            return None, (_to_frame(b, resource) for b in _arrow_pieces(reader))
        schema = _file_schema(reader.schema)
        return schema, (b.cast(schema) for b in _arrow_pieces(reader))
    if type(native).__module__.startswith("pyspark"):
        return None, _spark_batches(native, rows)
    raise ConfigurationError(
        f"cannot write a {type(native).__module__}.{type(native).__name__}: pass a pandas "
        "DataFrame, a lazy table from gwtools.scan_cache()/Gateway.scan(), or a PySpark DataFrame"
    )


def _frame_pieces(frame: pd.DataFrame, rows: int) -> Iterator[pd.DataFrame]:
    if frame.empty:
        yield frame.reset_index(drop=True)
    for start in range(0, len(frame), rows):
        yield frame.iloc[start : start + rows].reset_index(drop=True)


def _arrow_pieces(reader: pa.RecordBatchReader) -> Iterator[pa.Table]:
    """The reader's non-empty batches as tables in its schema; one empty table if none."""
    schema = reader.schema
    empty = True
    with _part_files_said():
        for batch in reader:
            if batch.num_rows:
                empty = False
                yield pa.Table.from_batches([batch], schema=schema)
    if empty:
        yield schema.empty_table()


@contextlib.contextmanager
def _part_files_said() -> Iterator[None]:
    """A cache part file that is gone or cannot be read, met while DuckDB streams a lazy
    table, as the :class:`gwtools.CacheError` naming it (DuckDB's error arrives as its own,
    or inside the stream as pyarrow's ArrowInvalid, a ValueError, or its IOError)."""
    import duckdb

    try:
        yield
    except (duckdb.Error, pa.ArrowException, OSError) as exc:
        from gwtools.cache._scan import files_gone, unreadable_part

        said = files_gone(exc, "scan the cache again") or unreadable_part(exc, None)
        if said is None:
            raise
        raise said from None


def batches(table: Any, rows: int | None = None) -> Iterator[pd.DataFrame]:
    """``table`` as pandas DataFrames of at most ``rows`` rows each (default
    :data:`BATCH_ROWS`; at least one, maybe empty), read from its engine one batch at a time."""
    _, pieces = _pieces(table, rows or BATCH_ROWS, typed=False)
    for piece in pieces:
        yield piece if isinstance(piece, pd.DataFrame) else _to_frame(piece, None)


def _spark_batches(frame: Any, rows: int) -> Iterator[pd.DataFrame]:
    """A Spark DataFrame's rows through the driver one partition at a time (never all at once).

    Timestamps travel as microseconds since 1970 (``unix_micros``): Python rows would carry
    naive times in the driver's local zone, which DST makes ambiguous.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    from gwtools.analysis._engine import to_pandas

    columns = list(frame.columns)
    stamps = [
        f.name
        for f in frame.schema.fields
        if isinstance(f.dataType, TimestampType | TimestampNTZType)
    ]
    # TIMESTAMP_NTZ is a wall-clock time: toPandas() gives it naive, and so does the export of
    # a table that is not canonical (unix_micros counts its wall clock from 1970 whatever the
    # session's zone; to_pandas would call it UTC). A canonical table's times are UTC.
    naive = {f.name for f in frame.schema.fields if isinstance(f.dataType, TimestampNTZType)}
    plain = frame.select(
        *[F.unix_micros(F.col(c)).alias(c) if c in stamps else F.col(c) for c in columns]
    )
    resource = canonical_resource(columns)

    def finish(chunk: list[Any]) -> pd.DataFrame:
        out = pd.DataFrame.from_records(chunk, columns=columns)
        for c in stamps:
            out[c] = pd.to_datetime(out[c].astype("Int64"), unit="us", utc=True)
        if resource is not None:
            return _schema.conform(out, resource)
        out = to_pandas(out)
        for c in naive:
            out[c] = out[c].dt.tz_localize(None)
        return out

    chunk: list[Any] = []
    sent = False
    for row in plain.toLocalIterator():
        chunk.append(tuple(row))
        if len(chunk) >= rows:
            yield finish(chunk)
            chunk, sent = [], True
    if chunk or not sent:
        yield finish(chunk)


#: Sub-second units of a time column, coarsest first, with their ticks per second.
_UNITS: dict[Literal["s", "ms", "us", "ns"], int] = {
    "s": 1,
    "ms": 1_000,
    "us": 1_000_000,
    "ns": 1_000_000_000,
}
#: Years numpy and pandas spell alike (four digits); a column reaching past them is left to pandas.
_YEARS = (np.datetime64("0001-01-01"), np.datetime64("9999-12-31"))


def _csv_times(col: pd.Series) -> pd.Series | None:
    """A UTC time column as ``to_csv`` spells it, in one vectorised pass; None when pandas
    should spell it (another zone, a year past four digits).

    pandas writes a zone-aware time one value at a time, which took half of a canonical CSV
    export's time. Its spelling is kept: ``2026-11-01 08:30:00+00:00``, with the fraction of
    the finest unit any value of the column needs (none, 3, 6 or 9 digits), empty for NaT.
    """
    dtype = col.dtype
    if not isinstance(dtype, pd.DatetimeTZDtype) or str(dtype.tz) != "UTC" or col.empty:
        return None
    values = col.dt.tz_localize(None).to_numpy()
    known = ~np.isnat(values)
    if known.any() and (values[known].min() < _YEARS[0] or values[known].max() > _YEARS[1]):
        return None
    base = np.datetime_data(values.dtype)[0]
    per_second = next(n for u, n in _UNITS.items() if u == base)
    sub = values[known].view("int64") % per_second
    unit = next(
        u for u, n in _UNITS.items() if n >= per_second or not (sub % (per_second // n)).any()
    )
    text = np.char.add(
        np.char.replace(np.datetime_as_string(values, unit=unit), "T", " "), "+00:00"
    )
    return pd.Series(text, index=col.index, dtype=object).where(known, None)


def _csv_ready(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its UTC time columns already spelled as ``to_csv`` spells them."""
    out = frame
    for name, col in frame.items():
        text = _csv_times(col)
        if text is not None:
            if out is frame:
                out = frame.copy(deep=False)  # the caller's frame stays as it was
            out[name] = text
    return out


#: What a spreadsheet runs as a formula when a cell starts with it (OWASP "CSV Injection").
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
_FORMULA_START = "^[" + re.escape("".join(FORMULA_LEADS)) + "]"


def _is_text(kind: pa.DataType) -> bool:
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def _guard_column(col: pd.Series) -> tuple[pd.Series | None, int]:
    """A text column's cells that start a formula with ``'`` before them, and how many there
    were; ``(None, 0)`` when none does or ``col`` is not text (numbers, flags, times)."""
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        _, found = _guard_column(pd.Series(dtype.categories))
        return _guard_column(col.astype(object)) if found else (None, 0)
    if isinstance(dtype, pd.ArrowDtype):
        if not _is_text(dtype.pyarrow_dtype):
            return None, 0
    elif not isinstance(dtype, pd.StringDtype) and not pd.api.types.is_object_dtype(dtype):
        return None, 0
    try:
        values = pa.array(col, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # an object column mixing text and numbers
        return _guard_mixed(col)
    if not _is_text(values.type):
        return None, 0
    hit = pc.match_substring_regex(values, _FORMULA_START)
    found = pc.sum(hit).as_py() or 0
    if not found:
        return None, 0
    quoted = pc.if_else(hit, pc.utf8_replace_slice(values, 0, 0, "'"), values)  # null stays null
    return quoted.to_pandas().set_axis(col.index), found


def _guard_mixed(col: pd.Series) -> tuple[pd.Series | None, int]:
    """:func:`_guard_column` of an object column that Arrow cannot type (numbers and text
    mixed), value by value: only its text cells are looked at."""
    hit = col.map(lambda v: isinstance(v, str) and v.startswith(FORMULA_LEADS)).astype(bool)
    found = int(hit.sum())
    if not found:
        return None, 0
    quoted = col.copy()
    quoted[hit] = "'" + col[hit].astype(str)
    return quoted, found


def _guard_formulas(frame: pd.DataFrame, guarded: dict[str, int]) -> pd.DataFrame:
    """``frame`` with its text cells that start a formula quoted (see :func:`_guard_column`),
    adding their count per column to ``guarded``; the caller's frame stays as it was."""
    out = frame
    for i, (name, col) in enumerate(frame.items()):
        quoted, found = _guard_column(col)
        if quoted is not None:
            if out is frame:
                out = frame.copy(deep=False)
            out.isetitem(i, quoted.array)
            guarded[str(name)] = guarded.get(str(name), 0) + found
    return out


#: A quoted CSV field (quotes inside it doubled), or a row's end as ``to_csv`` spells it
#: with ``lineterminator="\r\n"``.
_QUOTED_OR_ROW_END = re.compile(r'("[^"]*(?:""[^"]*)*")|\r\n')


def _csv_text(frame: pd.DataFrame, *, header: bool) -> str:
    """``frame.to_csv(index=False)``, except that a text cell holding a carriage return is
    quoted (as a line feed is). Python's csv writer (before 3.13) quotes only the characters
    of its line ending, ``\n``: a lone CR left bare ends the row for every reader (pandas,
    Excel, Python's csv), shifting the columns after it. Rows still end with ``\n``."""
    text: str = frame.to_csv(index=False, header=header)
    if "\r" not in text:
        return text
    # Written again ending rows with CRLF, which has the writer quote every field with a CR;
    # then the rows' ends, never a quoted field's, become \n again.
    crlf: str = frame.to_csv(index=False, header=header, lineterminator="\r\n")
    return _QUOTED_OR_ROW_END.sub(lambda m: m.group(1) or "\n", crlf)


def _write(
    table: Any,
    fmt: str,
    target: IO[str] | IO[bytes] | str,
    rows: int,
    guarded: dict[str, int] | None,
) -> int:
    written = 0
    schema, pieces = _pieces(table, rows, typed=fmt != "csv")
    if fmt == "csv":
        for i, piece in enumerate(pieces):
            frame = piece if isinstance(piece, pd.DataFrame) else _to_frame(piece, None)
            written += len(frame)
            if guarded is not None:
                frame = _guard_formulas(frame, guarded)
            # (CSV is always written to a text stream: see _write_to)
            cast("IO[str]", target).write(_csv_text(_csv_ready(frame), header=i == 0))
        return written
    writer: pq.ParquetWriter | None = None
    try:
        for piece in pieces:
            written += len(piece)
            if isinstance(piece, pd.DataFrame):
                piece.attrs = {}  # (see _pieces)
                arrow = pa.Table.from_pandas(piece, schema=schema, preserve_index=False)
            else:
                arrow = piece
            if writer is None:
                schema = schema or arrow.schema
                writer = pq.ParquetWriter(target, schema)
            writer.write_table(arrow)
    finally:
        if writer is not None:
            writer.close()
    return written


#: The encodings CSV is written in: UTF-8, with or without a byte-order mark.
_ENCODINGS = ("utf-8", "utf-8-sig")

#: Names that say a file is compressed (pandas' to_csv would compress into them).
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst", ".zip", ".tar")


def _check_path(target: Path, fmt: str) -> None:
    """Refuse, before anything is written, a path whose file cannot be put in place (the
    rename would fail, naming the temporary file beside it), or whose name says compressed."""
    if target.suffix.lower() in _COMPRESSED:
        # written plain, it would fail in whatever opens it by its name ("Not a gzipped file")
        inside = " (Parquet compresses its columns itself)" if fmt == "parquet" else ""
        raise ConfigurationError(
            f"cannot write {fmt} to {target}: its name ends {target.suffix}, which says "
            f"compressed, and the file is written uncompressed{inside}; name it "
            f"{target.stem}, then compress that file if you need to"
        )
    if target.is_dir():
        raise ConfigurationError(
            f"cannot write {fmt} to {target}: it is a folder; give a file path, such as "
            f"{target / ('table.' + fmt)}"
        )
    folder = target.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ConfigurationError(
            f"cannot write {fmt} to {target}: its folder {folder} {what}; create the folder "
            "first, or give a path in an existing folder"
        )


def _check_outside_cache(target: Path, fmt: str) -> None:
    """Refuse a path inside a cache's dataset (a month's file, a file beside it, or one in the
    dataset's, staging's or quarantine's folder): it would overwrite a month with the whole
    table, or put a foreign file where DuckDB, Spark and the next sync read the dataset. Only
    the folders above the file are looked at (a few ``stat`` calls), links followed."""
    here = Path(os.path.realpath(target.parent))
    for folder in (here, *here.parents):
        if (
            folder.name.startswith(f"{PARTITION}=")
            or (folder / "_state.json").is_file()
            # (a `_staging` folder of one's own, with no dataset beside it, is no cache's)
            or (
                folder.name in (STAGING, QUARANTINE)
                and any((folder.parent / r).is_dir() for r in _schema.RESOURCES)
            )
        ):
            raise ConfigurationError(
                f"cannot write {fmt} to {target}: it is inside the cache's dataset {folder}, "
                "where it would replace or be read as cached rows; write it outside the cache "
                "folder"
            )


def _destination(path: Path) -> Path:
    """The file a write to ``path`` replaces: a symlink's target (followed to the end, even if
    it does not exist yet), so that the link stays a link, as when a program opens it for
    writing; ``path`` itself otherwise."""
    if not path.is_symlink():
        return path
    return Path(os.path.realpath(path))


def _special(path: Path) -> bool:
    """Whether ``path`` (a symlink followed) is there and neither a regular file nor a folder:
    a device or a pipe (``/dev/null``, ``/dev/stdout``, a FIFO), which is written into as any
    program writes to it, never replaced by a file renamed over it."""
    return path.exists() and not (path.is_file() or path.is_dir())


def _keep_mode(target: Path, tmp: Path) -> None:
    """Give ``tmp`` the permission bits of the file ``target`` it is about to replace (a
    0640 file stays 0640, not the umask's 0644); a new file keeps the umask's."""
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return
    os.chmod(tmp, mode)


def write_table(
    table: Any,
    out: str | os.PathLike[str] | IO[str],
    fmt: str,
    *,
    rows: int | None = None,
    formula_guard: bool = True,
    guarded: dict[str, int] | None = None,
    encoding: str = "utf-8",
) -> int:
    """Write ``table`` to ``out`` as ``"csv"`` or ``"parquet"`` one batch at a time; return the
    number of rows written.

    ``out`` is a path (written to a temporary name beside it and renamed at the end, so a
    reader never sees half a file; a file it replaces keeps its permission bits, and a
    symlink stays a link: the file it points to is the one written; a device or pipe, such as
    ``/dev/null`` or ``/dev/stdout``, is written into, not replaced) or an open text stream
    for CSV (e.g. ``sys.stdout``); a path that is (or ends with ``/``, as) a folder, or whose
    folder does not exist, or whose name says compressed (``.gz``, ``.zip``…: the file is
    not), or that lies inside a cache's dataset (a month's file, or a file DuckDB or Spark
    would read as part of the dataset), raises :class:`~gwtools.ConfigurationError` before
    anything is written. The file is what ``to_csv(index=False)``/``to_parquet(index=False)``
    of the whole table would write (a lazy table as its ``.df()``; CSV times: each batch's,
    and a carriage return in a cell quoted, see the module). Example::

        write_table(gwtools.scan_cache(cache, "payments"), "payments.parquet", "parquet")

    CSV is for spreadsheets: with ``formula_guard`` (the default) a text cell starting with
    ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is written with a ``'`` before it
    (``-50% off`` as ``'-50% off``), so that Excel, LibreOffice or Google Sheets shows it
    instead of running it as a formula; numbers (``-1500``), flags, times and empty cells are
    written as they are, and Parquet always holds the exact text. ``formula_guard=False``
    writes the exact text, for CSV read by programs. When cells were quoted, one ``INFO`` line
    on the ``gwtools`` logger says how many and in which columns, and ``guarded``, if given a
    dict, receives ``{column: cells quoted}``.

    CSV is UTF-8 without a byte-order mark; ``encoding="utf-8-sig"`` puts one first (on a
    stream too), which Excel on Windows needs to read non-ASCII text (``Café``) as UTF-8
    rather than its ANSI code page. Parquet takes no encoding.
    """
    if encoding not in _ENCODINGS:
        raise ConfigurationError(
            f"encoding={encoding!r} is not one CSV is written in: give 'utf-8' (the default) "
            "or 'utf-8-sig' (UTF-8 with a byte-order mark, for Excel)"
        )
    if encoding != "utf-8" and fmt == "parquet":
        raise ConfigurationError(
            f"encoding={encoding!r} is for CSV: Parquet stores its text as UTF-8 itself; leave "
            "encoding out"
        )
    rows = rows or BATCH_ROWS
    found: dict[str, int] | None = {} if formula_guard and fmt == "csv" else None
    count = _write_to(table, out, fmt, rows, found, encoding)
    if found:
        if guarded is not None:
            guarded.update(found)
        log.info(
            "write_table: %s cells starting a spreadsheet formula written with a leading ' (%s); "
            "formula_guard=False writes them as they are",
            f"{sum(found.values()):,}",
            ", ".join(f"{c}: {n:,}" for c, n in found.items()),
        )
    return count


def check_export_path(out: str | os.PathLike[str] | IO[str], fmt: str) -> None:
    """Raise :class:`~gwtools.ConfigurationError` when :func:`write_table` would refuse to
    write ``fmt`` (``"csv"`` or ``"parquet"``) to ``out``, writing nothing: Parquet to a
    stream, a path ending with ``/`` or that is a folder, whose folder does not exist, whose
    name says compressed, or inside a cache's dataset. Call it before work that comes first
    (a sync, a long query), so that a bad path is said at once, not at the end::

        gwtools.check_export_path("exports/payments.csv", "csv")
    """
    if fmt not in ("csv", "parquet"):
        raise ConfigurationError(f"export format must be 'csv' or 'parquet', got {fmt!r}")
    if not isinstance(out, str | os.PathLike):
        if fmt != "csv":
            raise ConfigurationError("a stream takes CSV only: give a file path for Parquet")
        return
    named = os.fspath(out)
    if named.endswith(("/", os.sep)):  # Path() would drop the slash and write a file there
        raise ConfigurationError(
            f"cannot write {fmt} to {named}: it ends with / (a folder); give a file path, such "
            f"as {named}table.{fmt}"
        )
    if _special(Path(out)):  # a device or pipe is written into as it is
        return
    target = _destination(Path(out))
    _check_path(target, fmt)
    _check_outside_cache(target, fmt)


def _write_to(
    table: Any,
    out: str | os.PathLike[str] | IO[str],
    fmt: str,
    rows: int,
    guarded: dict[str, int] | None,
    encoding: str,
) -> int:
    check_export_path(out, fmt)
    if not isinstance(out, str | os.PathLike):
        if encoding == "utf-8-sig":  # (a stream has its own encoding: the mark, as it says)
            out.write("\ufeff")
        return _write(table, fmt, out, rows, guarded)
    if _special(Path(out)):
        # opened as given: /dev/stdout's link leads to /proc/…/fd/pipe:[…], no path to open
        if fmt == "csv":
            with open(out, "w", encoding=encoding, newline="") as text:
                return _write(table, fmt, text, rows, guarded)
        with open(out, "wb") as binary:
            return _write(table, fmt, binary, rows, guarded)
    target = _destination(Path(out))
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    with replacing(target, tmp):
        if fmt == "csv":
            with open(tmp, "w", encoding=encoding, newline="") as handle:
                count = _write(table, fmt, handle, rows, guarded)
        else:
            count = _write(table, fmt, str(tmp), rows, guarded)
        _keep_mode(target, tmp)
    return count
