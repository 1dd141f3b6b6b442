"""Dates the commands are given, checked for room on the calendar before any work starts.

A date the library reads well may still leave no room for what a command computes from it:
the day after a last day (``--until 9999-12-31``), a baseline of weeks before a window
(``monitor --since 0001-01-05``). Python's calendar ends at years 1 and 9999, so such a date
would fail half-way with "year 10000 is out of range", naming no option. This check refuses it
first, as a usage error naming the option.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

#: Room kept beyond what a command asks for: a time zone moves a local day by up to 26 hours.
_SLACK_DAYS = 2


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
