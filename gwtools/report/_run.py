"""``run_report``: the analyst notebooks executed headless with papermill, exported as
self-contained HTML pages beside the tables they save, with an ``index.html``."""

from __future__ import annotations

import contextlib
import html
import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from gwtools import ConfigurationError, connect
from gwtools.analysis import Overview, overview, resolve_tz
from gwtools.cache._source import SPARK, named_source
from gwtools.report._html import export_html, sandbox_banner
from gwtools.report._tables import (
    _as_of,
    describe_source,
    load_tables,
    quiet_embedded_notice,
)
from gwtools.sync._result import incompleteness_said

#: The analyst notebooks, in reading order (package data under ``gwtools/notebooks``).
NOTEBOOKS: tuple[str, ...] = (
    "01_overview_and_export.ipynb",
    "02_declines.ipynb",
    "03_refunds.ipynb",
    "04_fpx_banks.ipynb",
    "05_monitoring.ipynb",
    "06_data_quality.ipynb",
)
TITLES: dict[str, str] = {
    "01_overview_and_export.ipynb": "Overview and export",
    "02_declines.ipynb": "Declines",
    "03_refunds.ipynb": "Refunds",
    "04_fpx_banks.ipynb": "FPX banks",
    "05_monitoring.ipynb": "Monitoring",
    "06_data_quality.ipynb": "Data quality",
}


def notebooks_dir() -> Path:
    """Where the shipped notebooks are (inside the installed package, wheel or editable)."""
    return Path(str(resources.files("gwtools") / "notebooks"))


class ReportError(RuntimeError):
    """A notebook of the report failed; the message names it, the cell and the error."""


@dataclass
class Report:
    """What :func:`run_report` wrote, and the headline figures of the data it covered."""

    out_dir: Path
    html: list[Path]
    tables: list[Path]
    overview: Overview
    source: str
    seconds: float
    timings: dict[str, float] = field(default_factory=dict)
    #: The data is sandbox data: every page says so in a banner.
    sandbox_data: bool = False
    #: What the payments span (local days, their zone named) and how the cache's last sync
    #: went: the index page's and ``gwtools report``'s data line.
    coverage: str = ""
    #: Why the sync this report ran was incomplete (None: it ran none, or it was complete):
    #: the pages say so, and ``gwtools report`` exits 3, as ``gwtools sync`` does.
    sync_problems: list[str] | None = None
    #: Each dataset's ``_state.json`` as the data was read (``{}`` for a dataset never synced
    #: there, none for tables from no cache): ``gwtools report`` exits 3 when they say the
    #: data is partial.
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The local days and currency chosen (:meth:`Tables.selection`; empty: every payment):
    #: the overview counts only those, so the data line names them.
    selection: str = ""

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"

    @property
    def data(self) -> str:
        """Where the data came from and what of it was chosen: ``a local cache, 2026-11-01
        to now (UTC), MYR only``."""
        return ", ".join(filter(None, [self.source, self.selection]))


def _quiet_kernel_manager() -> type:
    """A kernel manager whose kernels' stderr goes nowhere: ipykernel's start-up chatter
    ('running over TCP without encryption') would break up the demo's one-screen summary.
    A cell's errors still reach the notebook, and papermill raises on them."""
    import subprocess

    from jupyter_client.manager import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def _async_start_kernel(self, **kw: Any) -> None:
            kw.setdefault("stderr", subprocess.DEVNULL)
            await super()._async_start_kernel(**kw)

        start_kernel = _async_start_kernel

    return QuietKernelManager


