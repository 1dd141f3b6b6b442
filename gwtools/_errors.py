"""Exceptions raised by gwtools, and the one function that maps a gateway response to one.

The hierarchy (catch :class:`GatewayError` to handle everything)::

    GatewayError                    every gwtools error; .type .code .param .http_status
    │                               .request_id .decline_code .url .message
    ├── ConfigurationError          (also ValueError) a missing or unusable key / base URL,
    │   │                           or any argument a gwtools function cannot use (a status,
    │   │                           a date, a resource, a missing optional extra); raised
    │   │                           before any request is sent
    │   └── AmbiguousCacheError     a cache folder holds several accounts or modes and the
    │                               read named none (.datasets lists them)
    ├── InvalidRecordError          (also ValueError) objects given to normalize_payments/
    │                               normalize_refunds that cannot become rows
    ├── APIConnectionError          the gateway could not be reached (timeouts, refused or
    │                               dropped connections) even after retries
    ├── AuthenticationError         401: invalid, revoked or publishable key
    ├── InvalidRequestError         400 / 409: bad parameter, wrong state, version refused
    │   └── NotFoundError           404: no such id; for a list (or a 404 that is not the
    │                               gateway's JSON), a base URL whose path is wrong
    ├── CardError                   402: the card was declined (.decline_code)
    ├── RateLimitError              429 that persisted through every retry, or that asked
    │                               for a longer wait than gwtools waits (.retry_after)
    ├── APIError                    5xx, or an answer that is not the JSON it should be,
    │   │                           that persisted through every retry; a redirect (3xx,
    │   │                           never followed: the message names where it points)
    │   └── MalformedBodyError      a 200 whose body is not the JSON the endpoint answers
    │                               (.snippet: its first 200 characters, key masked)
    ├── CacheError                  (also OSError) the local cache cannot be written or read:
    │   │                           full disk, read-only folder, a path that is not a folder
    │   └── CacheNotFoundError      (also FileNotFoundError) nothing cached where a read
    │                               looked: sync first, or point at the cache folder
    │                               (.datasets: what the folder does hold)
    └── ResultTooLargeError         (also MemoryError) a table asked for in memory outgrew
                                    what one result may take (``GW_MAX_RESULT_MEMORY``):
                                    filter it first, or keep it lazy

Use :func:`error_from_response` to turn any non-2xx :class:`httpx.Response` into the right
exception: it is the only place that knows the mapping. Messages never contain an API key or a
query string; keys are shown, at most, as ``sk_test_…abcd`` (:func:`mask_key`). Nothing a
:class:`GatewayError` holds leads back to the key either: no attribute, ``args`` or
``__cause__``/``__context__`` holds a request (whose headers carry the key); an underlying
error is kept only as a summary, its class name and its message with any key masked
(:func:`summarize`).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import math
import re
import time
from typing import Any, TypeVar, cast

import httpx
import orjson

__all__ = [
    "APIConnectionError",
    "APIError",
    "AmbiguousCacheError",
    "AuthenticationError",
    "CacheError",
    "CacheNotFoundError",
    "CardError",
    "ConfigurationError",
    "GatewayError",
    "HiddenKey",
    "InvalidRecordError",
    "InvalidRequestError",
    "MalformedBodyError",
    "NotFoundError",
    "RateLimitError",
    "ResultTooLargeError",
    "error_from_response",
    "hide_key",
    "mask_key",
    "redact",
    "safe_url",
    "summarize",
]

_T = TypeVar("_T")

#: Anything shaped like one of the gateway's keys (prefix and at least 8 letters or digits):
#: masked in every GatewayError's text, whoever built it, as a last line of defence.
_KEY_SHAPED = re.compile(r"(?<![A-Za-z0-9])(?:sk|pk|rk)_(?:test|live)_[A-Za-z0-9]{8,}")


def looks_like_key(text: str) -> bool:
    """Whether ``text`` holds something shaped like an API key (``sk_test_…`` and the like)."""
    return _KEY_SHAPED.search(text) is not None


def mask_key(key: str | None) -> str:
    """Show an API key the only way gwtools ever shows one: its prefix and last four characters.

    >>> mask_key("sk_test_51abcdefghijkl1234")
    'sk_test_…1234'
    """
    if not key:
        return "<none>"
    if not isinstance(key, str):  # called on error paths: never fail there, never show more
        key = (
            bytes(key).decode("ascii", "replace")
            if isinstance(key, bytes | bytearray)
            else str(key)
        )
    prefix = ""
    for candidate in ("sk_test_", "sk_live_", "pk_test_", "pk_live_"):
        if key.startswith(candidate):
            prefix = candidate
            break
    tail = key[-4:] if len(key) - len(prefix) >= 8 else ""
    return f"{prefix}…{tail}"


class HiddenKey(str):
    """An API key that is itself in every way but its ``repr``, which is the masked key.

    A traceback's locals (pytest's ``--showlocals``, rich's ``show_locals``, ``traceback`` with
    ``capture_locals``, debuggers, error reporters) print variables by ``repr``: every gwtools
    frame that holds the key holds it as a HiddenKey, so those show ``'sk_test_…abcd'``.
    ``str()``, f-strings, comparison and hashing give the key itself (it is sent that way).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(mask_key(self))


