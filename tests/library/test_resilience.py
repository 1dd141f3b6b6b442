"""Syncs that survive a misbehaving gateway, a killed process, and never leak the key."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pandas as pd
import pytest

from gwtools import open_source
from gwtools._errors import (
    APIConnectionError,
    AuthenticationError,
    ConfigurationError,
    NotFoundError,
)
from gwtools._gateway import connect
from gwtools._schema import empty_payments, empty_refunds
from gwtools.analysis import quality
from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import CARD_DECLINE, Shop, assert_same, fresh


def _seed(shop: Shop, n: int) -> None:
    for i in range(n):
        shop.card(CARD_DECLINE if i % 5 == 0 else "4242424242424242")


def _last_sync_rule(rules: pd.DataFrame) -> pd.Series:
    return rules.set_index("rule").loc["last_sync_complete"]


@pytest.fixture
def seeded(shop: Shop) -> Shop:
    shop.history(400, days=20, seed=3)
    return shop


@pytest.mark.parametrize("fault", ["error_rate", "drop_rate", "force_429_rate", "non_json_rate"])
def test_sync_retries_each_kind_of_fault(seeded: Shop, tmp_path: Path, fault: str) -> None:
    expected = fresh(seeded, tmp_path)
    seeded.faults(**{fault: 1.0, "count": 2})  # the next two requests fail this way
    try:
        with seeded.connect(tmp_path / "faulty") as gw:
            result = gw.sync()
    finally:
        seeded.clear_faults()
    assert result.complete and result.rejected == 0
    assert result.retries == 2
    assert result.rate_limited == (2 if fault == "force_429_rate" else 0)
    assert_same(gw.payments(refresh=False), expected["payments"])
    assert_same(gw.refunds(refresh=False), expected["refunds"])


def test_sync_survives_a_mix_of_faults_with_latency(seeded: Shop, tmp_path: Path) -> None:
    expected = fresh(seeded, tmp_path)
    faults = {
        "error_rate": 0.15,
        "drop_rate": 0.1,
        "force_429_rate": 0.05,
        "non_json_rate": 0.1,
        "latency_ms": 20,
        "latency_jitter_ms": 30,
        "seed": 11,
    }
    try:
        with seeded.connect(tmp_path / "faulty", max_attempts=20) as gw:
            seeded.faults(**faults)
            result = gw.sync()
            seeded.clear_faults()
            seeded.card()  # a new payment between the syncs
            seeded.faults(**faults)
            again = gw.sync()
    finally:
        seeded.clear_faults()
    assert result.complete and again.complete and result.rejected == 0
    expected = fresh(seeded, tmp_path, "fresh2")
    assert_same(gw.payments(refresh=False), expected["payments"])
    assert_same(gw.refunds(refresh=False), expected["refunds"])


def test_server_ignoring_time_filters_falls_back_to_one_cursor(
    seeded: Shop, tmp_path: Path
) -> None:
    expected = fresh(seeded, tmp_path)
    seeded.faults(ignore_time_filters=True)
    try:
        with seeded.connect(tmp_path / "ignored") as gw:
            result = gw.sync()
            seeded.card()
            again = gw.sync()
    finally:
        seeded.clear_faults()
    assert result.complete and again.complete and again.new >= 1
    if seeded.variant == "B":
        assert gw._dataset("payments").state()["time_filters_ignored"] is True
    cached = gw.payments(refresh=False)
    assert cached["id"].is_unique and set(expected["payments"]["id"]) < set(cached["id"])


_CHILD = """
import os, sys
import gwtools._gateway as g
gw = g.connect(os.environ["GW_API_KEY"], os.environ["GW_BASE_URL"], cache_dir=sys.argv[1],
               account="shop", max_rps=40, pages_per_batch=1)
