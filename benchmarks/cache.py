"""Reading the Parquet cache back: 1,000,000 cached payments -> the canonical DataFrame.

Builds a cache of N synthetic canonical payments (90 days, realistic column contents) with
the same code a sync uses (``Dataset.write_batch`` in batches of 5,000 rows, then
``compact``), then times ``gwtools.read_cache`` (best of 5, and a filtered read).
Target: under 1 second for 1,000,000 rows.

    python benchmarks/cache.py                      # 1,000,000 rows
    python benchmarks/cache.py --rows 100000

Prints a table and writes benchmarks/results/cache.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from gwtools._schema import columns, conform
from gwtools.cache._dataset import Dataset, read_cache, to_arrow

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "cache.json"


def synthetic(n: int, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    end = pd.Timestamp("2024-06-30", tz="UTC")
    # Newest first, as list pages arrive during a sync.
    created = end - pd.to_timedelta(np.sort(rng.integers(0, 90 * 86400, n)), unit="s")
    status = rng.choice(
        ["succeeded", "failed", "requires_action", "canceled"], n, p=[0.8, 0.12, 0.05, 0.03]
    )
    method = rng.choice(["card", "fpx"], n, p=[0.7, 0.3])
    amount = rng.integers(500, 200_000, n)
    return conform(
        pd.DataFrame(
            {
                "id": [f"pay_{i:020d}" for i in range(n)],
                "api_variant": "B",
                "livemode": False,
                "status": status,
                "status_raw": status,
                "outcome": np.where(
                    status == "succeeded",
                    "succeeded",
                    np.where(status == "failed", "failed", "open"),
                ),
                "amount": amount,
                "currency": "MYR",
                "amount_major": amount / 100,
                "method_type": method,
                "payment_method_id": [f"pm_{i:016d}" for i in range(n)],
                "fpx_bank_code": np.where(method == "fpx", "MB2U0227", None),
                "card_brand": np.where(method == "card", "visa", None),
                "failure_code": np.where(status == "failed", "card_declined", None),
                "captured": status == "succeeded",
                "refunded": False,
                "refunded_amount": 0,
                "description": "Order",
                "metadata": '{"order_id": "A-1"}',
                "created_at": created,
                "extra": "{}",
            }
        ),
        "payments",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    frame = synthetic(args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        ds = Dataset.at(tmp, "bench", "test", "payments")
        t = time.perf_counter()
        months: set[str] = set()
        table = to_arrow(frame, "payments")
        for i in range(0, len(frame), 5000):
            months |= ds.write_batch(table.slice(i, 5000))
        write_s = time.perf_counter() - t
        t = time.perf_counter()
        ds.compact(months)
        compact_s = time.perf_counter() - t
        del frame, table
        reads = []
        for _ in range(5):
            t = time.perf_counter()
            back = read_cache(tmp, "payments")
            reads.append(time.perf_counter() - t)
        assert len(back) == args.rows and back.dtypes.to_dict() == columns("payments")
        t = time.perf_counter()
        failed = read_cache(tmp, "payments", since="2024-06-01", status="failed")
        filtered_s = time.perf_counter() - t
        size_mb = sum(f.stat().st_size for f in Path(tmp).rglob("*.parquet")) / 1e6
    result = {
        "benchmark": "cache",
        "rows": args.rows,
        "read_best_s": min(reads),
        "read_median_s": float(np.median(reads)),
        "filtered_read_s": filtered_s,
        "filtered_rows": len(failed),
        "write_batches_s": write_s,
        "compact_s": compact_s,
        "size_mb": size_mb,
        "target_s": 1.0,
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "command": "python benchmarks/cache.py"
        + ("" if args.rows == 1_000_000 else f" --rows {args.rows}"),
    }
    print(f"{'what':34} {'seconds':>8}")
    print(
        f"{'read_cache, ' + format(args.rows, ',') + ' rows (best of 5)':34} {min(reads):>8.3f}   target < 1 s"
    )
    print(f"{'read_cache, median of 5':34} {np.median(reads):>8.3f}")
    print(f"{'read since+status (' + format(len(failed), ',') + ' rows)':34} {filtered_s:>8.3f}")
    print(f"{'write in 5,000-row batches':34} {write_s:>8.3f}")
    print(f"{'compact':34} {compact_s:>8.3f}")
    print(f"cache size on disk: {size_mb:.1f} MB")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
