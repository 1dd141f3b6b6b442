"""Everything a public entry point raises for bad input derives from ``gwtools.GatewayError``.

Each case drives one public function with one thing wrong and asserts the class of the error
(a ``GatewayError`` subclass, and the builtin it also is where that is documented).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest

import gwtools
from gwtools import analysis

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample-cache"
KEY = "sk_" + "test_" + "a" * 24  # built at run time: no key literal in the source


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def _gateway(tmp_path: Path, **options: Any) -> gwtools.Gateway:
    """A gateway on a closed port: nothing listens, and nothing is sent before a sync."""
    return gwtools.connect(KEY, _closed_port(), cache_dir=tmp_path, **options)


def _answering(status: int, **headers: str) -> httpx.MockTransport:
    """A misconfigured server (not the gateway) answering every request with ``status``."""
    return httpx.MockTransport(
        lambda _request: httpx.Response(status, headers=headers, text="<html>no</html>")
    )


CASES: dict[str, tuple[Callable[[Path], Any], type[gwtools.GatewayError]]] = {
    # normalize_*
    "normalize: record without id": (
        lambda _: gwtools.normalize_payments([{"amount": 1}]),
        gwtools.InvalidRecordError,
    ),
    "normalize: not an object": (
        lambda _: gwtools.normalize_refunds([1]),  # type: ignore[list-item]
        gwtools.InvalidRecordError,
    ),
    "normalize: one dict, not a list": (
        lambda _: gwtools.normalize_payments({"id": "pay_1"}),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "normalize: None": (
        lambda _: gwtools.normalize_refunds(None),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "normalize: on_reject": (
        lambda _: gwtools.normalize_payments([], on_reject="skip"),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    # read_cache / scan_cache
    "read_cache: no such folder": (
        lambda p: gwtools.read_cache(p / "absent", "payments"),
        gwtools.CacheNotFoundError,
    ),
    "read_cache: empty folder": (
        lambda p: gwtools.read_cache(p, "payments"),
        gwtools.CacheNotFoundError,
    ),
    "read_cache: resource": (
        lambda _: gwtools.read_cache(SAMPLE, "payment"),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "read_cache: status": (
        lambda _: gwtools.read_cache(SAMPLE, "payments", status="declined"),
        gwtools.ConfigurationError,
    ),
    "read_cache: since": (
        lambda _: gwtools.read_cache(SAMPLE, "payments", since="last tuesday"),
        gwtools.ConfigurationError,
    ),
    "scan_cache: no such folder": (
        lambda p: gwtools.scan_cache(p / "absent", "payments"),
        gwtools.CacheError,
    ),
    "scan_cache: resource": (
        lambda _: gwtools.scan_cache(SAMPLE, "charges"),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "scan_cache: status": (
        lambda _: gwtools.scan_cache(SAMPLE, "refunds", status="captured"),
        gwtools.ConfigurationError,
    ),
    "read_cache: no folder given": (
        lambda _: gwtools.read_cache(None, "payments"),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "scan_cache: empty folder name": (
        lambda _: gwtools.scan_cache("", "payments"),
        gwtools.ConfigurationError,
    ),
    "read_cache: not a filesystem": (
        lambda _: gwtools.read_cache(SAMPLE, "payments", filesystem="local"),
        gwtools.ConfigurationError,
    ),
    "scan_cache: a file": (
        lambda _: gwtools.scan_cache(SAMPLE / "make_sample_cache.py", "payments"),
        gwtools.CacheNotFoundError,
    ),
    # open_source
    "open_source: an option a folder does not use": (
        lambda _: gwtools.open_source(SAMPLE, base_url="http://127.0.0.1:9"),
        gwtools.ConfigurationError,
    ),
    "open_source: spark options on the gateway": (
        lambda _: gwtools.open_source("gateway", spark_path="/data"),
        gwtools.ConfigurationError,
    ),
    "open_source: a near miss": (
        lambda _: gwtools.open_source("gatway"),
        gwtools.ConfigurationError,
    ),
    "open_source: unknown name": (
        lambda _: gwtools.open_source("mysql"),
        gwtools.GatewayError,
    ),
    "open_source: no such folder": (
        lambda p: gwtools.open_source(str(p / "absent")),
        gwtools.GatewayError,
    ),
    # connect / Gateway
    "connect: publishable key": (
        lambda p: gwtools.connect("pk_" + "test_" + "a" * 24, "http://x", cache_dir=p),
        gwtools.ConfigurationError,
    ),
    "connect: base URL": (
        lambda p: gwtools.connect(KEY, "ftp://gateway", cache_dir=p),
        gwtools.ConfigurationError,
    ),
    "connect: key without URL": (
        lambda p: gwtools.connect(KEY, cache_dir=p),
        gwtools.ConfigurationError,
    ),
    "connect: service version": (
        lambda p: gwtools.connect(KEY, "http://x", cache_dir=p, service_version="1999-01-01"),
        gwtools.ConfigurationError,
    ),
    "connect: account": (
        lambda p: gwtools.connect(KEY, "http://x", cache_dir=p, account="../up"),
        gwtools.ConfigurationError,
    ),
    "connect: a key as the account (it names a folder)": (
        lambda p: gwtools.connect(KEY, "http://x", cache_dir=p, account=KEY),
        gwtools.ConfigurationError,
    ),
    "cache_path: a key as the embedded sandbox's account": (
        lambda p: gwtools.cache_path(cache_dir=p, account="sk_live_" + "b" * 24),
        gwtools.ConfigurationError,
    ),
    "connect: a URL that is not text": (
        lambda p: gwtools.connect(KEY, 123, cache_dir=p),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "connect: a key in bytes": (
        lambda p: gwtools.connect(KEY.encode(), "http://x", cache_dir=p),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "connect: embedded, account not text": (
        lambda p: gwtools.connect(embedded=True, cache_dir=p, account=5),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "connect: base URL with a fragment (never sent)": (
        lambda p: gwtools.connect(KEY, "http://x#section", cache_dir=p),
        gwtools.ConfigurationError,
    ),
    "connect: base URL with an empty query string": (
        lambda p: gwtools.connect(KEY, "http://x/?", cache_dir=p),
        gwtools.ConfigurationError,
    ),
    "connect: embedded, empty account": (
        lambda p: gwtools.connect(cache_dir=p, account=""),
        gwtools.ConfigurationError,
    ),
    "connect: blank account": (
        lambda p: gwtools.connect(KEY, "http://x", cache_dir=p, account="  "),
        gwtools.ConfigurationError,
    ),
    "cache_path: the embedded sandbox's account empty": (
        lambda p: gwtools.cache_path(cache_dir=p, account=""),
        gwtools.ConfigurationError,
    ),
    "connect: concurrency 0 (would wait for ever)": (
        lambda p: _gateway(p, concurrency=0),
        gwtools.ConfigurationError,
    ),
    "connect: max_rps 0": (lambda p: _gateway(p, max_rps=0), gwtools.ConfigurationError),
    "connect: negative max_rps": (lambda p: _gateway(p, max_rps=-5), gwtools.ConfigurationError),
    "connect: timeout as text": (
        lambda p: _gateway(p, timeout="30"),
        gwtools.ConfigurationError,
    ),
    "connect: overlap as a number": (
        lambda p: _gateway(p, overlap=5),
        gwtools.ConfigurationError,
    ),
    "cache_path: a key in bytes": (
        lambda p: gwtools.cache_path(KEY.encode(), "http://x", cache_dir=p),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "Gateway.scan: status, before any sync": (
        lambda p: _gateway(p).scan("payments", status="declined"),
        gwtools.ConfigurationError,
    ),
    "Gateway.scan: since a numpy number": (
        lambda p: _gateway(p).scan("payments", since=np.int64(1_700_000_000)),
        gwtools.ConfigurationError,
    ),
    "Gateway.payments: status a number": (
        lambda p: _gateway(p).payments(status=3, refresh=False),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "Gateway.sync: no resources": (
        lambda p: _gateway(p).sync(None),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "Gateway.payments: status": (
        lambda p: _gateway(p).payments(status="declined", refresh=False),
        gwtools.ConfigurationError,
    ),
    "Gateway.sync: resource": (
        lambda p: _gateway(p).sync("charges"),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "Gateway.sync: unreachable": (
        lambda p: _gateway(p, max_attempts=1, timeout=2).sync(),
        gwtools.APIConnectionError,
    ),
    "Gateway.iter_payments: unreachable": (
        lambda p: list(_gateway(p, max_attempts=1, timeout=2).iter_payments()),
        gwtools.APIConnectionError,
    ),
    "Gateway.sync: a base URL that redirects (not followed)": (
        lambda p: _gateway(
            p, transport=_answering(301, Location="https://127.0.0.1/v1/payments")
        ).sync(),
        gwtools.APIError,
    ),
    "Gateway.iter_payments: a base URL whose path is wrong": (
        lambda p: list(_gateway(p, transport=_answering(404)).iter_payments()),
        gwtools.NotFoundError,
    ),
    "Gateway.iter_refunds: until before since": (
        lambda p: _gateway(p).iter_refunds(since="2024-02-01", until="2024-01-01"),
        gwtools.ConfigurationError,
    ),
    # analyses
    "analysis: not a table": (
        lambda _: analysis.decline_rate(42),  # type: ignore[arg-type]
        gwtools.ConfigurationError,
    ),
    "analysis: frequency": (
        lambda _: analysis.decline_rate(gwtools.read_cache(SAMPLE, "payments"), freq="fortnight"),
        gwtools.GatewayError,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_raises_a_gateway_error(case: str, tmp_path: Path) -> None:
    call, expected = CASES[case]
    with pytest.raises(gwtools.GatewayError) as info:
        call(tmp_path)
    assert isinstance(info.value, expected), repr(info.value)
    assert info.value.message  # says what was wrong


def test_the_builtin_bases_stay_catchable(tmp_path: Path) -> None:
    """Code written against the builtins keeps working: these are documented pairs."""
    with pytest.raises(FileNotFoundError):
        gwtools.read_cache(tmp_path / "absent", "payments")
    with pytest.raises(ValueError):
        gwtools.normalize_payments([{"amount": 1}])
    with pytest.raises(ValueError):
        gwtools.read_cache(SAMPLE, "payments", status="declined")


def test_every_exported_error_is_a_gateway_error() -> None:
    errors = [
        getattr(gwtools, n)
        for n in gwtools.__all__
        if isinstance(getattr(gwtools, n), type)
        and issubclass(getattr(gwtools, n), BaseException)
        and not issubclass(getattr(gwtools, n), Warning)
    ]
    assert len(errors) == 15
    assert all(issubclass(e, gwtools.GatewayError) for e in errors)


@pytest.mark.parametrize(
    "call",
    [
        lambda t: analysis.decline_rate(t),
        lambda t: analysis.fpx_banks(t),
        lambda t: analysis.overview(t, t),
        lambda t: analysis.quality(t, t),
    ],
    ids=["decline_rate", "fpx_banks", "overview", "quality"],
)
def test_an_analysis_names_the_missing_canonical_columns(call: Any) -> None:
    import duckdb

    frame = pd.DataFrame({"amount": [1]})
    for table in (frame, duckdb.from_df(frame)):
        with pytest.raises(gwtools.ConfigurationError, match=r"needs a column.*docs/tables\.md"):
            call(table)
