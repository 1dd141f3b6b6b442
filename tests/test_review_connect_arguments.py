"""connect() and the resource names, given what a notebook pastes: a key whose secret part is
missing (``GW_API_KEY="sk_test_$SECRET"`` with SECRET unset), an endpoint's URL as the base URL,
an empty cache folder, a resource name in another case.

Each is refused before anything is sent, naming the argument (``param``) and what to give,
never showing the key; nothing is read from or written to a folder nobody chose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gwtools

KEY = "sk_" + "test_" + "k" * 20 + "wxyz"  # built at run time: no key literal in the source
URL = "http://127.0.0.1:9"


@pytest.mark.parametrize("prefix", ["sk_test_", "sk_live_"])
def test_a_key_that_is_only_its_prefix_is_refused(tmp_path: Path, prefix: str) -> None:
    with pytest.raises(gwtools.ConfigurationError) as info:
        gwtools.connect(prefix, URL, cache_dir=tmp_path)
    assert info.value.param == "api_key"
    assert "nothing after" in str(info.value) and prefix in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        (f"{URL}/v1/payments", f"{URL}/v1"),
        (f"{URL}/v1/refunds/", f"{URL}/v1"),
        (f"{URL}/gw/v1/payments/pay_123", f"{URL}/gw/v1"),
    ],
)
def test_an_endpoint_url_as_the_base_url_is_refused_with_the_base_meant(
    tmp_path: Path, given: str, meant: str
) -> None:
    # It once became {given}/v1: every list then failed with a 404 at the first sync.
    with pytest.raises(gwtools.ConfigurationError) as info:
        gwtools.connect(KEY, given, cache_dir=tmp_path)
    assert info.value.param == "base_url"
    assert f"base_url={meant!r}" in str(info.value)
    assert "k" * 8 not in str(info.value)


def test_a_base_url_under_its_own_path_is_kept(tmp_path: Path) -> None:
    gw = gwtools.connect(KEY, f"{URL}/payments-api/", cache_dir=tmp_path)
    assert gw.settings.base_url == f"{URL}/payments-api/v1"


@pytest.mark.parametrize("folder", ["", "  "])
def test_an_empty_cache_folder_is_refused_not_read_as_the_working_directory(
    folder: str,
) -> None:
    for call in (
        lambda: gwtools.connect(KEY, URL, cache_dir=folder),
        lambda: gwtools.cache_path(KEY, URL, cache_dir=folder),
    ):
        with pytest.raises(gwtools.ConfigurationError) as info:
            call()
        assert info.value.param == "cache_dir"
        assert "leave cache_dir out" in str(info.value)


@pytest.mark.parametrize("given", ["Payments", " payments", "REFUNDS", "Refund"])
def test_a_resource_in_another_case_names_the_one_meant(given: str) -> None:
    meant = "refunds" if "ef" in given.lower() else "payments"
    for call in (
        lambda: gwtools.read_cache("data/sample-cache", given),  # type: ignore[arg-type]
        lambda: gwtools.scan_cache("data/sample-cache", given),  # type: ignore[arg-type]
    ):
        with pytest.raises(gwtools.ConfigurationError) as info:
            call()
        assert info.value.param == "resource"
        assert f"did you mean {meant!r}?" in str(info.value)


def test_the_other_key_and_version_errors_name_their_argument(tmp_path: Path) -> None:
    for key in ("pk_" + "test_" + "k" * 24, "rk_" + "test_" + "k" * 24):
        with pytest.raises(gwtools.ConfigurationError) as info:
            gwtools.connect(key, URL, cache_dir=tmp_path)
        assert info.value.param == "api_key"
    with pytest.raises(gwtools.ConfigurationError) as info:
        gwtools.connect(KEY, URL, cache_dir=tmp_path, service_version="2024-1-1")
    assert info.value.param == "service_version"
