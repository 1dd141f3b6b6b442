"""The record shapes: which fields a payment or refund object carries, and their JSON types.

The envelopes around them (both variants) are :mod:`gwtools._wire`'s.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from gwtools._wire import EnvelopeMeta, Variant, envelope_variant

# ----------------------------------------------------------------------------- fast path
# Strict shapes of the documented objects: every field the spec or the sandbox sends, all
# optional. Decoding a body with them succeeds only when every record is an object of known
# fields with the expected JSON types; anything else (an unknown field, an amount sent as
# text, an expanded object) raises, and the caller reads that body with the tolerant path.
# Being strict is what lets the fast path skip per-record checks.

# An integer the int64 columns can hold; a bigger one sends the body to the tolerant path.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_S = str | None
_I = _Int64 | None
_B = bool | None
_T = _Int64 | float | str | None  # a timestamp: Unix seconds or ISO 8601
_RAW_ABSENT = msgspec.Raw(b"")


class FastCard(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    brand: _S = None
    last4: _S = None
    exp_month: _I = None
    exp_year: _I = None
    funding: _S = None
    country: _S = None


class FastFpx(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    bank_code: _S = None
    bank: _S = None


class FastDetails(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """Flat (the sandbox) or nested per method (``{"card": {...}}``), or both."""

    type: _S = None
    brand: _S = None
    last4: _S = None
    exp_month: _I = None
    exp_year: _I = None
    funding: _S = None
    country: _S = None
    bank_code: _S = None
    bank: _S = None
    card: FastCard | None = None
    fpx: FastFpx | None = None


class FastError(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    code: _S = None
    decline_code: _S = None
    message: _S = None
    type: _S = None
    param: _S = None
    doc_url: _S = None


class FastPayment(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    id: _S = None
    object: _S = None
    amount: _I = None
    amount_captured: _I = None
    currency: _S = None
    status: _S = None
    description: _S = None
    payment_method: _S = None
    payment_method_details: FastDetails | None = None
    customer: _S = None
    capture_method: _S = None
    captured: _B = None
    captured_at: _T = None
    refunded: _B = None
    refunded_amount: _I = None
    metadata: msgspec.Raw = _RAW_ABSENT
    failure_code: _S = None
    failure_message: _S = None
    decline_code: _S = None
    last_payment_error: FastError | None = None
    receipt_email: _S = None
    receipt_url: _S = None
    client_secret: msgspec.Raw = _RAW_ABSENT  # decoded as raw so the secret never becomes a str
    next_action: dict[str, Any] | None = None
    redirect_url: _S = None
    success_url: _S = None
    cancel_url: _S = None
    created: _T = None
    created_at: _T = None
    updated_at: _T = None
    expires_at: _T = None
    livemode: _B = None


class FastRefund(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    id: _S = None
    object: _S = None
    payment_id: _S = None
    payment: _S = None
    amount: _I = None
    currency: _S = None
    reason: _S = None
    status: _S = None
    metadata: msgspec.Raw = _RAW_ABSENT
    created: _T = None
    created_at: _T = None
    livemode: _B = None


class _MetadataOnly(msgspec.Struct, gc=False):
    metadata: msgspec.Raw = msgspec.Raw(b"")


_metadata_decoder = msgspec.json.Decoder(_MetadataOnly)


def raw_metadata(raw: bytes | msgspec.Raw) -> bytes:
    """The ``metadata`` value of one raw record object as sent (``b""`` when absent)."""
    return bytes(_metadata_decoder.decode(raw).metadata)


# Views of the same records holding only the fields without a column: encoded with
# omit_defaults and sorted keys they are the ``extra`` JSON text (a null value is omitted).
# ``next_action`` (free-form, rarely set) is merged in by the caller, like unknown fields.


class _ExtraCard(msgspec.Struct, gc=False, omit_defaults=True):
    last4: _S = None
    exp_month: _I = None
    exp_year: _I = None
    funding: _S = None
    country: _S = None


class _ExtraDetails(_ExtraCard, gc=False, omit_defaults=True):
    card: _ExtraCard | None = None  # (an fpx sub-object has nothing without a column)


class _ExtraError(msgspec.Struct, gc=False, omit_defaults=True):
    message: _S = None
    type: _S = None
    param: _S = None
    doc_url: _S = None


class _ExtraPayment(msgspec.Struct, gc=False, omit_defaults=True):
    amount_captured: _I = None
    cancel_url: _S = None
    capture_method: _S = None
    failure_message: _S = None
    last_payment_error: _ExtraError | None = None
    payment_method_details: _ExtraDetails | None = None
    receipt_url: _S = None
    redirect_url: _S = None
    success_url: _S = None


_extra_encoder = msgspec.json.Encoder(order="sorted")
#: Partly mapped objects whose unmapped rest can be empty; an empty rest is left out
#: (inner ones first: a details object whose card rest was empty can become empty).
_PARTLY_MAPPED = (b"card", b"last_payment_error", b"payment_method_details")


def payment_extras(records: list[FastPayment]) -> bytes:
    """The ``extra`` JSON text of strictly decoded payments, one line each (``{}``: none).

    The records are converted (in C) to the views above, which keep only the fields
    without a column; encoded with sorted keys and without nulls they are exactly what
    the tolerant path writes for the same record.
    """
    views = msgspec.convert(records, list[_ExtraPayment], from_attributes=True)
    lines = _extra_encoder.encode_lines(views)
    # An empty object can only be a value here: inside strings quotes are escaped.
    for key in _PARTLY_MAPPED:
        empty = b'"' + key + b'":{}'
        if empty in lines:
            lines = lines.replace(b"," + empty, b"").replace(empty + b",", b"").replace(empty, b"")
    return lines


def _fast_envelope(kind: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    envelope = msgspec.defstruct(
        f"_{kind.__name__}Envelope",
        [("data", list[kind]), ("meta", EnvelopeMeta | None, None), ("has_more", Any, None),  # type: ignore[valid-type]
         ("object", Any, None)],
        gc=False,
    )  # fmt: skip
    return msgspec.json.Decoder(envelope)


_fast_decoders = {"payments": _fast_envelope(FastPayment), "refunds": _fast_envelope(FastRefund)}


def _lenient(kind: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """The same shape, ignoring unknown top-level fields (nested objects stay strict)."""
    fields = msgspec.structs.fields(kind)
    return msgspec.defstruct(
        f"Lenient{kind.__name__}",
        [(f.name, f.type, f.default) for f in fields],
        gc=False,
    )


LenientPayment = _lenient(FastPayment)
_lenient_decoder = _fast_envelope(LenientPayment)
#: Top-level payment fields the strict shape knows; any other goes to ``extra``.
PAYMENT_FIELDS = frozenset(FastPayment.__struct_fields__)


def decode_fast(
    resource: str, body: bytes
) -> tuple[Variant, list[Any], list[dict[str, Any] | None]] | None:
    """A body's variant, strictly typed records and, when some records carry unknown
    top-level fields (payments only), those fields per record (else an empty list);
    None when the body needs the tolerant path."""
    unknown: list[dict[str, Any] | None] = []
    try:
        env = _fast_decoders[resource].decode(body)
    except msgspec.ValidationError:
        if resource != "payments":
            return None
        # New top-level fields are the likeliest difference of a real gateway: read the
        # known ones fast and pick the others up separately.
        try:
            env = _lenient_decoder.decode(body)
            unknown = unknown_fields(body)
        except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError):
            return None  # (unknown_fields: e.g. a number out of range in an unknown field)
    except (msgspec.DecodeError, UnicodeDecodeError):  # (a string that is not UTF-8)
        return None
    variant = envelope_variant(env.meta, env.has_more, env.object)
    return None if variant is None else (variant, env.data, unknown)


class _DictEnvelope(msgspec.Struct, gc=False):
    data: list[dict[str, Any]]


_dict_envelope_decoder = msgspec.json.Decoder(_DictEnvelope)


def _unknown_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    extra = {k: v for k, v in rec.items() if k not in PAYMENT_FIELDS and v is not None}
    return extra or None


def unknown_fields(body: bytes) -> list[dict[str, Any] | None]:
    """Per record of a body decode_fast read leniently: its non-null unknown top-level fields."""
    return [_unknown_of(rec) for rec in _dict_envelope_decoder.decode(body).data]
