"""Arguments and ``GW_*`` environment variables -> the settings of one gateway connection.

Precedence: an explicit argument, then the environment (``GW_API_KEY``, ``GW_BASE_URL``,
``GW_CACHE_DIR``), then the default. With neither a key nor a base URL, gwtools uses the
embedded sandbox (see :mod:`gwtools._embedded`); with only one of them it refuses, saying
which is missing. The key is checked before anything is sent: publishable (``pk_``) keys and
strings that are not secret keys are refused. The key is kept out of ``repr`` and never
written anywhere; the cache directory is named by ``account`` or by a hash of the key.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx
import platformdirs

from gwtools._errors import ConfigurationError, mask_key

__all__ = ["SERVICE_VERSIONS", "Settings", "default_cache_dir", "resolve_settings"]

Mode = Literal["test", "live"]
SERVICE_VERSIONS = ("2024-01-01", "2023-12-01")
_ACCOUNT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def default_cache_dir() -> Path:
    """``GW_CACHE_DIR`` if set, else the per-user cache directory (e.g. ``~/.cache/gwtools``)."""
    env = os.environ.get("GW_CACHE_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_cache_dir("gwtools"))


@dataclass(frozen=True)
class Settings:
    """Everything a :class:`~gwtools.Gateway` needs to know to talk and to cache.

    ``api_key`` is excluded from ``repr``/``str``; :attr:`masked_key` is what may be shown.
    """

    api_key: str = field(repr=False)
    base_url: str  # the API root, ending in /v1
    cache_dir: Path
    account: str
    mode: Mode
    service_version: str = "2024-01-01"
    embedded: bool = False

    @property
    def masked_key(self) -> str:
        return mask_key(self.api_key)

    def __repr__(self) -> str:
        return (
            f"Settings(base_url={self.base_url!r}, key={self.masked_key!r}, "
            f"account={self.account!r}, mode={self.mode!r}, cache_dir={str(self.cache_dir)!r}, "
            f"service_version={self.service_version!r}, embedded={self.embedded})"
        )

    __str__ = __repr__


def check_key(api_key: str) -> Mode:
    """The mode of a secret key; refuses publishable and malformed keys with a clear error."""
    key = api_key.strip()
    if key != api_key or not key:
        raise ConfigurationError(
            "the API key is empty or has surrounding whitespace; set GW_API_KEY (or the key "
            "file) to the secret key exactly, e.g. sk_test_…"
        )
    if key.startswith(("pk_test_", "pk_live_")):
        raise ConfigurationError(
            f"{mask_key(key)} is a publishable key: it can only create payments, so it cannot "
            "list payments or refunds. Use the secret key (sk_test_… or sk_live_…) from the "
            "dashboard, and keep it out of browsers and notebooks' outputs."
        )
    if key.startswith("sk_test_"):
        return "test"
    if key.startswith("sk_live_"):
        return "live"
    raise ConfigurationError(
        f"the API key ({mask_key(key)}) is not a secret key: it must start with sk_test_ "
        "(test mode) or sk_live_ (live mode)"
    )


def normalize_base_url(base_url: str) -> str:
    """``http://host:port``, ``…/`` or ``…/v1`` -> ``http://host:port/v1``."""
    raw = base_url.strip()
    try:
        url = httpx.URL(raw)
    except httpx.InvalidURL as exc:
        raise ConfigurationError(f"base URL {raw!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigurationError(
            f"base URL {raw!r} must be an absolute http(s) URL such as https://api.example.com"
        )
    if url.query or url.userinfo:
        raise ConfigurationError(
            "the base URL must not carry a query string or credentials; pass the key as "
            "api_key= or GW_API_KEY instead"
        )
    path = url.path.rstrip("/")
    if not path.endswith("/v1"):
        path = f"{path}/v1"
    return str(url.copy_with(path=path))


def account_name(api_key: str, account: str | None) -> str:
    """``account`` if given (checked to be a safe directory name), else a hash of the key.

    The hash is a one-way digest: the cache directory never reveals the key.
    """
    if account is not None:
        if not _ACCOUNT_RE.match(account):
            raise ConfigurationError(
                f"account {account!r} must be 1-64 letters, digits, '.', '_' or '-' "
                "(it names a directory in the cache)"
            )
        return account
    digest = hashlib.blake2b(api_key.encode(), digest_size=8, person=b"gwtools-acct").hexdigest()
    return f"key-{digest}"


def resolve_settings(
    api_key: str | None = None,
    base_url: str | None = None,
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    service_version: str = "2024-01-01",
    account: str | None = None,
) -> Settings | None:
    """Settings from arguments and environment; ``None`` means "use the embedded sandbox"."""
    key = api_key if api_key is not None else os.environ.get("GW_API_KEY") or None
    url = base_url if base_url is not None else os.environ.get("GW_BASE_URL") or None
    if service_version not in SERVICE_VERSIONS:
        raise ConfigurationError(
            f"service_version {service_version!r} is not one the gateway knows; use one of "
            f"{', '.join(SERVICE_VERSIONS)}"
        )
    if key is None and url is None:
        return None
    if key is None:
        raise ConfigurationError(
            f"a base URL is set ({url}) but no API key: set GW_API_KEY or pass api_key=, "
            "or unset GW_BASE_URL to use the embedded sandbox"
        )
    if url is None:
        raise ConfigurationError(
            f"an API key is set ({mask_key(key)}) but no base URL: set GW_BASE_URL or pass "
            "base_url= (the gateway's address, e.g. https://api.example.com)"
        )
    mode = check_key(key)
    return Settings(
        api_key=key,
        base_url=normalize_base_url(url),
        cache_dir=Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir(),
        account=account_name(key, account),
        mode=mode,
        service_version=service_version,
    )
