"""Analyses at scale: every table-taking analysis on 10M and 100M cached payments.

Builds synthetic caches straight as Parquet (benchmarks/_scale_data.py; reused when already
built with the same parameters), then runs each public analysis of ``gwtools.analysis`` that
takes a table, plus a dashboard refresh, in a fresh child process per run, so each figure is
that run's own time and peak memory:

- lazy: ``gwtools.scan_cache`` + the analysis (the path the targets are for);
- pandas: ``gwtools.read_cache`` + the same analysis (load time included; skipped above
  ``--pandas-max`` payments, where the table does not fit in memory);
- spark: ``spark.read.parquet(dataset folder)`` on Spark ``local[2]`` (session time zone
  UTC), for reference at ``--spark-max`` payments and below; session start not included.

Seconds are wall time from opening the table to the small pandas result. Peak MB is the
child's high-water resident memory (``VmHWM``; the JVM's added for Spark), so it includes
Python with pandas, DuckDB and Narwhals imported (reported as ``base MB``).

Targets on the 2-core, 24 GB reference machine, lazy path: 10M payments, each analysis under
1 s and 1 GB peak; 100M, under 10 s and 4 GB. Sizes up to 10M are judged by the 10M target,
sizes up to 100M by the 100M one. ``rows`` analyses return one row per payment (or per failed
payment, refund, order); no target can hold for them at 100M, they are timed for the record.

    python benchmarks/scale.py                          # 10M and 100M, every analysis
    python benchmarks/scale.py --sizes 1M --only decline_rate,funnel --skip-spark
    python benchmarks/scale.py --sizes 200k --list      # the analyses, nothing run

The first run builds the caches under ``--root`` (10M: a few minutes and ~1.5 GB; 100M: ~10x).
Prints a table and writes benchmarks/results/scale.json (runs of earlier invocations that
this one did not repeat are kept, each with its date).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
RESULTS = HERE / "results" / "scale.json"
DEFAULT_ROOT = HERE / ".scale-data"
TZ = "Asia/Kuala_Lumpur"
#: The targets (lazy path): payments -> (seconds, peak MB). A size is judged by the first
#: target at or above it.
TARGETS = {10_000_000: (1.0, 1024), 100_000_000: (10.0, 4096)}
#: The dashboard refresh: open on one month (local dates, both included), then the method set.
DASH_METHOD, DASH_SINCE, DASH_UNTIL = "card", "2026-10-01", "2026-10-31"
MARK = "SCALE-RESULT "


# --------------------------------------------------------------------------- analyses


@dataclass(frozen=True)
class Analysis:
    name: str
    kind: str  # aggregate | rows | filter | refresh
    tables: str  # "p", "r" or "pr": which tables it reads
    run: Callable[[Any, Any], Any]
    #: Not timed, before ``run``: what it gives ``run`` takes the payments' place.
    setup: Callable[[Any, Any], Any] | None = None


def _count(table: Any) -> int:
    """Rows of a (possibly lazy) table, counted in its engine."""
    import narwhals as nw

    from gwtools.analysis import _engine as E

    return int(E.to_pandas(E.lazy(table).select(nw.len().alias("n")))["n"].iloc[0])


#: The cache's manifest, read by a child before timing (the generator is not imported there).
_MANIFEST: dict[str, Any] = {}


def _end() -> dt.datetime:
    """The end of the generated data (the clock pending_refunds measures ages at)."""
    return dt.datetime.fromisoformat(_MANIFEST["end"])


def open_dashboard(p: Any, r: Any) -> Any:
    """Not timed: the declines dashboard (gwtools.widgets) opened on the table and one month.
    Opening counts the filters' choices over the whole table, then refreshes on the month."""
    from gwtools import widgets as W

    return W.declines_dashboard(p, tz=TZ, since=DASH_SINCE, until=DASH_UNTIL)


def dashboard_refresh(dash: Any, r: Any) -> Any:
    """Timed: one filter change on the open dashboard, the method set to card. Its refresh
    (the widget's own) counts the matching payments, computes the Pareto of decline codes and
    draws it, and fetches the drill-down's first rows, all on the table's engine."""
    dash.method.value = (DASH_METHOD,)
    return {"matched": dash.matched, "table": len(dash.result), "drill_rows": len(dash.drilled)}