def _run_one(
    name: str,
    out_dir: Path,
    parameters: dict[str, Any],
    kernel_name: str | None,
    workdir: Path,
    links: Sequence[tuple[str, str]] = (),
) -> tuple[Path, float]:
    """Execute one notebook into ``workdir`` and export it as ``workdir/<name>.html`` (a
    failed one is kept as ``out_dir/<name>.failed.ipynb``)."""
    import nbformat
    import papermill
    from nbclient.exceptions import DeadKernelError

    start = time.perf_counter()
    executed = workdir / name
    kept = out_dir / name.replace(".ipynb", ".failed.ipynb")
    try:
        papermill.execute_notebook(
            str(notebooks_dir() / name),
            str(executed),
            parameters=parameters,
            kernel_name=kernel_name,
            progress_bar=False,
            log_output=False,
            kernel_manager_class=_quiet_kernel_manager(),
            # No cwd=: papermill would os.chdir the whole process, which races between the
            # worker threads. The notebooks write only to the absolute out_dir they are given.
        )
    except papermill.PapermillExecutionError as exc:
        if executed.exists():
            executed.replace(kept)
        raise ReportError(
            f"notebook {name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}. "
            f"The executed notebook, with the traceback, is at {kept}."
        ) from None
    except DeadKernelError:
        # Killed from outside (the system out of memory, most often): no cell raised.
        if executed.exists():
            executed.replace(kept)
        raise ReportError(
            f"notebook {name} stopped: its kernel died (killed, most often for lack of "
            "memory). Give the report more memory, or fewer payments with --since/--until. "
            f"The notebook as far as it ran is at {kept}."
        ) from None
    target = workdir / name.replace(".ipynb", ".html")
    body = export_html(
        nbformat.read(executed, as_version=4),
        TITLES[name],
        sandbox_data=bool(parameters["sandbox_data"]),
        links=links,
        current=target.name,
    )
    target.write_text(body, encoding="utf-8")
    return target, time.perf_counter() - start


