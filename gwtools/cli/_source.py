"""``--source`` of ``gwtools export`` and ``gwtools report``: a synced cache read as it is.

The library finds the dataset in the folder (or URL) it is given, and says what is wrong in
its own terms (``account=``, ``mode=``, ``gwtools.connect(cache_dir=…)``), with what it found
on the error (:class:`AmbiguousCacheError`, :class:`CacheNotFoundError`). On the command line
the same advice names the flags there are: ``--account NAME`` with the accounts found, and,
as neither command has a ``--mode``, the mode's folder to give as ``--source``.
"""

from __future__ import annotations

import os
import shlex
from urllib.parse import urlsplit
from urllib.request import url2pathname

import click

from gwtools import AmbiguousCacheError, CacheNotFoundError

#: Where the cache a sync filled is, in the words of the advice.
_WHAT_TO_GIVE = (
    "the folder `gwtools sync` filled (what it prints after `cache:`, or the --cache-dir or "
    "GW_CACHE_DIR it was given), or a URL such as s3://bucket/gwtools"
)


def check_source_folder(source: str, instead: str) -> None:
    """Refuse an empty ``--source``, or a path (or ``file://`` URL) that does not exist, as a
    usage error (status 2) saying what to give instead; ``instead`` is the command's own other
    way (leave ``--source`` out). Other URLs are left to the library, which reads them."""
    if not source.strip():  # `--source "$SRC"` with the variable unset: as an empty --cache-dir
        raise _NoSuchSource(
            f"--source {source!r} is empty: give --source {_WHAT_TO_GIVE}, {instead}"
        )
    path = local_folder(source)
    if path is None or os.path.exists(path):
        return
    raise _NoSuchSource(
        f"no cache at {source}: that folder does not exist; give --source {_WHAT_TO_GIVE}, "
        f"{instead}"
    )


def local_folder(source: str) -> str | None:
    """The local path a ``--source`` names (``~`` expanded, a ``file://`` URL decoded); None
    for a URL of shared storage."""
    parts = urlsplit(source)
    if parts.scheme == "file":
        return url2pathname(parts.path)
    if "://" in source:
        return None
    return os.path.expanduser(source)


def account_source(source: str, account: str) -> str:
    """The folder of ``account`` in the cache at ``source``, which the library has found to
    hold it: its folder below a cache's (or a URL's), or ``source`` itself when that is the
    account's own folder, or a mode's or dataset's of it, where there is none below."""
    below = f"{source.rstrip('/')}/{account}"
    path = local_folder(source)
    if path is not None and not os.path.isdir(os.path.join(path, account)):
        return source
    return below


class _NoSuchSource(click.ClickException):
    """A usage error (status 2) said in one line: the advice is the whole story, and click's
    usage lines before it would only push it off a narrow terminal."""

    exit_code = 2


def source_advice(exc: BaseException, source: str, command: str, account: str | None) -> str | None:
    """The library's error about the cache at ``source`` with the advice in the flags of
    ``gwtools command``; None when it is not about which dataset the folder holds."""
    if isinstance(exc, AmbiguousCacheError):
        return _several(exc, source, command, account)
    if isinstance(exc, CacheNotFoundError):
        if exc.is_file:
            return f"{exc.where} is a file, not a cache folder: give --source {_WHAT_TO_GIVE}"
        if exc.datasets and account:
            names = list(dict.fromkeys(a for a, _ in exc.datasets))
            picks = " or ".join(f"--account {shlex.quote(n)}" for n in names)
            return (
                f"no cached {exc.resource} under {exc.where} for --account {shlex.quote(account)} "
                f"(it holds {_labels(exc.datasets)}): give {picks}, or leave --account out"
            )
    return None


def _several(found: AmbiguousCacheError, source: str, command: str, account: str | None) -> str:
    resource, where = found.resource, found.where
    modes: dict[str, list[tuple[str, str]]] = {}
    for (name, mode), folder in found.datasets.items():
        # the mode's folder (the dataset's parent) is what --source takes
        modes.setdefault(name, []).append((mode, _as_source(folder.rsplit("/", 1)[0], source)))
    no_mode = f"as gwtools {command} has no --mode, give the mode's folder as --source"
    if len(modes) > 1:
        names = list(modes)
        text = (
            f"{where} holds the cached {resource} of {len(names)} accounts "
            f"({', '.join(names)}): add --account NAME to pick one, e.g. --account "
            f"{shlex.quote(names[0])}"
        )
        both = [n for n, held in modes.items() if len(held) > 1]
        if both:
            example = modes[both[0]][0][1]
            text += (
                f"; {', '.join(both)} {'holds' if len(both) == 1 else 'hold'} both live and "
                f"test data: {no_mode} instead of --account, e.g. --source {shlex.quote(example)}"
            )
        return text
    name, held = next(iter(modes.items()))
    leave = " (and leave out --account)" if account else ""
    choices = " or ".join(f"--source {shlex.quote(folder)} ({mode})" for mode, folder in held)
    return (
        f"{where} holds both live and test {resource} of account {name}: {no_mode}{leave}: "
        f"{choices}"
    )


def _as_source(folder: str, source: str) -> str:
    """A folder the library names, as ``--source`` takes it: with the URL's scheme when the
    source was a URL (the library names a folder on shared storage without it)."""
    if "://" in source and "://" not in folder:
        scheme = source.split("://", 1)[0]
        return f"{scheme}://{folder}"
    return folder


def _labels(datasets: dict[tuple[str, str], str]) -> str:
    return ", ".join(f"account={a!r} mode={m!r}" for a, m in datasets)
