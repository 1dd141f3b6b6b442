"""gwtools: a payment gateway's payments and refunds in pandas, a Parquet cache and notebooks.

Example::

    import gwtools

    gw = gwtools.connect()          # no key, no base URL: the embedded sandbox
    result = gw.sync()              # brings the local Parquet cache up to date
    payments = gw.payments(since="2026-10-01", status="failed")
    refunds = gw.refunds(refresh=False)   # the cache as it is, no network

    cached = gwtools.read_cache("data/sample-cache", "payments")   # no gateway at all
    lazy = gwtools.scan_cache("data/sample-cache", "payments")     # DuckDB, read on demand
    for p in gw.iter_payments(since="2026-11-01"):                # streamed, no cache
        ...

The core install holds the library, the analyses, plots and widgets. Optional parts:
``gwtools[sandbox]`` (the sandbox gateway, and so ``connect()`` with no key),
``gwtools[report]`` (``gwtools report``/``demo``), ``gwtools[spark]``, ``gwtools[all]``.

Everything gwtools raises derives from :class:`GatewayError`::

    GatewayError
    ├── ConfigurationError        bad arguments, GW_* variables or a missing extra; nothing sent
    │   └── AmbiguousCacheError   a cache folder holds several accounts or modes: pick one
    ├── InvalidRecordError        objects given to normalize_* that cannot become rows
    ├── APIConnectionError        the gateway could not be reached, after retries
    ├── AuthenticationError       401: invalid, revoked or publishable key
    ├── InvalidRequestError       400/404/409
    │   └── NotFoundError         404: unknown id (for a list: a base URL whose path is wrong)
    ├── CardError                 402: card declined
    ├── RateLimitError            429, after retries
    ├── APIError                  5xx, after retries; a redirect (3xx, never followed)
    │   └── MalformedBodyError    a 200 whose body is not the JSON it should be
    ├── CacheError                the local cache cannot be written or read (disk, folder)
    │   └── CacheNotFoundError    nothing cached where a read looked: sync first
    └── ResultTooLargeError       a table asked for in memory outgrew GW_MAX_RESULT_MEMORY
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from gwtools._config import Filters, Settings, check_filters
    from gwtools._errors import (
        AmbiguousCacheError,
        APIConnectionError,
        APIError,
        AuthenticationError,
        CacheError,
        CacheNotFoundError,
        CardError,
        ConfigurationError,
        GatewayError,
        InvalidRecordError,
        InvalidRequestError,
        MalformedBodyError,
        NotFoundError,
        RateLimitError,
        ResultTooLargeError,
    )
    from gwtools._gateway import Gateway, cache_path, cache_state, connect
    from gwtools._schema import empty_payments, empty_refunds
    from gwtools.cache._dataset import read_cache
    from gwtools.cache._export import check_export_path, write_table
    from gwtools.cache._scan import scan_cache
    from gwtools.cache._source import Source, open_source
    from gwtools.normalize._normalize import normalize_payments, normalize_refunds
    from gwtools.sync._result import GatewayDataWarning, ResourceResult, SyncResult

__all__ = [
    "APIConnectionError",
    "APIError",
    "AmbiguousCacheError",
    "AuthenticationError",
    "CacheError",
    "CacheNotFoundError",
    "CardError",
    "ConfigurationError",
    "Filters",
    "Gateway",
    "GatewayDataWarning",
    "GatewayError",
    "InvalidRecordError",
    "InvalidRequestError",
    "MalformedBodyError",
    "NotFoundError",
    "RateLimitError",
    "ResourceResult",
    "ResultTooLargeError",
    "Settings",
    "Source",
    "SyncResult",
    "cache_path",
    "cache_state",
    "check_export_path",
    "check_filters",
    "connect",
    "empty_payments",
    "empty_refunds",
    "normalize_payments",
    "normalize_refunds",
    "open_source",
    "read_cache",
    "scan_cache",
    "write_table",
]

#: public name -> the module defining it. The names are loaded on first use, all at once,
#: so that `gwtools --help` and `gwtools sandbox` (any ``gwtools.*`` import runs this file)
#: do not pay for pandas, DuckDB and Narwhals.
_HOMES: dict[str, str] = {
    "APIConnectionError": "gwtools._errors",
    "APIError": "gwtools._errors",
    "AmbiguousCacheError": "gwtools._errors",
    "AuthenticationError": "gwtools._errors",
    "CacheError": "gwtools._errors",
    "CacheNotFoundError": "gwtools._errors",
    "CardError": "gwtools._errors",
    "ConfigurationError": "gwtools._errors",
    "Filters": "gwtools._config",
    "Gateway": "gwtools._gateway",
    "GatewayDataWarning": "gwtools.sync._result",
    "GatewayError": "gwtools._errors",
    "InvalidRecordError": "gwtools._errors",
    "InvalidRequestError": "gwtools._errors",
    "MalformedBodyError": "gwtools._errors",
    "NotFoundError": "gwtools._errors",
    "RateLimitError": "gwtools._errors",
    "ResourceResult": "gwtools.sync._result",
    "ResultTooLargeError": "gwtools._errors",
    "Settings": "gwtools._config",
    "Source": "gwtools.cache._source",
    "SyncResult": "gwtools.sync._result",
    "cache_path": "gwtools._gateway",
    "cache_state": "gwtools._gateway",
    "check_export_path": "gwtools.cache._export",
    "check_filters": "gwtools._config",
    "connect": "gwtools._gateway",
    "empty_payments": "gwtools._schema",
    "empty_refunds": "gwtools._schema",
    "normalize_payments": "gwtools.normalize._normalize",
    "normalize_refunds": "gwtools.normalize._normalize",
    "open_source": "gwtools.cache._source",
    "read_cache": "gwtools.cache._dataset",
    "scan_cache": "gwtools.cache._scan",
    "write_table": "gwtools.cache._export",
}


def _load() -> None:
    for name, home in _HOMES.items():
        obj = getattr(_importlib.import_module(home), name)
        # Public names say `gwtools.X` in reprs and tracebacks, as in httpx.
        obj.__module__ = "gwtools"
        globals()[name] = obj


def __getattr__(name: str) -> _typing.Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'gwtools' has no attribute {name!r}")
    _load()
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
