"""The record shapes: which fields a payment or refund object carries, and their JSON types.

The envelopes around them (both variants) are :mod:`gwtools.http._wire`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq, is_
from typing import Annotated, Any, Final, Literal, get_args, get_origin, get_type_hints

import msgspec
from msgspec.structs import astuple

from gwtools.http._wire import EnvelopeMeta, Variant, envelope_variant

# ----------------------------------------------------------------------------- record shapes
# The one declaration of each record shape: every field the spec or the sandbox sends, its
# JSON type, and what becomes of it (the role in its annotation). All fields are optional.
# Decoding a body with these structs succeeds only when every record is an object of known
# fields with the expected JSON types; anything else (an unknown field, an amount sent as
# text, an expanded object) raises, and the caller reads that body with the tolerant path.
# Being strict is what lets the fast path skip per-record checks. Derived from them: the
# fields both paths read (:func:`column_spec`), the columns filled straight from one field
# (:func:`direct_columns`), the ``extra`` views (:func:`payment_extras`) and the set of
# known top-level fields.

#: How a field is read: s string, i int64, b bool, t timestamp (Unix seconds or ISO 8601),
#: r JSON text kept as sent, id an id (a string; the tolerant path also takes an expanded
#: object's ``id``).
Kind = Literal["s", "i", "b", "t", "r", "id"]


@dataclass(frozen=True)
class Column:
    """Role: the field is read into a column.

    ``into`` names the intermediate column it fills as it is (``""``: the column of the
    field's own name); ``None`` means a rule of :mod:`gwtools.normalize._normalize` combines
    it with other fields (the method, failure codes, creation time, a refund's payment).
    ``keep``: the field also stays in ``extra`` as sent (a source read as a fallback).
    """

    kind: Kind
    into: str | None = ""
    keep: bool = False


#: Role: never kept (``object`` is always the record's kind; ``client_secret`` is a secret).
DROPPED: Final = "dropped"
# Fields without a role (and the unmapped rest of partly mapped sub-objects) go to ``extra``.

# An integer the int64 columns can hold; a bigger one sends the body to the tolerant path.
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_S = str | None
_I = _Int64 | None
_B = bool | None
_T = _Int64 | float | str | None  # a timestamp: Unix seconds or ISO 8601
_RAW_ABSENT = msgspec.Raw(b"")
# The same types read into the column of the same name ...
_SC = Annotated[_S, Column("s")]
_IC = Annotated[_I, Column("i")]
_BC = Annotated[_B, Column("b")]
_TC = Annotated[_T, Column("t")]
# ... or read by a rule
_SR = Annotated[_S, Column("s", None)]
_TR = Annotated[_T, Column("t", None)]
_IDR = Annotated[_S, Column("id", None)]


class FastCard(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    brand: _SR = None
    last4: _S = None
    exp_month: _I = None
    exp_year: _I = None
    funding: _S = None
    country: _S = None


class FastFpx(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    bank_code: _SR = None
    bank: _SR = None


class FastDetails(FastCard, gc=False, forbid_unknown_fields=True):
    """Flat (the sandbox: a card's or FPX's fields at this level) or nested per method
    (``{"card": {...}}``), or both."""

    type: _SR = None
    bank_code: _SR = None
    bank: _SR = None
    card: FastCard | None = None
    fpx: FastFpx | None = None


class FastMethodData(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """Variant B's creation data of the method (``payment_method_data``): its ``type`` is the
    last source of the method type; the object is kept whole in ``extra``."""

    type: Annotated[_S, Column("s", None, keep=True)] = None
    card: dict[str, Any] | None = None
    fpx: dict[str, Any] | None = None


class FastError(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    code: _SR = None
    decline_code: _SR = None
    message: _S = None
    type: _S = None
    param: _S = None
    doc_url: _S = None


class _Record(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """The fields payments and refunds share."""

    id: _SC = None
    amount: _IC = None
    currency: _SC = None
    status: Annotated[_S, Column("s", "status_raw")] = None
    metadata: Annotated[msgspec.Raw, Column("r")] = _RAW_ABSENT
    created: _TR = None  # variant B's creation time
    created_at: _TR = None  # variant A's
    livemode: _BC = None


class FastPayment(_Record, gc=False, forbid_unknown_fields=True):
    # Any other kind fails the fast path: the tolerant one keeps it in extra.
    object: Annotated[Literal["payment"] | None, DROPPED] = None
    amount_captured: _I = None
    description: _SC = None
    payment_method: _SR = None
    payment_method_details: FastDetails | None = None
    payment_method_data: FastMethodData | None = None
    customer: Annotated[_S, Column("id", "customer_id")] = None
    capture_method: _S = None
    captured: _BC = None
    captured_at: _TC = None
    refunded: _BC = None
    refunded_amount: _IC = None
    failure_code: _SR = None
    failure_message: _S = None
    decline_code: _SR = None
    last_payment_error: FastError | None = None  # variant B's
    error: FastError | None = None  # variant A's, when given
    receipt_email: _SC = None
    receipt_url: _S = None
    # decoded as raw so the secret never becomes a str
    client_secret: Annotated[msgspec.Raw, DROPPED] = _RAW_ABSENT
    next_action: dict[str, Any] | None = None  # free-form: kept whole in extra
    redirect_url: _S = None
    success_url: _S = None
    cancel_url: _S = None
    updated_at: _TC = None
    expires_at: _TC = None


class FastRefund(_Record, gc=False, forbid_unknown_fields=True):
    object: Annotated[Literal["refund"] | None, DROPPED] = None
    payment_id: _IDR = None
    payment: _IDR = None  # an alias of payment_id
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


@functools.cache
def direct_columns(resource: str) -> dict[str, tuple[str, Kind]]:
    """``{column: (field, kind)}``: the intermediate columns a record's field fills as it is."""
    return {
        role.into or name: (name, role.kind)
        for name, _, role, _ in _fields(RECORD_SHAPES[resource])
        if isinstance(role, Column) and role.into is not None
    }


def fields_with_role(role: str) -> frozenset[str]:
    """Top-level fields of any record shape with ``role`` (e.g. :data:`DROPPED`)."""
    return frozenset(
        name for kind in RECORD_SHAPES.values() for name, _, r, _ in _fields(kind) if r == role
    )


class _MetadataOnly(msgspec.Struct, gc=False):
    metadata: msgspec.Raw = msgspec.Raw(b"")


_metadata_decoder = msgspec.json.Decoder(_MetadataOnly)


def raw_metadata(raw: bytes | msgspec.Raw) -> bytes:
    """The ``metadata`` value of one raw record object as sent (``b""`` when absent)."""
    return bytes(_metadata_decoder.decode(raw).metadata)


# ----------------------------------------------------------------------------- columns
#: The values of one chunk of records, one sequence per field; a nested shape's fields
#: under dotted names (``payment_method_details.card.brand``), left out where the
#: sub-object is absent from every record of the chunk.
Columns = dict[str, Sequence[Any]]


@functools.cache
def _nested(kind: type[msgspec.Struct]) -> list[tuple[str, type[msgspec.Struct]]]:
    return [(name, nested) for name, _, _, nested in _fields(kind) if nested is not None]


@functools.cache
def _empty(kind: type[msgspec.Struct]) -> msgspec.Struct:
    return kind()


def transpose(records: Sequence[Any], kind: type[msgspec.Struct], prefix: str = "") -> Columns:
    """Records of one shape -> :data:`Columns` (the transposition is done in C)."""
    names = kind.__struct_fields__
    n = len(records)
    if not n:
        return {prefix + name: () for name in names}
    rows = zip(*map(astuple, records), strict=True)
    out: Columns = {prefix + name: values for name, values in zip(names, rows, strict=True)}
    for name, nested in _nested(kind):
        values = out[prefix + name]
        if values[0] is None and values.count(None) == n:  # (values[0] first: cheap when set)
            continue
        empty = _empty(nested)
        out |= transpose([v or empty for v in values], nested, f"{prefix}{name}.")
    return out


# ----------------------------------------------------------------------------- extra
# Views of the records holding only the fields without a role (and those a rule reads but
# ``extra`` keeps, ``Column(keep=True)``): encoded with omit_defaults
# and sorted keys they are the ``extra`` JSON text (a null value is omitted). They are built
# from the columns of a chunk, bottom up; a sub-object with columns keeps only its unmapped
# rest, and when that rest is empty the view holds None in its place, so it is omitted.


@dataclass(frozen=True)
class _View:
    """How the view of one shape is built: its struct, and per field the sub-view (or None)."""

    struct: type[msgspec.Struct]
    #: a field of the shape: in the chunk's columns when the sub-object is in the chunk
    probe: str
    fields: tuple[tuple[str, _View | None], ...]
    #: the empty view, for a partly mapped shape (an empty rest is left out)
    empty: msgspec.Struct | None


def _view_of(kind: type[msgspec.Struct]) -> _View | None:
    """The view of a shape keeping its fields without a role, and those with ``keep`` (None
    when there are none)."""
    fields: list[tuple[str, Any, Any]] = []
    plan: list[tuple[str, _View | None]] = []
    for name, hint, role, nested in _fields(kind):
        sub = _view_of(nested) if nested is not None else None
        if sub is not None:
            fields.append((name, sub.struct | None, None))
            plan.append((name, sub))
        elif nested is None and (role is None or (isinstance(role, Column) and role.keep)):
            fields.append((name, hint, None))
            plan.append((name, None))
    if not fields:
        return None
    struct = msgspec.defstruct(f"_Extra{kind.__name__}", fields, omit_defaults=True, gc=False)
    empty = struct() if column_spec(kind) else None
    return _View(struct, kind.__struct_fields__[0], tuple(plan), empty)


_PAYMENT_VIEW = _view_of(FastPayment)
_extra_encoder = msgspec.json.Encoder(order="sorted")
_sorted_encoder = msgspec.json.Encoder(order="sorted", enc_hook=str)


def _views(view: _View, cols: Columns, prefix: str, n: int) -> list[Any]:
    """The views of ``n`` records (or sub-objects at ``prefix``) from their columns."""
    args: list[Iterable[Any]] = []
    for name, sub in view.fields:
        key = prefix + name
        if sub is None:
            args.append(cols[key])
        elif f"{key}.{sub.probe}" not in cols:  # absent from the whole chunk
            args.append(repeat(None, n))
        else:
            values = _views(sub, cols, key + ".", n)
            if sub.empty is not None:  # an empty rest is left out, like an absent sub-object
                gone = map(eq, values, repeat(sub.empty))
            else:  # (a sub-object without columns: kept even if empty, unless absent)
                gone = map(is_, cols[key], repeat(None))
            for i in compress(range(n), gone):
                values[i] = None
            args.append(values)
    return list(map(view.struct, *args))


def payment_extras(
    cols: Columns, n: int, unknown: dict[int, dict[str, Any]]
) -> tuple[bytes, dict[int, bytes]]:
    """The ``extra`` JSON text of ``n`` strictly decoded payments given as :data:`Columns`, one
    line each (``{}``: none), and the texts of the records at the positions of ``unknown``,
    with their unknown fields.

    The views keep only the fields without a column; encoded with sorted keys and without
    nulls they are exactly what the tolerant path writes for the same record.
    """
    assert _PAYMENT_VIEW is not None
    views = _views(_PAYMENT_VIEW, cols, "", n)
    merged = {
        i: _sorted_encoder.encode(
            {k: v for k, v in msgspec.structs.asdict(views[i]).items() if v is not None} | more
        )
        for i, more in sorted(unknown.items())
    }
    return _extra_encoder.encode_lines(views), merged


# ----------------------------------------------------------------------------- decoding
#: Typed records of one part (a list body, a single object) and, when some carry unknown
#: top-level fields (payments only), those fields per record (else an empty list).
Decoded = tuple[list[Any], list["dict[str, Any] | None"]]


def _fast_envelope(kind: type[msgspec.Struct]) -> msgspec.json.Decoder[Any]:
    envelope = msgspec.defstruct(
        f"_{kind.__name__}Envelope",
        [("data", list[kind]), ("meta", EnvelopeMeta | None, None), ("has_more", Any, None),  # type: ignore[valid-type]
         ("object", Any, None)],
        gc=False,
    )  # fmt: skip
    return msgspec.json.Decoder(envelope)


def _lenient(kind: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """The same shape, ignoring unknown top-level fields (nested objects stay strict)."""
    fields = msgspec.structs.fields(kind)
    return msgspec.defstruct(
        f"Lenient{kind.__name__}",
        [(f.name, f.type, f.default) for f in fields],
        gc=False,
    )


LenientPayment = _lenient(FastPayment)
_list_decoders = {r: _fast_envelope(kind) for r, kind in RECORD_SHAPES.items()}
_lenient_list_decoder = _fast_envelope(LenientPayment)
_object_decoders = {r: msgspec.json.Decoder(kind) for r, kind in RECORD_SHAPES.items()}
_lenient_object_decoder = msgspec.json.Decoder(LenientPayment)
#: Top-level payment fields the strict shape knows; any other goes to ``extra``.
PAYMENT_FIELDS = frozenset(FastPayment.__struct_fields__)


def _unknown_of(rec: Any) -> dict[str, Any] | None:
    extra = {k: v for k, v in rec.items() if k not in PAYMENT_FIELDS and v is not None}
    return extra or None


class _DictEnvelope(msgspec.Struct, gc=False):
    data: list[dict[str, Any]]


_dict_envelope_decoder = msgspec.json.Decoder(_DictEnvelope)
_dict_decoder = msgspec.json.Decoder(dict[str, Any])
_DECODE_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError)


def decode_fast(resource: str, body: bytes) -> tuple[Variant, list[Any], list[Any]] | None:
    """A list body's variant and :data:`Decoded` records; None when the body needs the
    tolerant path."""
    unknown: list[dict[str, Any] | None] = []
    try:
        env = _list_decoders[resource].decode(body)
    except msgspec.ValidationError:
        if resource != "payments":
            return None
        # New top-level fields are the likeliest difference of a real gateway: read the
        # known ones fast and pick the others up separately.
        try:
            env = _lenient_list_decoder.decode(body)
            unknown = [_unknown_of(rec) for rec in _dict_envelope_decoder.decode(body).data]
        except _DECODE_ERRORS:
            return None  # (e.g. a number out of range in an unknown field)
    except (msgspec.DecodeError, UnicodeDecodeError):  # (a string that is not UTF-8)
        return None
    variant = envelope_variant(env.meta, env.has_more, env.object)
    return None if variant is None else (variant, env.data, unknown)


def decode_object_body(resource: str, body: bytes) -> Decoded | None:
    """One retrieved object's body as a :data:`Decoded` record; None: the tolerant path."""
    try:
        return [_object_decoders[resource].decode(body)], []
    except msgspec.ValidationError:
        if resource != "payments":
            return None
    except (msgspec.DecodeError, UnicodeDecodeError):
        return None
    try:
        return [_lenient_object_decoder.decode(body)], [_unknown_of(_dict_decoder.decode(body))]
    except _DECODE_ERRORS:
        return None


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
    (r, strict): _object_shape(kind, strict=strict)
    for r, kind in RECORD_SHAPES.items()
    for strict in (True, False)
}


def decode_object(resource: str, obj: object) -> Decoded | None:
    """An object (a dict) as a :data:`Decoded` record, as :func:`decode_object_body` gives
    it for a body; None when it needs the tolerant path."""
    try:
        return [msgspec.convert(obj, _object_shapes[resource, True])], []
    except (msgspec.ValidationError, TypeError):
        if resource != "payments":
            return None
    try:
        record = msgspec.convert(obj, _object_shapes[resource, False])
    except (msgspec.ValidationError, TypeError):
        return None
    return [record], [_unknown_of(obj)]
