"""``--source`` of ``gwtools export`` and ``gwtools report``: a folder holding several accounts
or modes, or none at all, is refused with advice in the command line's own flags."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from gwtools.cli import main
from tests.library.test_cli import NO_KEY, SAMPLE


def _run(command: str, tmp_path: Path, *args: str) -> Result:
    if command == "export":
        head = ["export", "payments", "--format", "csv", "--out", str(tmp_path / "out.csv")]
    else:
        head = ["report", "--out", str(tmp_path / "report")]
    return CliRunner().invoke(main, [*head, *args], env=NO_KEY)


def _nothing_written(tmp_path: Path) -> bool:
    return not (tmp_path / "out.csv").exists() and not (tmp_path / "report").exists()


def _api_words(said: str) -> list[str]:
    """The library's advice in Python terms, which a command-line user cannot type."""
    return [w for w in ("pass account=", "mode=", "connect(", "account=") if w in said]


@pytest.fixture
def accounts(tmp_path: Path) -> Path:
    """A cache folder of two accounts; shop-b holds live data as well as test data."""
    root = tmp_path / "cache"
    for account in ("shop-a", "shop-b"):
        shutil.copytree(SAMPLE / "sandbox", root / account)
    shutil.copytree(SAMPLE / "sandbox" / "test", root / "shop-b" / "live")
    return root


@pytest.mark.parametrize("command", ["export", "report"])
def test_several_accounts_name_them_and_the_flag_that_picks_one(
    command: str, accounts: Path, tmp_path: Path
) -> None:
    result = _run(command, tmp_path, "--source", str(accounts))
    said = result.output
    assert result.exit_code == 1, said
    assert f"{accounts} holds the cached payments of 2 accounts (shop-a, shop-b)" in said
    assert "add --account NAME to pick one, e.g. --account shop-a" in said
    # shop-b's live and test data: there is no --mode to add, so the mode's folder is named
    assert f"as gwtools {command} has no --mode, give the mode's folder as --source" in said
    assert f"--source {accounts / 'shop-b' / 'live'}" in said or (
        f"--source {accounts / 'shop-b' / 'test'}" in said
    )
    assert "add --mode" not in said and "--mode NAME" not in said
    assert _api_words(said) == [], said
    assert "Traceback" not in said and _nothing_written(tmp_path)


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_account_with_both_modes_names_the_folders_to_give(
    command: str, accounts: Path, tmp_path: Path
) -> None:
    result = _run(command, tmp_path, "--source", str(accounts), "--account", "shop-b")
    said = result.output
    assert result.exit_code == 1, said
    assert "holds both live and test payments of account shop-b" in said
    assert f"--source {accounts / 'shop-b' / 'live'} (live)" in said
    assert f"--source {accounts / 'shop-b' / 'test'} (test)" in said
    assert "(and leave out --account)" in said and _api_words(said) == [], said
    # which works: the mode's folder as the source
    result = _run(command, tmp_path, "--source", str(accounts / "shop-b" / "live"),
                  *(["--currency", "ZZZ"] if command == "report" else []))  # fmt: skip
    if command == "export":
        assert result.exit_code == 0 and "wrote 2,000 payments" in result.output, result.output
    else:  # the data was found: what stops it now is the currency (before any notebook)
        assert result.exit_code == 2 and "currency='ZZZ'" in result.output, result.output


def test_one_account_with_both_modes_without_account(tmp_path: Path) -> None:
    root = tmp_path / "modes"
    shutil.copytree(SAMPLE / "sandbox", root / "acct")
    shutil.copytree(SAMPLE / "sandbox" / "test", root / "acct" / "live")
    result = _run("export", tmp_path, "--source", str(root))
    said = result.output
    assert result.exit_code == 1, said
    assert "holds both live and test payments of account acct" in said
    assert f"--source {root / 'acct' / 'live'} (live) or" in said or (
        f"or --source {root / 'acct' / 'live'} (live)" in said
    )
    assert "leave out --account" not in said  # none was given
    assert _api_words(said) == [], said


