"""Output paths of the commands, checked before any work starts.

A report or an export that cannot be written should say so at once, in one line, not as a
traceback after a sync of thousands of payments. Checks leave nothing behind: a folder made
to try it is removed again. (The sandbox, which imports nothing of the library, checks its
own files where it opens them.)
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from pathlib import Path
from typing import Any

import click


def _cannot(path: Path, why: str) -> click.BadParameter:
    return click.BadParameter(f"cannot write {path}: {why}; pick another path")


def _unwritable(folder: Path) -> str | None:
    """Why files cannot be written in ``folder`` (made for the test and removed again if
    missing), or None when they can: a scratch file is written and removed, a real test (a
    permission check says yes to root even where nothing can be written, e.g. under /proc)."""
    if folder.exists() and not folder.is_dir():
        return f"{folder} is a file, not a folder"
    made: list[Path] = []
    probe = folder
    while not probe.exists():
        made.append(probe)
        probe = probe.parent
    try:
        for step in reversed(made):
            step.mkdir()
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".gwtools-probe-"):
            pass
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename and exc.filename != str(folder) else ""
        return f"{where}{exc.strerror or exc}"
    finally:
        for step in made:  # deepest first: only what this check made, and only if empty
            with contextlib.suppress(OSError):
                step.rmdir()
    return None


def _special(path: Path) -> bool:
    """Whether ``path`` (a symlink followed) is a device or a pipe, not a file or folder."""
    return path.exists() and not (path.is_file() or path.is_dir())


def _refuse_empty(value: Any, what: str) -> None:
    """An empty ``--out "$OUT"`` (the variable unset) is a mistake, not the working directory,
    which is what ``Path("")`` would make of it."""
    if not str(value).strip():
        raise click.BadParameter(f"--out {value!r} is empty: give {what}")


def out_file(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Click callback: an output file (or ``-``) whose folder exists and can be written (a
    symlink's: the folder of the file it points to, which the export replaces)."""
    if value is None or str(value) == "-":
        return value
    _refuse_empty(value, "the file to write (- for standard output)")
    path = Path(value)
    if path.is_dir():
        raise _cannot(path, "it is a folder; name a file")
    if _special(path):  # /dev/null, /dev/stdout, a FIFO: written into, as it is
        return value
    # A symlink is written through: the file it points to is replaced, in that file's folder.
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    link = f"it links to {real}, and " if real != path else ""
    if not real.parent.exists():
        raise _cannot(path, f"{link}the folder {real.parent} does not exist (create it first)")
    why = _unwritable(real.parent)
    if why:
        raise _cannot(path, f"{link}{why}" if link else why)
    return value


def out_dir(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Click callback: an output folder that exists or can be made, can be written, and is not
    inside a cache's dataset (as ``export --out`` may not be), as a Path (the option's type
    must keep the text as typed: ``Path("")`` is the working directory, where an empty
    ``--out "$OUT"`` would spread the report's files)."""
    if value is None:
        return value
    _refuse_empty(value, "the folder to write into (. for the working directory)")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise _cannot(path, "it is a file, not a folder")
    from gwtools import ConfigurationError
    from gwtools.report import check_out_dir

    try:  # (before the probe below: not even a scratch file where a dataset's readers look)
        check_out_dir(path)
    except ConfigurationError as exc:
        raise click.BadParameter(str(exc)) from None
    why = _unwritable(path)
    if why:
        raise _cannot(path, why)
    return path


#: What to do about the operating-system errors a path meets, by errno.
_WAY_OUT = {
    errno.EISDIR: "a file goes there, not a folder; move the folder aside (or remove it), then "
    "run the command again",
    errno.ENOTDIR: "a file stands where a folder of that path goes; move the file aside, or "
    "give another path",
    errno.EACCES: "give this user access to it (its permissions or owner), or give another path",
    errno.EPERM: "give this user access to it (its permissions or owner), or give another path",
    errno.EROFS: "give a path on a writable file system",
    errno.ENOSPC: "free some space on that disk, or give a path on another one, then run the "
    "command again",
}


def oserror_line(exc: OSError) -> str:
    """One line for an operating-system error a command met (a file or folder it could not
    use), naming the path and, for the errors a path commonly meets, what to do."""
    way_out = _WAY_OUT.get(exc.errno) if exc.errno is not None else None
    said = f"{exc.strerror or exc}" + (f": {way_out}" if way_out else "")
    where = exc.filename
    if isinstance(where, str | bytes | os.PathLike):
        name = Path(os.fsdecode(where))
        # A file renamed into place is written under a hidden temporary name beside it.
        if name.name.startswith(".") and name.name.endswith(".tmp"):
            name = name.parent
        return f"cannot use {name}: {said}"
    return said
