"""Gateway.iter_payments()/iter_refunds(): canonical records streamed page by page, no cache."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import pandas as pd
import pytest

import gwtools
from gwtools._schema import columns
from tests.library._shop import CARD_DECLINE, Shop


def test_records_are_canonical_dicts_and_nothing_is_cached(shop: Shop, tmp_path: Path) -> None:
    ok = shop.card()
    declined = shop.card(CARD_DECLINE)
    refund = shop.refund(ok, 500)
    with shop.connect(tmp_path / "cache") as gw:
        payments = {p["id"]: p for p in gw.iter_payments()}
        refunds = list(gw.iter_refunds())
        failed = [p["id"] for p in gw.iter_payments(status="FAILED")]
        none_yet = list(gw.iter_payments(until="2000-01-01"))
    assert set(payments) == {ok, declined}
    assert payments[ok]["status"] == "succeeded" and payments[declined]["status"] == "failed"
    assert list(payments[ok]) == list(columns("payments"))
    assert failed == [declined]
    assert none_yet == []
    assert [(r["id"], r["payment_id"], r["amount"]) for r in refunds] == [(refund, ok, 500)]
    assert list(refunds[0]) == list(columns("refunds"))
    # Missing values are None, not NaN/NaT/NA: a record can go to json.dumps as it is.
    assert all(v is None or v == v for v in payments[ok].values())
    assert not (tmp_path / "cache").exists()


def test_the_stream_equals_a_sync_and_pages_on_demand(shop: Shop, tmp_path: Path) -> None:
    shop.history(payments=250, days=10)  # three pages of 100
    with shop.connect(tmp_path) as gw:
        streamed = list(gw.iter_payments())
        cached = gw.payments()
        first = gw.iter_payments()
        head = list(itertools.islice(first, 3))
        first.close()  # stopping early stops the listing; the gateway stays usable
        again = list(itertools.islice(gw.iter_payments(), 2))
    assert len(streamed) == 250 == len({p["id"] for p in streamed})
    by_id = pd.DataFrame(streamed).set_index("id").sort_index()
    expected = cached.set_index("id").sort_index()
    assert by_id.index.equals(expected.index)
    assert (by_id["amount"] == expected["amount"]).all()
    assert (by_id["status"] == expected["status"]).all()
    assert len(head) == 3 and len(again) == 2


def test_filters_are_checked_when_called(shop: Shop, tmp_path: Path) -> None:
    with shop.connect(tmp_path) as gw:
        with pytest.raises(gwtools.ConfigurationError, match="did you mean 'failed'"):
            gw.iter_payments(status="declined")  # before the first next(): nothing sent
        with pytest.raises(gwtools.ConfigurationError, match="swap them"):
            gw.iter_refunds(since="2024-06-02", until="2024-06-01")


def test_an_unreadable_page_raises_malformed_body_error(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    shop.faults(non_json_rate=1.0)
    try:
        with shop.connect(tmp_path, max_attempts=2) as gw, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(gwtools.MalformedBodyError) as info:
                list(gw.iter_payments())
    finally:
        shop.clear_faults()
    assert isinstance(info.value, gwtools.APIError) and info.value.http_status == 200
