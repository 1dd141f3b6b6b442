"""Without an optional extra, gwtools says which one to install (the packages really absent).

Each case runs in a fresh interpreter whose ``sys.meta_path`` starts with a finder that refuses
the extra's packages, as an install without the extra would: no gwtools code is replaced.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from importlib.metadata import packages_distributions
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


def extras_only() -> set[str]:
    """The top-level modules a core install lacks: those of every distribution that only an
    extra of pyproject.toml (sandbox, report, spark) installs, whatever gwtools.extras says."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {
            re.split(r"[\[<>=!~;\s]", r, maxsplit=1)[0].lower().replace("_", "-")
            for r in requirements
        }

    optional = project["optional-dependencies"]
    only = names([r for e in ("sandbox", "report", "spark") for r in optional[e]])
    only -= names(project["dependencies"])
    return {
        module
        for module, dists in packages_distributions().items()
        if any(d.lower().replace("_", "-") in only for d in dists)
    }


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
        extras_only(),
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


def test_the_dashboards_work_without_the_extras(tmp_path: Path) -> None:
    """The widgets are core (README): each dashboard opens on a core install, whose absent
    packages are read from pyproject.toml's extras rather than listed by hand."""
    absent = extras_only()
    assert {"fastapi", "papermill", "pyspark"} <= absent
    done = run(
        absent,
        f"""
        import gwtools
        from gwtools import widgets
        cache = {str(ROOT / "data" / "sample-cache")!r}
        payments = gwtools.scan_cache(cache, "payments")
        refunds = gwtools.scan_cache(cache, "refunds")
        for name in ("declines_dashboard", "fpx_dashboard"):
            print(type(getattr(widgets, name)(payments)).__name__)
        for name in ("refunds_dashboard", "monitor_dashboard", "quality_dashboard"):
            print(type(getattr(widgets, name)(payments, refunds)).__name__)
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [
        "DeclinesDashboard",
        "FpxDashboard",
        "RefundsDashboard",
        "MonitorDashboard",
        "QualityDashboard",
    ]


@pytest.mark.parametrize(
    ("command", "absent", "extra"),
    [
        (["report", "--out", "r"], {"papermill"}, "report"),
        # the notebooks' kernels read with Spark: refused before any sync or kernel starts
        (["report", "--out", "r", "--source", "Spark", "--spark-path", "p"], {"pyspark"}, "spark"),
        (["demo", "--out", "r"], {"nbconvert"}, "report"),
        (["demo", "--out", "r"], {"fastapi"}, "sandbox"),
        (["sandbox", "--variant", "B"], {"fastapi"}, "sandbox"),
        (["sync"], {"fastapi"}, "sandbox"),
        (["export", "payments", "--format", "csv", "--out", "r"], {"uvicorn"}, "sandbox"),
        (["demo", "--out", "r"], {"nbconvert", "fastapi"}, "report,sandbox"),
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


@pytest.mark.parametrize(
    "command", [["sync"], ["export", "payments", "--format", "csv", "--out", "r.csv"]]
)
def test_commands_on_the_embedded_sandbox_say_it_in_command_line_terms(
    command: list[str], tmp_path: Path
) -> None:
    """With no key the command runs on the embedded sandbox: without its extra, the advice is
    about GW_API_KEY and --base-url, not connect()'s api_key= argument."""
    done = run(
        {"fastapi"},
        f"""
        import sys
        from gwtools.cli import main
        sys.argv = ["gwtools", *{command!r}]
        main()
        """,
        tmp_path,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith(f"Error: gwtools {command[0]} with no GW_API_KEY"), error
    assert "--base-url" in error and "api_key=" not in error
    assert done.stdout == ""


def test_the_command_list_says_what_is_not_installed(tmp_path: Path) -> None:
    done = run(
        {"fastapi"},
        """
        import sys
        from gwtools.cli import main
        sys.argv = ["gwtools", "--help"]
        main()
        """,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert 'sandbox  (not installed: pip install "gwtools[sandbox]")' in done.stdout
    assert "sync     Bring the local Parquet cache" in done.stdout


@pytest.mark.parametrize("name", ["sandboxx", "Report", "all", ""])
def test_an_unknown_extra_is_named_with_the_extras_there_are(name: str) -> None:
    # missing("sandboxx") raised a bare KeyError: 'sandboxx'.
    from gwtools import ConfigurationError, extras

    for call in (lambda: extras.missing(name), lambda: extras.require(name, "this")):
        with pytest.raises(ConfigurationError) as info:
            call()
        assert info.value.param == "extra"
        assert f"{name!r}" in str(info.value) and "sandbox, report, spark" in str(info.value)
    meant = {"sandboxx": "sandbox", "Report": "report"}.get(name)
    if meant:
        assert f"did you mean {meant!r}?" in str(info.value)
