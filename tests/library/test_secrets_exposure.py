"""Where else a key could show: traceback locals, base URLs, error fields, the CLI's errors.

:mod:`tests.library.test_secrets_in_errors` walks what an error *holds*; these tests look at
what people and tools print around it: the locals of gwtools' frames in a traceback (pytest's
``--showlocals``, rich's ``show_locals``, ``traceback`` with ``capture_locals``), the reprs
and log lines of a connection whose base URL holds a key, error fields a gateway (or a proxy)
filled with JSON objects rather than text, and the command line's error messages when a key
is typed where something else goes.
"""

from __future__ import annotations

import io
import logging
import traceback
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from click.testing import CliRunner
from rich.console import Console
from rich.traceback import Traceback

import gwtools
import gwtools._gateway as gateway
from gwtools._config import Settings, check_key, check_key_text, resolve_settings
from gwtools._errors import ConfigurationError, GatewayError, InvalidRequestError
from gwtools.cli import main
from gwtools.http._client import Client
from tests.library._shop import Shop
from tests.library.test_secrets_in_errors import (
    KEY,
    _free_port,
    assert_clean,
    error_of_list,
    fragments,
    raised,
)

_PACKAGE = str(Path(gwtools.__file__).resolve().parent)


_TESTS = str(Path(__file__).resolve().parents[1])


