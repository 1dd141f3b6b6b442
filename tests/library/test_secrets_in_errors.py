"""Nothing raised holds the key: messages, reprs, args, chains and the objects they reach.

Error reporters (Sentry and the like) walk exactly what :func:`leaks` walks: ``__cause__``,
``__context__``, ``args`` and every attribute, down to httpx requests and their headers. Each
test drives one way the library can fail (a closed or silent loopback port, the sandbox's
401/404/429/500, dropped connections, non-JSON bodies, 402/409 answers, keys that cannot be
sent, publishable keys, bad base URLs) through ``sync()``, ``payments()`` and direct client
calls, and asserts the key is nowhere in what was raised. Tracebacks' frames (their locals)
are test_secrets_exposure.py's.
"""

from __future__ import annotations

import asyncio
import re
import socket
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

import gwtools._gateway as gateway
from gwtools._config import Settings, normalize_base_url
from gwtools._errors import (
    APIConnectionError,
    APIError,
    AuthenticationError,
    CardError,
    ConfigurationError,
    GatewayError,
    InvalidRequestError,
    NotFoundError,
    RateLimitError,
    error_from_response,
)
from gwtools.http._client import Client
from gwtools.sync._result import GatewayDataWarning
from tests.library._shop import CARD_DECLINE, Shop

ZWSP = "\u200b"
_SKIP = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.FrameType,
    types.TracebackType,
    types.CodeType,
    type,
)


def fragments(key: str) -> set[str]:
    """What must not appear: every 8 characters in a row of the key's secret part.

    The prefix and the last four characters are what the masked form (``sk_test_…abcd``) shows;
    an invisible character splits the key into runs, each of which is checked.
    """
    prefix = re.match(r"[^!-~]*(?:sk|pk)_(?:test|live)_", key)
    body = key[prefix.end() :] if prefix else key
    runs = re.split(r"[^!-~]", body[:-4])
    found = {run[i : i + 8] for run in runs for i in range(len(run) - 7)}
    assert found, f"key too short to check: {len(key)} characters"
    return found


def leaks(obj: object, key: str, *, max_nodes: int = 200_000) -> list[str]:
    """The paths (``e.__context__._request.headers.raw[3][1]``) at which ``key`` shows.

    Walks exceptions (``str``, ``repr``, ``args``, ``__cause__``, ``__context__``, groups'
    ``exceptions``), httpx requests, responses and headers, mappings, sequences and every
    object's ``__dict__``/``__slots__`` attributes, recursively.
    """
    needles = fragments(key)
    bneedles = {n.encode() for n in needles}
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[object, str]] = [(obj, "e")]
    while stack:
        item, path = stack.pop()
        if item is None or isinstance(item, (bool, int, float, complex, *_SKIP)):
            continue
        if isinstance(item, str):
            if any(n in item for n in needles):
                found.append(path)
            continue
        if isinstance(item, (bytes, bytearray, memoryview)):
            if any(n in bytes(item) for n in bneedles):
                found.append(path)
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        assert len(seen) < max_nodes, f"walked {max_nodes} objects from {path}: too much"
        children: list[tuple[object, str]] = [(repr(item), f"repr({path})")]
        if isinstance(item, BaseException):
            children += [
                (str(item), f"str({path})"),
                (item.args, f"{path}.args"),
                (item.__cause__, f"{path}.__cause__"),
                (item.__context__, f"{path}.__context__"),
            ]
            if isinstance(item, BaseExceptionGroup):
                children.append((item.exceptions, f"{path}.exceptions"))
        if isinstance(item, httpx.Headers):
            children.append((item.raw, f"{path}.raw"))
        if isinstance(item, httpx.Request):
            children += [(item.headers, f"{path}.headers"), (str(item.url), f"{path}.url")]
        if isinstance(item, httpx.Response):
            children.append((item.headers, f"{path}.headers"))
        if isinstance(item, Mapping):
            for k, v in list(item.items()):
                children += [(k, f"{path}[key]"), (v, f"{path}[{k!r}]")]
        elif isinstance(item, (list, tuple, set, frozenset)):
            children += [(v, f"{path}[{i}]") for i, v in enumerate(item)]
        for name in getattr(type(item), "__slots__", ()):
            if isinstance(name, str) and hasattr(item, name):
                children.append((getattr(item, name), f"{path}.{name}"))
        attrs = getattr(item, "__dict__", None)
        if isinstance(attrs, dict):
            children += [(v, f"{path}.{k}") for k, v in attrs.items()]
        stack.extend(children)
    return found