def _write_index(report: Report) -> None:
    """The report's ``index.html``: where the data came from, its overview, links."""
    items = "\n".join(
        f'<li><a href="{html.escape(p.name)}">{html.escape(TITLES[p.name.replace(".html", ".ipynb")])}</a></li>'
        for p in report.html
    )
    stems = sorted({p.stem for p in report.tables})
    tables = "\n".join(
        f"<li>{html.escape(stem)}: "
        + " · ".join(
            f'<a href="tables/{html.escape(p.name)}">{p.suffix[1:]}</a>'
            for p in sorted(report.tables)
            if p.stem == stem
        )
        + "</li>"
        for stem in stems
    )
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gwtools report</title></head>
<body style="font-family: sans-serif; max-width: 50em; margin: 2em auto">
{sandbox_banner() if report.sandbox_data else ""}
<h1>gwtools report</h1>
<p>Data: {html.escape(report.data)}.{f" {html.escape(report.coverage)}." if report.coverage else ""}</p>
<pre>{html.escape(str(report.overview))}</pre>
<h2>Notebooks</h2><ul>{items}</ul>
<h2>Tables (CSV and Parquet)</h2><ul>{tables}</ul>
</body></html>
"""
    _replace_text(report.index, page)


def _replace_text(path: Path, text: str) -> None:
    """Write ``path`` under a temporary name beside it, then rename it into place: a run that
    fails part-way (disk full, killed) leaves the file there before whole, never cut short.
    The name is a staging one (this host and process), which the next run removes if this
    one was killed while writing."""
    tmp = path.with_name(f"{_STAGE}{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}.{path.name}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _publish(stage: Path, out: Path, pages: list[Path], notebooks: Sequence[str]) -> list[Path]:
    """Move a run's staged ``pages`` and tables (``stage/tables``) into ``out``, once every
    notebook has succeeded, and return the tables' new paths. Each file is renamed into place
    (one folder, one file system); a table saved as Parquet only takes an earlier run's CSV
    of it away, as :func:`save_tables` would, and a notebook that ran takes away its earlier
    ``.failed.ipynb``."""
    staged = sorted(p for p in (stage / "tables").iterdir() if p.is_file())
    with_csv = {p.stem for p in staged if p.suffix == ".csv"}
    written = []
    for path in staged:
        if path.suffix == ".parquet" and path.stem not in with_csv:
            (out / "tables" / f"{path.stem}.csv").unlink(missing_ok=True)
        written.append(path.replace(out / "tables" / path.name))
    for i, page in enumerate(pages):
        pages[i] = page.replace(out / page.name)
    for name in notebooks:
        (out / name.replace(".ipynb", ".failed.ipynb")).unlink(missing_ok=True)
    return written


_STAGE = ".gwtools-report-"
#: The host in a staging folder's name: on a folder shared between machines, a process id is
#: only known dead on its own host.
_HOST = socket.gethostname().replace("-", "_") or "host"


def _remove_dead_stages(out: Path) -> None:
    """Remove the staging folders (and a half-written ``index.html``) of runs on this host
    whose process is gone (killed, out of memory: nothing else removes them, and at scale they
    hold gigabytes of tables). A running report's, or another host's, is left alone."""
    for stage in out.glob(f"{_STAGE}{_HOST}-*-*"):
        pid = stage.name[len(_STAGE) + len(_HOST) + 1 :].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            if stage.is_dir():
                shutil.rmtree(stage, ignore_errors=True)
            else:  # a page it was renaming into place (see _replace_text)
                stage.unlink(missing_ok=True)
        except OSError:  # alive, another user's
            continue


def check_out_dir(out_dir: str | os.PathLike[str]) -> None:
    """Raise :class:`~gwtools.ConfigurationError` when :func:`run_report` would refuse
    ``out_dir``, writing nothing: a folder inside a cache's dataset, where the pages and
    tables would sit among the files DuckDB, Spark and the next sync read as cached rows.
    ``run_report`` checks it first; call it before work of your own that comes first::

        gwtools.report.check_out_dir("report/")
    """
    from gwtools.cache._export import _check_outside_cache

    _check_outside_cache(Path(out_dir) / "index.html", "the report")


def run_report(
    out_dir: str | os.PathLike[str],
    *,
    since: str | None = None,
    until: str | None = None,
    tz: str | None = None,
    currency: str | None = None,
    base_url: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    gateway: Any = None,
    source: str | os.PathLike[str] | None = None,
    spark_master: str | None = None,
    spark_path: str | None = None,
    notebooks: Sequence[str] = NOTEBOOKS,
    kernel_name: str | None = None,
    workers: int = 2,
) -> Report:
    """Run ``notebooks`` headless, write HTML, tables and an ``index.html`` into ``out_dir``.

    The data: by default the gateway (``gateway``, a connected :class:`gwtools.Gateway`, else
    ``base_url``/``cache_dir`` or the configured one), synced once; the notebooks then read its
    cache. ``source`` a cache folder or URL reads that cache as it is (nothing is synced);
    ``source="spark"`` has each notebook read ``spark_path`` (else the synced gateway's cache)
    with a Spark session on ``spark_master``. The notebooks see lazy tables and the tables
    written are their small results (and, from the overview notebook, the canonical tables,
    streamed). Notebooks run ``workers`` at a time. Pages and tables land in ``out_dir``
    only when every notebook succeeded: a failing one raises :class:`ReportError` (kept as
    ``<name>.failed.ipynb``) and leaves a report already there as it was. Until then they
    wait in a hidden ``.gwtools-report-*`` folder in ``out_dir``; a run killed outright leaves
    it, and the next run there removes it.
    """
    start = time.perf_counter()
    zone = resolve_tz(tz)
    unknown = [n for n in notebooks if n not in TITLES]
    if unknown:
        raise ConfigurationError(f"unknown notebooks {unknown}: choose from {list(NOTEBOOKS)}")
    out = Path(out_dir).resolve()
    check_out_dir(out)  # before the sync: nothing done for a report it cannot write
    chosen = None if source is None else os.fspath(named_source(source))
    embedded = False
    sync_problems = None
    source_name = None  # a cache folder, URL or Spark path: as load_tables describes it
    if chosen in (None, "gateway") or (chosen == SPARK and spark_path is None):
        if gateway is None:
            with quiet_embedded_notice():
                gateway = connect(base_url=base_url, cache_dir=cache_dir, progress=False)
        settings = gateway.settings
        # said on every page's data line, and by the command's exit status
        with quiet_embedded_notice(), incompleteness_said():
            synced = gateway.sync()
        if not synced.complete:
            sync_problems = synced.problems
        embedded = settings.embedded
        source_name = describe_source(settings.base_url, embedded=embedded)
        if chosen == SPARK:
            spark_path = str(gateway.cache_path)
        else:
            chosen = str(gateway.cache_path)
    # The index page's overview, computed here once; DuckDB reads the same files Spark would
    # (a local Spark path is read as the cache folder it is, with no Spark options).
    local = chosen if chosen != SPARK else spark_path
    by_duckdb = local is not None and "://" not in str(local)
    folder_for_spark = chosen == SPARK and by_duckdb
    # (an incomplete sync: the data line says "INCOMPLETE" already)
    with incompleteness_said() if sync_problems is not None else contextlib.nullcontext():
        tables = load_tables(
            local if by_duckdb else chosen,
            spark_master=None if folder_for_spark else spark_master,
            spark_path=None if folder_for_spark else spark_path,
            since=since,
            until=until,
            tz=zone,
            currency=currency,
            as_of=_as_of(embedded),
            source_name=source_name,
            sandbox_data=embedded,
        )
    # Only now, with the source open: a source that cannot be read leaves no folder behind.
    (out / "tables").mkdir(parents=True, exist_ok=True)
    parameters = {
        "base_url": None,
        "source": chosen,
        "spark_master": spark_master,
        "spark_path": spark_path,
        "source_name": tables.source,
        "sandbox_data": tables.sandbox_data,
        "since": since,
        "until": until,
        "tz": zone,
        "currency": currency,
        "as_of": str(tables.as_of),
        "interactive": False,
    }
    timings: dict[str, float] = {}
    pages = []
    # Pages and tables are staged in out (one file system: each is renamed into place) and
    # published only when every notebook succeeded: a failed or interrupted run leaves the
    # last report whole, not some pages of each run under the last run's index.
    _remove_dead_stages(out)
    stage = Path(tempfile.mkdtemp(prefix=f"{_STAGE}{_HOST}-{os.getpid()}-", dir=out))
    try:
        (stage / "tables").mkdir()
        parameters["out_dir"] = str((stage / "tables").resolve())
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            # Every page links to the index and to this run's other pages.
            links = [("index.html", "Report index")] + [
                (n.replace(".ipynb", ".html"), TITLES[n]) for n in notebooks
            ]
            futures = {
                name: pool.submit(_run_one, name, out, parameters, kernel_name, stage, links)
                for name in notebooks
            }
            try:
                for name, future in futures.items():
                    page, seconds = future.result()
                    pages.append(page)
                    timings[name] = seconds
            except BaseException:
                # Ctrl-C or a failed notebook: the notebooks not started yet never start
                # (the running ones end with their kernels, which the same Ctrl-C interrupts).
                pool.shutdown(wait=False, cancel_futures=True)
                raise
        # Only this run's tables: a file an earlier run (or a person) left there is not
        # this report's.
        written = _publish(stage, out, pages, notebooks)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    report = Report(
        out_dir=out,
        html=pages,
        tables=written,
        overview=overview(tables.payments, tables.refunds),
        source=tables.source,
        seconds=time.perf_counter() - start,
        timings=timings,
        sandbox_data=tables.sandbox_data,
        coverage=tables.coverage(zoned=True),
        sync_problems=sync_problems,
        states={name: dict(state) for name, state in (tables.states or {}).items()},
        selection=tables.selection(),
    )
    _write_index(report)
    return report
