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
from gwtools.cache._export import write_table
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

# Public names say `gwtools.X` in reprs and tracebacks, as in httpx.
__locals = locals()
for __name in __all__:
    if not __name.startswith("__"):
        __locals[__name].__module__ = "gwtools"
