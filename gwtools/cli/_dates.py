"""Dates the commands are given, checked for room on the calendar before any work starts.

A date the library reads well may still leave no room for what a command computes from it:
the day after a last day (``--until 9999-12-31``), a baseline of weeks before a window
(``monitor --since 0001-01-05``). Python's calendar ends at years 1 and 9999, so such a date
would fail half-way with "year 10000 is out of range", naming no option. This check refuses it
first, as a usage error naming the option.
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from typing import Any

import click

#: Room kept beyond what a command asks for: a time zone moves a local day by up to 26 hours.
_SLACK_DAYS = 2

#: A year or month alone (2026, 2026-10), which the analyses refuse where they take days (they
#: would read it as its first day); refused here first, in the options' words. The CLI keeps
#: to the public API, so the pattern is the CLI's; a test holds both to the same values.
_YEAR_OR_MONTH = re.compile(r"\s*\d{4}(-\d{1,2})?\s*")

#: What a date option takes, as its errors say it.
ACCEPTED = (
    "give a date, YYYY-MM-DD, or an ISO 8601 date-time, YYYY-MM-DDTHH:MM[:SS][+HH:MM], e.g. "
    "2024-05-01 or 2024-05-01T08:00:00+08:00"
)


#: The forms a date option takes: ``YYYY-MM-DD`` (a year or month alone too, as ``export``
#: takes them), with a time ``HH:MM[:SS[.fraction]]`` after ``T`` or a space and a zone.
_ISO = re.compile(
    r"\d{4}(-\d{2}(-\d{2}([T ]\d{2}:\d{2}(:\d{2}([.,]\d+)?)?"
    r" ?(Z|UTC|[+-]\d{2}(:?\d{2})?)?)?)?)?",
    re.IGNORECASE,
)


def check_date(
    value: str, option: str, param_hint: str | None = None, *, whole_days: bool = False
) -> None:
    """Refuse ``value`` of ``option`` (``--since``, ``--until``) when it is not a date or
    date-time, as a usage error that names the option as it was typed (``--since=2026-13-01``)
    and says what is accepted; the library reads every value this lets through.
    ``param_hint``: click's (None: the option of the callback it is raised in).
    ``whole_days``: the option is a first or last day (the analyses' windows), so a year or
    month alone is refused, as the analyses refuse it, before any sync."""
    import pandas as pd

    typed = f"{option}={shlex.quote(value)}"
    if not value.strip():
        raise click.BadParameter(
            f"{typed} is empty: {ACCEPTED}, or leave {option} out", param_hint=param_hint
        )
    if whole_days and _YEAR_OR_MONTH.fullmatch(value):
        raise click.BadParameter(
            f"{typed} is a year or month, not a day: give days, e.g. --since 2026-10-01 "
            "--until 2026-10-31 for October (both whole local days)",
            param_hint=param_hint,
        )
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError, OverflowError) as exc:
        # pandas' reason when it has one worth reading ("month must be in 1..12"), without
        # the value it repeats; "Unknown datetime string format" says no more than we do.
        why = str(exc).removesuffix(f": {value}")
        said = "" if not why or why.startswith("Unknown datetime string") else f" ({why})"
        raise click.BadParameter(
            f"{typed} is not a date or time{said}; {ACCEPTED}", param_hint=param_hint
        ) from None
    if pd.isna(stamp):  # "NaT", "nan": pandas reads them as no time at all
        raise click.BadParameter(
            f"{typed} is not a date or time; {ACCEPTED}", param_hint=param_hint
        )
    if not _ISO.fullmatch(value.strip()):
        # pandas guesses ("1/11/2026" month first: 11 January; "today": this very second)
        raise click.BadParameter(
            f"{typed} is not in ISO 8601 form (it could be read as {stamp:%Y-%m-%d %H:%M}, "
            f"which may not be the day meant); {ACCEPTED}",
            param_hint=param_hint,
        )


def check_tz(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Click callback of ``--tz``: refuse an empty value (``--tz "$ZONE"`` with the variable
    unset), which the library would take for no zone given (GW_TIMEZONE, else the default)."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            f"--tz={shlex.quote(value)} is empty: give an IANA time zone name, e.g. "
            "Asia/Kuala_Lumpur or UTC, or leave --tz out (GW_TIMEZONE, else the default)",
        )
    return value


def check_zone(value: str | None) -> None:
    """Refuse a ``--tz`` the IANA database does not know, as a usage error naming ``--tz``
    (before the cache is read, and naming the option rather than the library's ``tz=``)."""
    from gwtools.analysis import resolve_tz

    if value is not None:
        try:
            resolve_tz(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--tz'") from None


def not_before(since: str, until: str) -> str:
    """Why ``gwtools export --since`` (naive: UTC) is refused for not being before ``--until``,
    which is exclusive, in the options' words."""
    import pandas as pd

    lo, hi = (pd.Timestamp(v) for v in (since, until))
    lo, hi = (t.tz_convert("UTC") if t.tzinfo else t.tz_localize("UTC") for t in (lo, hi))
    how = "after" if lo > hi else "the same time as"
    # the example is --since's own day (in UTC, as a naive --until is read); none after the
    # calendar's last day
    first = lo.to_pydatetime().date()
    example = (
        f" (--until {first + dt.timedelta(days=1)} takes all of {first} (UTC))"
        if first < dt.date.max
        else ""
    )
    return (
        f"--since={shlex.quote(since)} is {how} --until={shlex.quote(until)} "
        f"({minute(lo.to_pydatetime())}:{lo.second:02d} and {minute(hi.to_pydatetime())}:"
        f"{hi.second:02d} UTC), so no row can match: rows are taken from --since up to, not "
        f"including, --until; swap them, or move --until later{example}"
    )


def check_room(
    value: Any, option: str | None = None, *, before: float = 1, after: float = 1
) -> None:
    """Refuse ``value`` (a date or date-time the library accepts) when ``before`` days before
    it or ``after`` days after it fall off the calendar, as a usage error naming ``option``
    (None: the option of the click callback it is raised in). A value that is not a date at
    all is left to the library's check, which says why."""
    import pandas as pd

    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError, OverflowError):
        return
    if pd.isna(stamp):
        return
    moment = stamp.to_pydatetime().replace(tzinfo=None)
    first = dt.datetime.min + dt.timedelta(days=before + _SLACK_DAYS)
    last = dt.datetime.max - dt.timedelta(days=after + _SLACK_DAYS)
    if first <= moment <= last:
        return
    days = before if moment < first else after
    span = "day" if days == 1 else f"{days:g} days"
    needs = f"the {span} {'before' if moment < first else 'after'} it"
    raise click.BadParameter(
        f"{value!r} leaves no room on the calendar for {needs} (years 1 to 9999 only); give a "
        f"date from {day(first)} to {day(last)}, or check the year for a typo",
        param_hint=option,
    )


def day(moment: dt.datetime) -> str:
    """``YYYY-MM-DD``, four-digit year included (``%Y`` gives ``1`` for year 1 on Linux)."""
    return f"{moment.year:04d}-{moment:%m-%d}"


def minute(moment: dt.datetime) -> str:
    """``YYYY-MM-DD HH:MM``, as :func:`day` writes the date."""
    return f"{day(moment)} {moment:%H:%M}"


def created_span(table: Any, *where: Any) -> tuple[int, Any, Any]:
    """How many rows a cached table (pandas or lazy) holds, with ``where`` (Narwhals
    expressions) if given, and its first and last ``created_at`` (None when it holds none):
    one query, for the commands that say what a cache holds when nothing matched."""
    import narwhals as nw

    lf = nw.from_native(table)
    if not isinstance(lf, nw.LazyFrame):
        lf = lf.lazy()
    if where:
        lf = lf.filter(*where)
    col = nw.col("created_at")
    span = lf.select(nw.len().alias("n"), col.min().alias("a"), col.max().alias("b")).collect()
    return int(span["n"].item()), span["a"].item(), span["b"].item()
