"""The sync lock of a cache: a sync stopped while it waits for the lock must not take it later.

A second sync of a cache waits for the first one's lock. Stopped while waiting (Ctrl-C in a
notebook, which cancels the sync), it must leave nothing waiting behind it: a wait left running
takes the lock once the first sync ends and never gives it back, so every later sync of that
cache, in any process, waits for ever.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock
import httpx
import pytest

import gwtools
from gwtools.cache import _dataset as _cache
from gwtools.cache._dataset import Dataset


class _Watched(filelock.FileLock):
    """The sync's lock, unchanged, with a count of the acquire calls still running."""

    state = threading.Condition()
    running = 0
    started = threading.Event()

    def acquire(self, *args: Any, **kwargs: Any) -> Any:
        with self.state:
            type(self).running += 1
        self.started.set()
        try:
            return super().acquire(*args, **kwargs)
        finally:
            with self.state:
                type(self).running -= 1
                self.state.notify_all()


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Watched]]:
    _Watched.running = 0
    _Watched.started = threading.Event()
    monkeypatch.setattr(_cache, "FileLock", _Watched)
    yield _Watched


def _account(sandbox: Any) -> str:
    with httpx.Client(base_url=sandbox.base_url, timeout=60) as http:
        key: str = http.post("/_sandbox/accounts").json()["secret_key"]
        r = http.post(
            "/_sandbox/history",
            json={"payments": 30, "days": 10, "seed": 5},
            headers={"Authorization": f"Bearer {key}"},
        )
        r.raise_for_status()
    return key


def test_a_sync_stopped_while_waiting_for_the_lock_leaves_the_lock_free(
    sandbox_b: Any, tmp_path: Path, watched: type[_Watched]
) -> None:
    key = _account(sandbox_b)
    cache = tmp_path / "cache"
    payments = Dataset.at(cache, "shop", "test", "payments")
    payments.path.mkdir(parents=True)
    # Another process's sync, as far as the lock goes (its own descriptor: flock conflicts).
    other = filelock.FileLock(str(payments.path / "_sync.lock"))
    other.acquire()

    def press_ctrl_c() -> None:  # once the sync waits for the lock, as a user would
        assert watched.started.wait(60), "the sync never asked for the lock"
        os.kill(os.getpid(), signal.SIGINT)

    interrupter = threading.Thread(target=press_ctrl_c)
    with gwtools.connect(key, sandbox_b.base_url, cache_dir=cache, account="shop") as gw:
        try:
            interrupter.start()
            with pytest.raises(KeyboardInterrupt):
                gw.sync()
            interrupter.join(60)
            # Nothing is left waiting for the lock on the stopped sync's behalf...
            with watched.state:
                assert watched.state.wait_for(lambda: watched.running == 0, timeout=30), (
                    "a wait for the lock outlived the stopped sync: it would take the lock "
                    "once the other sync ends, and keep it"
                )
        finally:
            other.release()
        # ...so the next sync gets the lock, and gives it back.
        assert gw.sync().complete
    free = filelock.FileLock(str(payments.path / "_sync.lock"))
    free.acquire(timeout=0)
    free.release()


class _Said(logging.Handler):
    """Sets ``said`` when the gwtools logger says something containing ``words``."""

    def __init__(self, words: str) -> None:
        super().__init__(logging.INFO)
        self.words = words
        self.said = threading.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if self.words in message:
            self.messages.append(message)
            self.said.set()


def test_a_sync_waiting_for_another_ones_lock_says_so(sandbox_b: Any, tmp_path: Path) -> None:
    # It waited without a word: `gwtools sync` beside a running notebook sync looked hung.
    key = _account(sandbox_b)
    cache = tmp_path / "cache"
    payments = Dataset.at(cache, "shop", "test", "payments")
    payments.path.mkdir(parents=True)
    other = filelock.FileLock(str(payments.path / "_sync.lock"))  # another process's sync
    other.acquire()
    said = _Said("another sync")
    logger = logging.getLogger("gwtools")
    logger.addHandler(said)
    results: list[Any] = []
    try:
        with gwtools.connect(key, sandbox_b.base_url, cache_dir=cache, account="shop") as gw:
            waiting = threading.Thread(target=lambda: results.append(gw.sync()))
            waiting.start()
            try:
                assert said.said.wait(60), "the waiting sync said nothing"
            finally:
                other.release()
            waiting.join(120)
    finally:
        logger.removeHandler(said)
    (message,) = said.messages  # once, however long it waits
    assert str(payments.path) in message and "waits" in message
    assert results and results[0].complete
