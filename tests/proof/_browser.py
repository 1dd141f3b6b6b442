"""Voila on loopback and the system Chromium under Playwright, for the real-browser test.

Nothing here downloads a browser: Playwright drives the Chromium binary the system has
(Debian's ``chromium``, installed by ``.ci/run``). Voila serves with the project's ``gwtools``
template (``share/jupyter/voila/templates/gwtools``: the lab page without its CDN stylesheets),
and :class:`PageLog` refuses and records every request that would leave loopback.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
import nbformat

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route, WebSocket

#: The repository's Jupyter data directory (the gwtools Voila template); an installed gwtools
#: puts the same files under ``<prefix>/share/jupyter``.
JUPYTER_DATA = Path(__file__).resolve().parents[2] / "share" / "jupyter"
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",  # containers often give /dev/shm 64 MB: Chromium crashes there
]


def find_chromium() -> str | None:
    """The system Chromium: $GW_CHROMIUM, else /usr/bin/chromium, else chromium on PATH."""
    for candidate in (os.environ.get("GW_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium") or shutil.which("chromium-browser")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def write_notebook(path: Path, *cells: str) -> Path:
    """A notebook of code cells, run by the ``python3`` kernel (this interpreter, see below)."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    nbformat.write(notebook, path)
    return path


@contextmanager
def voila(
    notebook: Path,
    *,
    env: Mapping[str, str | None] | None = None,
    timeout: float = 120.0,
    template: str = "gwtools",
) -> Iterator[str]:
    """Serve ``notebook`` with Voila's ``template`` on a free loopback port; yield its URL;
    always stop it.

    ``env`` changes the environment of Voila and so of the kernel (``None`` removes a
    variable). Voila runs under this interpreter, and jupyter_client starts a kernelspec whose
    argv is ``python`` with ``sys.executable``: the kernel sees the same packages as the test.
    """
    port = free_port()
    workdir = notebook.parent
    log_path = workdir / "voila.log"
    environ = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(workdir / "jupyter-runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "PYTHONUNBUFFERED": "1",
        # Where Voila finds the gwtools template, ahead of any installed copy.
        "JUPYTER_PATH": os.pathsep.join(
            p for p in (str(JUPYTER_DATA), os.environ.get("JUPYTER_PATH")) if p
        ),
    }
    # ipykernel makes matplotlib's inline backend the default only when MPLBACKEND is unset:
    # an inherited MPLBACKEND=Agg (tests/toolkit/conftest.py sets it in every xdist worker
    # that collects it) turns plt.show() into a no-op and the page gets no plot.
    environ.pop("MPLBACKEND", None)
    for name, value in (env or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
    command = [
        sys.executable,
        "-m",
        "voila",
        str(notebook),
        "--no-browser",
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--Voila.port_retries=0",
        "--strip_sources=True",
        "--preheat_kernel=False",
        "--show_tracebacks=True",
        f"--template={template}",
        f"--Voila.root_dir={workdir}",
        f"--Voila.connection_dir_root={workdir}",  # kernel connection files stay in tmp_path
        # A cell that runs longer than this fails the page instead of hanging the test.
        f"--NotebookClient.timeout={int(timeout)}",
        "--NotebookClient.startup_timeout=60",
    ]
    url = f"http://127.0.0.1:{port}/"
    with log_path.open("wb") as log:
        # Its own process group: the kernels it starts go down with it, whatever happens.
        process = subprocess.Popen(
            command,
            cwd=workdir,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_until_serving(process, url, log_path, deadline=time.monotonic() + 20)
            yield url
        finally:
            process.terminate()  # Voila shuts its kernels down on SIGTERM
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)  # any kernel left behind


def _wait_until_serving(
    process: subprocess.Popen[bytes], url: str, log_path: Path, deadline: float
) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"voila exited with status {process.returncode}:\n{log_path.read_text()[-3000:]}"
            )
        try:
            # The tree of static files answers as soon as the server listens, without a kernel.
            httpx.get(url + "voila/static/voila.js", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise TimeoutError(
        f"voila did not listen on {url} within 20 s:\n{log_path.read_text()[-3000:]}"
    )


def leaves_loopback(url: str) -> bool:
    """Whether a request for ``url`` would go to another machine (data: and blob: stay)."""
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return False
    return (parts.hostname or "") not in LOOPBACK


class PageLog:
    """What a page did, for the message of a test that timed out: its console, its failed
    requests and responses, its WebSocket traffic (the kernel's), and where Voila stopped.

    Every request that would leave loopback is refused before it is sent and kept in
    ``outside``: a dashboard must work offline and tell no third party it was opened."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.events: list[str] = []
        self.errors: list[str] = []
        self.outside: list[str] = []
        started = time.monotonic()

        def guard(route: Route) -> None:
            url = route.request.url
            if leaves_loopback(url):
                self.outside.append(url)
                route.abort("blockedbyclient")
            else:
                route.continue_()

        page.route("**/*", guard)

        def note(text: str) -> None:
            self.events.append(f"{time.monotonic() - started:6.1f}s {text}")

        def on_error(exc: object) -> None:
            self.errors.append(str(exc))
            note(f"pageerror {exc}")

        page.on("pageerror", on_error)
        page.on("console", lambda msg: note(f"console.{msg.type} {msg.text[:300]}"))
        page.on("requestfailed", lambda req: note(f"failed {req.url[:200]} {req.failure}"))
        page.on(
            "response",
            lambda resp: (
                note(f"HTTP {resp.status} {resp.url[:200]}") if resp.status >= 400 else None
            ),
        )
        page.on("load", lambda _: note("load"))
        page.on("domcontentloaded", lambda _: note("domcontentloaded"))

        def on_websocket(ws: WebSocket) -> None:
            note(f"websocket {ws.url[:120]}")
            counts = {"sent": 0, "received": 0}

            def count(kind: str) -> None:
                counts[kind] += 1
                if counts[kind] in (1, 10, 100, 1000):
                    note(f"websocket {kind} {counts[kind]} frames")

            ws.on("framesent", lambda _: count("sent"))
            ws.on("framereceived", lambda _: count("received"))
            ws.on("close", lambda _: note("websocket closed"))

        page.on("websocket", on_websocket)

    def report(self) -> str:
        state = self.page.evaluate(
            """() => ({
                readyState: document.readyState,
                loading: document.getElementById("loading_text")?.innerText ?? null,
                cellsShown: document.getElementById("rendered_cells")?.style.display ?? null,
                cellOutputs: document.querySelectorAll(
                    "script[type='application/vnd.voila.cell-output+json']").length,
                widgetViews: document.querySelectorAll(".jupyter-widgets").length,
                text: document.body ? document.body.innerText.slice(0, 500) : null,
            })"""
        )
        return f"page state: {state}\npage events:\n" + "\n".join(self.events[-60:])
