"""The OpenAPI document of the gateway interface (placeholder, completed below)."""

from __future__ import annotations

from typing import Any


def build_openapi(variant: str) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "sandbox", "version": "2024-01-01"}, "paths": {}}
