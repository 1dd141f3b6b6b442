"""The project's own docs stand alone: no link leaves the repository, every relative link
resolves, and docs/tables.md documents every column of the canonical tables as they are."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

import gwtools
from gwtools import _schema

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "docs" / "tables.md"
# Built from parts so that this file does not match itself.
OUTSIDE = re.compile(r"(\.\./)+" + "shared" + r"\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
TYPES = {
    _schema.STRING: "string",
    _schema.INT: "Int64",
    _schema.BOOL: "boolean",
    _schema.TIMESTAMP: "timestamp",
    _schema.FLOAT: "float64",
}


def _tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name]


def _markdown_docs() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_tracked_file_links_outside_the_repository() -> None:
    """A clone has only this repository: docs, notebooks and docstrings must not point beside it."""
    offending = []
    for path in _tracked_files():
        if not path.is_file() or path.suffix in {".so", ".parquet", ".png", ".ico"}:
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        offending += [
            f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            for m in OUTSIDE.finditer(text)
        ]
    assert offending == [], "links to files a clone does not have: " + ", ".join(offending)


@pytest.mark.parametrize("doc", _markdown_docs(), ids=lambda p: p.name)
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # an address on the web, or a heading of this page
        if not (doc.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    assert broken == [], f"{doc.name} links to missing files: {broken}"


def _section_rows(heading: str) -> list[list[str]]:
    """The cells of the table under ``## heading`` in docs/tables.md, header row excluded."""
    text = TABLES.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    rows = [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in text[start : end if end != -1 else None].splitlines()
        if line.startswith("|")
    ]
    return [row for row in rows[1:] if not set(row[0]) <= set("-: ")]


@pytest.mark.parametrize(
    ("heading", "schema"),
    [("Payments", _schema.PAYMENT_COLUMNS), ("Refunds", _schema.REFUND_COLUMNS)],
)
def test_tables_md_documents_every_column_in_order_with_its_type(
    heading: str, schema: dict[str, object]
) -> None:
    rows = _section_rows(heading)
    documented = [row[0].strip("`") for row in rows]
    assert documented == list(schema), "docs/tables.md and gwtools/_schema.py disagree"
    for row in rows:
        name, kind = row[0].strip("`"), row[1]
        assert kind == TYPES[schema[name]], f"{heading} column {name}: documented as {kind}"
        assert all(row[2:5]), f"{heading} column {name}: meaning or a variant's source missing"


def test_tables_md_status_vocabulary_matches_the_schema() -> None:
    rows = _section_rows("Status vocabulary")
    outcome = {row[0].strip("`"): row[3].strip("`") for row in rows}
    assert outcome == dict(_schema.PAYMENT_OUTCOME)
    raw_to_canonical = {
        raw.strip().strip("`"): row[0].strip("`")
        for row in rows
        for cell in row[1:3]
        for raw in cell.split(",")
        if raw.strip().startswith("`")
    }
    assert raw_to_canonical == dict(_schema.PAYMENT_STATUS)


def test_tables_md_decline_types_match_the_schema() -> None:
    rows = {row[0]: row[1] for row in _section_rows("Decline types")}
    for kind, codes in (
        ("soft", _schema.SOFT_DECLINE_CODES),
        ("hard", _schema.HARD_DECLINE_CODES),
    ):
        assert set(re.findall(r"`(\w+)`", rows[kind])) == set(codes)