class _HiddenBytes(bytes):
    """A key given as bytes (refused: keys are text), shown masked by ``repr`` meanwhile."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"b{mask_key(self.decode('ascii', errors='replace'))!r}"


def hide_key(key: _T) -> _T:
    """``key`` as a :class:`HiddenKey` if it is text (bytes, which the checks then refuse,
    likewise); anything else as it is."""
    if isinstance(key, str) and not isinstance(key, HiddenKey):
        return cast(_T, HiddenKey(key))
    if isinstance(key, bytes) and not isinstance(key, _HiddenBytes):
        return cast(_T, _HiddenBytes(key))
    return key


def redact(text: str, *keys: str | None) -> str:
    """``text`` with each of ``keys`` (and anything shaped like a key) shown as :func:`mask_key`.

    Use it on any text that may have seen a key: another library's error message, a body the
    gateway (or a proxy) sent back.
    """
    if not isinstance(text, str):  # a body or an error given as it came: bytes, None, ...
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    for key in keys:
        if key and len(key) >= 4:
            text = text.replace(key, mask_key(key))
    return _KEY_SHAPED.sub(lambda m: mask_key(m.group(0)), text)


def summarize(exc: BaseException, *keys: str | None) -> str:
    """A safe one-line summary of an underlying error: its class name and redacted message.

    What a GatewayError keeps of an httpx (or other) error instead of chaining it: chaining
    would keep the request, and the request's headers hold the key.
    """
    said = redact(str(exc), *keys)
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _key_of(request: httpx.Request) -> str | None:
    """The bearer key a request was sent with (to redact it from what came back)."""
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return None
    return hide_key(key.strip()) or None


def safe_url(url: httpx.URL | str) -> str:
    """The URL without its query string or user info, safe to put in a message or a log."""
    u = httpx.URL(str(url))
    return str(u.copy_with(query=None, fragment=None, userinfo=b""))


class GatewayError(Exception):
    """Root of every gwtools error. Carries what the gateway said, when it said anything."""

    def __init__(
        self,
        message: str,
        *,
        type: str | None = None,
        code: str | None = None,
        param: str | None = None,
        http_status: int | None = None,
        request_id: str | None = None,
        decline_code: str | None = None,
        url: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        message = redact(message)
        super().__init__(message)
        self.message = message
        self.type = _redacted(type)
        self.code = _redacted(code)
        self.param = _redacted(param)
        self.http_status = http_status
        self.request_id = _redacted(request_id)
        self.decline_code = _redacted(decline_code)
        self.url = _redacted(url)
        self.retry_after = retry_after

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{k}={v!r}"
            for k, v in (
                ("http_status", self.http_status),
                ("type", self.type),
                ("code", self.code),
                ("param", self.param),
                ("request_id", self.request_id),
            )
            if v is not None
        )
        return f"{type(self).__name__}({self.message!r}{', ' if fields else ''}{fields})"


def _redacted(value: str | None) -> str | None:
    return redact(value) if isinstance(value, str) else value


class ConfigurationError(GatewayError, ValueError):
    """The key or base URL given (or missing), or another argument, cannot work; nothing was
    sent."""


class InvalidRecordError(GatewayError, ValueError):
    """Objects given to ``normalize_payments``/``normalize_refunds`` that cannot become rows
    (no id, no creation time, not an object); the message lists them."""


class APIConnectionError(GatewayError):
    """The gateway could not be reached, even after retrying."""


class AuthenticationError(GatewayError):
    """401: the key is invalid, revoked, or not allowed to do this."""


class InvalidRequestError(GatewayError):
    """400 or 409: a parameter is missing or invalid, or the object is in the wrong state."""


class NotFoundError(InvalidRequestError):
    """404: the id does not exist (in this mode); for a list, or a 404 that is not the
    gateway's error object, the base URL's path is wrong (the message says which to use)."""


class CardError(GatewayError):
    """402: the card was declined; see ``decline_code``."""


class RateLimitError(GatewayError):
    """429 that persisted through every retry (the message says how many attempts), or that
    asked for a longer wait than the client waits out (the message says how long, and when to
    sync again); ``retry_after`` is the wait asked for, in seconds."""


class APIError(GatewayError):
    """The gateway failed (5xx) or answered with something that is not the expected JSON, or
    redirected (3xx: not followed; the message names the ``Location`` to use instead)."""


class MalformedBodyError(APIError):
    """A 200 whose body is not the JSON the endpoint answers, even after retries.

    ``snippet`` holds the body's first 200 characters (any key masked), for a bug report.
    """

    def __init__(self, message: str, *, url: str, snippet: str) -> None:
        super().__init__(message, type="api_error", code="malformed_body", http_status=200, url=url)
        self.snippet = redact(snippet)


class CacheError(GatewayError, OSError):
    """The local Parquet cache cannot be written or read (full disk, read-only folder, a path
    that is a file). The message names the folder and what to do; nothing was lost.

    ``path``: the part file the error is about (one that cannot be read), as its filesystem
    names it, when it is about one; else None."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class CacheNotFoundError(CacheError, FileNotFoundError):
    """Nothing is cached where a read looked: run a sync first, or pass the cache's folder.

    Raised by a read of a cache folder (``read_cache``, ``scan_cache``), it says what it
    found: ``resource`` and ``where`` (the folder, or URL) looked in, ``datasets`` the
    ``(account, mode)`` pairs that folder does hold for that resource, each to its dataset
    folder (empty when it holds none), and ``is_file`` when the path given is a file."""

    def __init__(
        self,
        message: str,
        *,
        resource: str | None = None,
        where: str | None = None,
        datasets: dict[tuple[str, str], str] | None = None,
        is_file: bool = False,
    ) -> None:
        super().__init__(message)
        self.resource, self.where = resource, where
        self.datasets = datasets or {}
        self.is_file = is_file


