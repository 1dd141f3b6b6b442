"""The canonical tables: column order, dtypes and the status vocabulary.

This module is the output contract of the library (docs/tables.md). Every
DataFrame that gwtools returns for payments or refunds has exactly these columns,
in this order, with these dtypes, whatever API variant the data came from.

Use :func:`empty_payments` / :func:`empty_refunds` for a correctly typed empty
table and :func:`conform` to coerce a frame built elsewhere (tests, hand-made
examples) to the contract.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Final, Literal, get_args

import pandas as pd
import pyarrow as pa

Resource = Literal["payments", "refunds"]
#: The resources, in the order gwtools syncs and shows them.
RESOURCES: Final[tuple[Resource, ...]] = get_args(Resource)

#: Strings use pandas' pyarrow-backed string dtype with ``pd.NA`` for missing values.
STRING: Final = pd.StringDtype("pyarrow")
TIMESTAMP: Final = pd.DatetimeTZDtype(unit="us", tz="UTC")
INT: Final = pd.Int64Dtype()
BOOL: Final = pd.BooleanDtype()
FLOAT: Final = "float64"

PAYMENT_COLUMNS: Final[dict[str, object]] = {
    "id": STRING,
    "api_variant": STRING,
    "livemode": BOOL,
    "status": STRING,
    "status_raw": STRING,
    "outcome": STRING,
    "amount": INT,
    "currency": STRING,
    "amount_major": FLOAT,
    "method_type": STRING,
    "payment_method_id": STRING,
    "fpx_bank_code": STRING,
    "fpx_bank": STRING,
    "card_brand": STRING,
    "failure_code": STRING,
    "decline_code": STRING,
    "captured": BOOL,
    "captured_at": TIMESTAMP,
    "refunded": BOOL,
    "refunded_amount": INT,
    "description": STRING,
    "customer_id": STRING,
    "receipt_email": STRING,
    "metadata": STRING,
    "created_at": TIMESTAMP,
    "updated_at": TIMESTAMP,
    "expires_at": TIMESTAMP,
    "extra": STRING,
}

REFUND_COLUMNS: Final[dict[str, object]] = {
    "id": STRING,
    "api_variant": STRING,
    "livemode": BOOL,
    "payment_id": STRING,
    "status": STRING,
    "reason": STRING,
    "amount": INT,
    "currency": STRING,
    "amount_major": FLOAT,
    "metadata": STRING,
    "created_at": TIMESTAMP,
    "extra": STRING,
}

#: Columns computed from the others once a batch is read: ``status`` (and ``outcome``) from
#: the raw status, ``amount_major`` from amount and currency, ``extra`` from the fields
#: without a column. Every other column is read from a record field.
COMPUTED: Final = frozenset({"status", "outcome", "amount_major", "extra"})

COLUMNS: Final[dict[Resource, dict[str, object]]] = {
    "payments": PAYMENT_COLUMNS,
    "refunds": REFUND_COLUMNS,
}

#: Raw status -> canonical payment status, per API variant (docs/tables.md, "Status
#: vocabulary"). A status of the other variant is ``unknown``: the variants name states
#: differently (A's ``succeeded`` or B's ``captured`` is not a documented state).
PAYMENT_STATUS_BY_VARIANT: Final[Mapping[str, Mapping[str, str]]] = {
    "A": {
        "pending": "pending",
        "authorized": "authorized",
        "captured": "succeeded",
        "failed": "failed",
        "cancelled": "canceled",
        "expired": "expired",
    },
    "B": {
        "requires_action": "requires_action",
        "processing": "processing",
        "authorized": "authorized",
        "requires_capture": "authorized",
        "succeeded": "succeeded",
        "failed": "failed",
        "canceled": "canceled",
        "cancelled": "canceled",
    },
}

#: Every raw status of either variant -> canonical payment status (the union of
#: :data:`PAYMENT_STATUS_BY_VARIANT`; a raw value means the same in both where both have it).
PAYMENT_STATUS: Final[Mapping[str, str]] = {
    raw: canonical
    for by_raw in PAYMENT_STATUS_BY_VARIANT.values()
    for raw, canonical in by_raw.items()
}

#: Canonical payment status -> outcome.
PAYMENT_OUTCOME: Final[Mapping[str, str]] = {
    "pending": "open",
    "requires_action": "open",
    "processing": "open",
    "authorized": "open",
    "succeeded": "succeeded",
    "failed": "failed",
    "canceled": "abandoned",
    "expired": "abandoned",
    "unknown": "unknown",
}

PAYMENT_STATUSES: Final = tuple(PAYMENT_OUTCOME)
REFUND_STATUSES: Final = ("pending", "succeeded", "failed", "unknown")

#: States that can still change; a sync re-reads cached rows in these states.
OPEN_PAYMENT_STATUSES: Final = frozenset({"pending", "requires_action", "processing", "authorized"})
OPEN_REFUND_STATUSES: Final = frozenset({"pending"})
#: A payment that succeeded can still be refunded, so its row can change too; the
#: sync handles that by re-reading the refunds, which carry the payment id.

SOFT_DECLINE_CODES: Final = frozenset(
    {"insufficient_funds", "generic_decline", "processing_error", "incorrect_cvc"}
)
HARD_DECLINE_CODES: Final = frozenset({"lost_card", "stolen_card", "expired_card"})


def columns(resource: Resource) -> dict[str, object]:
    """The ordered ``{column: dtype}`` mapping of a resource's canonical table."""
    try:
        return COLUMNS[resource]
    except KeyError:
        from gwtools._errors import ConfigurationError

        raise ConfigurationError(
            f"unknown resource {resource!r}: use 'payments' or 'refunds'", param="resource"
        ) from None


