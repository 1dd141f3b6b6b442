"""``gwtools monitor`` and ``gwtools check``: alerts and data-quality rules on the cache.

Both read the cache as ``gwtools export --no-refresh`` does (nothing is contacted or started;
run ``gwtools sync`` first) and exit 1 when something needs a look, so a cron job or CI step
can act on them, and 2 when they could not look (nothing cached, a bad value)::

    gwtools sync && gwtools monitor --tz Asia/Kuala_Lumpur || notify "payments need a look"
    gwtools check --json > quality.json
"""

from __future__ import annotations

import contextlib
import json
import math
import shlex
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import click

from gwtools.cli import AnswersInJson, error_line
from gwtools.cli._dates import (
    check_date,
    check_room,
    check_tz,
    check_zone,
    created_span,
    minute,
)
from gwtools.cli._sync import (
    _cached_folder,
    _incompleteness_said,
    _scan_cache,
    connection_options,
    exit_partial,
    partial_reasons,
)

if TYPE_CHECKING:
    pass


class CannotCheck(click.ClickException):
    """A check that could not run (nothing cached, a bad value, an unreadable cache): exit
    status 2, since 1 says that something needs a look."""

    exit_code = 2


@contextlib.contextmanager
def _cannot_check() -> Iterator[None]:
    """Whatever stops a check, as :class:`CannotCheck`: one line, exit status 2."""
    try:
        yield
    except click.BadParameter as exc:  # a value checked before the cache is read
        raise CannotCheck(exc.format_message()) from None
    except click.ClickException as exc:  # the shared helpers' (nothing cached): status 1
        if exc.exit_code != 1:
            raise
        raise CannotCheck(exc.message) from None
    except ValueError as exc:  # an analysis's refusal (a ConfigurationError, or pandas')
        raise CannotCheck(str(exc)) from None
    except Exception as exc:
        line = error_line(exc)
        if line is None:
            raise
        raise CannotCheck(line) from None


def _tables(
    api_key_file: str | None, base_url: str | None, cache_dir: str | None, account: str | None
) -> tuple[Any, Any]:
    payments = _scan_cache("payments", api_key_file, base_url, cache_dir, account)
    refunds = _scan_cache("refunds", api_key_file, base_url, cache_dir, account)
    return payments, refunds


def _states(
    api_key_file: str | None, base_url: str | None, cache_dir: str | None, account: str | None
) -> dict[str, Any]:
    """Each dataset's ``_state.json`` (what the last sync reported about itself)."""
    import gwtools

    folder = _cached_folder("payments", api_key_file, base_url, cache_dir, account)
    return {r: gwtools.cache_state(folder, r) for r in ("payments", "refunds")}


