"""Reports: the analyst notebooks run headless, as self-contained HTML and tables.

``run_report`` syncs the configured gateway once (``GW_API_KEY``/``GW_BASE_URL``, or the
embedded sandbox), then executes each notebook with papermill against that cache, without
network (or against a cache folder or URL, or with Spark: ``source=``), and writes
``<notebook>.html`` (code hidden) beside the CSV and Parquet tables the notebooks save under
``tables/``. The notebooks use :func:`load_tables` and
:func:`save_tables` from here, so they hold no logic of their own.

Example::

    from gwtools.report import run_report

    report = run_report("report/", since="2024-06-01", tz="Asia/Kuala_Lumpur")
    print(report.index)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import html
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pandas as pd

from gwtools.analysis._overview import Overview, overview
from gwtools.analysis._time import between, resolve_tz

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


@dataclass
class Tables:
    """What a notebook analyses: canonical payments and refunds, filtered, and where they came from.

    ``payments``/``refunds`` are lazy tables (DuckDB, or Spark DataFrames for a Spark source;
    pandas if given pandas): pass them to :mod:`gwtools.analysis`, which returns small
    DataFrames. ``source`` names the data's origin without key, port or path; ``as_of`` is the
    time ages are measured at (the sandbox clock on the embedded sandbox, so outputs are
    reproducible).
    """

    payments: Any
    refunds: Any
    source: str
    tz: str
    as_of: pd.Timestamp
    since: str | None = None
    until: str | None = None
    currency: str | None = None

    def __repr__(self) -> str:
        period = f"{self.since or 'start'} to {self.until or 'now'} ({self.tz})"
        currency = f", {self.currency} only" if self.currency else ""
        return (
            f"{count_rows(self.payments):,} payments and {count_rows(self.refunds):,} refunds "
            f"from {self.source}, {period}{currency}"
        )


def count_rows(table: Any) -> int:
    """How many rows ``table`` has, counted in its engine (a lazy table is not loaded)."""
    import narwhals as nw

    from gwtools.analysis import _engine as E

    if isinstance(table, pd.DataFrame):
        return len(table)
    return int(E.to_pandas(E.lazy(table).select(nw.len().alias("n")))["n"].iloc[0])


def _number(value: float) -> str:
    # Shares and rates (below 1) need 4 decimals; amounts, days and counts read best with 2.
    return f"{value:.4f}" if abs(value) < 1 and value != 0 else f"{value:,.2f}"


def notebook_display() -> None:
    """pandas display options the notebooks share: wide tables, readable numbers."""
    pd.set_option("display.width", 140)
    pd.set_option("display.max_columns", 30)
    pd.set_option("display.max_colwidth", 90)  # retry advice reads as a sentence
    pd.set_option("display.float_format", _number)


def describe_source(base_url: str | None, *, embedded: bool) -> str:
    """A gateway's name for outputs: scheme and host only (no port, path or key)."""
    if embedded or not base_url:
        return "the embedded sandbox (seeded demo history)"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.hostname}" if parts.hostname else "the configured gateway"


@contextlib.contextmanager
def _quiet_embedded_notice() -> Iterator[None]:
    """Hold back the library's one-time 'using the embedded sandbox at <url>' notice: it
    names a loopback port, and notebook outputs must not (Tables.source says it instead)."""
    logger = logging.getLogger("gwtools")

    def drop(record: logging.LogRecord) -> bool:
        return "embedded sandbox" not in record.getMessage()

    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _select(
    payments: Any,
    refunds: Any,
    since: str | None,
    until: str | None,
    tz: str,
    currency: str | None,
) -> tuple[Any, Any]:
    """The chosen currency and local days, as filters in the tables' engine (lazy stays lazy)."""
    import narwhals as nw

    from gwtools.analysis import _engine as E

    if isinstance(payments, pd.DataFrame) and isinstance(refunds, pd.DataFrame):
        return _select_pandas(payments, refunds, since, until, tz, currency)
    if currency:
        keep = E.truthy(nw.col("currency") == currency.upper())
        payments = E.native_like(E.lazy(payments).filter(keep), payments)
        refunds = E.native_like(E.lazy(refunds).filter(keep), refunds)
    if since or until:
        chosen = between(payments, since, until, tz=tz)
        # Refunds of the chosen payments (payment cohort) and refunds made in the period
        # (refund-date view), whichever payment they belong to.
        lp, lr = E.lazy_pair(chosen, refunds)
        ids = lp.select(nw.col("id").alias("payment_id")).unique()
        of_payments = lr.join(ids, on="payment_id", how="semi")
        in_period = E.lazy(between(refunds, since, until, tz=tz))
        picked = nw.concat([in_period, of_payments]).unique(subset=["id"], keep="any")
        payments, refunds = chosen, E.native_like(picked, refunds)
    return payments, refunds


