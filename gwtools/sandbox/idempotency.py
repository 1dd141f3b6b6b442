"""Idempotency keys (docs/sandbox.md, Keys, limits, versions, idempotency): per API key and endpoint, kept 24 h of sandbox time.

The first response is stored and replayed byte for byte with ``Idempotent-Replayed: true``;
the same key with a different body is 409 ``idempotency_key_reused``; a duplicate arriving
while the first is still running waits for it (up to 30 s), then replays.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Final
from urllib.parse import parse_qsl, urlencode

import orjson

from gwtools.sandbox.store import Store

RETENTION: Final = 24 * 3600
MAX_KEY: Final = 255
#: What an ``Idempotency-Key`` may hold: printable ASCII (a UUID, or any token of your own).
KEY_RULE: Final = (
    f"Idempotency-Key must be 1 to {MAX_KEY} printable ASCII characters (letters, digits, "
    "punctuation, spaces); a UUID works well"
)


def key_problem(raw: bytes) -> str | None:
    """Why the raw ``Idempotency-Key`` header value is unusable, or None if it is fine."""
    if not raw.strip():
        return f"{KEY_RULE}; this one is empty."
    if len(raw) > MAX_KEY:
        return f"{KEY_RULE}; this one has {len(raw)} bytes."
    bad = next((b for b in raw if not 0x20 <= b <= 0x7E), None)
    if bad is not None:
        what = "a non-ASCII character" if bad >= 0x80 else f"the control character 0x{bad:02x}"
        return f"{KEY_RULE}; this one contains {what}."
    return None


def fingerprint(body: bytes, query: bytes = b"") -> bytes:
    """Hash of the request body and query string; JSON is canonicalised so key order and
    spacing do not matter, and so is the order of query parameters.

    The query is part of the request: without it, a call refused for a stray ``?amount=`` and
    retried without it under the same key would get the stale refusal replayed."""
    try:
        canonical = (
            orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS) if body.strip() else b""
        )
    except orjson.JSONDecodeError:
        canonical = body
    if query:
        pairs = sorted(parse_qsl(query.decode("latin-1"), keep_blank_values=True))
        # appended only when present, so records stored before the query counted still match
        canonical += b"\0?" + urlencode(pairs).encode()
    return hashlib.sha256(canonical).digest()


class Idempotency:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.in_flight: dict[str, asyncio.Event] = {}

    def lookup(self, scope: str, now: float) -> tuple[bytes, int, list[list[str]], bytes] | None:
        s = self.store
        with s.lock:
            row = s.db.execute(
                "SELECT fingerprint, status, headers, body, created FROM idempotency "
                "WHERE scope = ?",
                (scope,),
            ).fetchone()
            if row is not None and now - row[4] >= RETENTION:
                s.db.execute("DELETE FROM idempotency WHERE scope = ?", (scope,))
                row = None
        if row is None:
            return None
        return row[0], row[1], orjson.loads(row[2]), row[3]

    def purge(self, now: float) -> int:
        """Forget records older than the retention; returns how many went."""
        s = self.store
        with s.lock:
            return s.db.execute(
                "DELETE FROM idempotency WHERE created <= ?", (now - RETENTION,)
            ).rowcount

    def save(
        self, scope: str, fp: bytes, status: int, headers: list[list[str]], body: bytes, now: float
    ) -> None:
        s = self.store
        with s.lock:
            s.db.execute(
                "INSERT OR REPLACE INTO idempotency VALUES (?,?,?,?,?,?)",
                (scope, fp, status, orjson.dumps(headers), body, now),
            )
