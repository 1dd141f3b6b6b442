"""The warning about a status gwtools does not know names the API variant that sent it.

Each variant has its own status vocabulary (A's ``succeeded`` is unknown in B), so an analyst
reporting a value to the gateway has to say which variant it came from. Warned once per
(resource, variant, value) per Gateway. Over real HTTP against the sandboxes; the test of
both variants puts a proxy transport in front of the two sandboxes (one per variant) that
sends a Gateway's requests to one or the other, as a gateway moving to the other variant would.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import httpx
import pytest

import gwtools
from gwtools import GatewayDataWarning
from tests.library._shop import Shop

pytestmark = pytest.mark.timeout(120)

_CREATED: dict[str, dict[str, Any]] = {
    "A": {"created_at": "2026-01-01T00:00:00Z"},
    "B": {"created": 1767225600},
}


def _add_unknown(shop: Shop, payment_status: str, refund_status: str | None = None) -> None:
    """A payment (and a refund, if ``refund_status``) with a status no variant has."""
    created = _CREATED[shop.variant]
    shop.raw("payments", {"object": "payment", "id": f"pay_odd{shop.variant}", "amount": 500,
                          "currency": "myr", "status": payment_status, **created})  # fmt: skip
    if refund_status is not None:
        shop.raw("refunds", {"object": "refund", "id": f"rfnd_odd{shop.variant}",
                             "payment_id": "pay_x", "amount": 100, "currency": "myr",
                             "status": refund_status, **created})  # fmt: skip


def _said(caught: list[warnings.WarningMessage], value: str) -> list[str]:
    return [
        str(w.message)
        for w in caught
        if issubclass(w.category, GatewayDataWarning) and repr(value) in str(w.message)
    ]


def test_the_sync_warning_names_the_variant_once_per_value(shop: Shop, tmp_path: Path) -> None:
    v = shop.variant
    _add_unknown(shop, f"teleported_{v}", f"refunding_{v}")
    with shop.connect(tmp_path) as gw:
        with pytest.warns(GatewayDataWarning) as caught:
            assert gw.sync(full=True).complete
        payments = gw.payments(refresh=False).set_index("id")
    assert _said(caught.list, f"teleported_{v}") == [
        f"the gateway sent payments with status 'teleported_{v}' (API variant {v}), which "
        "gwtools does not know; those rows have status 'unknown' (the raw value is in "
        "status_raw). Report the value to the gateway with its API variant"
    ]
    assert _said(caught.list, f"refunding_{v}") == [
        f"the gateway sent refunds with status 'refunding_{v}' (API variant {v}), which "
        "gwtools does not know; those rows have status 'unknown' (the raw value is in extra, "
        'under "status"). Report the value to the gateway with its API variant'
    ]
    assert payments.loc[f"pay_odd{v}", "api_variant"] == v


def test_the_stream_warning_names_the_variant(shop: Shop, tmp_path: Path) -> None:
    v = shop.variant
    _add_unknown(shop, f"drifting_{v}")
    with shop.connect(tmp_path) as gw, pytest.warns(GatewayDataWarning) as caught:
        ids = [p["id"] for p in gw.iter_payments()]
    assert f"pay_odd{v}" in ids
    said = _said(caught.list, f"drifting_{v}")
    assert said and all(f"'drifting_{v}' (API variant {v})" in s for s in said), said
    assert all("those records have status 'unknown'" in s for s in said), said


# -- one Gateway, both variants ------------------------------------------------------------


class _Either(httpx.AsyncBaseTransport):
    """Sends each request to ``self.to``'s sandbox with its key: flip it to change the
    variant a Gateway meets, as a gateway moving from one variant to the other would."""

    def __init__(self, to: Shop) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.to = to

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = httpx.URL(self.to.base_url)
        url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        headers["Authorization"] = f"Bearer {self.to.key}"
        response = await self.inner.handle_async_request(
            httpx.Request(request.method, url, headers=headers, content=request.content)
        )
        await response.aread()
        kept = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-encoding")
        }
        return httpx.Response(
            response.status_code, headers=kept, content=response.content, request=request
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _shop(sandbox: Any) -> Shop:
    r = httpx.post(f"{sandbox.base_url}/_sandbox/accounts", timeout=10)
    r.raise_for_status()
    return Shop(sandbox, r.json())


def _sync_recording(gw: gwtools.Gateway) -> list[warnings.WarningMessage]:
    # "always": Python's own once-per-place registry must not hide a repeat the Gateway let out
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert gw.sync("payments", full=True).complete
    return caught


def test_the_same_value_from_each_variant_is_warned_once_per_variant(
    sandbox_a: Any, sandbox_b: Any, tmp_path: Path
) -> None:
    """One Gateway meets the same unknown value from variant A, then from variant B: a warning
    for each variant (the old once-per-value rule hid B's), and none for either again."""
    a, b = _shop(sandbox_a), _shop(sandbox_b)
    try:
        for shop in (a, b):
            _add_unknown(shop, "on_ice")
        proxy = _Either(a)
        gw = gwtools.connect(a.key, a.base_url, cache_dir=tmp_path, account="shop", transport=proxy)
        with gw:
            first = _said(_sync_recording(gw), "on_ice")
            proxy.to = b
            second = _said(_sync_recording(gw), "on_ice")
            again = _said(_sync_recording(gw), "on_ice")
            proxy.to = a
            back = _said(_sync_recording(gw), "on_ice")
            variants = set(gw.payments(refresh=False)["api_variant"])
    finally:
        a.close()
        b.close()
    assert len(first) == 1 and "'on_ice' (API variant A)" in first[0], first
    assert len(second) == 1 and "'on_ice' (API variant B)" in second[0], second
    assert again == [] and back == [], (again, back)
    assert variants == {"A"}


def test_the_stream_names_an_unknown_status_once_however_many_pages_hold_it(
    shop: Shop, tmp_path: Path
) -> None:
    """As a sync names each unknown value once, so does a stream: it named it on every page."""
    v = shop.variant
    for i in range(120):  # more than a page of 100
        created = (
            {"created": 1767225600 + i}
            if v == "B"
            else {"created_at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"}
        )
        shop.raw("payments", {"object": "payment", "id": f"pay_odd{v}{i:03d}", "amount": 500,
                              "currency": "myr", "status": f"drifting_{v}", **created})  # fmt: skip
    with shop.connect(tmp_path) as gw, pytest.warns(GatewayDataWarning) as caught:
        ids = [p["id"] for p in gw.iter_payments()]
    assert len(ids) == 120
    assert len(_said(caught.list, f"drifting_{v}")) == 1
