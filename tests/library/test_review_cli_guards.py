"""CLI guards: what a command says when its options point at the wrong place."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from gwtools.cli import main
from tests.library._shop import Shop
from tests.library.test_cli import _env


def test_a_dataset_folder_left_by_a_failed_first_sync_reads_as_nothing_cached(
    shop: Shop, tmp_path: Path
) -> None:
    # A first sync refused by the gateway (a revoked key here) leaves the dataset's folder
    # behind with its _sync.lock only; --no-refresh then took it for a cache and lost the
    # "check --account" hint a mistyped account gets when no folder was made.
    shop.card()
    env = _env(shop, tmp_path / "cache")
    runner = CliRunner()
    assert runner.invoke(main, ["sync", "--account", "shop"], env=env).exit_code == 0
    revoked = {**env, "GW_API_KEY": "sk_test_" + "z" * 24}
    failed = runner.invoke(main, ["sync", "--account", "shpo"], env=revoked)
    assert failed.exit_code == 1, failed.output
    left = tmp_path / "cache" / "shpo" / "test" / "payments"
    assert [p.name for p in left.iterdir()] == ["_sync.lock"]
    out = tmp_path / "p.csv"
    export = [
        "export",
        "payments",
        "--format",
        "csv",
        "--out",
        str(out),
        "--no-refresh",
        "--account",
        "shpo",
    ]
    result = runner.invoke(main, export, env=env)
    assert result.exit_code == 1 and not out.exists(), result.output
    assert "nothing cached for account 'shpo'" in result.stderr, result.stderr
    assert "check --account (e.g. --account shop)" in result.stderr, result.stderr
    assert revoked["GW_API_KEY"] not in result.output


SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample-cache"


def test_report_out_inside_a_cache_dataset_is_refused_before_any_work(tmp_path: Path) -> None:
    # `export --out` inside a cache's dataset is refused; a report's --out was not: the report
    # ran, failed in its first notebook's export, and left a .failed.ipynb in the month's
    # folder, where DuckDB, Spark and the next sync read the dataset's files.
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    month = cache / "sandbox" / "test" / "payments" / "created_month=2026-09"
    before = sorted(p.name for p in month.iterdir())
    for inside in (month / "report", month, month.parent):
        result = CliRunner().invoke(
            main, ["report", "--out", str(inside), "--source", str(cache), "--until", "2000-01-01"]
        )
        assert result.exit_code == 2, result.output
        assert "inside the cache's dataset" in result.stderr, result.stderr
        assert "write it outside the cache folder" in result.stderr
        assert sorted(p.name for p in month.iterdir()) == before
        assert not (month.parent / "index.html").exists()


def test_demo_out_inside_a_cache_dataset_is_refused_before_any_work(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    month = cache / "sandbox" / "test" / "refunds" / "created_month=2026-09"
    result = CliRunner().invoke(main, ["demo", "--out", str(month)])
    assert result.exit_code == 2, result.output
    assert "inside the cache's dataset" in result.stderr, result.stderr
    assert "Starting the embedded sandbox" not in result.output


def test_export_of_one_row_says_one_payment(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    out = tmp_path / "p.csv"
    result = CliRunner().invoke(
        main,
        ["export", "payments", "--format", "csv", "--out", str(out), "--account", "shop"],
        env=_env(shop, tmp_path / "cache"),
    )
    assert result.exit_code == 0, result.output
    assert f"wrote 1 payment to {out}" in result.stderr, result.stderr


@pytest.mark.parametrize("currency", ["", "  ", "RM", "ringgit", "MY1"])
def test_report_refuses_a_currency_that_is_no_code_before_it_syncs(
    shop: Shop, tmp_path: Path, currency: str
) -> None:
    # An empty or malformed --currency was refused by the report's tables only, after the
    # whole sync; a currency is a three-letter ISO 4217 code (gateway spec), checkable at once.
    shop.card()
    cache = tmp_path / "cache"
    out = tmp_path / "report"
    result = CliRunner().invoke(
        main, ["report", "--out", str(out), "--currency", currency], env=_env(shop, cache)
    )
    assert result.exit_code == 2, result.output
    assert "--currency" in result.stderr and "three-letter" in result.stderr, result.stderr
    assert "leave --currency out" in result.stderr
    assert not cache.exists() and not out.exists()


@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "spaces"])
def test_an_empty_api_key_file_is_refused_as_empty(blank: str, tmp_path: Path) -> None:
    # `--api-key-file "$KEY_FILE"` with the variable unset was read as the working directory
    # ("cannot read .: Is a directory", a path nobody typed), and with --source, where the
    # option is refused, it was dropped without a word.
    runner = CliRunner()
    env = {"GW_API_KEY": "", "GW_BASE_URL": "", "GW_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "p.csv"
    for args in (
        ["sync"],
        ["export", "payments", "--format", "csv", "--out", str(out), "--source", str(SAMPLE)],
    ):
        result = runner.invoke(main, [*args, "--api-key-file", blank], env=env)
        assert result.exit_code == 2, result.output
        assert "--api-key-file" in result.stderr and "is empty" in result.stderr, result.stderr
        assert "GW_API_KEY" in result.stderr
        assert not out.exists() and not (tmp_path / "cache").exists()


@pytest.mark.parametrize("option", ["--spark-path", "--spark-master"])
def test_an_empty_spark_option_without_source_spark_is_refused(option: str, tmp_path: Path) -> None:
    # `--spark-path "$P"` with P unset and --source spark forgotten slipped past the CLI's
    # "need --source spark" (an empty text is false), to the library's words, after any sync:
    # "open_source(a cache folder or URL) does not use spark_path".
    out = tmp_path / "report"
    result = CliRunner().invoke(
        main,
        ["report", "--out", str(out), "--source", str(SAMPLE), option, "", "--currency", "ZZZ"],
    )
    assert result.exit_code == 2, result.output
    assert "need --source spark" in result.stderr, result.stderr
    assert not out.exists()


def test_monitor_refuses_a_baseline_that_is_not_a_number_in_the_option_s_words(
    tmp_path: Path,
) -> None:
    # click's FloatRange lets NaN through; the library then refused it as "baseline_days must
    # be a number of days above 0", naming a Python argument and a range the option is not.
    env = {"GW_API_KEY": "", "GW_BASE_URL": "", "GW_CACHE_DIR": str(SAMPLE)}
    result = CliRunner().invoke(main, ["monitor", "--baseline-days", "nan"], env=env)
    assert result.exit_code == 2, result.output
    assert "--baseline-days" in result.stderr and "1 to 3650" in result.stderr, result.stderr
    assert "baseline_days" not in result.stderr


@pytest.mark.parametrize(("typed", "meant"), [("exprot", "export"), ("snyc", "sync")])
def test_a_mistyped_command_names_the_command_meant(typed: str, meant: str) -> None:
    # click said "No such command 'exprot'." alone, while a mistyped option gets its
    # "Did you mean …?"
    result = CliRunner().invoke(main, [typed])
    assert result.exit_code == 2, result.output
    assert f"No such command '{typed}'. Did you mean '{meant}'?" in result.stderr, result.stderr


def test_a_key_typed_as_a_command_is_masked_and_gets_no_suggestion() -> None:
    key = "sk_test_" + "q" * 28
    result = CliRunner().invoke(main, [key])
    assert result.exit_code == 2 and key not in result.output, result.output
    assert "No such command" in result.stderr and "Did you mean" not in result.stderr


def test_export_status_given_as_a_comma_list_says_to_repeat_the_option(tmp_path: Path) -> None:
    # `--status failed,succeeded` was refused as "not a payment status" and the list of
    # statuses, with nothing on how to give two: the option repeats.
    env = {"GW_API_KEY": "", "GW_BASE_URL": "", "GW_CACHE_DIR": str(SAMPLE)}
    out = tmp_path / "p.csv"
    args = ["export", "payments", "--format", "csv", "--out", str(out), "--no-refresh"]
    result = CliRunner().invoke(main, [*args, "--status", "failed, succeeded"], env=env)
    assert result.exit_code == 2 and not out.exists(), result.output
    assert "give --status failed --status succeeded" in result.stderr, result.stderr
    # one that is no status either way keeps the library's words alone
    result = CliRunner().invoke(main, [*args, "--status", "declined"], env=env)
    assert result.exit_code == 2 and "--status declined --status" not in result.stderr


def test_an_empty_base_url_with_source_is_refused_as_the_option_is(tmp_path: Path) -> None:
    # `--base-url "$URL"` with URL unset beside --source was dropped without a word (an empty
    # text is false), while any other --base-url there is refused: the source is read as it is.
    out = tmp_path / "p.csv"
    args = ["export", "payments", "--format", "csv", "--out", str(out), "--source", str(SAMPLE)]
    result = CliRunner().invoke(main, [*args, "--base-url", ""])
    assert result.exit_code == 2 and not out.exists(), result.output
    assert "leave out --api-key-file, --base-url and --cache-dir" in result.stderr, result.stderr
    report = tmp_path / "report"
    result = CliRunner().invoke(
        main, ["report", "--out", str(report), "--source", str(SAMPLE), "--base-url", ""]
    )
    assert result.exit_code == 2 and not report.exists(), result.output
    assert "leave out --api-key-file, --base-url and --cache-dir" in result.stderr, result.stderr


def test_run_report_refuses_an_out_dir_inside_a_cache_before_it_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The library call the CLI makes: a notebook user's run_report("…/created_month=…/r")
    # got no such check, and the CLI's came from a private module (the CLI may use public
    # names only).
    from gwtools import ConfigurationError
    from gwtools.report import check_out_dir, run_report

    monkeypatch.setenv("GW_API_KEY", "sk_test_x")
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    month = cache / "sandbox" / "test" / "payments" / "created_month=2026-09"
    before = sorted(p.name for p in month.iterdir())
    check_out_dir(tmp_path / "elsewhere")  # outside: nothing said
    for inside in (month / "report", month):
        with pytest.raises(ConfigurationError, match="inside the cache's dataset"):
            check_out_dir(inside)
        # a key that points nowhere: had it synced first, the error would be the gateway's
        with pytest.raises(ConfigurationError, match="inside the cache's dataset"):
            run_report(inside, base_url="http://127.0.0.1:9")
    assert sorted(p.name for p in month.iterdir()) == before
