"""Gateway behaviour: the embedded default, running under an event loop, reading with filters."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from click.testing import CliRunner

import gwtools
import gwtools._gateway as gateway
from gwtools._errors import APIError, ConfigurationError, NotFoundError
from gwtools._schema import columns
from gwtools.cli import main
from tests.library._shop import CARD_DECLINE, Shop


def test_embedded_sandbox_when_nothing_is_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("GW_API_KEY", "GW_BASE_URL", "GW_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    # A history size no other test uses: an embedded sandbox is started once per process and
    # history, and its notice is logged then, so a shared size would start it elsewhere.
    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "117")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "5")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "none")  # incidents add payments of their own
    caplog.set_level(logging.INFO, logger="gwtools")
    gw = gateway.connect(cache_dir=tmp_path)
    again = gateway.connect(cache_dir=tmp_path)
    assert gw.settings.embedded and gw.settings.account == "sandbox"
    assert gw.settings.base_url == again.settings.base_url  # one sandbox per process
    said = [r for r in caplog.records if "embedded sandbox" in r.getMessage()]
    assert len(said) == 1 and gw.settings.api_key not in said[0].getMessage()
    payments = gw.payments()
    assert len(payments) == 117 and list(payments.columns) == list(columns("payments"))
    # Sandbox data says so in the frame itself, whatever is read and however it is filtered.
    assert payments.attrs["gwtools_source"] == "sandbox data"
    assert gw.refunds(refresh=False).attrs["gwtools_source"] == "sandbox data"
    assert gw.payments(since="2100-01-01", refresh=False).attrs["gwtools_source"] == "sandbox data"
    assert (tmp_path / "sandbox" / "test" / "payments" / "_state.json").exists()
    # The folder says so too: whoever reads it later, without the Gateway, labels the rows.
    assert gateway.cache_state(gw.cache_path, "payments")["sandbox_data"] is True
    assert gwtools.read_cache(tmp_path, "refunds").attrs["gwtools_source"] == "sandbox data"
    assert gwtools.open_source(tmp_path).sandbox_data
    gw.close()
    again.close()


def test_embedded_true_ignores_a_configured_gateway(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`gwtools demo` connects with embedded=True: a configured real gateway is not used."""
    monkeypatch.setenv("GW_API_KEY", "sk_test_" + "q" * 24)
    monkeypatch.setenv("GW_BASE_URL", "https://gateway.invalid")
    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "120")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "5")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "none")
    assert not gateway.connect(cache_dir=tmp_path).settings.embedded  # the environment wins
    gw = gateway.connect(cache_dir=tmp_path, embedded=True)
    assert gw.settings.embedded and gw.settings.base_url.startswith("http://127.0.0.1")
    gw.close()
    with pytest.raises(ConfigurationError, match="leave api_key and base_url out") as err:
        gateway.connect(base_url="https://gateway.invalid", embedded=True)
    assert err.value.param == "embedded"


def test_sync_works_under_a_running_event_loop(shop: Shop, tmp_path: Path) -> None:
    """As in Jupyter, where the kernel's loop is already running."""
    shop.card()

    async def notebook_cell() -> int:
        with shop.connect(tmp_path) as gw:
            return len(gw.payments())

    assert asyncio.run(notebook_cell()) == 1


def test_a_gateway_nobody_closed_lets_go_without_waiting_for_its_loop(
    shop: Shop, tmp_path: Path
) -> None:
    """The garbage collector runs a dropped Gateway's finalizer in whatever thread collects,
    which may be one its loop is waiting for (an import lock held there): the finalizer must
    not wait for the loop, or both wait for ever. Here the loop is held busy until the
    finalizer has returned; then it closes the client and stops on its own."""
    gw = shop.connect(tmp_path)
    loop = gw._ensure()
    client = gw._client
    assert client is not None and gw._finalizer is not None
    busy, finalized = threading.Event(), threading.Event()
    loop.loop.call_soon_threadsafe(busy.wait)  # the loop thread blocks until busy is set

    def collect() -> None:
        gw._finalizer()  # type: ignore[misc]  # what gc does to a Gateway nobody closed
        finalized.set()

    collector = threading.Thread(target=collect, daemon=True)
    collector.start()
    # a guard for the old code (which waits for the busy loop for ever), not a timing
    assert finalized.wait(timeout=60), "the finalizer waited for the gateway's loop"
    busy.set()
    loop.thread.join(timeout=60)
    assert not loop.thread.is_alive() and loop.loop.is_closed()
    assert client._http.is_closed
    gw.close()  # still idempotent after the finalizer ran


