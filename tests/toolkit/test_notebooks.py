"""The shipped notebooks: generated from build.py, parameterised, executed, and clean.

nbval re-runs them and compares the ``# NBVAL_CHECK_OUTPUT`` cells; these tests check what
nbval does not: the stored outputs leak no key, path or port, and nobody edited a notebook
without its generator.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import nbformat
import pytest

from gwtools.report import NOTEBOOKS, notebooks_dir

LEAKS = [
    re.compile(r"\b(sk|pk)_(test|live)_[A-Za-z0-9]{4,}"),
    re.compile(r"(127\.0\.0\.1|localhost|\[::1\]):\d+"),
    re.compile(r"(/work/|/tmp/|/root/|/home/|/Users/|[A-Z]:\\\\)"),
    re.compile(re.escape(str(Path.home())) + "/"),
]
PARAMETERS = {"base_url", "since", "until", "tz", "currency"}


def _build_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_notebooks", notebooks_dir() / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_matches_its_generator(name: str) -> None:
    built = _build_module().NOTEBOOKS[name]
    stored = nbformat.read(notebooks_dir() / name, as_version=4)
    assert [c.source for c in stored.cells] == [c.source for c in built]
    assert [c.metadata.get("tags", []) for c in stored.cells] == [
        c.metadata.get("tags", []) for c in built
    ]


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_has_a_papermill_parameters_cell(name: str) -> None:
    nb = nbformat.read(notebooks_dir() / name, as_version=4)
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assigned = set(re.findall(r"^(\w+) = ", tagged[0].source, flags=re.MULTILINE))
    assert assigned >= PARAMETERS
    assert "api_key" not in assigned  # keys come from the environment, never a notebook


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_stored_outputs_exist_and_leak_nothing(name: str) -> None:
    nb = nbformat.read(notebooks_dir() / name, as_version=4)
    checked = [c for c in nb.cells if c.cell_type == "code" and "NBVAL_CHECK_OUTPUT" in c.source]
    assert checked and all(c.outputs for c in checked), "run build.py --execute and commit"
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert errors == []
    text = json.dumps([c.get("outputs", []) for c in nb.cells]) + json.dumps(nb.metadata)
    for pattern in LEAKS:
        assert not pattern.search(text), f"{name} output matches {pattern.pattern}"


def test_report_pages_leave_out_text_about_stored_outputs_and_the_demo() -> None:
    """A report on a gateway's data must not claim its figures were made with the stored
    outputs' settings, or hold the sandbox's planted incidents; a demo report keeps the
    incidents (they are in its data) but not the stored outputs' settings either."""
    from gwtools.report import export_html

    def page(name: str, sandbox_data: bool) -> str:
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [c for c in _build_module().NOTEBOOKS[name] if c.cell_type == "markdown"]
        return export_html(notebook, "t", sandbox_data=sandbox_data)

    for sandbox_data in (False, True):
        overview = page("01_overview_and_export.ipynb", sandbox_data)
        assert "Payments overview and export" in overview
        assert "GW_SANDBOX_NOW" not in overview and "outputs stored here" not in overview
        assert ("planted incidents" in overview) is sandbox_data
        monitoring = page("05_monitoring.ipynb", sandbox_data)
        assert ("places one incident of each kind" in monitoring) is sandbox_data
    # the notebooks themselves keep both
    stored = nbformat.read(notebooks_dir() / "01_overview_and_export.ipynb", as_version=4)
    text = "".join(c.source for c in stored.cells if c.cell_type == "markdown")
    assert "GW_SANDBOX_NOW" in text and "planted incidents" in text
