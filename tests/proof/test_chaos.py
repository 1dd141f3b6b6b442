"""Chaos suite: under each fault users report, and in both variants, two syncs end equal to a
fresh full fetch, or every sync said it was incomplete (benchmarks/chaos.py, smaller).

Each case runs on a private sandbox (rate limits off) with a fresh account: a 150-payment
history, payments made at the sandbox's "now", a first sync under the fault, activity
(captures, refunds, new payments, time passing), and a second sync under the fault.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

import benchmarks.chaos as chaos
from benchmarks.chaos import FAULTS, NOW, run_case
from gwtools.sandbox import Sandbox


@pytest.fixture(scope="module", params=["A", "B"])
def chaos_sandbox(request: pytest.FixtureRequest) -> Iterator[Sandbox]:
    with Sandbox(request.param, rate_limits=False, now=NOW) as sb:
        yield sb


@pytest.mark.parametrize("fault", list(FAULTS))
def test_two_syncs_are_complete_or_say_they_are_not(
    chaos_sandbox: Sandbox, fault: str, tmp_path: Path
) -> None:
    case = run_case(chaos_sandbox, fault, payments=150, seed=3, workdir=tmp_path)
    assert case.rows > 150
    assert case.ok, case
    # Stronger than the rule: a sync that calls itself complete has lost nothing.
    assert not case.silent_loss, case
    # These faults are repaired within the sync (pages fetched again, bodies retried), so
    # the syncs do not even need to say they were incomplete.
    assert case.lost == case.phantom == 0, case


def test_the_comparison_is_not_vacuous(
    chaos_sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row missing from the cache behind the syncs' back counts as lost, in a cell whose
    syncs both said they were complete: a silent loss, not ok."""
    real = chaos._rows
    calls: list[int] = []

    def rows_but_one_cached(frame: pd.DataFrame) -> dict[str, tuple[str, ...]]:
        out = real(frame)
        calls.append(1)
        if len(calls) % 3 == 2:  # per resource: reference, cache, after
            out.pop(next(iter(out)))
        return out

    monkeypatch.setattr(chaos, "_rows", rows_but_one_cached)
    case = chaos.run_case(chaos_sandbox, "none", payments=50, seed=3, workdir=tmp_path)
    assert case.lost == 2 and case.flagged == [False, False]
    assert not case.ok and case.silent_loss
