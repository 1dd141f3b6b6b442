"""The sandbox clock: the time every sandbox rule (expiry, delays, key grace, retries) reads.

Two modes. Frozen (``Clock(now=...)``): time stands still until the admin API sets or
advances it, so notebooks and tests are reproducible. Following (``Clock()``): real time
plus an offset that ``advance`` grows, like a real gateway with a time machine.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Final

#: Seconds in a day of the sandbox clock (UTC: no clock changes).
DAY: Final = 86_400

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: The instants the sandbox clock may show. Everything the sandbox computes from its clock
#: (card expiry years, business days, retry schedules, ISO timestamps) works well inside this
#: range, and so do its clients (pandas' nanosecond timestamps end in 2262).
EARLIEST: Final = 946_684_800.0  # 2000-01-01T00:00:00Z
LATEST: Final = 4_102_444_800.0  # 2100-01-01T00:00:00Z
RANGE_TEXT: Final = "2000-01-01T00:00:00Z to 2100-01-01T00:00:00Z (Unix 946684800 to 4102444800)"


class ClockRangeError(ValueError):
    """The clock was asked to move outside :data:`EARLIEST`..:data:`LATEST`; nothing changed."""


def to_datetime(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def parse_instant(value: str | int | float) -> float:
    """ISO 8601 (naive = UTC, ``Z`` allowed) or Unix seconds -> Unix seconds; ValueError if neither."""
    if isinstance(value, bool):
        raise ValueError("not a timestamp")
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    if text.lstrip("-").isdigit():
        return float(int(text))
    # RFC 3339 allows lower-case "t" and "z"; fromisoformat wants them upper case
    dt = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    # subtracting the epoch works for every year, where .timestamp() can overflow
    return (dt - EPOCH).total_seconds()


def iso(ts: float) -> str:
    """Unix seconds -> ISO 8601 UTC with ``Z`` and whole seconds (variant A's timestamp format)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(ts)))


class Clock:
    """Sandbox time in Unix seconds.

    >>> clock = Clock(datetime(2026, 1, 1, tzinfo=UTC))
    >>> clock.advance(30); clock.iso()
    '2026-01-01T00:00:30Z'
    """

    def __init__(self, now: datetime | float | None = None) -> None:
        self._lock = threading.Lock()
        self.frozen = now is not None
        if now is None:
            self._base = 0.0
            return
        if isinstance(now, datetime):
            if now.tzinfo is None:
                now = now.replace(tzinfo=UTC)
            now = (now - EPOCH).total_seconds()
        self._base = _in_range(float(now), "The sandbox clock's start")

    def now(self) -> float:
        if self.frozen:
            return self._base
        return time.time() + self._base

    def iso(self) -> str:
        return iso(self.now())

    def set(self, ts: float) -> None:
        """Show ``ts`` from now on; :class:`ClockRangeError` outside the allowed range."""
        _in_range(ts, "The sandbox clock")
        with self._lock:
            self._base = ts if self.frozen else ts - time.time()

    def advance(self, seconds: float) -> None:
        """Move ``seconds`` (>= 0) ahead; :class:`ClockRangeError` if that passes :data:`LATEST`."""
        with self._lock:
            room = LATEST - self.now()
            if not 0 <= seconds <= room:
                raise ClockRangeError(
                    f"seconds must be between 0 and {int(max(room, 0))}: the sandbox clock is at "
                    f"{self.iso()} and may move within {RANGE_TEXT}; got {seconds!r}."
                )
            self._base += seconds

    def describe(self) -> dict[str, object]:
        now = self.now()
        return {"now": iso(now), "unix": int(now), "frozen": self.frozen}


def _in_range(ts: float, what: str) -> float:
    # ``not a <= x <= b`` also refuses NaN
    if not EARLIEST <= ts <= LATEST:
        raise ClockRangeError(f"{what} must be within {RANGE_TEXT}; got Unix {ts!r}.")
    return ts
