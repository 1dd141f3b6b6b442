"""Full-sync throughput: gwtools against a plain sequential pager, both API variants.

The sandbox runs in its own process (``python -m gwtools.sandbox``) with its documented rate
limits (100 requests/s per key) and 50 ms added latency, seeded with a deterministic history.
Each contender runs in a fresh child process (so its peak memory is its own) against the same
server, one after the other, with a pause between them so the rate-limit bucket refills.

The ceiling is 100 requests/s x 100 rows = 10,000 rows/s; the target for gwtools is 90% of it
(9,000 rows/s) with no failed request and no 429.

    python benchmarks/sync.py                          # 100,000 payments, A and B (~5 min)
    python benchmarks/sync.py --payments 10000         # quick look
    python benchmarks/sync.py --memory-run             # + peak memory of a 1,000,000-payment
                                                       #   sync (rate limits off, to finish)
    python benchmarks/sync.py --memory-run --skip-throughput   # only the memory run (~4 min)
    python benchmarks/sync.py --contenders incremental --variants A   # only the incremental
                                                       #   sync after 1% changed, variant A

Prints a table and writes benchmarks/results/sync.json, keeping the runs it replaces under
``previous`` (so the file shows a change's figures before and after). To add a contender, write a
``def run_<name>(base_url, key, workdir) -> dict`` returning the fields of :class:`Row` it
measured and add it to ``CONTENDERS``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from _peers import PEERS  # benchmarks/_peers.py (this script's directory is on sys.path)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "sync.json"
CEILING_ROWS_PER_S = 100 * 100  # 100 requests/s x 100 rows per page
SEED = 7
NOW = "2024-06-30T00:00:00"


@dataclass
class Row:
    variant: str
    contender: str
    payments: int
    rows: int = 0
    seconds: float = 0.0
    requests: int = 0
    rate_limited: int = 0
    failed: int = 0
    peak_mb: float = 0.0
    notes: str = ""
    rows_per_s: float = field(init=False, default=0.0)
    ceiling_share: float = field(init=False, default=0.0)

    def finish(self) -> Row:
        self.rows_per_s = self.rows / self.seconds if self.seconds else 0.0
        self.ceiling_share = self.rows_per_s / CEILING_ROWS_PER_S
        return self


@contextlib.contextmanager
def sandbox(
    variant: str, payments: int, *, latency_ms: float, rate_limits: bool, db: Path | None = None
) -> Iterator[tuple[str, str]]:
    """A sandbox server process; yields (base_url, secret key)."""
    with tempfile.TemporaryDirectory() as tmp:
        key_file = Path(tmp) / "key"
        cmd = [
            sys.executable,
            "-m",
            "gwtools.sandbox",
            "--port",
            "0",
            "--variant",
            variant,
            "--seed-payments",
            str(payments),
            "--seed",
            str(SEED),
            "--now",
            NOW,
            "--latency-ms",
            str(latency_ms),
            "--key-file",
            str(key_file),
        ]
        if not rate_limits:
            cmd.append("--no-rate-limit")
        if db is not None:
            cmd += ["--db", str(db)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            base_url = None
            assert proc.stdout is not None
            for line in proc.stdout:
                m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
                if m:
                    base_url = m.group(1)
                    break
            if base_url is None:
                raise RuntimeError("the sandbox did not start")
            while not key_file.exists() or not key_file.read_text().strip():
                time.sleep(0.05)
            yield base_url, key_file.read_text().strip()
        finally:
            proc.terminate()
            proc.wait(10)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_gwtools(base_url: str, key: str, workdir: str) -> dict[str, Any]:
    """gwtools.connect(...).sync(): concurrent pages, paced under the limit, into Parquet."""
    import gwtools._gateway as gateway

    with gateway.connect(key, base_url, cache_dir=workdir, account="bench", progress=False) as gw:
        started = time.perf_counter()
        result = gw.sync(["payments"], full=True)
        seconds = time.perf_counter() - started
    p = result.resources["payments"]
    return {
        "rows": p.new,
        "seconds": seconds,
        "requests": result.requests,
        "rate_limited": result.rate_limited,
        "failed": 0 if result.complete else 1,
        "notes": f"{p.strategy}; {p.fetched:,} rows received incl. window overlaps; "
        f"{result.retries} retries",
    }


def run_sequential(base_url: str, key: str, workdir: str) -> dict[str, Any]:
    """The baseline: one httpx request after the other, page numbers or cursor, json.loads."""
    import httpx

    rows = requests = rate_limited = failed = 0
    started = time.perf_counter()
    with httpx.Client(
        base_url=f"{base_url}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=30
    ) as http:
        params: dict[str, Any] = {"limit": 100}
        page = 1
        while True:
            requests += 1
            r = http.get("/payments", params=params)
            if r.status_code == 429:
                rate_limited += 1
                time.sleep(float(r.headers.get("Retry-After", "1")))
                continue
            if r.status_code != 200:
                failed += 1
                break
            body = json.loads(r.content)
            rows += len(body["data"])
            if "meta" in body:
                if page >= body["meta"]["totalPages"]:
                    break
                page += 1
                params = {"limit": 100, "page": page}
            else:
                if not body["has_more"]:
                    break
                params = {"limit": 100, "starting_after": body["data"][-1]["id"]}
    return {
        "rows": rows,
        "seconds": time.perf_counter() - started,
        "requests": requests,
        "rate_limited": rate_limited,
        "failed": failed,
        "notes": "plain httpx loop",
    }


CONTENDERS: dict[str, Callable[[str, str, str], dict[str, Any]]] = {
    "gwtools": run_gwtools,
    "sequential": run_sequential,
}
# dlt's rest_api source and gwtools' incremental sync (which changes the data: keep it last).
CONTENDERS.update(PEERS)


def _child(name: str, base_url: str, key: str, queue: Any) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        try:
            out = CONTENDERS[name](base_url, key, workdir)
        except Exception as exc:  # reported in the table, not hidden
            out = {"failed": 1, "notes": f"{type(exc).__name__}: {exc}"}
    out["peak_mb"] = _peak_mb()
    queue.put(out)


def measure(name: str, variant: str, payments: int, base_url: str, key: str) -> Row:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(name, base_url, key, queue))
    proc.start()
    out = queue.get()
    proc.join()
    return Row(variant=variant, contender=name, payments=payments, **out).finish()


def _clone_payments(db: Path, total: int) -> None:
    """Grow the sandbox's seeded payments to ``total`` rows by cloning them with new ids
    and creation times (the k-th clone k seconds older, in the column and in the body alike,
    so that from/to filters still agree with what the gateway sends).

    The sandbox keeps about 30 kB per generated payment in memory, so a generated history of
    1,000,000 payments does not fit this machine; clones in its SQLite file cost nothing.
    """
    import sqlite3

    con = sqlite3.connect(db, timeout=30)
    seeded = con.execute("SELECT count(*) FROM payments").fetchone()[0]
    copies = -(-total // seeded) - 1
    con.execute("BEGIN")
    con.execute(
        """
        WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ?)
        INSERT INTO payments (id, account, livemode, created, status, raw, due_at, rec, body)
        SELECT id || printf('c%05d', k), account, livemode, created - k, status, raw, NULL, rec,
               CAST(replace(replace(replace(CAST(body AS TEXT), id, id || printf('c%05d', k)),
                    '"created":' || created || ',', '"created":' || (created - k) || ','),
                    strftime('"created_at":"%Y-%m-%dT%H:%M:%SZ"', created, 'unixepoch'),
                    strftime('"created_at":"%Y-%m-%dT%H:%M:%SZ"', created - k, 'unixepoch'))
                    AS BLOB)
        FROM payments, n WHERE raw = 0
        """,
        (copies,),
    )
    con.execute("COMMIT")
    con.close()


def memory_run(variant: str, payments: int) -> Row:
    """Peak memory of a gwtools sync of ``payments`` payments (rate limits off)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sandbox.sqlite"
        with sandbox(variant, 2_000, latency_ms=0, rate_limits=False, db=db) as (url, key):
            _clone_payments(db, payments)
            row = measure("gwtools", variant, payments, url, key)
    row.notes = "rate limits OFF, no latency (memory run; cloned history); " + row.notes
    return row