def _library_frames(exc: BaseException) -> Iterator[types.FrameType]:
    """The frames of the traceback of ``exc`` (and of its chain) outside the tests, whose own
    locals hold the key: gwtools' and those of the libraries it called."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        item = todo.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        tb = item.__traceback__
        while tb is not None:
            if not tb.tb_frame.f_code.co_filename.startswith(_TESTS):
                yield tb.tb_frame
            tb = tb.tb_next
        todo += [item.__cause__, item.__context__]


def shown_locals(exc: BaseException) -> list[str]:
    """Each local of those frames as pytest ``--showlocals`` (short and long form),
    rich's ``show_locals`` and ``traceback``'s ``capture_locals`` print it."""
    from _pytest._io.saferepr import safeformat, saferepr  # what pytest's repr_locals calls
    from rich.pretty import traverse

    shown = []
    for frame in _library_frames(exc):
        for name, value in frame.f_locals.items():
            where = f"{frame.f_code.co_name}:{name}"
            shown += [f"{where} = {saferepr(value)}", f"{where} = {safeformat(value)}"]
            # rich's Traceback(show_locals=True) with its defaults
            node = traverse(value, max_length=10, max_string=80)
            shown.append(f"{where} = {node.render()}")
    stack = traceback.TracebackException.from_exception(exc, capture_locals=True).stack
    for summary in stack:
        if not summary.filename.startswith(_TESTS):
            shown += [f"{summary.name}:{k} = {v}" for k, v in (summary.locals or {}).items()]
    return shown


def assert_no_key_in_locals(exc: BaseException, key: str) -> None:
    needles = fragments(key)
    bad = [line for line in shown_locals(exc) if any(n in line for n in needles)]
    assert not bad, f"the key shows in traceback locals: {bad[:5]}"


# -- the checker finds what it must find -----------------------------------------------------


def test_the_locals_checker_sees_a_key_in_a_frame() -> None:
    def fails(api_key: str) -> None:
        raise ConfigurationError("no")

    # As if it were gwtools' code (rich shows locals only where it can read the source).
    fails.__code__ = fails.__code__.replace(co_filename=f"{_PACKAGE}/_errors.py")
    exc = raised(lambda: fails(KEY))
    assert any("fails:api_key" in line and KEY in line for line in shown_locals(exc))
    # rich renders the same locals (the checker's rendering is what rich prints)
    console = Console(file=io.StringIO(), width=300, color_system=None)
    tb = Traceback.from_exception(type(exc), exc, exc.__traceback__, show_locals=True, width=200)
    console.print(tb)
    assert KEY in console.file.getvalue()  # type: ignore[attr-defined]


# -- traceback locals -------------------------------------------------------------------------


def _closed_url() -> str:
    return f"http://127.0.0.1:{_free_port()}"


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda d: gateway.connect(KEY, "ftp://gw.example", cache_dir=d), id="bad-url"),
        pytest.param(lambda d: gateway.connect(KEY, "http://gw", account="a/b"), id="bad-account"),
        pytest.param(lambda d: gateway.connect(KEY, b"http://gw", cache_dir=d), id="url-bytes"),
        pytest.param(lambda d: gateway.connect(KEY.encode(), "http://gw"), id="key-bytes"),
        pytest.param(
            lambda d: gateway.connect(f"{KEY}\n", _closed_url(), cache_dir=d), id="newline"
        ),
        pytest.param(lambda d: gateway.connect(f" {KEY}", _closed_url(), cache_dir=d), id="space"),
        pytest.param(lambda d: gateway.connect("pk" + KEY[2:], _closed_url()), id="publishable"),
        pytest.param(lambda d: gateway.connect(KEY, _closed_url(), timeout=-1), id="bad-tuning"),
        pytest.param(lambda d: gateway.cache_path(KEY, "not a url"), id="cache_path"),
        pytest.param(lambda d: resolve_settings(KEY, "ftp://x"), id="resolve_settings"),
        pytest.param(lambda d: check_key("pk" + KEY[2:]), id="check_key"),
        pytest.param(lambda d: check_key_text(f"{KEY}\t"), id="check_key_text"),
    ],
)
def test_no_key_in_the_locals_of_a_refusal(call: Callable[[Path], object], tmp_path: Path) -> None:
    exc = raised(lambda: call(tmp_path))
    assert isinstance(exc, ConfigurationError), repr(exc)
    assert_no_key_in_locals(exc, KEY)
    assert_clean(exc, KEY)


def test_no_key_in_the_locals_when_it_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GW_API_KEY", KEY)
    monkeypatch.setenv("GW_BASE_URL", "ftp://gw.example")
    exc = raised(lambda: gateway.connect(cache_dir=tmp_path))
    assert isinstance(exc, ConfigurationError), repr(exc)
    assert_no_key_in_locals(exc, KEY)


def test_no_key_in_the_locals_of_a_failed_sync(shop: Shop, tmp_path: Path) -> None:
    """A 401 (the wrong key) and a 500 through sync(), and a client built from hand-made
    settings: every gwtools frame between the raise and the caller."""
    wrong = "sk_test_" + "Zz9" * 10 + "Yy"
    with gateway.connect(wrong, shop.base_url, cache_dir=tmp_path, max_attempts=1) as gw:
        exc = raised(gw.sync)
    assert isinstance(exc, GatewayError) and exc.http_status == 401, repr(exc)
    assert_no_key_in_locals(exc, wrong)

    shop.faults(error_rate=1.0)
    try:
        with shop.connect(tmp_path, max_attempts=1) as gw:
            failed = raised(gw.sync)
    finally:
        shop.clear_faults()
    assert isinstance(failed, GatewayError) and failed.http_status == 500, repr(failed)
    assert_no_key_in_locals(failed, shop.key)

    settings = Settings(
        api_key=f"{shop.key}\n", base_url="http://gw/v1", cache_dir=tmp_path, account="x",
        mode="test",
    )  # fmt: skip
    refused = raised(lambda: Client(settings))
    assert isinstance(refused, ConfigurationError), repr(refused)
    assert_no_key_in_locals(refused, shop.key)


def test_the_key_still_works_and_compares_as_text(shop: Shop, tmp_path: Path) -> None:
    """What hides the key from reprs changes nothing else: it is sent, equal and hashable."""
    shop.card()
    with shop.connect(tmp_path) as gw:
        assert gw.sync().complete
        key = gw.settings.api_key
        assert key == shop.key and hash(key) == hash(shop.key) and f"{key}" == shop.key
        assert str(key) == shop.key and key + "" == shop.key and isinstance(key, str)
        assert shop.key not in repr(key) and repr(key) == repr(gw.settings.masked_key)
        assert len(gw.payments(refresh=False)) == 1


# -- a key in the base URL --------------------------------------------------------------------


def _key_urls(key: str, origin: str) -> list[str]:
    return [
        f"{origin}/{key}",  # a path segment: sent, logged by httpx, shown in every repr
        f"{origin}/api/{key}/v1",
        f"{origin}/{key.upper()}",  # a host or path in another case
        f"{origin}/{key.replace('_', '%5F')}",  # percent-encoded
        f"http://{key.lower()}.gw.example",  # a host is shown lowercased
    ]


def test_a_key_in_the_base_url_is_refused(shop: Shop, tmp_path: Path) -> None:
    """A key pasted into the base URL (as the URL's path, say) would be sent in every request
    line, logged by httpx at INFO and shown by repr(gw): refused, like user info and query
    strings, before anything is sent."""
    records = io.StringIO()
    handler = logging.StreamHandler(records)
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        for url in _key_urls(shop.key, shop.base_url):
            exc = raised(lambda url=url: gateway.connect(shop.key, url, cache_dir=tmp_path))  # type: ignore[misc]
            assert isinstance(exc, ConfigurationError) and "base URL" in str(exc), (url, exc)
            assert "GW_API_KEY" in str(exc), exc  # says where the key goes instead
            assert_clean(exc, shop.key)
            assert_no_key_in_locals(exc, shop.key)
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    for fragment in fragments(shop.key):
        assert fragment.lower() not in records.getvalue().lower()


def test_a_key_in_the_base_url_from_the_environment_or_by_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = "sk_live_" + "Ab1" * 10  # another key (of another account, say): a secret too
    monkeypatch.setenv("GW_API_KEY", KEY)
    monkeypatch.setenv("GW_BASE_URL", f"https://gw.example/{other}")
    exc = raised(lambda: gateway.connect(cache_dir=tmp_path))
    assert isinstance(exc, ConfigurationError) and "base URL" in str(exc), repr(exc)
    assert_clean(exc, other)
    # Settings made by hand skip connect()'s checks; the client still refuses to send it.
    settings = Settings(
        api_key=KEY, base_url=f"https://gw.example/{KEY}/v1", cache_dir=tmp_path, account="x",
        mode="test",
    )  # fmt: skip
    assert KEY not in repr(settings)
    refused = raised(lambda: Client(settings))
    assert isinstance(refused, ConfigurationError) and "base URL" in str(refused), repr(refused)
    assert_clean(refused, KEY)


def test_a_base_url_without_a_key_still_works(shop: Shop, tmp_path: Path) -> None:
    """Paths and hosts that merely contain ``sk_`` or ``test`` are not keys."""
    url = f"{shop.base_url}/sk_tests/pk_live"
    with gateway.connect(shop.key, url, cache_dir=tmp_path) as gw:
        assert gw.settings.base_url.endswith("/sk_tests/pk_live/v1")


# -- error fields that are not text ----------------------------------------------------------


def _object_echo_app(scope_headers: Callable[[dict[str, Any]], Any]) -> Callable[..., Any]:
    """An ASGI app answering 400 with a gateway-shaped error whose fields are JSON objects
    holding the request's headers (a debugging proxy's echo)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        echo = scope_headers(headers)
        error = {
            "type": "invalid_request_error",
            "message": "bad request",
            "code": echo,
            "param": [echo],
            "decline_code": {"nested": [echo]},
        }
        await send({"type": "http.response.start", "status": 400, "headers": []})
        await send({"type": "http.response.body", "body": orjson.dumps({"error": error})})

    return app


