"""Arguments and ``GW_*`` environment variables -> the settings of one gateway connection.

Precedence: an explicit argument, then the environment (``GW_API_KEY``, ``GW_BASE_URL``,
``GW_CACHE_DIR``), then the default. With neither a key nor a base URL, gwtools uses the
embedded sandbox (see :mod:`gwtools._embedded`); with only one of them it refuses, saying
which is missing. The key is checked before anything is sent: a key with a character that
cannot be sent in a header (a zero-width space from a copy-paste, a line break, any space or
non-ASCII character), publishable (``pk_``) keys and strings that are not secret keys are
refused, showing at most the masked key. The key is kept out of ``repr`` (also as a
traceback shows a frame's locals: it is held as a :class:`~gwtools._errors.HiddenKey`) and
never written anywhere; a base URL holding a key is refused; the cache directory is named by
``account`` or by a hash of the key.

:func:`check_filters` is the one place that checks what a read selects (``since``, ``until``,
``status``): :meth:`~gwtools.Gateway.payments`, :func:`~gwtools.read_cache` and
``gwtools export`` all use it.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import numbers
import operator
import os
import re
import unicodedata
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal, NamedTuple, TypeVar, cast

import httpx
import platformdirs

from gwtools._errors import (
    ConfigurationError,
    hide_key,
    looks_like_key,
    mask_key,
    redact,
    safe_url,
)

if TYPE_CHECKING:
    import narwhals as nw
    import pandas as pd
    import pyarrow.dataset as ds

__all__ = [
    "SERVICE_VERSIONS",
    "Filters",
    "Settings",
    "check_filters",
    "check_key",
    "check_key_text",
    "check_resource",
    "default_cache_dir",
    "resolve_settings",
]

Mode = Literal["test", "live"]
_T = TypeVar("_T")
SERVICE_VERSIONS = ("2024-01-01", "2023-12-01")
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def default_cache_dir() -> Path:
    """``GW_CACHE_DIR`` if set, else the per-user cache directory (e.g. ``~/.cache/gwtools``)."""
    env = os.environ.get("GW_CACHE_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("gwtools"))


@dataclass(frozen=True)
class Settings:
    """Everything a :class:`~gwtools.Gateway` needs to know to talk and to cache.

    :func:`gwtools.connect` makes it (from arguments and ``GW_*`` variables, key checked) and
    ``gw.settings`` shows it; build one by hand only for ``Gateway(settings, ...)`` in tests.
    ``api_key`` is excluded from ``repr``/``str``; :attr:`masked_key` is what may be shown.
    """

    api_key: str = field(repr=False)
    base_url: str  # the API root, ending in /v1
    cache_dir: Path
    account: str
    mode: Mode
    service_version: str = "2024-01-01"
    embedded: bool = False

    def __post_init__(self) -> None:
        # Settings made by hand too: the key shows masked in any traceback's locals. (Nothing
        # is refused here: a raise would put the generated __init__'s frame, whose locals hold
        # the plain key, in the traceback. The client refuses what cannot be sent.)
        object.__setattr__(self, "api_key", hide_key(self.api_key))

    @property
    def cache_folder(self) -> Path:
        """This connection's datasets, one folder per resource (see :func:`cache_folder`)."""
        return cache_folder(self.cache_dir, self.account, self.mode)

    @property
    def masked_key(self) -> str:
        return mask_key(self.api_key)

    def __repr__(self) -> str:
        return (
            f"Settings(base_url={shown_base_url(self.base_url, self.api_key)!r}, "
            f"key={self.masked_key!r}, "
            f"account={self.account!r}, mode={self.mode!r}, cache_dir={str(self.cache_dir)!r}, "
            f"service_version={self.service_version!r}, embedded={self.embedded})"
        )

    __str__ = __repr__


