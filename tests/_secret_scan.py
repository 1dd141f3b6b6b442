"""Find full API keys in files: the check behind "no key in a cache, report, notebook or log".

Use it as a pytest plugin (``-p tests._secret_scan``): after the whole session it scans the
session's temporary tree (every ``tmp_path`` of every xdist worker), the repository's
``notebooks/``, ``data/``, ``reports/``, ``logs/``, ``gwtools-report/``, ``gwtools-exports/``,
``benchmarks/results/`` and ``*.log`` files (or the ini option ``secret_scan_paths`` instead),
and what the session wrote into gwtools' cache directory (``GW_CACHE_DIR`` or the per-user
one). It fails the run (exit status 1) naming each file and the masked key it holds. Or call
it directly::

    from tests._secret_scan import scan_paths

    report = scan_paths(["notebooks", "/tmp/pytest-of-me/pytest-7"])
    for finding in report.findings:
        print(finding)          # notebooks/x.ipynb: sk_test_…abcd (bytes)

A key is ``sk_`` or ``pk_``, then ``test_`` or ``live_``, then at least 24 ASCII letters or digits
(the sandbox issues 32). A masked key (``sk_test_…abcd``) does not match. Parquet files are also
read column by column, and zip (``.xlsx``) and gzip files are opened, since compression hides the
raw bytes of a key.

Two kinds of file may hold a key on purpose and are skipped, each counted in ``report.exempt``:

* a key file, as ``--api-key-file`` reads it: one line holding one key, besides blank lines and
  ``#`` comments that hold no key;
* a SQLite database: the sandbox gateway's own store, where the keys it issues live server side.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import os
import re
import sys
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "KEY_PATTERN",
    "Finding",
    "ScanReport",
    "find_keys",
    "mask_key",
    "scan_file",
    "scan_paths",
]

KEY_PATTERN = re.compile(rb"(?<![A-Za-z0-9])(?:sk|pk)_(?:test|live)_[A-Za-z0-9]{24,}")
_WHOLE_KEY = re.compile(rb"(?:sk|pk)_(?:test|live)_[A-Za-z0-9]{24,}")
_SQLITE_MAGIC = b"SQLite format 3\x00"
# Bounds so that one huge or hostile archive cannot stall the end of a test run.
_MAX_FILE_BYTES = 1 << 30
_MAX_MEMBER_BYTES = 256 << 20
_SKIP_DIRS = frozenset({".git", ".venv", "venv", "__pycache__", "node_modules", ".mypy_cache"})


def mask_key(key: str) -> str:
    """Show a key the way gwtools may show it: prefix and last four characters."""
    prefix, _, body = key.rpartition("_")
    return f"{prefix}_…{body[-4:]}"


def find_keys(data: bytes) -> list[str]:
    """Every full key in ``data``, in order of appearance, without repeats."""
    return list(dict.fromkeys(m.group().decode("ascii") for m in KEY_PATTERN.finditer(data)))


@dataclass(frozen=True)
class Finding:
    """One key found in one file; ``where`` says which part of the file held it."""

    path: Path
    key: str = field(repr=False)
    where: str = "bytes"

    @property
    def masked(self) -> str:
        return mask_key(self.key)

    def __str__(self) -> str:
        return f"{self.path}: {self.masked} ({self.where})"

    def __repr__(self) -> str:
        return f"Finding(path={str(self.path)!r}, key={self.masked!r}, where={self.where!r})"


@dataclass
class ScanReport:
    """What a scan found, which files it skipped on purpose, and how many it read."""

    findings: list[Finding] = field(default_factory=list)
    exempt: dict[Path, str] = field(default_factory=dict)
    files_scanned: int = 0
    seen: set[Path] = field(default_factory=set, repr=False)

    @property
    def ok(self) -> bool:
        return not self.findings


def scan_file(path: str | os.PathLike[str]) -> list[Finding]:
    """Keys in one file; [] for an exempt file (see the module docstring)."""
    path = Path(path)
    data = _read(path)
    if data is None or _exemption(data) is not None:
        return []
    return [Finding(path, key, where) for key, where in _keys_in(data, path.name)]


def scan_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    ignore: Iterable[str] = (),
    modified_since: float | None = None,
    report: ScanReport | None = None,
) -> ScanReport:
    """Scan files and directory trees; paths that do not exist are skipped.

    ``ignore`` holds glob patterns matched against each file's full path; matches are exempt.
    ``modified_since`` (a Unix time) skips older files. Pass ``report`` to add to it.
    """
    patterns = list(ignore)
    report = ScanReport() if report is None else report
    seen = report.seen
    for file in _walk(Path(p) for p in paths):
        resolved = file.resolve()
        if resolved in seen:
            continue
        seen.add(resolved)
        if modified_since is not None and _mtime(file) < modified_since:
            continue
        if any(fnmatch.fnmatch(str(file), pattern) for pattern in patterns):
            report.exempt[file] = "ignored by pattern"
            continue
        data = _read(file)
        if data is None:
            continue
        report.files_scanned += 1
        reason = _exemption(data)
        if reason is not None:
            report.exempt[file] = reason
            continue
        report.findings.extend(
            Finding(file, key, where) for key, where in _keys_in(data, file.name)
        )
    return report


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _walk(roots: Iterable[Path]) -> Iterator[Path]:
    for root in roots:
        # A root is followed even if it is a link (notebooks/ may be one); links inside are not.
        if root.is_file():
            yield root
        elif root.is_dir():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
                for name in sorted(filenames):
                    file = Path(dirpath, name)
                    if not file.is_symlink() and file.is_file():
                        yield file


def _read(path: Path) -> bytes | None:
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            # Read the head and tail only: logs and caches that big are not ours to hold keys.
            with path.open("rb") as fh:
                head = fh.read(_MAX_MEMBER_BYTES)
                fh.seek(-_MAX_MEMBER_BYTES, os.SEEK_END)
                return head + b"\n" + fh.read()
        return path.read_bytes()
    except OSError:
        # Files vanish while other processes tidy up; an unreadable file holds nothing we can show.
        return None


def _exemption(data: bytes) -> str | None:
    if data.startswith(_SQLITE_MAGIC):
        return "SQLite database (gateway store)"
    if len(data) < 4096 and _is_key_file(data):
        return "key file (holds only a key)"
    return None


def _is_key_file(data: bytes) -> bool:
    """What ``--api-key-file`` reads: one key line, maybe blank and ``#`` comment lines."""
    lines = [line.strip() for line in data.splitlines()]
    content = [line for line in lines if line and not line.startswith(b"#")]
    return (
        len(content) == 1
        and _WHOLE_KEY.fullmatch(content[0]) is not None
        and len(KEY_PATTERN.findall(data)) == 1  # no second key hidden in a comment
    )


