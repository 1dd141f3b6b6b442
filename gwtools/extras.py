"""The optional parts of gwtools and the packages each needs (``pip install "gwtools[extra]"``).

The core install is the library, the analyses, plots and widgets. The sandbox gateway (and
so :func:`gwtools.connect` with no key) needs ``gwtools[sandbox]``; ``gwtools report`` and
``gwtools demo`` need ``gwtools[report]``; reading with Spark needs ``gwtools[spark]``. Call
:func:`require` before using one: it says which extra to install instead of an ImportError
from deep inside; :func:`missing` says what is absent::

    from gwtools import extras
    extras.missing("report")        # [] when `pip install "gwtools[report]"` was done
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

__all__ = ["EXTRAS", "extra_of", "missing", "require"]

#: extra -> the top-level modules it installs that gwtools imports.
EXTRAS: dict[str, tuple[str, ...]] = {
    "sandbox": ("fastapi", "uvicorn"),
    "report": ("papermill", "nbconvert", "nbformat", "ipykernel", "jupyter_client"),
    "spark": ("pyspark",),
}


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder that refuses, or a broken half-install
        return False


def missing(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here (empty: it is installed)."""
    if extra not in EXTRAS:
        from gwtools._errors import ConfigurationError
        from gwtools.analysis._engine import did_you_mean

        raise ConfigurationError(
            f"{extra!r} is not an optional part of gwtools: the extras are "
            f"{', '.join(EXTRAS)}{did_you_mean(extra, list(EXTRAS))}",
            param="extra",
        )
    return [m for m in EXTRAS[extra] if not _importable(m)]


def extra_of(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name is fine), or None."""
    top = (module or "").partition(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def _advice(extra: str | Sequence[str], needed_for: str) -> str | None:
    """What to say when ``extra`` (one name, or several that ``needed_for`` all needs) are not
    all installed: one sentence naming every one missing, its absent modules and the one pip
    command that installs them all; None when nothing is missing."""
    wanted = [extra] if isinstance(extra, str) else list(extra)
    short = {name: absent for name in wanted if (absent := missing(name))}
    if not short:
        return None
    names = " and ".join(f"'{name}'" for name in short)
    parts, are, it = ("parts", "are", "them") if len(short) > 1 else ("part", "is", "it")
    modules = ", ".join(m for absent in short.values() for m in absent)
    return (
        f"{needed_for} needs the optional {names} {parts} of gwtools, which {are} not installed "
        f'(no {modules}): install {it} with pip install "gwtools[{",".join(short)}]"'
    )


def require(extra: str | Sequence[str], needed_for: str) -> None:
    """Raise :class:`~gwtools.ConfigurationError` naming the pip command unless ``extra``
    (one name, or several) is installed. ``needed_for`` says what the user tried
    (``"gwtools report"``)."""
    # Here, not at the top: `gwtools --help` asks missing() and loads no httpx for it.
    from gwtools._errors import ConfigurationError

    said = _advice(extra, needed_for)
    if said is not None:
        raise ConfigurationError(said, code="missing_extra")
