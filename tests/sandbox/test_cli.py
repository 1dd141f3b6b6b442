"""The ``gwtools sandbox`` command: a real process serving the sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest


def test_cli_serves_and_writes_the_key_file(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gwtools.sandbox",
            "--port",
            "0",
            "--variant",
            "a",
            "--seed-payments",
            "30",
            "--days",
            "5",
            "--no-rate-limit",
            "--key-file",
            str(key_file),
            "--now",
            "2026-01-01T00:00:00",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        second = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", first)
        assert url, first
        key = key_file.read_text().strip()
        assert key.startswith("sk_test_")
        assert key not in first + second and key[-4:] in second  # masked on screen
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        with httpx.Client(base_url=url.group(0), verify=False) as http:
            body = http.get(
                "/v1/payments", params={"limit": 5}, headers={"Authorization": f"Bearer {key}"}
            ).json()
            assert body["meta"]["total"] == 30
            clock = http.get("/_sandbox/clock").json()
            assert clock == {"now": "2026-01-01T00:00:00Z", "unix": 1767225600, "frozen": True}
    finally:
        proc.terminate()
        proc.communicate(timeout=60)  # reaps it and closes its pipes (slow on a busy machine)


def test_cli_help_lists_the_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "gwtools", "sandbox", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for option in (
        "--host",
        "--port",
        "--variant",
        "--db",
        "--latency-ms",
        "--no-rate-limit",
        "--seed-payments",
        "--days",
        "--seed",
        "--key-file",
    ):
        assert option in out


def test_python_m_gwtools_sandbox_takes_the_options_gwtools_sandbox_takes() -> None:
    """docs/sandbox.md: ``python -m gwtools.sandbox`` is the same as ``gwtools sandbox``, -h
    included (the group's context gives ``gwtools sandbox`` its -h; run alone it had none)."""

    def help_of(*command: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", *command, "-h"],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "100"},
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()[1:]  # the usage line names the program

    assert help_of("gwtools.sandbox") == help_of("gwtools", "sandbox")


def test_cli_refuses_a_start_time_outside_the_clock_range() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gwtools", "sandbox", "--now", "1990-01-01"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--now" in done.stderr and "2000-01-01" in done.stderr


def test_key_file_and_db_in_a_missing_folder_are_refused_and_nothing_is_made(
    tmp_path: Path,
) -> None:
    from click.testing import CliRunner

    from gwtools.sandbox.cli import sandbox

    for option in ("--key-file", "--db"):
        path = tmp_path / "no" / "such" / "file"
        result = CliRunner().invoke(sandbox, [option, str(path), "--port", "0"])
        assert result.exit_code == 2, result.output
        assert f"cannot write {path}: the folder {path.parent} does not exist" in result.output
        assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("option", ["--key-file", "--db"])
@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "spaces"])
def test_an_empty_key_file_or_db_is_refused_as_empty(
    option: str, blank: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--key-file "$KEY_FILE"` with the variable unset was taken for the working directory
    # ("cannot write .: Is a directory"), a path nobody typed; '  ' became a file of that name.
    import socket

    from click.testing import CliRunner

    from gwtools.sandbox.cli import sandbox

    monkeypatch.chdir(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as busy:  # a path taken as one cannot serve
        port = str(busy.getsockname()[1])
        result = CliRunner().invoke(sandbox, [option, blank, "--port", port])
    assert result.exit_code == 2, result.output
    assert option in result.output and "is empty" in result.output, result.output
    assert list(tmp_path.iterdir()) == []


def test_a_sandbox_that_cannot_start_leaves_no_files_and_ends_the_bar_line(
    tmp_path: Path,
) -> None:
    import socket

    from click.testing import CliRunner

    from gwtools.sandbox.cli import sandbox

    existing = tmp_path / "old.key"
    existing.write_text("sk_test_old\n")
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = str(busy.getsockname()[1])
        for key in (tmp_path / "new.key", existing):
            result = CliRunner().invoke(
                sandbox,
                ["--port", port, "--seed-payments", "20", "--key-file", str(key),
                 "--db", str(tmp_path / "new.db")],
            )  # fmt: skip
            assert result.exit_code == 1, result.output
            # on a line of its own, not after the unfinished progress bar's
            assert f"\nError: cannot listen on 127.0.0.1:{port}" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.key"]
    assert existing.read_text() == "sk_test_old\n"  # an old key stays as it was


def test_an_existing_key_file_is_made_private(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("sk_test_old\n")
    key_file.chmod(0o644)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gwtools.sandbox", "--port", "0", "--key-file", str(key_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        assert "written to" in proc.stdout.readline()  # the key is written: the file is done
        assert oct(key_file.stat().st_mode & 0o777) == "0o600"
        key = key_file.read_text().strip()
        assert key.startswith("sk_test_") and key != "sk_test_old"
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "spaces"])
def test_an_empty_host_is_refused_not_taken_for_every_interface(blank: str) -> None:
    # `--host "$HOST"` with the variable unset bound every interface (what '' means to a
    # socket), exposing a sandbox that listens on loopback by default, and printed its URL
    # as http://:PORT.
    import socket

    from click.testing import CliRunner

    from gwtools.sandbox.cli import sandbox

    with socket.create_server(("127.0.0.1", 0)) as busy:  # a host taken as one cannot serve
        port = str(busy.getsockname()[1])
        result = CliRunner().invoke(sandbox, ["--host", blank, "--port", port])
    assert result.exit_code == 2, result.output
    assert "--host" in result.stderr and "is empty" in result.stderr, result.stderr
    assert "127.0.0.1" in result.stderr and "0.0.0.0" in result.stderr


def test_a_db_that_is_no_sqlite_database_is_said_so_and_left_as_it_is(tmp_path: Path) -> None:
    # A --db naming another file (a CSV export, say) was refused with "its folder must exist
    # and be writable", though the folder was fine: the file is not a database.
    from click.testing import CliRunner

    from gwtools.sandbox.cli import sandbox

    other = tmp_path / "payments.csv"
    other.write_text("id,amount\n" * 50)
    result = CliRunner().invoke(sandbox, ["--db", str(other), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert f"{other} is not a SQLite database" in result.stderr, result.stderr
    assert "folder must exist" not in result.stderr
    assert "new file" in result.stderr
    assert other.read_text() == "id,amount\n" * 50
    assert [p.name for p in tmp_path.iterdir()] == ["payments.csv"]


@pytest.mark.parametrize("value", ["nan", "NaN"])
def test_a_latency_that_is_not_a_number_is_refused_not_a_traceback(value: str) -> None:
    # click's FloatRange lets NaN through (no comparison with NaN is true): the sandbox then
    # died with a ValueError traceback ("cannot convert float NaN to integer").
    from click.testing import CliRunner

    from gwtools.sandbox.cli import sandbox

    result = CliRunner().invoke(sandbox, ["--latency-ms", value, "--port", "0"])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "--latency-ms" in result.stderr and "0 to 120000" in result.stderr, result.stderr