def _describe(ch: str) -> tuple[str, str]:
    """What an unusable key character is, in words, and what to do about it."""
    code = f"U+{ord(ch):04X}"
    name = unicodedata.name(ch, "").lower()
    if ch in "\r\n":
        return f"a line break ({code})", "the key is one line; check GW_API_KEY or the key file"
    if ch == "\t" or ch == " ":
        what = "a tab" if ch == "\t" else "a space"
        return f"{what} ({code})", "keys have no spaces; check GW_API_KEY or the key file"
    if unicodedata.category(ch) in ("Cc", "Cf", "Zs", "Zl", "Zp") or ch.isspace():
        return (
            f"an invisible character ({name or 'control character'}, {code})",
            "copy the key again from the dashboard (or type it); a copy-paste added it",
        )
    return (
        f"a non-ASCII character ({name or code}, {code})",
        "keys are plain ASCII letters, digits and underscores; copy the key again",
    )


def check_key_text(api_key: str) -> None:
    """Refuse a key that cannot be sent in an ``Authorization`` header, before anything is.

    A key is printable ASCII without spaces. The error shows the masked key (of its usable
    characters) and where the bad character is, never the key itself.
    """
    api_key = hide_key(api_key)  # masked in this frame's locals, shown with a traceback
    if not api_key:
        raise ConfigurationError(
            "the API key is empty; set GW_API_KEY (or the key file) to the secret key, "
            "e.g. sk_test_…",
            param="api_key",
        )
    for i, ch in enumerate(api_key):
        if "!" <= ch <= "~":
            continue
        what, fix = _describe(ch)
        where = (
            "at the start"
            if i == 0
            else "at the end"
            if i == len(api_key) - 1
            else f"at position {i + 1} of {len(api_key)} characters"
        )
        masked = mask_key("".join(c for c in api_key if "!" <= c <= "~"))
        raise ConfigurationError(
            f"the API key ({masked}) has {what} {where}: {fix}. Nothing was sent.",
            param="api_key",
        )


def check_key(api_key: str) -> Mode:
    """The mode of a secret key; refuses publishable and malformed keys with a clear error."""
    api_key = hide_key(api_key)  # masked in this frame's locals, shown with a traceback
    check_key_text(api_key)
    key = api_key
    if key.startswith(("pk_test_", "pk_live_")):
        raise ConfigurationError(
            f"{mask_key(key)} is a publishable key: it can only create payments, so it cannot "
            "list payments or refunds. Use the secret key (sk_test_… or sk_live_…) from the "
            "dashboard, and keep it out of browsers and notebooks' outputs.",
            param="api_key",
        )
    for prefix, mode in (("sk_test_", "test"), ("sk_live_", "live")):
        if key == prefix:
            raise ConfigurationError(
                f"the API key is {prefix} with nothing after it: the secret part is missing "
                f"(a variable left unset, as in GW_API_KEY={prefix}$SECRET?); give the whole "
                "key from the dashboard",
                param="api_key",
            )
        if key.startswith(prefix):
            return cast(Mode, mode)
    raise ConfigurationError(
        f"the API key ({mask_key(key)}) is not a secret key: it must start with sk_test_ "
        "(test mode) or sk_live_ (live mode)",
        param="api_key",
    )


class _KeyedURL(str):
    """A URL that holds an API key, shown without it in a traceback's locals (by repr)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return repr("(a URL holding an API key)")


def hide_url(url: _T, key: str | None = None) -> _T:
    """``url`` as a :class:`_KeyedURL` if it is text that holds a key, else as it is: the
    frames that refuse it then show it masked in a traceback's locals."""
    if isinstance(url, str) and not isinstance(url, _KeyedURL) and _holds_key(url, key):
        return cast(_T, _KeyedURL(url))
    return url


def _holds_key(url: str, key: str | None = None) -> bool:
    """Whether ``url`` holds ``key``, or anything shaped like a key, in any case and even
    percent-encoded: a host is shown lowercased, so a key in another case is still the key."""
    text = urllib.parse.unquote(url).lower()
    # (a key that is not text is refused by the caller's checks)
    if isinstance(key, str) and len(key) >= 8 and key.lower() in text:
        return True
    return looks_like_key(text)


