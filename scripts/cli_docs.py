"""Regenerate the help blocks of docs/cli.md from the commands themselves.

The prose and examples of each ``## `gwtools NAME` `` section are written by hand and kept; only
the ```` ```text ```` block that follows them is replaced with the command's current ``--help``.
A command without a section stops the script: write its introduction first.

    python scripts/cli_docs.py
"""

import re
import sys
from pathlib import Path

from click.testing import CliRunner

from gwtools.cli import COMMANDS, main

DOC = Path("docs/cli.md")
SECTION = re.compile(r"^## `gwtools (?P<name>[a-z-]+)`\n", re.M)
HELP_BLOCK = re.compile(r"```text\n.*?\n```", re.S)

text = DOC.read_text()
starts = [(m.group("name"), m.start()) for m in SECTION.finditer(text)]
missing = sorted(set(COMMANDS) - {name for name, _ in starts})
if missing:
    sys.exit(
        f"docs/cli.md has no section for: {', '.join(missing)}; write their introductions first"
    )

pieces = [text[: starts[0][1]]]
for i, (name, start) in enumerate(starts):
    end = starts[i + 1][1] if i + 1 < len(starts) else len(text)
    section = text[start:end]
    help_text = (
        CliRunner().invoke(main, [name, "--help"], prog_name="gwtools", terminal_width=100).output
    )
    block = "```text\n" + help_text.rstrip() + "\n```"
    if HELP_BLOCK.search(section):
        section = HELP_BLOCK.sub(lambda _, block=block: block, section, count=1)
    else:
        section = section.rstrip("\n") + "\n\n" + block + "\n\n"
    pieces.append(section)
DOC.write_text("".join(pieces))
