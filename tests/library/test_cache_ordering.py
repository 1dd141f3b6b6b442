"""Which version of a row wins does not depend on the clocks of the machines that synced.

Part files are named by a sequence number taken from the writer's clock, and the file with the
higher number holds the newer version of a row. A cache synced from two machines (a shared
folder, the lock serialising their syncs) or across a clock set back meets files named from a
clock ahead of the one syncing now: the newer sync's rows must still win.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import gwtools
from gwtools.cache import _dataset as _cache
from tests.library.test_crash_consistency import ROOT, Shop

#: A sync in a process whose clock runs an hour ahead of this one's.
SYNC_AHEAD = """
import sys, time
real = time.time_ns
time.time_ns = lambda: real() + 3600 * 10**9
import gwtools

with gwtools.connect(cache_dir=sys.argv[1], account="shop") as gw:
    assert gw.sync().complete
"""


@pytest.fixture
def shop(sandbox_b: Any, tmp_path: Path) -> Iterator[Shop]:
    yield Shop(sandbox_b, tmp_path / "cache", payments=60)


def test_a_sync_on_a_clock_behind_the_last_ones_still_writes_the_newest_version(
    shop: Shop,
) -> None:
    env = {**os.environ, "GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url}
    env.pop(_cache.CRASH_ENV, None)
    ahead = subprocess.run(
        [sys.executable, "-c", SYNC_AHEAD, str(shop.cache_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert ahead.returncode == 0, ahead.stderr[-2000:]
    cached = gwtools.read_cache(shop.cache_dir, "payments", account="shop")
    paid = cached[(cached["status"] == "succeeded") & ~cached["refunded"].astype(bool)]
    payment = str(paid["id"].iloc[0])
    with httpx.Client(base_url=shop.base_url, timeout=60) as http:
        r = http.post(
            "/v1/refunds",
            json={"payment_id": payment, "reason": "requested_by_customer"},
            headers={"Authorization": f"Bearer {shop.key}"},
        )
        assert r.status_code in (200, 201), r.text[:300]
        # What the gateway now says: a partly captured payment refunds only its captured part,
        # so the payment's amount is not the refunded amount to expect.
        now = http.get(f"/v1/payments/{payment}", headers={"Authorization": f"Bearer {shop.key}"})
        assert now.status_code == 200, now.text[:300]
    amount = int(now.json()["refunded_amount"])
    assert amount > int(paid["refunded_amount"].iloc[0])  # the refund did change the payment

    # This machine's sync: the refund is new, so its payment is re-read and merged.
    with shop.connect() as gw:
        result = gw.sync()
    assert result.complete, result.problems
    after = gwtools.read_cache(shop.cache_dir, "payments", account="shop").set_index("id")
    assert after.loc[payment, "refunded_amount"] == amount, (
        "the payment's re-read version lost to the version a sync on a clock ahead had written"
    )
    assert bool(after.loc[payment, "refunded"])