def test_close_waits_until_the_loop_has_stopped(shop: Shop, tmp_path: Path) -> None:
    gw = shop.connect(tmp_path)
    loop = gw._ensure()
    client = gw._client
    assert client is not None
    gw.close()
    assert not loop.thread.is_alive() and loop.loop.is_closed() and client._http.is_closed
    gw.close()


def test_payments_filters_and_refresh(shop: Shop, tmp_path: Path) -> None:
    ok = shop.card()
    declined = shop.card(CARD_DECLINE)
    with shop.connect(tmp_path) as gw:
        assert gw.payments(status="failed")["id"].tolist() == [declined]
        later = shop.card()
        assert set(gw.payments(refresh=False)["id"]) == {ok, declined}
        assert set(gw.payments()["id"]) == {ok, declined, later}
        assert gw.payments(since="2100-01-01", refresh=False).empty
        assert "gwtools_source" not in gw.payments(refresh=False).attrs  # a gateway's own data
        assert gateway.cache_state(gw.cache_path, "payments")["sandbox_data"] is False
        assert "gwtools_source" not in gwtools.read_cache(tmp_path, "payments").attrs
        assert not gwtools.open_source(tmp_path).sandbox_data
        assert gw.last_result is not None and "payments" in str(gw.last_result)
        assert "<table>" in gw.last_result._repr_html_()