def check_url_holds_no_key(url: str, key: str | None = None) -> None:
    """Refuse a base URL holding ``key`` (or anything shaped like a key) in any form."""
    if _holds_key(url, key):
        raise _key_in_url_error()


def shown_base_url(url: str, key: str | None) -> str:
    """A base URL as a repr shows it; not at all if it holds a key (Settings made by hand skip
    connect()'s check; the client refuses them, but their repr may be shown on the way)."""
    return "(a URL holding an API key)" if _holds_key(url, key) else url


def _key_in_url_error() -> ConfigurationError:
    return ConfigurationError(
        "the base URL holds an API key (in its host, path, user info or query string): a "
        "base URL is sent in every request line and shown in logs and messages, so it must "
        "hold no secret. Give the gateway's address alone (e.g. https://api.example.com) and "
        "pass the key as api_key= or GW_API_KEY (--api-key-file on the command line). Nothing "
        "was sent.",
        param="base_url",
    )


def _shown_url(raw: str, key: str | None) -> str:
    """``raw`` as an error may quote it: user info, query string and fragment hidden (they
    may hold a password or a token), and ``key`` (or anything shaped like a key) masked; a
    URL holding a key in another form (another case, percent-encoded) is not quoted."""
    if _holds_key(raw, key):
        return "(not shown: it holds an API key)"
    shown = re.sub(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@", r"\1", raw)
    shown = re.sub(r"\?[^#]*", "?…", shown, count=1)
    shown = re.sub(r"#.*", "#…", shown, count=1, flags=re.DOTALL)
    return repr(redact(shown, key))


def normalize_base_url(base_url: str, key: str | None = None) -> str:
    """``http://host:port``, ``…/`` or ``…/v1`` -> ``http://host:port/v1``.

    A base URL with a query string (``?…``), a fragment (``#…``) or user info
    (``user:pass@``) is refused rather than quietly cut down: none of them can be sent with
    every request, and the first two would otherwise be dropped. Errors quote the URL with
    those parts hidden and ``key`` (and anything shaped like a key) masked: a key pasted into
    the wrong place must not end up in a message.
    """
    # Before anything else quotes the URL: the key may be there in a form (another case,
    # percent-encoded) that masking would not find.
    base_url = hide_url(base_url, key)
    check_url_holds_no_key(base_url, key)
    raw = base_url.strip()
    shown = _shown_url(raw, key)
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        raise ConfigurationError(
            f"base URL {shown} is not a URL ({redact(str(exc), key)}); use the gateway's "
            "address, e.g. https://api.example.com",
            param="base_url",
        ) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"base URL {shown} must be an absolute http(s) URL such as https://api.example.com",
            param="base_url",
        )
    # httpx.URL reads an empty "?" or "#" as none at all: look at the text too.
    authority = re.match(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)", raw)
    userinfo = bool(url.userinfo) or (authority is not None and "@" in authority.group(1))
    query = bool(url.query) or "?" in raw
    extras = [
        reason
        for reason, present in (
            (
                "a user name or password before '@' (credentials do not belong in a URL, "
                "which is shown in messages and logs)",
                userinfo,
            ),
            (
                "a query string ('?…'; gwtools builds each request's query itself, so it "
                "would be dropped)",
                query,
            ),
            ("a fragment ('#…'; a fragment is never sent)", bool(url.fragment) or "#" in raw),
        )
        if present
    ]
    if extras:
        clean = redact(safe_url(url), key)
        them = "them" if len(extras) > 1 else "it"
        key_hint = ". Pass the key as api_key= or GW_API_KEY, never in the URL"
        raise ConfigurationError(
            f"base URL {shown} has {' and '.join(extras)}: remove {them}, e.g. "
            f"base_url={clean!r}{key_hint if userinfo or query else ''}",
            param="base_url",
        )
    if url.port is not None and not 0 < url.port < 65536:
        raise ConfigurationError(
            f"base URL {shown} has port {url.port}; a port is 1-65535", param="base_url"
        )
    path = url.path.rstrip("/")
    parts = path.split("/")
    ends = [i for i, part in enumerate(parts[:-1]) if part == "v1"]
    if ends and parts[ends[-1] + 1] in RESOURCES:
        # An endpoint's address pasted whole: /v1 would be added after it, and every list
        # would fail with a 404 at the first sync.
        base = redact(safe_url(url.copy_with(path="/".join(parts[: ends[-1] + 1]))), key)
        raise ConfigurationError(
            f"base URL {shown} is the address of an endpoint, not the gateway's: give the part "
            f"up to /v1, e.g. base_url={base!r} (gwtools adds /payments and /refunds itself)",
            param="base_url",
        )
    if not path.endswith("/v1"):
        path = f"{path}/v1"
    return str(url.copy_with(path=path))


