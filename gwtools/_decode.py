"""Byte-level decoding of list response bodies: envelopes, variants, records.

Only this module touches raw bytes. It splits a list body of either API variant into
its envelope facts and its records, and reports bodies that are not list envelopes
with a message that says what was wrong.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

Variant = Literal["A", "B"]


class MalformedResponseError(ValueError):
    """A response body is not JSON, or not a list envelope of either API variant.

    ``why`` is the reason alone, without the body snippet the message ends with.
    """

    def __init__(self, message: str, *, why: str | None = None) -> None:
        super().__init__(message)
        self.why = why or message


class _Meta(msgspec.Struct, gc=False):
    # Any-typed so that a gateway sending e.g. a string page number is reported, not crashed on.
    total: Any = None
    page: Any = None
    limit: Any = None
    totalPages: Any = None


class _Envelope(msgspec.Struct, gc=False):
    data: Any = msgspec.UNSET
    meta: Any = msgspec.UNSET
    has_more: Any = msgspec.UNSET
    object: Any = msgspec.UNSET


class _RawEnvelope(msgspec.Struct, gc=False):
    """An envelope whose records stay undecoded (cheap: page_info needs only two of them)."""

    data: list[msgspec.Raw] | None = None
    meta: _Meta | None = None
    has_more: Any = None
    object: Any = None


_envelope_decoder = msgspec.json.Decoder(_Envelope)
_raw_envelope_decoder = msgspec.json.Decoder(_RawEnvelope)
_any_decoder = msgspec.json.Decoder()


def snippet(body: bytes, limit: int = 200) -> str:
    """The start of a body as text, for error messages and reject records."""
    text = body[:limit].decode("utf-8", errors="replace")
    return text + ("…" if len(body) > limit else "")


def _variant_of(meta: object, has_more: object, obj: object) -> Variant | None:
    if isinstance(meta, dict | _Meta):
        return "A"
    if (has_more is not msgspec.UNSET and has_more is not None) or obj == "list":
        return "B"
    return None


def _not_envelope(body: bytes, why: str) -> MalformedResponseError:
    reason = (
        f"response body is not a list envelope of either API variant ({why}); expected "
        f'{{"data": [...], "meta": {{...}}}} (variant A) or {{"object": "list", "data": [...], '
        f'"has_more": ...}} (variant B)'
    )
    return MalformedResponseError(f"{reason}; body starts: {snippet(body)!r}", why=reason)


def _not_json(body: bytes, exc: Exception) -> MalformedResponseError:
    reason = f"response body is not JSON ({exc})"
    return MalformedResponseError(f"{reason}; body starts: {snippet(body)!r}", why=reason)


def decode_raw_envelope(body: bytes) -> tuple[Variant, _RawEnvelope]:
    """Decode a list body keeping its records as raw JSON; raise if it is not an envelope."""
    try:
        env = _raw_envelope_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise _not_envelope(body, str(exc)) from None
    except msgspec.DecodeError as exc:
        raise _not_json(body, exc) from None
    if env.data is None:
        raise _not_envelope(body, "no `data` list")
    variant = _variant_of(env.meta, env.has_more, env.object)
    if variant is None:
        raise _not_envelope(body, "neither `meta` nor `has_more`/`object: list`")
    return variant, env


def decode_records(body: bytes) -> tuple[Variant, list[Any]]:
    """A list body's variant and its records as Python objects (dicts, or whatever was sent)."""
    try:
        env = _envelope_decoder.decode(body)
    except msgspec.ValidationError as exc:
        raise _not_envelope(body, str(exc)) from None
    except msgspec.DecodeError as exc:
        raise _not_json(body, exc) from None
    if not isinstance(env.data, list):
        raise _not_envelope(body, "no `data` list")
    variant = _variant_of(env.meta, env.has_more, env.object)
    if variant is None:
        raise _not_envelope(body, "neither `meta` nor `has_more`/`object: list`")
    return variant, env.data


def decode_value(raw: bytes | msgspec.Raw) -> Any:
    """Decode one JSON value (a record kept raw)."""
    return _any_decoder.decode(raw)