def test_reading_a_cache_no_sync_has_written_warns(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    with shop.connect(tmp_path) as gw:
        # The gateway has a payment; this cache has none yet: empty, and said so.
        with pytest.warns(
            gwtools.GatewayDataWarning, match=r"no sync of them has completed.*gw\.sync"
        ):
            lazy = gw.scan("payments")
        assert len(lazy) == 0 and lazy.columns == list(columns("payments"))
        with pytest.warns(gwtools.GatewayDataWarning, match="nothing is cached at"):
            frame = gw.refunds(refresh=False)
        assert frame.empty and frame.attrs["gwtools_cache"]["complete"] is False
        gw.sync()
        with warnings.catch_warnings():
            warnings.simplefilter("error", gwtools.GatewayDataWarning)
            assert len(gw.scan("payments")) == 1 and len(gw.payments(refresh=False)) == 1
            assert gw.refunds(refresh=False).attrs["gwtools_cache"]["complete"] is True


def test_pacing_off_still_reads_rate_limit_headers(shop: Shop, tmp_path: Path) -> None:
    """max_rps=None (a server without limits) must not trip over X-RateLimit-* headers."""
    ids = {shop.card(), shop.card(CARD_DECLINE)}
    with shop.connect(tmp_path, max_rps=None) as gw:
        assert set(gw.payments()["id"]) == ids


def test_filters_are_checked_before_anything_is_sent(shop: Shop, tmp_path: Path) -> None:
    """A word the table does not use is an error naming the right word, not 0 rows."""
    declined = shop.card(CARD_DECLINE)
    ok = shop.card()
    payment_statuses = (
        "pending, requires_action, processing, authorized, succeeded, failed, canceled, "
        "expired, unknown"
    )
    with shop.connect(tmp_path) as gw:
        with pytest.raises(ConfigurationError, match="did you mean 'failed'") as info:
            gw.payments(status="declined")
        assert payment_statuses in str(info.value) and info.value.param == "status"
        with pytest.raises(ConfigurationError, match="'bogus' is not a refund status") as info:
            gw.refunds(status="bogus")
        assert "pending, succeeded, failed, unknown" in str(info.value)
        with pytest.raises(ConfigurationError, match=r"since \(2024-06-02.*is after until"):
            gw.payments(since="2024-06-02", until="2024-06-01")
        with pytest.raises(ConfigurationError, match="is the same as until"):
            gw.refunds(since="2024-06-01", until="2024-06-01T00:00:00Z")
        assert isinstance(info.value, ValueError)  # as before, for code that caught ValueError
        assert gw.last_result is None and gw._client is not None
        assert gw._client.stats.requests == 0  # refused before syncing
        # A real status in any case is that status.
        assert gw.payments(status="FAILED")["id"].tolist() == [declined]
        both = gw.payments(status=["Failed", "SUCCEEDED"], refresh=False)
        assert set(both["id"]) == {declined, ok}
        assert gw.refunds(status="Pending", refresh=False).empty
    # The cache read without a gateway checks the same way.
    with pytest.raises(ConfigurationError, match="did you mean 'failed'"):
        gwtools.read_cache(tmp_path, "payments", status="declined")
    with pytest.raises(ConfigurationError, match="is after until"):
        gwtools.read_cache(tmp_path, "refunds", since="2024-06-02", until="2024-06-01")
    assert gwtools.read_cache(tmp_path, "payments", status="FAILED")["id"].tolist() == [declined]


def test_the_cli_uses_the_same_check(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    env = {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url, "GW_CACHE_DIR": str(tmp_path)}
    runner = CliRunner()
    assert runner.invoke(main, ["sync", "--account", "shop"], env=env).exit_code == 0
    export = ["export", "payments", "--format", "csv", "--out", "-", "--account", "shop"]
    result = runner.invoke(main, [*export, "--no-refresh", "--status", "declined"], env=env)
    assert result.exit_code == 2 and "did you mean 'failed'" in result.output
    assert "--status" in result.output and "canonical payments statuses" in result.output
    result = runner.invoke(
        main, [*export, "--no-refresh", "--since", "2024-06-02", "--until", "2024-06-01"], env=env
    )
    assert result.exit_code == 2 and "is after --until=2024-06-01" in result.output
    result = runner.invoke(main, [*export, "--no-refresh", "--status", "FAILED"], env=env)
    assert result.exit_code == 0 and result.stdout.startswith("id,")


def test_the_demo_history_ends_at_the_present_unless_pinned(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from gwtools._embedded import DEMO_INCIDENTS, PINNED_NOW, demo_history

    monkeypatch.delenv("GW_SANDBOX_NOW", raising=False)
    monkeypatch.delenv("GW_SANDBOX_INCIDENTS", raising=False)
    history = demo_history()
    assert history.now is None and history.incidents == DEMO_INCIDENTS
    assert abs(history.ends_at() - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)

    monkeypatch.setenv("GW_SANDBOX_NOW", "2026-11-20T12:00:00Z")
    assert demo_history().now == PINNED_NOW
    monkeypatch.setenv("GW_SANDBOX_NOW", "yesterday")
    with pytest.raises(gwtools.ConfigurationError, match="GW_SANDBOX_NOW"):
        demo_history()
    monkeypatch.delenv("GW_SANDBOX_NOW")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "card-testing, decline-spike")
    assert demo_history().incidents == ("card-testing", "decline-spike")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "volcano")
    with pytest.raises(gwtools.ConfigurationError, match="GW_SANDBOX_INCIDENTS"):
        demo_history()


def test_each_demo_history_variable_is_read_alone_and_blank_is_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gwtools._embedded import DEMO, demo_history

    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "1200")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "30d")
    with pytest.raises(gwtools.ConfigurationError) as raised:
        demo_history()
    said = str(raised.value)
    # The variable that is wrong, and only it, with its value and what to do.
    assert "GW_SANDBOX_DAYS='30d'" in said and "GW_SANDBOX_PAYMENTS" not in said, said
    assert "whole number" in said and "unset" in said, said
    # Blank (`GW_SANDBOX_DAYS=${DAYS:-}` with DAYS unset) is not set, as a blank
    # GW_SANDBOX_NOW or GW_API_KEY is; a variant is read whatever its case and spaces.
    for name in ("GW_SANDBOX_PAYMENTS", "GW_SANDBOX_DAYS"):
        monkeypatch.setenv(name, " ")
    monkeypatch.setenv("GW_SANDBOX_VARIANT", "")
    history = demo_history()
    assert (history.payments, history.days, history.variant) == (
        DEMO.payments,
        DEMO.days,
        DEMO.variant,
    )
    monkeypatch.setenv("GW_SANDBOX_VARIANT", " a ")
    assert demo_history().variant == "A"


