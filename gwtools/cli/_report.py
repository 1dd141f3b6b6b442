"""``gwtools report`` and ``gwtools demo``: the analyst notebooks as an HTML report.

Examples::

    gwtools demo                                   # embedded sandbox -> ./gwtools-report/
    GW_API_KEY=… GW_BASE_URL=https://api.example.com gwtools report --out report/ \\
        --since 2024-06-01 --until 2024-06-30 --tz Asia/Kuala_Lumpur
    gwtools report --out report/ --source /data/gwtools          # a synced cache, no network
    gwtools report --out report/ --source spark --spark-path s3a://bucket/gwtools/acct/live
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import shlex
from pathlib import Path
from typing import Any

import click

from gwtools.cli import require_extra
from gwtools.cli._dates import check_date, check_room, check_tz, check_zone
from gwtools.cli._paths import out_dir
from gwtools.cli._source import account_source, check_source_folder, source_advice
from gwtools.cli._sync import (
    _connect,
    _incompleteness_said,
    connection_options,
    exit_incomplete,
    exit_partial,
    gateway_options_given,
    partial_reasons,
    sync_failed,
)


def _check_tz(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from gwtools.analysis import resolve_tz

    check_tz(ctx, param, value)
    check_zone(value)
    try:
        return resolve_tz(value)
    except ValueError as exc:  # GW_TIMEZONE's (check_tz took --tz's), which the message names
        raise click.UsageError(str(exc)) from None


def _check_day(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from gwtools import check_filters

    if value is None:
        return None
    check_date(value, "--until" if param.name == "until" else "--since", whole_days=True)
    try:
        bound = "until" if param.name == "until" else "since"
        check_filters("payments", **{bound: value})  # the library's one check of a date
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    # Room for the day after a last day, and for the weeks and months the tables begin at.
    check_room(value, before=_ROOM_DAYS, after=_ROOM_DAYS)
    return value


def _check_currency(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse, before anything is synced, a ``--currency`` that is no currency code (the
    gateway's are three-letter ISO 4217 codes); whether the payments hold it is the report's
    to say, once they are read, naming those they do."""
    if value is None or (len(value) == 3 and value.isascii() and value.isalpha()):
        return value
    # (empty: `--currency "$CUR"` with CUR unset, not "all currencies")
    what = "is empty" if not value.strip() else "is not a currency code"
    raise click.BadParameter(
        f"{value!r} {what}: give a three-letter ISO 4217 code, e.g. MYR (any "
        "case), or leave --currency out for all currencies (kept apart)",
        param_hint="--currency",  # (as the report's own refusal of a currency names it)
    )


#: Days the report's periods may reach beyond --since/--until (a month's start or end).
_ROOM_DAYS = 31


def _shown(path: Path) -> str:
    """``path`` relative to the working directory when it is below it (shorter, no home dir)."""
    try:
        return f"./{path.resolve().relative_to(Path.cwd().resolve()).as_posix()}"
    except ValueError:
        return str(path)


def _tables_line(files: list[Path]) -> str:
    """How many tables the report saved, and which have no CSV (past a spreadsheet's rows)."""
    stems = sorted({p.stem for p in files})
    with_csv = {p.stem for p in files if p.suffix == ".csv"}
    alone = [s for s in stems if s not in with_csv]
    only = f"; {', '.join(alone)} as Parquet only" if alone else ""
    return f"{len(stems)} table{'' if len(stems) == 1 else 's'} as CSV and Parquet{only}"


def _print_report(report: Any, address: str | None = None) -> None:
    click.echo(f"\nReport written to {_shown(report.out_dir)}/ in {report.seconds:.0f} s")
    click.echo(f"  open {_shown(report.index)}")
    for page in report.html:
        click.echo(f"  {_shown(page)}")
    click.echo(f"  {_tables_line(report.tables)} in {_shown(report.out_dir / 'tables')}/")
    from gwtools.plots import SANDBOX_NOTE

    # The pages name a gateway by scheme and host only; here its whole address, port too.
    data = (dataclasses.replace(report, source=address) if address else report).data
    # "; ", not a parenthesis: the embedded sandbox's own name ends with one
    click.echo(f"\nData: {data}" + (f"; {SANDBOX_NOTE}" if report.sandbox_data else ""))
    if report.coverage:
        click.echo(report.coverage)
    click.echo(str(report.overview))
    if report.sync_problems is not None:
        exit_incomplete("report", "the report", "it", report.sync_problems)
    partial = partial_reasons(report.states)
    if partial:
        exit_partial("report", "the report", partial)