class AmbiguousCacheError(ConfigurationError):
    """A cache folder holds several datasets of the resource read (accounts, or test and live
    mode) and the read named none: pass ``account=`` and ``mode=``, or one dataset's folder.
    ``resource``, ``where`` and ``datasets`` (each matching ``(account, mode)`` to its dataset
    folder) say what was found, so a caller can offer the choice in its own terms."""

    def __init__(
        self, message: str, *, resource: str, where: str, datasets: dict[tuple[str, str], str]
    ) -> None:
        super().__init__(message)
        self.resource, self.where, self.datasets = resource, where, datasets


class ResultTooLargeError(GatewayError, MemoryError):
    """A table asked for in memory (``read_cache``, ``payments()``, a row-level analysis of a
    lazy table) grew past what one result may take (:mod:`gwtools._memory`); it was stopped
    before the machine ran out. The message says how far it got and what to do."""


_BY_TYPE: dict[str, type[GatewayError]] = {
    "authentication_error": AuthenticationError,
    "invalid_request_error": InvalidRequestError,
    "card_error": CardError,
    "rate_limit_error": RateLimitError,
    "api_error": APIError,
}

_ADVICE: dict[type[GatewayError], str] = {
    AuthenticationError: (
        "check the secret key (GW_API_KEY or --api-key-file): it must be an sk_test_/sk_live_ "
        "key of this gateway that is neither revoked nor rolled more than 24 hours ago"
    ),
    InvalidRequestError: (
        "the gateway refused the request as sent (see what it said); retrying the same request "
        "will fail again"
    ),
    NotFoundError: "check the id and that the key's mode (test/live) matches the object's",
    CardError: "the customer should use another payment method; this is not a bug in your code",
    RateLimitError: "wait a little and retry, or lower max_rps= in gwtools.connect()",
    APIError: "the gateway failed; retry later, and report the request id if it persists",
}