@pytest.mark.skipif(not Path("/proc/self/ns/pid").exists(), reason="Linux PID namespaces")
def test_private_caches_of_another_pid_namespace_are_left_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A temporary folder shared by containers (CI runners mounting one /tmp, pods sharing an
    # emptyDir): another container's kernel has a PID that means nothing here, and often no
    # process has it here, so its live cache was removed as an orphan under its report.
    from gwtools import _embedded

    ours = os.stat("/proc/self/ns/pid").st_ino
    dead = 2_000_000_000  # beyond any pid_max: no process has it in this namespace
    elsewhere = tmp_path / f"gwtools-embedded-{dead}-ns{ours + 1}-abc"
    orphan = tmp_path / f"gwtools-embedded-{dead}-ns{ours}-def"
    legacy = tmp_path / f"gwtools-embedded-{dead}-ghi"  # named before namespaces were
    for path in (elsewhere, orphan, legacy):
        (path / "sandbox").mkdir(parents=True)
    registry = _embedded._Registry()
    monkeypatch.setattr(_embedded.tempfile, "tempdir", str(tmp_path))
    mine = Path(registry.private_cache_dir())
    try:
        assert elsewhere.exists()
        assert not orphan.exists() and not legacy.exists()
        assert mine.name.startswith(f"gwtools-embedded-{os.getpid()}-ns{ours}-"), mine
    finally:
        assert registry.private_cache is not None
        registry.private_cache.cleanup()


def test_the_unpinned_demo_history_reaches_the_last_days(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """'The last 30 days' finds demo data: the history ends at the present."""
    monkeypatch.delenv("GW_SANDBOX_NOW", raising=False)
    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "150")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "20")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "none")
    with gateway.connect(cache_dir=tmp_path) as gw:
        since = pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=30)
        recent = gw.payments(since=since.isoformat())
    assert len(recent) == 150


# -- a base URL or account that cannot be right ----------------------------------------------

KEY = "sk_" + "test_" + "Zq81hG7aPp3kLm0xWv6tRb2N"  # built at run time: no key literal


def _keyless(err: BaseException, key: str) -> None:
    for text in (str(err), repr(err)):
        assert key not in text and key[8:-4] not in text, text


@pytest.mark.parametrize("extra", ["/api", "/v2", "/api/v1"])
def test_a_base_url_with_an_extra_path_names_the_one_to_use(
    shop: Shop, tmp_path: Path, extra: str
) -> None:
    """The sandbox serves /v1 at its root: a list under another path is a wrong base URL, and
    the error says which to use rather than talking about ids and test/live modes."""
    with gateway.connect(shop.key, shop.base_url + extra, cache_dir=tmp_path) as gw:
        for call in (gw.sync, lambda: list(gw.iter_payments()), gw.refunds):
            with pytest.raises(NotFoundError) as info:
                call()
            text = str(info.value)
            assert info.value.http_status == 404
            assert f"404 Not Found from GET {shop.base_url}{extra.removesuffix('/v1')}/v1/" in text
            assert "base URL's path looks wrong" in text
            assert f"base_url='{shop.base_url}'" in text and "check the id" not in text
            _keyless(info.value, shop.key)