#: The report's options whose bad value is a usage error (status 2), as `gwtools export`'s.
_FILTERS = frozenset({"since", "until", "currency", "tz"})

_report_options = [
    click.option(
        "--since",
        callback=_check_day,
        help="First local day, YYYY-MM-DD, or a date-time (local to --tz if naive) (default: all).",
    ),
    click.option(
        "--until",
        callback=_check_day,
        help="Last local day, inclusive, YYYY-MM-DD, or a date-time (included).",
    ),
    click.option(
        "--tz",
        callback=_check_tz,
        help="Time zone of days and weeks (else GW_TIMEZONE, else UTC), e.g. Asia/Kuala_Lumpur.",
    ),
    click.option(
        "--currency",
        callback=_check_currency,
        help="Keep one currency, e.g. MYR (default: all, kept apart).",
    ),
]


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    required=True,
    callback=out_dir,
    help="Directory for the HTML pages, index.html and tables/.",
)
@_report_options[0]
@_report_options[1]
@_report_options[2]
@_report_options[3]
@click.option(
    "--source",
    default="gateway",
    show_default=True,
    help="Where the data comes from: 'gateway' (sync the configured gateway, or the embedded "
    "sandbox, then read its cache); a synced cache folder or URL (s3://…), read as it is with "
    "nothing synced; or 'spark' (each notebook reads --spark-path with a Spark session).",
)
@click.option(
    "--spark-master",
    help="With --source spark: the cluster's master URL, e.g. spark://head:7077 "
    "(default: local[2]).",
)
@click.option(
    "--spark-path",
    help="With --source spark: the folder holding payments/ and refunds/ "
    "(default: the gateway's cache, synced first).",
)
@connection_options
def report(
    out: Path,
    since: str | None,
    until: str | None,
    tz: str | None,
    currency: str | None,
    source: str,
    spark_master: str | None,
    spark_path: str | None,
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
) -> None:
    """Run the analyst notebooks against the gateway; write HTML and CSV/Parquet tables.

    Exits with status 3 when the sync before it is incomplete, or the data it read is known
    partial (a cache whose last sync was incomplete): the report is written, and says so.
    """
    require_extra("report", "gwtools report")
    from gwtools import ConfigurationError, GatewayError
    from gwtools.report import ReportError, named_source, run_report

    _check_window(since, until, tz)
    # "GATEWAY" or "Spark " is the name, as the library reads it; a near miss ("gatway") is
    # left to the folder check below, which says it in flags.
    with contextlib.suppress(ConfigurationError):
        source = named_source(source)
    if source == "spark":  # each notebook's kernel reads with Spark
        require_extra("spark", "gwtools report --source spark")
    # (is not None: an empty `--spark-path "$P"` is a value given, not one left out)
    if source != "spark" and (spark_master is not None or spark_path is not None):
        raise click.BadParameter("--spark-master/--spark-path need --source spark")
    needs_gateway = source == "gateway" or (source == "spark" and spark_path is None)
    if not needs_gateway and gateway_options_given(api_key_file, base_url, cache_dir):
        # as gwtools export: options that choose a gateway's cache would be ignored
        raise click.BadParameter(
            f"--source {'spark with --spark-path' if source == 'spark' else source!r} reads "
            "that data as it is: leave out --api-key-file, --base-url and --cache-dir",
            param_hint="--source",
        )
    if not needs_gateway and source != "spark":
        likely = difflib.get_close_matches(source.strip().lower(), _NAMES, n=1, cutoff=0.75)
        also = f"; did you mean --source {likely[0]}?" if likely else ""
        check_source_folder(source, f"or leave --source out (--source gateway){also}")
        _probe(source, account)  # which accounts and modes it holds, said in these flags
    if not needs_gateway and account:
        if source == "spark":
            raise click.BadParameter(
                "--account chooses among a cache's accounts; with --source spark, give "
                "--spark-path the account's folder of payments/ and refunds/ instead",
                param_hint="--account",
            )
        # An account's folder is a source of its own (as `gwtools export --source` reads it).
        source = account_source(source, account)
    gw = (
        _connect(api_key_file, base_url, cache_dir, account, progress=False)
        if needs_gateway
        else None
    )
    try:
        with _incompleteness_said():  # said by the summary and the exit status, not twice
            result = run_report(
                out,
                since=since,
                until=until,
                tz=tz,
                currency=currency,
                gateway=gw,
                source=None if source == "gateway" else source,
                spark_master=spark_master,
                spark_path=spark_path,
            )
    except ConfigurationError as exc:
        if exc.param in _FILTERS:  # a bad option value: a usage error, as in `gwtools export`
            raise click.BadParameter(str(exc), param_hint=f"--{exc.param}") from None
        raise click.ClickException(str(exc)) from None
    except GatewayError as exc:
        if gw is None:
            raise click.ClickException(str(exc)) from None
        instead = (
            f"give --source {gw.cache_path} to report what the last sync cached, as it is, "
            "contacting nothing (and leave out --api-key-file, --base-url and --cache-dir)"
        )
        said = sync_failed(exc, gw.cache_path, "payments", "report", instead)
        raise click.ClickException(said) from None
    except ReportError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if gw is not None:
            gw.close()
    _print_report(result, _address(gw))


