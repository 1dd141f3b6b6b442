"""Where an analysis's payments and refunds come from: the gateway's cache, a cache folder or
URL, or a Spark session, always as lazy tables (nothing loaded until a result is asked for).

:func:`open_source` is what the notebooks, the report and the dashboards call, so choosing
the data is one argument, the same everywhere::

    src = gwtools.open_source()                       # the configured gateway, synced, or the sandbox
    src = gwtools.open_source("/data/gwtools")        # a synced cache (folder or s3://… URL), no network
    src = gwtools.open_source("spark", spark_path="s3a://bucket/gwtools/acct/live",
                              spark_master="spark://head:7077")
    analysis.decline_rate(src.payments, freq="week")
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from gwtools import _schema
from gwtools._errors import CacheError, ConfigurationError
from gwtools._pyspark import quiet_pyspark
from gwtools.cache._dataset import local_path

__all__ = ["SPARK", "Source", "named_source", "open_source"]

#: The ``source`` value that asks for a Spark session.
SPARK = "spark"
_GATEWAY = "gateway"
_ZONE = "spark.sql.session.timeZone"


@dataclass
class Source:
    """Lazy payments and refunds on one engine, and what to call their origin in outputs.

    ``payments``/``refunds`` are lazy DuckDB tables (or PySpark DataFrames for a Spark source)
    with the canonical columns; pass them to any :mod:`gwtools.analysis` function.
    ``description`` names the origin without key, port or local path; ``embedded`` is True for
    the embedded sandbox (its clock is the time pending ages are measured at);
    ``sandbox_cache`` for a cache it filled, read without it. ``states``: each dataset's
    ``_state.json`` ({resource: state}), what its last sync said about itself (whether it read
    every page), for :func:`gwtools.analysis.quality`'s ``completeness``; empty when the
    tables did not come from a cache.
    """

    payments: Any
    refunds: Any
    description: str
    engine: str
    embedded: bool = False
    sandbox_cache: bool = False
    states: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def sandbox_data(self) -> bool:
        """Whether the data is sandbox data, so that what shows it says so."""
        return self.embedded or self.sandbox_cache

    def __repr__(self) -> str:
        # The dataclass' own repr printed both tables (a DuckDB relation's repr runs a query
        # and draws its first rows) and every state: about 60 lines for `src` in a notebook.
        # Column names come from the tables' schemas: no row is read.
        tables = ", ".join(
            f"{name}=<{self.engine} table, {len(table.columns)} columns>"
            for name, table in (("payments", self.payments), ("refunds", self.refunds))
        )
        return (
            f"Source({tables}, description={self.description!r}, engine={self.engine!r}, "
            f"sandbox_data={self.sandbox_data}, states={sorted(self.states)})"
        )


def describe_url(text: str) -> str:
    """A cache location for outputs: a URL's scheme and host, a local folder as 'a local cache'."""
    parts = urlsplit(text)
    if "://" in text and parts.scheme != "file":
        return f"a cache at {parts.scheme}://{parts.hostname or ''}".rstrip("/")
    return "a local cache"


def spark_session(master: str | None = None, config: Mapping[str, str] | None = None) -> Any:
    """The active Spark session, else a new one on ``master`` (default ``local[2]``) with
    ``config`` set. Its time zone is left as it is: gwtools reads in a session of its own
    (:func:`_utc_session`)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigurationError(
            "source='spark' needs PySpark and a Java runtime: pip install \"gwtools[spark]\""
        ) from None
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    running = _running_master()
    if running is not None and running != master:
        # One context per process: getOrCreate would hand back the running session (and
        # only log it), so the analyses would run there, not on the master asked for.
        raise ConfigurationError(
            f"spark_master={master!r}, but a Spark session on {running!r} is already running "
            "in this process: stop it first (spark.stop()), or leave spark_master out to use it"
        )
    builder = SparkSession.builder.master(master or "local[2]").appName("gwtools")
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    with quiet_pyspark():
        return builder.getOrCreate()


def _running_master() -> str | None:
    """The master URL of this process's running Spark context, if any (whichever thread
    started it; a Spark Connect session has none)."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    return None if context is None else str(context.master)


def _utc_session(session: Any) -> Any:
    """A copy of ``session`` in UTC, for the tables gwtools reads: its settings (storage
    credentials, ...), views and functions, on the same context (one JVM, one cache).

    The analyses read times in their table's session zone and refuse any zone but UTC; setting
    the analyst's own session to UTC instead changed the meaning of their other queries in it
    (a date literal, ``hour()``, the times ``toPandas`` shows), with nothing said.
    """
    clone = getattr(session, "cloneSession", None)  # Spark Connect's public copy
    try:
        if callable(clone):
            own = clone()
        else:  # classic PySpark: the JVM session's copy (cloneSession, Spark 2.2+)
            own = type(session)(session.sparkContext, session._jsparkSession.cloneSession())
    except Exception as exc:  # py4j's errors, a Connect without the method, ...
        # Some clusters keep the JVM session out of reach (shared access modes) and Spark
        # Connect 3.5 has no copy: the session itself is read in UTC then, and said so.
        zone = session.conf.get(_ZONE)
        if zone != "UTC":
            warnings.warn(
                f"gwtools could not copy the Spark session to read the cache in UTC "
                f"({type(exc).__name__}), so it set this session's time zone "
                f"(spark.sql.session.timeZone) from {zone!r} to 'UTC': your other queries in "
                f"it now read times in UTC; set it back with spark.conf.set("
                f"'spark.sql.session.timeZone', {zone!r}) once you are done with gwtools",
                UserWarning,
                stacklevel=3,
            )
        own = session
    own.conf.set(_ZONE, "UTC")
    return own


