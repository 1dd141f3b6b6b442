"""The embedded default: a seeded sandbox gateway started on demand, once per process.

:func:`gwtools.connect` with neither a key nor a base URL lands here. The sandbox runs on a
free loopback port in a background thread, is stopped when the process exits, and is seeded
with a deterministic demo history (:data:`DEMO`), so notebooks run the same everywhere.
Its cache account is ``"sandbox"``: the key it generates never names anything.

The history ends at the present, as ``gwtools sandbox`` does, so "the last 30 days" finds data;
``GW_SANDBOX_NOW`` (ISO 8601) pins its end instead, which is how the test suite and the stored
notebook outputs stay reproducible. It carries one incident of each kind the monitors look for
(:data:`DEMO_INCIDENTS`), placed in its last 7 days.

Override the size for a session with ``GW_SANDBOX_PAYMENTS`` / ``GW_SANDBOX_DAYS``, the API
variant with ``GW_SANDBOX_VARIANT`` (``A`` or ``B``, default ``B``) and the incidents with
``GW_SANDBOX_INCIDENTS`` (comma-separated kinds, or ``none``).

It needs the ``sandbox`` extra (FastAPI, uvicorn); without it :func:`embedded_settings`
raises a :class:`~gwtools.ConfigurationError` naming ``pip install "gwtools[sandbox]"``.

State: the sandboxes started here are a per-process resource (a server thread and a port each,
closed at exit), so they are kept in the one process-wide registry :data:`REGISTRY`, with which
caches each one has already filled. A Gateway asks it whether its first sync must be full (a
new sandbox process may hold a different history than the cache). Nothing else in gwtools
keeps module-level state.
"""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from gwtools._config import Settings, account_name, default_cache_dir, normalize_base_url
from gwtools._errors import ConfigurationError

__all__ = ["ACCOUNT", "DEMO", "DemoHistory", "embedded_cache", "embedded_settings"]

#: The cache account of the embedded sandbox's data.
ACCOUNT = "sandbox"

log = logging.getLogger("gwtools")


#: One incident of each kind the monitors detect, so the demo report has something to show.
DEMO_INCIDENTS: tuple[str, ...] = ("card-testing", "bank-outage:MB2U0227", "decline-spike")

#: Where the stored notebook outputs and the shipped sample cache end (``GW_SANDBOX_NOW``).
PINNED_NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.UTC)


@dataclass(frozen=True)
class DemoHistory:
    """The seeded history of the embedded sandbox: same seed, same history, ending at ``now``."""

    payments: int = 5_000
    days: int = 90
    seed: int = 20240601
    #: The sandbox clock at start-up: the history ends here. None: the present, and the
    #: sandbox's clock then follows real time.
    now: dt.datetime | None = None
    variant: Literal["A", "B"] = "B"
    incidents: tuple[str, ...] = DEMO_INCIDENTS

    def ends_at(self) -> dt.datetime:
        """The end of the history: ``now``, or the present."""
        return self.now if self.now is not None else dt.datetime.now(dt.UTC)


#: The default demo history; ``GW_SANDBOX_*`` variables override size and variant.
DEMO = DemoHistory()
#: The largest ``GW_SANDBOX_PAYMENTS`` and ``GW_SANDBOX_DAYS`` (``gwtools sandbox``'s limits).
MAX_PAYMENTS = 2_000_000
MAX_DAYS = 3650