def _check_window(since: str | None, until: str | None, tz: str | None) -> None:
    """Refuse ``--since`` after ``--until`` before anything is synced or read, in the options'
    words, by the library's own rule (:func:`gwtools.analysis.between`'s, which the report's
    tables are cut with: days are whole local days in ``tz``), asked of a table with no row."""
    import pandas as pd

    from gwtools import ConfigurationError
    from gwtools.analysis import between

    if since is None or until is None:
        return
    no_rows = pd.DataFrame({"created_at": pd.Series([], dtype="datetime64[us, UTC]")})
    try:
        between(no_rows, since, until, tz=tz)
    except ConfigurationError as exc:
        if exc.param != "since":
            raise click.BadParameter(str(exc), param_hint=f"--{exc.param}") from None
        raise click.BadParameter(
            f"--since={shlex.quote(since)} is after --until={shlex.quote(until)} (a date as "
            "--until takes that whole day, in --tz's time), so no payment can match: swap "
            "them, or move one",
            param_hint="--since",
        ) from None


#: The --source values that are names, not folders.
_NAMES = ("gateway", "spark")


def _probe(source: str, account: str | None) -> None:
    """Find the payments a report on ``source`` (with ``--account``) reads, before anything
    runs: a folder holding several accounts or modes, or not the account given, is refused
    with the flags that pick one (the report reads ``{source}/{account}``, whose absence would
    otherwise read as "no cache there")."""
    from gwtools import GatewayError, scan_cache

    try:
        with _incompleteness_said():  # a partial cache is said after the report, not here
            scan_cache(source, "payments", account=account)
    except (GatewayError, ValueError) as exc:
        advice = source_advice(exc, source, "report", account)
        if advice is not None:
            raise click.ClickException(advice) from None
        # anything else (no cache in that folder, say) is the report's own to say


def _address(gw: Any) -> str | None:
    """The gateway a report synced, as scheme, host and port (no path, key or user); None for
    the embedded sandbox (its summary says "sandbox data") or no gateway."""
    from urllib.parse import urlsplit

    if gw is None or gw.settings.embedded:
        return None
    parts = urlsplit(gw.settings.base_url)
    if not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def _demo_tz(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
    """``--tz`` of the demo: the value given, else GW_TIMEZONE's (a bad one named as the
    variable's, where it was set), else Malaysia time."""
    if value is None and not os.environ.get("GW_TIMEZONE", "").strip():
        return _DEMO_TZ
    return _check_tz(ctx, param, value) or _DEMO_TZ


#: The demo history's own zone: its FPX banks and business days are Malaysian.
_DEMO_TZ = "Asia/Kuala_Lumpur"


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=Path("gwtools-report"),
    callback=out_dir,
    show_default=True,
    help="Directory for the report.",
)
@click.option(
    "--tz",
    callback=_demo_tz,
    show_default="GW_TIMEZONE, else Asia/Kuala_Lumpur",
    help="Time zone of days and weeks.",
)
def demo(out: Path, tz: str) -> None:
    """Start the embedded sandbox, sync its demo history, write the report and summarise it."""
    require_extra(("report", "sandbox"), "gwtools demo")
    from gwtools import connect
    from gwtools.report import ReportError, quiet_embedded_notice, run_report

    click.echo("Starting the embedded sandbox with its demo history (no key, no network needed)…")
    # Whatever GW_API_KEY/GW_BASE_URL say: the demo is the sandbox's. Its notice names a
    # loopback port; the report's summary says "sandbox data" instead.
    with quiet_embedded_notice():
        gw = connect(embedded=True, progress=False)
    try:
        click.echo("Syncing, then running the six notebooks (about a minute on 2 cores)…")
        result = run_report(out, tz=tz, gateway=gw)
    except ReportError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        gw.close()
    _print_report(result)