def _spark_tables(session: Any, path: str) -> tuple[Any, Any]:
    """Canonical payments and refunds read by Spark from the folder holding both datasets."""
    out = []
    for resource in _schema.RESOURCES:
        folder = f"{path.rstrip('/')}/{resource}"
        local = local_path(folder)
        if local is not None and not local.is_dir():
            raise CacheError(
                f"no cached {resource} at {folder}: spark_path must be the folder holding "
                "payments/ and refunds/ ({cache_dir}/{account}/{test|live}); run a sync first"
            )
        if local is not None and urlsplit(folder).scheme == "file":
            # Hadoop's Path escapes a URL's text again: "%20" would name a folder "%20".
            folder = f"file://{local}"
        frame = session.read.parquet(folder)
        # The hive partition column (created_month) is not canonical; the order is.
        out.append(frame.select(*_schema.columns(resource)))
    return out[0], out[1]


def open_source(
    source: Any = None,
    *,
    base_url: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    account: str | None = None,
    mode: str | None = None,
    spark_master: str | None = None,
    spark_path: str | None = None,
    sync: bool | None = None,
) -> Source:
    """Lazy payments and refunds from ``source``:

    - ``None`` or ``"gateway"``: the configured gateway (``base_url``/``GW_BASE_URL`` with
      ``GW_API_KEY``, else the embedded sandbox), synced first unless ``sync=False``, then
      scanned from its cache (``cache_dir``, else ``GW_CACHE_DIR``);
    - a :class:`gwtools.Gateway`: its cache as it is (call ``gw.sync()`` first);
    - a cache folder or URL (``"/data/gwtools"``, ``"s3://bucket/gwtools"``): read as it is,
      no network; ``account``/``mode`` pick a dataset when it holds several;
    - ``"spark"``: a Spark session (the active one, else a new one on ``spark_master``,
      default ``local[2]``) reads ``spark_path``, the folder holding ``payments/`` and
      ``refunds/``; without ``spark_path``, the configured gateway's cache (synced first).
      The tables live in a copy of that session set to UTC, so the session's own time zone
      (``spark.sql.session.timeZone``) stays as it was for its other queries. A
      ``spark_master`` other than that of a session already running in the process is
      refused (Spark runs one context per process and would hand back the running one).

    ``sync=False`` reads the configured gateway's cache as it is; ``sync=True`` for a source
    that is read as it is (a Gateway, a folder or URL, ``spark_path``) is refused, saying how
    to sync it, rather than ignored.
    """
    from gwtools._gateway import Gateway
    from gwtools.cache._scan import scan_cache, scan_dataset

    given = {"base_url": base_url, "cache_dir": cache_dir, "account": account, "mode": mode,
             "spark_master": spark_master, "spark_path": spark_path}  # fmt: skip
    source = named_source(source)
    _refuse_unused(source, {k: v for k, v in given.items() if v is not None})
    if sync:
        _refuse_sync(source, spark_path)
    sync = sync is not False
    if isinstance(source, Gateway):
        return Source(
            source.scan("payments"),
            source.scan("refunds"),
            _describe_gateway(source),
            "duckdb",
            source.settings.embedded,
            states=_states(source.cache_path),
        )
    if source is not None and not isinstance(source, str | os.PathLike):
        raise ConfigurationError(
            f"source must be None, 'gateway', 'spark', a cache folder or URL, or a Gateway; "
            f"got a {type(source).__name__}"
        )
    text = None if source is None else os.fspath(source)
    if text == SPARK:
        session = _utc_session(spark_session(spark_master))
        if spark_path is not None:
            payments, refunds = _spark_tables(session, spark_path)
            states = _states(spark_path)
            sandbox = _filled_by_sandbox(states["payments"])
            return Source(
                payments, refunds, describe_url(spark_path), SPARK, False, sandbox, states
            )
        gw = _synced(base_url, cache_dir, account, sync)
        payments, refunds = _spark_tables(session, str(gw.cache_path))
        return Source(
            payments,
            refunds,
            _describe_gateway(gw),
            SPARK,
            gw.settings.embedded,
            states=_states(gw.cache_path),
        )
    if text is None or text == _GATEWAY:
        gw = _synced(base_url, cache_dir, account, sync)
        return Source(
            gw.scan("payments"),
            gw.scan("refunds"),
            _describe_gateway(gw),
            "duckdb",
            gw.settings.embedded,
            states=_states(gw.cache_path),
        )
    payments, _ = scan_dataset(text, "payments", account=account, mode=mode)
    # dataset_state, not the dataset's own state: it names the part files that cannot be read
    states = _states(text, account=account, mode=mode)
    return Source(
        payments,
        scan_cache(text, "refunds", account=account, mode=mode),
        describe_url(text),
        "duckdb",
        sandbox_cache=_filled_by_sandbox(states["payments"]),
        states=states,
    )


