"""Sandbox list throughput: requests/s and latency of 100-item list pages, 1,000 vs 100,000 payments.

One uvicorn worker (:class:`gwtools.sandbox.Sandbox`, rate limits off, in a separate process)
per variant and size; the load comes from ``wrk`` (a Lua script spreads the requests over pages or
cursors across the whole history) or, when wrk is missing, from a multi-process Python client.
Target: at least 1,000 requests/s, and the same rate at 100,000 payments as at 1,000.

    python benchmarks/sandbox_throughput.py            # full run, about 4 minutes
    python benchmarks/sandbox_throughput.py --quick    # under 30 s: small sizes, short runs

Prints a table and writes benchmarks/results/sandbox_throughput.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import platform
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "sandbox_throughput.json"
TARGET_RPS = 1_000
PAGE = 100
# wrk reads the key from the environment: it never appears on a command line or in a file.
KEY_ENV = "GW_BENCH_KEY"


@dataclass
class Run:
    variant: str
    stored_payments: int
    requests: int
    seconds: float
    requests_per_s: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    errors: int
    connections: int
    targets: int


# --- the sandbox under test ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def sandbox(variant: str, payments: int, days: int, seed: int) -> Iterator[tuple[str, str, float]]:
    """Serve a seeded sandbox from its own process; yield (base URL, secret key, seed seconds).

    The child is this script in ``--serve`` mode: :class:`gwtools.sandbox.Sandbox`, one uvicorn
    worker, rate limits off. It stops when its stdin closes, so it never outlives the benchmark.
    """
    port = _free_port()
    cmd = [sys.executable, __file__, "--serve", variant, str(port), str(payments), str(days),
           str(seed)]  # fmt: skip
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None and proc.stdin is not None
    try:
        line = proc.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the sandbox did not start: {' '.join(cmd)} (see its output above)")
        base_url, key = line.split()[1:3]
        _wait_ready(base_url, key, time.monotonic() + 30)
        yield base_url, key, time.perf_counter() - started
    finally:
        proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()


def serve(variant: str, port: int, payments: int, days: int, seed: int) -> None:
    """The child process: seed, serve, stop when stdin closes."""
    from gwtools.sandbox import Sandbox

    sb = Sandbox(variant, port=port, rate_limits=False, seed_payments=payments, days=days,  # type: ignore[arg-type]
                 seed=seed)  # fmt: skip
    with sb:
        # The key goes to the parent through a pipe, never to a terminal or a log.
        print("READY", sb.base_url, sb.secret_key, flush=True)
        sys.stdin.read()


def _wait_ready(base_url: str, key: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base_url}/v1/payments?limit=1", headers=_auth(key)).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"sandbox at {base_url} did not answer /v1/payments")


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- request targets: pages or cursors over the whole history ------------------------------


def targets(base_url: str, key: str, variant: str, n: int, rng: random.Random) -> list[str]:
    """List paths spread over the whole history, so deep pages cost what they really cost."""
    with httpx.Client(base_url=base_url, headers=_auth(key), timeout=30) as client:
        if variant == "A":
            first = client.get("/v1/payments", params={"limit": PAGE}).json()
            pages = first["meta"]["totalPages"]
            return [f"/v1/payments?limit={PAGE}&page={rng.randint(1, pages)}" for _ in range(n)]
        # Variant B: walk the cursor chain once, then start anywhere along it.
        ids: list[str] = []
        params: dict[str, str | int] = {"limit": PAGE}
        while True:
            body = client.get("/v1/payments", params=params).json()
            ids.extend(p["id"] for p in body["data"])
            if not body["has_more"]:
                break
            params["starting_after"] = ids[-1]
        usable = ids[: max(1, len(ids) - PAGE)]  # cursors that still leave a full page
        return [f"/v1/payments?limit={PAGE}&starting_after={rng.choice(usable)}" for _ in range(n)]


def _check_pages(base_url: str, key: str, paths: list[str]) -> None:
    with httpx.Client(base_url=base_url, headers=_auth(key), timeout=30) as client:
        for path in paths[:5]:
            r = client.get(path)
            r.raise_for_status()
            got = len(r.json()["data"])
            if got != PAGE:
                raise RuntimeError(f"{path} returned {got} items, expected {PAGE}")


# --- load generators ------------------------------------------------------------------------

_WRK_LUA = r"""
local paths = {%(paths)s}
local i = 0
wrk.headers["Authorization"] = "Bearer " .. os.getenv("%(env)s")
function setup(thread) thread:set("offset", math.random(#paths)) end
function request()
  i = i + 1
  return wrk.format("GET", paths[(i + (offset or 0)) %% #paths + 1])
end
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "\nGWBENCH {\"requests\":%%d,\"us\":%%d,\"p50\":%%d,\"p90\":%%d,\"p99\":%%d,\"errors\":%%d}\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90),
    latency:percentile(99), e.connect + e.read + e.write + e.status + e.timeout))
end
"""


def _wrk_version() -> str:
    # `wrk --version` prints its banner and exits 1.
    return subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout


def run_wrk(
    base_url: str, key: str, paths: list[str], seconds: float, conns: int
) -> dict[str, float]:
    lua = _WRK_LUA % {"paths": ",".join(json.dumps(p) for p in paths), "env": KEY_ENV}
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(lua)
    try:
        wrk = ["wrk", "-t1", f"-c{conns}", f"-d{seconds:g}s", "--timeout", "10s", "-s", f.name]
        env = {**os.environ, KEY_ENV: key}
        proc = subprocess.run([*wrk, base_url], capture_output=True, text=True, env=env, check=True)
    finally:
        os.unlink(f.name)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("GWBENCH "))
    raw = json.loads(line.removeprefix("GWBENCH "))
    return {
        "requests": raw["requests"],
        "seconds": raw["us"] / 1e6,
        "p50_ms": raw["p50"] / 1e3,
        "p90_ms": raw["p90"] / 1e3,
        "p99_ms": raw["p99"] / 1e3,
        "errors": raw["errors"],
    }


def _python_worker(args: tuple[str, str, list[str], float, int]) -> tuple[list[float], int]:
    base_url, key, paths, seconds, seed = args
    rng = random.Random(seed)
    latencies: list[float] = []
    errors = 0
    with httpx.Client(base_url=base_url, headers=_auth(key), timeout=10) as client:
        end = time.perf_counter() + seconds
        while (start := time.perf_counter()) < end:
            try:
                ok = client.get(rng.choice(paths)).status_code == 200
            except httpx.TransportError:
                ok = False
            latencies.append(time.perf_counter() - start)
            errors += not ok
    return latencies, errors


def run_python(
    base_url: str, key: str, paths: list[str], seconds: float, conns: int
) -> dict[str, float]:
    """Fallback load: ``conns`` processes, one keep-alive connection each."""
    work = [(base_url, key, paths, seconds, i) for i in range(conns)]
    started = time.perf_counter()
    with mp.get_context("spawn").Pool(conns) as pool:
        parts = pool.map(_python_worker, work)
    elapsed = time.perf_counter() - started
    lat = sorted(x for part, _ in parts for x in part)
    errors = sum(e for _, e in parts)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3 if lat else float("nan")

    return {
        "requests": len(lat),
        "seconds": min(elapsed, seconds + 1),
        "p50_ms": pct(0.50),
        "p90_ms": pct(0.90),
        "p99_ms": pct(0.99),
        "errors": errors,
    }


# --- main -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--serve"]:
        variant, *numbers = argv[1:]
        port, payments, days, seed = map(int, numbers)
        serve(variant, port, payments, days, seed)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and short runs (< 30 s)")
    ap.add_argument("--variants", default="A,B", help="comma-separated, default A,B")
    ap.add_argument("--sizes", help="stored payments, comma-separated (default 1000,100000)")
    ap.add_argument("--seconds", type=float, help="load duration per run (default 10, quick 3)")
    ap.add_argument("--connections", type=int, default=16, help="concurrent connections")
    ap.add_argument("--client", choices=["auto", "wrk", "python"], default="auto")
    ap.add_argument("--out", type=Path, default=RESULTS, help="JSON results file")
    args = ap.parse_args(argv)

    sizes = [
        int(s) for s in (args.sizes or ("1000,5000" if args.quick else "1000,100000")).split(",")
    ]
    seconds = args.seconds or (3.0 if args.quick else 10.0)
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"
    connections = args.connections if client == "wrk" else min(args.connections, 4)
    load = run_wrk if client == "wrk" else run_python
    rng = random.Random(42)

    runs: list[Run] = []
    seeding: dict[str, float] = {}
    for variant in args.variants.split(","):
        for n in sizes:
            days = max(30, min(365, n // 300))
            with sandbox(variant, n, days, seed=1) as (base_url, key, seed_s):
                seeding[f"{variant}/{n}"] = round(seed_s, 2)
                paths = targets(base_url, key, variant, 500, rng)
                _check_pages(base_url, key, paths)
                load(base_url, key, paths, min(1.0, seconds), connections)  # warm-up
                m = load(base_url, key, paths, seconds, connections)
            runs.append(
                Run(
                    variant=variant,
                    stored_payments=n,
                    requests=int(m["requests"]),
                    seconds=round(m["seconds"], 2),
                    requests_per_s=round(m["requests"] / m["seconds"], 1),
                    p50_ms=round(m["p50_ms"], 2),
                    p90_ms=round(m["p90_ms"], 2),
                    p99_ms=round(m["p99_ms"], 2),
                    errors=int(m["errors"]),
                    connections=connections,
                    targets=len(paths),
                )
            )
            r = runs[-1]
            print(f"  {variant} {n:>7,} payments: {r.requests_per_s:8.0f} req/s", file=sys.stderr)

    client_desc = (
        " ".join(_wrk_version().split()[:2])
        if client == "wrk"
        else f"python multi-process httpx client ({connections} processes)"
    )
    print(f"\nSandbox list throughput: one uvicorn worker, rate limits off, {PAGE}-item pages")
    print(f"load generator: {client_desc}; {connections} connections, {seconds:g} s per run\n")
    print(
        f"{'variant':<8}{'stored':>10}{'req/s':>10}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'errors':>8}"
    )
    for r in runs:
        print(
            f"{r.variant:<8}{r.stored_payments:>10,}{r.requests_per_s:>10,.0f}"
            f"{r.p50_ms:>9.2f}{r.p90_ms:>9.2f}{r.p99_ms:>9.2f}{r.errors:>8}"
        )
    verdicts = []
    for variant in args.variants.split(","):
        rates = {r.stored_payments: r.requests_per_s for r in runs if r.variant == variant}
        small, large = rates[min(rates)], rates[max(rates)]
        verdicts.append(
            {
                "variant": variant,
                "min_requests_per_s": min(rates.values()),
                "meets_target": min(rates.values()) >= TARGET_RPS,
                "large_vs_small": round(large / small, 3),
            }
        )
        print(
            f"variant {variant}: min {min(rates.values()):,.0f} req/s "
            f"({'meets' if verdicts[-1]['meets_target'] else 'MISSES'} the {TARGET_RPS:,} target); "
            f"{max(rates):,} vs {min(rates):,} payments: {large / small:.2f}x"
        )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "sandbox_throughput",
                "command": " ".join(
                    ["python", "benchmarks/sandbox_throughput.py", *(argv or sys.argv[1:])]
                ),
                "quick": args.quick,
                "load_generator": client_desc,
                "connections": connections,
                "seconds_per_run": seconds,
                "page_size": PAGE,
                "target_requests_per_s": TARGET_RPS,
                "machine": {
                    "cpus": os.cpu_count(),
                    "python": platform.python_version(),
                    "platform": platform.platform(),
                },
                "seeding_seconds": seeding,
                "runs": [asdict(r) for r in runs],
                "verdicts": verdicts,
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            },
            indent=2,
        )
        + "\n"
    )
    print(f"\nwrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