def _keys_in(data: bytes, where: str, depth: int = 0) -> Iterator[tuple[str, str]]:
    found = dict.fromkeys(find_keys(data), "bytes" if depth == 0 else where)
    if depth < 2:
        for key, part in _decoded_parts(data, where, depth):
            found.setdefault(key, part)
    yield from found.items()


def _decoded_parts(data: bytes, where: str, depth: int) -> Iterator[tuple[str, str]]:
    if data[:4] == b"PAR1" and data[-4:] == b"PAR1":
        yield from _parquet_keys(data)
    elif data[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                for info in archive.infolist():
                    if info.is_dir() or info.file_size > _MAX_MEMBER_BYTES:
                        continue
                    member = archive.read(info)
                    yield from _keys_in(member, f"zip member {info.filename}", depth + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError):
            return
    elif data[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                inner = fh.read(_MAX_MEMBER_BYTES)
        except (OSError, EOFError):
            return
        yield from _keys_in(inner, "gzip content", depth + 1)


def _parquet_keys(data: bytes) -> Iterator[tuple[str, str]]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(io.BytesIO(data))
        for index in range(pf.num_row_groups):
            table = pf.read_row_group(index, use_threads=False)  # no pool to tear down at exit
            for name, column in zip(table.column_names, table.columns, strict=True):
                for chunk in column.chunks:
                    for key in find_keys(b"\n".join(_value_buffers(chunk))):
                        yield key, f"parquet column {name}"
    except Exception:
        # A half-written Parquet file (a crash test's leftover) still had its raw bytes scanned.
        return


def _value_buffers(array: pa.Array) -> Iterator[bytes]:
    """The bytes behind every string or binary value in ``array``, nested types included."""
    import pyarrow as pa

    kind = array.type
    if pa.types.is_dictionary(kind):
        yield from _value_buffers(array.dictionary)
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind):
        # Offsets are ignored: keys are sought in the concatenated values.
        buffer = array.buffers()[2]
        if buffer is not None:
            yield buffer.to_pybytes()
    elif pa.types.is_string_view(kind) or pa.types.is_binary_view(kind):
        yield b"\n".join(v for v in array.cast(pa.large_binary()).to_pylist() if v)
    elif pa.types.is_struct(kind):
        for index in range(kind.num_fields):
            yield from _value_buffers(array.field(index))
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_map(kind):
        yield from _value_buffers(array.flatten())


# ---------------------------------------------------------------- pytest plugin
# Hooks at module level so that ``-p tests._secret_scan`` registers them.

_REPORT_KEY = pytest.StashKey[tuple[ScanReport, list[Path]]]()
_STARTED_KEY = pytest.StashKey[float]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("secret-scan", "secret scan after the test session")
    group.addoption(
        "--no-secret-scan",
        action="store_true",
        help="do not scan the session's files for API keys afterwards",
    )
    parser.addini(
        "secret_scan_paths",
        type="paths",
        help="files and directories to scan for API keys after the session, besides tmp dirs",
        default=[],
    )
    parser.addini(
        "secret_scan_ignore",
        type="linelist",
        help="glob patterns of files allowed to hold an API key",
        default=[],
    )


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_STARTED_KEY] = time.time() - 1  # file systems round mtimes


