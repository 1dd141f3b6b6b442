"""The public surface: ``gwtools.__all__`` is explicit, sorted and complete (httpx's rule)."""

import ast
import types
from pathlib import Path

import gwtools


def test_all_is_sorted_and_unique() -> None:
    assert list(gwtools.__all__) == sorted(set(gwtools.__all__))


def test_all_matches_public_names() -> None:
    gwtools.connect  # noqa: B018  (the names load on first use: all of them)
    assert set(gwtools._HOMES) == set(gwtools.__all__)
    public = {
        name
        for name, value in vars(gwtools).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(gwtools.__all__)


def test_type_checking_imports_match_the_lazy_homes() -> None:
    """What mypy and editors see (the ``TYPE_CHECKING`` imports) is what ``_HOMES`` loads."""
    tree = ast.parse(Path(gwtools.__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
    )
    seen = {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert seen == gwtools._HOMES


def test_public_names_are_documented() -> None:
    missing = [name for name in gwtools.__all__ if not getattr(gwtools, name).__doc__]
    assert missing == []


def test_public_names_claim_the_package() -> None:
    # Re-exported names say `gwtools.X` in tracebacks and reprs, not `gwtools._private.X`.
    for name in gwtools.__all__:
        obj = getattr(gwtools, name)
        if isinstance(obj, type) or callable(obj):
            assert obj.__module__ == "gwtools", name


def test_connect_takes_typed_keywords_only() -> None:
    """No ``**options``: every option is a named, annotated parameter that a typo fails on."""
    import inspect

    params = inspect.signature(gwtools.connect).parameters.values()
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in params)
    assert all(p.annotation is not inspect.Parameter.empty for p in params)
    gateway_options = set(inspect.signature(gwtools.Gateway).parameters) - {"settings"}
    assert gateway_options <= {p.name for p in params}


def test_the_cli_uses_the_public_api() -> None:
    """The CLI imports ``gwtools`` and its public modules, not private ones, except gwtools
    demo's look at the embedded sandbox's demo history (see docs/decisions.md)."""
    import ast
    from pathlib import Path

    allowed = {("_report.py", "gwtools._embedded")}
    private = []
    for path in sorted((Path(gwtools.__file__).parent / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                second = name.split(".")[1:2]
                if second and second[0].startswith("_") and (path.name, name) not in allowed:
                    private.append(f"{path.name}: {name}")
    assert private == []


def test_no_module_level_mutable_state_in_the_library() -> None:
    """Warn-once sets and "already synced" sets live on instances or in the warnings registry;
    the embedded sandboxes' registry is the one documented per-process exception."""
    import gwtools._gateway as gateway
    import gwtools.sync._writer as writer

    assert not hasattr(gateway, "_embedded_synced")
    assert not hasattr(writer, "_warned_statuses")


def _private_imports(path: Path) -> list[str]:
    """Modules (and names) ``path`` imports from gwtools whose dotted path has a private part."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("gwtools"):
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names if a.name.startswith("gwtools")]
        else:
            continue
        found += [n for n in names if any(p.startswith("_") for p in n.split(".")[1:])]
    return found


def test_the_cli_uses_the_public_api_only() -> None:
    """sqlite-utils' rule: the library first, a thin CLI on top of its public names (the CLI's
    own private modules aside)."""
    import gwtools.cli

    folder = Path(gwtools.cli.__file__).parent
    private = {
        f"{path.name}: {name}"
        for path in folder.glob("*.py")
        for name in _private_imports(path)
        if not name.startswith("gwtools.cli.")
    }
    assert len(list(folder.glob("*.py"))) >= 3
    assert private == set()


def test_the_secrets_module_is_public_sorted_and_runs_its_examples() -> None:
    import doctest

    import gwtools.secrets as secrets

    assert list(secrets.__all__) == sorted(set(secrets.__all__))
    public = {n for n in vars(secrets) if not n.startswith("_")}
    assert public - {"HiddenKey", "hide_key", "mask_key", "redact"} == set()
    assert set(secrets.__all__) == public
    assert all(getattr(secrets, n).__module__ == "gwtools.secrets" for n in secrets.__all__)
    assert doctest.testmod(secrets).failed == 0
    key = secrets.hide_key("sk_test_51Habcdefabcd")
    assert repr(key) == "'sk_test_…abcd'" and key == "sk_test_51Habcdefabcd"


def _fresh(code: str) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_command_line_and_the_sandbox_do_not_load_the_library() -> None:
    """`gwtools --help`, `--version` and `gwtools sandbox` import gwtools.cli and
    gwtools.sandbox, which run gwtools/__init__.py: that loads no pandas, DuckDB or Narwhals
    (about 1 s) until a public name is used."""
    heavy = "('pandas', 'duckdb', 'narwhals', 'pyarrow', 'matplotlib')"
    assert (
        _fresh(
            "import sys, gwtools.cli, gwtools.sandbox.cli\n"
            f"print(sorted(m for m in {heavy} if m in sys.modules))"
        )
        == "[]"
    )


def test_public_names_load_on_first_use() -> None:
    """Every way of reaching a public name works in a fresh interpreter, and an error raised
    before any public name was used still says gwtools.X."""
    assert (
        _fresh("from gwtools import connect, GatewayError\nprint(connect.__module__, GatewayError)")
        == "gwtools <class 'gwtools.GatewayError'>"
    )
    assert (
        _fresh(
            "import gwtools\nns = {}\nexec('from gwtools import *', ns)\n"
            "print(sorted(n for n in ns if not n.startswith('_')) == gwtools.__all__)"
        )
        == "True"
    )
    assert (
        _fresh(
            "import gwtools\ntry:\n    gwtools.conect\nexcept AttributeError as exc:\n    print(exc)"
        )
        == "module 'gwtools' has no attribute 'conect'"
    )
    assert (
        _fresh(
            "from gwtools import analysis\ntry:\n    analysis.resolve_tz('Mars/Olympus')\n"
            "except Exception as exc:\n    print(type(exc))"
        )
        == "<class 'gwtools.ConfigurationError'>"
    )
