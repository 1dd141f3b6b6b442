"""Settings from arguments and GW_* variables: precedence, key checks, masking."""

from __future__ import annotations

from pathlib import Path

import pytest

from gwtools._config import account_name, check_filters, normalize_base_url, resolve_settings
from gwtools._errors import ConfigurationError, mask_key

KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GW_API_KEY", "GW_BASE_URL", "GW_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_arguments_win_over_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GW_API_KEY", "sk_live_fromenvironment0000")
    monkeypatch.setenv("GW_BASE_URL", "http://env.example:1")
    monkeypatch.setenv("GW_CACHE_DIR", str(tmp_path / "env"))
    s = resolve_settings(KEY, "https://arg.example/", cache_dir=tmp_path / "arg")
    assert s is not None
    assert (s.api_key, s.base_url, s.cache_dir, s.mode) == (
        KEY,
        "https://arg.example/v1",
        tmp_path / "arg",
        "test",
    )


def test_environment_is_the_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GW_API_KEY", "sk_live_fromenvironment0000")
    monkeypatch.setenv("GW_BASE_URL", "http://env.example:1/v1/")
    monkeypatch.setenv("GW_CACHE_DIR", str(tmp_path))
    s = resolve_settings()
    assert s is not None
    assert (s.base_url, s.cache_dir, s.mode) == ("http://env.example:1/v1", tmp_path, "live")


def test_neither_key_nor_url_means_embedded() -> None:
    assert resolve_settings() is None


@pytest.mark.parametrize(
    ("key", "url", "missing"),
    [(KEY, None, "no base URL"), (None, "http://x.example", "no API key")],
)
def test_only_one_of_key_and_url_is_refused(key: str | None, url: str | None, missing: str) -> None:
    with pytest.raises(ConfigurationError, match=missing) as info:
        resolve_settings(key, url)
    assert KEY not in str(info.value)


@pytest.mark.parametrize("key", ["pk_test_abcdefghijklmnop1234", "pk_live_abcdefghijklmnop1234"])
def test_publishable_key_is_refused_up_front(key: str) -> None:
    with pytest.raises(ConfigurationError, match="publishable key") as info:
        resolve_settings(key, "http://x.example")
    assert key not in str(info.value) and key[-4:] in str(info.value)


@pytest.mark.parametrize("key", ["hello", "rk_test_123456789012", " sk_test_abc123456789 ", ""])
def test_malformed_key_is_refused(key: str) -> None:
    with pytest.raises(ConfigurationError):
        resolve_settings(key or "x", "http://x.example")


def test_bad_base_url_and_version_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="absolute http"):
        normalize_base_url("ftp://x")
    with pytest.raises(ConfigurationError, match="query string"):
        normalize_base_url("http://x.example/?key=sk_test_abc")
    with pytest.raises(ConfigurationError, match="service_version"):
        resolve_settings(KEY, "http://x", service_version="2020-01-01")


def test_repr_masks_the_key(tmp_path: Path) -> None:
    s = resolve_settings(KEY, "http://x.example", cache_dir=tmp_path)
    assert s is not None
    for text in (repr(s), str(s)):
        assert KEY not in text and "sk_test_…p7dc" in text
    assert mask_key(KEY) == "sk_test_…p7dc"
    assert mask_key("sk_test_ab") == "sk_test_…"  # too short to show any of it


def test_account_is_named_or_a_hash_not_the_key() -> None:
    name = account_name(KEY, None)
    assert name.startswith("key-") and KEY[8:] not in name and name == account_name(KEY, None)
    assert name != account_name(KEY + "x", None)
    assert account_name(KEY, "shop-my") == "shop-my"
    with pytest.raises(ConfigurationError, match="directory"):
        account_name(KEY, "../etc")


ZWSP = "\u200b"


