"""Regenerate docs/cli.md's help blocks from the commands themselves."""

from pathlib import Path

from click.testing import CliRunner

from gwtools.cli import COMMANDS, main

INTRO = {
    "sandbox": (
        "Run the local sandbox gateway (either API variant) over real HTTP on loopback, "
        "optionally seeded with a deterministic history. Prints the base URL and a test secret key "
        "(a key of this local sandbox only); with `--key-file` the key goes to a mode-600 file instead.",
        "gwtools sandbox --variant A --seed-payments 5000 --days 90 --seed 7 --key-file sandbox.key",
    ),
    "sync": (
        "Bring the local Parquet cache up to date: new rows since the last high-water mark and every "
        "cached row that can still change. The key comes from `GW_API_KEY` or `--api-key-file`, never "
        "from the command line. With neither key nor base URL it syncs the embedded sandbox.",
        "GW_BASE_URL=http://127.0.0.1:8765 gwtools sync --api-key-file sandbox.key",
    ),
    "export": (
        "Write the canonical payments or refunds table (see [tables.md](tables.md)) to CSV or Parquet, "
        "synced first; with `--no-refresh` read from the cache alone, connecting to nothing (no "
        "key: the embedded sandbox's cache).",
        "gwtools export payments --format csv --out failed.csv --since 2026-10-01 --status failed",
    ),
    "report": (
        "Run the four analyst notebooks headless against the configured gateway and write "
        "self-contained HTML pages (code hidden) beside the CSV and Parquet tables they produce.",
        "gwtools report --out report/ --since 2026-09-01 --until 2026-09-30 --tz Asia/Kuala_Lumpur",
    ),
    "demo": (
        "The README's main job: start the embedded sandbox, sync its demo history, write the report "
        "to `./gwtools-report/` and print a one-screen summary.",
        "gwtools demo",
    ),
}

out = [
    "# The `gwtools` command line",
    "",
    "A thin layer over the library: every command calls public functions of `gwtools`. "
    "API keys are read from `GW_API_KEY` or a key file, never from an argument.",
    "",
]
for name in sorted(COMMANDS):
    text, example = INTRO[name]
    help_text = (
        CliRunner().invoke(main, [name, "--help"], prog_name="gwtools", terminal_width=100).output
    )
    out += [
        f"## `gwtools {name}`",
        "",
        text,
        "",
        "```bash",
        example,
        "```",
        "",
        "```text",
        help_text.rstrip(),
        "```",
        "",
    ]
Path("docs/cli.md").write_text("\n".join(out))
