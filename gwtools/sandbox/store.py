"""SQLite store: accounts, keys, payments, refunds, events, webhooks, idempotency records.

Each payment, refund and event row keeps its internal record (``rec``, orjson) and its rendered
JSON (``body``) so that list responses are built by joining bytes. Lists use keyset pagination on
``(account, livemode, created DESC, id DESC)``; page-number lists read ordered rowids that are
cached per account version, so page 1,000 costs what page 1 costs.

One connection, guarded by a re-entrant lock: the server's event loop and a caller's thread
(``generate_history``) may both use the store.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS accounts (id TEXT PRIMARY KEY, created REAL NOT NULL,
    webhook_secret TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, account TEXT NOT NULL, kind TEXT NOT NULL,
    livemode INTEGER NOT NULL, expires_at REAL, allowlist TEXT);
CREATE TABLE IF NOT EXISTS payments (rid INTEGER PRIMARY KEY, id TEXT NOT NULL,
    account TEXT NOT NULL, livemode INTEGER NOT NULL, created INTEGER NOT NULL,
    status TEXT NOT NULL, raw INTEGER NOT NULL DEFAULT 0, due_at REAL, rec BLOB, body BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS payments_id ON payments (id) WHERE raw = 0;
CREATE INDEX IF NOT EXISTS payments_cursor ON payments (id, raw);
CREATE INDEX IF NOT EXISTS payments_list ON payments (account, livemode, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS payments_status
    ON payments (account, livemode, status, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS payments_due ON payments (due_at) WHERE due_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS refunds (rid INTEGER PRIMARY KEY, id TEXT NOT NULL,
    account TEXT NOT NULL, livemode INTEGER NOT NULL, created INTEGER NOT NULL,
    status TEXT NOT NULL, raw INTEGER NOT NULL DEFAULT 0, due_at REAL, payment_id TEXT,
    rec BLOB, body BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS refunds_id ON refunds (id) WHERE raw = 0;
CREATE INDEX IF NOT EXISTS refunds_cursor ON refunds (id, raw);
CREATE INDEX IF NOT EXISTS refunds_cursor ON refunds (id, raw);
CREATE INDEX IF NOT EXISTS refunds_list ON refunds (account, livemode, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS refunds_status
    ON refunds (account, livemode, status, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS refunds_payment
    ON refunds (account, livemode, payment_id, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS refunds_due ON refunds (due_at) WHERE due_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
    account TEXT NOT NULL, livemode INTEGER NOT NULL, created INTEGER NOT NULL,
    status TEXT NOT NULL, raw INTEGER NOT NULL DEFAULT 0, due_at REAL, rec BLOB, body BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS events_list ON events (account, livemode, created DESC, id DESC);
CREATE INDEX IF NOT EXISTS events_type ON events (account, livemode, status, created DESC, id DESC);
CREATE TABLE IF NOT EXISTS customers (id TEXT PRIMARY KEY, account TEXT NOT NULL,
    livemode INTEGER NOT NULL, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS payment_methods (id TEXT PRIMARY KEY, account TEXT NOT NULL,
    livemode INTEGER NOT NULL, customer TEXT, used INTEGER NOT NULL DEFAULT 0, rec BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS webhook_endpoints (id TEXT PRIMARY KEY, account TEXT NOT NULL,
    livemode INTEGER NOT NULL, url TEXT NOT NULL, secret TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries (rid INTEGER PRIMARY KEY, event_id TEXT NOT NULL,
    account TEXT NOT NULL, livemode INTEGER NOT NULL, url TEXT NOT NULL, secret TEXT NOT NULL,
    first_at REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at REAL,
    state TEXT NOT NULL, last_status INTEGER, last_error TEXT);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (next_at) WHERE next_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS deliveries_account ON deliveries (account, livemode, rid);
CREATE TABLE IF NOT EXISTS idempotency (scope TEXT PRIMARY KEY, fingerprint BLOB NOT NULL,
    status INTEGER NOT NULL, headers BLOB NOT NULL, body BLOB NOT NULL, created REAL NOT NULL);
"""

#: the tables whose rows are gateway objects served by list endpoints
OBJECT_TABLES = ("payments", "refunds", "events")


@dataclass(slots=True)
class Row:
    """A stored object: internal record (None for raw records) and its rendered JSON."""

    rid: int
    rec: dict[str, Any] | None
    body: bytes


@dataclass(slots=True)
class Page:
    bodies: list[bytes]
    has_more: bool = False
    total: int = 0