@pytest.mark.parametrize("command", ["export", "report"])
def test_an_account_the_folder_does_not_hold_names_those_it_holds(
    command: str, accounts: Path, tmp_path: Path
) -> None:
    result = _run(command, tmp_path, "--source", str(accounts), "--account", "shop-c")
    said = result.output
    assert result.exit_code == 1, said
    assert f"no cached payments under {accounts} for --account shop-c" in said
    assert "give --account shop-a or --account shop-b, or leave --account out" in said
    # the report reads {source}/{account}: not "no cache at …/shop-c"
    assert "no cache at" not in said and "does not exist" not in said
    assert _nothing_written(tmp_path)


@pytest.mark.parametrize("command", ["export", "report"])
@pytest.mark.parametrize("uri", [False, True])
def test_a_source_that_does_not_exist_says_so_and_what_to_give(
    command: str, uri: bool, tmp_path: Path
) -> None:
    missing = tmp_path / "nonexistent" / "path"
    source = missing.as_uri() if uri else str(missing)
    result = _run(command, tmp_path, "--source", source)
    said = result.output
    assert result.exit_code == 2, said
    assert isinstance(result.exception, SystemExit)
    assert f"no cache at {source}: that folder does not exist" in said
    assert "give --source the folder `gwtools sync` filled" in said
    assert "cache:" in said and "s3://" in said  # where to find it, or a URL
    assert "leave --source out" in said
    assert "gwtools.connect" not in said and "Traceback" not in said
    assert _nothing_written(tmp_path) and not (tmp_path / "nonexistent").exists()


def test_a_file_as_the_source_gets_command_line_advice(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x\n")
    result = _run("export", tmp_path, "--source", str(a_file))
    assert result.exit_code == 1, result.output
    assert f"{a_file} is a file, not a cache folder: give --source the folder" in result.output
    assert "gwtools.connect" not in result.output and "cache_dir=" not in result.output


def test_no_key_is_shown_in_source_advice(tmp_path: Path) -> None:
    key = "sk_test_" + "q" * 20 + "abcd"
    result = _run("export", tmp_path, "--source", str(tmp_path / key))
    assert result.exit_code == 2, result.output
    assert key not in result.output and "…abcd" in result.output


@pytest.mark.parametrize("command", ["export", "report"])
@pytest.mark.parametrize("blank", ["", " "])
def test_an_empty_account_is_refused_not_dropped(
    command: str, blank: str, accounts: Path, tmp_path: Path
) -> None:
    # `--account "$ACCOUNT"` with the variable unset: the report read every account of the
    # folder as if none had been given, and the export said "no cached payments under …: run
    # a sync first", though the folder holds two accounts' payments.
    result = _run(command, tmp_path, "--source", str(accounts), "--account", blank)
    said = result.output
    assert result.exit_code == 2, said
    assert "--account" in said and "is empty" in said and "leave --account out" in said, said
    assert "run a sync first" not in said and _api_words(said) == [], said
    assert _nothing_written(tmp_path)


def test_report_reads_the_source_names_as_the_library_does(tmp_path: Path) -> None:
    # open_source reads "GATEWAY" or "Spark " as the name (unless such a folder exists) and
    # answers a near miss with the likely name; the command line refused them as folders
    # that do not exist, the near miss without a word about the name meant.
    result = _run("report", tmp_path, "--source", "GATEWAY", "--api-key-file", "missing.key")
    said = result.output
    assert result.exit_code == 2, said
    assert "cannot read missing.key" in said and "no cache at" not in said, said
    result = _run("report", tmp_path, "--source", "gatway")
    said = result.output
    assert result.exit_code == 2, said
    assert "no cache at gatway" in said and "did you mean --source gateway?" in said, said
    assert _nothing_written(tmp_path)


def test_export_refuses_refresh_with_a_source_instead_of_ignoring_it(tmp_path: Path) -> None:
    # --source reads a cache as it is, syncing nothing: an explicit --refresh (sync first)
    # cannot be done there, and was dropped without a word.
    result = _run("export", tmp_path, "--source", str(SAMPLE), "--refresh")
    said = result.output
    assert result.exit_code == 2, said
    assert "--refresh" in said and "--source" in said, said
    assert _nothing_written(tmp_path)
    result = _run("export", tmp_path, "--source", str(SAMPLE), "--no-refresh")
    assert result.exit_code == 0, result.output  # what --source does anyway