def test_the_lazy_example_selects_rows_of_the_shipped_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README's lazy-table example, as written, over data/sample-cache: its dates must fall
    inside the sample (an example that selects nothing teaches nothing)."""
    text = (ROOT / "README.md").read_text()
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", text, re.S) if 'scan_cache("data/sample' in b
    )
    offline = block.split("gw = gwtools.connect()")[0]  # the part that needs no gateway
    space: dict[str, Any] = {"gwtools": gwtools}
    monkeypatch.chdir(ROOT)
    exec(compile(offline, "README.md", "exec"), space)
    assert len(space["payments"]) > 1000
    assert 0 < len(space["first_week"]) < len(space["payments"])


# A variable's name as the code reads it: a string literal, e.g. os.environ.get("GW_LOCALE").
READ_VARIABLE = re.compile(r"""["'](GW_[A-Z][A-Z0-9_]*)["']""")


def _documented_variables() -> set[str]:
    """The GW_* names in the first cell of the README's table of environment variables."""
    return {
        name
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| `GW_")
        for name in re.findall(r"`(GW_[A-Z0-9_]+)`", line.split("|")[1])
    }


def test_readme_documents_every_environment_variable_the_library_reads() -> None:
    """A setting a user cannot find is a setting that surprises them: every GW_* variable the
    package reads has a row in the README's table, and the table names none it does not read."""
    read = {
        name
        for path in (ROOT / "gwtools").rglob("*.py")
        for name in READ_VARIABLE.findall(path.read_text())
    }
    documented = _documented_variables()
    assert read - documented == set(), "read by gwtools but not in the README's variable table"
    assert documented - read == set(), "in the README's variable table but read nowhere"


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_readme_extras_table_names_every_package_each_extra_installs() -> None:
    """The table under "What to install" is how a user picks an extra: each row's "adds" cell
    names every package pyproject.toml puts in that extra (other extras it includes aside)."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    rows = {
        match[1]: line.split("|")[2].lower().replace("_", "-")
        for line in (ROOT / "README.md").read_text().splitlines()
        if (match := re.match(r"\| `gwtools\[(\w+)\]` \|", line))
    }
    for extra in ("sandbox", "report", "spark"):
        packages = {_requirement_name(r) for r in extras[extra] if not r.startswith("gwtools[")}
        unnamed = sorted(p for p in packages if p not in rows[extra])
        assert unnamed == [], f"gwtools[{extra}] installs {unnamed}, which the README omits"


def test_readme_error_tree_is_the_exception_hierarchy() -> None:
    """The README's tree under **Errors** is how a user decides what to catch: every exported
    error is in it once, under its direct base, with the built-in bases it names ("also ...")."""
    import builtins

    text = (ROOT / "README.md").read_text()
    tree = re.search(r"```\n(GatewayError\n.*?)```", text, re.S)
    assert tree is not None, "the README's error tree is gone"
    parents: list[tuple[int, str]] = []
    shown: dict[str, str | None] = {}
    for line in tree[1].splitlines():
        found = re.match(r"([\s│├└─]*)([A-Z]\w+)(.*)", line)
        if found is None or (found[1] and not set(found[1]) & set("├└")):
            continue  # a continuation line of the description above
        depth, name, rest = len(found[1]), found[2], found[3]
        while parents and parents[-1][0] >= depth:
            parents.pop()
        shown[name] = parents[-1][1] if parents else None
        parents.append((depth, name))
        cls = getattr(gwtools, name)
        for also in re.findall(r"also (\w+)", rest):
            assert issubclass(cls, getattr(builtins, also)), f"{name} is documented as {also}"
    exported = {
        name
        for name in gwtools.__all__
        if isinstance(getattr(gwtools, name), type)
        and issubclass(getattr(gwtools, name), gwtools.GatewayError)
    }
    assert set(shown) == exported
    for name, parent in shown.items():
        bases = [b.__name__ for b in getattr(gwtools, name).__bases__]
        assert (parent or "Exception") == bases[0], f"{name}: documented under {parent}"


def _package_parts() -> list[str]:
    """gwtools' top-level modules and subpackages (``python -m gwtools`` aside)."""
    package = ROOT / "gwtools"
    return sorted(
        p.name + ("/" if p.is_dir() else "")
        for p in package.iterdir()
        if (p.suffix == ".py" and p.name != "__main__.py") or (p / "__init__.py").is_file()
    )


def test_the_layout_and_architecture_name_every_part_of_the_package() -> None:
    """The README's Layout and docs/architecture.md are where a reader finds which module owns
    what: a module neither names is one nobody is told about."""
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("\n## Layout\n") :]
    layout = layout[: layout.index("\n## ", 1)]
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    unnamed = {
        # A folder as gwtools/name/; a file may be named beside another (_embedded.py).
        "README Layout": [
            p for p in _package_parts() if (f"gwtools/{p}" if p.endswith("/") else p) not in layout
        ],
        "docs/architecture.md": [p for p in _package_parts() if p.rstrip("/") not in architecture],
    }
    assert unnamed == {"README Layout": [], "docs/architecture.md": []}


#: A README ```python block preceded by this comment is not run (say why after the colon).
NO_TEST = re.compile(r"<!-- no-test: ([^>]+?) -->\n*$")


def _readme_python_blocks() -> list[tuple[int, str, str | None]]:
    """The README's ```python blocks in order: (line, code, why it is not run, or None)."""
    text = (ROOT / "README.md").read_text()
    blocks = []
    for found in re.finditer(r"```python\n(.*?)```", text, re.S):
        opted_out = NO_TEST.search(text, 0, found.start())
        blocks.append(
            (
                text.count("\n", 0, found.start()) + 2,
                found[1],
                opted_out[1] if opted_out else None,
            )
        )
    return blocks


def test_the_readme_python_examples_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a user copies from the README runs: every ```python block, in order and in one
    namespace as a notebook would, on the embedded sandbox (its history pinned by conftest) with
    a fresh cache, from a folder holding the checkout's data/ as the text assumes. A renamed
    function or argument in the library, or one mistyped in the README, fails here."""
    monkeypatch.setenv("GW_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path / "work")
    blocks = _readme_python_blocks()
    assert [why for _, _, why in blocks if why is None], "no README example is run any more"
    space: dict[str, Any] = {"__name__": "readme"}
    first_sync = None
    for line, code, why in blocks:
        if why is not None:
            compile(code, f"README.md:{line}", "exec")  # not run, but at least Python
            continue
        # Line numbers of a failure point into the README itself.
        exec(compile("\n" * (line - 1) + code, "README.md", "exec"), space)
        first_sync = first_sync or space.get("result")
    capsys.readouterr()

    # The sentence after the quick start states what its first sync shows.
    text = (ROOT / "README.md").read_text()
    claim = re.search(
        r"shows about ([\d,]+) payments fetched for ([\d,]+) new, and on the sparser refunds "
        r"about ([\d,]+) for ([\d,]+)",
        re.sub(r"\s+", " ", text),
    )
    assert claim is not None, "the README no longer says what the demo's first sync shows"
    said = [int(n.replace(",", "")) for n in claim.groups()]
    assert first_sync is not None
    shown = [
        getattr(first_sync.resources[resource], field)
        for resource in ("payments", "refunds")
        for field in ("fetched", "new")
    ]
    assert all(abs(s - d) <= 0.1 * d for s, d in zip(shown, said, strict=True)), (
        f"the README says {said} (fetched, new for payments, then refunds), a sync gives {shown}"
    )


#: A public name as the docs write it: gwtools.connect, analysis.monitor, gwtools.plots.funnel.
DOTTED_NAME = re.compile(
    r"(?<![\w./])((?:gwtools\.)?(?:analysis|plots|widgets|extras|sandbox|secrets)|gwtools)"
    r"\.([a-z_]\w*)\b"
)
#: What follows a dot in a file's name (sandbox.key, plots.py), not a public name.
FILE_SUFFIXES = {"py", "md", "key", "sqlite", "json", "ipynb", "csv", "parquet", "html", "toml"}


@pytest.mark.parametrize("doc", _markdown_docs(), ids=lambda p: p.name)
def test_every_public_name_the_docs_use_exists(doc: Path) -> None:
    """`gwtools.mask_key` in a doc is an AttributeError in the user's hands: each
    gwtools.<name> and <module>.<name> the docs write is reachable as written."""
    import importlib

    missing = []
    text = doc.read_text()
    for found in DOTTED_NAME.finditer(text):
        module_name = found[1] if found[1].startswith("gwtools") else f"gwtools.{found[1]}"
        module = importlib.import_module(module_name)
        if found[2] in FILE_SUFFIXES or hasattr(module, found[2]):
            continue
        try:
            importlib.import_module(f"{module_name}.{found[2]}")
        except ImportError:
            missing.append(f"{doc.name}:{text.count(chr(10), 0, found.start()) + 1} {found[0]}")
    assert missing == [], "names the docs use that gwtools does not have: " + ", ".join(missing)


#: The sentence a public analysis docstring shows its use with: Example: ``call(...)``.
EXAMPLE = re.compile(r"Example[^:]*:\s*``(.+?)``", re.S)


def _analysis_functions() -> list[str]:
    from gwtools import analysis

    return [
        name
        for name in analysis.__all__
        if callable(getattr(analysis, name)) and not isinstance(getattr(analysis, name), type)
    ]


@pytest.fixture(scope="module")
def sample_namespace() -> dict[str, Any]:
    """What an analysis docstring's example may name: the functions of gwtools.analysis, pd,
    and the shipped sample's ``payments``, ``refunds`` and ``alerts`` (its monitor's)."""
    import pandas as pd

    from gwtools import analysis

    payments = gwtools.read_cache(ROOT / "data" / "sample-cache", "payments")
    refunds = gwtools.read_cache(ROOT / "data" / "sample-cache", "refunds")
    space = {name: getattr(analysis, name) for name in analysis.__all__}
    space |= {"pd": pd, "payments": payments, "refunds": refunds}
    space["alerts"] = analysis.monitor(payments, refunds)
    return space


@pytest.mark.parametrize("name", _analysis_functions())
def test_each_analysis_docstring_shows_a_call_that_runs(
    name: str, sample_namespace: dict[str, Any]
) -> None:
    """help(analysis.x) is where an analyst looks first: it shows one call, and that call
    runs as written on the shipped sample (a renamed argument fails here)."""
    from gwtools import analysis

    doc = getattr(analysis, name).__doc__ or ""
    examples = EXAMPLE.findall(doc)
    assert examples, f"analysis.{name}'s docstring has no 'Example: ``{name}(...)``'"
    for example in examples:
        assert f"{name}(" in example, f"analysis.{name}'s example calls something else"
        eval(
            compile(re.sub(r"\s+", " ", example), f"analysis.{name}", "eval"),
            dict(sample_namespace),
        )


def test_the_readme_says_why_a_variant_a_sync_fetches_more_than_it_keeps(
    tmp_path: Path,
) -> None:
    """A variant-A gateway's first sync shows `fetched` above `new` too (its first page is
    read again under the frozen upper bound): the README's account of `fetched` covers it,
    with the bound the sync keeps to."""
    from gwtools._embedded import PINNED_NOW
    from gwtools.sandbox import Sandbox

    text = re.sub(r"\s+", " ", (ROOT / "README.md").read_text())
    claim = re.search(
        r"on variant A, [^.]*?`fetched` exceeds `new` by up to a page \((\d+) rows", text
    )
    assert claim is not None, "the README explains `fetched` against `new` for variant B only"
    with Sandbox("A", seed_payments=250, rate_limits=False, now=PINNED_NOW) as sb:
        gw = gwtools.connect(sb.secret_key, sb.base_url, cache_dir=tmp_path, account="a")
        try:
            payments = gw.sync("payments").resources["payments"]
        finally:
            gw.close()
    assert payments.new == 250
    assert 0 < payments.fetched - payments.new <= int(claim[1])


#: The entry points whose docstrings show how to start; their examples run as written.
ENTRY_DOCSTRINGS = {
    "gwtools": "gwtools",
    "gwtools connect()": "gwtools._gateway:connect",
    "gwtools._gateway": "gwtools._gateway",
    "gwtools.analysis": "gwtools.analysis",
    "gwtools.cache._scan": "gwtools.cache._scan",
    # open_source's example reaches a Spark cluster: compiled, not run.
    "gwtools.cache._source": "gwtools.cache._source!",
}
LITERAL_BLOCK = re.compile(r"::\n\n((?:(?:    .*)?\n)+)")


@pytest.mark.parametrize("target", ENTRY_DOCSTRINGS.values(), ids=list(ENTRY_DOCSTRINGS))
def test_the_entry_points_docstring_examples_run(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """help(gwtools), help(gwtools.connect) and the lazy-table and source modules show code a
    user copies: it runs on the embedded sandbox and the shipped sample, in a fresh cache."""
    import importlib
    import textwrap

    from gwtools import analysis

    name, _, attr = target.rstrip("!").partition(":")
    obj = importlib.import_module(name)
    doc = (getattr(obj, attr) if attr else obj).__doc__ or ""
    blocks = [textwrap.dedent(b) for b in LITERAL_BLOCK.findall(doc)]
    assert blocks, f"{target}: no example"
    monkeypatch.setenv("GW_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "data").symlink_to(ROOT / "data")
    monkeypatch.chdir(tmp_path / "work")
    sample = ROOT / "data" / "sample-cache"
    space: dict[str, Any] = {
        "gwtools": gwtools,
        "analysis": analysis,
        "payments": gwtools.scan_cache(sample, "payments"),
        "refunds": gwtools.scan_cache(sample, "refunds"),
    }
    for block in blocks:
        try:
            code = compile(block, target, "exec")
        except SyntaxError:
            assert "├──" in block, f"{target}: an example that is not Python:\n{block}"
            continue  # a diagram (the error tree)
        if not target.endswith("!"):
            exec(code, space)