def raised(call: Callable[[], object]) -> BaseException:
    """What ``call`` raised (it must raise)."""
    try:
        result = call()
    except BaseException as exc:  # whatever it is: that is what is looked at
        return exc
    raise AssertionError(f"expected an error, got {result!r}")


def assert_clean(exc: object, key: str) -> None:
    where = leaks(exc, key)
    assert not where, f"the key shows in {type(exc).__name__} at {where[:5]}"


# -- the walker finds what it must find ------------------------------------------------------


def test_the_walker_finds_a_key_in_an_httpx_chain(closed_url: str) -> None:
    """A raw httpx error carries the request, whose headers hold the key: found."""
    key = "sk_test_" + "Q7w" * 10
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}) as http:
        try:
            http.get(closed_url)
        except httpx.ConnectError:
            try:
                raise RuntimeError("could not connect") from None  # from None keeps __context__
            except RuntimeError as outer:
                wrapped = outer
    assert any(p.startswith("e.__context__._request.headers.raw") for p in leaks(wrapped, key))
    encode = raised(lambda: httpx.Headers({"Authorization": f"Bearer {key[:12]}{ZWSP}{key[12:]}"}))
    assert isinstance(encode, UnicodeEncodeError) and leaks(encode, key)
    assert not leaks(ConfigurationError("sk_test_…Q7wQ"), key)


# -- fixtures ------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def closed_url() -> str:
    """A loopback port nothing listens on: connections are refused at once."""
    return f"http://127.0.0.1:{_free_port()}"


