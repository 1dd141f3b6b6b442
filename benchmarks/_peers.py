"""Contenders of benchmarks/sync.py beyond gwtools' full sync and the sequential pager.

- ``dlt``: dlt's ``rest_api`` source loading ``/v1/payments`` to Parquet with the filesystem
  destination, configured as a data engineer would from the spec: ``limit=100``, bearer auth,
  dlt's page-number paginator (variant A: ``page``, total from ``meta.totalPages``) or its
  JSON-response cursor paginator (variant B: ``starting_after`` = the last item's id, stop on
  ``has_more``), dlt's default retrying session. Telemetry off; loopback only.
- ``incremental``: gwtools' incremental ``Gateway.sync()`` after 1% of the payments changed
  (captures, voids, refunds, a clock advance that settles pending ones) and 0.5% were added,
  then a check that the cache equals a fresh full fetch.

dlt is a benchmark-only dependency (``pip install -e ".[bench]"``), never imported by gwtools.
Each ``run_*`` takes ``(base_url, key, workdir)`` and returns the fields of ``sync.Row`` it
measured; ``sync.py`` runs it in a child process and adds the child's peak memory.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import multiprocessing as mp
import os
import random
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx

ACCOUNT = "bench"
LIMIT = 100
CHANGED_SHARE = 0.01  # payments changed between the full and the incremental sync
NEW_SHARE = 0.005  # payments created between them
CLOCK_ADVANCE_S = 8 * 86_400  # >= 5 business days: FPX refunds, processing, expiries settle
SEED = 11
REFUND_AGE_S = 7 * 86_400  # mean age of a payment when it is refunded


def _variant(base_url: str) -> str:
    """The variant the sandbox serves (the harness knows it; a data engineer reads the spec)."""
    return str(httpx.get(f"{base_url}/_sandbox", timeout=10).json()["variant"]).upper()


def _in_subprocess(fn: Callable[..., Any], *args: Any) -> Any:
    """Run setup work in its own process, so the contender's peak memory stays its own."""
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as ex:
        return ex.submit(fn, *args).result()


# -- dlt -----------------------------------------------------------------------------------
def _dlt_paginator(variant: str) -> dict[str, Any]:
    if variant == "A":
        return {
            "type": "page_number",
            "base_page": 1,
            "page_param": "page",
            "total_path": "meta.totalPages",
        }
    return {
        "type": "cursor",
        "cursor_path": "data[-1].id",
        "cursor_param": "starting_after",
        "has_more_path": "has_more",
    }


def run_dlt(base_url: str, key: str, workdir: str) -> dict[str, Any]:
    """dlt's rest_api source -> filesystem destination, Parquet files, in ``workdir``."""
    # Before dlt is imported: no telemetry, and no state under ~/.dlt.
    os.environ["RUNTIME__DLTHUB_TELEMETRY"] = "false"
    os.environ["DLT_DATA_DIR"] = str(Path(workdir) / "dlt-data")
    # dlt warns per load that all-null columns are not materialised; the table is the output.
    os.environ.setdefault("RUNTIME__LOG_LEVEL", "ERROR")
    import dlt
    import pyarrow.parquet as pq
    from dlt.sources.helpers.requests import Client
    from dlt.sources.rest_api import rest_api_source
    from requests.adapters import HTTPAdapter

    variant = _variant(base_url)
    # dlt counts no requests. The session it would build by default (retrying on 429/5xx,
    # honouring Retry-After) gets a counting transport adapter: every HTTP answer, retries
    # included. (A session response hook would not do: dlt's per-request hooks replace it.)
    http: Counter[str] = Counter()

    class CountingAdapter(HTTPAdapter):
        def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
            response = super().send(request, *args, **kwargs)
            http["requests"] += 1
            if response.status_code == 429:
                http["429"] += 1
            elif response.status_code >= 400:
                http["failed"] += 1
            return response

    session = Client(raise_for_status=False).session
    session.mount("http://", CountingAdapter())
    source = rest_api_source(
        {
            "client": {
                "base_url": f"{base_url}/v1/",
                "auth": {"type": "bearer", "token": key},
                "paginator": _dlt_paginator(variant),  # type: ignore[typeddict-item]
                "session": session,
            },
            "resources": [
                {
                    "name": "payments",
                    "primary_key": "id",
                    "write_disposition": "replace",
                    "endpoint": {
                        "path": "payments",
                        "params": {"limit": LIMIT},
                        "data_selector": "data",
                    },
                }
            ],
        }
    )
    bucket = Path(workdir) / "lake"
    pipeline = dlt.pipeline(
        pipeline_name="gw_payments",
        destination=dlt.destinations.filesystem(bucket_url=bucket.as_uri()),
        dataset_name="gateway",
        pipelines_dir=str(Path(workdir) / "pipelines"),
    )
    started = time.perf_counter()
    pipeline.run(source, loader_file_format="parquet")
    seconds = time.perf_counter() - started

    files = sorted((bucket / "gateway" / "payments").glob("*.parquet"))
    ids = [pq.read_table(f, columns=["id"]).column("id") for f in files]
    rows = sum(len(c) for c in ids)
    distinct = len({v for c in ids for v in c.to_pylist()})
    paginator = "page_number (meta.totalPages)" if variant == "A" else "cursor (starting_after)"
    return {
        "rows": rows,
        "seconds": seconds,
        "requests": http["requests"],
        "rate_limited": http["429"],
        "failed": http["failed"],
        "notes": f"dlt {dlt.__version__} rest_api, {paginator}, to Parquet (extract+normalize+"
        f"load); {distinct:,} distinct ids in {len(files)} file(s); "
        "requests counted by a transport adapter on dlt's session",
    }