def _select_pandas(
    payments: pd.DataFrame,
    refunds: pd.DataFrame,
    since: str | None,
    until: str | None,
    tz: str,
    currency: str | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    if currency:
        payments = payments[payments["currency"].eq(currency.upper()).fillna(False).astype(bool)]
        refunds = refunds[refunds["currency"].eq(currency.upper()).fillna(False).astype(bool)]
    if since or until:
        payments = between(payments, since, until, tz=tz)
        in_period = refunds.index.isin(between(refunds, since, until, tz=tz).index)
        of_payments = refunds["payment_id"].isin(payments["id"]).fillna(False).to_numpy(dtype=bool)
        refunds = refunds[in_period | of_payments]
    return payments.reset_index(drop=True), refunds.reset_index(drop=True)


_private_cache: tempfile.TemporaryDirectory[str] | None = None


def _is_embedded(base_url: str | None) -> bool:
    from gwtools._config import resolve_settings

    return resolve_settings(None, base_url) is None


def _private_cache_dir() -> str:
    """A cache directory for this process only, removed at exit.

    The embedded sandbox's demo history is re-synced in full by every new process anyway,
    so keeping it in the shared cache (the user's, or ``GW_CACHE_DIR``) buys nothing, and
    notebooks run side by side (nbval under xdist) would sync into one dataset at once,
    racing a reader against the other's compaction.
    """
    global _private_cache
    if _private_cache is None:
        _remove_orphaned_private_caches()
        _private_cache = tempfile.TemporaryDirectory(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-")
    return _private_cache.name


_PRIVATE_PREFIX = "gwtools-embedded-"


def _remove_orphaned_private_caches() -> None:
    """Remove the private caches of processes that are gone.

    A kernel that is killed (a notebook's "restart", nbval's teardown) never runs the
    clean-up at exit, so its cache would stay in the temporary directory for good.
    """
    for path in Path(tempfile.gettempdir()).glob(f"{_PRIVATE_PREFIX}*-*"):
        owner = path.name.removeprefix(_PRIVATE_PREFIX).split("-", 1)[0]
        if not owner.isdigit() or _alive(int(owner)):
            continue
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def load_tables(
    source: Any = None,
    *,
    base_url: str | None = None,
    cache: str | os.PathLike[str] | None = None,
    spark_master: str | None = None,
    spark_path: str | None = None,
    since: str | dt.date | None = None,
    until: str | dt.date | None = None,
    tz: str | None = None,
    currency: str | None = None,
    as_of: str | dt.datetime | None = None,
    source_name: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> Tables:
    """Payments and refunds for a notebook, as lazy tables (see :func:`gwtools.open_source`).

    ``source``: ``None``/``"gateway"`` syncs the configured gateway (``base_url``/
    ``GW_BASE_URL`` with ``GW_API_KEY``; with neither, the embedded sandbox, synced into a
    private cache of this process unless ``cache_dir`` is given); a cache folder or URL is
    read as it is, no network (``cache`` is the same); ``"spark"`` reads ``spark_path`` (else
    the gateway's synced cache) with a Spark session on ``spark_master``. ``since``/``until``
    are local days in ``tz`` (inclusive); ``currency`` keeps one currency; ``as_of`` is when
    pending ages are measured (default: the sandbox clock on the embedded sandbox, else now);
    ``source_name`` overrides the data's description. Nothing is loaded: the filters run in
    the engine with the analyses. Example::

        t = load_tables("/data/gwtools", since="2024-06-01", tz="Asia/Kuala_Lumpur")
        analysis.decline_rate(t.payments, freq="week", tz=t.tz)
    """
    from gwtools._source import SPARK, open_source

    zone = resolve_tz(tz)
    since_s = str(since) if since else None
    until_s = str(until) if until else None
    if source is None and cache is not None:
        source = cache
    gateway_cache = (source is None or source == "gateway") or (
        source == SPARK and spark_path is None
    )
    if gateway_cache and cache_dir is None and _is_embedded(base_url):
        cache_dir = _private_cache_dir()
    with _quiet_embedded_notice():
        src = open_source(
            source,
            base_url=base_url,
            cache_dir=cache_dir if gateway_cache else None,
            spark_master=spark_master,
            spark_path=spark_path,
        )
    if as_of is not None:
        moment = pd.Timestamp(as_of)
        moment = moment.tz_localize("UTC") if moment.tzinfo is None else moment
    else:
        moment = pd.Timestamp(_as_of(src.embedded))
    payments, refunds = _select(src.payments, src.refunds, since_s, until_s, zone, currency)
    return Tables(
        payments, refunds, source_name or src.description, zone, moment, since_s, until_s, currency
    )


def save_tables(tables: Mapping[str, Any], out_dir: str | os.PathLike[str] | None) -> list[str]:
    """Write each table as ``<name>.csv`` and ``<name>.parquet`` into ``out_dir`` and return
    the file names (not paths: they end up in notebook outputs). ``out_dir=None`` writes
    nothing, so an interactive run leaves no files behind. A lazy table (a whole canonical
    table, say) is streamed in batches, never loaded whole."""
    from gwtools._export import write_table

    if out_dir is None:
        return []
    target = Path(out_dir)
    target.mkdir(parents=True, exist_ok=True)
    names = []
    for name, frame in tables.items():
        for suffix in ("csv", "parquet"):
            path = target / f"{name}.{suffix}"
            write_table(frame, path, suffix)  # renamed into place: never half-written
            names.append(path.name)
    return names


#: Text longer than this in a table cell wraps in a wide, left-aligned column (retry advice).
LONG_TEXT = 40
_MISSING = frozenset({"<NA>", "NaN", "NaT", "None", "nan"})

#: Styles of the tables :func:`tidy_tables` marks: compact, numbers on one line, long text
#: wrapped in a wide column, a scroll bar (not a cut) when a table is wider than the page.
TABLE_CSS = """
.gwtools-scroll {overflow-x: auto; max-width: 100%}
table.gwtools-table {border-collapse: collapse; border: none; font-size: 12px;
  table-layout: auto; margin: 4px 0 1em 0}
table.gwtools-table th, table.gwtools-table td {padding: 3px 6px; text-align: right;
  white-space: nowrap; vertical-align: top; border: none; line-height: 1.35}
table.gwtools-table thead th {white-space: normal; vertical-align: bottom;
  border-bottom: 1px solid #999}
table.gwtools-table td.gwtools-long {white-space: normal; min-width: 20em; max-width: 34em;
  text-align: left}
table.gwtools-table tbody tr:nth-child(odd) {background: #f4f6f8}
table.gwtools-table tbody tr:nth-child(even) {background: transparent}
"""


def _drop_unnamed_index(table: Any) -> None:
    """Remove pandas' index column when it is the unnamed 0, 1, 2…; a named index keeps its
    column, its name moved up into the header row (pandas gives it a row of its own)."""
    head = table.find("thead")
    body = table.find("tbody")
    if head is None or body is None:
        return
    header_rows = head.find_all("tr", recursive=False)
    body_rows = body.find_all("tr", recursive=False)
    if not header_rows or not body_rows:
        return
    leading = [row.find(["th", "td"], recursive=False) for row in body_rows]
    if not all(cell is not None and cell.name == "th" for cell in leading):
        return  # no index column, or a MultiIndex pandas spans over several rows
    if any(cell.has_attr("rowspan") for cell in leading):
        return
    corner = header_rows[0].find("th", recursive=False)
    if corner is None or corner.get_text(strip=True) or corner.has_attr("colspan"):
        return
    if len(header_rows) == 1:
        for row in [*header_rows, *body_rows]:
            row.find(["th", "td"], recursive=False).decompose()
        return
    names = header_rows[1].find_all(["th", "td"], recursive=False)
    if len(header_rows) == 2 and names and all(not c.get_text(strip=True) for c in names[1:]):
        corner.string = names[0].get_text()
        header_rows[1].decompose()


def _classes(tag: Any) -> list[str]:
    return [c for value in tag.get_attribute_list("class") if value for c in str(value).split()]


def tidy_tables(markup: str) -> str:
    """The pandas tables in ``markup`` made readable (styled by :data:`TABLE_CSS`): the
    unnamed index column dropped, column names breakable after underscores, long text
    (:data:`LONG_TEXT`) wrapping in a wide column, missing values blank, and each table in
    a box that scrolls sideways rather than being cut. Other markup is left as it is."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    tables = [
        t
        for t in soup.find_all("table")
        if {"dataframe", "gwtools-table"} & set(t.get_attribute_list("class"))
    ]
    if not tables:
        return markup
    for table in tables:
        _drop_unnamed_index(table)
        for cell in table.select("thead th"):
            text = cell.get_text()
            if "_" in text and not cell.find(True):
                cell.clear()
                for i, part in enumerate(text.split("_")):
                    if i:
                        cell.append("_")
                        cell.append(soup.new_tag("wbr"))
                    cell.append(part)
        for cell in table.select("tbody td"):
            text = cell.get_text()
            if text.strip() in _MISSING:
                cell.string = ""
            elif len(text) > LONG_TEXT:
                cell["class"] = " ".join([*_classes(cell), "gwtools-long"])
        del table["border"]
        table["class"] = " ".join(
            [c for c in _classes(table) if c != "gwtools-table"] + ["gwtools-table"]
        )
        if table.parent is None or "gwtools-scroll" not in _classes(table.parent):
            table.wrap(soup.new_tag("div", attrs={"class": "gwtools-scroll"}))
    return str(soup)


def _tidy_outputs(notebook: Any) -> None:
    """Every HTML output of ``notebook`` through :func:`tidy_tables` (the report's copy only:
    the stored notebooks keep what the kernel displayed)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                markup = data["text/html"]
                text = "".join(markup) if isinstance(markup, list) else markup
                data["text/html"] = tidy_tables(text)


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

    @property
    def index(self) -> Path:
        return self.out_dir / "index.html"


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


#: JupyterLab's HTML template without its CDN scripts (require.js, MathJax, Mermaid): the
#: report opens offline and tells no third party that it was opened. Figures are inline PNGs.
_OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style>{{ resources.gwtools_css }}</style>{%- endblock extra_css -%}
"""


def export_html(notebook: Any, title: str) -> str:
    """An executed notebook as the report's self-contained page: code hidden, no CDN
    scripts, tables tidied (:func:`tidy_tables`). ``notebook`` is changed in place."""
    import jinja2
    from nbconvert import HTMLExporter

    _tidy_outputs(notebook)
    exporter = HTMLExporter(
        extra_loaders=[jinja2.DictLoader({"gwtools_report.html.j2": _OFFLINE_TEMPLATE})],
        template_file="gwtools_report.html.j2",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(
        notebook, resources={"metadata": {"name": title}, "gwtools_css": TABLE_CSS}
    )
    return str(body)


def _run_one(
    name: str, out_dir: Path, parameters: dict[str, Any], kernel_name: str | None, workdir: Path
) -> tuple[Path, float]:
    import nbformat
    import papermill

    start = time.perf_counter()
    executed = workdir / name
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
        kept = out_dir / name.replace(".ipynb", ".failed.ipynb")
        if executed.exists():
            executed.replace(kept)
        raise ReportError(
            f"notebook {name} failed in cell {exc.exec_count}: {exc.ename}: {exc.evalue}. "
            f"The executed notebook, with the traceback, is at {kept}."
        ) from None
    body = export_html(nbformat.read(executed, as_version=4), TITLES[name])
    target = out_dir / name.replace(".ipynb", ".html")
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(body, encoding="utf-8")
    tmp.replace(target)
    return target, time.perf_counter() - start


def _write_index(report: Report) -> None:
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
<h1>gwtools report</h1>
<p>Data: {html.escape(report.source)}.</p>
<pre>{html.escape(str(report.overview))}</pre>
<h2>Notebooks</h2><ul>{items}</ul>
<h2>Tables (CSV and Parquet)</h2><ul>{tables}</ul>
</body></html>
"""
    report.index.write_text(page, encoding="utf-8")


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
    streamed). Notebooks run ``workers`` at a time.
    """
    from gwtools._source import SPARK, describe_url

    start = time.perf_counter()
    zone = resolve_tz(tz)
    unknown = [n for n in notebooks if n not in TITLES]
    if unknown:
        raise ValueError(f"unknown notebooks {unknown}: choose from {list(NOTEBOOKS)}")
    out = Path(out_dir).resolve()
    (out / "tables").mkdir(parents=True, exist_ok=True)
    chosen = None if source is None else os.fspath(source)
    embedded = False
    if chosen in (None, "gateway") or (chosen == SPARK and spark_path is None):
        if gateway is None:
            from gwtools import connect

            with _quiet_embedded_notice():
                gateway = connect(base_url=base_url, cache_dir=cache_dir, progress=False)
        settings = gateway.settings
        with _quiet_embedded_notice():
            gateway.sync()
        embedded = settings.embedded
        source_name = describe_source(settings.base_url, embedded=embedded)
        if chosen == SPARK:
            spark_path = str(gateway.cache_path)
        else:
            chosen = str(gateway.cache_path)
    else:
        source_name = describe_url(str(spark_path) if chosen == SPARK else str(chosen))
    # The index page's overview, computed here once; DuckDB reads the same files Spark would.
    local = chosen if chosen != SPARK else spark_path
    tables = load_tables(
        local if local is not None and "://" not in str(local) else chosen,
        spark_master=spark_master,
        spark_path=spark_path,
        since=since,
        until=until,
        tz=zone,
        currency=currency,
        as_of=_as_of(embedded),
        source_name=source_name,
    )
    parameters = {
        "base_url": None,
        "source": chosen,
        "spark_master": spark_master,
        "spark_path": spark_path,
        "source_name": source_name,
        "since": since,
        "until": until,
        "tz": zone,
        "currency": currency,
        "as_of": str(tables.as_of),
        "out_dir": str((out / "tables").resolve()),
        "interactive": False,
    }
    timings: dict[str, float] = {}
    pages = []
    with (
        tempfile.TemporaryDirectory(prefix="gwtools-report-") as work,
        ThreadPoolExecutor(max_workers=max(1, workers)) as pool,
    ):
        futures = {
            name: pool.submit(_run_one, name, out, parameters, kernel_name, Path(work))
            for name in notebooks
        }
        for name, future in futures.items():
            page, seconds = future.result()
            pages.append(page)
            timings[name] = seconds
    written = sorted((out / "tables").glob("*.*"))
    report = Report(
        out_dir=out,
        html=pages,
        tables=[p for p in written if p.suffix in (".csv", ".parquet")],
        overview=overview(tables.payments, tables.refunds),
        source=source_name,
        seconds=time.perf_counter() - start,
        timings=timings,
    )
    _write_index(report)
    return report


def _as_of(embedded: bool) -> str:
    if embedded:
        from gwtools._embedded import demo_history

        return str(pd.Timestamp(demo_history().ends_at()))
    return str(pd.Timestamp.now(tz="UTC"))