@dataclass(slots=True)
class ListQuery:
    """Filters of a list request; ``extra`` holds equality filters on indexed columns."""

    account: str
    livemode: bool
    status: str | None = None
    created_gte: float | None = None
    created_lt: float | None = None
    extra: dict[str, str] = field(default_factory=dict)
    #: fault injection (late visibility): (max delay s, seed, now); a row is listed only once
    #: ``now`` reaches its creation time plus its own delay (0..max, fixed by rid and seed)
    visibility: tuple[int, int, float] | None = None

    def where(self) -> tuple[str, list[Any]]:
        sql = "account = ? AND livemode = ?"
        args: list[Any] = [self.account, int(self.livemode)]
        if self.status is not None:
            sql += " AND status = ?"
            args.append(self.status)
        for col, value in self.extra.items():
            sql += f" AND {col} = ?"
            args.append(value)
        if self.created_gte is not None:
            sql += " AND created >= ?"
            args.append(self.created_gte)
        if self.created_lt is not None:
            sql += " AND created < ?"
            args.append(self.created_lt)
        if self.visibility is not None:
            delay, seed, now = self.visibility
            sql += " AND (created <= ? OR created + ((rid * 2654435761 + ?) % ?) <= ?)"
            args += [now - delay, seed, delay + 1, now]
        return sql, args

    def cache_key(self, table: str) -> tuple[Any, ...]:
        return (
            table,
            self.status,
            tuple(sorted(self.extra.items())),
            self.created_gte,
            self.created_lt,
            self.visibility,
        )