def _default_cache_dir() -> Path | None:
    """gwtools' cache directory (``GW_CACHE_DIR`` or the per-user one), if it exists."""
    from gwtools._config import default_cache_dir

    path = default_cache_dir()
    return path if path.is_dir() else None


# tryfirst: before pytest's own sessionfinish, which may delete the tmp tree (retention policy).
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if hasattr(config, "workerinput") or config.getoption("no_secret_scan"):
        return  # xdist workers' tmp dirs live under the controller's basetemp: scanned there
    # The session's tmp tree; pytest offers no public handle on the factory it uses.
    roots: list[Path] = [config._tmp_path_factory.getbasetemp()]  # type: ignore[attr-defined]
    configured: list[Path] = config.getini("secret_scan_paths")
    if configured:
        roots += configured
    else:
        rootdir = config.rootpath
        # gwtools-report/ and gwtools-exports/: where `gwtools report` and dashboards write.
        names = ("notebooks", "data", "reports", "logs", "gwtools-report", "gwtools-exports")
        roots += [rootdir / name for name in names]
        roots += [rootdir / "benchmarks" / "results", *sorted(rootdir.glob("*.log"))]
    ignore = config.getini("secret_scan_ignore")
    report = scan_paths(roots, ignore=ignore)
    # The user's cache may hold real syncs from before: only what this session wrote counts.
    cache = _default_cache_dir()
    if cache is not None:
        started = config.stash.get(_STARTED_KEY, None)
        scan_paths([cache], ignore=ignore, modified_since=started, report=report)
        roots.append(cache)
    config.stash[_REPORT_KEY] = (report, roots)
    if not report.ok and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    stored = config.stash.get(_REPORT_KEY, None)
    if stored is None:
        return
    report, roots = stored
    tr = terminalreporter
    if report.ok:
        tr.write_line(
            f"secret scan: no API key in {report.files_scanned} files "
            f"({len(report.exempt)} exempt) under {len(roots)} paths"
        )
        return
    tr.write_sep("=", f"secret scan: {len(report.findings)} API keys found in files", red=True)
    for finding in report.findings:
        tr.write_line(f"  {finding}", red=True)
    tr.write_line(
        "A full API key must never be written to a cache, report, notebook or log: show it "
        "masked (sk_test_…abcd). Only a file holding nothing but a key is allowed (a key file)."
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m tests._secret_scan PATH...``: print findings, exit 1 if any."""
    args = sys.argv[1:] if argv is None else argv
    report = scan_paths(args or ["."])
    for finding in report.findings:
        print(finding)
    print(
        f"{len(report.findings)} keys in {report.files_scanned} files "
        f"({len(report.exempt)} exempt)",
        file=sys.stderr,
    )
    return 0 if report.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