@pytest.fixture
def silent_url() -> Iterator[str]:
    """A loopback port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(128)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dcXy9Z"
#: The read timeout: long enough for a sandbox on a loaded machine, so that only the silent
#: port (test_timeouts, which passes SILENT) ever times out; the outcome never depends on speed.
TIMEOUT = 30.0
SILENT = 0.2
OPTIONS: dict[str, Any] = {"max_attempts": 2, "max_429_attempts": 2, "timeout": TIMEOUT}


def _settings(key: str, base_url: str, tmp_path: Path) -> Settings:
    """Settings as connect() makes them, but with any key (direct client calls skip checks)."""
    return Settings(
        api_key=key,
        base_url=normalize_base_url(base_url),
        cache_dir=tmp_path,
        account="leak",
        mode="test",
    )


def _client_get(
    settings: Settings, path: str = "payments", timeout: float = TIMEOUT
) -> Callable[[], object]:
    async def go() -> object:
        client = Client(settings, max_attempts=2, max_429_attempts=2, timeout=timeout)
        try:
            return await client.get(path, parse=orjson.loads)
        finally:
            await client.aclose()

    return lambda: asyncio.run(go())


def _three_ways(
    key: str, base_url: str, tmp_path: Path, timeout: float = TIMEOUT
) -> list[BaseException]:
    """The errors of ``sync()``, ``payments()`` and a direct client call against ``base_url``."""
    errors = []
    options = {**OPTIONS, "timeout": timeout}
    with gateway.connect(key, base_url, cache_dir=tmp_path, account="leak", **options) as gw:
        errors.append(raised(gw.sync))
        errors.append(raised(lambda: gw.payments(status="failed")))
    errors.append(raised(_client_get(_settings(key, base_url, tmp_path), timeout=timeout)))
    return errors


# -- no gateway there ----------------------------------------------------------------------


def test_closed_port(closed_url: str, tmp_path: Path) -> None:
    for exc in _three_ways(KEY, closed_url, tmp_path):
        assert isinstance(exc, APIConnectionError), repr(exc)
        assert "ConnectError" in str(exc) and "127.0.0.1" in str(exc)
        assert exc.__context__ is None and exc.__cause__ is None
        assert_clean(exc, KEY)


def test_timeouts(silent_url: str, tmp_path: Path) -> None:
    for exc in _three_ways(KEY, silent_url, tmp_path, timeout=SILENT):
        assert isinstance(exc, APIConnectionError) and "ReadTimeout (limits:" in str(exc), repr(exc)
        assert_clean(exc, KEY)


# -- the sandbox answers with errors -------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "cls"),
    [
        ("error_rate", APIError),
        ("force_429_rate", RateLimitError),
        ("drop_rate", APIConnectionError),
    ],
)
def test_gateway_failures(shop: Shop, tmp_path: Path, fault: str, cls: type[GatewayError]) -> None:
    shop.faults(**{fault: 1.0})
    try:
        errors = _three_ways(shop.key, shop.base_url, tmp_path)
    finally:
        shop.clear_faults()
    for exc in errors:
        assert isinstance(exc, cls), repr(exc)
        assert_clean(exc, shop.key)


def test_bodies_that_are_not_json(shop: Shop, tmp_path: Path) -> None:
    """A sync records them as rejects and reports itself incomplete; a client call raises."""
    shop.card()
    shop.faults(non_json_rate=1.0)
    try:
        with shop.connect(tmp_path, **OPTIONS) as gw:
            with pytest.warns(GatewayDataWarning, match="the sync is incomplete.*unreadable"):
                result = gw.sync()
            # the refresh's sync is incomplete too, so the table read says it is partial
            with pytest.warns(GatewayDataWarning) as said:
                frame = gw.payments(refresh=True)
        error = raised(_client_get(_settings(shop.key, shop.base_url, tmp_path)))
    finally:
        shop.clear_faults()
    assert not result.complete and frame.empty
    messages = [str(w.message) for w in said]
    assert any(m.startswith("the sync is incomplete") for m in messages), messages
    assert any("no sync of them has completed" in m for m in messages), messages
    assert isinstance(error, APIError) and error.code == "malformed_body", repr(error)
    for thing in (result, gw.last_result, error):
        assert_clean(thing, shop.key)


def test_wrong_key_and_missing_object(shop: Shop, tmp_path: Path) -> None:
    wrong = "sk_test_" + "Zz9" * 10 + "Yy"
    for exc in _three_ways(wrong, shop.base_url, tmp_path):
        assert isinstance(exc, AuthenticationError) and exc.http_status == 401, repr(exc)
        assert_clean(exc, wrong)
    missing = raised(_client_get(_settings(shop.key, shop.base_url, tmp_path), "payments/pay_0"))
    assert isinstance(missing, NotFoundError) and missing.http_status == 404
    assert_clean(missing, shop.key)


def test_publishable_key(shop: Shop, tmp_path: Path, account: dict[str, Any]) -> None:
    pk = account["publishable_key"]
    refused = raised(lambda: gateway.connect(pk, shop.base_url, cache_dir=tmp_path))
    assert isinstance(refused, ConfigurationError) and "publishable" in str(refused)
    assert_clean(refused, pk)
    # Past the library's own check (a direct client), the gateway refuses it.
    answered = raised(_client_get(_settings(pk, shop.base_url, tmp_path)))
    assert isinstance(answered, AuthenticationError), repr(answered)
    assert_clean(answered, pk)


def test_card_declined_and_wrong_state(shop: Shop) -> None:
    """402 and 409 come from POSTs the library never sends; the one mapping must still be clean."""
    answers = []
    if shop.variant == "B":
        card = {"number": CARD_DECLINE, "exp_month": 12, "exp_year": 2031, "cvc": "123"}
        answers.append(
            shop.http.post(
                "/v1/payments",
                json={
                    "amount": 1234,
                    "currency": "myr",
                    "return_url": "https://shop.example/back",
                    "payment_method_data": {"type": "card", "card": card},
                },
            )
        )
    open_payment = shop.open_payment()
    answers.append(shop.http.post("/v1/refunds", json={"payment_id": open_payment}))
    expected = [CardError, InvalidRequestError][-len(answers) :]
    for response, cls in zip(answers, expected, strict=True):
        assert key_in_request(response, shop.key)
        exc = error_from_response(response)
        assert type(exc) is cls and exc.http_status in (402, 409), repr(exc)
        assert_clean(exc, shop.key)


def key_in_request(response: httpx.Response, key: str) -> bool:
    """The response leads to the key (so the check above means something)."""
    return bool(leaks(response, key))


# -- keys and URLs that cannot work --------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        f"{KEY[:14]}{ZWSP}{KEY[14:]}",  # a copy-paste from a web page
        f"{KEY}{ZWSP}",
        f"{KEY[:20]} {KEY[20:]}",
        f"{KEY[:20]}\n{KEY[20:]}",
        f"{KEY}\n",
        f"\ufeff{KEY}",  # a byte-order mark from a file saved by some editors
        f"{KEY[:10]}é{KEY[10:]}",
    ],
)
def test_keys_that_cannot_be_sent(bad: str, tmp_path: Path, closed_url: str) -> None:
    for call in (
        lambda: gateway.connect(bad, closed_url, cache_dir=tmp_path),
        _client_get(_settings(bad, closed_url, tmp_path)),
    ):
        exc = raised(call)
        assert isinstance(exc, ConfigurationError), repr(exc)
        assert "sk_test_…" in str(exc) and "Nothing was sent" in str(exc)
        assert_clean(exc, bad)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://gw.example",
        "not a url",
        KEY,  # the key where the URL goes
        "http://127.0.0.1:99999",
        "http://[::1",
        "http://user:pass@gw.example",
    ],
)
def test_bad_base_urls(url: str, tmp_path: Path) -> None:
    exc = raised(lambda: gateway.connect(KEY, url, cache_dir=tmp_path))
    assert isinstance(exc, ConfigurationError) and "base URL" in str(exc), repr(exc)
    assert_clean(exc, KEY)


def test_key_inside_the_base_url(closed_url: str, tmp_path: Path) -> None:
    """Refused before anything is sent (it would be in every request line, httpx's log and
    every repr): by connect(), and by the client for settings made by hand."""
    url = f"{closed_url}/{KEY}"
    by_hand = Settings(
        api_key=KEY, base_url=f"{url}/v1", cache_dir=tmp_path, account="leak", mode="test"
    )
    for call in (lambda: gateway.connect(KEY, url, cache_dir=tmp_path), _client_get(by_hand)):
        exc = raised(call)
        assert isinstance(exc, ConfigurationError) and "base URL holds an API key" in str(exc)
        assert_clean(exc, KEY)


def test_arguments_swapped(tmp_path: Path) -> None:
    exc = raised(lambda: gateway.connect("https://gw.example", KEY, cache_dir=tmp_path))
    assert isinstance(exc, ConfigurationError) and "not a secret key" in str(exc)
    assert_clean(exc, KEY)


def test_base_url_of_the_sandbox_site_not_its_api(shop: Shop, tmp_path: Path) -> None:
    """A base URL one level off: the sandbox answers 404 pages, not gateway JSON."""
    for exc in _three_ways(shop.key, f"{shop.base_url}/nowhere", tmp_path):
        assert isinstance(exc, NotFoundError), repr(exc)
        assert_clean(exc, shop.key)


# -- a proxy that echoes the request back ----------------------------------------------------


def _echo_app(status: int) -> Callable[..., Any]:
    """An ASGI app answering every request with its own headers (as some debug proxies do)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        body = (
            orjson.dumps({"error": {"type": "invalid_request_error", "message": str(headers)}})
            if status >= 400
            else f"<html>you sent {headers}</html>".encode()
        )
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app


