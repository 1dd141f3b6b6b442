"""Date options of every command that takes them (``export``, ``report``, ``monitor``): a bad
value is one usage error (status 2) naming the option as typed and what it takes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

from gwtools.cli import main
from tests.library.test_cli import NO_KEY, SAMPLE


def _command(name: str, tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """The command line of ``name`` up to its date options, over a copy of the sample cache
    (so that the data is there: a date refused is refused for itself)."""
    cache = tmp_path / "cache"
    if not cache.exists():
        shutil.copytree(SAMPLE / "sandbox", cache / "sandbox")
    env = {**NO_KEY, "GW_CACHE_DIR": str(cache)}
    if name == "export":
        out = str(tmp_path / "out.csv")
        return ["export", "payments", "--format", "csv", "--out", out, "--no-refresh"], env
    if name == "report":
        return ["report", "--out", str(tmp_path / "report"), "--source", str(cache)], env
    return ["monitor"], env


def _run(args: list[str], env: dict[str, str]) -> Result:
    return CliRunner().invoke(main, args, env=env)


COMMANDS = ["export", "report", "monitor"]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("option", ["--since", "--until"])
@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("2026-13-01", "(month must be in 1..12)"),
        ("2026-02-30", "(day is out of range for month)"),
        ("2026-11-01T25:00", "(hour must be in 0..23)"),
        ("last tuesday", ""),
        ("NaT", ""),
        ("", "is empty"),
    ],
)
def test_a_bad_date_names_the_option_as_typed_and_the_format(
    command: str, option: str, value: str, why: str, tmp_path: Path
) -> None:
    args, env = _command(command, tmp_path)
    result = _run([*args, option, value], env)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    typed = f"{option}={value}" if value and " " not in value else f"{option}='{value}'"
    assert f"{typed} is " in result.output, result.output
    assert why in result.output
    assert "YYYY-MM-DD" in result.output and "2024-05-01T08:00:00+08:00" in result.output
    # in the options' words, not the library's keywords or Python types
    assert "datetime" not in result.output and f" {option[2:]}=" not in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "report").exists()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_good_date_time_is_still_taken(command: str, tmp_path: Path) -> None:
    """The check refuses what is not a date; a date-time with an offset passes it."""
    args, env = _command(command, tmp_path)
    # --currency ZZZ stops the report once the dates are taken (no notebook runs)
    extra = ["--currency", "ZZZ"] if command == "report" else []
    result = _run(
        [*args, "--since", "2026-10-01T08:00:00+08:00", "--until", "2026-11-01", *extra], env
    )
    if command == "report":
        assert result.exit_code == 2 and "--currency" in result.output, result.output
    else:
        assert result.exit_code in (0, 1), result.output  # monitor: 1 when an alert fires
        assert "Invalid value" not in result.output


@pytest.mark.parametrize("command", ["report", "monitor"])
@pytest.mark.parametrize("option", ["--since", "--until"])
@pytest.mark.parametrize("value", ["2026-10", "2026"])
def test_a_year_or_month_alone_is_refused_where_days_are_taken(
    command: str, option: str, value: str, tmp_path: Path
) -> None:
    """The report's and monitor's windows are whole days; pandas would read 2026-10 as 1
    October, so --until 2026-10 would be one day of October. Refused before any sync."""
    args, env = _command(command, tmp_path)
    result = _run([*args, option, value], env)
    assert result.exit_code == 2, result.output
    assert f"{option}={value} is a year or month, not a day" in result.output
    assert "--since 2026-10-01 --until 2026-10-31" in result.output
    assert not (tmp_path / "report").exists()


def test_export_takes_a_month_as_its_first_instant(tmp_path: Path) -> None:
    """export's --until is exclusive: --until 2026-11 stops where November starts, which is
    what it says, so a month is taken there."""
    args, env = _command("export", tmp_path)
    result = _run([*args, "--since", "2026-10", "--until", "2026-11"], env)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out.csv").exists()


def test_export_since_not_before_until_names_both_options(tmp_path: Path) -> None:
    args, env = _command("export", tmp_path)
    result = _run([*args, "--since", "2026-11-01", "--until", "2026-10-01T08:00+08:00"], env)
    assert result.exit_code == 2, result.output
    said = result.output
    assert "--since=2026-11-01 is after --until=2026-10-01T08:00+08:00" in said
    assert "(2026-11-01 00:00:00 and 2026-10-01 00:00:00 UTC)" in said
    assert (
        "move --until later" in said
        and "since <=" not in said
        and "until=" not in (said.replace("--until=", ""))
    )
    result = _run([*args, "--since", "2026-11-01", "--until", "2026-11-01T08:00+08:00"], env)
    assert result.exit_code == 2 and "is the same time as --until=" in result.output


def test_monitor_window_that_ends_before_it_starts_names_the_options(tmp_path: Path) -> None:
    args, env = _command("monitor", tmp_path)
    result = _run([*args, "--since", "2026-11-12", "--until", "2026-11-01"], env)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: --since=2026-11-12 is not before --until=2026-11-01"), (
        result.output
    )
    # without --until the window ends at the newest cached row: named, with when it is
    result = _run([*args, "--since", "2027-01-01"], env)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        "Error: --since=2027-01-01 is not before the newest cached row (2026-11-20 11:59 UTC)"
    ), result.output
    assert "--until too" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("value", ["2026", "2026-10", " 2026-1 ", "2026-10-01", "2026-10-01T08:00"])
def test_the_cli_refuses_a_year_or_month_exactly_as_the_analyses_do(value: str) -> None:
    """The CLI's pattern (it keeps to the public API) and the analyses' refuse the same."""
    import click

    from gwtools import ConfigurationError
    from gwtools.analysis import between
    from gwtools.cli._dates import check_date

    frame = pd.DataFrame({"created_at": pd.Series([], dtype="datetime64[us, UTC]")})
    try:
        between(frame, since=value)
        library = False
    except ConfigurationError:
        library = True
    try:
        check_date(value, "--since", whole_days=True)
        cli = False
    except click.BadParameter:
        cli = True
    assert cli == library == (len(value.strip()) <= 7)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("value", ["1/11/2026", "Nov 1 2026", "today", "20261101"])
def test_a_date_pandas_reads_but_is_not_iso_is_refused(
    command: str, value: str, tmp_path: Path
) -> None:
    # pandas reads "1/11/2026" month first (11 January), where much of the world means
    # 1 November: an export "since 1 November" held every payment since January. The
    # documented forms are YYYY-MM-DD and ISO 8601; anything else is refused, not guessed.
    args, env = _command(command, tmp_path)
    result = _run([*args, "--since", value], env)
    said = result.output
    assert result.exit_code == 2, said
    assert f"--since={value}" in said or f"--since='{value}'" in said, said
    assert "YYYY-MM-DD" in said and "Traceback" not in said, said
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "report").exists()


def test_iso_forms_are_still_taken(tmp_path: Path) -> None:
    args, env = _command("export", tmp_path)
    for value in ("2026-10-01", "2026-10-01T08:00", "2026-10-01 08:00:00", "2026-10-01T08:00Z",
                  "2026-10-01T08:00:00.5+0800", "2026-10", "2026"):  # fmt: skip
        result = _run([*args, "--since", value], env)
        assert result.exit_code == 0, (value, result.output)


def test_empty_text_is_no_value_in_the_library_and_refused_by_the_commands(
    tmp_path: Path,
) -> None:
    """The split docs/decisions.md decides: a widget's cleared date box or tz="" is "no
    bound"/"the default" in the library, while an empty option on the command line is
    refused (`--tz "$ZONE"` with the variable unset is a script's mistake)."""
    import gwtools
    from gwtools.analysis import between, resolve_tz

    payments = gwtools.read_cache(SAMPLE, "payments")
    assert resolve_tz("") == resolve_tz(None)
    assert len(between(payments, since="", until=" ")) == payments["created_at"].notna().sum()
    args, env = _command("monitor", tmp_path)
    for option in ("--tz", "--since"):
        result = _run([*args, option, ""], env)
        assert result.exit_code == 2 and f"{option}='' is empty" in result.output, result.output


def test_report_refuses_since_after_until_before_syncing_in_the_options_words(
    tmp_path: Path,
) -> None:
    """`gwtools report --since 2026-11-20 --until 2026-11-01`: refused as monitor refuses it,
    naming the options; it was found only after the sync (on a real gateway, minutes of it,
    here a gateway that is not there: a connection error, status 1), in the library's words
    (since='2026-11-20' is after until=…)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {"GW_API_KEY": "sk_test_" + "k" * 28, "GW_BASE_URL": f"http://127.0.0.1:{port}",
           "GW_CACHE_DIR": str(tmp_path / "cache"), "GW_SANDBOX_VARIANT": "none"}  # fmt: skip
    out = tmp_path / "report"
    for since in ("2026-11-20", "2026-11-20T08:00"):
        args = ["report", "--out", str(out), "--since", since, "--until", "2026-11-01"]
        result = _run(args, env)
        said = result.output
        assert result.exit_code == 2, said
        assert f"--since={since} is after --until=2026-11-01" in said, said
        assert "since='" not in said and not out.exists()
    result = _run([*args[:-1], "2026-11-20"], env)  # one whole day: since == until is fine
    assert "is after" not in result.output


def test_whitespace_is_empty_text_for_tz_as_for_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tz=" " was an unknown zone while since=" " was no bound: blank text is no value in the
    library whatever its spaces, and refused on the command line (docs/decisions.md)."""
    from gwtools.analysis import resolve_tz

    monkeypatch.setenv("GW_TIMEZONE", "Asia/Kuala_Lumpur")
    assert resolve_tz(" ") == resolve_tz("\t") == resolve_tz(None) == "Asia/Kuala_Lumpur"
    monkeypatch.setenv("GW_TIMEZONE", "  ")  # set blank, as empty: not set
    assert resolve_tz(None) == resolve_tz(" ") == "UTC"
    args, env = _command("monitor", tmp_path)
    for option in ("--tz", "--since"):
        result = _run([*args, option, " "], env)
        assert result.exit_code == 2 and f"{option}=' ' is empty" in result.output, result.output


def test_export_since_not_before_until_suggests_the_day_after_the_users_own(
    tmp_path: Path,
) -> None:
    # `--since 2026-11-01 --until 2026-11-01` was told "--until 2024-06-02 takes all of
    # 1 June": an example from another year and month, which reads as a suggested value.
    args, env = _command("export", tmp_path)
    result = _run([*args, "--since", "2026-11-01", "--until", "2026-11-01"], env)
    assert result.exit_code == 2, result.output
    assert "--until 2026-11-02 takes all of 2026-11-01 (UTC)" in result.output, result.output
    assert "2024" not in result.output and "June" not in result.output
    result = _run([*args, "--since", "2026-12-31T23:00", "--until", "2026-12-01"], env)
    assert "--until 2027-01-01 takes all of 2026-12-31 (UTC)" in result.output, result.output
    # the calendar's last day has no day after it to suggest: no example, no traceback
    result = _run([*args, "--since", "9999-12-31", "--until", "9999-12-31"], env)
    assert result.exit_code == 2 and "is the same time as --until=9999-12-31" in result.output
    assert "(9999-12-31 00:00:00 and 9999-12-31 00:00:00 UTC)" in result.output, result.output
    assert "Traceback" not in result.output
