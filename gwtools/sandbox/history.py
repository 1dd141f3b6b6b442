"""History generator: a deterministic, realistic past of payments and refunds.

Every payment is driven through the same domain functions as the API (creation, checkout,
3-D Secure and bank pages, due transitions, capture, void, refunds), at timestamps spread over
``days`` before the sandbox clock; rows are then written in one transaction with
``executemany``. Same seed, same clock and same account -> identical ids, amounts, timestamps
and statuses.

Customers retry: after a card decline some try again with the same order id in ``metadata``
(soft declines often and with the same card, hard ones rarely and with another card), and a
retry takes the place of an ordinary card payment made after it, so the count stays
``payments``. ``incidents`` (``card-testing``, ``bank-outage:BANKCODE``, ``decline-spike``) are
placed within the last 7 days; see :data:`INCIDENT_KINDS`.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import random
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from gwtools.sandbox import domain, errors, params, render
from gwtools.sandbox.cards import BRAND_DECLINE_PREFIXES, TEST_CARDS, brand
from gwtools.sandbox.clock import DAY, iso
from gwtools.sandbox.domain import Event, Ids, Method, Record
from gwtools.sandbox.errors import SandboxConfigError
from gwtools.sandbox.gateway import API_VERSION, Gateway


@dataclass(frozen=True, slots=True)
class Bank:
    """How customers pick a real FPX bank and how its bank page ends for them."""

    weight: int  # how often customers pick it
    success: float  # share who complete the payment
    timeout: float  # share whose approval never reaches the gateway (processing, then failed)


#: Real FPX banks: the big ones are picked most and answer best; the rest fail or cancel
#: (fail 40 %, cancel 60 %).
REAL_BANKS: Final = {
    "MB2U0227": Bank(34, 0.93, 0.010),
    "BCBB0235": Bank(24, 0.89, 0.020),
    "PBB0233": Bank(14, 0.91, 0.015),
    "RHB0218": Bank(9, 0.82, 0.050),
    "HLB0224": Bank(8, 0.86, 0.030),
    "AMBB0209": Bank(6, 0.76, 0.070),
    "BIMB0340": Bank(5, 0.70, 0.100),
    "BKRM0602": Bank(3, 0.78, 0.060),
    "ABB0233": Bank(2, 0.80, 0.040),
    "BSN0601": Bank(2, 0.74, 0.080),
    "OCBC0229": Bank(1, 0.88, 0.020),
    "UOB0226": Bank(1, 0.87, 0.030),
    "SCB0216": Bank(1, 0.85, 0.030),
}
#: Test mode only: the share of FPX payments made with the test bank codes (a merchant's own
#: integration tests), and how often each is used.
TEST_BANK_SHARE: Final = 0.04
TEST_BANK_WEIGHTS: Final = (
    ("TEST0001", 30),
    ("TEST0002", 20),
    ("TEST0003", 20),
    ("TEST0004", 20),
    ("TEST0005", 10),
)
#: Succeeding cards: brand share of card payments.
BRANDS: Final = (
    ("4242424242424242", 55),
    ("5555555555554444", 30),
    ("378282246310005", 5),
    ("6011111111111117", 4),
    ("3566002020360505", 6),
)
#: Declines per brand: the brand's share of card payments times how much more often than a
#: Visa its cards decline (foreign Discover and JCB cards more, Amex charge cards less).
DECLINE_BRANDS: Final = (
    ("visa", 55 * 10),
    ("mastercard", 30 * 11),
    ("amex", 5 * 7),
    ("discover", 4 * 16),
    ("jcb", 6 * 14),
)
#: Declines per reason: Visa test numbers, whose last four digits name the reason on every brand.
DECLINES: Final = (
    ("4000000000000002", 32),
    ("4000000000009995", 30),
    ("4000000000009987", 5),
    ("4000000000009979", 4),
    ("4000000000000069", 11),
    ("4000000000000127", 12),
    ("4000000000000119", 6),
)
# Scenario of one payment -> weight. "forced" scenarios below make every status appear.
SCENARIOS: Final = {
    "card_ok": 600,
    "card_manual": 70,
    "card_3ds": 50,
    "card_processing": 15,
    "card_decline": 95,
    "card_refund_fails": 1,
    "fpx_bank": 240,
    "abandon": 35,
    "checkout_cancel": 15,
}
DESCRIPTIONS: Final = ("Order", "Invoice", "Subscription", "Top-up", "Booking", "Ticket")
REASONS: Final = (("requested_by_customer", 70), ("duplicate", 20), ("fraudulent", 10))

#: Card declines customers retry: reason -> (share of orders retried, share of retries with the
#: same card that succeed, delay range in seconds). A wrong CVC is fixed at once; funds come
#: back after payday; a hard decline is retried rarely, with another card.
RETRIES: Final[dict[str, tuple[float, float, tuple[int, int]]]] = {
    "incorrect_cvc": (0.80, 0.80, (60, 600)),
    "processing_error": (0.70, 0.75, (60, 900)),
    "generic_decline": (0.50, 0.35, (600, 6 * 3600)),
    "insufficient_funds": (0.50, 0.30, (3600, 3 * DAY)),
    "lost_card": (0.20, 0.85, (600, DAY)),
    "stolen_card": (0.20, 0.85, (600, DAY)),
    "expired_card": (0.20, 0.85, (600, DAY)),
}
#: At most this many attempts per order.
MAX_ATTEMPTS: Final = 3
#: Succeeding test card of each brand (a retry that works uses the brand's own).
OK_CARD: Final = {brand(number): number for number, _ in BRANDS}

#: Incident kinds ``incidents=`` (and ``gwtools sandbox --incident``) accepts.
INCIDENT_KINDS: Final = {
    "card-testing": "one hour of several hundred card attempts of at most RM 2 on distinct cards, "
    "mostly declined",
    "bank-outage:BANKCODE": "3 hours in which that bank's FPX payments fail or time out while "
    "customers keep retrying",
    "decline-spike": "one Malaysian day on which the card decline rate at least doubles",
}
#: Incidents happen within this many days before the clock.
INCIDENT_DAYS: Final = 7
CARD_TESTING_ATTEMPTS: Final = (300, 500)
#: Card testers' guesses: mostly declines of every reason, a few live cards among them.
CARD_TESTING_CARDS: Final = (
    ("4000000000000002", 35),
    ("4000000000000127", 20),
    ("4000000000000069", 12),
    ("4000000000009979", 8),
    ("4000000000009995", 10),
    ("4242424242424242", 10),
    ("5555555555554444", 5),
)
OUTAGE_HOURS: Final = 3
#: Attempts the outage adds (customers retrying at the failing bank) per hour.
OUTAGE_EXTRA_PER_HOUR: Final = 8
#: On the decline-spike day, this share of the card payments that would have succeeded declines.
SPIKE_SHARE: Final = 0.5
SPIKE_DECLINES: Final = (
    ("4000000000000002", 50),
    ("4000000000000119", 30),
    ("4000000000009995", 20),
)
MYT: Final = 8 * 3600  # Malaysia is UTC+8 all year


@dataclass(frozen=True, slots=True)
class Incident:
    """One incident to place in the history: ``kind`` and, for a bank outage, the bank."""

    kind: str
    bank: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.bank}" if self.bank else self.kind


def parse_incident(text: str) -> Incident:
    """``"card-testing"``, ``"decline-spike"`` or ``"bank-outage:MB2U0227"`` -> Incident.

    Raises ``SandboxConfigError`` (a ``ValueError``) naming the kinds or banks that exist.
    """
    kind, _, bank = text.strip().partition(":")
    if kind in ("card-testing", "decline-spike") and not bank:
        return Incident(kind)
    if kind == "bank-outage":
        if bank in REAL_BANKS:
            return Incident(kind, bank)
        what = "needs a bank code" if not bank else f"names an unknown bank {bank!r}"
        if bank in dict(TEST_BANK_WEIGHTS):
            what = f"names {bank}, a test bank whose outcome is fixed"
        raise SandboxConfigError(
            f"incident {text!r} {what}: use bank-outage:CODE with one of the real FPX banks "
            f"{', '.join(sorted(REAL_BANKS))}"
        )
    raise SandboxConfigError(
        f"unknown incident {text!r}: use {', '.join(INCIDENT_KINDS)} (e.g. bank-outage:MB2U0227)"
    )


@dataclass(slots=True)
class _Placed:
    """An incident with its time window (UTC seconds) and what it did."""

    incident: Incident
    start: float
    end: float
    payments: int = 0

    def covers(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass(order=True, slots=True)
class _Retry:
    """A customer's next attempt at an order, due at ``due``."""

    due: float
    seq: int
    order: dict[str, Any] = field(compare=False)