def account_name(api_key: str, account: str | None) -> str:
    """``account`` if given (checked to be a safe directory name), else a hash of the key.

    Only ``None`` means "the default": an empty or blank name is refused, for a gateway and
    the embedded sandbox alike, never read as no name.

    The hash is a one-way digest: the cache directory never reveals the key.
    """
    if account is not None:
        if not account.strip():
            raise ConfigurationError(
                f"account={account!r} is {'blank' if account else 'empty'}: it names the "
                "cache's folder, so give it a name, e.g. account='shop-my', or leave account "
                "out for the default folder",
                param="account",
            )
        if looks_like_key(account):
            raise ConfigurationError(
                "account= looks like an API key: it names a folder of the cache, and a key is "
                "never written to disk; pass the key as api_key= (or GW_API_KEY) and name the "
                "account plainly, e.g. account='shop-my'",
                param="account",
            )
        if not _ACCOUNT_RE.fullmatch(account):  # (match lets "shop\n" through: $ and \n)
            raise ConfigurationError(
                f"account {account!r} must be 1-64 letters, digits, '.', '_' or '-' "
                "(it names a directory in the cache)",
                param="account",
            )
        return account
    digest = hashlib.blake2b(api_key.encode(), digest_size=8, person=b"gwtools-acct").hexdigest()
    return f"key-{digest}"


def check_kinds(**given: Any) -> None:
    """Refuse a key, URL, account or folder that is not text (a folder may be a path): a
    number or bytes would fail later, far from the argument, or be shown where a key must
    never be."""
    for name, value in given.items():
        ok = (str, os.PathLike) if name == "cache_dir" else (str,)
        if value is not None and not isinstance(value, ok):
            shown = (
                "bytes" if isinstance(value, bytes) else f"a value of type {type(value).__name__}"
            )
            raise ConfigurationError(
                f"{name} must be text{' or a path' if name == 'cache_dir' else ''}, got {shown}"
                f"{' (decode it first)' if isinstance(value, bytes) else ''}",
                param=name,
            )
        if name == "cache_dir" and isinstance(value, str) and not value.strip():
            # Path("") is the working directory: a cache would land wherever the notebook runs.
            raise ConfigurationError(
                f"cache_dir={value!r} is {'blank' if value else 'empty'}: give the folder, or "
                "leave cache_dir out for GW_CACHE_DIR, else the per-user cache folder",
                param="cache_dir",
            )


