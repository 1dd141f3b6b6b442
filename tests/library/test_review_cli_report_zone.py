"""``gwtools report``'s summary names the time zone of the local days its date span is in."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gwtools.cli import main
from gwtools.cli._report import _print_report
from gwtools.report import run_report
from tests.library.test_cli import NO_KEY, SAMPLE

#: The sample's payments run from 2026-08-22 12:28 to 2026-11-20 11:59 UTC: in Kiritimati
#: (UTC+14) those are other days, so a line that names the zone must also be in it.
FAR_EAST = "Pacific/Kiritimati"


def _coverage_line(output: str) -> str:
    return next(ln for ln in output.splitlines() if ln.startswith("payments created "))


@pytest.mark.parametrize(
    ("zone", "span"),
    [("UTC", "2026-08-22 to 2026-11-20"), (FAR_EAST, "2026-08-23 to 2026-11-21")],
)
def test_the_summary_names_the_zone_of_its_days(
    zone: str, span: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The report as the command gets it (its notebooks left out here: the slow test runs them)
    result = run_report(tmp_path / "report", source=str(SAMPLE), tz=zone, notebooks=())
    _print_report(result, zone)
    line = _coverage_line(capsys.readouterr().out)
    assert line.startswith(f"payments created {span} {zone}; last sync "), line
    assert line.endswith("UTC, complete"), line


@pytest.mark.slow
def test_report_without_tz_names_the_default_zone(tmp_path: Path) -> None:
    runner = CliRunner()
    # no --tz: GW_TIMEZONE's zone is the report's, and the line says which
    env = {**NO_KEY, "GW_TIMEZONE": FAR_EAST}
    args = ["report", "--out", str(tmp_path / "r"), "--source", str(SAMPLE)]
    result = runner.invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    assert _coverage_line(result.output).startswith(
        f"payments created 2026-08-23 to 2026-11-21 {FAR_EAST}; "
    ), result.output