def _states(
    folder: str | os.PathLike[str],
    *,
    account: str | None = None,
    mode: str | None = None,
    resources: tuple[_schema.Resource, ...] = ("payments", "refunds"),
) -> dict[str, dict[str, Any]]:
    """Each dataset's ``_state.json`` under ``folder`` (``{}`` for one never synced)."""
    from gwtools.cache._scan import dataset_state

    return {r: dataset_state(folder, r, account=account, mode=mode) for r in resources}


#: What each kind of source reads of open_source's options (the others would be ignored).
_USES: dict[str, frozenset[str]] = {
    "gateway": frozenset({"base_url", "cache_dir", "account"}),
    "a Gateway": frozenset(),
    "spark with spark_path": frozenset({"spark_master", "spark_path"}),
    "spark": frozenset({"spark_master", "base_url", "cache_dir", "account"}),
    "a cache folder or URL": frozenset({"account", "mode"}),
}


def named_source(source: Any) -> Any:
    """``source`` as :func:`open_source` reads it: ``"gateway"``/``"spark"`` whatever their
    case and spaces (``"GATEWAY"``, ``"Spark "``), unless such a folder exists; anything else
    as it is. A near miss (``"gatway"``) that is no folder raises
    :class:`~gwtools.ConfigurationError` with the likely name. What takes a ``source``
    (:func:`gwtools.report.run_report`, ``gwtools report --source``) reads it through this."""
    if not isinstance(source, str) or source in (_GATEWAY, SPARK) or os.path.exists(source):
        return source
    word = source.strip().lower()
    if word in (_GATEWAY, SPARK):
        return word
    close = difflib.get_close_matches(word, [_GATEWAY, SPARK], n=1, cutoff=0.75)
    if close and "/" not in source and "://" not in source:
        raise ConfigurationError(
            f"source={source!r} is neither a source name nor a folder here: did you mean "
            f"{close[0]!r}? (else give the cache folder's path or URL)"
        )
    return source


def _refuse_unused(source: Any, given: Mapping[str, Any]) -> None:
    """Refuse options the chosen kind of source would ignore, naming what it reads."""
    from gwtools._gateway import Gateway

    if isinstance(source, Gateway):
        kind = "a Gateway"
    elif source is None or source == _GATEWAY:
        kind = "gateway"
    elif source == SPARK:
        kind = "spark with spark_path" if given.get("spark_path") is not None else "spark"
    else:
        kind = "a cache folder or URL"
    unused = sorted(set(given) - _USES[kind])
    if unused:
        reads = ", ".join(sorted(_USES[kind])) or "none of these options (it is synced already)"
        raise ConfigurationError(
            f"open_source({kind}) does not use {', '.join(unused)}: leave "
            f"{'it' if len(unused) == 1 else 'them'} out (it reads {reads})"
        )


def _refuse_sync(source: Any, spark_path: str | None) -> None:
    """Refuse ``sync=True`` for a source read as it is: ignored, it would leave the analyst
    taking the cache's old numbers for current ones."""
    from gwtools._gateway import Gateway

    if isinstance(source, Gateway):
        how = "call gw.sync() first"
        kind = "a Gateway"
    elif source is None or source == _GATEWAY or (source == SPARK and spark_path is None):
        return
    else:
        how = "run `gwtools sync` (or gwtools.connect(...).sync()) into it first"
        kind = "spark with spark_path" if source == SPARK else "a cache folder or URL"
    raise ConfigurationError(
        f"open_source({kind}) does not sync: it reads the cache as it is. To read it "
        f"current, {how}; leave sync out (or sync=False) to read it as it is"
    )


def _filled_by_sandbox(state: Mapping[str, Any]) -> bool:
    """Whether the embedded sandbox synced the payments whose ``_state.json`` this is."""
    return state.get("sandbox_data") is True


def _describe_gateway(gw: Any) -> str:
    from gwtools.report import describe_source

    return describe_source(gw.settings.base_url, embedded=gw.settings.embedded)


def _synced(
    base_url: str | None, cache_dir: str | os.PathLike[str] | None, account: str | None, sync: bool
) -> Any:
    """The configured gateway, synced (its connection closed: scans need only the cache)."""
    from gwtools._gateway import connect

    gw = connect(base_url=base_url, cache_dir=cache_dir, account=account, progress=False)
    try:
        if sync:
            gw.sync()
    finally:
        gw.close()
    return gw