def _redirecting(status: int, seen: list[str]) -> httpx.ASGITransport:
    """A misconfigured server in front of the gateway: every request is redirected to https."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        host = dict(scope["headers"])[b"host"].decode()
        seen.append(host)
        location = f"https://{host}{scope['path']}".encode()
        start = {"type": "http.response.start", "status": status}
        await send({**start, "headers": [(b"location", location)]})
        await send({"type": "http.response.body", "body": b"<html>Moved</html>"})

    return httpx.ASGITransport(app)


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_an_error_naming_where_it_points(tmp_path: Path, status: int) -> None:
    """Not followed (the key must not go on to another host), not retried, not read as a
    malformed body (which a sync used to record as an incomplete listing, without raising)."""
    seen: list[str] = []
    transport = _redirecting(status, seen)
    with gateway.connect(KEY, "http://gw.example", cache_dir=tmp_path, transport=transport) as gw:
        for call in (gw.sync, lambda: list(gw.iter_refunds())):
            with pytest.raises(APIError) as info:
                call()
            err = info.value
            assert type(err) is APIError and err.http_status == status
            text = str(err)
            assert f"{status} " in text and "from GET http://gw.example/v1/" in text
            assert "redirects to https://gw.example/v1/" in text and "(http -> https)" in text
            assert "use base_url='https://gw.example'" in text
            _keyless(err, KEY)
        assert gw._client is not None and gw._client.stats.retries == 0
    assert seen and set(seen) == {"gw.example"}


@pytest.mark.parametrize(
    ("url", "hidden"),
    [
        ("http://gw.example:8080#access_token=abc123", "abc123"),
        ("http://gw.example:8080/#", None),
        ("http://gw.example:8080?", None),
        ("http://gw.example:8080/?mode=test", "mode=test"),
        ("http://admin:hunter2@gw.example:8080", "hunter2"),
        ("http://admin:hunter2@gw.example:99999", "hunter2"),  # before the port is judged
    ],
)
def test_a_base_url_is_taken_whole_or_refused(url: str, hidden: str | None, tmp_path: Path) -> None:
    """A fragment or query used to be kept in repr but dropped from requests."""
    for call in (
        lambda: gateway.connect(KEY, url, cache_dir=tmp_path),
        lambda: gateway.cache_path(KEY, url, cache_dir=tmp_path),
    ):
        with pytest.raises(ConfigurationError) as info:
            call()
        text = str(info.value)
        assert info.value.param == "base_url" and "remove it" in text, text
        assert "base_url='http://gw.example:" in text
        assert hidden is None or hidden not in text
        _keyless(info.value, KEY)


@pytest.mark.parametrize("account", ["", "   ", "\t"])
def test_an_empty_account_is_refused_with_or_without_a_key(
    account: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The embedded sandbox used to read account="" as its default, "sandbox"."""
    # Small, if it were started after all (it must not be: the account is checked first).
    monkeypatch.setenv("GW_SANDBOX_PAYMENTS", "23")
    monkeypatch.setenv("GW_SANDBOX_DAYS", "2")
    monkeypatch.setenv("GW_SANDBOX_INCIDENTS", "none")
    for call in (
        lambda: gateway.connect(cache_dir=tmp_path, account=account),
        lambda: gateway.connect(cache_dir=tmp_path, account=account, embedded=True),
        lambda: gateway.connect(KEY, "http://gw.example", cache_dir=tmp_path, account=account),
        lambda: gateway.cache_path(cache_dir=tmp_path, account=account),
        lambda: gateway.cache_path(KEY, "http://gw.example", cache_dir=tmp_path, account=account),
    ):
        with pytest.raises(ConfigurationError, match=r"is (empty|blank)") as info:
            call()
        assert info.value.param == "account" and "leave account out" in str(info.value)
        _keyless(info.value, KEY)
    assert not any(tmp_path.iterdir())  # no folder made for it
