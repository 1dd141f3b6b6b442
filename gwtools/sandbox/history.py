"""History generator (placeholder until step 2)."""

from __future__ import annotations

from typing import Any


def generate_history(
    target: Any,
    *,
    payments: int,
    days: int = 90,
    seed: int = 0,
    account: str | None = None,
    livemode: bool = False,
) -> dict[str, Any]:
    raise NotImplementedError("history generation arrives in the next commit")
