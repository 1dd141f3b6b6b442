"""Rebuild data/sample-cache: 2,000 seeded sandbox payments and their refunds, no network.

Starts the sandbox (variant B, the embedded default) on loopback with the demo seed and a
frozen clock, syncs it into this directory with the library, and stops it. The rows are the
same on every run (same seed, same clock); file names and sync times differ. Run from the
repository root::

    python data/sample-cache/make_sample_cache.py

Then, anywhere::

    import gwtools
    payments = gwtools.read_cache("data/sample-cache", "payments")
"""

from __future__ import annotations

import shutil
from pathlib import Path

import gwtools._gateway as gateway
from gwtools._embedded import DEMO, PINNED_NOW
from gwtools.cache._dataset import find_dataset
from gwtools.sandbox import Sandbox

HERE = Path(__file__).resolve().parent
PAYMENTS = 2_000
DAYS = 90


def main() -> None:
    shutil.rmtree(HERE / "sandbox", ignore_errors=True)
    with (
        Sandbox(
            "B",
            seed_payments=PAYMENTS,
            days=DAYS,
            seed=DEMO.seed,
            now=PINNED_NOW,
            rate_limits=False,
        ) as sb,
        gateway.connect(sb.secret_key, sb.base_url, cache_dir=HERE, account="sandbox") as gw,
    ):
        result = gw.sync(full=True)
    assert result.complete and result.rejected == 0, result
    for lock in HERE.rglob("_sync.lock"):  # a lock file is not part of the sample
        lock.unlink()
    mark_sandbox_data()
    print(result)
    print(f"sample cache written to {HERE / 'sandbox' / 'test'}")


def mark_sandbox_data() -> None:
    """Record in the sample's state that it is sandbox data, as a sync by the embedded
    sandbox does (this one ran against a sandbox on loopback, which gwtools cannot tell from
    a real gateway), so reports and figures made from the sample say "sandbox data"."""
    for resource in ("payments", "refunds"):
        dataset = find_dataset(HERE, resource, account="sandbox")
        dataset.write_state({**dataset.state(), "sandbox_data": True})


if __name__ == "__main__":
    main()
