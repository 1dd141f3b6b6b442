"""Analyses of the canonical payments and refunds tables: pure functions, DataFrames in,
DataFrames out, no I/O.

Every rate carries ``n`` and a Wilson 95% interval; every time bucket is local to ``tz``
(argument, else ``GW_TIMEZONE``, else UTC); money stays per currency in major units.

Example::

    from gwtools import analysis

    analysis.decline_rate(payments, by="method_type", freq="week", tz="Asia/Kuala_Lumpur")
    analysis.refund_rate(payments, refunds, freq="month", cohort="refund")
    analysis.fpx_banks(payments).head()
"""

import inspect as _inspect

from gwtools.analysis import _engine
from gwtools.analysis._declines import (
    RETRY_ADVICE,
    classify_declines,
    decline_breakdown,
    decline_rate,
    decline_reason,
    decline_type,
    decline_types,
)
from gwtools.analysis._engine import to_pandas
from gwtools.analysis._fpx import (
    FPX_OUTCOMES,
    TIMEOUT_CODES,
    fpx_banks,
    fpx_outcome,
    fpx_outcome_shares,
)
from gwtools.analysis._funnel import funnel, status_counts
from gwtools.analysis._money import exponent, format_money, to_major, totals_by_currency
from gwtools.analysis._monitor import (
    MONITOR_KINDS,
    MonitorSettings,
    describe_alerts,
    monitor,
    monitored_window,
)
from gwtools.analysis._overview import Overview, overview
from gwtools.analysis._quality import QUALITY_RULES, quality
from gwtools.analysis._rates import (
    AMOUNT_BANDS,
    add_rate,
    amount_band,
    outcome_counts,
    success_rate,
    wilson_interval,
)
from gwtools.analysis._recovery import (
    ORDER_KEY,
    ORDER_WINDOW,
    acceptance,
    order_key,
    orders,
    recovery,
)
from gwtools.analysis._refunds import (
    FPX_REFUND_BUSINESS_DAYS,
    effective_refunds,
    partial_vs_full,
    pending_refunds,
    refund_details,
    refund_rate,
    refunds_by_reason,
    time_to_refund,
)
from gwtools.analysis._time import between, bucket, business_days_between, local_time, resolve_tz

__all__ = [
    "AMOUNT_BANDS",
    "FPX_OUTCOMES",
    "FPX_REFUND_BUSINESS_DAYS",
    "MONITOR_KINDS",
    "ORDER_KEY",
    "ORDER_WINDOW",
    "QUALITY_RULES",
    "RETRY_ADVICE",
    "TIMEOUT_CODES",
    "MonitorSettings",
    "Overview",
    "acceptance",
    "add_rate",
    "amount_band",
    "between",
    "bucket",
    "business_days_between",
    "classify_declines",
    "decline_breakdown",
    "decline_rate",
    "decline_reason",
    "decline_type",
    "decline_types",
    "describe_alerts",
    "effective_refunds",
    "exponent",
    "format_money",
    "fpx_banks",
    "fpx_outcome",
    "fpx_outcome_shares",
    "funnel",
    "local_time",
    "monitor",
    "monitored_window",
    "order_key",
    "orders",
    "outcome_counts",
    "overview",
    "partial_vs_full",
    "pending_refunds",
    "quality",
    "recovery",
    "refund_details",
    "refund_rate",
    "refunds_by_reason",
    "resolve_tz",
    "status_counts",
    "success_rate",
    "time_to_refund",
    "to_major",
    "to_pandas",
    "totals_by_currency",
    "wilson_interval",
]

# Every public analysis says which canonical column a table lacks, whatever its engine.
for _name in __all__:
    _obj = globals()[_name]
    if _inspect.isfunction(_obj):
        globals()[_name] = _engine.names_missing_columns(_obj)
del _name, _obj
