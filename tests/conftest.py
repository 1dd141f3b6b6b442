"""Shared fixtures for the whole suite: real sandbox servers over loopback HTTP.

Fixtures (names are stable; tests in tests/library and tests/toolkit use them):

- ``sandbox_a`` / ``sandbox_b``: session-scoped :class:`gwtools.sandbox.Sandbox` servers
  (uvicorn in a thread, in-memory SQLite), variant A and B, clock frozen at ``FROZEN_NOW``
  (advance it with ``POST /_sandbox/clock/advance``), rate limits on (the spec's figures).
  Attributes: ``base_url`` (no ``/v1``), ``secret_key``, ``publishable_key``,
  ``live_secret_key``, ``variant``, ``gateway``.
- ``sandbox``: parametrised over both of them (test ids ``[A]`` and ``[B]``).
- ``account``: a fresh isolated account on ``sandbox`` (own data and rate-limit buckets): a
  dict that also allows attribute access, with ``id``, ``secret_key``, ``publishable_key``,
  ``live_secret_key``, ``live_publishable_key``, ``webhook_secret``.
- ``http``: an ``httpx.Client`` on ``sandbox.base_url`` authenticated with the account's test
  secret key (``http.get("/v1/payments")``); pass ``headers=`` to use another key.

Tests share the session servers, so they never depend on other tests' data: use ``account``.
A test that changes server-wide settings (rate limits, faults) restores them. The shared clock
only moves forward (tests advance it by days): read ``GET /_sandbox/clock`` instead of assuming
``FROZEN_NOW``, or start a private ``Sandbox(now=...)`` for absolute times.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from gwtools.sandbox import Sandbox

FROZEN_NOW = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
# Loopback HTTP needs no TLS: verify=False skips loading the CA bundle (~0.2 s per client).
_ADMIN = httpx.Client(timeout=10, verify=False)


#: Variables that would point the suite at a real gateway, or at the user's own cache.
_USER_SETTINGS = (
    "GW_API_KEY",
    "GW_BASE_URL",
    "GW_CACHE_DIR",
    "GW_EXPORT_DIR",
    "GW_TIMEZONE",
    "GW_SANDBOX_VARIANT",
    "GW_SANDBOX_PAYMENTS",
    "GW_SANDBOX_DAYS",
)


#: The run's private directories (GW_CACHE_DIR, GW_EXPORT_DIR), removed when it ends.
_PRIVATE_ROOT = pytest.StashKey[Path]()


def pytest_unconfigure(config: pytest.Config) -> None:
    if (root := config.stash.get(_PRIVATE_ROOT, None)) is not None:
        shutil.rmtree(root, ignore_errors=True)  # one left per run in /tmp otherwise


def pytest_configure(config: pytest.Config) -> None:
    """Keep the suite hermetic: no real gateway, no user cache, no stray exports.

    Runs in the xdist controller before the workers start, so they (and the notebook kernels
    nbval and Voila start) inherit the same private directories.
    """
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    for name in _USER_SETTINGS:
        os.environ.pop(name, None)
    root = Path(tempfile.mkdtemp(prefix="gwtools-tests-"))
    config.stash[_PRIVATE_ROOT] = root
    os.environ["GW_CACHE_DIR"] = str(root / "cache")
    os.environ["GW_EXPORT_DIR"] = str(root / "exports")
    # The embedded demo history ends at the present for users; the suite pins its end so the
    # notebooks' checked outputs and the toolkit tests see the same history every day.
    from gwtools._embedded import PINNED_NOW

    os.environ["GW_SANDBOX_NOW"] = PINNED_NOW.isoformat()


class Account(dict[str, Any]):
    """The JSON of ``POST /_sandbox/accounts``, also readable as attributes."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@pytest.fixture(scope="session", autouse=True)
def _close_admin_client() -> Iterator[None]:
    yield
    _ADMIN.close()


def _start(variant: str) -> Iterator[Sandbox]:
    sb = Sandbox(variant, now=FROZEN_NOW)  # type: ignore[arg-type]
    sb.start()
    try:
        yield sb
    finally:
        sb.close()


@pytest.fixture(scope="session")
def sandbox_a() -> Iterator[Sandbox]:
    yield from _start("A")


@pytest.fixture(scope="session")
def sandbox_b() -> Iterator[Sandbox]:
    yield from _start("B")


@pytest.fixture(params=["A", "B"])
def sandbox(request: pytest.FixtureRequest) -> Sandbox:
    sb: Sandbox = request.getfixturevalue(f"sandbox_{request.param.lower()}")
    return sb


@pytest.fixture
def account(sandbox: Sandbox) -> Account:
    r = _ADMIN.post(f"{sandbox.base_url}/_sandbox/accounts")
    r.raise_for_status()
    return Account(r.json())


@pytest.fixture
def http(sandbox: Sandbox, account: Account) -> Iterator[httpx.Client]:
    with httpx.Client(
        base_url=sandbox.base_url,
        timeout=10,
        verify=False,
        headers={"Authorization": f"Bearer {account['secret_key']}"},
    ) as client:
        yield client


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A ``local[2]`` SparkSession for the engine-equivalence and cache tests (needs the
    ``spark`` extra and a Java runtime; ``.ci/run`` installs Debian's). UTC session time zone,
    so timestamps read from Parquet compare with pandas and DuckDB."""
    from gwtools.cache._source import spark_session

    session = spark_session(
        "local[2]",
        config={
            "spark.sql.session.timeZone": "UTC",
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "1g",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
