"""nbval runs the notebooks in the time zone and on the history their stored outputs were
made with.

The notebooks take their time zone from ``GW_TIMEZONE`` (else UTC), and ``build.py
--execute`` stores outputs made with the demo's zone (``STORED_TIMEZONE``) on the demo history
ending at ``GW_SANDBOX_NOW`` (``PINNED_NOW``). The suite clears ``GW_TIMEZONE`` to stay
hermetic, and pins ``GW_SANDBOX_NOW`` only when ``tests/`` is collected, so each notebook's
kernel is started with both here (a ``GW_SANDBOX_NOW`` already set is kept), and the variables
are restored right after: other tests in the same process never see them.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def _stored_timezone() -> str:
    spec = importlib.util.spec_from_file_location(
        "gwtools_build_notebooks", Path(__file__).with_name("build.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    zone: str = module.STORED_TIMEZONE
    return zone


STORED_TIMEZONE = _stored_timezone()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    # nbval starts a notebook's kernel while setting up its first cell: the kernel inherits
    # the environment of that moment.
    if item.path.suffix != ".ipynb":
        yield
        return
    from gwtools._embedded import PINNED_NOW

    # `pytest notebooks/` alone: without the pin the history ends now, not where it was stored.
    settings = {
        "GW_TIMEZONE": STORED_TIMEZONE,
        "GW_SANDBOX_NOW": os.environ.get("GW_SANDBOX_NOW") or PINNED_NOW.isoformat(),
    }
    old = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