class Store:
    """The sandbox's SQLite database (a file, or ``None`` for memory)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = ":memory:" if path is None else str(path)
        self.lock = threading.RLock()
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        if self.path != ":memory:":
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA cache_size=-65536")
        self.db.executescript(SCHEMA)
        self._depth = 0
        # per (account, livemode): bumped on each write, keys the ordered-rowid cache
        self._versions: dict[tuple[str, bool], int] = {}
        self._order_cache: OrderedDict[tuple[Any, ...], list[int]] = OrderedDict()
        self.next_due = self._min_due()

    def close(self) -> None:
        with self.lock:
            self.db.close()

    # -- transactions ---------------------------------------------------------------------------
    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (nested calls join the outer one)."""
        with self.lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self.db
                finally:
                    self._depth -= 1
                return
            self.db.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.db
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
            else:
                self.db.execute("COMMIT")
            finally:
                self._depth = 0

    def touch(self, account: str, livemode: bool) -> None:
        key = (account, livemode)
        self._versions[key] = self._versions.get(key, 0) + 1

    # -- meta -----------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        with self.lock:
            row = self.db.execute("SELECT v FROM meta WHERE k = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # -- objects (payments, refunds, events) ----------------------------------------------------
    def insert(
        self,
        table: str,
        rec: dict[str, Any],
        body: bytes,
        *,
        status: str,
        due_at: float | None = None,
    ) -> None:
        self.insert_many(table, [(rec, body, status, due_at)])

    def insert_many(
        self, table: str, rows: Sequence[tuple[dict[str, Any], bytes, str, float | None]]
    ) -> None:
        """Bulk insert of (rec, body, status, due_at) rows (the history generator's path)."""
        if not rows:
            return
        with self.lock:
            if table == "refunds":
                self.db.executemany(
                    "INSERT INTO refunds (id, account, livemode, created, status, due_at, "
                    "payment_id, rec, body) VALUES (?,?,?,?,?,?,?,?,?)",
                    [
                        (
                            r["id"],
                            r["account"],
                            int(r["livemode"]),
                            r["created"],
                            s,
                            d,
                            r["payment_id"],
                            orjson.dumps(r),
                            b,
                        )
                        for r, b, s, d in rows
                    ],
                )
            else:
                self.db.executemany(
                    f"INSERT INTO {table} (id, account, livemode, created, status, due_at, rec, "
                    "body) VALUES (?,?,?,?,?,?,?,?)",
                    [
                        (
                            r["id"],
                            r["account"],
                            int(r["livemode"]),
                            r["created"],
                            s,
                            d,
                            orjson.dumps(r),
                            b,
                        )
                        for r, b, s, d in rows
                    ],
                )
            rec0 = rows[0][0]
            self.touch(rec0["account"], rec0["livemode"])
            for row in rows:
                self._note_due(row[3])

    def insert_raw(
        self, table: str, account: str, livemode: bool, obj: Any, created: int, body: bytes
    ) -> None:
        ident = obj.get("id") if isinstance(obj, dict) else None
        status = obj.get("status") if isinstance(obj, dict) else None
        with self.lock:
            self.db.execute(
                f"INSERT INTO {table} (id, account, livemode, created, status, raw, body) "
                "VALUES (?,?,?,?,?,1,?)",
                (
                    ident if isinstance(ident, str) else "",
                    account,
                    int(livemode),
                    created,
                    status if isinstance(status, str) else "",
                    body,
                ),
            )
            self.touch(account, livemode)

    def update(
        self,
        table: str,
        rid: int,
        rec: dict[str, Any],
        body: bytes,
        *,
        status: str,
        due_at: float | None,
    ) -> None:
        with self.lock:
            self.db.execute(
                f"UPDATE {table} SET status = ?, due_at = ?, rec = ?, body = ? WHERE rid = ?",
                (status, due_at, orjson.dumps(rec), body, rid),
            )
            self.touch(rec["account"], rec["livemode"])
            self._note_due(due_at)

    def get(self, table: str, account: str, livemode: bool, ident: str) -> Row | None:
        with self.lock:
            row = self.db.execute(
                f"SELECT rid, rec, body FROM {table} WHERE id = ? AND raw = 0 AND account = ? "
                "AND livemode = ?",
                (ident, account, int(livemode)),
            ).fetchone()
        if row is None:
            return None
        return Row(row[0], orjson.loads(row[1]), row[2])

    def cursor_key(self, table: str, q: ListQuery, ident: str) -> tuple[int, str] | None:
        with self.lock:
            row = self.db.execute(
                f"SELECT created, id FROM {table} WHERE id = ? AND account = ? AND livemode = ? "
                "ORDER BY raw LIMIT 1",
                (ident, q.account, int(q.livemode)),
            ).fetchone()
        return None if row is None else (row[0], row[1])

    def list_cursor(
        self,
        table: str,
        q: ListQuery,
        limit: int,
        after: tuple[int, str] | None = None,
        before: tuple[int, str] | None = None,
    ) -> Page:
        """Newest first; ``after``/``before`` are the (created, id) of a cursor object."""
        where, args = q.where()
        if before is not None:
            sql = (
                f"SELECT body FROM {table} WHERE {where} AND (created, id) > (?, ?) "
                "ORDER BY created ASC, id ASC LIMIT ?"
            )
            args += [*before, limit + 1]
        else:
            sql = f"SELECT body FROM {table} WHERE {where}"
            if after is not None:
                sql += " AND (created, id) < (?, ?)"
                args += list(after)
            sql += " ORDER BY created DESC, id DESC LIMIT ?"
            args.append(limit + 1)
        with self.lock:
            bodies = [r[0] for r in self.db.execute(sql, args)]
        has_more = len(bodies) > limit
        del bodies[limit:]
        if before is not None:
            bodies.reverse()
        return Page(bodies, has_more)

    def list_page(self, table: str, q: ListQuery, page: int, limit: int) -> Page:
        """Page-number listing (variant A): total count and one page, newest first."""
        with self.lock:
            rids = self._ordered_rids(table, q)
            chosen = rids[(page - 1) * limit : page * limit]
            if not chosen:
                return Page([], total=len(rids))
            marks = ",".join("?" * len(chosen))
            found = dict(
                self.db.execute(
                    f"SELECT rid, body FROM {table} WHERE rid IN ({marks})", chosen
                ).fetchall()
            )
        return Page([found[r] for r in chosen], total=len(rids))

    def _ordered_rids(self, table: str, q: ListQuery) -> list[int]:
        version = self._versions.get((q.account, q.livemode), 0)
        key = (q.account, q.livemode, version, *q.cache_key(table))
        rids = self._order_cache.get(key)
        if rids is None:
            where, args = q.where()
            rids = [
                r[0]
                for r in self.db.execute(
                    f"SELECT rid FROM {table} WHERE {where} ORDER BY created DESC, id DESC", args
                )
            ]
            # A late-visibility fault's answer depends on the clock's "now": with a live clock
            # it would never be asked again, and would push useful entries out.
            if q.visibility is not None:
                return rids
            self._order_cache[key] = rids
            while len(self._order_cache) > 64:
                self._order_cache.popitem(last=False)
        else:
            self._order_cache.move_to_end(key)
        return rids

    # -- due transitions ------------------------------------------------------------------------
    def _note_due(self, due_at: float | None) -> None:
        if due_at is not None and due_at < self.next_due:
            self.next_due = due_at

    def _min_due(self) -> float:
        found = [
            self.db.execute(f"SELECT MIN(due_at) FROM {t} WHERE due_at IS NOT NULL").fetchone()[0]
            for t in ("payments", "refunds")
        ]
        found.append(
            self.db.execute(
                "SELECT MIN(next_at) FROM deliveries WHERE next_at IS NOT NULL"
            ).fetchone()[0]
        )
        values = [v for v in found if v is not None]
        return min(values) if values else float("inf")

    def due(self, table: str, now: float, limit: int = 500) -> list[Row]:
        with self.lock:
            rows = self.db.execute(
                f"SELECT rid, rec, body FROM {table} WHERE due_at IS NOT NULL AND due_at <= ? "
                "ORDER BY due_at, rid LIMIT ?",
                (now, limit),
            ).fetchall()
        return [Row(r[0], orjson.loads(r[1]), r[2]) for r in rows]

    def recompute_due(self) -> None:
        with self.lock:
            self.next_due = self._min_due()

    # -- accounts and keys ----------------------------------------------------------------------
    def add_account(
        self, ident: str, created: float, webhook_secret: str, keys: Sequence[tuple[str, str, bool]]
    ) -> None:
        with self.tx() as db:
            db.execute("INSERT INTO accounts VALUES (?, ?, ?)", (ident, created, webhook_secret))
            db.executemany(
                "INSERT INTO keys (key, account, kind, livemode) VALUES (?, ?, ?, ?)",
                [(k, ident, kind, int(live)) for k, kind, live in keys],
            )

    def account_keys(self, account: str) -> list[tuple[str, str, bool]]:
        with self.lock:
            rows = self.db.execute(
                "SELECT key, kind, livemode FROM keys WHERE account = ? AND expires_at IS NULL "
                "ORDER BY rowid",
                (account,),
            ).fetchall()
        return [(r[0], r[1], bool(r[2])) for r in rows]

    def webhook_secret(self, account: str) -> str:
        with self.lock:
            return str(
                self.db.execute(
                    "SELECT webhook_secret FROM accounts WHERE id = ?", (account,)
                ).fetchone()[0]
            )

    def key(self, key: str) -> tuple[str, str, bool, float | None, list[str] | None] | None:
        with self.lock:
            row = self.db.execute(
                "SELECT account, kind, livemode, expires_at, allowlist FROM keys WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return (
            row[0],
            row[1],
            bool(row[2]),
            row[3],
            None if row[4] is None else orjson.loads(row[4]),
        )

    def roll_key(self, old: str, new: str, now: float, expires_at: float) -> bool:
        """Replace ``old`` by ``new``: ``old`` stays valid until ``expires_at``, and a key rolled
        earlier in its place (same account, kind and mode) ends now, so that two keys at most
        are valid. False, and nothing changes, if ``old`` was already rolled."""
        with self.tx() as db:
            taken = db.execute(
                "UPDATE keys SET expires_at = ? WHERE key = ? AND expires_at IS NULL",
                (expires_at, old),
            ).rowcount
            if taken != 1:
                return False
            db.execute(
                "UPDATE keys SET expires_at = ? WHERE expires_at > ? AND key != ? AND "
                "(account, kind, livemode) = (SELECT account, kind, livemode FROM keys WHERE key = ?)",
                (now, now, old, old),
            )
            db.execute(
                "INSERT INTO keys (key, account, kind, livemode, allowlist) SELECT ?, account, "
                "kind, livemode, allowlist FROM keys WHERE key = ?",
                (new, old),
            )
        return True

    def set_allowlist(self, key: str, ips: list[str] | None) -> None:
        with self.lock:
            self.db.execute(
                "UPDATE keys SET allowlist = ? WHERE key = ?",
                (None if ips is None else orjson.dumps(ips), key),
            )

    # -- customers, payment methods, webhook endpoints ------------------------------------------
    def put_simple(
        self,
        table: str,
        ident: str,
        account: str,
        livemode: bool,
        body: bytes,
        customer: str | None = None,
    ) -> None:
        with self.lock:
            if table == "payment_methods":
                self.db.execute(
                    "INSERT OR REPLACE INTO payment_methods (id, account, livemode, customer, rec)"
                    " VALUES (?,?,?,?,?)",
                    (ident, account, int(livemode), customer, body),
                )
            else:
                self.db.execute(
                    "INSERT OR REPLACE INTO customers VALUES (?,?,?,?)",
                    (ident, account, int(livemode), body),
                )

    def get_simple(self, table: str, account: str, livemode: bool, ident: str) -> bytes | None:
        col = "rec" if table == "payment_methods" else "body"
        with self.lock:
            row = self.db.execute(
                f"SELECT {col} FROM {table} WHERE id = ? AND account = ? AND livemode = ?",
                (ident, account, int(livemode)),
            ).fetchone()
        return None if row is None else bytes(row[0])

    def add_endpoint(
        self, ident: str, account: str, livemode: bool, url: str, secret: str, created: float
    ) -> None:
        with self.lock:
            self.db.execute(
                "INSERT INTO webhook_endpoints VALUES (?,?,?,?,?,?)",
                (ident, account, int(livemode), url, secret, created),
            )

    def endpoints(self, account: str, livemode: bool) -> list[tuple[str, str]]:
        with self.lock:
            return [
                (r[0], r[1])
                for r in self.db.execute(
                    "SELECT url, secret FROM webhook_endpoints WHERE account = ? AND livemode = ? "
                    "ORDER BY rowid",
                    (account, int(livemode)),
                )
            ]

    # -- reset ----------------------------------------------------------------------------------
    def reset(self) -> None:
        with self.tx() as db:
            for (name,) in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).fetchall():
                db.execute(f"DELETE FROM {name}")
        self._versions.clear()
        self._order_cache.clear()
        self.next_due = float("inf")


