"""The secret scanner finds planted keys wherever a cache, report, notebook or log could hide them.

Every file a test plants is removed at teardown (the ``planted`` fixture): the session-end scan
covers this session's tmp tree and must not trip over the scanner's own fixtures.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests._secret_scan import find_keys, mask_key, scan_file, scan_paths

# Built at run time so that no key literal sits in the source.
KEY = "sk_" + "test_" + "Ab3dEf6hIj9kLm2nOp5qRs8t"
PK_LIVE = "pk_" + "live_" + "Zz" * 12 + "9XyW"


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "planted"
    root.mkdir()
    yield root
    shutil.rmtree(root)


def test_finds_planted_key_in_text_and_names_file_with_masked_key(planted: Path) -> None:
    log = planted / "logs" / "sync.log"
    log.parent.mkdir()
    log.write_text(f"INFO sync started\nDEBUG Authorization: Bearer {KEY}\n")
    (planted / "clean.log").write_text("INFO using key sk_test_…qRs8t\n")

    report = scan_paths([planted])

    assert [(f.path, f.key) for f in report.findings] == [(log, KEY)]
    assert report.files_scanned == 2
    assert str(report.findings[0]) == f"{log}: sk_test_…Rs8t (bytes)"
    assert KEY not in repr(report.findings[0])


def test_masked_and_short_keys_are_not_keys() -> None:
    text = (
        "sk_test_…abcd pk_live_…9XyW sk_test_tooShort123 "
        "xsk_test_Ab3dEf6hIj9kLm2nOp5qRs8t sk_prod_Ab3dEf6hIj9kLm2nOp5qRs8t"
    )
    assert find_keys(text.encode()) == []
    assert find_keys(f"key={KEY}, again {KEY}; {PK_LIVE}".encode()) == [KEY, PK_LIVE]
    assert mask_key(KEY) == "sk_test_…Rs8t"
    assert mask_key(PK_LIVE) == "pk_live_…9XyW"


@pytest.mark.parametrize("compression", ["lz4", "snappy", "zstd", "gzip", "none"])
def test_finds_key_inside_compressed_parquet(planted: Path, compression: str) -> None:
    # Neither the smallest nor the largest value, so that column statistics do not show the key.
    metadata = [json.dumps({"a": f"x{i % 7}"}) for i in range(2000)]
    metadata[0] = json.dumps({"z": "last"})
    metadata[1000] = json.dumps({"note": KEY})
    frame = pd.DataFrame({"id": [f"pay_{i:06d}" for i in range(2000)], "metadata": metadata})
    path = planted / f"payments-{compression}.parquet"
    pq.write_table(pa.Table.from_pandas(frame), path, compression=compression)

    findings = scan_file(path)

    assert [f.key for f in findings] == [KEY]
    if compression == "gzip":
        assert KEY.encode() not in path.read_bytes()  # only reading the column can find it
        assert findings[0].where == "parquet column metadata"


def test_finds_key_in_nested_parquet_and_schema_metadata(planted: Path) -> None:
    nested = pa.table(
        {"refunds": pa.array([[{"note": "ok"}], [{"note": f"by {PK_LIVE}"}]])},
    )
    nested_path = planted / "nested.parquet"
    pq.write_table(nested, nested_path, compression="zstd")
    meta_path = planted / "meta.parquet"
    pq.write_table(pa.table({"a": [1]}).replace_schema_metadata({"sync_state": KEY}), meta_path)

    assert [f.key for f in scan_file(nested_path)] == [PK_LIVE]
    assert [f.key for f in scan_file(meta_path)] == [KEY]


def test_finds_key_in_notebook_output_xlsx_and_gzip(planted: Path) -> None:
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "source": "gw = gwtools.connect()",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": f"key {KEY}\n"}],
            }
        ]
    }
    (planted / "01_overview.ipynb").write_text(json.dumps(notebook))
    with zipfile.ZipFile(planted / "report.xlsx", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/sharedStrings.xml", f"<si><t>{KEY}</t></si>" * 50)
    (planted / "sync.log.gz").write_bytes(gzip.compress(f"token={KEY}\n".encode() * 100))

    report = scan_paths([planted])

    found = {f.path.name: f.where for f in report.findings}
    assert found == {
        "01_overview.ipynb": "bytes",
        "report.xlsx": "zip member xl/sharedStrings.xml",
        "sync.log.gz": "gzip content",
    }


def test_key_files_and_the_gateway_store_are_exempt_but_counted(planted: Path) -> None:
    (planted / "api.key").write_text(KEY + "\n")
    (planted / "commented.key").write_text(f"# the shop's test key\n\n{KEY}\n")
    (planted / "two.key").write_text(f"# old: {PK_LIVE}\n{KEY}\n")  # a second key: not exempt
    store = planted / "sandbox.sqlite3"
    with sqlite3.connect(store) as db:
        db.execute("create table api_keys (secret text)")
        db.execute("insert into api_keys values (?)", (KEY,))
    db.close()
    (planted / "config.env").write_text(f"GW_API_KEY={KEY}\n")  # not only a key: a leak

    report = scan_paths([planted])

    assert sorted({f.path.name for f in report.findings}) == ["config.env", "two.key"]
    assert sorted(p.name for p in report.exempt) == ["api.key", "commented.key", "sandbox.sqlite3"]


def test_a_linked_root_is_followed_links_inside_are_not(planted: Path) -> None:
    real = planted / "gwtools" / "notebooks"
    real.mkdir(parents=True)
    (real / "02_declines.ipynb").write_text(json.dumps({"outputs": [KEY]}))
    (planted / "notebooks").symlink_to(real, target_is_directory=True)
    (planted / "elsewhere").mkdir()
    (planted / "elsewhere" / "link").symlink_to(real, target_is_directory=True)

    assert [f.path for f in scan_paths([planted / "notebooks"]).findings] == [
        planted / "notebooks" / "02_declines.ipynb"
    ]
    assert scan_paths([planted / "elsewhere"]).files_scanned == 0


def test_ignore_patterns_and_missing_paths(planted: Path) -> None:
    (planted / "fixture.json").write_text(json.dumps({"key": KEY}))

    report = scan_paths([planted, planted / "absent"], ignore=["*/fixture.json"])

    assert report.ok
    assert list(report.exempt.values()) == ["ignored by pattern"]


def test_plugin_fails_a_passing_session_that_leaves_a_key_behind(planted: Path) -> None:
    """Inner pytest sessions with the plugin: their tests pass, and in one a key leaks into a log
    (under xdist) and into gwtools' cache directory."""
    project = planted / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "notebooks" / "clean.ipynb").write_text("{}")
    (project / "pytest.ini").write_text("[pytest]\n")
    cache = planted / "cache"
    (cache / "old").mkdir(parents=True)
    # Written before the session (a developer's earlier sync): not this run's doing, not flagged.
    (cache / "old" / "state.json").write_text(json.dumps({"key": KEY}))
    os.utime(cache / "old" / "state.json", (1_600_000_000, 1_600_000_000))
    (project / "test_leak.py").write_text(
        textwrap.dedent(
            f"""
            import os, pathlib

            KEY = "sk_" + "{KEY[3:]}"

            def test_writes_log(tmp_path):
                text = "Bearer " + (KEY if os.environ.get("LEAK") else "sk_test_…Rs8t")
                (tmp_path / "out.log").write_text(text)

            def test_writes_cache(tmp_path):
                if os.environ.get("LEAK"):
                    state = pathlib.Path(os.environ["GW_CACHE_DIR"], "shop", "sync.json")
                    state.parent.mkdir(exist_ok=True)
                    state.write_text('{{"api_key": "' + KEY + '"}}')

            def test_writes_key_file(tmp_path):
                (tmp_path / "api.key").write_text(KEY)
            """
        )
    )
    command = [sys.executable, "-m", "pytest", "-p", "tests._secret_scan", "-q"]
    command += ["-p", "no:cacheprovider", f"--basetemp={planted / 'basetemp'}"]
    command += ["--rootdir", str(project), str(project)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only this plugin: starts in 1 s, not 5
    env["GW_CACHE_DIR"] = str(cache)
    # The plugin lives with the tests, not in the package: the repository root on the path.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))

    def run(*extra: str, leak: bool = False) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *extra],
            cwd=project,
            env={**env, "LEAK": "1"} if leak else env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    # Under xdist each worker writes below the controller's basetemp, where the scan looks.
    leaked = run("-p", "xdist.plugin", "-n", "2", leak=True)
    (cache / "shop" / "sync.json").unlink()
    clean = run()
    skipped = run("--no-secret-scan", leak=True)

    output = leaked.stdout + leaked.stderr
    assert leaked.returncode == 1, output
    assert "3 passed" in leaked.stdout
    assert "secret scan: 2 API keys found in files" in leaked.stdout, output
    assert "popen-gw" in leaked.stdout and "out.log: sk_test_…Rs8t (bytes)" in leaked.stdout
    assert f"{cache / 'shop' / 'sync.json'}: sk_test_…Rs8t (bytes)" in leaked.stdout
    assert "state.json" not in leaked.stdout
    assert KEY not in output
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "secret scan: no API key in" in clean.stdout and "(1 exempt)" in clean.stdout
    assert skipped.returncode == 0 and "secret scan" not in skipped.stdout