def _analyses() -> list[Analysis]:
    from gwtools import analysis as A

    def a(name: str, kind: str, tables: str, run: Callable[[Any, Any], Any]) -> Analysis:
        return Analysis(name, kind, tables, run)

    return [
        a("decline_rate", "aggregate", "p",
          lambda p, r: A.decline_rate(p, by="method_type", freq="week", tz=TZ)),
        a("decline_breakdown", "aggregate", "p",
          lambda p, r: A.decline_breakdown(p, by="card_brand")),
        a("decline_types", "aggregate", "p", lambda p, r: A.decline_types(p)),
        a("fpx_banks", "aggregate", "p", lambda p, r: A.fpx_banks(p)),
        a("fpx_outcome_shares", "aggregate", "p", lambda p, r: A.fpx_outcome_shares(p)),
        a("funnel", "aggregate", "p", lambda p, r: A.funnel(p)),
        a("status_counts", "aggregate", "p", lambda p, r: A.status_counts(p)),
        a("outcome_counts", "aggregate", "p",
          lambda p, r: A.outcome_counts(p, by="method_type", freq="day", tz=TZ)),
        a("success_rate", "aggregate", "p",
          lambda p, r: A.success_rate(p, by="card_brand", freq="month", tz=TZ)),
        a("totals_by_currency", "aggregate", "p",
          lambda p, r: A.totals_by_currency(p, ["method_type"])),
        a("overview", "aggregate", "pr", lambda p, r: A.overview(p, r)),
        a("refund_rate", "aggregate", "pr",
          lambda p, r: A.refund_rate(p, r, freq="month", tz=TZ)),
        a("refunds_by_reason", "aggregate", "r", lambda p, r: A.refunds_by_reason(r)),
        a("time_to_refund", "aggregate", "pr", lambda p, r: A.time_to_refund(p, r)),
        a("partial_vs_full", "aggregate", "pr", lambda p, r: A.partial_vs_full(p, r)),
        a("pending_refunds", "aggregate", "pr",
          lambda p, r: A.pending_refunds(p, r, now=_end(), tz=TZ)),
        a("recovery", "aggregate", "p", lambda p, r: A.recovery(p)),
        a("acceptance", "aggregate", "p",
          lambda p, r: A.acceptance(p, freq="month", tz=TZ)),
        a("monitor", "aggregate", "pr", lambda p, r: A.monitor(p, r, tz=TZ)),
        a("quality", "aggregate", "pr", lambda p, r: A.quality(p, r, tz=TZ)),
        a("between", "filter", "p",
          lambda p, r: _count(A.between(p, DASH_SINCE, DASH_UNTIL, tz=TZ))),
        a("effective_refunds", "filter", "r", lambda p, r: _count(A.effective_refunds(r))),
        a("classify_declines", "rows", "p", lambda p, r: A.classify_declines(p)),
        a("decline_reason", "rows", "p", lambda p, r: A.decline_reason(p)),
        a("fpx_outcome", "rows", "p", lambda p, r: A.fpx_outcome(p)),
        a("amount_band", "rows", "p", lambda p, r: A.amount_band(p)),
        a("orders", "rows", "p", lambda p, r: A.orders(p)),
        a("order_key", "rows", "p", lambda p, r: A.order_key(p)),
        a("refund_details", "rows", "pr", lambda p, r: A.refund_details(p, r)),
        Analysis("dashboard_refresh", "refresh", "p", dashboard_refresh, setup=open_dashboard),
    ]  # fmt: skip


#: Public names of gwtools.analysis not timed, and why (checked against __all__ by --list).
NOT_TIMED = {
    "add_rate": "finishes an aggregated table (adds a Wilson rate); not a table of payments",
    "bucket": "one pandas Series", "local_time": "one pandas Series",
    "decline_type": "one pandas Series", "to_major": "pandas Series",
    "business_days_between": "pandas Series", "format_money": "one value",
    "exponent": "one value", "wilson_interval": "arrays", "resolve_tz": "a setting",
    "to_pandas": "collects a result (used by every run)",
}  # fmt: skip


# --------------------------------------------------------------------------- child


def _status_kb(pid: int | str, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (the JVM of a Spark session, its launcher script)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                # pid (comm) state ppid ...: comm may hold spaces, split after its ")".
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        kids = parents.get(todo.pop(), [])
        out.extend(kids)
        todo.extend(kids)
    return out


def _spark_session() -> Any:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("gwtools-scale")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "4g")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _load(path: str, cache: Path, tables: str, spark: Any) -> tuple[Any, Any]:
    import gwtools

    def one(resource: str) -> Any:
        if path == "lazy":
            return gwtools.scan_cache(cache, resource)  # type: ignore[arg-type]
        if path == "pandas":
            return gwtools.read_cache(cache, resource)  # type: ignore[arg-type]
        folder = cache / _MANIFEST["account"] / _MANIFEST["mode"] / resource
        return spark.read.parquet(str(folder)).drop("created_month")

    p = one("payments") if "p" in tables else None
    r = one("refunds") if "r" in tables else None
    return p, r


