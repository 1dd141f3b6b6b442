"""``gwtools sandbox``: serve the sandbox gateway from the command line.

Example::

    gwtools sandbox --variant A --seed-payments 5000 --days 90 --seed 1 --key-file .sandbox-key
    gwtools sandbox --seed-payments 30000 --incident card-testing --incident bank-outage:RHB0218
    python -m gwtools.sandbox --port 0 --no-rate-limit
"""

from __future__ import annotations

import errno
import math
import os
import sqlite3
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import TextIO

import click
from tqdm import tqdm

from gwtools.sandbox.auth import mask
from gwtools.sandbox.clock import ClockRangeError


def _file_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
    """A file option as a Path; an empty one (``--key-file "$KEY_FILE"``, the variable unset)
    is refused rather than taken for the working directory, as ``Path("")`` would."""
    if value is None:
        return None
    if not value.strip():
        raise click.BadParameter(f"{value!r} is empty: give a file name, or leave the option out")
    return Path(value)


def _host(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """An empty ``--host`` (``--host "$HOST"``, the variable unset) is refused: a socket takes
    ``""`` for every interface, which would expose a sandbox meant for loopback."""
    if not value.strip():
        raise click.BadParameter(
            f"{value!r} is empty: give 127.0.0.1 for this machine only, 0.0.0.0 for all "
            "interfaces, or leave --host out (127.0.0.1)"
        )
    return value


def _latency(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """Refuse NaN, which click's FloatRange lets through (no comparison with NaN is true)."""
    if math.isnan(value):
        raise click.BadParameter(f"{value} is not a number: give milliseconds, 0 to 120000")
    return value


# -h as `gwtools` gives it: run alone (python -m gwtools.sandbox) no group passes it down.
@click.command("sandbox", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    callback=_host,
    help="Interface to bind; loopback by default (use 0.0.0.0 to expose it).",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to listen on; 0 picks a free one.",
)
@click.option(
    "--variant",
    type=click.Choice(["A", "B"], case_sensitive=False),
    default="B",
    show_default=True,
    help="A: hosted checkout, page lists. B: direct, cursor lists.",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    default=None,
    callback=_file_path,
    help="SQLite file to keep the sandbox's state in (default: memory only).",
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(0, 120_000),
    default=0,
    show_default=True,
    callback=_latency,
    help="Delay added to every /v1 request.",
)
@click.option("--no-rate-limit", is_flag=True, help="Turn the rate limits off.")
@click.option(
    "--seed-payments",
    type=click.IntRange(0, 2_000_000),
    default=0,
    show_default=True,
    help="Generate a history of this many payments at start.",
)
@click.option(
    "--days",
    type=click.IntRange(1, 3650),
    default=90,
    show_default=True,
    help="The generated history spans this many days before now.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the generated history (same seed, same history).",
)
@click.option(
    "--now",
    "now",
    type=click.DateTime(["%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d"]),
    default=None,
    help="Freeze the sandbox clock at this UTC instant (reproducible); "
    "default: the clock follows real time.",
)
@click.option(
    "--incident",
    "incidents",
    multiple=True,
    metavar="KIND",
    help="Place an incident in the last 7 days of the generated history (repeatable): "
    "card-testing, decline-spike or bank-outage:BANKCODE.",
)
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False),
    default=None,
    callback=_file_path,
    help="Write the test secret key to this file (mode 600) instead of printing it.",
)
def sandbox(
    host: str,
    port: int,
    variant: str,
    db: Path | None,
    latency_ms: float,
    no_rate_limit: bool,
    seed_payments: int,
    days: int,
    seed: int,
    now: datetime | None,
    key_file: Path | None,
    incidents: tuple[str, ...],
) -> None:
    """Run the local sandbox gateway; print its base URL and a test secret key."""
    from datetime import UTC

    from gwtools.sandbox.errors import SandboxConfigError
    from gwtools.sandbox.history import parse_incident
    from gwtools.sandbox.server import Sandbox

    try:
        for text in incidents:
            parse_incident(text)
    except SandboxConfigError as exc:
        raise click.BadParameter(str(exc), param_hint="--incident") from None
    if incidents and not seed_payments:
        raise click.BadParameter(
            "incidents are placed in the generated history: add --seed-payments N",
            param_hint="--incident",
        )
    if now is not None and now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    if db is not None:
        _check_folder(db, "--db")
    # Files this command creates, removed again if the sandbox does not start: a trial leaves
    # nothing behind (an existing key file or database is left as it was).
    created: list[Path] = []
    if db is not None and not db.exists():
        created += [db, db.with_name(f"{db.name}-wal"), db.with_name(f"{db.name}-shm")]
    key_out = _open_key_file(key_file, created) if key_file is not None else None
    done = 0

    def progress(count: int) -> None:
        nonlocal done
        bar.update(count - done)
        done = count

    sb: Sandbox | None = None
    try:
        try:
            sb = Sandbox(
                "A" if variant.upper() == "A" else "B",
                db=db,
                host=host,
                port=port,
                rate_limits=not no_rate_limit,
                latency_ms=latency_ms,
                seed_payments=seed_payments,
                days=days,
                seed=seed,
                now=now,
                progress=progress,
                incidents=incidents,
            )
        except ClockRangeError as exc:
            raise click.BadParameter(str(exc), param_hint="--now") from None
        except sqlite3.Error as exc:
            if getattr(exc, "sqlite_errorname", None) == "SQLITE_NOTADB":
                # the folder is fine: the file is another one (a CSV, say), not overwritten
                why = (
                    f"{db} is not a SQLite database ({exc}); it is left as it is: give a new "
                    "file name, or a database an earlier `gwtools sandbox --db` made"
                )
            else:
                why = (
                    f"cannot open {db} as the sandbox's SQLite database ({exc}): its folder "
                    "must exist and be writable; pick another path"
                )
            raise click.BadParameter(why, param_hint="--db") from None
        bar = tqdm(
            total=seed_payments,
            unit=" payments",
            disable=not seed_payments,
            leave=False,
            desc=f"Generating a {days}-day history (seed {seed})",
            file=sys.stderr,
        )
        try:
            sb.start()
        except (OSError, SandboxConfigError) as exc:
            shown = not bar.disable  # (close() disables it)
            bar.close()
            if shown:  # the error on a line of its own, not after the bar's
                click.echo(err=True)
            raise _start_error(exc, host, port) from None
        bar.close()
    except BaseException:
        if sb is not None:
            sb.close()
        if key_out is not None:
            key_out.close()
        for path in created:
            path.unlink(missing_ok=True)
        raise
    click.echo(
        f"Sandbox gateway, variant {sb.variant}: {sb.base_url}  (API under /v1, "
        f"admin under /_sandbox, OpenAPI at /openapi.json)"
    )
    for placed in (sb.history or {}).get("incidents", []):
        click.echo(
            f"Incident {placed['incident']}: {placed['start']} to {placed['end']} "
            f"({placed['payments']} payments)"
        )
    if key_out is not None:
        with key_out:
            # An existing file too: the key is for this user alone (as a new file is made).
            os.fchmod(key_out.fileno(), 0o600)
            key_out.truncate(0)
            key_out.write(sb.secret_key + "\n")
        click.echo(f"Test secret key {mask(sb.secret_key)} written to {key_file}")
    else:
        click.echo(f"Test secret key: {sb.secret_key}")
    click.echo("Press Ctrl+C to stop.", err=True)
    try:
        while sb._thread is not None and sb._thread.is_alive():
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        sb.close()


