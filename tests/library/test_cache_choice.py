"""A read of a cache folder that holds several datasets, or not the one asked for, says what
the folder holds on the error itself (``.datasets``), as well as in its message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import gwtools

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample-cache"


@pytest.fixture
def two_accounts(tmp_path: Path) -> Path:
    root = tmp_path / "cache"
    shutil.copytree(SAMPLE / "sandbox", root / "shop-a")
    shutil.copytree(SAMPLE / "sandbox" / "test", root / "shop-b" / "live")
    return root


def test_several_accounts_raise_an_ambiguous_cache_error_listing_them(two_accounts: Path) -> None:
    with pytest.raises(gwtools.AmbiguousCacheError) as info:
        gwtools.read_cache(two_accounts, "payments")
    err = info.value
    assert isinstance(err, gwtools.ConfigurationError)  # caught as before
    assert err.resource == "payments"
    assert err.datasets == {
        ("shop-a", "test"): f"{two_accounts}/shop-a/test/payments",
        ("shop-b", "live"): f"{two_accounts}/shop-b/live/payments",
    }
    # naming one picks it
    assert len(gwtools.read_cache(two_accounts, "payments", account="shop-b")) == 2000


def test_an_account_the_folder_lacks_says_what_it_holds(two_accounts: Path) -> None:
    with pytest.raises(gwtools.CacheNotFoundError) as info:
        gwtools.read_cache(two_accounts, "refunds", account="shop-c")
    err = info.value
    assert err.resource == "refunds" and not err.is_file
    assert sorted(err.datasets) == [("shop-a", "test"), ("shop-b", "live")]
    assert "shop-c" in str(err) and "account='shop-a'" in str(err)


def test_a_file_given_as_the_folder_is_said_to_be_one(tmp_path: Path) -> None:
    a_file = tmp_path / "payments.csv"
    a_file.write_text("id\n")
    with pytest.raises(gwtools.CacheNotFoundError) as info:
        gwtools.read_cache(a_file, "payments")
    assert info.value.is_file and info.value.datasets == {}


def test_cache_state_of_a_folder_with_several_datasets_takes_the_account_and_mode_it_names(
    two_accounts: Path,
) -> None:
    # Its error said "pass account= and mode=", and cache_state took neither (TypeError).
    with pytest.raises(gwtools.AmbiguousCacheError, match="pass account= and mode="):
        gwtools.cache_state(two_accounts, "payments")
    chosen = gwtools.cache_state(two_accounts, "payments", account="shop-b", mode="live")
    assert chosen == gwtools.cache_state(two_accounts / "shop-b" / "live", "payments")
    assert chosen["high_water"]
    assert gwtools.cache_state(two_accounts, "payments", mode="TEST") == gwtools.cache_state(
        two_accounts / "shop-a" / "test", "payments"
    )
    with pytest.raises(gwtools.ConfigurationError, match="or leave it out"):
        gwtools.cache_state(two_accounts, "payments", mode="prod")
