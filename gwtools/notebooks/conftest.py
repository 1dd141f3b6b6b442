"""nbval runs the notebooks in the time zone their stored outputs were made in.

The notebooks take their time zone from ``GW_TIMEZONE`` (else UTC), and ``build.py
--execute`` stores outputs made with the demo's zone (``STORED_TIMEZONE``). The suite clears
``GW_TIMEZONE`` to stay hermetic, so each notebook's kernel is started with that zone here,
and the variable is restored right after: other tests in the same process never see it.
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
    old = os.environ.get("GW_TIMEZONE")
    os.environ["GW_TIMEZONE"] = STORED_TIMEZONE
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("GW_TIMEZONE", None)
        else:
            os.environ["GW_TIMEZONE"] = old
