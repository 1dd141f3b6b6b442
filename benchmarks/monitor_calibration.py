"""False-alarm rate of ``gwtools.analysis.monitor`` on normal histories (no incident).

Generates ``--seeds`` sandbox histories of ``--payments`` payments (default 20 x 30,000 over
60 days), syncs each through the library over loopback HTTP, runs the monitor on the last
7 days against the 28 before, and prints how many histories raised any alert, per kind.
With ``--incidents`` it runs the same histories with one incident of each kind and prints how
many were caught (the detection rate)::

    python benchmarks/monitor_calibration.py
    python benchmarks/monitor_calibration.py --seeds 5 --incidents
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from datetime import UTC, datetime

import gwtools
from gwtools import analysis
from gwtools.sandbox import Sandbox

NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
INCIDENTS = ["card-testing", "bank-outage:RHB0218", "decline-spike"]
EXPECTED = {
    "card-testing": "card_testing",
    "bank-outage": "fpx_bank_outage",
    "decline-spike": "decline_spike",
}


def run(seed: int, payments: int, days: int, incidents: list[str]) -> tuple[list[str], dict]:
    with (
        Sandbox(
            "B",
            rate_limits=False,
            seed_payments=payments,
            days=days,
            seed=seed,
            now=NOW,
            incidents=incidents,
        ) as sb,
        tempfile.TemporaryDirectory() as cache,
        gwtools.connect(sb.secret_key, sb.base_url, cache_dir=cache, account="calibration") as gw,
    ):
        gw.sync()
        alerts = analysis.monitor(
            gw.payments(refresh=False), gw.refunds(refresh=False), tz="Asia/Kuala_Lumpur"
        )
        return alerts["kind"].tolist(), sb.history or {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--payments", type=int, default=30_000)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--incidents", action="store_true", help="measure detection instead")
    args = parser.parse_args()
    incidents = INCIDENTS if args.incidents else []
    alarmed, kinds, caught = 0, Counter(), Counter()
    for seed in range(args.seeds):
        found, _ = run(seed, args.payments, args.days, incidents)
        if args.incidents:
            for inc in incidents:
                caught[inc] += EXPECTED[inc.split(":")[0]] in found
            print(f"seed {seed}: {sorted(set(found))}", flush=True)
            continue
        alarmed += bool(found)
        kinds.update(set(found))
        print(f"seed {seed}: {len(found)} alerts {sorted(set(found))}", flush=True)
    n = args.seeds
    if args.incidents:
        for inc in incidents:
            print(f"{inc}: caught in {caught[inc]} of {n} histories")
        return
    print(
        f"false alarms: {alarmed} of {n} normal histories ({alarmed / n:.0%}) of "
        f"{args.payments:,} payments over {args.days} days; per kind: {dict(kinds) or 'none'}"
    )


if __name__ == "__main__":
    main()