def _check_baseline(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """Refuse NaN, which click's FloatRange lets through (no comparison with NaN is true)."""
    if math.isnan(value):
        raise click.BadParameter(f"{value} is not a number: give days, 1 to 3650")
    return value


def _tz_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--tz``; ``help`` says what the zone moves in this command."""
    return click.option("--tz", default=None, callback=check_tz, help=help)


@click.command(cls=AnswersInJson)
@click.option(
    "--since",
    help="Start of the monitored window (date or date-time); default: 7 days before the "
    "newest cached row.",
)
@click.option("--until", help="End of the monitored window; default: the newest cached row.")
@click.option(
    "--baseline-days",
    type=click.FloatRange(1, 3650),
    default=28,
    show_default=True,
    callback=_check_baseline,
    help="Days before the window that form the baseline.",
)
@_tz_option(
    "Time zone of days and hours (else GW_TIMEZONE, else UTC); FPX outages are always in "
    "Malaysia time."
)
@click.option("--json", "as_json", is_flag=True, help="Print the alerts as a JSON array.")
@connection_options
def monitor(
    since: str | None,
    until: str | None,
    baseline_days: float,
    tz: str | None,
    as_json: bool,
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
) -> None:
    """Print alerts (decline spike, card testing, FPX bank outage, refund spike); exit 1 if any,
    2 if it cannot check (nothing cached, a bad value, no payments in the window), 3 if there
    are none but the cache is known partial (its last sync incomplete)."""
    from gwtools import ConfigurationError, analysis
    from gwtools.analysis import resolve_tz

    with _cannot_check():
        check_zone(tz)  # before the cache is read
        # Room before --since for the baseline (and the default window before --until).
        default_days = 0 if since is not None else _WINDOW_DAYS
        for option, value, before in (("--since", since, 0), ("--until", until, default_days)):
            if value is not None:
                check_date(value, option, option, whole_days=True)  # named as typed
                check_room(value, option, before=before + baseline_days, after=1)
        with _incompleteness_said():  # said below (and by the exit status), not twice
            payments, refunds = _tables(api_key_file, base_url, cache_dir, account)
            try:
                alerts = analysis.monitor(
                    payments, refunds, since=since, until=until, baseline_days=baseline_days,
                    tz=tz,
                )  # fmt: skip
            except ConfigurationError as exc:
                if exc.param != "since" or since is None:  # the window's bounds: said below
                    raise
                raise CannotCheck(_not_before(since, until, payments, refunds)) from None
        partial = partial_reasons(_states(api_key_file, base_url, cache_dir, account))
        if alerts.empty:
            _refuse_an_empty_window(payments, alerts.attrs.get("window") or {})
    zone = resolve_tz(tz)
    if as_json:
        records = json.loads(alerts.to_json(orient="records", date_format="iso"))
        for record, (_, row) in zip(records, alerts.iterrows(), strict=True):
            record["start"], record["end"] = row["start"].isoformat(), row["end"].isoformat()
        click.echo(json.dumps(records, indent=2))
        if alerts.empty and (alerts.attrs.get("window") or {}).get("baseline_empty"):
            # [] is no clean bill of health without a baseline: said beside the JSON
            click.echo(f"gwtools monitor: {analysis.describe_alerts(alerts, zone)}", err=True)
    else:
        if alerts.empty:
            # The window and its baseline in --tz's time, as the notebooks and reports say
            # it, and that spikes could not be looked for when the baseline is empty.
            click.echo(analysis.describe_alerts(alerts, zone))
        # Alerts are in --tz, which each line names: an unnamed time reads as any zone.
        for _, a in alerts.iterrows():
            click.echo(
                f"[{a['severity']}] {a['kind']} {a['scope']} {a['start']:%Y-%m-%d %H:%M} to "
                f"{a['end']:%Y-%m-%d %H:%M} {zone}: {a['explanation']}"
            )
    if not alerts.empty:  # alerts come first: 1 (a look is needed) even on partial data
        if partial:
            click.echo(f"gwtools monitor: {'; '.join(partial)}: rows may be missing", err=True)
        raise SystemExit(1)
    if partial:  # "No alerts" on partial data is no clean bill of health
        exit_partial("monitor", "the monitored window", partial)


#: The default monitored window: the days before --until (analysis.monitor's ``days``).
_WINDOW_DAYS = 7


def _not_before(since: str, until: str | None, payments: Any, refunds: Any) -> str:
    """Why a monitored window that ends before it starts cannot be checked, in the options'
    words: --since against --until, or against the newest cached row the window ends at."""
    if until is not None:
        return (
            f"--since={shlex.quote(since)} is not before --until={shlex.quote(until)} (a date "
            "as --until takes that whole day, in --tz's time): swap them, or move one"
        )
    newest = [created_span(t)[2] for t in (payments, refunds)]
    newest = [m for m in newest if m is not None]
    last = f" ({minute(max(newest))} UTC)" if newest else ""
    return (
        f"--since={shlex.quote(since)} is not before the newest cached row{last}, where the "
        "window ends without --until: give an earlier --since, or --until too"
    )


def _refuse_an_empty_window(payments: Any, window: dict[str, Any]) -> None:
    """No payments in the window: it cannot tell anything (a mistyped year looks like a quiet
    week), so it cannot check: say what the cache holds instead."""
    import narwhals as nw

    if not window:  # nothing cached at all
        raise CannotCheck("no payments cached: nothing to monitor; run gwtools sync first")
    col = nw.col("created_at")
    if created_span(payments, col >= window["since"], col <= window["until"])[0] > 0:
        return
    _, first, last = created_span(payments)
    held = (
        f"the cache holds payments from {minute(first)} to {minute(last)} UTC"
        if first is not None
        else "the cache holds no payments"
    )
    raise CannotCheck(
        f"no payments between {minute(window['since'])} and {minute(window['until'])} UTC, so "
        f"there is nothing to monitor; {held}: check --since and --until"
    )


@click.command(cls=AnswersInJson)
@_tz_option(
    "Time zone whose clock hours the no_hourly_holes rule counts (else GW_TIMEZONE, else UTC)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the rules as a JSON array.")
@connection_options
def check(
    tz: str | None,
    as_json: bool,
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
) -> None:
    """Check the cached data against the quality rules; exit 1 if a rule fails, 2 if it
    cannot check."""
    from gwtools import analysis
    from gwtools.analysis import resolve_tz

    with _cannot_check():
        check_zone(tz)  # before the cache is read
        payments, refunds = _tables(api_key_file, base_url, cache_dir, account)
        states = _states(api_key_file, base_url, cache_dir, account)
        table = analysis.quality(payments, refunds, completeness=states, tz=resolve_tz(tz))
    if as_json:
        click.echo(json.dumps(json.loads(table.to_json(orient="records")), indent=2))
    else:
        for _, rule in table.iterrows():
            mark = "ok  " if rule["ok"] else "FAIL"
            line = f"{mark} {rule['rule']}: {rule['count']} of {rule['checked']}"
            if not rule["ok"]:
                line += f" (e.g. {', '.join(rule['examples'])})"
            click.echo(line)
    if not table["ok"].all():
        raise SystemExit(1)
