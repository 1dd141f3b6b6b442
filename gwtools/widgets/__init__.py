"""ipywidgets dashboards over the canonical tables: filters, a chart, a table, the
matching payments, and CSV/Parquet export of what is on screen.

The dashboards only wire widgets to :mod:`gwtools.analysis` and :mod:`gwtools.plots`;
every number comes from those functions. Each dashboard is itself a widget
(``display(dashboard)`` in a notebook) and keeps its state in plain attributes
(``view``, ``result``, ``drilled``, ``sandbox_data``) that tests and code can read.

They take what the analyses take: a lazy table (``gwtools.scan_cache``, ``Gateway.scan``;
the default, over the configured gateway's cache, when given a Gateway or nothing), a
PySpark DataFrame, or a pandas DataFrame. A filter change pushes the filters into the table
and runs the analysis in its engine: only the small result, a row count and the drill-down's
first rows (filtered and limited in the engine) reach Python; the export button streams the
drill-down's rows to the file in batches.

A dashboard over sandbox data says "sandbox data" in its header and on its charts: known
when it was given a Gateway, nothing, or pandas frames read from the embedded sandbox; a
lazy table cannot carry the label, so pass ``origin=`` what it came from (the Gateway, the
``open_source()`` Source, the notebooks' ``load_tables()`` result).

Example::

    import gwtools
    from gwtools.widgets import declines_dashboard

    gw = gwtools.connect()
    gw.sync()
    declines_dashboard(gw.scan("payments"), tz="Asia/Kuala_Lumpur", origin=gw)  # or (gw)

Inside: ``_dashboard`` (the shared machinery), one module per dashboard: ``_declines``,
``_refunds``, ``_fpx``, ``_monitor``, ``_quality``.
"""

from gwtools.widgets._dashboard import Dashboard, View, default_export_dir, figure_png, to_html
from gwtools.widgets._declines import DeclinesDashboard, declines_dashboard
from gwtools.widgets._fpx import FpxDashboard, fpx_dashboard
from gwtools.widgets._monitor import MonitorDashboard, alert_payments, monitor_dashboard
from gwtools.widgets._quality import QualityDashboard, quality_dashboard, quality_examples
from gwtools.widgets._refunds import RefundsDashboard, refunds_dashboard

__all__ = [
    "Dashboard",
    "DeclinesDashboard",
    "FpxDashboard",
    "MonitorDashboard",
    "QualityDashboard",
    "RefundsDashboard",
    "View",
    "alert_payments",
    "declines_dashboard",
    "default_export_dir",
    "figure_png",
    "fpx_dashboard",
    "monitor_dashboard",
    "quality_dashboard",
    "quality_examples",
    "refunds_dashboard",
    "to_html",
]
