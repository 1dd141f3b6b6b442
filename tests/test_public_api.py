"""The public surface: ``gwtools.__all__`` is explicit, sorted and complete (httpx's rule)."""

import types

import gwtools


def test_all_is_sorted_and_unique() -> None:
    assert list(gwtools.__all__) == sorted(set(gwtools.__all__))


def test_all_matches_public_names() -> None:
    public = {
        name
        for name, value in vars(gwtools).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert public == set(gwtools.__all__)


def test_public_names_are_documented() -> None:
    missing = [name for name in gwtools.__all__ if not getattr(gwtools, name).__doc__]
    assert missing == []


def test_public_names_claim_the_package() -> None:
    # Re-exported names say `gwtools.X` in tracebacks and reprs, not `gwtools._private.X`.
    for name in gwtools.__all__:
        obj = getattr(gwtools, name)
        if isinstance(obj, type) or callable(obj):
            assert obj.__module__ == "gwtools", name