def resolve_settings(
    api_key: str | None = None,
    base_url: str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    service_version: str = "2024-01-01",
    account: str | None = None,
) -> Settings | None:
    """Settings from arguments and environment; ``None`` means "use the embedded sandbox"."""
    # The key (and a URL holding one), from here on, show masked in a traceback's locals.
    api_key = hide_key(api_key)
    base_url = hide_url(base_url, api_key)
    check_kinds(api_key=api_key, base_url=base_url, account=account, cache_dir=cache_dir)
    key = hide_key(api_key if api_key is not None else os.environ.get("GW_API_KEY") or None)
    url = base_url if base_url is not None else os.environ.get("GW_BASE_URL") or None
    url = hide_url(url, key)
    if service_version not in SERVICE_VERSIONS:
        raise ConfigurationError(
            f"service_version {service_version!r} is not one the gateway knows; use one of "
            f"{', '.join(SERVICE_VERSIONS)}",
            param="service_version",
        )
    if key is None and url is None:
        return None
    if key is None:
        # Quoted as other errors quote it: no user info, query string or key.
        shown = _shown_url(str(url), None)
        raise ConfigurationError(
            f"a base URL is set ({shown}) but no API key: set GW_API_KEY (or pass api_key=; "
            "--api-key-file on the command line), or unset GW_BASE_URL to use the embedded "
            "sandbox"
        )
    if url is None:
        raise ConfigurationError(
            f"an API key is set ({mask_key(key)}) but no base URL: set GW_BASE_URL (or pass "
            "base_url=; --base-url on the command line) to the gateway's address, e.g. "
            "https://api.example.com"
        )
    mode = check_key(key)
    return Settings(
        api_key=key,
        base_url=normalize_base_url(url, key),
        cache_dir=Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir(),
        account=account_name(key, account),
        mode=mode,
        service_version=service_version,
    )


# -- what a read selects -------------------------------------------------------------------

#: Words people use for a status, mapped to the canonical one they most likely mean. They are
#: not accepted silently (a "declined" filter that quietly meant "failed" would hide that the
#: table has no such word); the error suggests the canonical word instead.
_SYNONYMS: dict[str, dict[str, str]] = {
    "payments": {
        **dict.fromkeys(
            ("declined", "decline", "fail", "failure", "error", "errored", "rejected"), "failed"
        ),
        **dict.fromkeys(
            (
                "paid",
                "success",
                "successful",
                "succeed",
                "complete",
                "completed",
                "captured",
                "settled",
                "approved",
            ),
            "succeeded",
        ),
        **dict.fromkeys(("cancelled", "cancel", "voided", "void"), "canceled"),
        **dict.fromkeys(("requires_capture", "authorised", "auth"), "authorized"),
        **dict.fromkeys(("timeout", "timed_out", "expire"), "expired"),
        "in_progress": "processing",
        "action_required": "requires_action",
    },
    "refunds": {
        **dict.fromkeys(
            (
                "declined",
                "decline",
                "fail",
                "failure",
                "error",
                "rejected",
                "canceled",
                "cancelled",
            ),
            "failed",
        ),
        **dict.fromkeys(
            ("success", "successful", "complete", "completed", "refunded", "done", "paid"),
            "succeeded",
        ),
        **dict.fromkeys(("processing", "in_progress", "requested", "open"), "pending"),
    },
}
#: Outcome words that stand for several payment statuses.
_GROUPS = {
    "open": ("pending", "requires_action", "processing", "authorized"),
    "abandoned": ("canceled", "expired"),
}
#: _schema.RESOURCES, spelled here too: importing _schema loads pandas and pyarrow, which
#: `gwtools --help` and the sandbox must not pay for (a test holds the two together).
RESOURCES: tuple[str, ...] = ("payments", "refunds")


