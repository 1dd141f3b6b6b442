"""Request parsing and validation: every kind of bad input becomes a 4xx ``ApiError``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from typing import Any, Final

import httpx
import orjson

from gwtools.sandbox import errors
from gwtools.sandbox.cards import TEST_CARDS, TOKENS, brand, luhn_ok
from gwtools.sandbox.clock import DAY, parse_instant
from gwtools.sandbox.domain import Method
from gwtools.sandbox.fpx import BANKS, TEST_BANKS

MAX_BODY: Final = 64 * 1024
MAX_AMOUNT: Final = 99_999_999
MAX_DESCRIPTION: Final = 255
METADATA_KEYS: Final = {"A": 10, "B": 50}
METADATA_KEY_LEN: Final = 40
METADATA_VALUE_LEN: Final = 500
#: the one currency FPX (Malaysian online banking) moves
FPX_CURRENCY: Final = "MYR"
REASONS: Final = ("duplicate", "fraudulent", "requested_by_customer")
_URL = re.compile(r"^https?://[^\s/?#]+[^\s]*$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_CURRENCY = re.compile(r"^[A-Za-z]{3}$")
_QUERY_INT = re.compile(r"-?[0-9]+")
_DIGITS = re.compile(r"[0-9]+")
#: digits beyond which a query integer is out of every range (and not worth converting)
_QUERY_INT_DIGITS: Final = 12
#: an ISO time whose "+hh:mm" offset lost its "+" to form decoding ("...T00:00:00 08:00")
_SPACE_FOR_PLUS = re.compile(
    r"[0-9]{4}-?[0-9]{2}-?[0-9]{2}[Tt ][0-9]{2}(:?[0-9]{2}(:?[0-9]{2}([.,][0-9]+)?)?)?"
    r" [0-9]{2}(:?[0-9]{2})?"
)
# The currencies the sandbox accepts: those a Malaysian gateway settles, plus majors.
CURRENCIES: Final = frozenset(
    {
        "MYR",
        "SGD",
        "USD",
        "EUR",
        "GBP",
        "AUD",
        "JPY",
        "THB",
        "IDR",
        "PHP",
        "HKD",
        "CNY",
        "INR",
        "VND",
        "KRW",
        "TWD",
        "NZD",
        "CAD",
        "CHF",
        "BND",
    }
)

PAYMENT_FIELDS: Final = {
    "A": (
        "amount",
        "currency",
        "description",
        "success_url",
        "cancel_url",
        "callback_url",
        "metadata",
    ),
    "B": (
        "amount",
        "currency",
        "payment_method",
        "payment_method_data",
        "customer",
        "description",
        "metadata",
        "capture_method",
        "receipt_email",
        "return_url",
        "save_payment_method",
    ),
}
REFUND_FIELDS: Final = ("payment_id", "payment", "amount", "reason", "metadata")


def parse_json(raw: bytes, *, allow_empty: bool = False) -> dict[str, Any]:
    """The request body as a JSON object, or a 400/413 saying what is wrong."""
    if len(raw) > MAX_BODY:
        raise errors.ApiError(
            413,
            "invalid_request_error",
            "parameter_invalid",
            f"The request body is {len(raw)} bytes; the limit is {MAX_BODY}.",
        )
    if not raw.strip():
        if allow_empty:
            return {}
        raise errors.invalid(None, "The request body is empty; send a JSON object.")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.invalid(
            None,
            f"The request body is not valid JSON ({exc}); send a JSON object with "
            "Content-Type: application/json (not a form).",
        ) from None
    if not isinstance(body, dict):
        raise errors.invalid(
            None,
            f"The request body must be a JSON object ({{...}}); got {_json_type(body)}.",
        )
    _reject_duplicates(raw)
    return body


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as all its (name, value) pairs, repeated names included."""