@pytest.mark.parametrize(
    "key",
    [KEY, "sk_test_" + "4eC39Hq-LyjWDa_rjtT1zdp7dc.Xy9Z"],  # the second: not key-shaped
    ids=["key-shaped", "other-shape"],
)
def test_error_fields_that_are_objects_hold_no_key(key: str, tmp_path: Path) -> None:
    settings = Settings(
        api_key=key, base_url="http://proxy.example/v1", cache_dir=tmp_path, account="x",
        mode="test",
    )  # fmt: skip
    app = _object_echo_app(lambda headers: {"echo": headers})
    exc = error_of_list(settings, app, max_attempts=1)
    assert isinstance(exc, InvalidRequestError), repr(exc)
    assert_clean(exc, key)
    for name in ("code", "param", "decline_code", "type"):
        value = getattr(exc, name)
        assert value is None or isinstance(value, str), (name, value)


# -- the command line -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["sync", "--api-key-file", KEY],  # the key where its file's name goes
        ["sync", KEY],  # the key as an argument
        [KEY],
        ["sync", "--resource", KEY],
        ["sync", "--cache-dir", f"/dev/null/{KEY}"],
        ["export", "payments", "--format", KEY, "--out", "-"],
        ["report", "--out", "{tmp}/r", "--tz", KEY],
        ["monitor", KEY],
    ],
    ids=["key-file", "sync-arg", "command", "choice", "cache-dir", "export", "report", "monitor"],
)
def test_the_cli_never_echoes_a_key_typed_on_the_command_line(
    args: list[str], tmp_path: Path
) -> None:
    """A key typed on the command line is already in the shell's history: the error saying
    the command is wrong must not copy it into a terminal's scrollback or a CI log too."""
    env = {"GW_CACHE_DIR": str(tmp_path), "GW_API_KEY": "", "GW_BASE_URL": ""}
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 2 or "Error: " in result.output, result.output  # refused
    for fragment in fragments(KEY):
        assert fragment not in result.output, result.output