def _summary(result: Any) -> Any:
    """What the run gave back, small: rows of a frame, or the value itself."""
    if hasattr(result, "shape"):
        return {"rows": int(result.shape[0])}
    if isinstance(result, int | dict):
        return result
    return type(result).__name__


def child(name: str, path: str, cache: Path) -> dict[str, Any]:
    """One analysis on one path, in this (fresh) process."""
    import duckdb  # noqa: F401 - imported before timing, as in a notebook
    import narwhals  # noqa: F401
    import pandas  # noqa: F401

    import gwtools
    from gwtools import analysis  # noqa: F401

    gwtools.scan_cache  # noqa: B018 - public names load on first use: as a notebook's first cell
    analysis_ = {a.name: a for a in _analyses()}[name]
    _MANIFEST.update(json.loads((cache / "manifest.json").read_text()))
    spark, session_s = None, None
    if path == "spark":
        t = time.perf_counter()
        spark = _spark_session()
        session_s = round(time.perf_counter() - t, 2)
    base = _status_kb("self", "VmRSS:") / 1024
    out: dict[str, Any] = {"analysis": name, "path": path}
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        p, r = _load(path, cache, analysis_.tables, spark)
        t1 = time.perf_counter()
        setup_seconds = setup_cpu = 0.0
        if analysis_.setup is not None:  # not timed (wall or CPU): recorded beside
            c1 = time.process_time()
            p = analysis_.setup(p, r)
            setup_seconds, setup_cpu = time.perf_counter() - t1, time.process_time() - c1
            out.update(setup_seconds=round(setup_seconds, 3))
            t1 = time.perf_counter()
        result = analysis_.run(p, r)
        t2 = time.perf_counter()
        out.update(
            seconds=round(t2 - t0 - setup_seconds, 3),
            load_seconds=round(t1 - t0, 3),
            analysis_seconds=round(t2 - t1, 3),
            # All threads of this process (DuckDB's too): less disturbed by a busy machine.
            cpu_seconds=round(time.process_time() - c0 - setup_cpu, 3),
            result=_summary(result),
        )
    except Exception as exc:  # a failure is a result too: say which and why
        out.update(seconds=round(time.perf_counter() - t0, 3), error=_error(exc))
    peak = _status_kb("self", "VmHWM:") / 1024
    if spark is not None:
        jvm = sum(_status_kb(pid, "VmHWM:") for pid in _descendants(os.getpid())) / 1024
        out.update(spark_session_seconds=session_s, jvm_peak_mb=round(jvm))
        peak += jvm
        spark.stop()
    out.update(peak_mb=round(peak), base_mb=round(base))
    return out


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300] if text else ''}"


# --------------------------------------------------------------------------- driver


def run_child(
    name: str, path: str, cache: Path, *, timeout: float, max_rss_mb: float
) -> dict[str, Any]:
    """Run one child; stop it (and its JVM) if it outlives ``timeout`` or outgrows memory."""
    # Output to files, not pipes: a chatty JVM must not block on a full pipe while we poll.
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", name, path, str(cache)],
            stdout=out_f,
            stderr=err_f,
            text=True,
            start_new_session=True,  # its own process group: the JVM goes with it
        )
        started, seen_mb, stopped = time.perf_counter(), 0.0, None
        while proc.poll() is None:
            tree = [proc.pid, *_descendants(proc.pid)]
            rss = sum(_status_kb(pid, "VmRSS:") for pid in tree) / 1024
            seen_mb = max(seen_mb, rss)
            if rss > max_rss_mb:
                stopped = f"stopped: resident memory above --max-rss-mb {max_rss_mb:,.0f} MB"
            elif time.perf_counter() - started > timeout:
                stopped = f"stopped: ran longer than --timeout {timeout:,.0f} s"
            if stopped:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        proc.wait()
        out_f.seek(0)
        err_f.seek(0)
        stdout, stderr = out_f.read(), err_f.read()
    lines = [ln for ln in stdout.splitlines() if ln.startswith(MARK)]
    if lines and not stopped:
        result: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
        return result
    error = stopped or f"child exited {proc.returncode}: {stderr.strip()[-400:]}"
    return {
        "analysis": name,
        "path": path,
        "error": error,
        "seconds": round(time.perf_counter() - started, 1),
        "peak_mb": round(seen_mb),
    }


def target_for(payments: int) -> tuple[float, int] | None:
    for size, target in sorted(TARGETS.items()):
        if payments <= size:
            return target
    return None


