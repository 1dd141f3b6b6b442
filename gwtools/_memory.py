"""How much memory one eager result may take, so that asking for too much is an error and not
a dead kernel.

``read_cache``, ``Gateway.payments()``/``refunds()`` and the row-level analyses of a lazy table
build their result batch by batch through a :class:`ResultMeter`, which raises
:class:`~gwtools.ResultTooLargeError` once the batches pass the budget. Without it, asking for
100M cached payments in pandas (about 53 GB) ends in the out-of-memory killer, which takes the
analyst's Jupyter kernel, and every variable in it, along.

The budget: ``GW_MAX_RESULT_MEMORY`` (a size such as ``8GB`` or ``512MiB``, or ``off``), else
40% of the memory this process may use (the machine's, or its container's limit when lower).
Why 40%: reading 1M canonical payments held 534 MB of Arrow and peaked at 1.03 GB (the pandas
frame shares the Arrow text buffers), so a result at the budget peaks near 80%.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from gwtools._errors import ConfigurationError, ResultTooLargeError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DEFAULT_SHARE", "MEMORY_ENV", "ResultMeter", "format_size", "result_budget"]

MEMORY_ENV: Final = "GW_MAX_RESULT_MEMORY"
#: Share of the usable memory one result may take when ``GW_MAX_RESULT_MEMORY`` is unset.
DEFAULT_SHARE: Final = 0.4
_UNITS: Final = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip
_SIZE: Final = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*", re.IGNORECASE)
_OFF: Final = ("off", "none", "0")
#: cgroup v2, then v1: a container's memory limit.
_CGROUP_LIMITS: Final = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)


def format_size(n: float) -> str:
    """Bytes as people write them: ``5.3 GB``, ``534 MB`` (decimal units, as DuckDB's)."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{int(n)} B"


def parse_size(text: str) -> int | None:
    """``"8GB"`` -> 8,000,000,000; ``"off"`` -> None. Anything else: ConfigurationError."""
    if text.strip().lower() in _OFF:
        return None
    match = _SIZE.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise ConfigurationError(
            f"{MEMORY_ENV}={text!r} is not a size: write it like 8GB, 512MiB or 20000000000 "
            "(bytes), or off to let results take any memory"
        )
    return int(float(match.group(1)) * _UNITS[unit])


def usable_memory() -> int | None:
    """The memory this process may use: the machine's, or its container's limit when lower;
    None where neither can be read."""
    try:
        total: int | None = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        total = None
    for path in _CGROUP_LIMITS:
        try:
            limit = int(path.read_text().strip())
        except (OSError, ValueError):  # absent, or "max": no limit
            continue
        if total is None or limit < total:
            total = limit
        break
    return total


def result_budget() -> tuple[int | None, str]:
    """Bytes one eager result may take (None: no limit), and where that figure comes from."""
    text = os.environ.get(MEMORY_ENV, "").strip()
    if text:
        return parse_size(text), f"{MEMORY_ENV}={text}"
    usable = usable_memory()
    if usable is None:
        return None, "no limit: this machine's memory cannot be read"
    return int(usable * DEFAULT_SHARE), (
        f"{DEFAULT_SHARE:.0%} of the {format_size(usable)} of memory here, as "
        f"{MEMORY_ENV} is not set"
    )


class ResultMeter:
    """Adds up a result's batches as they arrive and stops it past the budget.

    ``what`` names the result (``"Reading the cached payments …"``), ``advice`` says how to
    ask for less. Example::

        meter = ResultMeter("Reading the cached payments", "Pass since= and until=.")
        table = meter.table(reader, reader.schema)
    """

    def __init__(self, what: str, advice: str) -> None:
        self.what, self.advice = what, advice
        self.budget, self.source = result_budget()
        self.nbytes = self.rows = 0

    def reset(self) -> None:
        """Count from zero again: the result is being read again from its start."""
        self.nbytes = self.rows = 0

    def add(self, nbytes: int, rows: int) -> None:
        """Count one batch; raise :class:`~gwtools.ResultTooLargeError` past the budget."""
        self.nbytes += nbytes
        self.rows += rows
        if self.budget is not None and self.nbytes > self.budget:
            raise ResultTooLargeError(
                f"{self.what} reached {format_size(self.nbytes)} after {self.rows:,} rows, "
                f"more than one result may take ({format_size(self.budget)}: {self.source}), "
                f"so gwtools stopped it before this machine ran out of memory. {self.advice} "
                f"If the machine has room, set {MEMORY_ENV} higher (for example "
                f"{MEMORY_ENV}=32GB), or to off"
            )

    def table(self, batches: Iterable[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
        """``batches`` as one Arrow table, each counted as it arrives (so a result too large
        stops before it is all in memory)."""
        import pyarrow as pa

        kept = []
        for batch in batches:
            self.add(batch.nbytes, batch.num_rows)
            kept.append(batch)
        return pa.Table.from_batches(kept, schema=schema)
