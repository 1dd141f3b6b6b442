"""Reports: the analyst notebooks run headless, as self-contained HTML and tables.

``run_report`` syncs the configured gateway once (``GW_API_KEY``/``GW_BASE_URL``, or the
embedded sandbox), then executes each notebook with papermill against that cache, without
network (or against a cache folder or URL, or with Spark: ``source=``), and writes
``<notebook>.html`` (code hidden) beside the CSV and Parquet tables the notebooks save under
``tables/``. The notebooks use :func:`load_tables` and :func:`save_tables` from here, so they
hold no logic of their own. Sandbox data says so: a banner on every page, and the first
line of each notebook's first output.

Example::

    from gwtools.report import run_report

    report = run_report("report/", since="2024-06-01", tz="Asia/Kuala_Lumpur")
    print(report.index)

Inside: ``_tables`` (what the notebooks analyse and save), ``_html`` (tables and pages as
HTML), ``_run`` (executing the notebooks, the index page).
"""

from gwtools.cache._source import named_source
from gwtools.report._html import LONG_TEXT, TABLE_CSS, export_html, sandbox_banner, tidy_tables
from gwtools.report._run import (
    NOTEBOOKS,
    TITLES,
    Report,
    ReportError,
    check_out_dir,
    notebooks_dir,
    run_report,
)
from gwtools.report._tables import (
    CSV_MAX_ROWS,
    Tables,
    count_rows,
    describe_source,
    load_tables,
    notebook_display,
    quiet_embedded_notice,
    refunds_of,
    save_tables,
    sync_summary,
)

__all__ = [
    "CSV_MAX_ROWS",
    "LONG_TEXT",
    "NOTEBOOKS",
    "TABLE_CSS",
    "TITLES",
    "Report",
    "ReportError",
    "Tables",
    "check_out_dir",
    "count_rows",
    "describe_source",
    "export_html",
    "load_tables",
    "named_source",
    "notebook_display",
    "notebooks_dir",
    "quiet_embedded_notice",
    "refunds_of",
    "run_report",
    "sandbox_banner",
    "save_tables",
    "sync_summary",
    "tidy_tables",
]