# -- the changes between the full and the incremental sync --------------------------------
class _Merchant:
    """The merchant and their customers, over the public API, the customer pages and the
    sandbox's admin API (clock, rate limits)."""

    def __init__(self, base_url: str, key: str) -> None:
        self.base_url = base_url
        self.variant = _variant(base_url)
        self.api = httpx.Client(
            base_url=base_url, timeout=30, headers={"Authorization": f"Bearer {key}"}
        )
        self.pages = httpx.Client(base_url=base_url, timeout=30)
        self.rng = random.Random(SEED)
        self.amounts = itertools.count(1_500, 13)

    def close(self) -> None:
        self.api.close()
        self.pages.close()

    def _ok(self, r: httpx.Response, *ok: int) -> dict[str, Any]:
        if r.status_code not in (ok or (200, 201)):
            raise RuntimeError(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text}")
        return dict(r.json())

    def status_name(self, canonical: str) -> str:
        names = {"A": {"succeeded": "captured"}, "B": {}}
        return names[self.variant].get(canonical, canonical)

    def listing(self, **params: Any) -> list[dict[str, Any]]:
        body = self._ok(self.api.get("/v1/payments", params={"limit": LIMIT, **params}))
        return list(body["data"])

    def every(self, status: str, most: int) -> list[dict[str, Any]]:
        """Up to ``most`` payments in ``status`` (served vocabulary), newest first."""
        found: list[dict[str, Any]] = []
        params: dict[str, Any] = {"status": status}
        for page in itertools.count(1):
            if self.variant == "A":
                params["page"] = page
            data = self.listing(**params)
            found += data
            if len(data) < LIMIT or len(found) >= most:
                return found[:most]
            if self.variant == "B":
                params["starting_after"] = data[-1]["id"]
        raise AssertionError("unreachable")

    def spread(self, status: str, most: int, days: int = 90) -> list[dict[str, Any]]:
        """Up to ``most`` payments in ``status``, not yet refunded, mostly recent ones: their
        age is drawn from an exponential distribution (mean a week, at most ``days``), as
        refunds mostly come within days or weeks of the payment."""
        now = int(self._ok(self.pages.get("/_sandbox/clock"))["unix"])
        picked: dict[str, dict[str, Any]] = {}
        for _ in range(most * 3):
            if len(picked) >= most:
                break
            until = now - int(min(days * 86_400, self.rng.expovariate(1 / REFUND_AGE_S)))
            for p in self.listing(status=status, to=until)[: self.rng.randint(1, 5)]:
                if not p.get("refunded_amount"):
                    picked.setdefault(p["id"], p)
        return list(picked.values())[:most]

    def rate_limits(self, settings: dict[str, Any]) -> dict[str, Any]:
        return self._ok(self.pages.put("/_sandbox/rate_limits", json=settings))

    def advance(self, seconds: int) -> None:
        self._ok(self.pages.post("/_sandbox/clock/advance", json={"seconds": seconds}))

    def capture(self, p: dict[str, Any]) -> None:
        self._ok(self.api.post(f"/v1/payments/{p['id']}/capture", json={}))

    def void(self, p: dict[str, Any]) -> None:
        self._ok(self.api.post(f"/v1/payments/{p['id']}/void", json={}))

    def refund(self, p: dict[str, Any], full: bool) -> None:
        body: dict[str, Any] = {"payment_id": p["id"], "reason": "requested_by_customer"}
        if not full and p["amount_captured"] > 1:
            body["amount"] = p["amount_captured"] // 2
        self._ok(self.api.post("/v1/refunds", json=body))

    def new_payment(self, i: int) -> None:
        """Mostly paid by card; some declined, some authorized only, some FPX, some left open."""
        number = "4000000000000002" if i % 7 == 3 else "4242424242424242"
        card = {"number": number, "exp_month": 12, "exp_year": 2031, "cvc": "123"}
        manual = i % 5 == 1
        amount = next(self.amounts)
        if self.variant == "B":
            method: dict[str, Any] = (
                {"type": "fpx", "fpx": {"bank_code": "TEST0001"}}
                if i % 11 == 5
                else {"type": "card", "card": card}
            )
            body = {
                "amount": amount,
                "currency": "myr",
                "return_url": "https://shop.example/back",
                "capture_method": "manual" if manual and method["type"] == "card" else "automatic",
                "payment_method_data": method,
            }
            created = self._ok(self.api.post("/v1/payments", json=body), 200, 201, 402)
            if method["type"] == "fpx":
                # Every FPX payment waits on the bank page until the customer finishes there.
                self._finish_at_bank(created["id"])
            return
        created = self._ok(
            self.api.post(
                "/v1/payments",
                json={
                    "amount": amount,
                    "success_url": "https://shop.example/ok",
                    "cancel_url": "https://shop.example/cancel",
                },
            )
        )
        if i % 9 == 4:
            return  # the customer has not paid yet: pending at the checkout
        form: dict[str, str] = (
            {"action": "pay", "method": "fpx", "bank_code": "TEST0001"}
            if i % 11 == 5
            else {
                "action": "pay",
                "method": "card",
                "capture_method": "manual" if manual else "automatic",
                **{k: str(v) for k, v in card.items()},
            }
        )
        r = self.pages.post(f"/pay/{created['id']}", data=form)
        if r.status_code not in (200, 303):
            raise RuntimeError(f"checkout page: {r.status_code} {r.text[:200]}")
        if form["method"] == "fpx":
            self._finish_at_bank(created["id"])

    def _finish_at_bank(self, ident: str) -> None:
        r = self.pages.post(f"/pay/{ident}", data={"action": "complete"})
        if r.status_code not in (200, 303):
            raise RuntimeError(f"bank page: {r.status_code} {r.text[:200]}")


