"""Dates given to the library the way a notebook types them: a day/month form that pandas
would guess month first ("01/10/2026" is 10 January to pandas, 1 October to most of the world),
NaT, a NumPy datetime64.

A guessed form is refused by every entry point that takes a date (read_cache, scan_cache, the
Gateway's reads, between, monitor, pending_refunds), naming the argument, the day pandas would
have read and the ISO form to use, as the CLI's date options refuse it. NaT is not a bound that
silently matches nothing. NumPy's datetime64 is a time wherever a date is taken.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import gwtools
from gwtools import analysis as a

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample-cache"
KEY = "sk_" + "test_" + "a" * 24  # built at run time: no key literal in the source


@pytest.fixture(scope="module")
def payments() -> pd.DataFrame:
    return gwtools.read_cache(SAMPLE, "payments")


def _gateway(tmp_path: Path) -> gwtools.Gateway:
    """A gateway on a closed port: nothing listens, and nothing is sent before a sync."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    return gwtools.connect(KEY, url, cache_dir=tmp_path)


WITH_DATE: dict[str, Callable[[Any, pd.DataFrame, Path], Any]] = {
    "read_cache.since": lambda v, p, t: gwtools.read_cache(SAMPLE, "payments", since=v),
    "read_cache.until": lambda v, p, t: gwtools.read_cache(SAMPLE, "refunds", until=v),
    "scan_cache.since": lambda v, p, t: gwtools.scan_cache(SAMPLE, "payments", since=v),
    "Gateway.payments.since": lambda v, p, t: _gateway(t).payments(since=v, refresh=False),
    "Gateway.iter_refunds.until": lambda v, p, t: _gateway(t).iter_refunds(until=v),
    "between.since": lambda v, p, t: a.between(p, v),
    "between.until": lambda v, p, t: a.between(p, until=v),
    "monitor.since": lambda v, p, t: a.monitor(p, since=v),
    "monitor.until": lambda v, p, t: a.monitor(p, until=v),
    "pending_refunds.now": lambda v, p, t: a.pending_refunds(p, gwtools.empty_refunds(), now=v),
}


@pytest.mark.parametrize("value", ["01/10/2026", "1/11/2026", "01-10-2026", "1.10.2026 08:00"])
@pytest.mark.parametrize("where", WITH_DATE)
def test_a_day_month_form_pandas_would_guess_is_refused(
    payments: pd.DataFrame, tmp_path: Path, where: str, value: str
) -> None:
    with pytest.raises(gwtools.ConfigurationError) as info:
        WITH_DATE[where](value, payments, tmp_path)
    param = where.rsplit(".", 1)[1]
    message = str(info.value)
    assert info.value.param == param, message
    assert f"{param}={value!r}" in message
    guessed = pd.Timestamp(value)
    assert f"{guessed:%Y-%m-%d}" in message and "YYYY-MM-DD" in message


@pytest.mark.parametrize("where", WITH_DATE)
def test_nat_is_not_a_date(payments: pd.DataFrame, tmp_path: Path, where: str) -> None:
    # between(payments, pd.NaT) once returned no row at all, as if nothing matched.
    with pytest.raises(gwtools.ConfigurationError) as info:
        WITH_DATE[where](pd.NaT, payments, tmp_path)
    assert info.value.param == where.rsplit(".", 1)[1]


def test_iso_forms_and_numpy_datetimes_are_read(payments: pd.DataFrame) -> None:
    day = "2026-10-01"
    want = len(a.between(payments, day))
    assert 0 < want < len(payments)
    for value in ("2026-10-01", " 2026-10-01 ", np.datetime64(day), pd.Timestamp(day)):
        assert len(a.between(payments, value)) == want, repr(value)
        assert len(gwtools.read_cache(SAMPLE, "payments", since=value)) == want, repr(value)
