"""``gwtools sync`` and ``gwtools export`` against the sandbox; the key only via env or file."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import duckdb
import pandas as pd
import pytest
from click.testing import CliRunner, Result

import gwtools
from gwtools.cli import COMMANDS, main
from tests.library._shop import CARD_DECLINE, Shop


def _env(shop: Shop, tmp_path: Path) -> dict[str, str]:
    return {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url, "GW_CACHE_DIR": str(tmp_path)}


def test_sync_then_export_csv_and_parquet(shop: Shop, tmp_path: Path) -> None:
    ok = [shop.card() for _ in range(3)]
    declined = shop.card(CARD_DECLINE)
    shop.refund(ok[0])
    runner = CliRunner()
    env = _env(shop, tmp_path / "cache")
    result = runner.invoke(main, ["sync", "--account", "shop"], env=env)
    assert result.exit_code == 0, result.output
    assert "payments" in result.output and "refunds" in result.output
    assert shop.key not in result.output

    out = tmp_path / "failed.csv"
    result = runner.invoke(
        main,
        [
            "export",
            "payments",
            "--format",
            "csv",
            "--out",
            str(out),
            "--status",
            "failed",
            "--account",
            "shop",
            "--no-refresh",
        ],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert pd.read_csv(out)["id"].tolist() == [declined]

    out = tmp_path / "refunds.parquet"
    result = runner.invoke(
        main,
        ["export", "refunds", "--format", "parquet", "--out", str(out), "--account", "shop"],
        env=env,
    )
    assert result.exit_code == 0, result.output
    refunds = pd.read_parquet(out)
    assert refunds["payment_id"].tolist() == [ok[0]]


def test_an_incomplete_sync_exits_3_in_sync_and_export(shop: Shop, tmp_path: Path) -> None:
    """A job must not take an incomplete sync, or an export after one, for the whole table:
    both exit 3 and say why; the export still writes what the cache holds."""
    shop.history(120, days=20, seed=4)
    runner = CliRunner()
    env = _env(shop, tmp_path / "cache")
    out = tmp_path / "payments.csv"
    shop.faults(garbled_id_rate=1.0, seed=2)  # a damaged id on every page and re-fetch
    try:
        synced = runner.invoke(main, ["sync", "--account", "shop"], env=env)
        exported = runner.invoke(
            main,
            ["export", "payments", "--format", "csv", "--out", str(out), "--account", "shop"],
            env=env,
        )
    finally:
        shop.clear_faults()
    assert synced.exit_code == 3, synced.output
    assert "incomplete" in synced.output
    assert exported.exit_code == 3, exported.output
    assert "the sync before it was incomplete" in exported.output
    assert "malformed id" in exported.output and "run gwtools sync" in exported.output
    assert out.exists() and shop.key not in exported.output
    # the partial cache read as it is: written, said in one line (not as Python's warning with
    # its source), and exit 3 as after the export's own incomplete sync
    cached = runner.invoke(
        main,
        ["export", "payments", "--format", "csv", "--out", str(out), "--account", "shop",
         "--no-refresh"],
        env=env,
    )  # fmt: skip
    assert cached.exit_code == 3, cached.output
    assert "the last sync of the cached payments was incomplete: " in cached.stderr
    assert "malformed id" in cached.stderr and "rows may be missing from " in cached.stderr
    assert len(pd.read_csv(out)) > 0 and "Warning:" not in cached.output
    assert "GatewayDataWarning" not in cached.output + exported.output + synced.output
    # the next export, with nothing in the way, finishes the job and exits 0
    again = runner.invoke(
        main,
        ["export", "payments", "--format", "csv", "--out", str(out), "--account", "shop"],
        env=env,
    )
    assert again.exit_code == 0, again.output
    assert len(pd.read_csv(out)) == 120


def test_key_from_file_and_never_from_an_argument(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    key_file = tmp_path / "key"
    key_file.write_text(f"# test key\n{shop.key}\n")
    env = {"GW_BASE_URL": shop.base_url, "GW_API_KEY": ""}
    runner = CliRunner()
    result = runner.invoke(
        main, ["sync", "--api-key-file", str(key_file), "--cache-dir", str(tmp_path / "c")], env=env
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(
        main, ["sync", "--api-key", shop.key, "--cache-dir", str(tmp_path / "c")], env=env
    )
    assert result.exit_code != 0 and "GW_API_KEY" in result.output and shop.key not in result.output


def test_a_failed_sync_answers_json_on_standard_output(shop: Shop, tmp_path: Path) -> None:
    wrong = shop.key[:-4] + ("zzzz" if not shop.key.endswith("zzzz") else "yyyy")
    env = {**_env(shop, tmp_path), "GW_API_KEY": wrong}
    result = CliRunner().invoke(main, ["sync", "--json"], env=env)
    assert result.exit_code == 1, result.output
    answer = json.loads(result.stdout)
    assert answer["complete"] is False and answer["error"] == "AuthenticationError"
    assert answer["http_status"] == 401 and answer["code"] == "invalid_api_key"
    assert "Error:" in result.stderr and wrong not in result.output


@pytest.mark.parametrize(
    ("key", "base_url", "said"),
    [
        ("pk_test_" + "a" * 24, "http://127.0.0.1:9", "publishable"),
        ("sk_test_" + "a" * 24, "ftp://gateway.example", "base URL"),
        ("sk_test_" + "a" * 24, None, "no base URL"),
    ],
)
def test_a_sync_refused_before_it_starts_answers_json_too(
    key: str, base_url: str | None, said: str, tmp_path: Path
) -> None:
    # A wrong key or address refused by connect() is a failed sync as much as a 401 is: a
    # script reading `gwtools sync --json` must not get an empty standard output.
    env = {"GW_API_KEY": key, "GW_CACHE_DIR": str(tmp_path), "GW_BASE_URL": base_url}
    result = CliRunner().invoke(main, ["sync", "--json"], env=env)
    assert result.exit_code == 1, result.output
    answer = json.loads(result.stdout)
    assert answer["complete"] is False and answer["error"] == "ConfigurationError"
    assert said in answer["message"] and said in result.stderr
    assert key not in result.output


def test_a_sync_into_a_file_as_cache_folder_answers_json_too(tmp_path: Path) -> None:
    # GW_CACHE_DIR naming a file is refused before anything starts (one Error: line,
    # status 1): with --json a script must still read an object on standard output.
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    env = {**NO_KEY, "GW_CACHE_DIR": str(a_file)}
    result = CliRunner().invoke(main, ["sync", "--json"], env=env)
    assert result.exit_code == 1, result.output
    answer = json.loads(result.stdout)
    assert answer["complete"] is False and answer["error"] == "CacheError"
    assert "is a file, not a folder" in answer["message"] and "Error:" in result.stderr


def test_a_sync_stopped_by_a_file_system_error_answers_json_too(shop: Shop, tmp_path: Path) -> None:
    # A file-system error stopping the sync (here the dataset's _state.json is a folder, a
    # bare IsADirectoryError until it became a CacheError naming the file) left standard
    # output empty under --json, with only an Error: line.
    shop.card()
    env = _env(shop, tmp_path)
    assert CliRunner().invoke(main, ["sync", "--resource", "refunds"], env=env).exit_code == 0
    (state,) = tmp_path.rglob("refunds/_state.json")
    state.unlink()
    state.mkdir()
    result = CliRunner().invoke(main, ["sync", "--json", "--resource", "refunds"], env=env)
    assert result.exit_code == 1, result.output
    answer = json.loads(result.stdout)
    assert answer["complete"] is False and answer["error"] == "CacheError"
    assert answer["message"].startswith(f"{state} is a folder")
    assert answer["http_status"] is None and answer["request_id"] is None
    assert f"Error: {state} is a folder" in result.stderr


def test_bad_input_gets_a_clear_error(shop: Shop, tmp_path: Path) -> None:
    runner = CliRunner()
    env = _env(shop, tmp_path)
    result = runner.invoke(
        main,
        [
            "export",
            "payments",
            "--format",
            "csv",
            "--out",
            str(tmp_path / "x.csv"),
            "--status",
            "paid",
        ],
        env=env,
    )
    assert result.exit_code == 2 and "canonical payments statuses" in result.output
    wrong = {**env, "GW_API_KEY": shop.key[:-4] + "zzzz"}
    result = runner.invoke(main, ["sync"], env=wrong)
    assert (
        result.exit_code == 1
        and "401" in result.output
        and "zzzz" not in result.output.replace("…zzzz", "")
    )
    pk = {**env, "GW_API_KEY": "pk_test_" + "a" * 24}
    result = runner.invoke(main, ["sync"], env=pk)
    assert result.exit_code == 1 and "publishable" in result.output


def test_cli_runs_as_a_process(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    env = {**os.environ, **_env(shop, tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-m", "gwtools", "sync", "--account", "shop"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert shop.key not in proc.stdout + proc.stderr
    assert "cache:" in proc.stdout


SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample-cache"
#: No key or URL, so the embedded sandbox is meant; its variant setting is invalid, so that
#: starting it (or reusing one this process already runs) would fail the command.
NO_KEY = {"GW_API_KEY": "", "GW_BASE_URL": "", "GW_SANDBOX_VARIANT": "none"}


def _sandbox_threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("gwtools-sandbox")}


def _export(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[Path, Result]:
    out = tmp_path / "out.csv"
    result = CliRunner().invoke(
        main, ["export", "payments", "--format", "csv", "--out", str(out), *args], env=env
    )
    return out, result


def test_export_no_refresh_without_a_key_reads_the_embedded_cache_and_starts_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # the shipped sample is what a keyless `gwtools sync` leaves: the embedded sandbox's cache
    shutil.copytree(SAMPLE / "sandbox", tmp_path / "cache" / "sandbox")
    env = {**NO_KEY, "GW_CACHE_DIR": str(tmp_path / "cache")}
    before = _sandbox_threads()
    with caplog.at_level(logging.INFO, logger="gwtools"):
        out, result = _export(tmp_path, env, "--status", "failed", "--no-refresh")
    assert result.exit_code == 0, result.output
    expected = gwtools.read_cache(SAMPLE, "payments", status="failed")
    assert len(expected) > 0
    assert sorted(pd.read_csv(out)["id"]) == sorted(expected["id"])
    assert _sandbox_threads() == before
    assert "embedded sandbox" not in caplog.text


def test_export_no_refresh_with_an_empty_cache_says_what_to_do(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    before = _sandbox_threads()
    env = {**NO_KEY, "GW_CACHE_DIR": str(tmp_path / "empty")}
    with caplog.at_level(logging.INFO, logger="gwtools"):
        out, result = _export(tmp_path, env, "--no-refresh")
    output = result.output
    assert result.exit_code == 1, output
    assert "nothing cached yet for the embedded sandbox" in output
    assert "gwtools sync" in output and str(tmp_path / "empty") in output
    assert not out.exists()
    assert _sandbox_threads() == before and "embedded sandbox" not in caplog.text

    # with a key: the key's account and mode name the dataset; nothing is contacted
    # (nothing listens on port 9)
    key = "sk_test_" + "k" * 28
    keyed = {
        "GW_API_KEY": key,
        "GW_BASE_URL": "http://127.0.0.1:9",
        "GW_CACHE_DIR": env["GW_CACHE_DIR"],
    }
    out, result = _export(tmp_path, keyed, "--no-refresh", "--account", "shop-my")
    output = result.output
    assert result.exit_code == 1, output
    assert "account 'shop-my' in test mode" in output and "gwtools sync" in output
    assert key not in output


def test_export_streams_batches_equal_to_the_eager_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CSV (file and standard output) and Parquet hold what the whole table written by pandas
    holds, although the rows went out in batches of 300 (the sample has 2,000 payments)."""
    from gwtools.cache import _export as streaming

    monkeypatch.setattr(streaming, "BATCH_ROWS", 300)
    shutil.copytree(SAMPLE / "sandbox", tmp_path / "cache" / "sandbox")
    env = {**NO_KEY, "GW_CACHE_DIR": str(tmp_path / "cache")}
    eager = gwtools.read_cache(SAMPLE, "payments", since="2024-05-01")
    assert len(eager) > 600  # several batches
    eager.to_csv(tmp_path / "eager.csv", index=False)

    # Far less than the table: any step that gathered it whole in pandas would stop here.
    monkeypatch.setenv("GW_MAX_RESULT_MEMORY", "64KB")
    with pytest.raises(gwtools.ResultTooLargeError):
        gwtools.read_cache(SAMPLE, "payments")
    out, result = _export(tmp_path, env, "--no-refresh", "--since", "2024-05-01")
    assert result.exit_code == 0, result.output
    assert out.read_text() == (tmp_path / "eager.csv").read_text()
    assert f"wrote {len(eager):,} payments" in result.output

    runner = CliRunner()
    args = ["export", "payments", "--format", "csv", "--out", "-", "--no-refresh"]
    result = runner.invoke(main, [*args, "--since", "2024-05-01"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout == (tmp_path / "eager.csv").read_text()

    pq = tmp_path / "out.parquet"
    args = ["export", "refunds", "--format", "parquet", "--out", str(pq), "--no-refresh"]
    result = runner.invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    pd.testing.assert_frame_equal(pd.read_parquet(pq), gwtools.read_cache(SAMPLE, "refunds"))
    assert not list(tmp_path.glob(".*.tmp"))


def test_export_from_a_source_reads_that_cache_as_it_is(tmp_path: Path) -> None:
    before = _sandbox_threads()
    expected = gwtools.read_cache(SAMPLE, "payments", status="failed")
    for source in (SAMPLE, SAMPLE / "sandbox" / "test", SAMPLE.as_uri()):
        out, result = _export(tmp_path, NO_KEY, "--source", str(source), "--status", "failed")
        assert result.exit_code == 0, result.output
        assert sorted(pd.read_csv(out)["id"]) == sorted(expected["id"])
    assert _sandbox_threads() == before  # nothing started, nothing synced
    out, result = _export(tmp_path, NO_KEY, "--source", str(SAMPLE), "--cache-dir", str(tmp_path))
    assert result.exit_code == 2 and "leave out --api-key-file, --base-url and --cache-dir" in (
        result.output
    )
    out, result = _export(tmp_path, NO_KEY, "--source", str(SAMPLE), "--account", "other")
    assert result.exit_code == 1 and "it holds account='sandbox' mode='test'" in result.output


def test_export_refuses_a_file_named_for_the_other_format(tmp_path: Path) -> None:
    for fmt, name in (("csv", "payments.parquet"), ("parquet", "payments.CSV")):
        result = CliRunner().invoke(
            main,
            ["export", "payments", "--format", fmt, "--out", str(tmp_path / name),
             "--source", str(SAMPLE)],
            env=NO_KEY,
        )  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "but --format is " + fmt in result.output and not (tmp_path / name).exists()


@pytest.mark.parametrize(("fmt", "out"), [("csv", "-"), ("csv", "/dev/stdout"),
                                          ("parquet", "/dev/stdout")])  # fmt: skip
def test_export_to_a_reader_that_stops_early_ends_quietly(fmt: str, out: str) -> None:
    """`gwtools export ... --out - | head -1`: no error line, no traceback. /dev/stdout (what
    a script gives a tool that takes no '-') is the same pipe: the subprocess's own stdout."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gwtools", "export", "payments", "--format", fmt, "--out", out,
         "--source", str(SAMPLE)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **NO_KEY},
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(4) == (b"id,a" if fmt == "csv" else b"PAR1")
    process.stdout.close()  # what head does after its line
    said = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141  # 128 + SIGPIPE, as a shell reports it
    assert "Error" not in said and "Traceback" not in said and "Broken pipe" not in said, said


@pytest.mark.parametrize("command", [["check"], ["check", "--json"], ["monitor"]])
def test_any_command_whose_reader_is_gone_ends_quietly(command: list[str]) -> None:
    """`gwtools check | head -c 5`: head gone before the report is written. The command ends
    quietly, as Unix tools do, with 141 (SIGPIPE's status, never check's and monitor's 1 for
    "a rule failed"/"alerts fired"); it printed 'Error: Broken pipe' and exited 1."""
    process = subprocess.Popen(
        [sys.executable, "-m", "gwtools", *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **NO_KEY, "GW_CACHE_DIR": str(SAMPLE)},
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the command has written anything: every write fails
    said = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141  # 128 + SIGPIPE, as a shell reports it
    assert "Error" not in said and "Traceback" not in said and "Broken pipe" not in said, said


@pytest.mark.parametrize("option", ["--since", "--until"])
def test_report_refuses_a_day_that_is_not_a_date_before_doing_anything(option: str) -> None:
    result = CliRunner().invoke(main, ["report", option, "last tuesday"])
    assert result.exit_code == 2
    assert f"Invalid value for '{option}'" in result.output
    assert f"{option[2:]}='last tuesday' is not a date" in result.output
    assert "2024-05-01" in result.output


def partial_copy(tmp_path: Path) -> Path:
    """The sample cache (the embedded sandbox's account) as a sync that was incomplete after
    earlier complete ones leaves it: rows cached, the last sync's report ``complete: false``."""
    root = tmp_path / "partial"
    shutil.copytree(SAMPLE / "sandbox", root / "sandbox")
    state_file = root / "sandbox" / "test" / "payments" / "_state.json"
    state = json.loads(state_file.read_text())
    state["completeness"]["complete"] = False
    state["completeness"]["problems"] = [
        "a payments page (to=1795766597) stayed short after 2 re-fetches: 97 rows where the "
        "gateway's own figures imply 100"
    ]
    state_file.write_text(json.dumps(state))
    return root


def test_export_of_a_cache_known_partial_exits_3_after_writing(tmp_path: Path) -> None:
    root = partial_copy(tmp_path)
    for args, env in (
        (["--no-refresh"], {**NO_KEY, "GW_CACHE_DIR": str(root)}),
        (["--source", str(root)], NO_KEY),
    ):
        out, result = _export(tmp_path, env, *args)
        assert result.exit_code == 3, result.output
        assert len(pd.read_csv(out)) == 2000  # written all the same
        assert "the last sync of the cached payments was incomplete: a payments page" in (
            result.stderr
        )
        assert "rows may be missing from" in result.stderr and "run gwtools sync" in result.stderr
        out.unlink()
    # the refunds' own sync was complete: their export is whole
    result = CliRunner().invoke(
        main,
        ["export", "refunds", "--format", "csv", "--out", str(tmp_path / "r.csv"),
         "--source", str(root)],
        env=NO_KEY,
    )  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GW_SANDBOX_PAYMENTS", "-5"),
        ("GW_SANDBOX_DAYS", "0"),
        ("GW_SANDBOX_DAYS", "1000000000"),
        ("GW_SANDBOX_PAYMENTS", "0"),  # with the default incidents: nowhere to place them
        ("GW_SANDBOX_NOW", "0001-01-02"),
        ("GW_SANDBOX_NOW", "9999-12-31T00:00:00"),
        ("GW_SANDBOX_DAYS", "1"),  # too short for the default decline spike
    ],
)
def test_bad_sandbox_variables_are_a_configuration_error(
    name: str, value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(gwtools.ConfigurationError, match=name) as raised:
        gwtools.connect(cache_dir=tmp_path)
    assert "unset" in str(raised.value) or "=none" in str(raised.value)  # what to do


def test_a_bad_sandbox_variable_is_one_error_line_in_a_command(tmp_path: Path) -> None:
    env = {"GW_SANDBOX_NOW": "9999-12-31T00:00:00", "GW_CACHE_DIR": str(tmp_path)}
    result = CliRunner().invoke(main, ["sync"], env=env)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("Error: GW_SANDBOX_NOW='9999-12-31T00:00:00' ")
    assert "2000-01-01" in result.output and result.exception is not None
    assert isinstance(result.exception, SystemExit)  # no traceback


@click.command()
@click.option("--raise", "what", type=click.Choice(["ctrl-c", "duckdb", "duckdb-signal"]))
def _interrupted(what: str) -> None:
    """Stands in for a command stopped by Ctrl-C where it happens to be."""
    if what == "ctrl-c":
        raise KeyboardInterrupt
    if what == "duckdb":  # a query interrupted
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")
    raise RuntimeError("Query interrupted")  # DuckDB's client, for a SIGINT during a fetch


@pytest.mark.parametrize("what", ["ctrl-c", "duckdb", "duckdb-signal"])
def test_ctrl_c_is_status_130_not_1(what: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """1 means "a rule failed" to `check` and "alerts fired" to `monitor`: an interrupted
    command must not say either."""
    monkeypatch.setitem(COMMANDS, "interrupted", f"{__name__}:_interrupted")
    result = CliRunner().invoke(main, ["interrupted", "--raise", what])
    assert result.exit_code == 130, (result.output, result.exception)
    assert result.stderr.strip() == "Interrupted." and "Aborted" not in result.output


@pytest.fixture
def silent_gateway() -> Iterator[tuple[str, threading.Event]]:
    """A gateway address that accepts a request and never answers it (until the test ends):
    the event is set once a request has arrived, so a command is known to be waiting on it."""
    server = socket.create_server(("127.0.0.1", 0))
    asked = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # closed: the test is over
                return
            held.append(conn)
            conn.recv(65536)
            asked.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", asked
    finally:
        server.close()
        for conn in held:
            conn.close()
        thread.join(timeout=10)


def test_a_sync_interrupted_by_sigint_exits_130(
    silent_gateway: tuple[str, threading.Event], tmp_path: Path
) -> None:
    url, asked = silent_gateway
    env = {**os.environ, "GW_API_KEY": "sk_test_" + "k" * 28, "GW_BASE_URL": url,
           "GW_CACHE_DIR": str(tmp_path)}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "gwtools", "sync", "--no-progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert asked.wait(timeout=120), "the sync sent no request"
        process.send_signal(signal.SIGINT)  # while it waits on the gateway's answer
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 130, err
    assert err.strip().endswith("Interrupted.")
    assert "Traceback" not in err and "Aborted" not in err


@pytest.mark.slow
def test_report_names_the_gateway_with_its_port(shop: Shop, tmp_path: Path) -> None:
    """The pages name a gateway by scheme and host only; the summary on the terminal names the
    address that was synced (several sandboxes on one host differ only by port)."""
    if shop.variant == "A":
        pytest.skip("one variant is enough")
    shop.card()
    result = CliRunner().invoke(
        main, ["report", "--out", str(tmp_path / "report")], env=_env(shop, tmp_path / "cache")
    )
    assert result.exit_code == 0, result.output
    assert f"\nData: {shop.base_url}\n" in result.output
    assert shop.key not in result.output


def test_an_export_whose_sync_fails_names_the_cached_rows_and_no_refresh(
    shop: Shop, tmp_path: Path
) -> None:
    # A failed sync (a revoked key here; a gateway down or a VPN off alike) ended the export
    # with the gateway's error alone, though the cache held the last sync's rows, which
    # --no-refresh exports without contacting anything.
    shop.card()
    env = _env(shop, tmp_path / "cache")
    runner = CliRunner()
    assert runner.invoke(main, ["sync", "--account", "shop"], env=env).exit_code == 0
    out = tmp_path / "p.csv"
    export = ["export", "payments", "--format", "csv", "--out", str(out), "--account", "shop"]
    revoked = {**env, "GW_API_KEY": "sk_test_" + "x" * 24}
    result = runner.invoke(main, export, env=revoked)
    assert result.exit_code == 1 and not out.exists(), result.output
    assert "invalid_api_key" in result.stderr or "API key" in result.stderr, result.stderr
    assert "add --no-refresh to export the payments cached by the last sync" in result.stderr
    assert revoked["GW_API_KEY"] not in result.output
    result = runner.invoke(main, [*export, "--no-refresh"], env=revoked)
    assert result.exit_code == 0 and len(pd.read_csv(out)) == 1, result.output
    # nothing cached for that account: no such advice
    result = runner.invoke(main, [*export[:-1], "other"], env=revoked)
    assert result.exit_code == 1 and "--no-refresh" not in result.stderr, result.stderr


def test_a_report_whose_sync_fails_names_the_cache_as_source(shop: Shop, tmp_path: Path) -> None:
    # As export: a failed sync before a report (a revoked key here) said the gateway's error
    # alone, though --source with the cache's folder reports what the last sync fetched.
    shop.card()
    env = _env(shop, tmp_path / "cache")
    runner = CliRunner()
    assert runner.invoke(main, ["sync", "--account", "shop"], env=env).exit_code == 0
    revoked = {**env, "GW_API_KEY": "sk_test_" + "y" * 24}
    out = tmp_path / "report"
    result = runner.invoke(main, ["report", "--out", str(out), "--account", "shop"], env=revoked)
    assert result.exit_code == 1 and not out.exists(), result.output
    folder = tmp_path / "cache" / "shop" / "test"
    assert f"give --source {folder} to report what the last sync cached" in result.stderr
    assert revoked["GW_API_KEY"] not in result.output


def test_a_sync_refused_for_a_bad_option_answers_json_too(tmp_path: Path) -> None:
    # A value refused (status 2: a key file that cannot be read, an empty --account) left
    # `gwtools sync --json`'s standard output empty, while a failed sync (status 1) answered
    # an object: a script parsing it got an empty string.
    env = {**NO_KEY, "GW_CACHE_DIR": str(tmp_path)}
    for args, said in (
        (["--api-key-file", str(tmp_path / "missing.key")], "cannot read"),
        (["--account", ""], "is empty"),
    ):
        result = CliRunner().invoke(main, ["sync", "--json", *args], env=env)
        assert result.exit_code == 2, result.output
        answer = json.loads(result.stdout)
        assert answer["complete"] is False and answer["error"] == "UsageError", answer
        assert said in answer["message"] and answer["http_status"] is None, answer
        assert "Error:" in result.stderr and said in result.stderr
    # a failed sync's object is printed once, not again by the usage-error path
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder\n")
    result = CliRunner().invoke(main, ["sync", "--json", "--cache-dir", str(a_file)], env=env)
    assert result.exit_code == 1 and json.loads(result.stdout)["error"] == "CacheError"
