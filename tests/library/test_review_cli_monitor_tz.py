"""``gwtools monitor``'s alert lines name the time zone their times are in."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gwtools.cli import main
from tests.library.test_cli_monitor import _cache


def test_alert_lines_name_their_time_zone(tmp_path: Path) -> None:
    """The window line says UTC while alerts are in --tz: each alert must say which."""
    env = _cache(tmp_path, ["card-testing"])
    result = CliRunner().invoke(
        main, ["monitor", "--account", "cli", "--tz", "Asia/Kuala_Lumpur"], env=env
    )
    assert result.exit_code == 1, result.output
    line = next(ln for ln in result.output.splitlines() if "card_testing" in ln)
    assert " Asia/Kuala_Lumpur: " in line, line
