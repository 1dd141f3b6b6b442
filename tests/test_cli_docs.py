"""Every CLI command and option is documented in docs/cli.md (sqlite-utils' rule)."""

import re
from pathlib import Path

import click
import pytest

from gwtools.cli import COMMANDS, main

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def _sections() -> dict[str, str]:
    text = DOCS.read_text()
    parts = re.split(r"^## `gwtools (\w+)`", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_command_has_a_section() -> None:
    assert sorted(_sections()) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_documented(name: str) -> None:
    command = main.get_command(click.Context(main), name)
    assert command is not None
    section = _sections()[name]
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            flag = max(param.opts, key=len)
            assert flag in section, f"{flag} of `gwtools {name}` is not in docs/cli.md"
        elif isinstance(param, click.Argument):
            # An argument is documented by its name or, for a choice, by every choice.
            choices = getattr(param.type, "choices", None)
            shown = param.name and param.name.upper() in section
            assert shown or (choices and all(c in section for c in choices)), param.name


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_works(name: str) -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(main, [name, "--help"], prog_name="gwtools")
    assert result.exit_code == 0, result.output
    assert f"gwtools {name}" in result.output


def test_the_command_list_loads_no_command() -> None:
    """`gwtools --help` lists the commands without importing their modules (which load
    pandas, DuckDB, FastAPI: seconds), and lists them as it would after importing them."""
    import subprocess
    import sys

    code = """
import importlib, sys
from gwtools.cli import COMMANDS, main

def shown():
    try:
        main(["--help"], prog_name="gwtools", standalone_mode=False)
    except SystemExit:
        pass

shown()
heavy = ("pandas", "duckdb", "narwhals", "fastapi", "matplotlib")
print("LOADED", sorted(m for m in heavy if m in sys.modules))
for target in COMMANDS.values():
    importlib.import_module(target.split(":")[0])
shown()
"""
    env = {**__import__("os").environ, "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    lazy, _, rest = done.stdout.partition("LOADED ")
    loaded, _, eager = rest.partition("\n")
    assert loaded == "[]"
    assert lazy == eager and "sync     Bring the local Parquet cache" in lazy


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_help_shown_in_the_docs_is_the_commands_help(name: str) -> None:
    """Each section quotes its command's --help: a default, range or sentence changed in the
    code must change there too. Compared without whitespace, so wrapping does not count."""
    from click.testing import CliRunner

    shown = re.search(r"```text\n(.*?)```", _sections()[name], re.S)
    assert shown is not None, f"docs/cli.md shows no --help of gwtools {name}"
    actual = CliRunner().invoke(main, [name, "--help"], prog_name="gwtools").output
    assert re.sub(r"\s", "", shown[1]) == re.sub(r"\s", "", actual), (
        f"docs/cli.md's help of gwtools {name} differs from `gwtools {name} --help`:\n{actual}"
    )


def test_check_tz_help_says_what_the_zone_changes_in_a_check() -> None:
    """gwtools check runs the quality rules, not the monitors: its --tz moves the hours the
    hourly-holes rule counts, and there is no FPX outage in it to be in Malaysia time."""
    from click.testing import CliRunner

    shown = CliRunner().invoke(main, ["check", "--help"], terminal_width=200).output
    tz_help = next(line for line in shown.splitlines() if line.strip().startswith("--tz"))
    assert "FPX" not in tz_help
    assert "no_hourly_holes" in tz_help


def _shown_commands() -> list[tuple[str, str, bool]]:
    """Each `gwtools <command> ...` the README and docs show: (doc, text, is it a whole command
    line from a ```bash block). Inline mentions may be partial (`gwtools export --no-refresh`)."""
    import shlex

    root = DOCS.parents[1]
    shown = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text()
        shown += [(doc.name, c, False) for c in re.findall(r"`(gwtools [a-z][^`]*)`", text)]
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.splitlines():
                words = shlex.split(line, comments=True)
                # One pipeline step after another; a redirection ends the command's words.
                step: list[str] = []
                for word in [*words, "&&"]:
                    if word in {"&&", "||", "|", ";"} or word.startswith(">"):
                        if step[:1] == ["gwtools"] and len(step) > 1:
                            shown.append((doc.name, shlex.join(step), True))
                        step = [] if not word.startswith(">") else ["(redirected)"]
                    elif step or word == "gwtools":
                        step.append(word)
    return shown


def test_every_command_the_docs_show_uses_options_it_has() -> None:
    """A mistyped or renamed option in a copied command is the user's first error: each
    command line of a ```bash block parses as `gwtools` would parse it (options, choices,
    types), and each option of an inline `gwtools <command> --option` exists."""
    wrong = []
    for doc, shown, whole in _shown_commands():
        name, *args = shown.split()[1:]
        command = main.get_command(click.Context(main), name)
        if command is None:
            if whole or name in {"sandbox", "sync", "export", "report", "demo", "monitor"}:
                wrong.append(f"{doc}: {shown}: no command {name}")
            continue
        if whole:
            try:
                command.make_context(name, [a for a in args if a != "…"])
            except click.UsageError as error:
                wrong.append(f"{doc}: {shown}: {error.format_message()}")
            continue
        known = {o for p in command.params for o in [*p.opts, *p.secondary_opts]} | {"--help"}
        for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", shown):
            if not any(flag == o or flag in o.split("/") for o in known):
                wrong.append(f"{doc}: {shown}: {flag} is not an option of gwtools {name}")
    assert wrong == []
