"""Paths and sources the commands are given: refused in one line before any work, and
nothing left behind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from gwtools.cli import main
from gwtools.cli._paths import oserror_line
from gwtools.report import run_report
from gwtools.sandbox.cli import sandbox
from tests.library._shop import Shop
from tests.library.test_cli import NO_KEY, SAMPLE, _export, _sandbox_threads, partial_copy


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), env={**NO_KEY, **(env or {})})
    return result.exit_code, result.output


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("not a folder\n")
    return path


def test_export_into_a_missing_folder_is_refused_before_reading(tmp_path: Path) -> None:
    out = tmp_path / "no" / "such" / "out.csv"
    code, said = _run("export", "payments", "--format", "csv", "--out", str(out),
                      "--source", str(SAMPLE))  # fmt: skip
    assert code == 2, said
    assert f"cannot write {out}: the folder {out.parent} does not exist" in said
    assert "Traceback" not in said and not (tmp_path / "no").exists()


def test_report_and_demo_under_a_file_are_refused_before_any_sync(a_file: Path) -> None:
    code, said = _run("report", "--out", str(a_file / "report"), "--source", str(SAMPLE))
    assert code == 2 and f"cannot write {a_file / 'report'}: Not a directory" in said, said
    code, said = _run("demo", "--out", str(a_file / "report"))
    assert code == 2 and "Not a directory" in said, said
    assert "Starting the embedded sandbox" not in said  # refused before the sandbox starts
    code, said = _run("report", "--out", str(a_file), "--source", str(SAMPLE))
    assert code == 2 and "is a file" in said, said


def test_a_writable_report_folder_is_checked_without_leaving_it_behind(tmp_path: Path) -> None:
    # The check makes and removes the folders; a report whose source fails leaves none.
    out = tmp_path / "a" / "b"
    code, said = _run("report", "--out", str(out), "--source", str(tmp_path / "nothing"))
    assert code == 2 and "no cache at" in said, said
    assert not (tmp_path / "a").exists()


def test_report_refuses_days_in_the_wrong_order_and_an_absent_currency(tmp_path: Path) -> None:
    # Usage errors (status 2) naming the option, as `gwtools export` refuses its filters.
    out = tmp_path / "report"
    code, said = _run("report", "--out", str(out), "--source", str(SAMPLE),
                      "--since", "2024-05-10", "--until", "2024-05-01")  # fmt: skip
    assert code == 2 and "Invalid value for --since" in said, said
    assert "--since=2024-05-10 is after --until=2024-05-01" in said, said
    code, said = _run("report", "--out", str(out), "--source", str(SAMPLE), "--currency", "ZZZ")
    assert code == 2 and "Invalid value for --currency" in said, said
    assert "currency='ZZZ': the payments are in MYR" in said, said
    assert not out.exists()


@pytest.mark.parametrize("blank", ["", "  "])
def test_report_refuses_an_empty_currency_instead_of_dropping_it(
    blank: str, tmp_path: Path
) -> None:
    # `--currency "$CUR"` with CUR unset is no currency chosen by mistake: a report of every
    # currency under the name of one would be the user's value silently dropped.
    out = tmp_path / "report"
    code, said = _run("report", "--out", str(out), "--source", str(SAMPLE), "--currency", blank)
    assert code == 2 and "Invalid value for --currency" in said, said
    assert "empty" in said and "MYR" in said and "leave" in said, said
    assert not out.exists()


def test_sandbox_files_and_host_are_checked(tmp_path: Path, a_file: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(sandbox, ["--db", str(tmp_path / "no" / "s.db"), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert f"cannot write {tmp_path / 'no' / 's.db'}: the folder {tmp_path / 'no'} does not " in (
        result.output
    )
    result = runner.invoke(sandbox, ["--key-file", str(a_file / "key"), "--port", "0"])
    assert result.exit_code == 2, result.output
    assert f"cannot write {a_file / 'key'}: {a_file} is a file, not a folder" in result.output
    result = runner.invoke(sandbox, ["--host", "256.1.1.1", "--port", "0"])
    assert result.exit_code == 1, result.output
    assert "cannot listen on 256.1.1.1:0" in result.output
    assert "pick another --host" in result.output and "--port" not in result.output


def test_sources_that_are_not_caches_say_so(tmp_path: Path, a_file: Path) -> None:
    for blank in ("", "  "):  # `--source "$SRC"` with the variable unset: a usage error
        _, result = _export(tmp_path, NO_KEY, "--source", blank)
        said = result.output
        assert result.exit_code == 2, said
        assert f"--source {blank!r} is empty" in said and "leave --source out" in said, said
        code, said = _run("report", "--out", str(tmp_path / "r"), "--source", blank, env=NO_KEY)
        assert code == 2 and f"--source {blank!r} is empty" in said, said
        assert not (tmp_path / "r").exists()
    _, result = _export(tmp_path, NO_KEY, "--source", str(a_file))
    assert result.exit_code == 1 and "is a file, not a cache folder" in result.output
    _, result = _export(tmp_path, NO_KEY, "--source", "memory://")
    assert result.exit_code == 1 and "on memory" in result.output and "py::" not in result.output


def test_an_accounts_folder_is_a_source(tmp_path: Path) -> None:
    shutil.copytree(SAMPLE / "sandbox", tmp_path / "sandbox")
    out, result = _export(tmp_path, NO_KEY, "--source", str(tmp_path / "sandbox"))
    assert result.exit_code == 0, result.output
    assert "wrote 2,000 payments" in result.output and out.exists()


def test_report_reads_the_account_it_is_given_and_refuses_gateway_options(
    tmp_path: Path,
) -> None:
    root = tmp_path / "cache"
    for account in ("shop-a", "shop-b"):
        shutil.copytree(SAMPLE / "sandbox", root / account)
    out = tmp_path / "report"
    # the account's data is opened (and its currencies checked) before any notebook runs
    code, said = _run("report", "--out", str(out), "--source", str(root), "--account", "shop-b",
                      "--currency", "ZZZ")  # fmt: skip
    assert code == 2 and "currency='ZZZ': the payments are in MYR" in said, said
    code, said = _run("report", "--out", str(out), "--source", str(root), "--currency", "ZZZ")
    assert code == 1 and "add --account NAME" in said, said
    for option in ("--base-url", "--cache-dir"):
        code, said = _run("report", "--out", str(out), "--source", str(root), option, "x")
        assert code == 2 and "leave out --api-key-file, --base-url and --cache-dir" in said, said
    code, said = _run("report", "--out", str(out), "--source", "spark", "--spark-path",
                      str(root / "shop-a"), "--account", "shop-a")  # fmt: skip
    assert code == 2 and "give --spark-path the account's folder" in said, said
    assert not out.exists()


def test_advice_on_an_empty_cache_fits_the_command(tmp_path: Path) -> None:
    env = {"GW_CACHE_DIR": str(tmp_path / "empty")}
    for command in ("check", "monitor"):
        code, said = _run(command, env=env)
        assert code == 2 and "Run `gwtools sync` with the same options first." in said, said
        assert "export" not in said
    _, result = _export(tmp_path, {**NO_KEY, **env}, "--no-refresh")
    assert "or export without --no-refresh" in result.output


def test_a_cache_dir_inside_a_cache_is_named_not_met_with_sync_first(tmp_path: Path) -> None:
    # --cache-dir at a mode's, an account's or a dataset's folder of a synced cache said
    # "nothing cached yet … Run `gwtools sync` with the same options first", which would
    # start a second cache nested inside the first.
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    for inner in ("sandbox/test", "sandbox", "sandbox/test/payments"):
        given = cache / inner
        code, said = _run("check", "--cache-dir", str(given))
        assert code == 2, said
        assert f"{given} is a folder inside the cache {cache}" in said, said
        assert f"give --cache-dir {cache}" in said and "Run `gwtools sync`" not in said, said
        _, result = _export(tmp_path, NO_KEY, "--no-refresh", "--cache-dir", str(given))
        assert f"give --cache-dir {cache}" in result.output, result.output
        assert f"or --source {given}" in result.output, result.output
    code, said = _run("check", "--cache-dir", str(cache))
    assert code == 0, said


def test_a_mistyped_account_is_shown_the_accounts_the_cache_holds(tmp_path: Path) -> None:
    # --account sandbx (a typo) was told "Run `gwtools sync` with the same options first",
    # which syncs the whole history again into a second account folder.
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    env = {"GW_CACHE_DIR": str(cache)}
    code, said = _run("check", "--account", "sandbx", env=env)
    assert code == 2, said
    assert f"{cache} holds account 'sandbox' in test mode" in said, said
    assert "check --account" in said and "Run `gwtools sync`" not in said, said
    _, result = _export(tmp_path, {**NO_KEY, **env}, "--no-refresh", "--account", "sandbx")
    assert "holds account 'sandbox' in test mode" in result.output, result.output
    # an account of its own with nothing in it yet is still told to sync
    (cache / "sandbox" / "test" / "payments").rename(tmp_path / "moved")
    code, said = _run("check", "--account", "sandbox", env=env)
    assert code == 2 and "Run `gwtools sync` with the same options first" in said, said


def test_an_os_error_reads_as_one_line_naming_the_path() -> None:
    hidden = OSError(2, "No such file or directory", "/x/reports/.out.csv.1a2b.tmp")
    assert oserror_line(hidden) == "cannot use /x/reports: No such file or directory"
    plain = PermissionError(13, "Permission denied", "/x/out.csv")
    assert oserror_line(plain).startswith("cannot use /x/out.csv: Permission denied: ")


def test_a_cache_folder_that_is_a_file_is_one_line_before_anything_starts(
    tmp_path: Path, a_file: Path
) -> None:
    before = _sandbox_threads()
    code, said = _run("sync", "--cache-dir", str(a_file))
    assert code == 1 and said.startswith(f"Error: {a_file} is a file, not a folder"), said
    assert "Usage:" not in said
    below = {"GW_CACHE_DIR": str(a_file / "cache")}  # a file above it is as wrong
    for command, status in (
        (["sync"], 1),
        (["export", "payments", "--format", "csv", "--out", str(tmp_path / "p.csv")], 1),
        (["export", "payments", "--format", "csv", "--out", str(tmp_path / "p.csv"),
          "--no-refresh"], 1),
        (["monitor"], 2),
        (["check"], 2),
    ):  # fmt: skip
        code, said = _run(*command, env=below)
        assert code == status, (command, said)
        assert said == f"Error: {a_file} is a file, not a folder: the cache goes in " + (
            f"{a_file / 'cache' / 'sandbox' / 'test'}; give GW_CACHE_DIR a folder (or a path "
            "where one can be made)\n"
        ), (command, said)
    # checked before the sandbox (whose variant here is invalid) would start
    assert _sandbox_threads() == before and not (tmp_path / "p.csv").exists()


def test_report_with_source_spark_reads_a_local_spark_path_as_a_cache(tmp_path: Path) -> None:
    """The index page's overview reads a local --spark-path with DuckDB (the notebooks, with
    Spark, are left out here: tests/engines holds the Spark tests)."""
    folder = SAMPLE / "sandbox" / "test"
    result = run_report(tmp_path / "report", source="spark", spark_path=str(folder), notebooks=())
    assert result.overview.payments == 2000 and result.source == "a local cache"
    assert (tmp_path / "report" / "index.html").exists()


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--until", "9999-12-31"], "--until"),
        (["--since", "0001-01-01", "--until", "0001-01-10"], "--since"),
    ],
)
def test_dates_at_the_calendars_ends_are_refused_naming_the_option(
    args: list[str], option: str, tmp_path: Path
) -> None:
    code, said = _run("report", "--out", str(tmp_path / "r"), "--source", str(SAMPLE), *args)
    assert code == 2 and f"Invalid value for '{option}'" in said, said
    assert "leaves no room on the calendar" in said and "Traceback" not in said
    assert not (tmp_path / "r").exists()
    code, said = _run("monitor", *args, env={"GW_CACHE_DIR": str(tmp_path / "empty")})
    assert code == 2 and said.startswith(f"Error: Invalid value for {option}: "), said
    assert "leaves no room on the calendar" in said


def test_report_takes_a_date_time_as_export_and_monitor_do() -> None:
    result = CliRunner().invoke(main, ["report", "--help"], terminal_width=200)
    assert "First local day, YYYY-MM-DD, or a date-time" in result.output
    code, said = _run("report", "--out", "r", "--source", str(SAMPLE), "--since",
                      "2026-11-01T23:00", "--currency", "ZZZ")  # fmt: skip
    assert code == 2 and "Invalid value for --currency" in said, said  # --since was taken


@pytest.mark.slow
def test_report_on_a_cache_known_partial_exits_3_after_writing_it(tmp_path: Path) -> None:
    out = tmp_path / "report"
    code, said = _run("report", "--out", str(out), "--source", str(partial_copy(tmp_path)))
    assert code == 3, said
    assert (out / "index.html").exists() and "INCOMPLETE" in said  # the data line
    assert "gwtools report: the last sync of the cached payments was incomplete: " in said
    assert "Warning:" not in said  # said once


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--source", str(SAMPLE)],
        ["demo"],
        ["monitor"],
        ["check"],
    ],
    ids=lambda c: c[0],
)
def test_an_empty_tz_is_refused_not_taken_for_the_default(
    command: list[str], tmp_path: Path
) -> None:
    # `--tz "$TZ_NAME"` with the variable unset: days bucketed in UTC (or GW_TIMEZONE) while
    # the user asked for a zone would be their value silently dropped.
    out = ["--out", str(tmp_path / "r")] if command[0] in ("report", "demo") else []
    cache = SAMPLE if command[0] in ("monitor", "check") else tmp_path / "cache"
    env = {"GW_CACHE_DIR": str(cache), "GW_TIMEZONE": ""}
    code, said = _run(*command, *out, "--tz", "", env=env)
    assert code == 2, said
    assert "--tz" in said and "empty" in said and "Asia/Kuala_Lumpur" in said, said
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "command",
    [["report", "--source", str(SAMPLE)], ["demo"], ["monitor"], ["check"]],
    ids=lambda c: c[0],
)
def test_a_misspelt_tz_is_a_usage_error_naming_the_option(
    command: list[str], tmp_path: Path
) -> None:
    # monitor and check read the cache first and then blamed "tz=", a name nobody typed on
    # the command line; report and demo refused it at once as --tz.
    out = ["--out", str(tmp_path / "r")] if command[0] in ("report", "demo") else []
    cache = SAMPLE if command[0] in ("monitor", "check") else tmp_path / "cache"
    code, said = _run(*command, *out, "--tz", "Asia/Kuala_Lumpr", env={"GW_CACHE_DIR": str(cache)})
    assert code == 2, said
    assert "Invalid value for '--tz'" in said and "given as tz=" not in said, said
    assert "'Asia/Kuala_Lumpur'" in said  # the likely name
    assert not (tmp_path / "r").exists()


def test_demo_blames_a_bad_gw_timezone_on_the_variable_not_on_tz(tmp_path: Path) -> None:
    # The demo's zone defaults to GW_TIMEZONE's: a bad one must be named where it was set,
    # not reported as a value "given as tz=" that nobody typed.
    env = {"GW_CACHE_DIR": str(tmp_path / "cache"), "GW_TIMEZONE": "Asia/Kuala_Lumpr"}
    code, said = _run("demo", "--out", str(tmp_path / "r"), env=env)
    assert code == 2, said
    assert "'Asia/Kuala_Lumpr' in GW_TIMEZONE" in said and "given as tz=" not in said, said
    assert "Asia/Kuala_Lumpur" in said  # the likely name
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "command",
    [["sync"], ["export", "payments", "--format", "csv", "--out", "p.csv"], ["check"]],
    ids=lambda c: c[0],
)
def test_an_empty_cache_dir_is_refused_not_taken_for_here(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--cache-dir "$DIR"` with the variable unset: the sync wrote a second cache into the
    # working directory (sandbox/test/…), away from GW_CACHE_DIR's, and said nothing.
    monkeypatch.chdir(tmp_path)
    env = {"GW_CACHE_DIR": str(tmp_path / "cache")}
    code, said = _run(*command, "--cache-dir", "", env=env)
    assert code == 2, said
    assert "--cache-dir" in said and "is empty" in said and "leave --cache-dir out" in said, said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [
        ["report", "--source", str(SAMPLE)],
        ["demo"],
        ["export", "payments", "--format", "csv", "--source", str(SAMPLE)],
    ],
    ids=lambda c: c[0],
)
@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "spaces"])
def test_an_empty_out_is_refused_not_taken_for_here(
    command: list[str], blank: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--out "$OUT"` with the variable unset: the report's pages, index.html and tables/
    # were written all over the working directory.
    monkeypatch.chdir(tmp_path)
    code, said = _run(*command, "--out", blank, env={"GW_CACHE_DIR": str(tmp_path / "cache")})
    assert code == 2, said
    assert "--out" in said and "is empty" in said, said
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("how", ["zero-byte", "truncated"])
def test_a_damaged_cache_file_is_one_line_naming_it_not_a_traceback(
    how: str, tmp_path: Path
) -> None:
    # A month file cut short (a disk that filled up, a copy interrupted) made check, monitor
    # and export end in DuckDB's traceback. The readers now leave it out, so the data is
    # partial: monitor and export say so once and exit 3 (the output written), as for any
    # partial cache; check's rules fail on the missing rows (1), the file named above them.
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    parts = sorted((cache / "sandbox" / "test" / "payments").glob("*/*.parquet"))
    part = parts[1]
    readable = sum(pq.read_metadata(f).num_rows for f in parts if f != part)
    part.write_bytes(b"" if how == "zero-byte" else part.read_bytes()[:1000])
    out = tmp_path / "p.csv"
    runs = {
        "check": (["check"], 1),
        "monitor": (["monitor"], 3),
        "export": (
            ["export", "payments", "--format", "csv", "--out", str(out), "--no-refresh"],
            3,
        ),
    }
    for name, (args, status) in runs.items():
        result = CliRunner().invoke(main, args, env={**NO_KEY, "GW_CACHE_DIR": str(cache)})
        said = result.output
        assert result.exit_code == status, (name, said)
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), (name, result.exception)
        assert "Traceback" not in said and "Error:" not in said, (name, said)
        assert said.count(str(part)) == 1 and "gwtools sync" in said, (name, said)
    assert len(pd.read_csv(out)) == readable  # every row of the other months


def test_report_blames_a_bad_gw_timezone_on_the_variable_not_on_tz(tmp_path: Path) -> None:
    # No --tz given: "Invalid value for '--tz'" sent the user looking for an option they did
    # not type; the line is the variable's.
    env = {"GW_TIMEZONE": "Asia/Kuala_Lumpr"}
    code, said = _run("report", "--out", str(tmp_path / "r"), "--source", str(SAMPLE), env=env)
    assert code == 2, said
    assert "'Asia/Kuala_Lumpr' in GW_TIMEZONE" in said and "'--tz'" not in said, said
    assert not (tmp_path / "r").exists()


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_sync_into_a_folder_inside_a_cache_is_refused(shop: Shop, tmp_path: Path) -> None:
    # `gwtools sync --cache-dir cache/shop/test/payments` made a second cache inside the
    # dataset's folder (…/payments/shop/test/payments/…), whose Parquet files the first
    # cache's readers then found among its own rows.
    shop.card()
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    before = _tree(cache)
    month = next((cache / "sandbox/test/payments").glob("created_month=*"))
    env = {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url}
    for inner in (
        month,
        cache / "sandbox/test/payments",
        cache / "sandbox/test",
        cache / "sandbox",
    ):
        for args, extra, advice in (
            (["--cache-dir", str(inner)], {}, f"give --cache-dir {cache}"),
            ([], {"GW_CACHE_DIR": str(inner)}, f"set GW_CACHE_DIR to {cache}"),
        ):
            result = CliRunner().invoke(main, ["sync", *args], env={**env, **extra})
            assert result.exit_code == 1, (inner, result.output)
            assert f"{inner} is a folder inside the cache {cache}" in result.stderr, result.stderr
            assert advice in result.stderr, result.stderr
            assert _tree(cache) == before, f"{inner}: a cache was made inside the cache"
    # the same sync with the cache itself (or a folder outside it) runs
    result = CliRunner().invoke(main, ["sync", "--cache-dir", str(tmp_path / "own")], env=env)
    assert result.exit_code == 0, result.output
    # a read of a month's folder is told the same, not "run gwtools sync first"
    code, said = _run("check", "--cache-dir", str(month))
    assert code == 2 and f"give --cache-dir {cache}" in said, said
    # "~/…" as a script quotes it, or GW_CACHE_DIR holds it: the home folder's cache
    home = {**env, "HOME": str(tmp_path)}
    for args, extra in (
        (["--cache-dir", "~/cache/sandbox"], {}),
        ([], {"GW_CACHE_DIR": "~/cache/sandbox"}),
    ):
        result = CliRunner().invoke(main, ["sync", *args], env={**home, **extra})
        assert result.exit_code == 1 and f"inside the cache {cache}" in result.stderr, result.output
        assert _tree(cache) == before


@pytest.mark.parametrize("inner", ["shop-b", "shop-b/test"])
def test_report_reads_an_accounts_own_folder_with_its_account(inner: str, tmp_path: Path) -> None:
    # --source at the account's (or its mode's) folder with --account naming that
    # account passed the check of the folder, then read {source}/{account}, which is no
    # folder: "no cache at …/shop-b/shop-b: run gwtools sync first".
    root = tmp_path / "cache"
    for account in ("shop-a", "shop-b"):
        shutil.copytree(SAMPLE / "sandbox", root / account)
    out = tmp_path / "report"
    # (an absent currency stops the report once its data is open, before any notebook runs)
    code, said = _run("report", "--out", str(out), "--source", str(root / inner),
                      "--account", "shop-b", "--currency", "ZZZ")  # fmt: skip
    assert code == 2 and "currency='ZZZ': the payments are in MYR" in said, said
    assert "no cache at" not in said and not out.exists()


def test_a_file_system_error_says_what_to_do_about_it(tmp_path: Path) -> None:
    # A dataset's _state.json that is a folder was "cannot use …/_state.json: Is a directory"
    # from every command: what was wrong, not what to do about it.
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    state = cache / "sandbox/test/refunds/_state.json"
    state.unlink()
    state.mkdir()
    env = {"GW_CACHE_DIR": str(cache)}
    for command, status in (
        (["check"], 2),
        (["export", "refunds", "--format", "csv", "--out", str(tmp_path / "r.csv"),
          "--no-refresh"], 1),
    ):  # fmt: skip
        code, said = _run(*command, env=env)
        assert code == status, said
        # (the library's CacheError now says it; oserror_line, below, says the rest)
        assert said.startswith(f"Error: {state} is a folder, not the file where"), said
        assert "Move that folder out of the cache" in said and said.count("\n") == 1, said
    assert not (tmp_path / "r.csv").exists()
    # the other errors a path meets, each with its way out
    for exc, advice in (
        (PermissionError(13, "Permission denied", "/x/out.csv"), "give this user access"),
        (OSError(30, "Read-only file system", "/x/out.csv"), "a writable file system"),
        (OSError(28, "No space left on device", "/x/out.csv"), "free some space"),
        (NotADirectoryError(20, "Not a directory", "/x/a/b"), "a file stands where a folder"),
    ):
        line = oserror_line(exc)
        assert line.startswith(f"cannot use {exc.filename}: {exc.strerror}: "), line
        assert advice in line, line


def test_a_url_as_cache_dir_is_refused_not_made_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--cache-dir s3://bucket/gw` made a local folder ./s3:/bucket/gw/… and synced into it
    # (the cache a sync writes is local; shared storage is read with --source), and the
    # read commands failed with pyarrow's "Expected a local filesystem path, got a URI".
    monkeypatch.chdir(tmp_path)
    for command in (["sync"], ["check"], ["export", "payments", "--format", "csv", "--out",
                                          str(tmp_path / "p.csv"), "--no-refresh"]):  # fmt: skip
        code, said = _run(*command, "--cache-dir", "s3://bucket/gw")
        assert code == 2, (command, said)
        assert "--cache-dir s3://bucket/gw is a URL" in said and "--source" in said, said
        code, said = _run(*command, env={"GW_CACHE_DIR": "s3://bucket/gw"})
        assert code == (2 if command == ["check"] else 1), (command, said)
        assert "GW_CACHE_DIR s3://bucket/gw is a URL" in said, said
    assert list(tmp_path.iterdir()) == []


def test_an_api_key_given_as_account_is_refused_in_the_commands_words(tmp_path: Path) -> None:
    # `--account sk_live_…` (the key pasted into the wrong option) was refused in the
    # library's words, "pass the key as api_key= (or GW_API_KEY) … account='shop-my'": an
    # argument the command line refuses to take, and status 1 (2 for check), as a failed run.
    key = "sk_live_51H" + "q" * 24
    env = {"GW_CACHE_DIR": str(tmp_path / "cache")}
    for command in (["sync"], ["check"], ["export", "payments", "--format", "csv", "--out",
                                          str(tmp_path / "p.csv"), "--no-refresh"]):  # fmt: skip
        code, said = _run(*command, "--account", key, env=env)
        assert code == 2, (command, said)
        assert "--account looks like an API key" in said, said
        assert "GW_API_KEY or --api-key-file" in said and "--account shop-my" in said, said
        assert "api_key=" not in said and key not in said, said
    assert not (tmp_path / "cache").exists()
