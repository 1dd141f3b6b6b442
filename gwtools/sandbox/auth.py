"""API keys: lookup with a cache, 24 h grace after rolling, ``pk_`` limits, IP allowlists."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final

from gwtools.sandbox import errors
from gwtools.sandbox.store import Store

ROLL_GRACE: Final = 24 * 3600
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Auth:
    """Who a request acts for: the key's account and mode."""

    key: str
    account: str
    kind: str  # "secret" or "publishable"
    livemode: bool
    expires_at: float | None
    allowlist: tuple[Network, ...] | None


#: The prefixes a key may be shown with: the kinds the gateway issues.
KEY_PREFIXES: Final = ("sk_test_", "sk_live_", "pk_test_", "pk_live_")


def mask(key: str) -> str:
    """``sk_test_…abcd``: the most of a key the sandbox ever shows, by gwtools' own rule
    (``gwtools.mask_key``): a prefix only if it is a kind of key, and the last four characters
    only after eight or more, so a short or foreign secret (a password sent by mistake) is not
    shown whole."""
    prefix = next((p for p in KEY_PREFIXES if key.startswith(p)), "")
    tail = key[-4:] if len(key) - len(prefix) >= 8 else ""
    return f"{prefix}…{tail}"


def parse_networks(items: object) -> tuple[Network, ...]:
    """Allowlist entries (IPv4/IPv6 addresses or CIDR ranges) -> networks; 400 on a bad entry."""
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise errors.invalid("ips", "ips must be a list of IP addresses or CIDR ranges.")
    nets = []
    for item in items:
        try:
            nets.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise errors.invalid(
                "ips",
                f"{item!r} is not an IP address or CIDR range (e.g. 10.0.0.0/8, 2001:db8::/32).",
            ) from None
    return tuple(nets)


def ip_allowed(client_ip: str | None, allowlist: tuple[Network, ...]) -> bool:
    if client_ip is None:
        return False
    try:
        ip = ipaddress.ip_address(client_ip)
    except ValueError:
        return False
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [ip]
    # an IPv4 client also matches its IPv4-mapped IPv6 form, and the other way round
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        candidates.append(ip.ipv4_mapped)
    elif isinstance(ip, ipaddress.IPv4Address):
        candidates.append(ipaddress.IPv6Address(f"::ffff:{ip}"))
    return any(c in net for c in candidates for net in allowlist if c.version == net.version)


class Keys:
    """Authenticates bearer keys against the store, caching what it read."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._cache: dict[str, Auth | None] = {}

    def forget(self) -> None:
        self._cache.clear()

    def lookup(self, key: str) -> Auth | None:
        if key in self._cache:
            return self._cache[key]
        row = self.store.key(key)
        auth = None
        if row is not None:
            account, kind, livemode, expires_at, ips = row
            auth = Auth(
                key, account, kind, livemode, expires_at, None if not ips else parse_networks(ips)
            )
        if len(self._cache) > 100_000:
            self._cache.clear()
        self._cache[key] = auth
        return auth

    def authenticate(self, header: str | None, client_ip: str | None, now: float) -> Auth:
        """The request's ``Authorization`` header -> Auth, or 401 saying what is wrong."""
        if not header:
            raise errors.auth_error("No API key provided. Send 'Authorization: Bearer <key>'.")
        scheme, _, key = header.partition(" ")
        key = key.strip()
        if scheme.lower() != "bearer" or not key:
            raise errors.auth_error("Malformed Authorization header; expected 'Bearer <key>'.")
        auth = self.lookup(key)
        if auth is None:
            raise errors.auth_error(
                f"Invalid API key provided: {mask(key)}. Check that the whole key was copied and "
                "that it is a secret (sk_) or publishable (pk_) key this gateway issued; a "
                "revoked key, or one from another sandbox or before a reset, is not known here."
            )
        if auth.expires_at is not None and now >= auth.expires_at:
            raise errors.auth_error(
                f"The API key {mask(key)} was rolled and its 24-hour grace has ended; use the "
                "new key the roll returned in its place."
            )
        if auth.allowlist and not ip_allowed(client_ip, auth.allowlist):
            raise errors.auth_error(
                f"The API key {mask(key)} may not be used from IP "
                f"{client_ip}; add it to the key's allowlist."
            )
        return auth