def test_the_cli_help_shows_no_key_from_the_environment(tmp_path: Path) -> None:
    env = {"GW_API_KEY": KEY, "GW_BASE_URL": "http://gw.example", "GW_CACHE_DIR": str(tmp_path)}
    for command in ("sync", "export", "report", "monitor", "check", "demo"):
        result = CliRunner().invoke(main, [command, "--help"], env=env)
        assert result.exit_code == 0, result.output
        assert KEY[8:20] not in result.output


def test_a_key_file_that_is_not_one_key_keeps_its_text_out_of_the_locals(tmp_path: Path) -> None:
    from gwtools.cli._sync import _read_key_file

    two = tmp_path / "keys"
    two.write_text(f"{KEY}\nsk_live_{'Q' * 30}\n")
    try:
        exc = raised(lambda: _read_key_file(str(two)))
    finally:
        two.unlink()  # two keys in one file: the session's secret scan would rightly flag it
    assert "exactly one" in str(exc)
    assert_no_key_in_locals(exc, KEY)
    assert KEY not in str(exc)


def test_a_key_file_saved_by_a_windows_editor(tmp_path: Path) -> None:
    """UTF-8 with a byte-order mark is read as the key; UTF-16 is refused in one line (it
    used to crash with a traceback, the error holding the file's bytes)."""
    from gwtools.cli._sync import _read_key_file

    bom = tmp_path / "bom.key"
    bom.write_bytes(b"\xef\xbb\xbf" + KEY.encode() + b"\r\n")
    try:
        assert _read_key_file(str(bom)) == KEY
    finally:
        bom.unlink()  # a key file the session's secret scan does not know as one (the mark)
    wide = tmp_path / "wide.key"
    wide.write_bytes(f"{KEY}\r\n".encode("utf-16"))
    env = {"GW_CACHE_DIR": str(tmp_path), "GW_BASE_URL": "http://127.0.0.1:9"}
    result = CliRunner().invoke(main, ["sync", "--api-key-file", str(wide)], env=env)
    assert result.exit_code == 2 and "not UTF-8 text" in result.output, result.output
    assert not isinstance(result.exception, UnicodeDecodeError)
    for fragment in fragments(KEY):
        assert fragment not in result.output