def error_of_list(settings: Settings, app: Any, *, max_attempts: int) -> GatewayError:
    """The GatewayError a Client raises listing payments from ``app`` (in-process, ASGI)."""

    async def go() -> GatewayError:
        client = Client(settings, transport=httpx.ASGITransport(app), max_attempts=max_attempts)
        try:
            await client.get("payments", parse=orjson.loads)
        except GatewayError as exc:
            return exc
        finally:
            await client.aclose()
        raise AssertionError("no error")

    return asyncio.run(go())


@pytest.mark.parametrize("status", [200, 400])
def test_a_proxy_echoing_the_key_back(status: int, tmp_path: Path) -> None:
    settings = _settings(KEY, "http://proxy.example", tmp_path)
    exc = error_of_list(settings, _echo_app(status), max_attempts=2)
    assert isinstance(exc, APIError if status == 200 else InvalidRequestError), repr(exc)
    if status == 400:
        assert "Bearer sk_test_…" in str(exc)  # what was echoed is there, masked
    assert_clean(exc, KEY)


def test_windowed_sync_raises_the_gateway_error_not_a_group(sandbox_b: Any, tmp_path: Path) -> None:
    """Variant B lists time windows in a task group; a failure there used to escape as an
    ExceptionGroup. Whichever request fails (the draws are seeded, the order is not), what
    comes out is the GatewayError itself, clean."""
    account = httpx.post(f"{sandbox_b.base_url}/_sandbox/accounts", timeout=10).json()
    shop = Shop(sandbox_b, account)
    try:
        shop.history(3000, days=200, seed=2)
        for seed in range(4):
            shop.faults(error_rate=0.3, seed=seed)
            try:
                with shop.connect(tmp_path / str(seed), max_attempts=1) as gw:
                    exc = raised(lambda gw=gw: gw.sync(full=True))  # type: ignore[misc]
            finally:
                shop.clear_faults()
            assert isinstance(exc, APIError) and exc.http_status == 500, repr(exc)
            assert_clean(exc, shop.key)
    finally:
        shop.close()