#: Advice for an InvalidRequestError (400/409) by its code, where the code says more than
#: the parameter does; one that names a parameter otherwise gets :data:`_PARAM_ADVICE`.
_CODE_ADVICE: dict[str, str] = {
    "invalid_state": (
        "the object's current state does not allow this (e.g. a refund of a payment that is "
        "not captured); retrieve the object to see its status, and retry only once it allows "
        "this"
    ),
    "amount_too_large": (
        "the amount is more than what is left (e.g. to refund); retrieve the payment to see "
        "its amounts, and ask for at most what is left"
    ),
    "idempotency_key_reused": (
        "this Idempotency-Key was already used with a different request body; send a new "
        "request with a new key (the same body with the same key replays the first answer)"
    ),
    "idempotency_key_in_use": (
        "a request with the same Idempotency-Key is still running; wait for it to finish, "
        "then send this one again"
    ),
}
_PARAM_ADVICE = "fix the parameter named above; retrying the same request will fail again"


def _version_advice(request: httpx.Request) -> str:
    """What to do when the gateway refuses the ``Service-Version`` gwtools pinned: no user
    wrote that header, so name the option that sets it."""
    from gwtools._config import SERVICE_VERSIONS  # (_config imports this module)

    sent = request.headers.get("Service-Version", "")
    current = SERVICE_VERSIONS[0]
    other = (
        f'use service_version="{current}" in gwtools.connect() (the current version)'
        if sent != current
        else "check the gateway's documentation for the version it answers now"
    )
    return (
        f"gwtools sent Service-Version {redact(sent)[:40]!r}, from connect()'s service_version= "
        f"(the versions the gateway accepts may be in its message above); {other}"
    )


def _status_class(status: int) -> type[GatewayError]:
    if status == 401 or status == 403:
        return AuthenticationError
    if status == 402:
        return CardError
    if status == 404:
        return NotFoundError
    if status == 429:
        return RateLimitError
    if 400 <= status < 500:
        return InvalidRequestError
    return APIError