def verdict(run: dict[str, Any], target: tuple[float, int] | None) -> str:
    if "error" in run:
        if run["error"].startswith("stopped: resident"):
            return "FAIL mem (stopped)"
        return "FAIL time (stopped)" if run["error"].startswith("stopped: ran") else "error"
    if target is None:
        return "-"
    slow, big = run["seconds"] > target[0], run["peak_mb"] > target[1]
    if slow and big:
        return "FAIL time+mem"
    return "FAIL time" if slow else "FAIL mem" if big else "pass"


def parse_size(text: str) -> int:
    t = text.strip().lower().replace("_", "").replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(t[-1:], 1)
    number = t[:-1] if scale != 1 else t
    try:
        value = int(float(number) * scale)
    except ValueError:
        raise SystemExit(f"--sizes: cannot read {text!r}; write e.g. 200k, 1M, 10M, 100M") from None
    if value < 1000:
        raise SystemExit(f"--sizes: {text!r} is too small; at least 1k payments")
    return value


def label(n: int) -> str:
    if n % 1_000_000 == 0:
        return f"{n // 1_000_000}M"
    if n % 1000 == 0:
        return f"{n // 1000}k"
    return str(n)


def _cell(run: dict[str, Any] | None) -> str:
    if run is None:
        return f"{'':>8} {'':>7}"
    if "skipped" in run:
        return f"{'skipped':>8} {'':>7}"
    if "error" in run:
        return f"{'error':>8} {run.get('peak_mb', 0):>7,}"
    return f"{run['seconds']:>8.2f} {run['peak_mb']:>7,}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10M,100M", help="payments per cache, e.g. 200k,1M")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where caches are built")
    parser.add_argument("--only", help="analyses to run, comma-separated (see --list)")
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument("--skip-pandas", action="store_true")
    parser.add_argument(
        "--skip-lazy", action="store_true",
        help="run only the reference paths (pandas, Spark); the lazy figures stay as they were",
    )  # fmt: skip
    parser.add_argument(
        "--pandas-max", type=parse_size, default=10_000_000,
        help="largest size the pandas path runs at (default 10M; 100M does not fit)",
    )  # fmt: skip
    parser.add_argument("--spark-max", type=parse_size, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=1, help="runs per cell; the fastest is kept")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument(
        "--max-rss-mb", type=float, default=12_000,
        help="stop a run whose resident memory (with its JVM) grows above this",
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--list", action="store_true", help="list the analyses and exit")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, path, cache = args.child
        print(MARK + json.dumps(child(name, path, Path(cache))), flush=True)
        return

    from gwtools import analysis as A

    analyses = _analyses()
    if args.list:
        for an in analyses:
            print(
                f"{an.name:<22}{an.kind:<10}{ {'p': 'payments', 'r': 'refunds', 'pr': 'both'}[an.tables] }"
            )
        timed = {an.name for an in analyses} | set(NOT_TIMED)
        callables = {n for n in A.__all__ if callable(getattr(A, n)) and not n[0].isupper()}
        print("not timed:", ", ".join(f"{k} ({v})" for k, v in NOT_TIMED.items()))
        if callables - timed:
            print(
                "public analyses not in this benchmark yet:", ", ".join(sorted(callables - timed))
            )
        return
    if args.only:
        wanted = [w.strip() for w in args.only.split(",") if w.strip()]
        unknown = sorted(set(wanted) - {an.name for an in analyses})
        if unknown:
            raise SystemExit(f"--only: unknown {unknown}; see --list")
        analyses = [an for an in analyses if an.name in wanted]
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]

    import _scale_data

    args.root.mkdir(parents=True, exist_ok=True)
    caches = {n: _scale_data.ensure_cache(args.root, n, args.seed) for n in sizes}
    when = _scale_data.stamp_now()
    load_before = [round(x, 2) for x in os.getloadavg()]
    print(f"load average {load_before}; {os.cpu_count()} CPUs; lazy = scan_cache, "
          f"pandas = read_cache, spark = local[2]; seconds / peak MB per run")  # fmt: skip
    runs: list[dict[str, Any]] = []
    for n in sizes:
        target = target_for(n)
        info = _scale_data.manifest(caches[n])
        goal = f"target {target[0]:g} s, {target[1]:,} MB" if target else "no target"
        print(f"\n{label(n)}: {info['payments']:,} payments, {info['refunds']:,} refunds, "
              f"{info['bytes'] / 2**20:,.0f} MB of Parquet; lazy path {goal}")  # fmt: skip
        print(f"{'analysis':<20}{'kind':<10}{'lazy s':>8} {'MB':>7}  {'verdict':<14}"
              f"{'pandas s':>8} {'MB':>7}  {'spark s':>8} {'MB':>7}")  # fmt: skip
        for an in analyses:
            row: dict[str, dict[str, Any]] = {}
            for path in ("lazy", "pandas", "spark"):
                skip = None
                if path == "lazy" and args.skip_lazy:
                    skip = "--skip-lazy"
                if path == "pandas" and (args.skip_pandas or n > args.pandas_max):
                    skip = "--skip-pandas" if args.skip_pandas else (
                        f"above --pandas-max {label(args.pandas_max)}: does not fit in memory")  # fmt: skip
                if path == "spark" and (args.skip_spark or n > args.spark_max):
                    skip = "--skip-spark" if args.skip_spark else (
                        f"above --spark-max {label(args.spark_max)}: reference at 10M only")  # fmt: skip
                base = {"analysis": an.name, "kind": an.kind, "path": path,
                        "size": label(n), "payments": n, "when": when}  # fmt: skip
                if skip:
                    row[path] = {**base, "skipped": skip}
                    continue
                best: dict[str, Any] | None = None
                for _ in range(max(1, args.repeat)):
                    got = run_child(an.name, path, caches[n], timeout=args.timeout,
                                    max_rss_mb=args.max_rss_mb)  # fmt: skip
                    if (
                        best is None
                        or ("error" in best and "error" not in got)
                        or ("error" not in got and got["seconds"] < best["seconds"])
                    ):
                        best = got
                assert best is not None
                row[path] = {**base, **best}
                if path == "lazy":  # (not when skipped: no verdict, the earlier one stays)
                    row[path]["target"] = list(target) if target else None
                    row[path]["verdict"] = verdict(best, target)
            runs.extend(row.values())
            lazy = row["lazy"]
            print(f"{an.name:<20}{an.kind:<10}{_cell(lazy)}  {lazy.get('verdict', ''):<14}"
                  f"{_cell(row['pandas'])}  {_cell(row['spark'])}", flush=True)  # fmt: skip
            for path, run in row.items():
                if "error" in run:
                    print(f"{'':<30}{path}: {run['error']}")
        skipped = {p: row[p]["skipped"] for p in ("pandas", "spark") if "skipped" in row[p]}
        for path, why in skipped.items():
            print(f"  {path} skipped at {label(n)}: {why}")
    judged = [
        r
        for r in runs
        if r["path"] == "lazy" and r["kind"] in ("aggregate", "filter", "refresh")
        and "skipped" not in r
    ]  # fmt: skip
    passed = sum(r["verdict"] == "pass" for r in judged)
    print(f"\nlazy path, aggregates, filters and refresh: {passed} of {len(judged)} pass "
          f"(rows analyses are not judged: they return one row per payment)")  # fmt: skip
    for r in judged:
        if r["verdict"] != "pass":
            print(f"  {r['size']:>5} {r['analysis']}: {r['verdict']} {r.get('error', '')}")
    _write(runs, sizes, caches, load_before)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("duckdb", "narwhals", "pandas", "pyarrow", "pyspark"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "not installed"
    return out


def _write(
    runs: list[dict[str, Any]], sizes: list[int], caches: dict[int, Path], load: list[float]
) -> None:
    """Merge this invocation's runs into results/scale.json (same cell: the new run wins)."""
    import _scale_data

    old: dict[str, Any] = {}
    if RESULTS.exists():
        try:
            old = json.loads(RESULTS.read_text())
        except json.JSONDecodeError:
            old = {}
    key = lambda r: (r["analysis"], r["size"], r["path"])  # noqa: E731
    # A path skipped this time (--skip-pandas, --skip-spark) keeps its earlier measurement.
    earlier = {key(r): r for r in old.get("runs", []) if "skipped" not in r}
    runs = [earlier.get(key(r), r) if "skipped" in r else r for r in runs]
    fresh = {key(r) for r in runs}
    kept = [r for r in old.get("runs", []) if key(r) not in fresh]
    sizes_info = {**old.get("sizes", {})}
    for n in sizes:
        info = _scale_data.manifest(caches[n])
        sizes_info[label(n)] = {
            k: info[k] for k in ("payments", "refunds", "bytes", "build_seconds", "seed")
        }
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    results = {
        "targets": {label(k): {"seconds": s, "peak_mb": m} for k, (s, m) in TARGETS.items()},
        "machine": {"cpus": os.cpu_count(), "memory_mb": mem_kb // 1024, **_versions()},
        "load_average_before": load,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "dashboard_refresh": {"method": DASH_METHOD, "since": DASH_SINCE, "until": DASH_UNTIL, "tz": TZ},
        "sizes": sizes_info,
        "runs": kept + runs,
    }  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
