"""Settings from arguments and GW_* variables: precedence, key checks, masking."""

from __future__ import annotations

from pathlib import Path

import pytest

from gwtools._config import account_name, normalize_base_url, resolve_settings
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
