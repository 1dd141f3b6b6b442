"""Large synthetic caches for benchmarks/scale.py, written straight as Parquet (no sync).

:func:`ensure_cache` builds ``{folder}/bench/test/{payments,refunds}/created_month=YYYY-MM/
part-....parquet`` with the canonical schema, one file a month in row groups of the cache's
size, as a sync leaves a compacted cache; then ``_state.json`` per dataset and a
``manifest.json`` naming the parameters. A folder whose manifest matches is reused.

The rows follow the sandbox's own history model (gwtools.sandbox.history, .cards, .fpx): card
and FPX payments over five years (volume growing), a Malaysian day (UTC+8, evening peak),
declines of every reason on every brand, FPX banks with their success and timeout rates and
the test banks, retries of declined orders under the same ``order_id``, and refunds of about
6% of the payments (partial and full, some twice), days to weeks after the payment.

Everything is vectorised (numpy, pyarrow compute) and made ``CHUNK`` payments at a time, so
building 100M payments keeps the generator's memory to a few hundred MB.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from gwtools import _schema
from gwtools.cache._dataset import _ROW_GROUP, CODEC, PARTITION, Dataset
from gwtools.sandbox import history
from gwtools.sandbox.cards import DECLINE_MESSAGES, TEST_CARDS
from gwtools.sandbox.cards import brand as card_brand
from gwtools.sandbox.fpx import BANKS

#: Bump when the rows made for the same parameters change (a cached folder is rebuilt).
GENERATOR_VERSION = 2
ACCOUNT, MODE = "bench", "test"
#: Five years of data, whole months; END is exclusive.
START = dt.datetime(2021, 11, 1, tzinfo=dt.UTC)
END = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
#: Payments made at once (memory of the generator ~ a few KB per payment in flight).
CHUNK = 250_000
#: Volume grows this much from the first month to the last.
GROWTH = 4.0
CARD_SHARE = 0.72
#: Card payments older than OPEN_DAYS: how they end (the rest succeed).
CARD_DECLINED, CARD_3DS_FAILED, CARD_CANCELED = 0.105, 0.008, 0.032
#: Within OPEN_DAYS of END, this share of payments is still open (3-D Secure, bank page, ...).
OPEN_DAYS, OPEN_SHARE = 3, 0.05
CURRENCIES = (("MYR", 0.90), ("SGD", 0.06), ("USD", 0.04))  # cards; FPX is MYR only
#: Share of succeeded payments refunded; of those, share refunded in two parts; full refunds.
REFUNDED, TWICE, FULL = 0.075, 0.05, 0.70
REFUND_STATUS = (("succeeded", 0.975), ("failed", 0.025))  # older than PENDING_DAYS
PENDING_DAYS = 5
MAX_REFUND_DAYS = 120
CUSTOMERS_PER_PAYMENT = 1 / 8
CUSTOMER_SHARE = 0.5
#: Local (UTC+8) hour of day -> relative volume: quiet nights, an evening peak.
HOURS = (40, 25, 15, 10, 8, 10, 18, 35, 60, 80, 95, 105,
         110, 105, 100, 100, 105, 110, 115, 125, 135, 130, 110, 75)  # fmt: skip
WEEKDAYS = (1.0, 1.0, 1.0, 1.0, 1.05, 1.1, 1.0)  # Monday..Sunday
FPX_MESSAGES = {
    "processing_error": "The bank did not answer in time (connection timeout).",
    "payment_method_not_available": "The customer's bank rejected the payment.",
}
RECEIPTS = "http://127.0.0.1:8000/receipts/"
_ALPHABET = np.frombuffer(
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", dtype=np.uint8
)
_US = 1_000_000
_DAY_US = 86_400 * _US
_STRING = pa.large_string()
_TS = pa.timestamp("us", tz="UTC")


# --------------------------------------------------------------------------- the model


def _weights(pairs: Sequence[tuple[Any, float]]) -> tuple[list[Any], np.ndarray]:
    keys = [k for k, _ in pairs]
    w = np.asarray([float(v) for _, v in pairs])
    return keys, w / w.sum()


#: Declines: (failure_code, decline_code, message, last4) by the sandbox's decline mix.
_DECLINE_CARDS, _DECLINE_P = _weights(history.DECLINES)
DECLINES = [
    (
        TEST_CARDS[n].code,
        TEST_CARDS[n].decline_code,
        DECLINE_MESSAGES[TEST_CARDS[n].decline_code or ""],
        n[-4:],
    )
    for n in _DECLINE_CARDS
]
AUTH_FAILED = ("card_declined", "authentication_failed", DECLINE_MESSAGES["authentication_failed"])
_OK_NUMBERS, _OK_P = _weights(history.BRANDS)
OK_BRANDS = [card_brand(n) for n in _OK_NUMBERS]
OK_LAST4 = [n[-4:] for n in _OK_NUMBERS]
DECLINE_BRANDS, _DECLINE_BRAND_P = _weights(history.DECLINE_BRANDS)
REAL_BANKS = list(history.REAL_BANKS)
_REAL_P = _weights([(c, b.weight) for c, b in history.REAL_BANKS.items()])[1]
_BANK_SUCCESS = np.asarray([b.success for b in history.REAL_BANKS.values()])
_BANK_TIMEOUT = np.asarray([b.timeout for b in history.REAL_BANKS.values()])
TEST_BANKS, _TEST_P = _weights(history.TEST_BANK_WEIGHTS)
#: What a test bank's page does: status, failure_code.
TEST_BANK_END = {
    "TEST0001": ("succeeded", None),
    "TEST0002": ("failed", "payment_method_not_available"),
    "TEST0003": ("succeeded", None),
    "TEST0004": ("failed", "processing_error"),
    "TEST0005": ("canceled", None),
}
BANK_CODES = REAL_BANKS + TEST_BANKS
BANK_NAMES = [BANKS[c] for c in BANK_CODES]
REASONS, _REASON_P = _weights(history.REASONS)
#: Share of declined orders retried, by decline_code (the sandbox's RETRIES).
RETRY_SHARE = {reason: share for reason, (share, _, _) in history.RETRIES.items()}


def model_digest() -> str:
    """A hash of every number the rows depend on (a changed sandbox model rebuilds)."""
    parts = [
        GENERATOR_VERSION, START, END, GROWTH, CARD_SHARE, CARD_DECLINED, CARD_3DS_FAILED,
        CARD_CANCELED, OPEN_DAYS, OPEN_SHARE, CURRENCIES, REFUNDED, TWICE, FULL, REFUND_STATUS,
        PENDING_DAYS, MAX_REFUND_DAYS, HOURS, WEEKDAYS, DECLINES, history.DECLINE_BRANDS,
        history.BRANDS, list(history.REAL_BANKS.items()), history.TEST_BANK_WEIGHTS,
        history.REASONS, RETRY_SHARE, BANK_NAMES, CHUNK, _ROW_GROUP, CODEC,
    ]  # fmt: skip
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def months() -> list[dt.datetime]:
    out, m = [], START
    while m < END:
        out.append(m)
        m = (m + dt.timedelta(days=32)).replace(day=1)
    return out


def month_counts(total: int) -> list[int]:
    """Payments per month: growing, with a busier December; sums to ``total``."""
    ms = months()
    w = np.asarray(
        [GROWTH ** (i / (len(ms) - 1)) * (1.15 if m.month == 12 else 1.0) for i, m in enumerate(ms)]
    )
    exact = total * w / w.sum()
    counts = np.floor(exact).astype(np.int64)
    short = total - int(counts.sum())
    counts[np.argsort(exact - counts)[::-1][:short]] += 1
    return counts.tolist()


# --------------------------------------------------------------------------- vector helpers


def _epoch_us(t: dt.datetime) -> int:
    return int(t.timestamp()) * _US


def _fixed(*parts: np.ndarray | bytes, n: int) -> pa.Array:
    """Fixed-width strings from byte parts: each a ``bytes`` constant or an (n, w) uint8 array."""
    cols = [
        np.broadcast_to(np.frombuffer(p, dtype=np.uint8), (n, len(p)))
        if isinstance(p, bytes)
        else p
        for p in parts
    ]
    body = np.ascontiguousarray(np.concatenate(cols, axis=1))
    width = body.shape[1]
    offsets = np.arange(n + 1, dtype=np.int64) * width
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(body))


def _random_token(rng: np.random.Generator, n: int, width: int) -> np.ndarray:
    return _ALPHABET[rng.integers(0, 62, size=(n, width), dtype=np.uint8)]


def _seq_token(first: int, n: int, width: int) -> np.ndarray:
    """Base-62 counters (ids sort in creation order, as the sandbox's do)."""
    x = np.arange(first, first + n, dtype=np.int64)
    out = np.empty((n, width), dtype=np.uint8)
    for k in range(width - 1, -1, -1):
        out[:, k] = _ALPHABET[x % 62]
        x //= 62
    return out


def _pick(values: Sequence[Any], index: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """``values[index]`` as a string array, null where ``mask`` is True."""
    idx = pa.array(index.astype(np.int32), mask=mask)
    return pa.DictionaryArray.from_arrays(idx, pa.array(list(values), _STRING)).dictionary_decode()


def _text(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values), _STRING)


def _join(*parts: Any) -> pa.Array:
    """Element-wise concatenation of string arrays/constants (a null part makes a null)."""
    values = [pa.scalar(p, _STRING) if isinstance(p, str) else p for p in parts]
    return pc.binary_join_element_wise(*values, pa.scalar("", _STRING))


def _choose(rng: np.random.Generator, p: np.ndarray, n: int) -> np.ndarray:
    return np.searchsorted(np.cumsum(p), rng.random(n), side="right").clip(0, len(p) - 1)


def _timestamps(values: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    return pa.array(values, type=pa.int64(), mask=mask).cast(_TS)


# --------------------------------------------------------------------------- payments


def _times(rng: np.random.Generator, month: dt.datetime, n: int) -> np.ndarray:
    """``n`` sorted UTC creation times (µs) in ``month``, by a Malaysian day and week."""
    nxt = (month + dt.timedelta(days=32)).replace(day=1)
    days = (nxt - month).days
    weekday = np.asarray([WEEKDAYS[(month + dt.timedelta(days=d)).weekday()] for d in range(days)])
    day = _choose(rng, weekday / weekday.sum(), n)
    hour_p = np.asarray(HOURS, dtype=float)
    local_hour = _choose(rng, hour_p / hour_p.sum(), n)
    # Local hour -> UTC; the first hours of the month's first local day wrap to its end.
    within = (day * 86_400 + local_hour * 3600 - history.MYT) * _US + rng.integers(0, 3600 * _US, n)
    within %= days * _DAY_US
    return np.sort(_epoch_us(month) + within)


def payments_chunk(
    rng: np.random.Generator, created: np.ndarray, first: int, customers: int
) -> tuple[pa.Table, pa.Table]:
    """Payments created at ``created`` (sorted µs), ids from sequence number ``first``,
    and their refunds (any month)."""
    n = len(created)
    end_us = _epoch_us(END)
    card = rng.random(n) < CARD_SHARE
    fpx = ~card

    # ---- cards: brand, outcome, decline reason
    u = rng.random(n)
    declined = card & (u < CARD_DECLINED)
    auth_failed = card & (u >= CARD_DECLINED) & (u < CARD_DECLINED + CARD_3DS_FAILED)
    card_canceled = card & (u >= 1 - CARD_CANCELED)
    ok_brand = _choose(rng, _OK_P, n)
    brand_names = OK_BRANDS + DECLINE_BRANDS
    brand_idx = np.where(declined, len(OK_BRANDS) + _choose(rng, _DECLINE_BRAND_P, n), ok_brand)
    reason = _choose(rng, _DECLINE_P, n)

    # ---- FPX: bank, outcome
    test_bank = fpx & (rng.random(n) < history.TEST_BANK_SHARE)
    real = _choose(rng, _REAL_P, n)
    bank_idx = np.where(test_bank, len(REAL_BANKS) + _choose(rng, _TEST_P, n), real)
    v = rng.random(n)
    succ, tout = _BANK_SUCCESS[real], _BANK_TIMEOUT[real]
    rest = (v - succ - tout) / np.maximum(1 - succ - tout, 1e-9)
    fpx_timeout = fpx & ~test_bank & (v >= succ) & (v < succ + tout)
    fpx_rejected = fpx & ~test_bank & (v >= succ + tout) & (rest < 0.4)
    fpx_canceled = fpx & ~test_bank & (v >= succ + tout) & (rest >= 0.4)
    for i, code in enumerate(TEST_BANKS):
        ends, failure = TEST_BANK_END[code]
        at = test_bank & (bank_idx == len(REAL_BANKS) + i)
        fpx_timeout |= at & (failure == "processing_error")
        fpx_rejected |= at & (failure == "payment_method_not_available")
        fpx_canceled |= at & (ends == "canceled")

    # ---- status (canonical == raw for variant B); recent payments may still be open
    statuses = ["succeeded", "failed", "canceled", "requires_action", "processing", "authorized"]
    status = np.zeros(n, dtype=np.int8)
    status[declined | auth_failed | fpx_timeout | fpx_rejected] = 1
    status[card_canceled | fpx_canceled] = 2
    recent = created >= end_us - OPEN_DAYS * _DAY_US
    w = rng.random(n)
    opened = recent & (w < OPEN_SHARE)
    status[opened] = 3
    status[recent & (w < OPEN_SHARE * 0.1) & fpx] = 4
    status[recent & (w < OPEN_SHARE * 0.1) & card] = 5
    failed = status == 1
    succeeded = status == 0
    declined &= failed
    auth_failed &= failed
    fpx_timeout &= failed
    fpx_rejected &= failed

    # failure_code / decline_code / message: one table of every combination
    codes = [(c, d, m) for c, d, m, _ in DECLINES] + [
        AUTH_FAILED,
        ("processing_error", None, FPX_MESSAGES["processing_error"]),
        ("payment_method_not_available", None, FPX_MESSAGES["payment_method_not_available"]),
    ]
    code_idx = np.full(n, -1)
    code_idx[declined] = reason[declined]
    code_idx[auth_failed] = len(DECLINES)
    code_idx[fpx_timeout] = len(DECLINES) + 1
    code_idx[fpx_rejected] = len(DECLINES) + 2
    no_code = code_idx < 0
    safe = np.maximum(code_idx, 0)
    failure_code = _pick([c for c, _, _ in codes], safe, no_code)
    decline_code = _pick(
        [d or "" for _, d, _ in codes], safe, no_code | (safe >= len(DECLINES) + 1)
    )
    message = _pick([m for _, _, m in codes], safe, no_code)

    # ---- money
    cur = np.where(card, _choose(rng, _weights(CURRENCIES)[1], n), 0)
    currency_names = [c for c, _ in CURRENCIES]
    amount = np.exp(rng.normal(np.log(4200), 0.85, n))
    amount = np.where(cur == 0, amount, amount / 3)
    amount = np.maximum(np.round(amount / 10) * 10, 100).astype(np.int64)

    # ---- orders: a declined card order is often retried (same order_id and amount) shortly after
    order = (np.arange(first, first + n, dtype=np.int64) * 7919 + 104_729) % 1_000_000_000
    retry_p = np.asarray([RETRY_SHARE.get(d or "", 0.0) for _, d, _, _ in DECLINES])
    src = np.flatnonzero(declined & (rng.random(n) < retry_p[reason]))
    dst = src + rng.integers(1, 40, len(src))
    keep = dst < n
    src, dst = src[keep], dst[keep]
    keep = card[dst] & ~declined[dst]
    src, dst = src[keep], dst[keep]
    dst, first_of = np.unique(dst, return_index=True)
    src = src[first_of]
    order[dst], amount[dst], cur[dst] = order[src], amount[src], cur[src]

    ids = _fixed(b"pay_", _seq_token(first, n, 8), _random_token(rng, n, 16), n=n)
    captured_at = created + np.where(card, rng.integers(1, 10, n), rng.integers(30, 600, n)) * _US

    # ---- refunds of succeeded payments
    refunds, refunded_amount = _refunds(rng, ids, created, amount, cur, succeeded, end_us)

    exp_month = _text(rng.integers(1, 13, n))
    exp_year = _text(rng.integers(2026, 2032, n))
    last4 = _pick(
        [c[3] for c in DECLINES] + OK_LAST4 + ["3155"],
        np.where(declined, reason, np.where(auth_failed, len(DECLINES) + len(OK_LAST4), 0)),
    )
    last4 = pc.if_else(pa.array(declined | auth_failed), last4, _pick(OK_LAST4, ok_brand))
    card_details = _join(
        ',"payment_method_details":{"exp_month":', exp_month, ',"exp_year":', exp_year,
        ',"last4":"', last4, '"}',
    )  # fmt: skip
    card_details = pc.if_else(pa.array(card), card_details, pa.scalar("", _STRING))
    error = _join(',"last_payment_error":{"message":"', message, '"}')
    error = pc.fill_null(error, "")
    extra = _join(
        '{"amount_captured":', _text(np.where(succeeded, amount, 0)),
        ',"capture_method":"automatic"', error, card_details,
        ',"receipt_url":"', RECEIPTS, ids, '"}',
    )  # fmt: skip

    has_customer = card & (rng.random(n) < CUSTOMER_SHARE)
    customer = _join("cus_", _text(rng.integers(0, customers, n) + 10_000_000))
    describe = _choose(rng, np.full(len(history.DESCRIPTIONS), 1 / len(history.DESCRIPTIONS)), n)
    status_arr = _pick(statuses, status)
    outcome_names = [_schema.PAYMENT_OUTCOME[s] for s in statuses]
    columns: dict[str, Any] = {
        "id": ids,
        "api_variant": _pick(["B"], np.zeros(n, dtype=np.int8)),
        "livemode": pa.array(np.zeros(n, dtype=bool)),
        "status": status_arr,
        "status_raw": status_arr,
        "outcome": _pick(outcome_names, status),
        "amount": pa.array(amount),
        "currency": _pick(currency_names, cur),
        "amount_major": pa.array(amount / 100.0),
        "method_type": _pick(["card", "fpx"], fpx.astype(np.int8)),
        "payment_method_id": _fixed(b"pm_", _random_token(rng, n, 24), n=n),
        "fpx_bank_code": _pick(BANK_CODES, bank_idx, card),
        "fpx_bank": _pick(BANK_NAMES, bank_idx, card),
        "card_brand": _pick(brand_names, brand_idx, fpx),
        "failure_code": failure_code,
        "decline_code": decline_code,
        "captured": pa.array(succeeded),
        "captured_at": _timestamps(captured_at, ~succeeded),
        "refunded": pa.array(succeeded & (refunded_amount >= amount)),
        "refunded_amount": pa.array(refunded_amount),
        "description": _join(
            _pick(history.DESCRIPTIONS, describe), " #", _text(rng.integers(10_000, 100_000, n))
        ),
        "customer_id": pc.if_else(pa.array(has_customer), customer, pa.scalar(None, _STRING)),
        "receipt_email": pa.nulls(n, _STRING),
        "metadata": _join('{"order_id":"', _text(order), '"}'),
        "created_at": _timestamps(created),
        "updated_at": pa.nulls(n, _TS),
        "expires_at": pa.nulls(n, _TS),
        "extra": extra,
    }
    schema = _schema.arrow_schema("payments")
    table = pa.Table.from_pydict(columns).cast(schema)
    return table, refunds


def _refunds(
    rng: np.random.Generator,
    ids: pa.Array,
    created: np.ndarray,
    amount: np.ndarray,
    cur: np.ndarray,
    succeeded: np.ndarray,
    end_us: int,
) -> tuple[pa.Table, np.ndarray]:
    """Refunds of some succeeded payments (one or two each) and each payment's refunded total."""
    n = len(created)
    refunded = np.flatnonzero(succeeded & (rng.random(n) < REFUNDED))
    twice = rng.random(len(refunded)) < TWICE
    full = rng.random(len(refunded)) < FULL
    share = np.where(full | twice, 1.0, rng.uniform(0.1, 0.9, len(refunded)))
    total = np.maximum(np.round(amount[refunded] * share / 10) * 10, 10).astype(np.int64)
    total = np.minimum(total, amount[refunded])
    first_part = np.where(twice, np.maximum(total // 20 * 10, 10), total)
    payment = np.concatenate([refunded, refunded[twice]])
    refund_amount = np.concatenate([first_part, (total - first_part)[twice]])
    # Days to weeks after the payment (median ~8 days), the second part later still.
    delay = np.exp(rng.normal(np.log(8), 0.9, len(payment))) * _DAY_US
    delay[len(refunded) :] += np.exp(rng.normal(np.log(5), 0.7, int(twice.sum()))) * _DAY_US
    delay = np.minimum(delay, MAX_REFUND_DAYS * _DAY_US).astype(np.int64)
    when = created[payment] + delay
    keep = (when < end_us) & (refund_amount > 0)
    payment, refund_amount, when = payment[keep], refund_amount[keep], when[keep]
    m = len(payment)
    status = _choose(rng, _weights(REFUND_STATUS)[1], m)
    status[when >= end_us - PENDING_DAYS * _DAY_US] = 2  # FPX/card refunds take days to settle
    # As the gateway keeps it: a refund counts from its creation and is given back only if
    # it fails, so pending refunds are in the payment's refunded_amount too (version 1 left
    # them out, which the quality rule refunded_amount_matches_refunds flagged).
    live = status != 1
    refunded_amount = np.zeros(n, dtype=np.int64)
    np.add.at(refunded_amount, payment[live], refund_amount[live])
    table = pa.table(
        {
            "id": pa.nulls(m, _STRING),  # ids are numbered when the month is written
            "api_variant": _pick(["B"], np.zeros(m, dtype=np.int8)),
            "livemode": pa.array(np.zeros(m, dtype=bool)),
            "payment_id": ids.take(pa.array(payment)),
            "status": _pick(["succeeded", "failed", "pending"], status),
            "reason": _pick(REASONS, _choose(rng, _REASON_P, m)),
            "amount": pa.array(refund_amount),
            "currency": _pick([c for c, _ in CURRENCIES], cur[payment]),
            "amount_major": pa.array(refund_amount / 100.0),
            "metadata": pa.nulls(m, _STRING),
            "created_at": _timestamps(when),
            "extra": pa.nulls(m, _STRING),
        }
    )
    return table, refunded_amount


# --------------------------------------------------------------------------- writing


def _month_of(us: np.ndarray) -> np.ndarray:
    return us.astype("datetime64[us]").astype("datetime64[M]")


class _Writer:
    """One Parquet file per month, in row groups of the cache's size, as a compaction leaves."""

    def __init__(self, folder: Path, resource: _schema.Resource, rng: np.random.Generator) -> None:
        self.folder = folder
        self.schema = _schema.arrow_schema(resource)
        self.rng = rng
        self.rows = 0

    def write_month(self, month: str, chunks: Any) -> None:
        directory = self.folder / f"{PARTITION}={month}"
        directory.mkdir(parents=True, exist_ok=True)
        seq = time.time_ns()
        name = f"part-{seq:020d}-{int(self.rng.integers(2**32)):08x}.parquet"
        with pq.ParquetWriter(directory / name, self.schema, compression=CODEC) as writer:
            for chunk in chunks:
                for start in range(0, chunk.num_rows, _ROW_GROUP):
                    writer.write_table(chunk.slice(start, _ROW_GROUP))
                self.rows += chunk.num_rows


def build(folder: Path, payments: int, seed: int) -> dict[str, Any]:
    """Write the cache into ``folder`` (which must not exist); return its figures."""
    t0 = time.perf_counter()
    data = folder / ACCOUNT / MODE
    master = np.random.default_rng(seed)
    pay = _Writer(data / "payments", "payments", master)
    ref = _Writer(data / "refunds", "refunds", master)
    pending: dict[np.datetime64, list[pa.Table]] = {}
    refund_seq = 0
    customers = max(1, int(payments * CUSTOMERS_PER_PAYMENT))
    first = 0

    def flush(before: np.datetime64 | None) -> None:
        nonlocal refund_seq
        for month in sorted(pending):
            if before is not None and month >= before:
                continue
            table = pa.concat_tables(pending.pop(month))
            table = table.take(pc.sort_indices(table, [("created_at", "ascending")]))
            n = table.num_rows
            ids = _fixed(b"rfnd_", _seq_token(refund_seq, n, 8), _random_token(master, n, 16), n=n)
            refund_seq += n
            table = table.set_column(0, "id", ids).cast(ref.schema)
            ref.write_month(str(month), [table])

    for i, (month, count) in enumerate(zip(months(), month_counts(payments), strict=True)):
        rng = np.random.default_rng([seed, i])
        created = _times(rng, month, count)

        def chunks(created: np.ndarray = created, rng: np.random.Generator = rng) -> Any:
            nonlocal first
            for start in range(0, len(created), CHUNK):
                table, refunds = payments_chunk(
                    rng, created[start : start + CHUNK], first, customers
                )
                first += table.num_rows
                when = _month_of(refunds.column("created_at").cast(pa.int64()).to_numpy())
                for m in np.unique(when):
                    pending.setdefault(m, []).append(refunds.filter(pa.array(when == m)))
                yield table

        pay.write_month(month.strftime("%Y-%m"), chunks())
        # Refunds come after their payment: months before the next one are complete.
        flush(np.datetime64(month.strftime("%Y-%m"), "M") + 1)
    flush(None)
    stamp = dt.datetime.now(dt.UTC).isoformat()
    for resource in ("payments", "refunds"):
        Dataset.at(folder, ACCOUNT, MODE, resource).write_state(
            {
                "high_water": (END - dt.timedelta(seconds=1)).isoformat(),
                "last_sync": stamp,
                "last_full_sync": stamp,
                "api_variant": "B",
                "strategy": "generated by benchmarks/scale.py",
            }
        )
    return {
        "payments": pay.rows,
        "refunds": ref.rows,
        "build_seconds": round(time.perf_counter() - t0, 1),
        "bytes": sum(p.stat().st_size for p in folder.rglob("*.parquet")),
    }


def ensure_cache(root: Path, payments: int, seed: int = 1, *, log: Any = print) -> Path:
    """The cache of ``payments`` payments under ``root``, built unless already there."""
    folder = root / f"payments-{payments}"
    manifest = folder / "manifest.json"
    wanted = {
        "generator": GENERATOR_VERSION,
        "model": model_digest(),
        "payments": payments,
        "seed": seed,
    }
    if manifest.exists():
        found = json.loads(manifest.read_text())
        if {k: found.get(k) for k in wanted} == wanted:
            return folder
        log(f"{folder}: built with other parameters; rebuilding")
    partial = root / f".building-payments-{payments}"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.rmtree(folder, ignore_errors=True)
    partial.mkdir(parents=True)
    log(f"building {payments:,} payments in {folder} ...")
    figures = build(partial, payments, seed)
    (partial / "manifest.json").write_text(
        json.dumps(
            {
                **wanted,
                **figures,
                "account": ACCOUNT,
                "mode": MODE,
                "start": START.isoformat(),
                "end": END.isoformat(),
                "built": stamp_now(),
            },
            indent=2,
        )
        + "\n"
    )
    partial.rename(folder)  # complete or absent: an interrupted build is rebuilt
    log(
        f"built {figures['payments']:,} payments and {figures['refunds']:,} refunds "
        f"({figures['bytes'] / 2**20:,.0f} MB) in {figures['build_seconds']} s"
    )
    return folder


def stamp_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def manifest(folder: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((folder / "manifest.json").read_text())
    return result
