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
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
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
    #: the worker's CPU time per request: unlike req/s, other load on the machine barely moves it
    server_cpu_us_per_request: float
    #: 1e6 / server_cpu_us_per_request: what one dedicated core would serve
    cpu_bound_requests_per_s: float


# --- the sandbox under test ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class SandboxProcess:
    """A seeded sandbox served from its own process.

    The child is this script in ``--serve`` mode: :class:`gwtools.sandbox.Sandbox`, one uvicorn
    worker, rate limits off. It stops when its stdin closes, so it never outlives the benchmark.
    Start several, then wait for each: they seed in parallel.
    """

    def __init__(self, variant: str, payments: int, days: int, seed: int) -> None:
        self.variant, self.payments = variant, payments
        self.cmd = [sys.executable, __file__, "--serve", variant, str(_free_port()),
                    str(payments), str(days), str(seed)]  # fmt: skip
        self.proc = subprocess.Popen(
            self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        self.pid = self.proc.pid
        self.base_url = self.key = ""
        self.start_seconds = 0.0

    def wait_ready(self) -> SandboxProcess:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("READY "):
            raise RuntimeError(f"the sandbox did not start: {' '.join(self.cmd)} (see above)")
        self.base_url, self.key, seconds = line.split()[1:4]
        _wait_ready(self.base_url, self.key, time.monotonic() + 30)
        self.start_seconds = float(seconds)
        return self

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def serve(variant: str, port: int, payments: int, days: int, seed: int) -> None:
    """The child process: seed, serve, stop when stdin closes."""
    started = time.perf_counter()
    from gwtools.sandbox import Sandbox

    sb = Sandbox(variant, port=port, rate_limits=False, seed_payments=payments, days=days,  # type: ignore[arg-type]
                 seed=seed)  # fmt: skip
    with sb:
        # The key goes to the parent through a pipe, never to a terminal or a log.
        ready = f"{time.perf_counter() - started:.2f}"
        print("READY", sb.base_url, sb.secret_key, ready, flush=True)
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
        wrk = [
            "wrk",
            "-t1",
            f"-c{conns}",
            f"-d{max(1, round(seconds))}s",
            "--timeout",
            "10s",
            "-s",
            f.name,
        ]
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
    with mp.get_context("spawn").Pool(conns) as pool:
        parts = pool.map(_python_worker, work)
    lat = sorted(x for part, _ in parts for x in part)
    errors = sum(e for _, e in parts)

    def pct(q: float) -> float:
        return lat[min(len(lat) - 1, int(q * len(lat)))] * 1e3 if lat else float("nan")

    return {
        "requests": len(lat),
        # Each worker loads for `seconds` from its own start; process spawn time is not load.
        "seconds": seconds,
        "p50_ms": pct(0.50),
        "p90_ms": pct(0.90),
        "p99_ms": pct(0.99),
        "errors": errors,
    }


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(
    sp: SandboxProcess,
    paths: list[str],
    seconds: float,
    connections: int,
    load: Callable[[str, str, list[str], float, int], dict[str, float]],
    profile: bool,
    name: str,
) -> Run:
    """One timed run against one server: throughput, latency and the worker's CPU per request."""
    cpu_before = _cpu_seconds(sp.pid)
    with profiled(sp.pid, profile, name, seconds):
        m = load(sp.base_url, sp.key, paths, seconds, connections)
    cpu_us = (_cpu_seconds(sp.pid) - cpu_before) / max(1, m["requests"]) * 1e6
    return Run(
        variant=sp.variant,
        stored_payments=sp.payments,
        requests=int(m["requests"]),
        seconds=round(m["seconds"], 2),
        requests_per_s=round(m["requests"] / m["seconds"], 1),
        p50_ms=round(m["p50_ms"], 2),
        p90_ms=round(m["p90_ms"], 2),
        p99_ms=round(m["p99_ms"], 2),
        errors=int(m["errors"]),
        connections=connections,
        targets=len(paths),
        server_cpu_us_per_request=round(cpu_us, 1),
        cpu_bound_requests_per_s=round(1e6 / cpu_us, 1),
    )


# --- profile of the server ------------------------------------------------------------------


@contextlib.contextmanager
def profiled(pid: int, enabled: bool, name: str, seconds: float) -> Iterator[None]:
    """Sample the server process with py-spy while the block runs; print its hot spots."""
    if not enabled:
        yield
        return
    if shutil.which("py-spy") is None:
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    out = RESULTS.parent / f"sandbox_profile_{name}.txt"
    spy = subprocess.Popen(
        ["py-spy", "record", "--pid", str(pid), "--duration", str(max(1, int(seconds))),
         "--rate", "200", "--format", "raw", "--output", str(out), "--nonblocking"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield
    finally:
        spy.wait(seconds + 30)
    print(f"\nwhere the server's time goes ({name}; py-spy samples in {out.name}):")
    for label, share in hot_spots(out):
        print(f"  {share:6.1%}  {label}")


def hot_spots(collapsed: Path) -> list[tuple[str, float]]:
    """Self time per component and per function, from py-spy's collapsed stacks.

    Self time (the innermost frame of each sample) adds up to 100%, so it says where the
    worker's CPU goes: SQLite calls show up under the store function that runs them, socket
    writes under uvicorn's ``send``.
    """
    by_component: dict[str, int] = {}
    by_function: dict[str, int] = {}
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit() or not stack:
            continue
        count = int(n)
        total += count
        leaf = stack.split(";")[-1]
        m = re.match(r"(.*) \((.*?)(?::\d+)?\)$", leaf)
        func, where = (m.group(1), m.group(2)) if m else (leaf, "?")
        where = re.sub(r"^.*?(site-packages|lib/python3\.\d+)/", "", where)
        parts = where.removesuffix(".py").split("/")
        component = ".".join(parts[:3]) if parts[0] == "gwtools" else parts[0]
        by_component[component] = by_component.get(component, 0) + count
        label = f"{func} ({where})"
        by_function[label] = by_function.get(label, 0) + count
    if not total:
        return []
    top = sorted(by_component.items(), key=lambda kv: -kv[1])[:8]
    funcs = sorted(by_function.items(), key=lambda kv: -kv[1])[:10]
    return [(f"[{c}]", n / total) for c, n in top] + [(f, n / total) for f, n in funcs]


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
    ap.add_argument("--repeat", type=int, help="rounds per server, best kept (default 2, quick 1)")
    ap.add_argument("--client", choices=["auto", "wrk", "python"], default="auto")
    ap.add_argument("--out", type=Path, default=RESULTS, help="JSON results file")
    ap.add_argument(
        "--profile",
        action="store_true",
        help="sample the server with py-spy during each run; print where its time goes",
    )
    args = ap.parse_args(argv)

    sizes = [
        int(s) for s in (args.sizes or ("1000,3000" if args.quick else "1000,100000")).split(",")
    ]
    seconds = args.seconds or (2.0 if args.quick else 10.0)
    repeat = args.repeat or (1 if args.quick else 2)
    client = args.client
    if client == "auto":
        client = "wrk" if shutil.which("wrk") else "python"
    connections = args.connections if client == "wrk" else min(args.connections, 4)
    load = run_wrk if client == "wrk" else run_python
    rng = random.Random(42)

    seeding: dict[str, float] = {}
    plan = [(v, n) for v in args.variants.split(",") for n in sizes]
    with contextlib.ExitStack() as stack:
        servers = []
        for variant, n in plan:
            sp = SandboxProcess(variant, n, days=max(30, min(365, n // 300)), seed=1)
            stack.callback(sp.close)
            servers.append(sp)
        for sp in servers:
            sp.wait_ready()
            seeding[f"{sp.variant}/{sp.payments}"] = round(sp.start_seconds, 2)
        prepared = []
        for sp in servers:
            paths = targets(sp.base_url, sp.key, sp.variant, 500, rng)
            _check_pages(sp.base_url, sp.key, paths)
            if not args.quick:
                load(sp.base_url, sp.key, paths, 1.0, connections)  # warm-up
            prepared.append((sp, paths))
        # Rounds interleave the servers, so a burst of other load on the machine hits all of
        # them alike; each keeps its best round.
        measured: dict[tuple[str, int], list[Run]] = {}
        for round_no in range(repeat):
            for sp, paths in prepared:
                name = f"{sp.variant}_{sp.payments}" + (f"_r{round_no + 1}" if repeat > 1 else "")
                run = measure(sp, paths, seconds, connections, load, args.profile, name)
                measured.setdefault((sp.variant, sp.payments), []).append(run)
                print(
                    f"  round {round_no + 1}: {sp.variant} {sp.payments:>7,} payments: "
                    f"{run.requests_per_s:8.0f} req/s, {run.server_cpu_us_per_request:.0f} us CPU/req",
                    file=sys.stderr,
                )
        runs = [max(rs, key=lambda r: r.requests_per_s) for rs in measured.values()]

    client_desc = (
        " ".join(_wrk_version().split()[:2])
        if client == "wrk"
        else f"python multi-process httpx client ({connections} processes)"
    )
    print(f"\nSandbox list throughput: one uvicorn worker, rate limits off, {PAGE}-item pages")
    print(
        f"load generator: {client_desc}; {connections} connections, {seconds:g} s per run, "
        f"best of {repeat} round(s)\n"
    )
    print(
        f"{'variant':<8}{'stored':>10}{'req/s':>9}{'p50 ms':>8}{'p90 ms':>8}{'p99 ms':>8}"
        f"{'errors':>7}{'cpu us/req':>11}{'req/s per core':>15}"
    )
    for r in runs:
        print(
            f"{r.variant:<8}{r.stored_payments:>10,}{r.requests_per_s:>9,.0f}"
            f"{r.p50_ms:>8.2f}{r.p90_ms:>8.2f}{r.p99_ms:>8.2f}{r.errors:>7}"
            f"{r.server_cpu_us_per_request:>11,.0f}{r.cpu_bound_requests_per_s:>15,.0f}"
        )
    print(
        "(req/s per core = 1e6 / the worker's CPU us per request: what it would serve on a core "
        "of its own;\n other load on the machine moves it much less than the observed req/s)"
    )
    verdicts = []
    for variant in args.variants.split(","):
        mine = sorted((r for r in runs if r.variant == variant), key=lambda r: r.stored_payments)
        small, large = mine[0], mine[-1]
        verdict = {
            "variant": variant,
            "min_requests_per_s": min(r.requests_per_s for r in mine),
            "min_requests_per_s_per_core": min(r.cpu_bound_requests_per_s for r in mine),
            "meets_target": min(r.requests_per_s for r in mine) >= TARGET_RPS,
            "large_vs_small_requests_per_s": round(large.requests_per_s / small.requests_per_s, 3),
            "large_vs_small_cpu_per_request": round(
                large.server_cpu_us_per_request / small.server_cpu_us_per_request, 3
            ),
        }
        verdicts.append(verdict)
        print(
            f"variant {variant}: min {verdict['min_requests_per_s']:,.0f} req/s observed "
            f"({'meets' if verdict['meets_target'] else 'MISSES'} the {TARGET_RPS:,} target), "
            f"{verdict['min_requests_per_s_per_core']:,.0f} per core; "
            f"CPU per request at {large.stored_payments:,} vs {small.stored_payments:,} payments: "
            f"{verdict['large_vs_small_cpu_per_request']:.2f}x"
        )

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "sandbox_throughput",
                "command": " ".join(["python", "benchmarks/sandbox_throughput.py", *argv]),
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
                "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
                "start_up_seconds_including_seeding": seeding,
                "repeat": repeat,
                "runs": [asdict(r) for r in runs],
                "all_rounds": [asdict(r) for rs in measured.values() for r in rs],
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
