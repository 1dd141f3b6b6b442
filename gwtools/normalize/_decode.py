"""The record shapes: which fields a payment or refund object carries, and their JSON types.

The envelopes around them (both variants) are :mod:`gwtools.http._wire`'s.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, get_args, get_origin, get_type_hints

import msgspec

from gwtools.http._wire import EnvelopeMeta, Variant, envelope_variant

# ----------------------------------------------------------------------------- record shapes
# The one declaration of each record shape: every field the spec or the sandbox sends, its
# JSON type, and what becomes of it (the role in its annotation). All fields are optional.
# Decoding a body with these structs succeeds only when every record is an object of known
# fields with the expected JSON types; anything else (an unknown field, an amount sent as
# text, an expanded object) raises, and the caller reads that body with the tolerant path.
# Being strict is what lets the fast path skip per-record checks. Derived from them:
# the fast path's column readers (:func:`column_spec`), the ``extra`` views
# (:func:`payment_extras`) and the set of known top-level fields.


@dataclass(frozen=True)
class Column:
    """Role: the field is read into a column; ``kind`` says how (s string, i int64, b bool,
    t timestamp: Unix seconds or ISO 8601, r JSON text kept as sent)."""

    kind: Literal["s", "i", "b", "t", "r"]


#: Role: never kept (``object`` is always the record's kind; ``client_secret`` is a secret).
DROPPED: Final = "dropped"
#: Role: free-form; the caller merges it into ``extra`` like an unknown field.
FREE: Final = "free"
# Fields without a role (and the unmapped rest of partly mapped sub-objects) go to ``extra``.

# An integer the int64 columns can hold; a bigger one sends the body to the tolerant path.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_S = str | None
_I = _Int64 | None
_B = bool | None
_T = _Int64 | float | str | None  # a timestamp: Unix seconds or ISO 8601
_RAW_ABSENT = msgspec.Raw(b"")
# The same types read into a column.
_SC = Annotated[_S, Column("s")]
_IC = Annotated[_I, Column("i")]
_BC = Annotated[_B, Column("b")]
_TC = Annotated[_T, Column("t")]
_RC = Annotated[msgspec.Raw, Column("r")]


class FastCard(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    brand: _SC = None
    last4: _S = None
    exp_month: _I = None
    exp_year: _I = None
    funding: _S = None
    country: _S = None


class FastFpx(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    bank_code: _SC = None
    bank: _SC = None


class FastDetails(FastCard, gc=False, forbid_unknown_fields=True):
    """Flat (the sandbox: a card's or FPX's fields at this level) or nested per method
    (``{"card": {...}}``), or both."""

    type: _SC = None
    bank_code: _SC = None
    bank: _SC = None
    card: FastCard | None = None
    fpx: FastFpx | None = None


class FastError(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    code: _SC = None
    decline_code: _SC = None
    message: _S = None
    type: _S = None
    param: _S = None
    doc_url: _S = None


class _Record(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """The fields payments and refunds share."""

    id: _SC = None
    object: Annotated[_S, DROPPED] = None
    amount: _IC = None
    currency: _SC = None
    status: _SC = None
    metadata: _RC = _RAW_ABSENT
    created: _TC = None  # variant B's creation time
    created_at: _TC = None  # variant A's
    livemode: _BC = None


class FastPayment(_Record, gc=False, forbid_unknown_fields=True):
    amount_captured: _I = None
    description: _SC = None
    payment_method: _SC = None
    payment_method_details: FastDetails | None = None
    customer: _SC = None
    capture_method: _S = None
    captured: _BC = None
    captured_at: _TC = None
    refunded: _BC = None
    refunded_amount: _IC = None
    failure_code: _SC = None
    failure_message: _S = None
    decline_code: _SC = None
    last_payment_error: FastError | None = None
    receipt_email: _SC = None
    receipt_url: _S = None
    # decoded as raw so the secret never becomes a str
    client_secret: Annotated[msgspec.Raw, DROPPED] = _RAW_ABSENT
    next_action: Annotated[dict[str, Any] | None, FREE] = None
    redirect_url: _S = None
    success_url: _S = None
    cancel_url: _S = None
    updated_at: _TC = None
    expires_at: _TC = None


class FastRefund(_Record, gc=False, forbid_unknown_fields=True):
    payment_id: _SC = None
    payment: _SC = None
    reason: _SC = None


RECORD_SHAPES: Final[dict[str, type[msgspec.Struct]]] = {
    "payments": FastPayment,
    "refunds": FastRefund,
}


def _fields(
    kind: type[msgspec.Struct],
) -> list[tuple[str, Any, object, type[msgspec.Struct] | None]]:
    """(name, type as declared, role, nested shape) of each field of a shape."""
    hints = get_type_hints(kind, include_extras=True)
    out = []
    for name in kind.__struct_fields__:
        hint = hints[name]
        role = hint.__metadata__[-1] if get_origin(hint) is Annotated else None
        nested = [
            a for a in get_args(hint) if isinstance(a, type) and issubclass(a, msgspec.Struct)
        ]
        out.append((name, hint, role, nested[0] if nested else None))
    return out


#: How each field becomes a stage-1 column: a kind (see :class:`Column`), ``"p"`` for
#: "the sub-object named without the ``?`` is there", or (nested shape, its spec).
Spec = dict[str, "str | tuple[type[msgspec.Struct], Spec]"]


@functools.cache
def column_spec(kind: type[msgspec.Struct]) -> Spec:
    """The fields of a shape read into columns, derived from the roles in its declaration."""
    spec: Spec = {}
    for name, _, role, nested in _fields(kind):
        if isinstance(role, Column):
            spec[name] = role.kind
        elif nested is not None and (sub := column_spec(nested)):
            spec[name] = (nested, sub)
            spec[name + "?"] = "p"
    return spec


def fields_with_role(role: str) -> frozenset[str]:
    """Top-level fields of any record shape with ``role`` (:data:`DROPPED` or :data:`FREE`)."""
    return frozenset(
        name for kind in RECORD_SHAPES.values() for name, _, r, _ in _fields(kind) if r == role
    )


class _MetadataOnly(msgspec.Struct, gc=False):
    metadata: msgspec.Raw = msgspec.Raw(b"")


_metadata_decoder = msgspec.json.Decoder(_MetadataOnly)


def raw_metadata(raw: bytes | msgspec.Raw) -> bytes:
    """The ``metadata`` value of one raw record object as sent (``b""`` when absent)."""
    return bytes(_metadata_decoder.decode(raw).metadata)


# Views of the same records holding only the fields without a role (nor a column): encoded
# with omit_defaults and sorted keys they are the ``extra`` JSON text (a null value is omitted).
# FREE fields (``next_action``: free-form, rarely set) are merged in by the caller, like
# unknown fields.


def _extra_view(
    kind: type[msgspec.Struct], partly_mapped: list[bytes]
) -> type[msgspec.Struct] | None:
    """The view of a shape keeping its fields without a role (None when there are none);
    the names of its sub-objects that are partly mapped are added to ``partly_mapped``."""
    fields: list[tuple[str, Any, Any]] = []
    for name, hint, role, nested in _fields(kind):
        if nested is not None:
            view = _extra_view(nested, partly_mapped)
            if view is not None:
                fields.append((name, view | None, None))
                if column_spec(nested):
                    partly_mapped.append(name.encode())  # (inner ones are appended first)
        elif role is None:
            fields.append((name, hint, None))
    if not fields:
        return None
    return msgspec.defstruct(f"_Extra{kind.__name__}", fields, omit_defaults=True, gc=False)


#: Partly mapped objects whose unmapped rest can be empty; an empty rest is left out
#: (inner ones first: a details object whose card rest was empty can become empty).
_PARTLY_MAPPED: list[bytes] = []
_ExtraPayment = _extra_view(FastPayment, _PARTLY_MAPPED)
_extra_encoder = msgspec.json.Encoder(order="sorted")


def payment_extras(records: list[FastPayment]) -> bytes:
    """The ``extra`` JSON text of strictly decoded payments, one line each (``{}``: none).

    The records are converted (in C) to the views above, which keep only the fields
    without a column; encoded with sorted keys and without nulls they are exactly what
    the tolerant path writes for the same record.
    """
    views = msgspec.convert(records, list[_ExtraPayment], from_attributes=True)  # type: ignore[valid-type]
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


_fast_decoders = {r: _fast_envelope(kind) for r, kind in RECORD_SHAPES.items()}


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


# ----------------------------------------------------------------------------- objects
# Objects the caller already holds (dicts) are converted to the same shapes without a
# detour through JSON text: fields kept as raw JSON in a body (``metadata``,
# ``client_secret``) are taken as the objects they are.


def _object_shape(kind: type[msgspec.Struct], *, strict: bool) -> type[msgspec.Struct]:
    fields: list[tuple[str, Any, Any]] = []
    for name, hint, role, _ in _fields(kind):
        if msgspec.Raw in (hint, *get_args(hint)):
            hint = Annotated[dict[str, Any] | None, role] if isinstance(role, Column) else Any
            fields.append((name, hint, None))
        else:
            fields.append((name, hint, getattr(kind(), name)))
    return msgspec.defstruct(
        f"{'Object' if strict else 'LenientObject'}{kind.__name__}",
        fields,
        forbid_unknown_fields=strict,
        gc=False,
    )


_object_shapes = {
    (r, strict): list[_object_shape(kind, strict=strict)]  # type: ignore[misc]
    for r, kind in RECORD_SHAPES.items()
    for strict in (True, False)
}


def decode_objects(
    resource: str, objects: list[Any]
) -> tuple[list[Any], list[dict[str, Any] | None]] | None:
    """Objects (dicts) as strictly typed records and their unknown top-level fields, as
    :func:`decode_fast` gives them for a body; None when they need the tolerant path."""
    try:
        return msgspec.convert(objects, _object_shapes[resource, True]), []
    except (msgspec.ValidationError, TypeError):
        if resource != "payments":
            return None
    try:
        records = msgspec.convert(objects, _object_shapes[resource, False])
    except (msgspec.ValidationError, TypeError):
        return None
    return records, [_unknown_of(obj) for obj in objects]
