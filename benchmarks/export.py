"""Exporting the canonical payments: ``write_table`` to CSV and Parquet from a lazy table.

Uses the synthetic scale cache of ``--payments`` payments (benchmarks/_scale_data.py; built
under ``--root`` unless already there, the same caches as scale.py), streams it through
``gwtools.write_table`` as CSV and as Parquet, and times each format (wall seconds, rows per
second, file size, peak resident memory). ``--baseline`` also times pandas spelling the times
itself (``DataFrame.to_csv`` on each batch, as exports did before times were spelled in one
vectorised pass) on the first ``--baseline-rows`` rows, and checks both CSVs are the same bytes.

    python benchmarks/export.py                          # 1M payments
    python benchmarks/export.py --payments 10M --formats csv

Prints a table and writes benchmarks/results/export.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
RESULTS = HERE / "results" / "export.json"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    import _scale_data
    from scale import DEFAULT_ROOT, label, parse_size

    import gwtools
    from gwtools.cache._export import batches

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--payments", default="1M", help="cache size (e.g. 1M, 10M)")
    parser.add_argument("--formats", default="csv,parquet")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--baseline", action="store_true", help="time pandas' own spelling too")
    parser.add_argument("--baseline-rows", type=int, default=500_000)
    args = parser.parse_args()
    n = parse_size(args.payments)
    cache = _scale_data.ensure_cache(args.root, n)
    table = gwtools.scan_cache(cache, "payments")
    runs = []
    with tempfile.TemporaryDirectory(prefix="gw-export-") as tmp:
        for fmt in args.formats.split(","):
            out = Path(tmp) / f"payments.{fmt}"
            start = time.perf_counter()
            rows = gwtools.write_table(table, out, fmt)
            seconds = time.perf_counter() - start
            runs.append({
                "what": f"write_table {fmt}", "rows": rows, "seconds": round(seconds, 1),
                "rows_per_s": round(rows / seconds), "mb": round(out.stat().st_size / 1e6),
                "peak_mb": round(_peak_mb()),
            })  # fmt: skip
            print(f"{runs[-1]['what']:<24} {rows:>12,} rows {seconds:8.1f} s "
                  f"{runs[-1]['rows_per_s']:>9,} rows/s {runs[-1]['mb']:>7,} MB")  # fmt: skip
            if fmt == "csv" and args.baseline:
                head = table.limit(args.baseline_rows)
                ours = Path(tmp) / "head.csv"
                start = time.perf_counter()
                gwtools.write_table(head, ours, "csv")
                fast = time.perf_counter() - start
                theirs = Path(tmp) / "pandas.csv"
                start = time.perf_counter()
                with open(theirs, "w", encoding="utf-8", newline="") as handle:
                    for i, frame in enumerate(batches(head)):
                        frame.to_csv(handle, index=False, header=i == 0)
                slow = time.perf_counter() - start
                same = ours.read_bytes() == theirs.read_bytes()
                runs.append({
                    "what": "csv, pandas spelling", "rows": args.baseline_rows,
                    "seconds": round(slow, 1), "vectorised_seconds": round(fast, 1),
                    "same_bytes": same,
                })  # fmt: skip
                print(f"{'csv, pandas spelling':<24} {args.baseline_rows:>12,} rows {slow:8.1f} s "
                      f"(vectorised {fast:.1f} s; same bytes: {same})")  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({
        "payments": label(n), "cpus": os.cpu_count(), "load_average": os.getloadavg(),
        "runs": runs,
    }, indent=2) + "\n")  # fmt: skip
    print(f"wrote {RESULTS.relative_to(HERE.parent)}")


if __name__ == "__main__":
    main()
