"""Write a table of any size to CSV or Parquet in batches, never whole in memory.

:func:`write_table` takes what the analyses take (a pandas DataFrame, a lazy DuckDB table from
:func:`gwtools.scan_cache`/``Gateway.scan``, a PySpark DataFrame, or a Narwhals frame over one)
and streams it: DuckDB hands over Arrow record batches, Spark rows come through
``toLocalIterator``, and each batch is turned into the canonical pandas dtypes and appended
(``pyarrow.parquet.ParquetWriter`` for Parquet). So a file holds exactly what
``frame.to_csv(index=False)``/``frame.to_parquet(index=False)`` of the same rows would hold,
whatever the size (in CSV, batch by batch: a time's fraction has the digits its batch needs).
UTC times are spelled for CSV in one vectorised pass, as pandas spells them; pandas goes value
by value, which was half of a canonical CSV export's time. ``gwtools export``, the notebooks'
``save_tables`` and the dashboards' export buttons use it.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

import narwhals as nw
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from gwtools import _schema
from gwtools._errors import ConfigurationError

__all__ = ["BATCH_ROWS", "batches", "write_table"]

#: Rows per batch: a few tens of MB of canonical payments at most.
BATCH_ROWS = 100_000


def canonical_resource(columns: list[str]) -> _schema.Resource | None:
    """The resource whose canonical columns ``columns`` are, in order; else None."""
    for resource in ("payments", "refunds"):
        if columns == list(_schema.columns(resource)):
            return resource
    return None


def _to_frame(batch: pa.Table, resource: _schema.Resource | None) -> pd.DataFrame:
    """One Arrow batch as pandas: canonical tables exactly as ``read_cache`` types them."""
    from gwtools.analysis._engine import to_pandas
    from gwtools.cache._dataset import to_pandas as canonical_frame

    if resource is not None:
        return canonical_frame(batch, resource)
    return to_pandas(batch)


def batches(table: Any, rows: int | None = None) -> Iterator[pd.DataFrame]:
    """``table`` as pandas DataFrames of at most ``rows`` rows each (default
    :data:`BATCH_ROWS`; at least one, maybe empty), read from its engine one batch at a time."""
    rows = rows or BATCH_ROWS
    native = table.to_native() if isinstance(table, nw.DataFrame | nw.LazyFrame) else table
    if isinstance(native, pd.DataFrame):
        if native.empty:
            yield native.reset_index(drop=True)
        for start in range(0, len(native), rows):
            yield native.iloc[start : start + rows].reset_index(drop=True)
        return
    import duckdb

    if isinstance(native, duckdb.DuckDBPyRelation):
        resource = canonical_resource(list(native.columns))
        reader = native.to_arrow_reader(rows)
        schema = reader.schema
        empty = True
        for batch in reader:
            if batch.num_rows:
                empty = False
                yield _to_frame(pa.Table.from_batches([batch], schema=schema), resource)
        if empty:
            yield _to_frame(schema.empty_table(), resource)
        return
    if type(native).__module__.startswith("pyspark"):
        yield from _spark_batches(native, rows)
        return
    raise ConfigurationError(
        f"cannot write a {type(native).__module__}.{type(native).__name__}: pass a pandas "
        "DataFrame, a lazy table from gwtools.scan_cache()/Gateway.scan(), or a PySpark DataFrame"
    )


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
        return to_pandas(out)

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


def _write(table: Any, fmt: str, target: IO[str] | IO[bytes] | str, rows: int) -> int:
    written = 0
    writer: pq.ParquetWriter | None = None
    try:
        for i, frame in enumerate(batches(table, rows)):
            written += len(frame)
            # pyarrow writes DataFrame.attrs into the file's metadata as JSON and warns (naming
            # this file's path) on values it cannot encode, such as a monitor's Timestamps;
            # attrs describe the frame in memory, not the exported rows.
            frame.attrs = {}
            if fmt == "csv":
                _csv_ready(frame).to_csv(target, index=False, header=i == 0)
                continue
            if writer is None:
                arrow = pa.Table.from_pandas(frame, preserve_index=False)
                writer = pq.ParquetWriter(target, arrow.schema)
            else:
                arrow = pa.Table.from_pandas(frame, schema=writer.schema, preserve_index=False)
            writer.write_table(arrow)
    finally:
        if writer is not None:
            writer.close()
    return written


def write_table(
    table: Any,
    out: str | os.PathLike[str] | IO[str],
    fmt: str,
    *,
    rows: int | None = None,
) -> int:
    """Write ``table`` to ``out`` as ``"csv"`` or ``"parquet"`` one batch at a time; return the
    number of rows written.

    ``out`` is a path (written to a temporary name beside it and renamed at the end, so a
    reader never sees half a file) or an open text stream for CSV (e.g. ``sys.stdout``). The
    file is what ``to_csv(index=False)``/``to_parquet(index=False)`` of the whole table would
    write (CSV times: each batch's, see the module). Example::

        write_table(gwtools.scan_cache(cache, "payments"), "payments.parquet", "parquet")
    """
    if fmt not in ("csv", "parquet"):
        raise ConfigurationError(f"export format must be 'csv' or 'parquet', got {fmt!r}")
    rows = rows or BATCH_ROWS
    if not isinstance(out, str | os.PathLike):
        if fmt != "csv":
            raise ConfigurationError("a stream takes CSV only: give a file path for Parquet")
        return _write(table, fmt, out, rows)
    target = Path(out)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        if fmt == "csv":
            with open(tmp, "w", encoding="utf-8", newline="") as handle:
                count = _write(table, fmt, handle, rows)
        else:
            count = _write(table, fmt, str(tmp), rows)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return count