def change_payments(base_url: str, key: str, payments: int) -> dict[str, int]:
    """Change ~1% of ``payments`` and add ~0.5%, the way a shop's day would; say what was done.

    Rate limits are lifted meanwhile (setup, not measured) and put back as they were, which
    also restarts the buckets, so the timed sync starts with full ones.
    """
    shop = _Merchant(base_url, key)
    try:
        limits = shop._ok(shop.pages.get("/_sandbox/rate_limits"))
        shop.rate_limits({"enabled": False})
        want = max(1, round(payments * CHANGED_SHARE))
        authorized = shop.every("authorized", want // 5)
        capture, void = authorized[: len(authorized) // 2], authorized[len(authorized) // 2 :]
        if shop.variant == "B":  # customers abandoned at 3-D Secure / the bank page
            void += shop.every("requires_action", max(0, want // 10 - len(void)))
        refund = shop.spread(shop.status_name("succeeded"), want - len(capture) - len(void))
        _run_all(
            [
                *(partial(shop.capture, p) for p in capture),
                *(partial(shop.void, p) for p in void),
                *(partial(shop.refund, p, full=i % 3 == 0) for i, p in enumerate(refund)),
            ]
        )
        shop.advance(CLOCK_ADVANCE_S)
        new = max(1, round(payments * NEW_SHARE))
        _run_all([partial(shop.new_payment, i) for i in range(new)])
        shop.rate_limits(limits)
        return {"captured": len(capture), "voided": len(void), "refunded": len(refund), "new": new}
    finally:
        shop.close()


def _run_all(jobs: list[Callable[[], None]], threads: int = 8) -> None:
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for f in [pool.submit(job) for job in jobs]:
            f.result()


# -- gwtools incremental -------------------------------------------------------------------
def _connect(base_url: str, key: str, cache: str, **options: Any) -> Any:
    import gwtools._gateway as gateway

    return gateway.connect(
        key, base_url, cache_dir=cache, account=ACCOUNT, progress=False, **options
    )


def _unpaced_full_sync(base_url: str, key: str, cache: str) -> int:
    """Setup: a full sync of payments and refunds with the server's limits lifted; the
    number of payments."""
    shop = _Merchant(base_url, key)
    try:
        limits = shop._ok(shop.pages.get("/_sandbox/rate_limits"))
        shop.rate_limits({"enabled": False})
        # Not max_rps=None: the working tree's pacer asserts on it when limit headers arrive.
        with _connect(base_url, key, cache, max_rps=10_000.0, concurrency=32) as gw:
            result = gw.sync(full=True)
        shop.rate_limits(limits)
    finally:
        shop.close()
    if not result.complete or result.rejected:
        raise RuntimeError(f"setup full sync incomplete:\n{result}")
    return int(result.resources["payments"].new)


def _frames(cache: str) -> Iterator[tuple[str, Any]]:
    from gwtools.cache._dataset import read_cache

    for resource in ("payments", "refunds"):
        frame = read_cache(cache, resource, account=ACCOUNT)
        yield resource, frame.sort_values("id", ignore_index=True)


def _compare(base_url: str, key: str, workdir: str) -> dict[str, Any]:
    """A fresh full fetch; is the incremental cache equal to it, and what differs from before?"""
    import pandas as pd

    fresh = str(Path(workdir) / "fresh")
    _unpaced_full_sync(base_url, key, fresh)
    got = dict(_frames(str(Path(workdir) / "cache")))
    before = dict(_frames(str(Path(workdir) / "before")))
    out: dict[str, Any] = {"problems": []}
    for resource, expected in _frames(fresh):
        out[resource] = len(expected)
        try:
            assert got[resource]["id"].is_unique, "duplicate ids in the cache"
            pd.testing.assert_frame_equal(got[resource], expected)
        except AssertionError as exc:
            out["problems"].append(f"{resource}: {str(exc).splitlines()[0]}")
        old = before[resource].set_index("id")
        new = expected.set_index("id")
        common = new.index.intersection(old.index)
        hashes = [pd.util.hash_pandas_object(f.loc[common], index=False) for f in (old, new)]
        out[f"{resource}_changed"] = int((hashes[0] != hashes[1]).sum())
        out[f"{resource}_added"] = len(new.index.difference(old.index))
    return out


def run_gwtools_incremental(base_url: str, key: str, workdir: str) -> dict[str, Any]:
    """gwtools' incremental sync (payments and refunds) after 1% of the payments changed."""
    cache = str(Path(workdir) / "cache")
    payments = _in_subprocess(_unpaced_full_sync, base_url, key, cache)
    shutil.copytree(cache, Path(workdir) / "before")
    done = change_payments(base_url, key, payments)
    time.sleep(1.5)  # past the second the limits were restored in
    with _connect(base_url, key, cache) as gw:
        started = time.perf_counter()
        result = gw.sync()
        seconds = time.perf_counter() - started
    check = _in_subprocess(_compare, base_url, key, workdir)
    p, r = result.resources["payments"], result.resources["refunds"]
    equal = "yes" if not check["problems"] else "NO (" + "; ".join(check["problems"]) + ")"
    return {
        "rows": result.fetched,
        "seconds": seconds,
        "requests": result.requests,
        "rate_limited": result.rate_limited,
        "failed": 0 if result.complete else 1,
        "notes": f"equal: {equal}. After {done['captured']} captures, {done['voided']} voids, "
        f"{done['refunded']} refunds, clock +{CLOCK_ADVANCE_S // 86_400} d, {done['new']} new: "
        f"{check['payments_changed']:,} of {check['payments'] - check['payments_added']:,} "
        f"payments changed, {check['payments_added']:,} added, refunds "
        f"{check['refunds_changed']:,} changed, {check['refunds_added']:,} added "
        f"({check['refunds']:,} in all). Fetched: payments {p.fetched:,} "
        f"({p.reread_by_id:,} re-read by id), refunds {r.fetched:,}; {result.retries} retries",
    }


# Run after the read-only contenders: the incremental one changes the server's data.
PEERS: dict[str, Callable[[str, str, str], dict[str, Any]]] = {
    "dlt": run_dlt,
    "incremental": run_gwtools_incremental,
}
