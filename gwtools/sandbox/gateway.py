"""The gateway service: every API operation, on top of the store, the domain and the clock.

Routes (``routes.py``), pages and the admin API call these methods; they return JSON bytes or
raise :class:`~gwtools.sandbox.errors.ApiError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from gwtools.sandbox import domain, errors, params, render
from gwtools.sandbox.auth import ROLL_GRACE, Auth, Keys, mask
from gwtools.sandbox.clock import Clock, iso, parse_instant
from gwtools.sandbox.domain import Event, Ids, Method, Record, Sequence
from gwtools.sandbox.events import EVENT_TYPES, RETRY_WINDOW, Webhooks, backoff
from gwtools.sandbox.store import DeliveryStore, ListQuery, Row, Store

API_VERSION: Final = "2024-01-01"
DEPRECATED_VERSION: Final = "2023-12-01"
EXPANDABLE: Final = ("customer", "payment_method")
#: Variant B creation parameters a publishable (browser) key may not use: they charge or save
#: a customer's payment methods, which only the merchant's server (the secret key) may do.
SECRET_ONLY_PARAMS: Final = ("customer", "payment_method", "save_payment_method")


def _browser_only(body: Mapping[str, Any]) -> None:
    """401 if a publishable key's creation body uses a secret-only parameter.

    Checked before anything is looked up, so a publishable key learns nothing of a customer
    or a saved method (not even that it exists or whose it is)."""
    for name in SECRET_ONLY_PARAMS:
        value = body.get(name)
        if value is None or (name == "save_payment_method" and value is False):
            continue
        raise errors.ApiError(
            401,
            "authentication_error",
            "invalid_api_key",
            f"A publishable key (pk_…) cannot use {name}: charging or saving a customer's "
            "payment methods needs your secret key (sk_…), sent from your server. From the "
            "browser, send what the customer enters as payment_method_data, without "
            f"{', '.join(SECRET_ONLY_PARAMS)}.",
            param=name,
        )


class Gateway:
    """One sandbox gateway: a variant, a store, a clock.

    >>> gw = Gateway(Store(), Clock(), "B")
    >>> acct = gw.create_account()
    """

    def __init__(
        self,
        store: Store,
        clock: Clock,
        variant: str,
        *,
        expiry_minutes: float | None = 60,
        base_url: str | None = None,
    ) -> None:
        if variant not in ("A", "B"):
            raise ValueError(f"variant must be 'A' or 'B', not {variant!r}")
        self.store = store
        self.clock = clock
        self.variant = variant
        self.expiry = None if expiry_minutes is None else expiry_minutes * 60
        self.keys = Keys(store)
        self.ids = Ids(sequence=Sequence(self._last_sequence()))
        self.deliveries = DeliveryStore(store)
        self.webhooks = Webhooks(self)
        self.base_url = base_url or store.meta("base_url") or "http://127.0.0.1"
        if store.meta("variant") not in (None, variant) or store.meta("base_url") not in (
            None,
            self.base_url,
        ):
            self.rerender()
        store.set_meta("variant", variant)
        store.set_meta("base_url", self.base_url)
        default = store.meta("default_account")
        if default is None:
            self.default_account = self.create_account()
            store.set_meta("default_account", orjson.dumps(self.default_account).decode())
        else:
            self.default_account = orjson.loads(default)

    def _last_sequence(self) -> int:
        with self.store.lock:
            found = [
                self.store.db.execute(
                    f"SELECT MAX(substr(id, {len(prefix) + 2}, 8)) FROM {table} WHERE raw = 0"
                ).fetchone()[0]
                for table, prefix in (("payments", "pay"), ("refunds", "rfnd"), ("events", "evt"))
            ]
        return max([domain.decode_sequence(f"x_{v}") for v in found if v] or [0])

    # -- setup ----------------------------------------------------------------------------------
    def set_base_url(self, base_url: str) -> None:
        """The public address pages and ``redirect_url`` point at (set once the port is known)."""
        if base_url != self.base_url:
            self.base_url = base_url
            self.rerender()
            self.store.set_meta("base_url", base_url)

    def rerender(self) -> None:
        """Render every stored object again (after a change of variant or base URL)."""
        s = self.store
        with s.tx() as db:
            for table in ("payments", "refunds"):
                rows = db.execute(f"SELECT rid, rec FROM {table} WHERE raw = 0").fetchall()
                for rid, blob in rows:
                    rec = orjson.loads(blob)
                    body, status = self._render(table, rec)
                    db.execute(
                        f"UPDATE {table} SET body = ?, status = ? WHERE rid = ?",
                        (body, status, rid),
                    )
            # An event's object as it was then, in the served variant: else GET /v1/events
            # showed the other variant's payments beside this one's (the type is unchanged).
            rows = db.execute("SELECT rid, rec FROM events WHERE raw = 0").fetchall()
            for rid, blob in rows:
                again = render.event_again(orjson.loads(blob), self.variant, self.base_url)
                if again is not None:
                    db.execute("UPDATE events SET body = ? WHERE rid = ?", (again, rid))
            s._versions.clear()
            s._order_cache.clear()
        s.set_meta("variant", self.variant)

    def _render(self, table: str, rec: Record) -> tuple[bytes, str]:
        if table == "payments":
            return (
                render.payment(rec, self.variant, self.base_url),
                render.payment_status(rec, self.variant),
            )
        return render.refund(rec, self.variant), rec["status"]

    def create_account(self) -> dict[str, str]:
        """A fresh, isolated account with its four keys and a webhook secret."""
        tok = self.ids.token
        acct = self.ids.new("acct")
        keys = {
            "secret_key": f"sk_test_{tok(32)}",
            "publishable_key": f"pk_test_{tok(32)}",
            "live_secret_key": f"sk_live_{tok(32)}",
            "live_publishable_key": f"pk_live_{tok(32)}",
        }
        secret = f"whsec_{tok(32)}"
        self.store.add_account(
            acct,
            self.clock.now(),
            secret,
            [
                (keys["secret_key"], "secret", False),
                (keys["publishable_key"], "publishable", False),
                (keys["live_secret_key"], "secret", True),
                (keys["live_publishable_key"], "publishable", True),
            ],
        )
        return {"id": acct, **keys, "webhook_secret": secret}

    def reset(self) -> None:
        """Forget everything but the default account and its keys."""
        self.store.reset()
        self.keys.forget()
        acct = self.default_account
        self.store.add_account(
            acct["id"],
            self.clock.now(),
            acct["webhook_secret"],
            [
                (acct["secret_key"], "secret", False),
                (acct["publishable_key"], "publishable", False),
                (acct["live_secret_key"], "secret", True),
                (acct["live_publishable_key"], "publishable", True),
            ],
        )
        for key, value in (
            ("variant", self.variant),
            ("base_url", self.base_url),
            ("default_account", orjson.dumps(acct).decode()),
        ):
            self.store.set_meta(key, value)

    def roll_key(self, auth: Auth) -> tuple[str, float]:
        """A new key in place of ``auth.key``, which stays valid for ``ROLL_GRACE`` seconds
        (returned: the new key and when the old one expires). An earlier key still in its
        grace ends now; a key already rolled cannot be rolled again (409)."""
        kind = auth.key[: auth.key.index("_", 3) + 1]
        new = f"{kind}{self.ids.token(32)}"
        now = self.clock.now()
        rolled = self.store.roll_key(auth.key, new, now, now + ROLL_GRACE)
        self.keys.forget()
        if not rolled:
            until = self.keys.lookup(auth.key)
            when = iso(until.expires_at) if until and until.expires_at else "its expiry"
            raise errors.invalid_state(
                f"The key {mask(auth.key)} was already rolled and stays valid until {when}; "
                "roll the key that replaced it instead."
            )
        return new, now + ROLL_GRACE

    def set_allowlist(self, auth: Auth, ips: list[str]) -> None:
        self.store.set_allowlist(auth.key, ips or None)
        self.keys.forget()

    # -- due transitions ------------------------------------------------------------------------
    def apply_due(self) -> None:
        """Apply every transition whose time has come (cheap when nothing is due)."""
        now = self.clock.now()
        s = self.store
        if now < s.next_due:
            return
        with s.tx():
            while True:
                prows = s.due("payments", now)
                for row in prows:
                    assert row.rec is not None
                    when = row.rec["due_at"]
                    events = domain.due_transition(row.rec, now)
                    self._save("payments", row.rid, row.rec)
                    self._emit(events, at=when)
                rrows = s.due("refunds", now)
                for row in rrows:
                    assert row.rec is not None
                    when = row.rec["due_at"]
                    prow = s.get(
                        "payments", row.rec["account"], row.rec["livemode"], row.rec["payment_id"]
                    )
                    events = domain.refund_due(row.rec, None if prow is None else prow.rec, now)
                    self._save("refunds", row.rid, row.rec)
                    if prow is not None and prow.rec is not None:
                        self._save("payments", prow.rid, prow.rec)
                    self._emit(events, at=when)
                if not prows and not rrows:
                    break
            s.recompute_due()
        self.webhooks.kick()

    # -- events and webhooks --------------------------------------------------------------------
    def _emit(self, events: list[Event], *, deliver: bool = True, at: float | None = None) -> None:
        """Store (and deliver) ``events``; ``at`` dates them when it is not now: a due
        transition happened at its due time, however late the clock reached it."""
        now = self.clock.now()
        for type_, rec in events:
            self.emit_object(
                type_,
                rec,
                render.object_json(rec, self.variant, self.base_url),
                now,
                deliver=deliver,
                created=at,
                rendered=True,
            )

    def emit_object(
        self,
        type_: str,
        rec: Mapping[str, Any],
        obj: bytes,
        now: float,
        *,
        deliver: bool = True,
        created: float | None = None,
        rendered: bool = False,
    ) -> None:
        """Store an event about ``rec`` (``obj``: its JSON) dated ``created`` (default
        ``now``), and queue its deliveries, first attempted ``now``. ``rendered``: ``obj`` is
        ``rec`` as the variant shows it (see :func:`render.event_row`)."""
        when = now if created is None else created
        evrec, body = render.event_row(
            self.ids.new("evt"), type_, rec, obj, when, API_VERSION, rendered=rendered
        )
        eid = evrec["id"]
        self.store.insert("events", evrec, body, status=type_)
        if not deliver:
            return
        targets = self.store.endpoints(rec["account"], rec["livemode"])
        callback = rec.get("callback_url")
        if callback:
            targets.append((callback, self.store.webhook_secret(rec["account"])))
        self.deliveries.add(
            [(eid, rec["account"], rec["livemode"], url, secret, now) for url, secret in targets]
        )

    def take_due_deliveries(self) -> list[tuple[int, str, str, bytes]]:
        return self.deliveries.take_due(self.clock.now())

    def delivery_done(
        self, rid: int, ok: bool, status: int | None, error: str | None, at: float | None = None
    ) -> None:
        """Record an attempt made at sandbox time ``at`` (default now). A retry is due a back-off
        after the attempt, even if the clock moved while the receiver was answering."""
        now = self.clock.now() if at is None else at
        retry_at = None
        if not ok:
            attempts, first = self.deliveries.attempts(rid)
            retry_at = now + backoff(attempts + 1)
            if retry_at > first + RETRY_WINDOW:
                retry_at = None
        self.deliveries.done(rid, ok, status, error, now, retry_at)

    def add_endpoint(self, auth: Auth, url: str) -> dict[str, str]:
        ident, secret = self.ids.new("we"), f"whsec_{self.ids.token(32)}"
        self.store.add_endpoint(ident, auth.account, auth.livemode, url, secret, self.clock.now())
        return {"id": ident, "object": "webhook_endpoint", "url": url, "secret": secret}

    def save_payment(self, rid: int, rec: Record, events: list[Event]) -> None:
        """Persist a payment changed outside the API (customer pages) and emit its events."""
        with self.store.tx():
            self._save("payments", rid, rec)
            self._emit(events)
        self.webhooks.kick()

    # -- persistence helpers --------------------------------------------------------------------
    def _save(self, table: str, rid: int, rec: Record) -> bytes:
        body, status = self._render(table, rec)
        self.store.update(table, rid, rec, body, status=status, due_at=rec["due_at"])
        return body

    def _insert(self, table: str, rec: Record) -> bytes:
        body, status = self._render(table, rec)
        self.store.insert(table, rec, body, status=status, due_at=rec["due_at"])
        return body

    def _load(self, table: str, auth: Auth, ident: str, param: str = "id") -> Row:
        row = self.store.get(table, auth.account, auth.livemode, ident)
        if row is None:
            kind = "payment" if table == "payments" else "refund"
            raise errors.not_found(kind, ident, param)
        return row

    # -- payments -------------------------------------------------------------------------------
    def create_payment(self, auth: Auth, raw: bytes) -> bytes:
        self.apply_due()
        now = self.clock.now()
        fields = params.parse_json(raw)
        if auth.kind == "publishable" and self.variant == "B":
            _browser_only(fields)  # variant A has none of these parameters (unknown there: 400)
        p = params.payment_params(fields, self.variant)
        ident = self.ids.new("pay")
        secret = f"{ident}_secret_{self.ids.token()}"
        if self.variant == "A":
            rec = domain.new_payment(
                ident,
                auth.account,
                auth.livemode,
                p,
                now,
                client_secret=secret,
                expiry_seconds=self.expiry,
            )
            with self.store.tx():
                return self._insert("payments", rec)
        method, save = self._resolve_method(auth, p, now)
        rec = domain.new_payment(
            ident, auth.account, auth.livemode, p, now, client_secret=secret, expiry_seconds=None
        )
        events = domain.attempt(rec, method, now)
        if rec["status"] == "failed" and save is not None and save["customer"] is not None:
            # A declined card is not kept for the customer to charge again: a new one is stored
            # unattached (the payment still names it); a saved one stays as it was.
            save = None if p["payment_method"] is not None else {**save, "customer": None}
        with self.store.tx():
            if save is not None:
                self.store.put_simple(
                    "payment_methods",
                    save["id"],
                    auth.account,
                    auth.livemode,
                    orjson.dumps(save),
                    customer=save["customer"],
                )
                if save["customer"] is not None:
                    self.emit_object("payment_method.attached", rec, self._pm_body(save), now)
            body = self._insert("payments", rec)
            self._emit(events)
        self.webhooks.kick()
        if rec["status"] == "failed" and method.type == "card":
            err = rec["error"]
            raise errors.card_error(
                err["code"], err["message"], decline_code=err["decline_code"], payment=body
            )
        return body

    def _resolve_method(
        self, auth: Auth, p: dict[str, Any], now: float
    ) -> tuple[Method, dict[str, Any] | None]:
        """Variant B: the method to use, and the payment method record to store (if new)."""
        if (
            p["customer"] is not None
            and self.store.get_simple("customers", auth.account, auth.livemode, p["customer"])
            is None
        ):
            raise errors.not_found("customer", p["customer"], "customer")
        if p["payment_method"] is not None:
            blob = self.store.get_simple(
                "payment_methods", auth.account, auth.livemode, p["payment_method"]
            )
            if blob is None:
                raise errors.not_found("payment method", p["payment_method"], "payment_method")
            pm = orjson.loads(blob)
            if pm["customer"] is not None and pm["customer"] != p["customer"]:
                raise errors.invalid(
                    "customer",
                    f"Payment method {pm['id']} belongs to customer "
                    f"{pm['customer']}; pass customer={pm['customer']}.",
                )
            method = Method(
                pm["type"], pm["details"], pm["outcome"], pm["id"], pm["code"], pm["decline_code"]
            )
            save = None
            if p["save_payment_method"] and pm["customer"] is None:
                save = {**pm, "customer": p["customer"]}
        else:
            found = params.method_data(p["payment_method_data"], auth.livemode, now)
            pm_id = self.ids.new("pm")
            method = Method(
                found.type, found.details, found.outcome, pm_id, found.code, found.decline_code
            )
            save = domain.method_record(
                method,
                pm_id,
                now,
                auth.livemode,
                p["customer"] if p["save_payment_method"] else None,
            )
        if method.type == "fpx":
            params.fpx_currency(p["currency"])
        if method.type == "fpx" and p["capture_method"] == "manual":
            raise errors.invalid(
                "capture_method",
                "FPX payments are captured at once; capture_method manual needs a card.",
            )
        if p["return_url"] is None and (method.type == "fpx" or method.outcome == "three_d_secure"):
            raise errors.ApiError(
                400,
                "invalid_request_error",
                "parameter_missing",
                "return_url is required for FPX and 3-D Secure payments.",
                param="return_url",
            )
        return method, save

    def _pm_body(self, pm: Mapping[str, Any]) -> bytes:
        details = {k: v for k, v in pm["details"].items() if k != "type"}
        return orjson.dumps(
            {
                "id": pm["id"],
                "object": "payment_method",
                "type": pm["type"],
                pm["type"]: details,
                "customer": pm["customer"],
                "created": pm["created"],
                "livemode": pm["livemode"],
            }
        )

    def get_payment(self, auth: Auth, ident: str, expand: list[str] | None = None) -> bytes:
        self.apply_due()
        row = self._load("payments", auth, ident)
        if not expand:
            return row.body
        assert row.rec is not None
        obj = orjson.loads(row.body)
        if "customer" in expand and obj.get("customer"):
            blob = self.store.get_simple("customers", auth.account, auth.livemode, obj["customer"])
            obj["customer"] = None if blob is None else orjson.loads(blob)
        if "payment_method" in expand and obj.get("payment_method"):
            blob = self.store.get_simple(
                "payment_methods", auth.account, auth.livemode, obj["payment_method"]
            )
            obj["payment_method"] = (
                None if blob is None else orjson.loads(self._pm_body(orjson.loads(blob)))
            )
        return orjson.dumps(obj)

    def capture(self, auth: Auth, ident: str, raw: bytes) -> bytes:
        self.apply_due()
        body = params.parse_json(raw, allow_empty=True)
        params.reject_unknown(body, ("amount",))
        amount = params.integer(body, "amount")
        with self.store.tx():
            row = self._load("payments", auth, ident)
            rec = row.rec
            assert rec is not None
            if rec["status"] != "authorized":
                raise errors.invalid_state(
                    f"Payment {ident} is {render.payment_status(rec, self.variant)}; only an "
                    f"authorized payment can be captured: {self._state_hint(rec, 'capture')}"
                )
            if amount is not None and amount > rec["amount"]:
                raise errors.invalid(
                    "amount",
                    f"Invalid amount: {amount} exceeds the authorized amount {rec['amount']}.",
                )
            events = domain.capture(rec, amount, self.clock.now())
            out = self._save("payments", row.rid, rec)
            self._emit(events)
        self.webhooks.kick()
        return out

    def _state_hint(self, rec: Record, action: str) -> str:
        """What a caller can do about a payment whose status refuses ``action``: the status
        alone ("is requires_action") leaves them to guess whether to wait, act or give up."""
        status, pid = rec["status"], rec["id"]
        if status in ("pending", "requires_action"):
            where = "redirect_url" if self.variant == "A" else "next_action.redirect_to_url"
            return (
                f"the customer has not finished paying (send them to {where}); retrieve the "
                "payment again once they have."
            )
        if status == "processing":
            return "it awaits the card's or the bank's answer; retrieve it again later."
        if status == "authorized":
            return (
                f"capture it first (POST /v1/payments/{pid}/capture), or void it to release "
                "the authorization."
            )
        if status == "succeeded":
            if action == "capture":
                return "it is already captured; there is nothing left to capture."
            return (
                f"it is already captured; refund it instead (POST /v1/refunds, payment_id {pid})."
            )
        return "this status is final; create a new payment to charge the customer again."

    def void(self, auth: Auth, ident: str, raw: bytes) -> bytes:
        self.apply_due()
        params.reject_unknown(params.parse_json(raw, allow_empty=True), ())
        with self.store.tx():
            row = self._load("payments", auth, ident)
            rec = row.rec
            assert rec is not None
            if rec["status"] == "processing":
                # variant A shows it as pending, a status that can otherwise be voided
                shown = " (shown as pending in variant A)" if self.variant == "A" else ""
                raise errors.invalid_state(
                    f"Payment {ident} is processing{shown}: it awaits the card's or the bank's "
                    "answer and cannot be voided now; retrieve it again later to see the outcome."
                )
            if rec["status"] not in ("authorized", "pending", "requires_action"):
                raise errors.invalid_state(
                    f"Payment {ident} is {render.payment_status(rec, self.variant)}; only a "
                    "payment not yet captured (authorized or awaiting the customer) can be "
                    f"voided: {self._state_hint(rec, 'void')}"
                )
            events = domain.void(rec, self.clock.now())
            out = self._save("payments", row.rid, rec)
            self._emit(events)
        self.webhooks.kick()
        return out

    # -- refunds --------------------------------------------------------------------------------
    def create_refund(self, auth: Auth, raw: bytes) -> bytes:
        self.apply_due()
        p = params.refund_params(params.parse_json(raw), self.variant)
        now = self.clock.now()
        with self.store.tx():
            prow = self._load("payments", auth, p["payment_id"], p["payment_param"])
            payment = prow.rec
            assert payment is not None
            if payment["status"] != "succeeded":
                raise errors.invalid_state(
                    f"Payment {payment['id']} is {render.payment_status(payment, self.variant)}; "
                    f"only a captured payment can be refunded: "
                    f"{self._state_hint(payment, 'refund')}"
                )
            left = domain.refundable(payment)
            amount = left if p["amount"] is None else p["amount"]
            captured = payment["amount_captured"]
            if left <= 0:
                # nothing left: say so, and blame the amount only if the caller gave one
                raise errors.ApiError(
                    409,
                    "invalid_request_error",
                    "amount_too_large",
                    f"Payment {payment['id']} is already fully refunded ({captured - left} of "
                    f"{captured} captured, pending refunds included); nothing is left to refund.",
                    param=None if p["amount"] is None else "amount",
                )
            if amount > left:
                raise errors.ApiError(
                    409,
                    "invalid_request_error",
                    "amount_too_large",
                    f"Refund amount {amount} exceeds what is left to refund on {payment['id']} "
                    f"({left} of {captured} captured).",
                    param="amount",
                )
            refund, events = domain.new_refund(
                payment, self.ids.new("rfnd"), amount, p["reason"], p["metadata"], now
            )
            refund["callback_url"] = payment.get("callback_url")
            out = self._insert("refunds", refund)
            self._save("payments", prow.rid, payment)
            self._emit(events)
        self.webhooks.kick()
        return out

    def get_refund(self, auth: Auth, ident: str) -> bytes:
        self.apply_due()
        return self._load("refunds", auth, ident).body

    # -- lists ----------------------------------------------------------------------------------
    def list_objects(
        self,
        table: str,
        auth: Auth,
        query: Mapping[str, str],
        *,
        cursor: bool,
        url: str,
        visibility: tuple[int, int] | None = None,
    ) -> bytes:
        """A list response; ``query`` is the request's query parameters (validated here).

        ``visibility`` (fault injection: max delay, seed) hides rows not yet visible."""
        self.apply_due()
        allowed = {"status", "from", "to", "limit"}
        allowed |= {"starting_after", "ending_before"} if cursor else {"page"}
        if table == "refunds":
            allowed.add("payment_id")
        if table == "events":
            allowed.add("type")
            allowed.discard("status")
        # the other variant's paging parameter: say how this list pages, not just "unknown"
        if cursor and "page" in query:
            raise errors.invalid(
                "page",
                "Received unknown parameter: page. This list pages by cursor, newest first: "
                "pass starting_after=<id of the last object of the previous page> (and limit) "
                "while has_more is true.",
            )
        wrong = next((n for n in ("starting_after", "ending_before") if n in query), None)
        if not cursor and wrong is not None:
            raise errors.invalid(
                wrong,
                f"Received unknown parameter: {wrong}. This list pages by number: pass page=2, "
                "3, ... (and limit) up to meta.totalPages.",
            )
        params.query(query, allowed)
        for name in ("starting_after", "ending_before", "payment_id", "type"):
            if query.get(name) == "":
                raise errors.invalid(name, f"Invalid {name}: empty; leave it out instead.")
        q = ListQuery(
            auth.account,
            auth.livemode,
            created_gte=params.instant(query, "from"),
            created_lt=params.instant(query, "to", end=True),
        )
        to_day = "to" in query and params.is_date(query["to"])
        if (
            q.created_gte is not None
            and q.created_lt is not None
            and (q.created_gte >= q.created_lt if to_day else q.created_gte > q.created_lt)
        ):
            # reversed bounds match nothing: an empty list that reads as "no payments then"
            # (a date alone as `to` is its whole day: it is reversed if the day ends by `from`)
            until = f" (that whole day, up to {iso(q.created_lt)})" if to_day else ""
            raise errors.invalid(
                "to",
                f"Invalid to: {query['to']!r}{until} is before from ({query['from']!r}), so "
                "nothing can match (from is inclusive, to exclusive; a date alone is a whole "
                "UTC day); swap them.",
            )
        if visibility is not None:
            q.visibility = (*visibility, self.clock.now())
        status = query.get("status")
        if status is not None:
            vocab = (
                render.PAYMENT_STATUSES[self.variant]
                if table == "payments"
                else render.REFUND_STATUSES
            )
            if status not in vocab:
                raise errors.invalid(
                    "status", f"Invalid status {status!r}; expected one of {', '.join(vocab)}."
                )
            q.status = status
        if query.get("type"):
            # an unknown type (a typo such as payment.succeded) would match nothing: an empty
            # list that looks like "no such events" instead of a mistake
            if query["type"] not in EVENT_TYPES:
                raise errors.invalid(
                    "type",
                    f"Invalid type {query['type']!r}; expected one of {', '.join(EVENT_TYPES)}.",
                )
            q.status = query["type"]
        if query.get("payment_id"):
            # a payment this key cannot see (a typo, a refund's id, the other mode's) would
            # list no refunds: read as "none yet" instead of a mistake, as a cursor id is not
            self._load("payments", auth, query["payment_id"], "payment_id")
            q.extra["payment_id"] = query["payment_id"]
        if not cursor:
            limit = params.query_int(query, "limit", 20, 100)
            page = params.query_int(query, "page", 1, 10**9)
            found = self.store.list_page(table, q, page, limit)
            return render.list_pages(found.bodies, found.total, page, limit)
        limit = params.query_int(query, "limit", 10, 100)
        after, before = query.get("starting_after"), query.get("ending_before")
        if after and before:
            raise errors.invalid("ending_before", "Give starting_after or ending_before, not both.")
        keys = {}
        for name, ident in (("starting_after", after), ("ending_before", before)):
            if ident:
                key = self.store.cursor_key(table, q, ident)
                if key is None:
                    raise errors.not_found(table.rstrip("s"), ident, name)
                keys[name] = key
        found = self.store.list_cursor(
            table, q, limit, keys.get("starting_after"), keys.get("ending_before")
        )
        return render.list_cursor(found.bodies, found.has_more, url)

    # -- customers and raw records (admin) ------------------------------------------------------
    def create_customer(self, auth: Auth, body: Mapping[str, Any]) -> bytes:
        params.reject_unknown(body, ("email", "name", "metadata"))
        now = self.clock.now()
        ident = self.ids.new("cus")
        cus = {
            "id": ident,
            "object": "customer",
            "email": params.email(body, "email"),
            "name": params.text(body, "name", max_len=255),
            "metadata": params.metadata(body, 50),
            "created": int(now),
            "livemode": auth.livemode,
        }
        out = orjson.dumps(cus)
        with self.store.tx():
            self.store.put_simple("customers", ident, auth.account, auth.livemode, out)
            self.emit_object("customer.created", {**cus, "account": auth.account}, out, now)
        self.webhooks.kick()
        return out

    def add_raw(self, auth: Auth, resource: str, obj: Any) -> None:
        """Store ``obj`` verbatim in a list (for testing clients against odd records)."""
        created: float | None = None
        if isinstance(obj, dict):
            for name in ("created", "created_at"):
                value = obj.get(name)
                if isinstance(value, str | int | float) and not isinstance(value, bool):
                    try:
                        created = parse_instant(value)
                    except (ValueError, OverflowError):
                        continue
                    if -(2**40) < created < 2**40:
                        break
                    created = None
        if created is None:
            created = self.clock.now()
        self.store.insert_raw(
            resource, auth.account, auth.livemode, obj, int(created), orjson.dumps(obj)
        )