def _start_error(exc: Exception, host: str, port: int) -> click.ClickException:
    """Why the sandbox did not start, naming the option to change."""
    if not isinstance(exc, OSError):  # the history: e.g. too short for an incident
        return click.UsageError(str(exc))
    # A port in use, or one this user may not bind, is the port's fault; anything else (an
    # address that is not this machine's, a name that does not resolve) the host's.
    port_fault = exc.errno in (errno.EADDRINUSE, errno.EACCES)
    advice = (
        "pick another --port (0 = any free port)"
        if port_fault
        else "pick another --host (127.0.0.1 for this machine only, 0.0.0.0 for all)"
    )
    return click.ClickException(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {advice}.")


def _check_folder(path: Path, option: str) -> None:
    """Refuse ``path`` at once (status 2) when its folder is missing or a file: nothing is
    made for it, as ``gwtools export --out`` refuses such a path."""
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        why = f"{folder} is a file, not a folder"
    elif not folder.exists():
        why = f"the folder {folder} does not exist (create it first)"
    else:
        return
    raise click.BadParameter(f"cannot write {path}: {why}; pick another path", param_hint=option)


def _open_key_file(path: Path, created: list[Path]) -> TextIO:
    """The key file, opened before the sandbox starts: a path that cannot be written is
    refused at once, not after the history is generated. A file it makes is added to
    ``created`` (mode 600 from the start); an existing one is not truncated yet, so a sandbox
    that then fails to start leaves its old key as it was."""
    _check_folder(path, "--key-file")
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            created.append(path)
        except FileExistsError:
            fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {path}: {exc.strerror or exc}; pick another path",
            param_hint="--key-file",
        ) from None
    return os.fdopen(fd, "w")