def _error_body(content: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(content)
    except orjson.JSONDecodeError:
        return {}
    err = body.get("error") if isinstance(body, dict) else None
    return err if isinstance(err, dict) else {}


def _json_text(value: object) -> str:
    """A JSON value of an error body as the JSON text it was sent as."""
    return orjson.dumps(value).decode()


def _seconds(raw: object, now: float) -> float | None:
    """A ``Retry-After`` value as seconds to wait: a number of seconds, or an HTTP date
    (``Wed, 21 Oct 2026 07:28:00 GMT``, RFC 9110) counted from ``now`` (Unix seconds); ``None``
    if it is neither (or not finite)."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        value = float(raw)
    except ValueError:
        assert isinstance(raw, str)
        try:
            when = email.utils.parsedate_to_datetime(raw.strip())
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:  # an HTTP date is GMT; one written with "-0000" comes naive
            when = when.replace(tzinfo=dt.UTC)
        value = when.timestamp() - now
    return max(0.0, value) if math.isfinite(value) else None


def seconds_until_reset(headers: Any, now: float) -> float | None:
    """Seconds from ``now`` (Unix seconds) to ``X-RateLimit-Reset`` (Unix seconds); ``None``
    without one, or if it is not in the future."""
    try:
        left = float(headers.get("X-RateLimit-Reset")) - now
    except (TypeError, ValueError):
        return None
    return left if math.isfinite(left) and left > 0 else None


def _retry_after(response: httpx.Response, err: dict[str, Any], now: float) -> float | None:
    """How long the gateway asks to wait: ``Retry-After`` (seconds or an HTTP date), else
    ``error.retry_after``, else (for a 429) until ``X-RateLimit-Reset``."""
    for raw in (response.headers.get("Retry-After"), err.get("retry_after")):
        if (wait := _seconds(raw, now)) is not None:
            return wait
    if response.status_code == 429:
        return seconds_until_reset(response.headers, now)
    return None


#: The API's prefix: gwtools adds it to every base URL, so a request's path up to its last
#: ``/v1/`` is the path the base URL was given.
_API_PREFIX = "/v1/"


def _api_root(url: httpx.URL) -> tuple[str, str | None]:
    """A request URL's origin (``https://host:port``) and the path the base URL added before
    ``/v1`` (``"/api"``; ``""`` at the root; ``None`` if the URL has no ``/v1/``)."""
    origin = safe_url(url.copy_with(path="")).rstrip("/")
    before, found, _ = url.path.rpartition(_API_PREFIX)
    return origin, before if found else None


def _base_url_advice(url: httpx.URL, key: str | None) -> str:
    """What to do when nothing at the base URL's path is the gateway's API."""
    origin, extra = _api_root(url)
    origin = redact(origin, key)
    if extra:
        return (
            f"use the base URL without the extra path {redact(extra, key)!r}: "
            f"base_url={origin!r} (gwtools adds /v1 itself); if the gateway really is under "
            f"{redact(extra, key)}, check the address in its documentation"
        )
    return (
        f"check that the base URL ({origin}) is the gateway's API address and not another "
        "site on that host (gwtools adds /v1 itself)"
    )


def _redirect_message(response: httpx.Response, url: str, key: str | None) -> str:
    """The message of a 3xx: where it points, and the base URL to use instead."""
    request = response.request
    status = f"{response.status_code} {response.reason_phrase or ''}".strip()
    location = response.headers.get("Location")
    if not location:
        return (
            f"{status} from {request.method} {url} without a Location header: this address "
            "is not the gateway's API. What to do: check the base URL (gwtools adds /v1 "
            "itself); gwtools does not follow redirects."
        )
    try:
        target = request.url.join(location)
    except httpx.InvalidURL:
        return (
            f"{status} from {request.method} {url} redirects to an address that is not a URL "
            f"({redact(location, key)!r}). What to do: check the base URL; gwtools does not "
            "follow redirects."
        )
    shown = redact(safe_url(target), key)
    # The same API path on the new address gives the base URL to use: http://gw/v1/payments
    # -> https://gw/v1/payments means base_url='https://gw'.
    _, found, rest = request.url.path.rpartition(_API_PREFIX)
    suffix = f"{_API_PREFIX}{rest}" if found else None
    if suffix and target.path.endswith(suffix):
        base = safe_url(target.copy_with(path=target.path[: -len(suffix)]))
        fix = f"use base_url={redact(base.rstrip('/'), key)!r}, where the redirect points"
    else:
        fix = (
            "use the address it points to as base_url (without its /v1/... part) if that is "
            "the gateway's API, else check the address in the gateway's documentation"
        )
    scheme = request.url.scheme, target.scheme
    why = f" ({scheme[0]} -> {scheme[1]})" if scheme[0] != scheme[1] else ""
    return (
        f"{status} from {request.method} {url}: it redirects to {shown}{why}, and gwtools "
        "does not follow redirects (the API key must not be sent on to another address). "
        f"What to do: {fix}."
    )


def error_from_response(
    response: httpx.Response, *, listing: bool = False, now: float | None = None
) -> GatewayError:
    """Map a non-2xx gateway response to the exception named after its error type.

    The error ``type`` in the body decides the class (404s become :class:`NotFoundError`);
    without a usable body the HTTP status decides. The message names the status, the
    method and URL (no query string), what the gateway said, and what to do.

    ``listing``: the request was for a list (not one object by id). A list is always there,
    so a 404 for one, or a 404 whose body is not the gateway's error object, says the base
    URL's path is wrong, and the advice says so instead of talking about ids. A redirect
    (3xx) is an :class:`APIError` naming where it points and the base URL to use.

    ``retry_after`` is the wait the gateway asks for (``Retry-After`` in seconds or as an
    HTTP date, else ``error.retry_after``, else for a 429 until ``X-RateLimit-Reset``),
    counted from ``now`` (Unix seconds; default: this machine's clock).
    """
    request = response.request
    key = _key_of(request)
    url = redact(safe_url(request.url), key)
    status = response.status_code
    if 300 <= status < 400:
        return APIError(_redirect_message(response, url, key), http_status=status, url=url)
    # What the gateway (or a proxy in between) said may echo the key: redact every string,
    # and keep a field that is a JSON object or list (a proxy echoing the request's headers
    # there) only as its redacted JSON text, so no attribute holds the echo itself.
    err: dict[str, Any] = {
        k: v
        if v is None or isinstance(v, bool | int | float)
        else redact(v if isinstance(v, str) else _json_text(v), key)
        for k, v in _error_body(response.content).items()
    }
    for name in ("code", "param", "decline_code"):
        # Text fields (compared and matched as text): a number the gateway sent there too.
        if isinstance(err.get(name), int | float) and not isinstance(err[name], bool):
            err[name] = str(err[name])
    etype = err.get("type") if isinstance(err.get("type"), str) else None
    cls = _BY_TYPE.get(etype or "", _status_class(status))
    if cls is InvalidRequestError and status == 404:
        cls = NotFoundError
    said = err.get("message") if isinstance(err.get("message"), str) else None
    gateway_shaped = etype is not None or said is not None
    if said is None and any(isinstance(err.get(k), str) for k in ("code", "param")):
        gateway_shaped = True  # its own error object, only without the (optional) message
        said = "the gateway gave no message"
    elif said is None:
        said = "the body is not a gateway error object" if response.content else "empty body"
    details = ", ".join(
        f"{k}={err[k]}" for k in ("type", "code", "param", "decline_code") if err.get(k)
    )
    request_id = response.headers.get("Request-Id") or response.headers.get("X-Request-Id")
    request_id = redact(request_id, key) if request_id else None
    advice = _ADVICE.get(cls, _ADVICE[APIError])
    if cls is InvalidRequestError:
        code = err.get("code")
        by_code = _CODE_ADVICE.get(code) if isinstance(code, str) else None
        advice = by_code or (_PARAM_ADVICE if err.get("param") else advice)
        if str(err.get("param")).lower() == "service-version":
            advice = _version_advice(request)
    diagnosis = ""
    if status == 404 and (listing or not gateway_shaped):
        diagnosis = " The base URL's path looks wrong: " + (
            "the gateway always has this list, so nothing at this URL is its API."
            if listing
            else "this answer is not the gateway's JSON error, so something else answered."
        )
        advice = _base_url_advice(request.url, key)
    # The gateway's words as it wrote them; only a final full stop goes, since ours follows.
    said = said.strip().removesuffix(".")
    head = " ".join(p for p in (str(status), response.reason_phrase) if p)
    message = (
        f"{head} from {request.method} {url}: {said}"
        f"{f' ({details})' if details else ''}"
        f"{f' [request id {request_id}]' if request_id else ''}.{diagnosis} "
        f"What to do: {advice}."
    )
    return cls(
        message,
        type=etype,
        code=err.get("code"),
        param=err.get("param"),
        http_status=status,
        request_id=request_id,
        decline_code=err.get("decline_code"),
        url=url,
        retry_after=_retry_after(response, err, time.time() if now is None else now),
    )


# Tracebacks and reprs name the errors where users import them from, `gwtools.X` (httpx's
# rule), even when one is raised before any public name was used: gwtools/__init__.py loads
# its names only on first use.
for _error in [v for v in list(globals().values()) if isinstance(v, type)]:
    if issubclass(_error, GatewayError):
        _error.__module__ = "gwtools"
del _error