# -- a key echoed inside the records --------------------------------------------------------


def _echoing_gateway(headers_in: str) -> Callable[..., Any]:
    """An ASGI gateway (variant B) whose one payment carries the request's headers in a field
    (a debugging proxy's annotation, or a gateway storing request details in metadata)."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        payment = {
            "id": "pay_" + "a1" * 12,
            "object": "payment",
            "created": 1_780_000_000,
            "amount": 1000,
            "currency": "myr",
            "status": "succeeded",
            headers_in: {"request_headers": headers} if headers_in == "metadata" else str(headers),
        }
        body = {"object": "list", "has_more": False, "data": [payment]}
        if scope["path"].endswith("/refunds") or b"starting_after" in scope["query_string"]:
            body["data"] = []  # no refunds; one page of payments
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": orjson.dumps(body)})

    return app


@pytest.mark.parametrize("field", ["description", "metadata"])
def test_a_key_echoed_inside_a_record_is_not_cached(field: str, tmp_path: Path) -> None:
    from tests._secret_scan import scan_paths

    settings = Settings(
        api_key=KEY, base_url="http://proxy.example/v1", cache_dir=tmp_path / "cache",
        account="x", mode="test",
    )  # fmt: skip
    transport = httpx.ASGITransport(_echoing_gateway(field))
    with gateway.Gateway(settings, transport=transport) as gw:
        result = gw.sync(full=True)
        frame = gw.payments(refresh=False)
        streamed = list(gw.iter_payments())
        out = tmp_path / "payments.csv"
        gwtools.write_table(gw.scan("payments"), out, "csv")
    assert result.complete and len(frame) == 1 and len(streamed) == 1, result.problems
    assert "sk_test_…Xy9Z" in str(frame.iloc[0][field])  # the echo is there, masked
    report = scan_paths([tmp_path])
    assert report.files_scanned > 2 and report.ok, [str(f) for f in report.findings]
    for thing in (result, frame.to_dict("records"), streamed):
        assert_clean(thing, KEY)


# -- a key echoed in a response header, and DEBUG logging ------------------------------------


@pytest.fixture
def header_echo_url() -> Iterator[str]:
    """A loopback HTTP server answering every GET with an empty list (variant B) and the
    request's Authorization header echoed back in a response header, as AWS API Gateway does
    (``x-amzn-Remapped-Authorization``) and debugging proxies do."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            data = b""
            while not stop.is_set():
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
                while b"\r\n\r\n" in data:
                    head, _, data = data.partition(b"\r\n\r\n")
                    auth = next(
                        (line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                         if line.lower().startswith(b"authorization:")),
                        b"",
                    )  # fmt: skip
                    body = b'{"object": "list", "data": [], "has_more": false}'
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"x-amzn-Remapped-Authorization: " + auth + b"\r\n"
                        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
                    )

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()


def test_debug_logs_of_a_gateway_echoing_the_key_in_a_header(
    header_echo_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """httpcore logs every response's headers at DEBUG: a gateway echoing the Authorization
    header there (``x-amzn-Remapped-Authorization``) must not put the key in the log."""
    with (
        caplog.at_level(logging.DEBUG),
        gateway.connect(KEY, header_echo_url, cache_dir=tmp_path, account="echo") as gw,
    ):
        result = gw.sync(full=True)
    assert result.complete, result.problems
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "remapped-authorization" in text.lower()  # the header was logged, and so checked
    assert "sk_test_…Xy9Z" in text
    for fragment in fragments(KEY):
        assert fragment not in text and fragment not in caplog.text