gw.sync()
print("finished")
"""


def test_sync_killed_midway_then_rerun_converges(seeded: Shop, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "GW_API_KEY": seeded.key, "GW_BASE_URL": seeded.base_url}
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(cache)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list(cache.rglob("part-*.parquet")):
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=10)
    assert b"finished" not in out, "the sync ended before it could be killed: make it slower"
    assert list(cache.rglob("part-*.parquet")), "nothing was written before the kill"
    with seeded.connect(cache) as gw:
        # readable as it is, and said to be partial: the killed sync never completed
        with pytest.warns(GatewayDataWarning, match="no sync of them has completed"):
            partial = gw.payments(refresh=False)
        assert partial["id"].is_unique
        result = gw.sync()
        assert result.complete
        expected = fresh(seeded, tmp_path)
        assert_same(gw.payments(refresh=False), expected["payments"])
        assert_same(gw.refunds(refresh=False), expected["refunds"])


def test_key_appears_in_no_file_log_or_error(
    shop: Shop, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _seed(shop, 5)
    shop.raw("payments", {"object": "payment", "status": "succeeded"})  # goes to rejects
    caplog.set_level(logging.DEBUG)
    with shop.connect(tmp_path) as gw:
        gw.sync()
        texts = [repr(gw), str(gw.settings), repr(gw.settings)]
    wrong = shop.key[:-4] + "zzzz"
    with (
        connect(wrong, shop.base_url, cache_dir=tmp_path) as gw2,
        pytest.raises(AuthenticationError) as info,
    ):
        gw2.sync()
    texts += [str(info.value), repr(info.value), caplog.text]
    for text in texts:
        assert shop.key not in text and wrong not in text
    assert "…" in texts[0]
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "_rejects.jsonl" for p in files)
    for p in files:
        data = p.read_bytes()
        assert shop.key.encode() not in data and shop.key[8:].encode() not in data, p


def test_errors_map_to_exceptions(shop: Shop, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="publishable"):
        connect(shop.key.replace("sk_", "pk_"), shop.base_url, cache_dir=tmp_path)
    gw = connect(shop.key, "http://127.0.0.1:9", cache_dir=tmp_path, max_attempts=2)
    with pytest.raises(APIConnectionError, match="could not reach") as info:
        gw.sync()
    assert shop.key not in str(info.value)
    gw.close()


def test_body_that_stays_unusable_is_rejected_and_retried_next_sync(
    seeded: Shop, tmp_path: Path
) -> None:
    seeded.faults(non_json_rate=1.0, count=2)  # the first list request fails both attempts
    try:
        with seeded.connect(tmp_path, max_attempts=2) as gw:
            with pytest.warns(GatewayDataWarning, match="incomplete.*unreadable"):
                broken = gw.sync(["payments"])
            assert not broken.complete and broken.rejected == 1
            assert broken.resources["payments"].rejects_by_reason == {"unusable body": 1}
            assert "incomplete" in str(broken)
            reject = gw._dataset("payments").rejects().iloc[0]
            assert (
                "unusable response body" in reject["reason"] and "<html" in reject["record"].lower()
            )
            assert (
                "high_water" not in gw._dataset("payments").state()
                or gw._dataset("payments").state()["high_water"] is None
            )
            # What the sync recorded is what the data-quality rule judges.
            states = {"payments": gw._dataset("payments").state()}
            rule = _last_sync_rule(quality(empty_payments(), empty_refunds(), completeness=states))
            assert not rule["ok"] and rule["examples"] == ["payments"]
            seeded.clear_faults()
            fixed = gw.sync()
            assert fixed.complete
            src = open_source(gw)
            assert _last_sync_rule(quality(src.payments, src.refunds, completeness=src.states))[
                "ok"
            ]
            expected = fresh(seeded, tmp_path)
            assert_same(gw.payments(refresh=False), expected["payments"])
    finally:
        seeded.clear_faults()


class _ProxyAnsweringObjects(httpx.AsyncBaseTransport):
    """Something in front of the gateway: requests pass through, but ``path`` gets a 404 of its
    own (``body``)."""

    def __init__(self, path: str, body: bytes, content_type: str) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.path, self.body, self.content_type = path, body, content_type
        self.answered: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "GET" and request.url.path == self.path:
            self.answered.append(request.url.path)
            headers = {"content-type": self.content_type}
            return httpx.Response(404, headers=headers, content=self.body, request=request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


GATEWAY_404 = b'{"error": {"type": "invalid_request_error", "message": "No such payment"}}'


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(GATEWAY_404, "application/json"), (b"<html>Not Found</html>", "text/html")],
)
def test_a_payment_read_by_id_is_rejected_only_on_the_gateways_own_404(
    shop: Shop, tmp_path: Path, body: bytes, content_type: str
) -> None:
    """A payment re-read by id (its refunds changed): the gateway saying "no such payment" is
    recorded as a reject and the sync goes on; a 404 from anything else (a proxy, a wrong
    path) says nothing about the payment, so the sync fails with the base-URL advice instead
    of recording the row as gone (it used to), and the next sync still re-reads it."""
    paid = shop.card()
    shop.advance(3 * 86400)  # far behind the overlap
    shop.history(300, days=1)  # pages to list again from it: one retrieve is cheaper
    with shop.connect(tmp_path) as gw:
        assert gw.sync().complete
    shop.refund(paid, amount=100)
    proxy = _ProxyAnsweringObjects(f"/v1/payments/{paid}", body, content_type)
    with shop.connect(tmp_path, transport=proxy) as gw:
        if body == GATEWAY_404:
            result = gw.sync()
            assert result.resources["payments"].rejects_by_reason == {"not found": 1}
            reject = gw._dataset("payments").rejects().iloc[0]
            assert paid in reject["record"] and "no longer found" in reject["reason"]
        else:
            with pytest.raises(NotFoundError, match="base URL's path looks wrong") as info:
                gw.sync()
            assert "something else answered" in str(info.value)
            assert gw._dataset("payments").rejects().empty
        assert proxy.answered == [f"/v1/payments/{paid}"]
        assert gw.payments(refresh=False).set_index("id").loc[paid, "refunded_amount"] == 0
    if body == GATEWAY_404:
        return  # the gateway said it is gone: the reject is the record of that
    with shop.connect(tmp_path) as gw:  # the failed sync left it owed: the next one re-reads it
        assert gw.sync().complete
        assert gw.payments(refresh=False).set_index("id").loc[paid, "refunded_amount"] == 100
