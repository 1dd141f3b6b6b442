"""Starting the sandbox's server: a start that fails leaves no socket behind."""

from __future__ import annotations

import gc
import socket
import warnings

import pytest

from gwtools.sandbox import Sandbox


class Interrupted(Exception):
    """Stands for Ctrl-C while the history is generated."""


def _free(port: int) -> bool:
    """Whether a new listener can take ``port`` (a listening socket there refuses it)."""
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", port))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def test_a_start_interrupted_while_seeding_stops_listening() -> None:
    def interrupt(done: int) -> None:
        raise Interrupted

    sandbox = Sandbox(seed_payments=10_000, progress=interrupt)
    with pytest.raises(Interrupted):
        sandbox.start()
    assert sandbox.port != 0  # it had bound a port
    assert _free(sandbox.port), "the port is still held after the failed start"
    sandbox.close()


def test_a_port_in_use_leaves_no_open_socket() -> None:
    # Garbage earlier tests in this process left (an event loop a client never closed) is
    # collected first: only what the failed start leaves may warn below.
    gc.collect()
    with Sandbox() as running, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        second = Sandbox(port=running.port)
        with pytest.raises(OSError):
            second.start()
        second.close()
        del second
        gc.collect()
    leaks = [w for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, [str(w.message) for w in leaks]
