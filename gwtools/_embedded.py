"""The embedded default: a seeded sandbox gateway started on demand, once per process.

:func:`gwtools.connect` with neither a key nor a base URL lands here. The sandbox runs on a
free loopback port in a background thread, is stopped when the process exits, and is seeded
with a deterministic demo history (:data:`DEMO`), so notebooks run the same everywhere.
Its cache account is ``"sandbox"``: the key it generates never names anything.

Override the size for a session with ``GW_SANDBOX_PAYMENTS`` / ``GW_SANDBOX_DAYS`` and the API
variant with ``GW_SANDBOX_VARIANT`` (``A`` or ``B``, default ``B``).
"""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from gwtools._config import Settings, account_name, default_cache_dir, normalize_base_url
from gwtools._errors import ConfigurationError

__all__ = ["ACCOUNT", "DEMO", "DemoHistory", "embedded_cache", "embedded_settings"]

#: The cache account of the embedded sandbox's data.
ACCOUNT = "sandbox"

log = logging.getLogger("gwtools")


@dataclass(frozen=True)
class DemoHistory:
    """The seeded history of the embedded sandbox (what makes notebooks reproducible)."""

    payments: int = 5_000
    days: int = 90
    seed: int = 20240601
    #: The sandbox clock at start-up: the history ends here.
    now: dt.datetime = dt.datetime(2024, 6, 30, 12, 0, tzinfo=dt.UTC)
    variant: Literal["A", "B"] = "B"


#: The default demo history; ``GW_SANDBOX_*`` variables override size and variant.
DEMO = DemoHistory()

_lock = threading.Lock()
_running: dict[tuple[Any, ...], Any] = {}


def demo_history() -> DemoHistory:
    """:data:`DEMO` with the ``GW_SANDBOX_*`` overrides applied (checked)."""
    variant = os.environ.get("GW_SANDBOX_VARIANT", DEMO.variant).upper()
    if variant not in ("A", "B"):
        raise ConfigurationError(f"GW_SANDBOX_VARIANT={variant!r}: use A or B")
    try:
        payments = int(os.environ.get("GW_SANDBOX_PAYMENTS", DEMO.payments))
        days = int(os.environ.get("GW_SANDBOX_DAYS", DEMO.days))
    except ValueError as exc:
        raise ConfigurationError(
            f"GW_SANDBOX_PAYMENTS / GW_SANDBOX_DAYS must be integers ({exc})"
        ) from None
    return DemoHistory(
        payments=payments,
        days=days,
        seed=DEMO.seed,
        now=DEMO.now,
        variant=cast(Literal["A", "B"], variant),
    )


def _start(history: DemoHistory) -> Any:
    key = (history.variant, history.payments, history.days, history.seed, history.now)
    with _lock:
        sandbox = _running.get(key)
        if sandbox is not None:
            return sandbox
        from gwtools.sandbox import Sandbox  # the only place the library imports the sandbox

        sandbox = Sandbox(
            variant=history.variant,
            seed_payments=history.payments,
            days=history.days,
            seed=history.seed,
            now=history.now,
        ).start()
        atexit.register(sandbox.close)
        _running[key] = sandbox
        log.warning(
            "gwtools: no GW_API_KEY/GW_BASE_URL, so using the embedded sandbox (variant %s, "
            "%d demo payments over %d days) at %s",
            history.variant,
            history.payments,
            history.days,
            sandbox.base_url,
        )
        return sandbox


def embedded_cache(
    cache_dir: str | os.PathLike[str] | None, account: str | None
) -> tuple[Path, str, Literal["test"]]:
    """Where the embedded sandbox's data is cached, ``(cache_dir, account, mode)``, without
    starting it: reading that cache needs no sandbox."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    return root, account_name("", account or ACCOUNT), "test"


def embedded_settings(
    *,
    cache_dir: str | os.PathLike[str] | None,
    service_version: str,
    account: str | None,
) -> Settings:
    """Start (or reuse) the embedded sandbox and return settings pointing at it."""
    root, account, mode = embedded_cache(cache_dir, account)
    history = demo_history()
    sandbox = _start(history)
    return Settings(
        api_key=sandbox.secret_key,
        base_url=normalize_base_url(sandbox.base_url),
        cache_dir=root,
        account=account,
        mode=mode,
        service_version=service_version,
        embedded=True,
    )
