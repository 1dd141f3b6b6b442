"""Normalisation speed: raw list response bodies -> the canonical payments DataFrame.

Bodies of 100 payments each are made from the sandbox pages recorded in data/recorded/
(both variants' exact shapes, with fresh ids, amounts and times), then each contender
runs in a fresh child process on the same bytes, so its peak memory is its own:

- baseline: ``json.loads`` + ``pandas.json_normalize`` + ``pandas.to_datetime``, the
  hand-written way (measured on ``--baseline-rows``, as it is slow);
- gwtools: ``normalize_bodies(...)``, in one process as the sync runs it.

Rates are rows per second of wall time, and per CPU second (all processes of a
contender together), which a machine busy with other work disturbs less. The targets:
at least 3x the baseline's rows per CPU second, and under 10% of one core for a sync at
its ceiling (100 requests/s x 100 rows = 10,000 rows/s). Memory is the
child's peak RSS, and what the contender added to it over the loaded bodies.

    python benchmarks/normalize.py                  # 1,000,000 rows per variant, ~1 minute
    python benchmarks/normalize.py --rows 200000    # quicker look
    python benchmarks/normalize.py --repeat 3       # best of 3 (a busy machine varies)

Prints a table and writes benchmarks/results/normalize.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "data" / "recorded" / "sandbox"
RESULTS = ROOT / "benchmarks" / "results" / "normalize.json"
TARGET_SPEEDUP = 3  # per CPU second, over the json_normalize baseline
#: The most rows a sync can fetch per second: 100 requests/s (the rate limit) x 100 rows a page.
SYNC_CEILING_ROWS_PER_S = 10_000
TARGET_CORE_SHARE = 0.10  # of one core, spent normalising by a sync at that ceiling
PAGE = 100
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


# --------------------------------------------------------------------------- bodies


def make_bodies(variant: str, rows: int, seed: int = 0) -> list[bytes]:
    """List bodies of ``rows`` payments shaped exactly like the recorded sandbox pages."""
    import orjson

    templates = [
        rec
        for name in ("payments_page1.json", "payments_page2.json")
        for rec in json.loads((RECORDED / variant / name).read_bytes())["data"]
    ]
    rng = random.Random(seed)
    start = 1_767_225_600  # 2026-01-01
    bodies = []
    for first in range(0, rows, PAGE):
        records = []
        for k in range(first, min(first + PAGE, rows)):
            rec = dict(templates[k % len(templates)])
            old = rec["id"]
            new = "pay_" + "".join(rng.choices(ALPHABET, k=24))
            created = start - k * 7
            rec["id"] = new
            rec["amount"] = rng.randrange(100, 500_000)
            for key in ("redirect_url", "receipt_url", "client_secret"):
                if rec.get(key):
                    rec[key] = rec[key].replace(old, new)
            if variant == "A":
                rec["created_at"] = _iso(created)
                rec["updated_at"] = _iso(created + 30)
                if rec.get("expires_at"):
                    rec["expires_at"] = _iso(created + 3600)
                if rec.get("captured_at"):
                    rec["captured_at"] = _iso(created + 5)
            else:
                rec["created"] = created
                if rec.get("captured_at"):
                    rec["captured_at"] = created + 5
            records.append(rec)
        if variant == "A":
            total_pages = -(-rows // PAGE)
            meta = {"total": rows, "page": first // PAGE + 1, "limit": PAGE,
                    "totalPages": total_pages}  # fmt: skip
            bodies.append(orjson.dumps({"data": records, "meta": meta}))
        else:
            bodies.append(
                orjson.dumps({"object": "list", "data": records,
                              "has_more": first + PAGE < rows, "url": "/v1/payments"})
            )  # fmt: skip
    return bodies


def _iso(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def write_bodies(bodies: list[bytes], path: Path) -> None:
    with path.open("wb") as f:
        for body in bodies:
            f.write(struct.pack("<I", len(body)))
            f.write(body)


def read_bodies(path: Path, count: int) -> list[bytes]:
    """The first ``count`` bodies, read one by one (no second copy of the whole file)."""
    bodies = []
    with path.open("rb") as f:
        while len(bodies) < count and (head := f.read(4)):
            (size,) = struct.unpack("<I", head)
            bodies.append(f.read(size))
    return bodies


# --------------------------------------------------------------------------- contenders


def baseline(bodies: list[bytes], variant: str) -> Any:
    import pandas as pd

    records = [rec for body in bodies for rec in json.loads(body)["data"]]
    frame = pd.json_normalize(records)
    if variant == "A":
        for column in ("created_at", "updated_at", "expires_at", "captured_at"):
            frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    else:
        for column in ("created", "captured_at"):
            frame[column] = pd.to_datetime(frame[column], unit="s", utc=True)
    return frame


def gwtools_normalize(bodies: list[bytes]) -> Any:
    from gwtools.normalize._normalize import normalize_bodies

    batch = normalize_bodies("payments", bodies, livemode=False)
    assert not batch.rejects, batch.rejects[:3]
    return batch.frame


def _rss_mb(who: int = resource.RUSAGE_SELF) -> float:
    """Peak RSS of this process (or of its children) in MB.

    ``ru_maxrss`` of a process survives ``execve``, so a child started by this driver
    would report the driver's own peak (it made all the bodies); the kernel's VmHWM
    is this process's own high-water mark.
    """
    if who == resource.RUSAGE_SELF:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def child(contender: str, variant: str, path: Path, rows: int) -> dict[str, Any]:
    """Run one contender on the bodies in ``path`` (first ``rows`` rows); report figures."""
    import pandas  # noqa: F401 - imported before timing, as a notebook would have it

    import gwtools.normalize._normalize  # noqa: F401

    bodies = read_bodies(path, -(-rows // PAGE))
    before = _current_rss_mb()
    wall, cpu = time.perf_counter(), time.process_time()
    children_cpu = _children_cpu()
    frame = baseline(bodies, variant) if contender == "baseline" else gwtools_normalize(bodies)
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu + _children_cpu() - children_cpu
    assert len(frame) == rows, (len(frame), rows)
    peak = max(_rss_mb(), _rss_mb(resource.RUSAGE_CHILDREN))
    columns = len(frame.columns)
    del frame
    return {
        "contender": contender,
        "variant": variant,
        "rows": rows,
        "seconds": round(wall, 3),
        "cpu_seconds": round(cpu, 3),
        "rows_per_s": round(rows / wall),
        "rows_per_cpu_s": round(rows / cpu),
        "rss_before_mb": round(before),
        "peak_rss_mb": round(peak),
        "peak_over_bodies_mb": round(peak - before),
        "columns": columns,
    }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------- driver


def run_child(contender: str, variant: str, path: Path, rows: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", contender, variant, str(path), str(rows)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="payments per variant")
    parser.add_argument(
        "--baseline-rows", type=int, default=200_000, help="rows the slow baseline gets"
    )
    parser.add_argument("--variants", default="AB")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each contender; the best is kept"
    )
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        contender, variant, path, rows = args.child
        print(json.dumps(child(contender, variant, Path(path), int(rows))))
        return

    results: dict[str, Any] = {
        "rows": args.rows,
        "repeat": args.repeat,
        "baseline_rows": min(args.baseline_rows, args.rows),
        "target_speedup_per_cpu": TARGET_SPEEDUP,
        "sync_ceiling_rows_per_s": SYNC_CEILING_ROWS_PER_S,
        "target_core_share": TARGET_CORE_SHARE,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_before": [round(x, 2) for x in os.getloadavg()],
        "variants": {},
    }
    print(f"normalising {args.rows:,} payments per variant (baseline: "
          f"{results['baseline_rows']:,}); load average {results['load_average_before']}")  # fmt: skip
    header = (f"{'variant':<8}{'contender':<20}{'rows':>10}{'seconds':>9}{'rows/s':>11}"
              f"{'rows/CPU s':>12}{'peak RSS MB':>13}{'of which work':>15}")  # fmt: skip
    print(header)
    with tempfile.TemporaryDirectory(prefix="gwtools-bench-") as tmp:
        for variant in args.variants:
            path = Path(tmp) / f"bodies_{variant}.bin"
            t0 = time.perf_counter()
            write_bodies(make_bodies(variant, args.rows), path)
            made = time.perf_counter() - t0
            rows = {"baseline": results["baseline_rows"], "gwtools": args.rows}
            runs: dict[str, dict[str, Any]] = {}
            for _ in range(args.repeat):  # interleaved; the best run of each is kept
                for name, count in rows.items():
                    run = run_child(name, variant, path, count)
                    if name not in runs or run["seconds"] < runs[name]["seconds"]:
                        runs[name] = run
            base = runs["baseline"]
            for name, run in runs.items():
                label = {"baseline": "baseline (pandas)", "gwtools": "gwtools"}[name]
                print(f"{variant:<8}{label:<20}{run['rows']:>10,}{run['seconds']:>9.2f}"
                      f"{run['rows_per_s']:>11,}{run['rows_per_cpu_s']:>12,}"
                      f"{run['peak_rss_mb']:>13,}{run['peak_over_bodies_mb']:>15,}")  # fmt: skip
                if name != "baseline":
                    run["speedup"] = round(run["rows_per_s"] / base["rows_per_s"], 1)
                    run["speedup_per_cpu"] = round(
                        run["rows_per_cpu_s"] / base["rows_per_cpu_s"], 1
                    )
            results["variants"][variant] = {"bodies_made_seconds": round(made, 1), **runs}
            for name in ("gwtools",):
                run = runs[name]
                run["core_share_at_ceiling"] = round(
                    SYNC_CEILING_ROWS_PER_S / run["rows_per_cpu_s"], 4
                )
                print(
                    f"{'':<8}{name}: {run['speedup_per_cpu']}x the baseline per CPU second "
                    f"(target {TARGET_SPEEDUP}x; {run['speedup']}x in wall time)"
                )
                print(f"{'':<8}a sync at the ceiling ({SYNC_CEILING_ROWS_PER_S:,} rows/s) spends "
                      f"{run['core_share_at_ceiling']:.1%} of one core normalising "
                      f"(target under {TARGET_CORE_SHARE:.0%})")  # fmt: skip
    results["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
