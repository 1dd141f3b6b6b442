"""Fixtures of the library tests (helpers are in _shop.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.library._shop import Shop


@pytest.fixture
def shop(sandbox: Any, account: dict[str, Any]) -> Iterator[Shop]:
    s = Shop(sandbox, account)
    yield s
    s.close()