def _place(rng: random.Random, incidents: list[Incident], now: float, days: int) -> list[_Placed]:
    """Hour-aligned windows within the last ``INCIDENT_DAYS`` days (whole local day for a spike),
    clear of the last hours so that the payments in them are settled."""
    span = min(INCIDENT_DAYS, days) * DAY
    placed: list[_Placed] = []
    for inc in incidents:
        if inc.kind == "decline-spike":
            today = (now + MYT) // DAY * DAY - MYT  # UTC second of today's local midnight
            whole_days = int(span // DAY) - 1
            if whole_days < 1:
                raise SandboxConfigError(
                    "a decline-spike needs a history of at least 2 days: raise days"
                )
            start = today - rng.randint(1, min(whole_days, INCIDENT_DAYS - 1)) * DAY
            placed.append(_Placed(inc, start, start + DAY))
            continue
        hours = 1 if inc.kind == "card-testing" else OUTAGE_HOURS
        first = math.ceil((now - span) / 3600) + 1
        last = math.floor(now / 3600) - hours - 2
        if last < first:
            raise SandboxConfigError(f"the history is too short for {inc.label}: raise days")
        start = rng.randint(first, last) * 3600
        placed.append(_Placed(inc, start, start + hours * 3600))
    return placed


def _pick(rng: random.Random, table: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([k for k, _ in table], weights=[w for _, w in table])[0]


def _gateway(target: Any) -> Gateway:
    if isinstance(target, Gateway):
        return target
    for holder in (target, getattr(target, "state", None)):
        found = getattr(holder, "gateway", None)
        if isinstance(found, Gateway):
            return found
    raise TypeError("generate_history needs a Gateway, a Sandbox or an app from create_app")


class _Builder:
    """Collects rows (payments, refunds, events, payment methods) for one bulk write."""

    def __init__(self, gw: Gateway, ids: Ids) -> None:
        self.gw = gw
        self.ids = ids
        self.events: list[tuple[Record, bytes, str, None]] = []
        self.refunds: list[Record] = []
        self.methods: list[tuple[str, str, int, None, bytes]] = []

    def emit(self, events: list[Event], when: float) -> None:
        for type_, rec in events:
            obj = render.object_json(rec, self.gw.variant, self.gw.base_url)
            evrec, body = render.event_row(
                self.ids.new("evt"), type_, rec, obj, when, API_VERSION, rendered=True
            )
            self.events.append((evrec, body, type_, None))


def generate_history(
    target: Any,
    *,
    payments: int,
    days: int = 90,
    seed: int = 0,
    account: str | None = None,
    livemode: bool = False,
    progress: Callable[[int], None] | None = None,
    incidents: Sequence[str | Incident] = (),
) -> dict[str, Any]:
    """Seed ``payments`` payments (and their refunds and events) over the last ``days`` days.

    ``target``: a Gateway, a Sandbox or an app from ``create_app``; ``account`` defaults to the
    sandbox's default account. ``incidents`` (e.g. ``["card-testing", "bank-outage:RHB0218"]``)
    are placed within the last 7 days; card testing and outages add their own attempts on top of
    ``payments``. Returns a summary with counts per status and each incident's window.

    Example::

        sb = Sandbox("A", now=datetime(2026, 1, 1, tzinfo=UTC)).start()
        generate_history(sb, payments=5000, days=60, seed=7)
    """
    if payments < 0 or days <= 0:
        raise SandboxConfigError("payments must be >= 0 and days > 0")
    wanted = [i if isinstance(i, Incident) else parse_incident(i) for i in incidents]
    if wanted and payments == 0:
        raise SandboxConfigError("incidents need a generated history: give payments > 0 as well")
    started = time.perf_counter()
    gw = _gateway(target)
    account = account or gw.default_account["id"]
    now = gw.clock.now()
    rng = random.Random(seed)
    # Ids depend on the seed (and on the account unless it is the default one), so that
    # several accounts of one sandbox can be seeded with the same seed.
    id_seed = seed if account == gw.default_account["id"] else f"{seed}:{account}"
    ids = Ids(hash_seed(id_seed, livemode), gw.ids.sequence)
    b = _Builder(gw, ids)
    span = days * DAY
    times = sorted(_created_times(rng, payments, now, span))
    plans = _plans(rng, payments)
    # Retries and incidents draw from their own stream, so the plans above stay what they were.
    extra = random.Random(hash_seed(f"{seed}:retries-and-incidents", livemode))
    placed = _place(extra, wanted, now, days)
    for w in placed:
        if w.incident.kind == "decline-spike":
            for i, t in enumerate(times):
                if w.covers(t) and plans[i] in _SPIKE_PLANS and extra.random() < SPIKE_SHARE:
                    plans[i] = "spike_decline"
                    w.payments += 1
    outages = [w for w in placed if w.incident.kind == "bank-outage"]
    recs: list[Record] = []
    retries: list[_Retry] = []
    for i, (t0, plan) in enumerate(zip(times, plans, strict=True)):
        if retries and plan == "card_ok" and retries[0].due <= t0:
            # The customer comes back: the retry takes this ordinary card payment's place.
            order = heapq.heappop(retries).order
            rec = _simulate(gw, b, extra, ids, "card_retry", t0, now, account, livemode, order)
        else:
            order = {}
            rec = _simulate(gw, b, rng, ids, plan, t0, now, account, livemode, order, outages)
        recs.append(rec)
        _schedule_retry(extra, rec, order, t0, retries, len(recs))
        if progress is not None and (i + 1) % 10_000 == 0:
            progress(i + 1)
    for w in placed:
        before = len(recs)
        if w.incident.kind == "card-testing":
            recs += _card_testing(gw, b, extra, ids, w, now, account, livemode)
        elif w.incident.kind == "bank-outage":
            recs += _outage_retries(gw, b, extra, ids, w, now, account, livemode, outages)
        w.payments += len(recs) - before
    rows = [
        (
            r,
            render.payment(r, gw.variant, gw.base_url),
            render.payment_status(r, gw.variant),
            r["due_at"],
        )
        for r in recs
    ]
    refund_rows = [(r, render.refund(r, gw.variant), r["status"], r["due_at"]) for r in b.refunds]
    try:
        with gw.store.tx():
            gw.store.insert_many("payments", rows)
            gw.store.insert_many("refunds", refund_rows)
            gw.store.insert_many("events", b.events)
            with gw.store.lock:
                gw.store.db.executemany(
                    "INSERT INTO payment_methods (id, account, livemode, customer, rec) "
                    "VALUES (?,?,?,?,?)",
                    b.methods,
                )
    except sqlite3.IntegrityError:
        raise errors.ApiError(
            409,
            "invalid_request_error",
            "invalid_state",
            f"A history with seed {seed} was already generated for this account; use another seed.",
        ) from None
    gw.store.recompute_due()
    statuses = Counter(render.payment_status(r, gw.variant) for r in recs)
    return {
        "account": account,
        "livemode": livemode,
        "variant": gw.variant,
        "payments": len(recs),
        "refunds": len(b.refunds),
        "events": len(b.events),
        "from": iso(now - span),
        "to": iso(now),
        "payment_statuses": dict(sorted(statuses.items())),
        "refund_statuses": dict(sorted(Counter(r["status"] for r in b.refunds).items())),
        "incidents": [
            {
                "incident": w.incident.label,
                "start": iso(w.start),
                "end": iso(w.end),
                "payments": w.payments,
            }
            for w in placed
        ],
        "seconds": round(time.perf_counter() - started, 3),
    }


def hash_seed(seed: int | str, livemode: bool) -> int:
    """A stable integer seed (``hash()`` of a str changes between processes)."""
    text = f"{seed}|{int(livemode)}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big")


def _created_times(rng: random.Random, n: int, now: float, span: float) -> list[int]:
    """Creation times with a daily rhythm (Malaysian daytime busier) and quieter weekends."""
    out: list[int] = []
    while len(out) < n:
        t = now - rng.random() * span
        local_hour = (t / 3600 + 8) % 24
        weight = 0.25 + 0.75 * math.sin(math.pi * max(0.0, min(1.0, (local_hour - 7) / 16)))
        weekday = int((t / DAY + 3) % 7)  # 0 = Monday
        if weekday >= 5:
            weight *= 0.7
        if rng.random() < weight:
            out.append(int(t))
    return out


def _plans(rng: random.Random, n: int) -> list[str]:
    names = list(SCENARIOS)
    plans = rng.choices(names, weights=[SCENARIOS[k] for k in names], k=n)
    # Make every status of both variants occur once there is room: newest payments get the
    # states that only recent payments can be in, older ones the rest.
    recent = [
        "recent_processing",
        "recent_action",
        "recent_fpx_action",
        "recent_authorized",
        "recent_fpx_refund",
        "recent_checkout",
    ]
    older = [
        "card_decline",
        "card_manual_void",
        "abandon",
        "card_refund_fails",
        "fpx_bank",
        "fpx_timeout",
        "checkout_cancel",
        "card_3ds_fail",
        "card_ok_refund",
    ]
    if n >= len(recent) + len(older) + 2:
        for k, name in enumerate(recent):
            plans[n - 1 - k] = name
        step = max(1, (n - len(recent)) // (len(older) + 1))
        for k, name in enumerate(older):
            plans[(k + 1) * step - 1] = name
    return plans


def _simulate(
    gw: Gateway,
    b: _Builder,
    rng: random.Random,
    ids: Ids,
    plan: str,
    t0: float,
    now: float,
    account: str,
    livemode: bool,
    order: dict[str, Any],
    outages: Sequence[_Placed] = (),
) -> Record:
    """One payment's life from ``t0`` up to ``now`` through the domain functions.

    ``order`` gives what is already known of the order (a retry's amount, description, order id
    and card; an incident's bank, forced answer or card) and receives the card used."""
    variant = gw.variant
    if plan.startswith("recent_"):
        t0 = (
            now
            - {
                "recent_processing": 5,
                "recent_action": 300,
                "recent_fpx_action": 240,
                "recent_authorized": 3600,
                "recent_fpx_refund": 2 * DAY,
                "recent_checkout": 120,
            }[plan]
        )
    amount = order.get("amount") or max(100, round(rng.lognormvariate(8.3, 0.9) / 10) * 10)
    pid = ids.new("pay")
    manual = plan in ("card_manual", "card_manual_void", "recent_authorized")
    order.setdefault("amount", amount)
    order.setdefault("description", f"{rng.choice(DESCRIPTIONS)} #{rng.randrange(10_000, 99_999)}")
    # Unique per order (the payment's own id digits); every retry of the order repeats it.
    order.setdefault("order_id", "ord_" + pid.removeprefix("pay_"))
    p = {
        "amount": amount,
        "currency": "MYR",
        "description": order["description"],
        "metadata": {"order_id": order["order_id"]},
        "capture_method": "manual" if manual else "automatic",
        "success_url": "https://shop.example/ok" if variant == "A" else None,
        "cancel_url": "https://shop.example/cancel" if variant == "A" else None,
        "return_url": None if variant == "A" else "https://shop.example/return",
    }
    rec = domain.new_payment(
        pid,
        account,
        livemode,
        p,
        t0,
        client_secret=f"{pid}_secret_{ids.token()}",
        expiry_seconds=gw.expiry if variant == "A" else None,
    )
    if variant == "B":
        rec["status"], rec["stage"], rec["due"], rec["due_at"] = "pending", None, None, None
    t = t0 + (rng.randrange(30, 600) if variant == "A" else 0)  # time at the checkout page

    if plan in ("abandon", "recent_checkout", "checkout_cancel") and variant == "A":
        if plan == "checkout_cancel":
            b.emit(domain.checkout_cancel(rec, t), t)
        return _settle(b, rec, now)
    if plan in ("abandon", "recent_checkout", "checkout_cancel"):
        # variant B has no checkout: the customer leaves the 3-D Secure or the bank page
        plan = "fpx_abandon" if rng.random() < 0.4 else "card_3ds_abandon"

    method = _method(rng, ids, plan, livemode, b, account, t, order)
    b.emit(domain.attempt(rec, method, t), t)
    forced = _FORCED_ACTIONS.get(plan) or order.get("action")
    if method.type == "fpx" and forced is None:
        bank = method.details.get("bank_code")
        if any(w.incident.bank == bank and w.covers(t) for w in outages):
            forced = "timeout" if rng.random() < 0.5 else "fail"
    if rec["status"] == "requires_action" and plan not in _LEFT_WAITING:
        # A test bank's page has one button and its own ending; its timing comes from a
        # stream of its own, so sending test banks through the page changed nothing else.
        test_bank = domain.test_bank_ending(rec) is not None
        t_act = t + (random.Random(rec["id"]) if test_bank else rng).randrange(20, 240)
        if t_act <= now:
            action = "complete" if test_bank else forced or _action(rng, method)
            if rec["due_at"] is not None and rec["due_at"] <= t_act:
                return _settle(b, rec, now)  # expired before the customer came back
            b.emit(domain.customer_action(rec, action, t_act), t_act)
            t = t_act
    rec = _settle(b, rec, now)
    if rec["status"] == "authorized" and plan != "recent_authorized":
        # Merchants capture (or void) within an authorization's 7 days, so the last week keeps
        # authorized payments to capture and void. The delay is scaled from the 3-day draw the
        # history always made: the random stream, and so every other payment, stays as it was.
        t_cap = t + 600 + (rng.randrange(600, 3 * DAY) - 600) * (7 * DAY - 600) // (3 * DAY - 600)
        if t_cap <= now:
            if plan == "card_manual_void" or rng.random() < 0.12:
                b.emit(domain.void(rec, t_cap), t_cap)
            else:
                part = None if rng.random() < 0.8 else max(100, rec["amount"] // 2)
                b.emit(domain.capture(rec, part, t_cap), t_cap)
            t = t_cap
    if rec["status"] == "succeeded" and plan != "card_testing":
        _refunds(b, rng, ids, rec, plan, t, now)
    return rec


def _schedule_retry(
    rng: random.Random,
    rec: Record,
    order: dict[str, Any],
    t0: float,
    retries: list[_Retry],
    seq: int,
) -> None:
    """Maybe queue the customer's next attempt at a declined card order (``RETRIES``)."""
    error = rec.get("error") or {}
    reason = error.get("decline_code")
    number = order.get("number")
    if rec["status"] != "failed" or reason not in RETRIES or number is None:
        return
    attempt = order.get("attempt", 1)
    share, works, (low, high) = RETRIES[reason]
    if attempt >= MAX_ATTEMPTS or rng.random() >= share:
        return
    card_brand = brand(number)
    if rng.random() < works:
        number = OK_CARD.get(card_brand, "4242424242424242")
    elif reason not in SOFT_REASONS:
        # a hard decline is retried with another card, which can be declined too
        number = _with_brand("4000000000000002", card_brand)
    nxt = {k: order[k] for k in ("amount", "description", "order_id")}
    nxt.update(number=number, attempt=attempt + 1)
    heapq.heappush(retries, _Retry(t0 + rng.randint(low, high), seq, nxt))


def _window_times(rng: random.Random, w: _Placed, count: int) -> list[float]:
    """``count`` random moments in the incident's window, in order (all drawn up front)."""
    return sorted(w.start + rng.random() * (w.end - w.start) for _ in range(count))


def _card_testing(
    gw: Gateway,
    b: _Builder,
    rng: random.Random,
    ids: Ids,
    w: _Placed,
    now: float,
    account: str,
    livemode: bool,
) -> list[Record]:
    """Several hundred tiny attempts on distinct cards in one hour (each a new payment method)."""
    count = rng.randint(*CARD_TESTING_ATTEMPTS)
    out = []
    for t in _window_times(rng, w, count):
        number = _with_brand(_pick(rng, CARD_TESTING_CARDS), _pick(rng, DECLINE_BRANDS))
        order = {
            "amount": rng.choice((100, 100, 100, 150, 200)),
            "description": f"Top-up #{rng.randrange(10_000, 99_999)}",
            "number": number,
        }
        out.append(_simulate(gw, b, rng, ids, "card_testing", t, now, account, livemode, order))
    return out


def _outage_retries(
    gw: Gateway,
    b: _Builder,
    rng: random.Random,
    ids: Ids,
    w: _Placed,
    now: float,
    account: str,
    livemode: bool,
    outages: Sequence[_Placed],
) -> list[Record]:
    """Customers of the failing bank trying again (and again) during the outage."""
    hours = (w.end - w.start) / 3600
    out: list[Record] = []
    order: dict[str, Any] = {}
    for t in _window_times(rng, w, round(OUTAGE_EXTRA_PER_HOUR * hours)):
        if not order or rng.random() < 0.5:  # a new customer, else the same one again
            order = {}
        order["bank"] = w.incident.bank
        out.append(
            _simulate(gw, b, rng, ids, "fpx_bank", t, now, account, livemode, order, outages)
        )
    return out


#: Forced scenarios: the customer's (or the bank's) answer on the 3-D Secure or bank page.
_FORCED_ACTIONS: Final = {
    "card_3ds_fail": "fail",
    "fpx_timeout": "timeout",
    "recent_fpx_refund": "complete",
}
#: Forced scenarios: the card they pay with.
_FORCED_CARDS: Final = {
    "card_3ds": "4000002500003155",
    "card_3ds_fail": "4000002500003155",
    "card_3ds_abandon": "4000002500003155",
    "recent_action": "4000002500003155",
    "card_processing": "4000000000001018",
    "recent_processing": "4000000000001018",
    "card_refund_fails": "4000000000005126",
}
_FPX_PLANS: Final = (
    "fpx_bank",
    "fpx_timeout",
    "fpx_abandon",
    "recent_fpx_action",
    "recent_fpx_refund",
)
#: Scenarios whose customer never comes back from the 3-D Secure or bank page.
_LEFT_WAITING: Final = ("recent_action", "recent_fpx_action", "card_3ds_abandon", "fpx_abandon")
_REAL_BANK_TABLE: Final = tuple((code, bank.weight) for code, bank in REAL_BANKS.items())
#: Plans whose card would have succeeded: the decline-spike day declines some of them.
_SPIKE_PLANS: Final = ("card_ok", "card_manual", "card_3ds")
SOFT_REASONS: Final = frozenset(
    {"incorrect_cvc", "processing_error", "generic_decline", "insufficient_funds"}
)


def _method(
    rng: random.Random,
    ids: Ids,
    plan: str,
    livemode: bool,
    b: _Builder,
    account: str,
    t: float,
    order: dict[str, Any],
) -> Method:
    """The payment method of ``plan``, resolved by the API's own parameter code."""
    if plan in _FPX_PLANS:
        # test banks (test mode only) go through the bank page like the real ones
        if order.get("bank"):
            code = order["bank"]
        elif plan == "fpx_bank" and not livemode and rng.random() < TEST_BANK_SHARE:
            code = _pick(rng, TEST_BANK_WEIGHTS)
        else:
            code = _pick(rng, _REAL_BANK_TABLE)
        method = params.fpx_method({"bank_code": code}, livemode, "payment_method_data[fpx]")
    else:
        number = order.get("number") or _FORCED_CARDS.get(plan)
        if plan == "card_decline":
            number = _declining_card(rng)
        elif plan == "spike_decline":
            number = _declining_card(rng, SPIKE_DECLINES)
        number = number or _pick(rng, BRANDS)
        order["number"] = number
        year = datetime.fromtimestamp(t, UTC).year
        card = {
            "number": number,
            "exp_month": rng.randrange(1, 13),
            "exp_year": year + 1 + rng.randrange(0, 6),
            "cvc": "1234" if brand(number) == "amex" else "123",
        }
        # Test-mode outcomes even for a live account: live mode would decline every test card,
        # and a history with no declines, 3-D Secure or processing would show nothing.
        method = params.card_method(card, False, "payment_method_data[card]", t)
    pm_id = ids.new("pm")
    pm = domain.method_record(method, pm_id, t, livemode, None)
    b.methods.append((pm_id, account, int(livemode), None, orjson.dumps(pm)))
    return Method(
        method.type, method.details, method.outcome, pm_id, method.code, method.decline_code
    )


def _declining_card(rng: random.Random, reasons: tuple[tuple[str, int], ...] = DECLINES) -> str:
    """A declining test card: brand first (declines follow the brand mix), then the reason."""
    visa = _pick(rng, reasons)
    return _with_brand(visa, _pick(rng, DECLINE_BRANDS))


def _with_brand(visa: str, card_brand: str) -> str:
    """The ``card_brand`` test number that behaves as the Visa test number ``visa``."""
    if TEST_CARDS[visa].outcome != "decline":
        return visa if card_brand == "visa" else OK_CARD[card_brand]
    prefix = BRAND_DECLINE_PREFIXES.get(card_brand)
    return visa if prefix is None else prefix + visa[-4:]


def _action(rng: random.Random, method: Method) -> str:
    roll = rng.random()
    if method.type == "fpx":
        bank = REAL_BANKS[method.details["bank_code"]]
        if roll < bank.success:
            return "complete"
        if roll < bank.success + bank.timeout:
            return "timeout"
        return "fail" if rng.random() < 0.4 else "cancel"
    return "complete" if roll < 0.85 else ("fail" if roll < 0.93 else "cancel")


def _settle(b: _Builder, rec: Record, now: float) -> Record:
    """Apply the payment's scheduled transitions that fall before ``now``."""
    while rec["due_at"] is not None and rec["due_at"] <= now:
        when = rec["due_at"]
        b.emit(domain.due_transition(rec, now), when)
    return rec


def _refunds(
    b: _Builder, rng: random.Random, ids: Ids, rec: Record, plan: str, t: float, now: float
) -> None:
    forced = plan in ("card_refund_fails", "recent_fpx_refund", "card_ok_refund")
    if not forced and rng.random() >= 0.09:
        return
    t_ref = now - DAY if plan == "recent_fpx_refund" else t + rng.randrange(3600, 20 * DAY)
    if plan == "card_refund_fails":
        t_ref = max(t + 60, now - 10 * DAY) if t + 60 < now - 2 * DAY else t + 60
    count = 2 if rng.random() < 0.1 else 1
    for _ in range(count):
        if t_ref > now or domain.refundable(rec) <= 0:
            return
        left = domain.refundable(rec)
        amount = left if rng.random() < 0.6 else max(1, (left * rng.randrange(10, 90)) // 100)
        refund, events = domain.new_refund(
            rec, ids.new("rfnd"), amount, _pick(rng, REASONS), {}, t_ref
        )
        b.emit(events, t_ref)
        if refund["due_at"] is not None and refund["due_at"] <= now:
            when = refund["due_at"]
            b.emit(domain.refund_due(refund, rec, when), when)
        b.refunds.append(refund)
        t_ref += rng.randrange(3600, 5 * DAY)
