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
