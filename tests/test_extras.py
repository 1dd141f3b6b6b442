"""Without an optional extra, gwtools says which one to install (the packages really absent).

Each case runs in a fresh interpreter whose ``sys.meta_path`` starts with a finder that refuses
the extra's packages, as an install without the extra would: no gwtools code is replaced.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Prepended to each child's code: imports of these top-level packages fail as if absent.
REFUSE = """
import importlib.abc, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {absent!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Absent())
"""


def run(absent: set[str], code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GW_API", "GW_BASE"))}
    env["GW_CACHE_DIR"] = str(tmp_path / "cache")
    source = REFUSE.format(absent=sorted(absent)) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", source],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_connect_with_no_key_names_the_sandbox_extra(tmp_path: Path) -> None:
    done = run(
        {"fastapi", "uvicorn"},
        """
        import gwtools
        try:
            gwtools.connect()
        except gwtools.ConfigurationError as exc:
            print("refused:", exc)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert 'pip install "gwtools[sandbox]"' in done.stdout
    assert "refused:" in done.stdout and "fastapi" in done.stdout


def test_the_library_works_without_the_extras(tmp_path: Path) -> None:
    """The core: read a cache and analyse it, with no sandbox, report or Spark packages."""
    done = run(
        {"fastapi", "uvicorn", "starlette", "papermill", "nbconvert", "ipykernel", "pyspark"},
        f"""
        import sys
        import gwtools
        from gwtools import analysis
        frame = gwtools.read_cache({str(ROOT / "data" / "sample-cache")!r}, "payments")
        rates = analysis.decline_rate(frame, freq="week")
        print(len(frame) > 0, int(rates["attempts"].sum()) == len(frame))
        print(sorted(m for m in ("fastapi", "papermill", "pyspark") if m in sys.modules))
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["True True", "[]"]


@pytest.mark.parametrize(
    ("command", "absent", "extra"),
    [
        (["report", "--out", "r"], {"papermill"}, "report"),
        (["demo", "--out", "r"], {"nbconvert"}, "report"),
        (["demo", "--out", "r"], {"fastapi"}, "sandbox"),
        (["sandbox", "--variant", "B"], {"fastapi"}, "sandbox"),
    ],
)
def test_commands_name_their_extra(
    command: list[str], absent: set[str], extra: str, tmp_path: Path
) -> None:
    done = run(
        absent,
        f"""
        import sys
        from gwtools.cli import main
        sys.argv = ["gwtools", *{command!r}]
        main()
        """,
        tmp_path,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f'pip install "gwtools[{extra}]"' in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()
