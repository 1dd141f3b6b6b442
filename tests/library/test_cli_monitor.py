"""``gwtools monitor`` and ``gwtools check`` on a synced cache: exit codes and JSON."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from click.testing import CliRunner

import gwtools
from gwtools.cli import main
from gwtools.sandbox import Sandbox
from tests.library.test_cli import NO_KEY, SAMPLE, partial_copy

NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)


def _cache(tmp_path: Path, incidents: list[str]) -> dict[str, str]:
    with (
        Sandbox("B", rate_limits=False, seed_payments=6000, days=36, seed=3, now=NOW,
                incidents=incidents) as sb,
        gwtools.connect(sb.secret_key, sb.base_url, cache_dir=tmp_path, account="cli") as gw,
    ):  # fmt: skip
        gw.sync()
    return {
        "GW_CACHE_DIR": str(tmp_path),
        "GW_API_KEY": "sk_test_x",
        "GW_BASE_URL": "http://127.0.0.1:9",
    }


def test_monitor_and_check(tmp_path: Path) -> None:
    runner = CliRunner()
    env = _cache(tmp_path / "quiet", [])
    args = ["--account", "cli", "--tz", "Asia/Kuala_Lumpur"]
    quiet = runner.invoke(main, ["monitor", *args], env=env)
    assert quiet.exit_code == 0, quiet.output
    assert quiet.output.startswith("No alerts")
    assert json.loads(runner.invoke(main, ["monitor", "--json", *args], env=env).output) == []
    check = runner.invoke(main, ["check", *args], env=env)
    assert check.exit_code == 0, check.output
    rules = json.loads(runner.invoke(main, ["check", "--json", *args], env=env).output)
    assert {r["rule"] for r in rules} >= {"refund_payment_cached", "payment_ids_unique"}
    assert all(r["ok"] for r in rules)

    env = _cache(tmp_path / "testing", ["card-testing"])
    loud = runner.invoke(main, ["monitor", *args], env=env)
    assert loud.exit_code == 1 and "card_testing" in loud.output
    alerts = json.loads(runner.invoke(main, ["monitor", "--json", *args], env=env).output)
    assert [a["kind"] for a in alerts] == ["card_testing"]
    assert alerts[0]["start"].endswith("+08:00") and alerts[0]["observed"] >= 300
    # a window before the incident is quiet again
    early = runner.invoke(main, ["monitor", *args, "--until", "2026-11-12"], env=env)
    assert early.exit_code == 0, early.output
    # A check that cannot run exits 2, never 1 ("alerts fired", "a rule failed").
    for bad in (
        ["monitor", *args, "--since", "2026-11-12", "--until", "2026-11-01"],
        ["monitor", *args, "--since", "soon"],
        ["check", "--account", "cli", "--tz", "Mars/Base"],
    ):
        result = runner.invoke(main, bad, env=env)
        assert result.exit_code == 2 and result.output.startswith("Error: "), result.output


def test_check_fails_on_a_broken_cache(tmp_path: Path) -> None:
    env = _cache(tmp_path, [])
    refunds = gwtools.read_cache(tmp_path, "refunds", account="cli")
    # drop the cached payments of the refunds: each refund is now an orphan
    part = next((tmp_path / "cli" / "test" / "payments").rglob("*.parquet"))
    payments = gwtools.read_cache(tmp_path, "payments", account="cli")
    assert len(refunds) and len(payments)
    for file in (tmp_path / "cli" / "test" / "payments").rglob("*.parquet"):
        file.unlink()
    assert not part.exists()
    result = CliRunner().invoke(main, ["check", "--account", "cli"], env=env)
    assert result.exit_code == 1 and "FAIL refund_payment_cached" in result.output


def test_nothing_cached_is_a_clear_error(tmp_path: Path) -> None:
    env = {
        "GW_CACHE_DIR": str(tmp_path),
        "GW_API_KEY": "sk_test_x",
        "GW_BASE_URL": "http://127.0.0.1:9",
    }
    # Status 2, not 1: a job reads 1 as "alerts fired".
    for command in ("monitor", "check"):
        result = CliRunner().invoke(main, [command, "--account", "none"], env=env)
        assert result.exit_code == 2 and "nothing cached yet" in result.output


def test_a_window_without_payments_cannot_check(tmp_path: Path) -> None:
    """A mistyped year is not a quiet week: status 2, saying what the cache holds."""
    root = tmp_path / "cache"
    shutil.copytree(SAMPLE / "sandbox", root / "sandbox")
    env = {**NO_KEY, "GW_CACHE_DIR": str(root)}
    result = CliRunner().invoke(
        main, ["monitor", "--since", "2020-01-01", "--until", "2020-02-01"], env=env
    )
    assert result.exit_code == 2, result.output
    assert result.output.startswith(
        "Error: no payments between 2020-01-01 00:00 and 2020-02-02 00:00 UTC"
    )
    assert "the cache holds payments from 2026-08-22 " in result.output
    assert "No alerts" not in result.output


def test_no_alerts_without_a_baseline_says_what_could_not_be_looked_for(tmp_path: Path) -> None:
    """The cache's first week: its baseline (the 28 days before) holds no payment, so spikes
    and outages cannot show, and a bare "No alerts" read as a clean bill of health."""
    root = tmp_path / "cache"
    shutil.copytree(SAMPLE / "sandbox", root / "sandbox")
    env = {**NO_KEY, "GW_CACHE_DIR": str(root)}
    window = ["monitor", "--since", "2026-08-22", "--until", "2026-08-28"]
    result = CliRunner().invoke(main, window, env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(
        "No alerts: monitored window 2026-08-22 00:00 to 2026-08-29 00:00, baseline from "
        "2026-07-25 00:00 (UTC). The baseline holds no payments"
    ), result.stdout
    # with --json, the array stays the whole standard output and the note goes beside it
    result = CliRunner().invoke(main, [*window, "--json"], env=env)
    assert result.exit_code == 0 and json.loads(result.stdout) == [], result.output
    assert "The baseline holds no payments" in result.stderr
    # a window with history before it says no more than before
    result = CliRunner().invoke(main, ["monitor"], env=env)
    assert "No alerts: monitored window" in result.stdout, result.output
    assert "baseline holds no payments" not in result.output


def test_no_alerts_on_a_cache_known_partial_exits_3(tmp_path: Path) -> None:
    env = {**NO_KEY, "GW_CACHE_DIR": str(partial_copy(tmp_path))}
    result = CliRunner().invoke(main, ["monitor"], env=env)
    assert result.exit_code == 3, result.output
    assert result.stdout.startswith("No alerts")
    assert "gwtools monitor: the last sync of the cached payments was incomplete: " in (
        result.stderr
    )
    assert "Warning:" not in result.stderr  # said once
    # check fails its rule instead, as before
    result = CliRunner().invoke(main, ["check"], env=env)
    assert result.exit_code == 1 and "FAIL last_sync_complete" in result.output


def test_json_that_cannot_check_still_answers_with_a_json_object(tmp_path: Path) -> None:
    """A script parsing ``--json`` gets a JSON object naming the error (status 2), never an
    empty standard output; the human line stays on standard error."""
    root = tmp_path / "cache"
    shutil.copytree(SAMPLE / "sandbox", root / "sandbox")
    env = {**NO_KEY, "GW_CACHE_DIR": str(root)}
    empty = {**NO_KEY, "GW_CACHE_DIR": str(tmp_path / "empty")}
    for command, args, environ, said in (
        ("check", [], empty, "nothing cached yet"),
        ("monitor", [], empty, "nothing cached yet"),
        ("check", ["--tz", "Mars/Base"], env, "unknown time zone 'Mars/Base'"),
        ("check", ["--tz", ""], env, "is empty"),  # refused while the options are read
        ("monitor", ["--since", "soon"], env, "--since=soon is not a date"),
        ("monitor", ["--since", "2020-01-01", "--until", "2020-02-01"], env, "no payments"),
    ):
        result = CliRunner().invoke(main, [command, "--json", *args], env=environ)
        assert result.exit_code == 2, (command, args, result.output)
        answer = json.loads(result.stdout)
        assert set(answer) == {"error", "message"}, answer
        assert answer["error"] in ("UsageError", "CannotCheck")
        assert said in answer["message"], answer
        assert "Error: " in result.stderr and said in result.stderr
    # without --json, standard output stays empty: the error is on standard error alone
    plain = CliRunner().invoke(main, ["check"], env=empty)
    assert plain.exit_code == 2 and plain.stdout == ""