class DeliveryStore:
    """Webhook deliveries (kept apart from :class:`Store` only to keep each class short)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def add(self, rows: Sequence[tuple[str, str, bool, str, str, float]]) -> None:
        """Queue (event_id, account, livemode, url, secret, now) deliveries, due at once."""
        if not rows:
            return
        s = self.store
        with s.lock:
            s.db.executemany(
                "INSERT INTO deliveries (event_id, account, livemode, url, secret, first_at, "
                "next_at, state) VALUES (?,?,?,?,?,?,?, 'pending')",
                [(e, a, int(lm), u, sec, now, now) for e, a, lm, u, sec, now in rows],
            )
            s._note_due(min(r[5] for r in rows))

    def take_due(self, now: float) -> list[tuple[int, str, str, bytes]]:
        """Due deliveries (rid, url, secret, event body), marked as in flight."""
        s = self.store
        with s.tx() as db:
            rows = db.execute(
                "SELECT d.rid, d.url, d.secret, e.body FROM deliveries d JOIN events e "
                "ON e.id = d.event_id WHERE d.next_at IS NOT NULL AND d.next_at <= ? "
                "ORDER BY d.rid LIMIT 200",
                (now,),
            ).fetchall()
            db.executemany(
                "UPDATE deliveries SET next_at = NULL, state = 'sending' WHERE rid = ?",
                [(r[0],) for r in rows],
            )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def done(
        self,
        rid: int,
        ok: bool,
        status: int | None,
        error: str | None,
        now: float,
        retry_at: float | None,
    ) -> None:
        s = self.store
        with s.lock:
            if ok:
                s.db.execute(
                    "UPDATE deliveries SET state = 'succeeded', attempts = attempts + 1, "
                    "last_status = ?, last_error = NULL WHERE rid = ?",
                    (status, rid),
                )
                return
            s.db.execute(
                "UPDATE deliveries SET attempts = attempts + 1, last_status = ?, last_error = ?, "
                "next_at = ?, state = ? WHERE rid = ?",
                (status, error, retry_at, "failed" if retry_at is None else "retrying", rid),
            )
            s._note_due(retry_at)

    def attempts(self, rid: int) -> tuple[int, float]:
        with self.store.lock:
            row = self.store.db.execute(
                "SELECT attempts, first_at FROM deliveries WHERE rid = ?", (rid,)
            ).fetchone()
        return int(row[0]), float(row[1])

    def list(self, account: str, livemode: bool) -> list[dict[str, Any]]:
        cols = (
            "id",
            "event_id",
            "url",
            "attempts",
            "next_at",
            "state",
            "last_status",
            "last_error",
        )
        with self.store.lock:
            rows = self.store.db.execute(
                "SELECT rid, event_id, url, attempts, next_at, state, last_status, last_error "
                "FROM deliveries WHERE account = ? AND livemode = ? ORDER BY rid",
                (account, int(livemode)),
            ).fetchall()
        return [dict(zip(cols, r, strict=True)) for r in rows]


def get_by_id(store: Store, table: str, ident: str) -> Row | None:
    """A payment or refund by id alone, whatever its account (customer-facing pages)."""
    with store.lock:
        row = store.db.execute(
            f"SELECT rid, rec, body FROM {table} WHERE id = ? AND raw = 0", (ident,)
        ).fetchone()
    return None if row is None else Row(row[0], orjson.loads(row[1]), row[2])