def empty(resource: Resource) -> pd.DataFrame:
    """An empty, correctly typed canonical table."""
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns(resource).items()})  # type: ignore[call-overload]


def empty_payments() -> pd.DataFrame:
    """An empty canonical payments table."""
    return empty("payments")


def empty_refunds() -> pd.DataFrame:
    """An empty canonical refunds table."""
    return empty("refunds")


def conform(frame: pd.DataFrame, resource: Resource) -> pd.DataFrame:
    """Coerce ``frame`` to the canonical columns, order and dtypes.

    Missing columns are added as nulls; columns outside the contract raise, so
    nothing is dropped silently. A time column of numbers is read as Unix seconds.
    Use it for frames built by hand, e.g. in tests::

        conform(pd.DataFrame({"id": ["pay_1"], "status": ["failed"]}), "payments")
    """
    spec = columns(resource)
    unknown = [c for c in frame.columns if c not in spec]
    if unknown:
        raise ValueError(
            f"columns {unknown} are not in the canonical {resource} table; "
            f"put extra fields in the 'extra' JSON column"
        )
    out = {}
    n = len(frame)
    for name, dtype in spec.items():
        if name in frame.columns:
            col = frame[name]
            if dtype is TIMESTAMP:
                # A number is Unix seconds, as everywhere in gwtools (pandas: nanoseconds).
                numeric = pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col)
                col = (
                    pd.to_datetime(col, utc=True, unit="s")
                    if numeric
                    else pd.to_datetime(col, utc=True)
                ).astype(TIMESTAMP)
            else:
                col = col.astype(dtype)  # type: ignore[call-overload]
            out[name] = col.reset_index(drop=True)
        else:
            out[name] = pd.Series([None] * n, dtype=dtype)  # type: ignore[call-overload]
    return pd.DataFrame(out)


@functools.cache  # pyarrow schemas are immutable; building one from a pandas frame costs ~25 ms
def arrow_schema(resource: Resource) -> pa.Schema:
    """The pyarrow schema of a canonical table (what the Parquet cache stores)."""
    return pa.Schema.from_pandas(empty(resource), preserve_index=False).remove_metadata()
