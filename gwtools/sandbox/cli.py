"""``gwtools sandbox``: serve the sandbox gateway from the command line.

Example::

    gwtools sandbox --variant A --seed-payments 5000 --days 90 --seed 1 --key-file .sandbox-key
    gwtools sandbox --seed-payments 30000 --incident card-testing --incident bank-outage:RHB0218
    python -m gwtools.sandbox --port 0 --no-rate-limit
"""

from __future__ import annotations

import errno
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


@click.command("sandbox")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
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
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SQLite file to keep the sandbox's state in (default: memory only).",
)
@click.option(
    "--latency-ms",
    type=click.FloatRange(0, 120_000),
    default=0,
    show_default=True,
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
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
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
    key_out = _open_key_file(key_file) if key_file is not None else None
    bar = tqdm(
        total=seed_payments,
        unit=" payments",
        disable=not seed_payments,
        leave=False,
        desc=f"Generating a {days}-day history (seed {seed})",
        file=sys.stderr,
    )
    done = 0

    def progress(count: int) -> None:
        nonlocal done
        bar.update(count - done)
        done = count

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
        raise click.BadParameter(
            f"cannot open {db} as the sandbox's SQLite database ({exc}): its folder must exist "
            "and be writable; pick another path",
            param_hint="--db",
        ) from None
    try:
        sb.start()
        bar.close()
    except OSError as exc:
        # A port in use, or one this user may not bind, is the port's fault; anything else
        # (an address that is not this machine's, a name that does not resolve) the host's.
        port_fault = exc.errno in (errno.EADDRINUSE, errno.EACCES)
        advice = (
            "pick another --port (0 = any free port)"
            if port_fault
            else "pick another --host (127.0.0.1 for this machine only, 0.0.0.0 for all)"
        )
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; {advice}."
        ) from None
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


def _open_key_file(path: Path) -> TextIO:
    """The key file, opened (mode 600, its folder made) before the sandbox starts: a path that
    cannot be written is refused at once, not after the history is generated."""
    if path.parent.exists() and not path.parent.is_dir():
        raise click.BadParameter(
            f"cannot write {path}: {path.parent} is a file, not a folder; pick another path",
            param_hint="--key-file",
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Not truncated yet: a sandbox that then fails to start leaves an old key as it was.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {path}: {exc.strerror or exc}; pick another path",
            param_hint="--key-file",
        ) from None
    return os.fdopen(fd, "w")
