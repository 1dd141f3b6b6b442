# Stub of the C extension gwtools/_fastjson.c (see its header).
from typing import Any

class Buffer:
    """Memory the scanner wrote, exposed through the buffer protocol (read-only)."""

def scan(
    resource: str, bodies: list[bytes], /
) -> tuple[bytes, Buffer, int, dict[str, tuple[Any, ...]], Buffer]: ...