class Filters(NamedTuple):
    """A read's selection, checked: UTC bounds and canonical statuses (``None``: no filter)."""

    since: pd.Timestamp | None
    until: pd.Timestamp | None
    status: tuple[str, ...] | None

    def expressions(self) -> list[nw.Expr]:
        """The selection as Narwhals expressions, run where the data is (pandas, Arrow,
        DuckDB, Spark): ``since <= created_at < until`` and ``status`` among the statuses."""
        import narwhals as nw

        out: list[nw.Expr] = []
        if self.since is not None:
            out.append(nw.col("created_at") >= self.since.to_pydatetime())
        if self.until is not None:
            out.append(nw.col("created_at") < self.until.to_pydatetime())
        if self.status is not None:
            out.append(nw.col("status").is_in(list(self.status)))
        return out

    def arrow(self, *, statuses: bool = False) -> ds.Expression | None:
        """The selection as a Parquet scan filter, so a read skips row groups: the time bounds,
        and with ``statuses`` the statuses too. Leave those out where an id can be in several
        files (an interrupted compaction): the newest version decides, whatever an older one's
        status, so :meth:`apply` takes them after the versions are chosen."""
        import pyarrow as pa
        import pyarrow.dataset as ds

        terms = [
            op(ds.field("created_at"), pa.scalar(t, pa.timestamp("us", "UTC")))
            for op, t in ((operator.ge, self.since), (operator.lt, self.until))
            if t is not None
        ]
        if statuses and self.status is not None:
            terms.append(ds.field("status").isin(list(self.status)))
        return functools.reduce(operator.and_, terms) if terms else None

    def apply(self, table: Any) -> Any:
        """``table`` (pandas or Arrow, any engine Narwhals knows) reduced to the selection."""
        import narwhals as nw

        exprs = self.expressions()
        return nw.from_native(table).filter(*exprs).to_native() if exprs else table


def cache_folder(cache_dir: str | os.PathLike[str], account: str, mode: str) -> Path:
    """``{cache_dir}/{account}/{mode}``: the one rule for where a connection's datasets live
    (live and test data, and accounts, never share a folder)."""
    return Path(cache_dir) / account / mode


def check_resource(resource: object) -> str:
    """``resource`` if it is ``"payments"`` or ``"refunds"``, else a ConfigurationError."""
    if resource not in RESOURCES:
        folded = resource.strip().casefold() if isinstance(resource, str) else None
        meant = [r for r in RESOURCES if folded in (r, r[:-1])]
        hint = f"; did you mean {meant[0]!r}?" if meant else ""
        raise ConfigurationError(
            f"resource={resource!r} is not one gwtools reads: use 'payments' or 'refunds'{hint}",
            param="resource",
        )
    return str(resource)


#: A day and a month, in an order a reader cannot know, before the year (01/10/2026, 1-11-26,
#: 1.10.2026 08:00): pandas takes the first number for the month, so 1 October is 10 January.
_DAY_AND_MONTH_FIRST: Final = re.compile(r"\s*\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}(?!\d)")


def refuse_guessed_date(value: object, name: str | None) -> None:
    """Refuse date text that pandas would read by guessing which number is the day (the
    CLI's date options refuse it too), naming argument ``name`` and the day pandas read."""
    if not isinstance(value, str) or not _DAY_AND_MONTH_FIRST.match(value):
        return
    import pandas as pd

    try:
        read = f" (pandas reads it as {pd.Timestamp(value):%Y-%m-%d}, maybe not the day meant)"
    except (TypeError, ValueError, OverflowError):
        read = ""
    given = f"{name}={value!r}" if name else repr(value)
    raise ConfigurationError(
        f"{given} puts the day and month before the year{read}: give the date as YYYY-MM-DD, "
        "e.g. '2026-10-01', or an ISO 8601 date-time such as '2026-10-01T08:00:00+08:00'",
        param=name,
    )


