"""The read an incremental sync makes of a large cache before its first request.

An incremental sync plans its re-reads from the cached rows still open (and the payments
whose refunds changed) and from creation times (to price listing again from an earlier
point). It reads only those rows (``gwtools.sync._run._candidates``); ``--every-row`` also
times the read of every row's id, status and creation time that it replaced, for comparison.
Each read runs in a child process of its own, so its peak memory is its own.

The caches are benchmarks/scale.py's (built straight as Parquet, reused when present).

    python benchmarks/plan.py                          # 10M
    python benchmarks/plan.py --sizes 1M,10M,100M
    python benchmarks/plan.py --sizes 10M --every-row --repeat 3

Prints a table and writes benchmarks/results/plan.json (a run replaces the figures it measured).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

RESULTS = HERE / "results" / "plan.json"
SCALE_DATA = HERE / ".scale-data"
OVERLAP = dt.timedelta(minutes=10)
SIZES = {"1M": 1_000_000, "10M": 10_000_000, "100M": 100_000_000}


def child(how: str, cache: Path) -> dict[str, Any]:
    """One plan read of the payments at ``cache`` (``how``: "candidates" or "every-row")."""
    from gwtools.cache._dataset import Dataset
    from gwtools.sync._plan import columns, default_cutoff, survey
    from gwtools.sync._run import _candidates

    ds = Dataset(cache / "bench" / "test" / "payments", "payments")
    high_water = ds.state()["high_water"]  # where the last sync left off
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    start = time.perf_counter()
    if how == "candidates":
        cached, created = _candidates(ds, default_cutoff(high_water, OVERLAP), set())
    else:
        cached, created = ds.read_table(columns=columns("payments")), None
    read = time.perf_counter() - start
    draft = survey(
        cached,
        "payments",
        high_water=high_water,
        overlap=OVERLAP,
        variant=ds.state().get("api_variant"),
        created=created,
    )
    plan = draft.plan({})
    return {
        "how": how,
        "rows_read": cached.num_rows,
        "open_rows": sum(len(s.rows) for s in draft.statuses),
        "read_seconds": round(read, 3),
        "seconds": round(time.perf_counter() - start, 3),
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "base_mb": base,
        "lists_from": plan.since.isoformat(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10M", help="comma-separated: 1M, 10M, 100M")
    parser.add_argument(
        "--every-row", action="store_true", help="also time the read of every row (before)"
    )
    parser.add_argument(
        "--repeat", type=int, default=2, help="runs of each read; the fastest is kept (default 2)"
    )
    parser.add_argument("--child", nargs=2, metavar=("HOW", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], Path(args.child[1]))))
        return
    from _scale_data import ensure_cache

    runs = []
    for size in args.sizes.split(","):
        cache = ensure_cache(SCALE_DATA, SIZES[size.strip()])
        for how in ["candidates", *(["every-row"] if args.every_row else [])]:
            tries = []
            for _ in range(max(1, args.repeat)):  # the first may read files not yet in memory
                out = subprocess.run(
                    [sys.executable, __file__, "--child", how, str(cache)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                tries.append(json.loads(out.stdout.strip().splitlines()[-1]))
            run = {"size": size.strip(), **min(tries, key=lambda t: t["seconds"])}
            run["repeat"] = len(tries)
            run["when"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            runs.append(run)
            print(
                f"{run['size']:>5} {how:<11} rows read {run['rows_read']:>11,} "
                f"({run['open_rows']:,} open)  {run['seconds']:7.2f} s  "
                f"peak {run['peak_mb']:,} MB (base {run['base_mb']} MB)",
                flush=True,
            )
    # Runs of other sizes and reads stay: a later run replaces only what it measured.
    done = {(r["size"], r["how"]) for r in runs}
    kept = json.loads(RESULTS.read_text())["runs"] if RESULTS.exists() else []
    runs = [r for r in kept if (r["size"], r["how"]) not in done] + runs
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
