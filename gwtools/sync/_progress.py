"""The progress bar of a sync: off by default, on for big interactive syncs or when asked."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["Progress"]


def _interactive() -> bool:
    if "ipykernel" in sys.modules:
        return True
    return bool(getattr(sys.stderr, "isatty", lambda: False)())


class Progress:
    """A tqdm.auto bar (a widget in Jupyter): on when asked, or for big interactive syncs."""

    BIG_ROWS = 20_000

    def __init__(self, enabled: bool | None, resource: str) -> None:
        self.enabled = enabled
        self.resource = resource
        self.total: int | None = None
        self.bar: Any = None
        self.done = 0

    def _open(self) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(
            total=self.total, unit=" rows", desc=f"sync {self.resource}", unit_scale=True
        )
        self.bar.update(self.done)

    def _wanted(self) -> bool:
        if self.enabled is not None:
            return self.enabled
        big = max(self.done, self.total or 0) >= self.BIG_ROWS
        return big and _interactive()

    def estimate(self, rows: int) -> None:
        self.total = rows
        if self.bar is not None:
            self.bar.total = max(rows, self.done)
            self.bar.refresh()
        elif self._wanted():
            self._open()

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self._wanted():
            self._open()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.total = self.done
            self.bar.refresh()
            self.bar.close()
