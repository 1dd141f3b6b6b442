"""The sandbox is a separate part: it imports nothing of the library (docs/architecture.md: separate parts),
so it can stand in for the real gateway without sharing a bug with the client it tests."""

from __future__ import annotations

import ast
from pathlib import Path

import gwtools.sandbox

SANDBOX = Path(gwtools.sandbox.__file__).parent


def _imported_modules(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            if node.module == "gwtools":
                names.extend(f"gwtools.{alias.name}" for alias in node.names)
    return names


def test_the_sandbox_imports_nothing_of_the_library() -> None:
    files = sorted(SANDBOX.rglob("*.py"))
    assert len(files) > 10  # the walk found the package
    outside = {
        f"{path.relative_to(SANDBOX)}: {name}"
        for path in files
        for name in _imported_modules(path)
        if (name == "gwtools" or name.startswith("gwtools."))
        and not (name == "gwtools.sandbox" or name.startswith("gwtools.sandbox."))
    }
    assert not outside, f"the sandbox imports the library: {sorted(outside)}"