def _duplicate(node: Any, path: str = "") -> tuple[str, str] | None:
    """The first name given twice in one object of ``node``, and its parameter path as the
    other errors name nested fields (``metadata[a]``, ``payment_method_data[card][cvc]``)."""
    if isinstance(node, _Pairs):
        seen: set[str] = set()
        for name, _ in node:
            if name in seen:
                return name, f"{path}[{name}]" if path else name
            seen.add(name)
        children: Iterable[tuple[str, Any]] = node
    elif isinstance(node, list):
        children = ((str(i), item) for i, item in enumerate(node))
    else:
        return None
    for name, value in children:
        found = _duplicate(value, f"{path}[{name}]" if path else name)
        if found is not None:
            return found
    return None


def _reject_duplicates(raw: bytes) -> None:
    """Refuse a name given twice in one JSON object: orjson keeps the last value, so
    ``{"amount": 1000, "amount": 5}`` would charge 5 and drop 1000 unseen. orjson cannot
    tell, so the stdlib parser reads the body (orjson accepted it) again keeping every pair,
    and the 400 names the repeated field as ``param``."""
    if raw.count(b'"') < 4:  # fewer than two names: nothing can repeat
        return
    try:
        found = _duplicate(json.loads(raw, object_pairs_hook=_Pairs))
    except (RecursionError, ValueError):  # deeper than the stdlib goes; orjson took it
        return
    if found is not None:
        name, param = found
        raise errors.invalid(
            param,
            f"The request body names {name!r} more than once in one JSON object; give "
            "each field once.",
        )


def reject_unknown(body: Mapping[str, Any], allowed: Iterable[str], prefix: str = "") -> None:
    allowed = set(allowed)
    for name in body:
        if name not in allowed:
            full = f"{prefix}{name}]" if prefix.endswith("[") else f"{prefix}{name}"
            raise errors.invalid(
                full,
                f"Received unknown parameter: {full}. Allowed: "
                f"{', '.join(sorted(allowed)) or 'none'}.",
            )


def integer(
    body: Mapping[str, Any],
    name: str,
    *,
    required: bool = False,
    low: int = 1,
    high: int = MAX_AMOUNT,
    param: str | None = None,
) -> int | None:
    param = param or name
    value = body.get(name)
    if value is None:
        if required:
            raise errors.missing(param)
        return None
    # orjson gives an int only for an integer literal (no fraction or exponent, within 64
    # bits): 1500.0, 1.5e3 and 1e3 are refused alike, as 1.5 is.
    if isinstance(value, bool) or not isinstance(value, int):
        bounds = f" from {low} to {high}" if high < 10**9 else ""
        if isinstance(value, float) and abs(value) >= 2**63:
            # orjson reads an integer literal beyond 64 bits as a float: echoing it back as
            # "1e+23" would blame the caller's digits for an exponent they never wrote
            raise errors.invalid(
                param,
                f"Invalid {param}: the number is far too large; it must be an integer"
                f"{bounds}, written with digits only (no decimal point or exponent).",
            )
        raise errors.invalid(
            param,
            f"Invalid {param}: must be an integer{bounds}, written with digits only (no decimal "
            f"point or exponent); got {_json_type(value)} {orjson.dumps(value).decode()[:40]}.",
        )
    if not low <= value <= high:
        raise errors.invalid(param, f"Invalid {param}: {value} is out of range ({low} to {high}).")
    return value


def _got(value: Any) -> str:
    """``got number 123``: what the caller sent, named as JSON names it (a JSON client never
    wrote an ``int`` or a ``dict``), cut short."""
    return f"got {_json_type(value)} {orjson.dumps(value).decode()[:40]}"


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array"}
    return names.get(type(value), "object")