def _timestamp(value: Any, name: str) -> pd.Timestamp:
    import pandas as pd

    example = "use e.g. '2024-05-01', '2024-05-01T08:00:00+08:00' or a datetime"
    refuse_guessed_date(value, name)
    # A number would be read as nanoseconds since 1970: almost never what was meant.
    if isinstance(value, numbers.Number):  # numpy's numbers too
        raise ConfigurationError(
            f"{name}={value!r} is a number, not a date or time; {example}", param=name
        )
    try:
        ts = pd.Timestamp(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigurationError(
            f"{name}={value!r} is not a date or time ({exc}); {example}", param=name
        ) from None
    if pd.isna(ts):
        raise ConfigurationError(f"{name}={value!r} is not a date or time; {example}", param=name)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


def _statuses(resource: str, status: str | Sequence[str]) -> tuple[str, ...]:
    import difflib

    from gwtools._schema import PAYMENT_STATUSES, REFUND_STATUSES

    allowed: tuple[str, ...] = PAYMENT_STATUSES if resource == "payments" else REFUND_STATUSES
    iterable = isinstance(status, Iterable) and not isinstance(status, str | bytes)
    values = list(status) if iterable else [status]
    if not values:
        raise ConfigurationError(
            f"status={status!r} selects no status at all, so nothing would match; leave status "
            f"out (None) for every status, or name some of: {', '.join(allowed)}",
            param="status",
        )
    out: list[str] = []
    bad: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise ConfigurationError(
                f"status must be a string or a list of strings; got {value!r} "
                f"({type(value).__name__}). Use the canonical {resource} statuses: "
                f"{', '.join(allowed)}",
                param="status",
            )
        # Case and separators do not matter: "FAILED" and "Requires-Action" are unambiguous.
        word = re.sub(r"[\s-]+", "_", value.strip()).casefold()
        if word in allowed:
            out.append(word)
            continue
        if (meant := _SYNONYMS[resource].get(word)) is not None:
            guess = f"did you mean {meant!r}?"
        elif resource == "payments" and word in _GROUPS:
            guess = f"did you mean one of the {word} ones: {', '.join(_GROUPS[word])}?"
        elif resource == "payments" and word == "refunded":
            guess = "refunds are not a payment status: filter on the `refunded` column instead"
        elif close := difflib.get_close_matches(word, allowed, n=1, cutoff=0.75):
            guess = f"did you mean {close[0]!r}?"
        else:
            guess = ""
        bad.append(f"{value!r}{f' ({guess})' if guess else ''}")
    if bad:
        what = (
            f"is not a {resource[:-1]} status"
            if len(bad) == 1
            else f"are not {resource[:-1]} statuses"
        )
        raise ConfigurationError(
            f"status {' and '.join(bad)} {what}; the canonical {resource} statuses are: "
            f"{', '.join(allowed)}",
            param="status",
        )
    return tuple(dict.fromkeys(out))


def check_filters(
    resource: object,
    since: Any = None,
    until: Any = None,
    status: str | Sequence[str] | None = None,
) -> Filters:
    """Check what a read of ``resource`` selects; the one place every reader calls.

    ``since``/``until`` bound ``created_at`` (``since <= created_at < until``), as strings,
    datetimes or dates; naive ones are UTC. ``status`` is one canonical status or several;
    case does not matter. Raises :class:`~gwtools.ConfigurationError` (``param`` names the
    argument) for an unknown status, suggesting the canonical word (``"declined"`` ->
    ``'failed'``), for something that is not a date, and for ``since`` not before ``until``
    (an empty range). Example::

        check_filters("payments", "2024-06-01", None, "FAILED").status   # ('failed',)
    """
    name = check_resource(resource)
    lo = _timestamp(since, "since") if since is not None else None
    hi = _timestamp(until, "until") if until is not None else None
    if lo is not None and hi is not None and lo >= hi:
        # The example is since's own day: a fixed one reads as the value to give.
        day = lo.date()
        example = (
            f": until='{day + dt.timedelta(days=1)}' includes all of {day} (UTC)"
            if day < dt.date.max
            else ""
        )
        raise ConfigurationError(
            f"since ({lo.isoformat()}) is {'after' if lo > hi else 'the same as'} until "
            f"({hi.isoformat()}), so no row can match (since <= created_at < until); "
            f"{'swap them, or ' if lo > hi else ''}move until later (it is exclusive{example})",
            param="since",
        )
    return Filters(lo, hi, _statuses(name, status) if status is not None else None)