def print_table(rows: list[Row]) -> None:
    head = f"{'variant':7} {'contender':11} {'payments':>9} {'rows/s':>8} {'ceiling':>8} {'seconds':>8} {'requests':>8} {'429s':>5} {'failed':>6} {'peak MB':>8}  notes"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.variant:7} {r.contender:11} {r.payments:>9,} {r.rows_per_s:>8,.0f} {r.ceiling_share:>8.1%} "
            f"{r.seconds:>8.2f} {r.requests:>8,} {r.rate_limited:>5} {r.failed:>6} {r.peak_mb:>8.0f}  {r.notes}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payments", type=int, default=100_000)
    parser.add_argument("--variants", nargs="+", default=["A", "B"], choices=["A", "B"])
    parser.add_argument(
        "--contenders", nargs="+", default=list(CONTENDERS), choices=list(CONTENDERS)
    )
    parser.add_argument("--latency-ms", type=float, default=50)
    parser.add_argument(
        "--memory-run",
        action="store_true",
        help="also sync 1,000,000 payments (rate limits off) and report peak memory",
    )
    parser.add_argument("--memory-payments", type=int, default=1_000_000)
    parser.add_argument("--skip-throughput", action="store_true", help="only the memory run")
    args = parser.parse_args()

    rows: list[Row] = []
    for variant in [] if args.skip_throughput else args.variants:
        with sandbox(variant, args.payments, latency_ms=args.latency_ms, rate_limits=True) as (
            url,
            key,
        ):
            for name in args.contenders:
                time.sleep(1.5)  # let the server's rate-limit bucket refill between contenders
                rows.append(measure(name, variant, args.payments, url, key))
                print(f"{variant} {name}: {rows[-1].rows_per_s:,.0f} rows/s", flush=True)
    memory: list[Row] = []
    if args.memory_run:
        memory.extend(memory_run(v, args.memory_payments) for v in args.variants)
    print()
    print(
        f"Full sync, sandbox with rate limits on and {args.latency_ms:g} ms latency "
        f"(ceiling {CEILING_ROWS_PER_S:,} rows/s):"
    )
    print_table(rows)
    if memory:
        print(
            f"\nPeak memory of a {args.memory_payments:,}-payment sync (rate limits off, no added latency):"
        )
        print_table(memory)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    previous = None
    with contextlib.suppress(OSError, ValueError):
        old = json.loads(RESULTS.read_text())
        previous = {k: old.get(k) for k in ("command", "runs", "memory_runs")}
    RESULTS.write_text(
        json.dumps(
            {
                "benchmark": "sync",
                "command": " ".join(["python", "benchmarks/sync.py", *sys.argv[1:]]),
                "latency_ms": args.latency_ms,
                "ceiling_rows_per_s": CEILING_ROWS_PER_S,
                "machine": {
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                    "platform": platform.platform(),
                },
                "runs": [asdict(r) for r in rows],
                "memory_runs": [asdict(r) for r in memory],
                "previous": previous,
            },
            indent=2,
        )
    )
    print(f"\nwrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
