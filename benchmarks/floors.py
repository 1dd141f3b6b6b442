"""Floors: what DuckDB alone takes for the core of the analyses that miss their scale target.

``benchmarks/scale.py`` times each analysis through gwtools. When one misses its target, is the
library slow or is the work itself too much for the machine? This script answers with
hand-written DuckDB SQL over the same cache files: for each such analysis, the smallest piece
of work any exact implementation has to do (fewer columns, fewer rules and no edge cases than
the analysis handles). If that alone is over the target, no implementation on this engine and
machine meets it by tuning; it needs data the cache does not hold (for example one row per
order kept by the sync).

Each query runs in a fresh child process, on the same caches as scale.py (built by it), with
DuckDB's Parquet footer cache on as in gwtools. Seconds are wall time from connecting to the
result; peak MB the child's ``VmHWM``.

    python benchmarks/floors.py                     # 10M and 100M
    python benchmarks/floors.py --sizes 10M --repeat 3
    python benchmarks/floors.py --orders --sizes 10M   # the what-if of one row per order

``--orders`` builds, beside the cache, the table of one row per order that a sync would have
to keep (as ``orders`` computes it), and times reading ``acceptance``'s per-order half back
from it. At 100M its build's spill filled this machine's 24 GB of free disk: run it at 10M.

Prints a table and writes benchmarks/results/floors.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import scale  # noqa: E402  (the caches, sizes and targets of the scale benchmark)

RESULTS = HERE / "results" / "floors.json"
MARK = "FLOOR-RESULT "

#: {payments} and {refunds} become read_parquet(...) of the cache's dataset folders.
#: The order id is read from ``metadata`` as gwtools reads it (every payment of the generated
#: caches has one, so no customer chains are needed: less work than the analysis does).
FLOORS: dict[str, tuple[str, str]] = {
    "acceptance": (
        "orders keyed by metadata's order_id (one group-by over all payments), counted in "
        "total; no months, no per-attempt rates, no chains",
        """
        SELECT count(*), sum(won), sum(decided) FROM (
            SELECT max((outcome = 'succeeded')::INT) AS won,
                   max((outcome IN ('succeeded', 'failed'))::INT) AS decided
            FROM {payments}
            GROUP BY json_extract_string(metadata, '$.order_id'))
        """,
    ),
    "recovery": (
        "the orders holding a failed payment (a semi join on the order id), their first "
        "outcome and whether one attempt succeeded, counted; no decline reasons, no medians",
        """
        WITH k AS (
            SELECT json_extract_string(metadata, '$.order_id') AS oid, outcome, created_at
            FROM {payments}),
        o AS (
            SELECT arg_min(outcome, created_at) AS first_outcome,
                   max((outcome = 'succeeded')::INT) AS won, count(*) AS attempts
            FROM k
            WHERE oid IN (SELECT oid FROM k WHERE outcome = 'failed')
            GROUP BY oid)
        SELECT count(*), sum(won), sum((attempts > 1)::INT) FROM o
        WHERE first_outcome = 'failed'
        """,
    ),
    "quality": (
        "two of its ten rules: payment ids unique (a group-by over every id) and refunds "
        "within the payment's amount (a full join of the payments and their refunds' sums)",
        """
        SELECT
          (SELECT count(*) FROM (SELECT id FROM {payments} GROUP BY id HAVING count(*) > 1)),
          (SELECT count(*) FROM (
              SELECT p.amount, r.total FROM {payments} AS p
              FULL JOIN (SELECT payment_id, sum(amount) AS total FROM {refunds}
                         WHERE status IN ('succeeded', 'pending') GROUP BY payment_id) AS r
              ON p.id = r.payment_id)
           WHERE total > amount OR amount IS NULL)
        """,
    ),
    "overview": (
        "its three scans, one query: payments per outcome and decline code, the refund join "
        "of the succeeded payments per currency, and FPX payments per bank and outcome",
        """
        SELECT
          (SELECT count(*) FROM (SELECT outcome, decline_code, failure_code, count(*)
                                 FROM {payments} GROUP BY ALL)),
          (SELECT count(*) FROM (
              SELECT p.currency, count(*), sum(p.amount), count(r.total), sum(r.total)
              FROM {payments} AS p
              LEFT JOIN (SELECT payment_id, sum(amount) AS total FROM {refunds}
                         WHERE status <> 'failed' GROUP BY payment_id) AS r
              ON p.id = r.payment_id
              WHERE p.outcome = 'succeeded' GROUP BY p.currency)),
          (SELECT count(*) FROM (SELECT fpx_bank_code, outcome, count(*) FROM {payments}
                                 WHERE method_type = 'fpx' GROUP BY ALL))
        """,
    ),
}


def _dataset(cache: Path, resource: str) -> str:
    info = json.loads((cache / "manifest.json").read_text())
    files = cache / info["account"] / info["mode"] / resource / "**" / "*.parquet"
    return f"read_parquet('{files}', union_by_name = true)"


def child(name: str, cache: Path) -> dict[str, Any]:
    """One floor query, in this (fresh) process."""
    import duckdb

    sql = FLOORS[name][1].format(
        payments=_dataset(cache, "payments"), refunds=_dataset(cache, "refunds")
    )
    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET parquet_metadata_cache = true")
    rows = con.execute(sql).fetchall()
    seconds = time.perf_counter() - t0
    return {
        "analysis": name,
        "seconds": round(seconds, 3),
        "peak_mb": round(scale._status_kb("self", "VmHWM:") / 1024),
        "rows": len(rows),
    }


def orders_child(cache: Path) -> dict[str, Any]:
    """The per-order table's build, then acceptance's per-order half read back from it."""
    import duckdb

    import gwtools
    from gwtools.analysis import _recovery as orders

    target = cache.parent / f".orders-what-if-{cache.name}.parquet"
    try:
        t0 = time.perf_counter()
        payments = gwtools.scan_cache(cache, "payments")
        keyed = orders._keyed(payments, orders.ORDER_KEY, orders.ORDER_WINDOW, orders._NEEDED)
        orders._per_order(keyed).to_native().write_parquet(str(target))
        build = time.perf_counter() - t0
        peak = round(scale._status_kb("self", "VmHWM:") / 1024)
        con = duckdb.connect()
        table = f"read_parquet('{target}')"
        flags = ("count(*), sum((final_outcome = 'succeeded')::INT), "
                 "sum((decided_attempts > 0)::INT)")  # fmt: skip
        day = "(epoch_us(created_at) + 28800000000) // 86400000000"  # Kuala Lumpur, UTC+8
        month = "date_trunc('month', timezone('Asia/Kuala_Lumpur', created_at))"
        seconds = {}
        for name, key in (("by_integer_day", day), ("by_local_month", month)):
            best = float("inf")
            for _ in range(2):
                t1 = time.perf_counter()
                con.execute(f"SELECT {key} AS k, {flags} FROM {table} GROUP BY k").fetchall()
                best = min(best, time.perf_counter() - t1)
            seconds[name] = round(best, 3)
        rows = con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        return {
            "analysis": "orders_table",
            "build_seconds": round(build, 1),
            "build_peak_mb": peak,
            "rows": rows,
            "bytes": target.stat().st_size,
            "read_seconds": seconds,
        }
    finally:
        target.unlink(missing_ok=True)


def run_child(name: str, cache: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", name, str(cache)],
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARK)]
    if proc.returncode or not lines:
        return {"analysis": name, "error": proc.stderr.strip()[-400:] or f"exit {proc.returncode}"}
    result: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    return result


def _lazy_seconds() -> dict[tuple[str, str], float]:
    """The lazy path's figures in results/scale.json, by (analysis, size), for comparison."""
    try:
        runs = json.loads(scale.RESULTS.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        return {}
    return {
        (r["analysis"], r["size"]): r["seconds"]
        for r in runs
        if r.get("path") == "lazy" and "seconds" in r and "error" not in r
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10M,100M", help="payments per cache, e.g. 1M,10M")
    parser.add_argument("--root", type=Path, default=scale.DEFAULT_ROOT, help="scale.py's caches")
    parser.add_argument("--only", help=f"floors to run, comma-separated: {', '.join(FLOORS)}")
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest is kept")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--orders", action="store_true", help="the per-order table's what-if")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, cache = args.child
        got = orders_child(Path(cache)) if name == "orders_table" else child(name, Path(cache))
        print(MARK + json.dumps(got), flush=True)
        return
    if args.orders:
        import _scale_data

        for n in (scale.parse_size(s) for s in args.sizes.split(",") if s.strip()):
            got = run_child("orders_table", _scale_data.ensure_cache(args.root, n, args.seed))
            got.update(size=scale.label(n), payments=n, when=_scale_data.stamp_now())
            print(json.dumps(got, indent=2), flush=True)
            if "error" not in got:
                _write([got])
        return
    names = list(FLOORS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = sorted(set(names) - set(FLOORS))
        if unknown:
            raise SystemExit(f"--only: unknown {unknown}; choose from {', '.join(FLOORS)}")
    import _scale_data

    sizes = [scale.parse_size(s) for s in args.sizes.split(",") if s.strip()]
    lazy = _lazy_seconds()
    print(f"load average {[round(x, 2) for x in os.getloadavg()]}; {os.cpu_count()} CPUs; "
          "hand-written DuckDB SQL, seconds / peak MB (best of --repeat)")  # fmt: skip
    runs: list[dict[str, Any]] = []
    for n in sizes:
        cache = _scale_data.ensure_cache(args.root, n, args.seed)
        target = scale.target_for(n)
        size = scale.label(n)
        goal = f"target {target[0]:g} s" if target else "no target"
        print(f"\n{size} ({goal}); 'gwtools' is the lazy path's time in results/scale.json")
        print(
            f"{'analysis':<14}{'floor s':>8} {'MB':>7}  {'gwtools s':>9}  what the floor computes"
        )
        for name in names:
            best: dict[str, Any] | None = None
            for _ in range(max(1, args.repeat)):
                got = run_child(name, cache)
                if best is None or got.get("seconds", 1e9) < best.get("seconds", 1e9):
                    best = got
            assert best is not None
            best.update(size=size, payments=n, when=_scale_data.stamp_now(),
                        target=list(target) if target else None)  # fmt: skip
            runs.append(best)
            ours = lazy.get((name, size))
            cell = f"{ours:>9.2f}" if ours is not None else f"{'':>9}"
            if "error" in best:
                print(f"{name:<14}{'error':>8} {'':>7}  {cell}  {best['error']}")
                continue
            print(f"{name:<14}{best['seconds']:>8.2f} {best['peak_mb']:>7,}  {cell}  "
                  f"{FLOORS[name][0]}", flush=True)  # fmt: skip
    _write(runs)


def _write(runs: list[dict[str, Any]]) -> None:
    """Merge into results/floors.json: a cell run again replaces its earlier figure."""
    try:
        old = json.loads(RESULTS.read_text())["runs"]
    except (OSError, ValueError, KeyError):
        old = []
    fresh = {(r["analysis"], r["size"]) for r in runs}
    kept = [r for r in old if (r["analysis"], r["size"]) not in fresh]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    machine = {"cpus": os.cpu_count(), "duckdb": __import__("duckdb").__version__}
    RESULTS.write_text(json.dumps({"machine": machine, "runs": kept + runs}, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(scale.ROOT)}")


if __name__ == "__main__":
    main()