@dataclass
class _Registry:
    """The process's embedded state, in one place: the sandboxes it started, the caches each has
    fully filled, and the report's private cache of their data."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: history parameters -> the running Sandbox
    running: dict[tuple[Any, ...], Any] = field(default_factory=dict)
    #: (sandbox base URL, cache dir, account) synced completely from that sandbox
    synced: set[tuple[str, str, str]] = field(default_factory=set)
    #: the report's cache of the embedded sandbox's data, for this process only
    private_cache: tempfile.TemporaryDirectory[str] | None = None

    def private_cache_dir(self) -> str:
        """A cache directory for this process only, removed at exit.

        The embedded sandbox's demo history is re-synced in full by every new process anyway,
        so keeping it in the shared cache (the user's, or ``GW_CACHE_DIR``) buys nothing, and
        notebooks run side by side (nbval under xdist) would sync into one dataset at once,
        racing a reader against the other's compaction.
        """
        with self.lock:
            if self.private_cache is None:
                _remove_orphaned_private_caches()
                namespace = _pid_namespace()
                self.private_cache = tempfile.TemporaryDirectory(
                    prefix=f"{PRIVATE_PREFIX}{os.getpid()}-"
                    + (f"ns{namespace}-" if namespace else "")
                )
            return self.private_cache.name

    def filled(self, settings: Settings) -> bool:
        """Whether this cache was already synced in full from this very sandbox."""
        with self.lock:
            return _synced_key(settings) in self.synced

    def mark_filled(self, settings: Settings) -> None:
        with self.lock:
            self.synced.add(_synced_key(settings))


def _synced_key(settings: Settings) -> tuple[str, str, str]:
    return (settings.base_url, str(settings.cache_dir), settings.account)


#: The process's one registry of embedded sandboxes (see the module docstring).
REGISTRY = _Registry()

PRIVATE_PREFIX = "gwtools-embedded-"


def _remove_orphaned_private_caches() -> None:
    """Remove the private caches of processes that are gone.

    A kernel that is killed (a notebook's "restart", nbval's teardown) never runs the
    clean-up at exit, so its cache would stay in the temporary directory for good. A cache
    is named ``gwtools-embedded-<pid>-ns<PID namespace>-…`` (Linux; ``…-<pid>-…`` elsewhere
    and before): one of another PID namespace (a container sharing this temporary folder)
    is left alone, as its owner's PID means nothing here.
    """
    ours = _pid_namespace()
    for path in Path(tempfile.gettempdir()).glob(f"{PRIVATE_PREFIX}*-*"):
        # (TemporaryDirectory's random part holds no '-')
        owner, *rest = path.name.removeprefix(PRIVATE_PREFIX).split("-")
        namespace = rest[0][2:] if len(rest) == 2 and rest[0].startswith("ns") else None
        if not owner.isdigit() or (namespace is not None and namespace != ours):
            continue
        if not _alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)


def _pid_namespace() -> str | None:
    """This process's PID namespace (the inode of ``/proc/self/ns/pid``; None off Linux)."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def demo_history() -> DemoHistory:
    """:data:`DEMO` with the ``GW_SANDBOX_*`` overrides applied (checked). A blank variable is
    one not set, as a blank ``GW_API_KEY`` is (``GW_SANDBOX_DAYS=${DAYS:-}``), except
    ``GW_SANDBOX_INCIDENTS``, where blank is an empty list of incidents."""
    variant = (os.environ.get("GW_SANDBOX_VARIANT", "").strip() or DEMO.variant).upper()
    if variant not in ("A", "B"):
        raise ConfigurationError(f"GW_SANDBOX_VARIANT={variant!r}: use A or B")
    # The ranges `gwtools sandbox --seed-payments/--days` take.
    payments = _whole_number("GW_SANDBOX_PAYMENTS", DEMO.payments, 0, MAX_PAYMENTS)
    days = _whole_number("GW_SANDBOX_DAYS", DEMO.days, 1, MAX_DAYS)
    incidents = _incidents()
    if incidents and not payments:
        raise ConfigurationError(
            f"GW_SANDBOX_PAYMENTS=0 leaves no history to place the incidents in "
            f"({', '.join(incidents)}): give it 1 or more payments, or set "
            "GW_SANDBOX_INCIDENTS=none"
        )
    return DemoHistory(
        payments=payments,
        days=days,
        seed=DEMO.seed,
        now=_pinned_now(),
        variant=cast(Literal["A", "B"], variant),
        incidents=incidents,
    )


def _whole_number(name: str, default: int, low: int, high: int) -> int:
    """The variable ``name`` as a whole number from ``low`` to ``high``; ``default`` if unset."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        why = "is out of range" if value is not None else "is not a whole number"
        raise ConfigurationError(
            f"{name}={raw!r} {why}: use a whole number from {low:,} to {high:,}, "
            f"or unset it for the default ({default:,})"
        )
    return value


def _incidents() -> tuple[str, ...]:
    raw = os.environ.get("GW_SANDBOX_INCIDENTS")
    if raw is None:
        return DEMO.incidents
    if raw.strip().lower() in ("", "none"):
        return ()
    from gwtools.sandbox.history import parse_incident

    kinds = tuple(part.strip() for part in raw.split(",") if part.strip())
    for kind in kinds:
        try:
            parse_incident(kind)
        except ValueError as exc:
            raise ConfigurationError(
                f"GW_SANDBOX_INCIDENTS: {exc}; or set it to 'none' for a history without incidents"
            ) from None
    return kinds


def _pinned_now() -> dt.datetime | None:
    raw = os.environ.get("GW_SANDBOX_NOW", "").strip()
    if not raw:
        return DEMO.now
    try:
        when = dt.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigurationError(
            f"GW_SANDBOX_NOW={raw!r} is not an ISO 8601 time: use e.g. 2026-11-20T12:00:00Z, "
            "or unset it so the demo history ends at the present"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def _start(history: DemoHistory) -> Any:
    key = (
        history.variant,
        history.payments,
        history.days,
        history.seed,
        history.now,
        history.incidents,
    )
    with REGISTRY.lock:
        sandbox = REGISTRY.running.get(key)
        if sandbox is not None:
            return sandbox
        from gwtools.sandbox import Sandbox  # the only place the library imports the sandbox

        sandbox = None
        try:
            sandbox = Sandbox(
                variant=history.variant,
                seed_payments=history.payments,
                days=history.days,
                seed=history.seed,
                now=history.now,
                incidents=history.incidents,
            )
            sandbox.start()
        except ValueError as exc:  # the sandbox's SandboxConfigError, or a date out of range
            if sandbox is not None:
                sandbox.close()
            raise _start_error(history, exc) from None
        atexit.register(sandbox.close)
        REGISTRY.running[key] = sandbox
        log.warning(
            "gwtools: using the embedded sandbox (variant %s, "
            "%d demo payments over %d days ending %s, %s) at %s: this is sandbox data, not "
            "a real gateway's",
            history.variant,
            history.payments,
            history.days,
            "now" if history.now is None else history.now.isoformat(),
            f"incidents: {', '.join(history.incidents)}" if history.incidents else "no incidents",
            sandbox.base_url,
        )
        return sandbox


def _start_error(history: DemoHistory, exc: ValueError) -> ConfigurationError:
    """The sandbox's refusal of a ``GW_SANDBOX_*`` setting, as the library's error naming it."""
    from gwtools.sandbox.clock import ClockRangeError

    if isinstance(exc, ClockRangeError):  # only GW_SANDBOX_NOW sets the clock
        raw = os.environ.get("GW_SANDBOX_NOW", "").strip()
        return ConfigurationError(
            f"GW_SANDBOX_NOW={raw!r} cannot be the embedded sandbox's clock: {exc} Pin a time "
            "in that range, or unset it so the demo history ends at the present"
        )
    return ConfigurationError(
        f"the embedded sandbox cannot generate its demo history with "
        f"{_history_settings(history)}: {exc}. Change those GW_SANDBOX_* variables, or unset "
        "them for the defaults"
    )


def _history_settings(history: DemoHistory) -> str:
    """The ``GW_SANDBOX_*`` settings a demo history was made from, as a person would set them."""
    incidents = ",".join(history.incidents) or "none"
    end = (
        "ending at the present"
        if history.now is None
        else f"GW_SANDBOX_NOW={history.now.isoformat()}"
    )
    return (
        f"GW_SANDBOX_PAYMENTS={history.payments}, GW_SANDBOX_DAYS={history.days}, "
        f"GW_SANDBOX_INCIDENTS={incidents} ({end})"
    )


def embedded_cache(
    cache_dir: str | os.PathLike[str] | None, account: str | None
) -> tuple[Path, str, Literal["test"]]:
    """Where the embedded sandbox's data is cached, ``(cache_dir, account, mode)``, without
    starting it: reading that cache needs no sandbox."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    # Only None means the default ("sandbox"): account="" is refused, as with a key.
    return root, account_name("", ACCOUNT if account is None else account), "test"


def embedded_settings(
    *,
    cache_dir: str | os.PathLike[str] | None,
    service_version: str,
    account: str | None,
) -> Settings:
    """Start (or reuse) the embedded sandbox and return settings pointing at it."""
    from gwtools.extras import require

    require(
        "sandbox",
        "gwtools.connect() with no API key (the embedded sandbox; or pass api_key= and "
        "base_url= for a real gateway)",
    )
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
