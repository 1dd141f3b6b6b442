"""Gateway behaviour: the embedded default, running under an event loop, reading with filters."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

import gwtools._gateway as gateway
from gwtools._schema import columns
from gwtools._sync import choose_cutoff
from tests.library._shop import CARD_DECLINE, Shop


def test_embedded_sandbox_when_nothing_is_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("GW_API_KEY", "GW_BASE_URL", "GW_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "120")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "5")
    caplog.set_level(logging.INFO, logger="gwtools")
    gw = gateway.connect(cache_dir=tmp_path)
    again = gateway.connect(cache_dir=tmp_path)
    assert gw.settings.embedded and gw.settings.account == "sandbox"
    assert gw.settings.base_url == again.settings.base_url  # one sandbox per process
    said = [r for r in caplog.records if "embedded sandbox" in r.getMessage()]
    assert len(said) == 1 and gw.settings.api_key not in said[0].getMessage()
    payments = gw.payments()
    assert len(payments) == 120 and list(payments.columns) == list(columns("payments"))
    assert (tmp_path / "sandbox" / "test" / "payments" / "_state.json").exists()
    gw.close()
    again.close()


def test_sync_works_under_a_running_event_loop(shop: Shop, tmp_path: Path) -> None:
    """As in Jupyter, where the kernel's loop is already running."""
    shop.card()

    async def notebook_cell() -> int:
        with shop.connect(tmp_path) as gw:
            return len(gw.payments())

    assert asyncio.run(notebook_cell()) == 1


def test_payments_filters_and_refresh(shop: Shop, tmp_path: Path) -> None:
    ok = shop.card()
    declined = shop.card(CARD_DECLINE)
    with shop.connect(tmp_path) as gw:
        assert gw.payments(status="failed")["id"].tolist() == [declined]
        later = shop.card()
        assert set(gw.payments(refresh=False)["id"]) == {ok, declined}
        assert set(gw.payments()["id"]) == {ok, declined, later}
        assert gw.payments(since="2100-01-01", refresh=False).empty
        assert gw.last_result is not None and "payments" in str(gw.last_result)
        assert "<table>" in gw.last_result._repr_html_()


def test_choose_cutoff_minimises_requests() -> None:
    import numpy as np

    cached = np.arange(1000)  # one row per time unit
    # Two open rows long ago, three recent ones; listing from 900 costs 1 page + 2 by id.
    cands = np.array([5, 10, 950, 960, 990])
    assert choose_cutoff(cached, cands, default=995, page_limit=100) == 950
    # With few rows per page, retrieving every candidate by id is cheaper.
    assert choose_cutoff(cached, cands, default=995, page_limit=1) == 995
    # Open rows are re-read by status-filtered lists (100 per request), not one by one:
    # listing from the high-water mark plus one status page costs what relisting from 950
    # costs, and lists fewer rows.
    assert choose_cutoff(cached, np.array([], dtype=int), 995, 100, open_created=cands) == 995
    # Nothing open: list from the high-water mark.
    assert choose_cutoff(cached, np.array([], dtype=int), default=995) == 995


def test_pacing_off_still_reads_rate_limit_headers(shop: Shop, tmp_path: Path) -> None:
    """max_rps=None (a server without limits) must not trip over X-RateLimit-* headers."""
    ids = {shop.card(), shop.card(CARD_DECLINE)}
    with shop.connect(tmp_path, max_rps=None) as gw:
        assert set(gw.payments()["id"]) == ids