@pytest.mark.parametrize(
    ("key", "said", "todo"),
    [
        (
            f"{KEY[:10]}{ZWSP}{KEY[10:]}",
            "an invisible character (zero width space, U+200B) at position 11 of 33 characters",
            "copy the key again",
        ),
        (
            f"\ufeff{KEY}",
            "an invisible character (zero width no-break space, U+FEFF) at the start",
            "copy",
        ),
        (f"{KEY}\n", "a line break (U+000A) at the end", "the key is one line"),
        (f" {KEY}", "a space (U+0020) at the start", "keys have no spaces"),
        (f"{KEY[:10]}\t{KEY[10:]}", "a tab (U+0009) at position 11", "keys have no spaces"),
        (
            f"{KEY[:10]}é{KEY[10:]}",
            "a non-ASCII character (latin small letter e with acute, U+00E9) at position 11",
            "plain ASCII",
        ),
    ],
)
def test_a_key_that_cannot_be_sent_says_where_and_what_to_do(
    key: str, said: str, todo: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_settings(key, "http://x.example")
    text = str(info.value)
    assert said in text and todo in text and "Nothing was sent" in text
    assert "sk_test_…p7dc" in text and KEY[8:-4] not in text  # masked, never the key
    assert info.value.param == "api_key"


PAYMENT_STATUSES = (
    "pending, requires_action, processing, authorized, succeeded, failed, canceled, expired, "
    "unknown"
)


@pytest.mark.parametrize(
    ("resource", "status", "meant"),
    [
        ("payments", "declined", "'failed'"),
        ("payments", "paid", "'succeeded'"),
        ("payments", "cancelled", "'canceled'"),
        ("payments", "requires_capture", "'authorized'"),
        ("payments", "faild", "'failed'"),  # a typo
        ("payments", "open", "pending, requires_action, processing, authorized"),
        ("payments", "refunded", "the `refunded` column"),
        ("refunds", "declined", "'failed'"),
        ("refunds", "refunded", "'succeeded'"),
        ("refunds", "processing", "'pending'"),
    ],
)
def test_a_status_synonym_names_the_canonical_word(resource: str, status: str, meant: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        check_filters(resource, status=status)
    text = str(info.value)
    assert f"status {status!r} (" in text and meant in text and info.value.param == "status"
    allowed = PAYMENT_STATUSES if resource == "payments" else "pending, succeeded, failed, unknown"
    assert f"the canonical {resource} statuses are: {allowed}" in text


def test_status_case_and_separators_do_not_matter() -> None:
    assert check_filters("payments", status="FAILED").status == ("failed",)
    assert check_filters("payments", status=[" Failed ", "Requires-Action", "failed"]).status == (
        "failed",
        "requires_action",
    )
    assert check_filters("refunds", status="Pending").status == ("pending",)
    assert check_filters("payments").status is None


def test_bad_statuses_are_named_and_good_ones_not() -> None:
    with pytest.raises(ConfigurationError) as info:
        check_filters("payments", status=["failed", "bogus", "declined"])
    text = str(info.value)
    assert "'bogus' and 'declined' (did you mean 'failed'?) are not payment statuses" in text
    assert "'failed'" not in text.split("did you mean")[0]
    with pytest.raises(ConfigurationError, match="not a refund status"):
        check_filters("refunds", status="requires_action")  # a payment status, not a refund's
    with pytest.raises(ConfigurationError, match="a string or a list of strings"):
        check_filters("payments", status=[3])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="selects no status at all"):
        check_filters("payments", status=[])


def test_since_and_until_are_utc_and_ordered() -> None:
    import pandas as pd

    f = check_filters("payments", since="2024-06-01", until="2024-06-01T10:00:00+08:00")
    assert f.since == pd.Timestamp("2024-06-01T00:00:00Z")
    assert f.until == pd.Timestamp("2024-06-01T02:00:00Z")
    with pytest.raises(ConfigurationError, match="is after until") as info:
        check_filters("refunds", since="2024-06-02", until="2024-06-01")
    assert info.value.param == "since" and "swap them" in str(info.value)
    with pytest.raises(ConfigurationError, match="is the same as until") as info:
        check_filters("payments", since="2024-06-01T08:00:00+08:00", until="2024-06-01")
    # equal bounds: swapping them changes nothing, so it is not advised
    assert "swap" not in str(info.value) and "move until later" in str(info.value)
    # the example is since's own (UTC) day, not a fixed 2024 one that reads as the value to give
    assert "until='2024-06-02' includes all of 2024-06-01 (UTC)" in str(info.value)
    with pytest.raises(ConfigurationError, match="the same as until") as info:
        check_filters("payments", since="2026-11-01", until="2026-11-01")
    assert "until='2026-11-02' includes all of 2026-11-01 (UTC)" in str(info.value)
    with pytest.raises(ConfigurationError, match="since=1717200000 is a number"):
        check_filters("payments", since=1717200000)
    with pytest.raises(ConfigurationError, match="until='yesterday-ish' is not a date"):
        check_filters("payments", until="yesterday-ish")
    with pytest.raises(ConfigurationError, match="until='NaT' is not a date"):
        check_filters("payments", until="NaT")
    with pytest.raises(ConfigurationError, match=r"did you mean 'payments'\?"):
        check_filters("payment")


def test_the_light_resource_list_is_the_schemas() -> None:
    # _config spells the resources itself (importing _schema loads pandas and pyarrow); the
    # contract's own list, derived from the Resource type, is the one they must match.
    from gwtools import _config, _schema

    assert _config.RESOURCES == _schema.RESOURCES == ("payments", "refunds")