def text(
    body: Mapping[str, Any],
    name: str,
    *,
    required: bool = False,
    max_len: int = 5000,
    choices: Iterable[str] | None = None,
    param: str | None = None,
) -> str | None:
    param = param or name
    value = body.get(name)
    if value is None:
        if required:
            raise errors.missing(param)
        return None
    if not isinstance(value, str):
        raise errors.invalid(
            param,
            f"Invalid {param}: must be a string (a JSON value in double quotes); {_got(value)}.",
        )
    if len(value) > max_len:
        raise errors.invalid(
            param, f"Invalid {param}: {len(value)} characters; the maximum is {max_len}."
        )
    if choices is not None and value not in choices:
        raise errors.invalid(
            param, f"Invalid {param}: {value!r}; expected one of {', '.join(choices)}."
        )
    if required and not value:
        raise errors.missing(param)
    return value


def url(body: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = text(body, name, required=required, max_len=2048)
    if value is not None and not _URL.match(value):
        raise errors.invalid(name, f"Invalid {name}: {value!r} is not an absolute http(s) URL.")
    if value is not None:
        # what no HTTP client can request (a port that is no number, a broken IPv6 host):
        # webhooks are sent to these URLs, and customers redirected to them
        try:
            port = httpx.URL(value).port
        except httpx.InvalidURL as exc:
            raise errors.invalid(
                name,
                f"Invalid {name}: {value!r} is not a usable URL ({exc}); fix its host or port.",
            ) from None
        if port is not None and not 0 < port <= 65535:
            raise errors.invalid(
                name, f"Invalid {name}: {value!r} has port {port}; ports go from 1 to 65535."
            )
    return value


def email(body: Mapping[str, Any], name: str) -> str | None:
    value = text(body, name, max_len=254)
    if value is not None and not _EMAIL.match(value):
        raise errors.invalid(name, f"Invalid {name}: {value!r} is not an e-mail address.")
    return value


def boolean(body: Mapping[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise errors.invalid(
            name, f"Invalid {name}: must be true or false (JSON booleans); {_got(value)}."
        )
    return value


def metadata(body: Mapping[str, Any], max_keys: int) -> dict[str, Any]:
    value = body.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise errors.invalid(
            "metadata",
            f'Invalid metadata: must be an object of key-value pairs such as {{"order": "42"}}; '
            f"{_got(value)}.",
        )
    if len(value) > max_keys:
        raise errors.invalid(
            "metadata", f"Invalid metadata: {len(value)} keys; the maximum is {max_keys}."
        )
    for key, item in value.items():
        if not key or len(key) > METADATA_KEY_LEN:
            raise errors.invalid(
                f"metadata[{key}]",
                f"Invalid metadata key: keys must have 1 to {METADATA_KEY_LEN} characters.",
            )
        if isinstance(item, str):
            if len(item) > METADATA_VALUE_LEN:
                raise errors.invalid(
                    f"metadata[{key}]",
                    f"Invalid metadata value: at most {METADATA_VALUE_LEN} characters.",
                )
        elif not isinstance(item, int | float | bool) or item is None:
            raise errors.invalid(
                f"metadata[{key}]", "Invalid metadata value: must be a string, number or boolean."
            )
        elif isinstance(item, float) and abs(item) >= 2**53:
            # beyond 2**53 a JSON number is kept as a double, which drops digits (an order
            # number 12345678901234567890123 would come back as 1.2345678901234568e+22)
            raise errors.invalid(
                f"metadata[{key}]",
                "Invalid metadata value: the number is too large to keep exactly; send it as "
                'a string (e.g. "12345678901234567890").',
            )
    return value


def currency(body: Mapping[str, Any], *, required: bool) -> str:
    # no length limit of text(): "4 characters; the maximum is 3" would hide that a code
    # has exactly three letters, and which codes there are
    value = text(body, "currency", required=required)
    if value is None:
        return "MYR"
    if not _CURRENCY.match(value) or value.upper() not in CURRENCIES:
        shown = value if len(value) <= 20 else value[:19] + "\u2026"
        raise errors.invalid(
            "currency",
            f"Invalid currency: {shown!r}; expected a three-letter "
            f"ISO code such as myr ({', '.join(sorted(CURRENCIES))}).",
        )
    return value.upper()


def payment_params(body: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """Validated creation parameters (method data is resolved separately)."""
    reject_unknown(body, PAYMENT_FIELDS[variant])
    params: dict[str, Any] = {
        "amount": integer(body, "amount", required=True),
        "currency": currency(body, required=variant == "B"),
        "description": text(body, "description", max_len=MAX_DESCRIPTION),
        "metadata": metadata(body, METADATA_KEYS[variant]),
    }
    if variant == "A":
        params["success_url"] = url(body, "success_url", required=True)
        params["cancel_url"] = url(body, "cancel_url", required=True)
        params["callback_url"] = url(body, "callback_url")
        return params
    params["capture_method"] = (
        text(body, "capture_method", choices=("automatic", "manual")) or "automatic"
    )
    params["return_url"] = url(body, "return_url")
    params["customer"] = text(body, "customer", max_len=100)
    params["receipt_email"] = email(body, "receipt_email")
    params["save_payment_method"] = boolean(body, "save_payment_method")
    if params["save_payment_method"] and not params["customer"]:
        raise errors.ApiError(
            400,
            "invalid_request_error",
            "parameter_missing",
            "save_payment_method requires customer.",
            param="customer",
        )
    pm = text(body, "payment_method", max_len=100)
    data = body.get("payment_method_data")
    if pm is None and data is None:
        raise errors.ApiError(
            400,
            "invalid_request_error",
            "parameter_missing",
            "Missing required parameter: payment_method or payment_method_data. Give "
            "payment_method (a saved pm_ id) or payment_method_data (type card or fpx, with "
            "its card or fpx object).",
            param="payment_method",
        )
    if pm is not None and data is not None:
        raise errors.invalid(
            "payment_method_data", "Give either payment_method or payment_method_data, not both."
        )
    params["payment_method"] = pm
    params["payment_method_data"] = data
    return params


def card_method(card: Any, livemode: bool, param: str, now: float) -> Method:
    """A card sub-object (number/expiry/cvc or token) -> Method; 402 for unusable cards."""
    if not isinstance(card, dict):
        raise errors.invalid(
            param,
            f"Invalid {param}: must be an object with number, exp_month, exp_year and cvc, or "
            f"with token; {_got(card)}.",
        )
    reject_unknown(card, ("number", "exp_month", "exp_year", "cvc", "token", "name"), f"{param}[")
    text(card, "name", max_len=200, param=f"{param}[name]")
    token = text(card, "token", max_len=100, param=f"{param}[token]")
    if token is not None:
        given = [name for name in ("number", "exp_month", "exp_year", "cvc") if name in card]
        if given:
            # a token carries its own number and expiry: the details given with it would be
            # silently ignored
            raise errors.invalid(
                f"{param}[{given[0]}]",
                f"Give either a token or card details (number, exp_month, exp_year, cvc), not "
                f"both; remove {', '.join(given)} or the token.",
            )
        test = TOKENS.get(token)
        if test is None:
            raise errors.invalid(
                f"{param}[token]",
                f"No such token: {token!r}. Test tokens: {', '.join(sorted(TOKENS))}.",
            )
        number, exp_month, exp_year = test.number, 12, datetime.fromtimestamp(now, UTC).year + 4
    else:
        raw_number = text(card, "number", required=True, max_len=30, param=f"{param}[number]")
        assert raw_number is not None
        number = raw_number.replace(" ", "").replace("-", "")
        month = integer(
            card, "exp_month", required=True, low=-(10**9), high=10**9, param=f"{param}[exp_month]"
        )
        year = integer(
            card, "exp_year", required=True, low=-(10**9), high=10**9, param=f"{param}[exp_year]"
        )
        assert month is not None and year is not None
        exp_month, exp_year = month, year
        cvc = text(card, "cvc", required=True, max_len=10, param=f"{param}[cvc]")
        assert exp_month is not None and exp_year is not None and cvc is not None
        # ASCII digits only: str.isdigit() also passes other scripts' digits ("４２４２")
        if not _DIGITS.fullmatch(number) or not 12 <= len(number) <= 19 or not luhn_ok(number):
            raise errors.card_error(
                "invalid_number",
                "The card number is not a valid card number.",
                param=f"{param}[number]",
            )
        if not 1 <= exp_month <= 12:
            raise errors.card_error(
                "invalid_expiry_month",
                "The card's expiration month is invalid.",
                param=f"{param}[exp_month]",
            )
        today = datetime.fromtimestamp(now, UTC)
        if (
            exp_year < today.year
            or (exp_year == today.year and exp_month < today.month)
            or exp_year > today.year + 50
        ):
            raise errors.card_error(
                "invalid_expiry_year",
                "The card's expiration year is invalid or in the past.",
                param=f"{param}[exp_year]",
            )
        digits = 4 if brand(number) == "amex" else 3
        if not _DIGITS.fullmatch(cvc) or len(cvc) != digits:
            raise errors.card_error(
                "incorrect_cvc",
                f"The card's security code must have {digits} digits.",
                param=f"{param}[cvc]",
            )
    details = {
        "type": "card",
        "brand": brand(number),
        "last4": number[-4:],
        "exp_month": exp_month,
        "exp_year": exp_year,
    }
    test = TEST_CARDS.get(number)
    if livemode and test is not None:
        return Method(
            "card", details, "decline", code="card_declined", decline_code="live_mode_test_card"
        )
    if test is None:
        # a valid non-test number: a real card, which test mode cannot charge
        if not livemode:
            return Method(
                "card", details, "decline", code="card_declined", decline_code="generic_decline"
            )
        return Method("card", details, "succeed")
    return Method("card", details, test.outcome, code=test.code, decline_code=test.decline_code)


def fpx_method(fpx: Any, livemode: bool, param: str) -> Method:
    if not isinstance(fpx, dict):
        raise errors.invalid(
            param,
            f'Invalid {param}: must be an object such as {{"bank_code": "TEST0001"}}; {_got(fpx)}.',
        )
    reject_unknown(fpx, ("bank_code",), f"{param}[")
    code = text(fpx, "bank_code", required=True, max_len=20, param=f"{param}[bank_code]")
    assert code is not None
    if code not in BANKS:
        raise errors.invalid(
            f"{param}[bank_code]", f"Unknown FPX bank_code {code!r}; known: {', '.join(BANKS)}."
        )
    details = {"type": "fpx", "bank_code": code, "bank": BANKS[code]}
    if code in TEST_BANKS and livemode:
        raise errors.ApiError(
            400,
            "invalid_request_error",
            "payment_method_not_available",
            "FPX test banks are not available with a live key.",
            param=f"{param}[bank_code]",
        )
    # every bank, test banks included, sends the customer to its bank page
    return Method("fpx", details, "bank")


def fpx_currency(currency: str) -> None:
    """FPX is Malaysian online banking: it moves ringgit only (400 on ``currency`` otherwise)."""
    if currency.upper() != FPX_CURRENCY:
        raise errors.invalid(
            "currency",
            f"FPX payments must be in MYR (FPX is Malaysian online banking, in ringgit only); "
            f"this payment is in {currency.upper()}. Use currency myr, or a card for "
            f"{currency.upper()}.",
        )


def method_data(data: Any, livemode: bool, now: float) -> Method:
    """``payment_method_data`` (variant B) -> Method."""
    if not isinstance(data, dict):
        raise errors.invalid(
            "payment_method_data",
            "Invalid payment_method_data: must be an object with type and card or fpx; "
            f"{_got(data)}.",
        )
    kind = text(
        data, "type", required=True, choices=("card", "fpx"), param="payment_method_data[type]"
    )
    reject_unknown(data, ("type", kind or ""), "payment_method_data[")
    sub = f"payment_method_data[{kind}]"
    if kind not in data:
        raise errors.missing(sub)
    if kind == "card":
        return card_method(data["card"], livemode, sub, now)
    return fpx_method(data["fpx"], livemode, sub)


def refund_params(body: Mapping[str, Any], variant: str) -> dict[str, Any]:
    reject_unknown(body, REFUND_FIELDS)
    pid = text(body, "payment_id", max_len=100)
    alias = text(body, "payment", max_len=100)
    if pid is not None and alias is not None and pid != alias:
        raise errors.invalid(
            "payment", "payment_id and payment name different payments; give one of them."
        )
    # the name the caller used, for errors about the payment (a 404 on a field not sent
    # would point at nothing)
    param = "payment" if not pid and alias else "payment_id"
    pid = pid or alias
    if pid is None:
        raise errors.missing("payment_id")
    return {
        "payment_id": pid,
        "payment_param": param,
        "amount": integer(body, "amount"),
        "reason": text(body, "reason", choices=REASONS),
        "metadata": metadata(body, 50),
    }


def query(params: Mapping[str, str], allowed: Iterable[str]) -> None:
    """Refuse unknown query parameters, and known ones given twice: a mapping keeps one
    value of ``status=failed&status=pending``, and the other would be dropped unseen."""
    reject_unknown(params, allowed)
    getlist = getattr(params, "getlist", None)
    if getlist is None:
        return
    for name in params:
        count = len(getlist(name))
        if count > 1:
            raise errors.invalid(
                name,
                f"Invalid {name}: given {count} times; give it once (a list filters on one "
                "value: make one request per value).",
            )


def is_date(value: str) -> bool:
    """Whether a time filter is a calendar date alone (``2026-03-01``, no time of day).

    Digits alone are Unix seconds, never a basic-format date (``20260301``)."""
    text = value.strip()
    if not text.isascii() or text.lstrip("-").isdigit():
        return False
    try:
        date.fromisoformat(text.upper())
    except ValueError:
        return False
    return True


def instant(params: Mapping[str, str], name: str, *, end: bool = False) -> float | None:
    """A ``from``/``to`` filter -> Unix seconds. A date alone is a whole UTC day: its first
    instant, or with ``end`` (an exclusive ``to``) the next day's first instant, so that
    ``to=2026-03-01`` includes March 1st."""
    value = params.get(name)
    if value is None:
        return None
    try:
        if not value.isascii():
            # Python reads other scripts' digits as numbers too; the message promises ASCII
            raise ValueError(value)
        ts = parse_instant(value)
        return ts + DAY if end and is_date(value) else ts
    except (ValueError, OverflowError):
        if _SPACE_FOR_PLUS.fullmatch(value):
            # "+08:00" unencoded in a query string: form decoding turns "+" into a space
            stamp, _, offset = value.rpartition(" ")
            raise errors.invalid(
                name,
                f"Invalid {name}: {value!r} has a space where its offset's sign belongs: a '+' "
                "in a query string is read as a space, so send it as %2B (e.g. "
                f"{name}={stamp}%2B{offset}), or use Z (UTC) or a negative offset.",
            ) from None
        raise errors.invalid(
            name,
            f"Invalid {name}: {value!r}; expected ISO 8601 (e.g. "
            "2024-01-31T00:00:00Z) or whole Unix seconds (digits only, e.g. 1706659200).",
        ) from None


def query_int(params: Mapping[str, str], name: str, default: int, high: int) -> int:
    value = params.get(name)
    if value is None:
        return default
    # digits only: int() would also take " 5", "+5", "1_0" and non-ASCII digits
    if not _QUERY_INT.fullmatch(value):
        raise errors.invalid(
            name, f"Invalid {name}: {value!r} is not an integer; use digits only, e.g. {default}."
        )
    # a long number is still a number: "out of range", not "not an integer"
    digits = value.lstrip("-")
    if len(digits) > _QUERY_INT_DIGITS or not 1 <= int(value) <= high:
        shown = value if len(value) <= 20 else value[:19] + "\u2026"
        raise errors.invalid(name, f"Invalid {name}: {shown}; expected 1 to {high}.")
    return int(value)
