"""A damaged cache is handled, not served as if complete: unreadable Parquet files, a full
disk, a read-only folder, a path that is a file, a hand-edited ``_state.json``, and a cache no
sync has completed. Real syncs against the sandbox over loopback HTTP.

Full disk and read-only folder are real file-system conditions: the sync runs in a child
process with its own mount namespace (``unshare``) on a small tmpfs, filled up or remounted
read-only. Without ``unshare`` those two tests are skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

import gwtools
from gwtools.cli import main
from tests.library.test_crash_consistency import ROOT, Shop, engine_counts


@pytest.fixture
def shop(sandbox_b: Any, tmp_path: Path) -> Shop:
    return Shop(sandbox_b, tmp_path / "cache", payments=300)


def oldest_month_file(shop: Shop) -> Path:
    ds = shop.dataset()
    oldest = sorted(p for p in ds.path.iterdir() if p.name.startswith("created_month="))[0]
    (only,) = list(oldest.glob("*.parquet"))
    return only


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    path.write_bytes(b"" if how == "zero-byte" else data[: len(data) // 2])


def read(shop: Shop) -> Any:
    return gwtools.read_cache(shop.cache_dir, "payments", account="shop", mode="test")


# -- unreadable Parquet files --------------------------------------------------------------
@pytest.mark.parametrize("how", ["zero-byte", "truncated"])
def test_an_unreadable_file_is_quarantined_and_its_month_fetched_again(
    shop: Shop, how: str
) -> None:
    with shop.connect() as gw:
        assert gw.sync().complete
    ds = shop.dataset()
    everything = set(read(shop)["id"])
    damaged = oldest_month_file(shop)
    month = damaged.parent.name
    damage(damaged, how)

    # Read before the sync: the other months, a warning naming the file, and not "complete".
    with pytest.warns(gwtools.GatewayDataWarning, match=damaged.name) as caught:
        partial = read(shop)
    assert "next sync" in str(caught[0].message)
    assert partial.attrs["gwtools_cache"]["complete"] is False
    assert partial.attrs["gwtools_cache"]["damaged_files"] == [str(damaged)]
    assert 0 < len(partial) < len(everything)
    with pytest.raises(gwtools.CacheError, match=damaged.name):
        gwtools.read_cache(shop.cache_dir, "payments", account="shop", strict=True)

    # Moved aside (as a sync's first step does) but not fetched again yet: still partial.
    with pytest.warns(gwtools.GatewayDataWarning, match="moved it to"), ds.lock():
        pass
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync has fetched those months"):
        assert read(shop).attrs["gwtools_cache"]["complete"] is False

    # The next (incremental) sync fetches its month again.
    with shop.connect() as gw:
        result = gw.sync()
    assert result.complete and result.resources["payments"].mode == "incremental"
    quarantined = ds.quarantine_path / month / damaged.name
    assert quarantined.exists() and not quarantined.is_relative_to(ds.path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gwtools.GatewayDataWarning)
        back = read(shop)
    assert set(back["id"]) == everything
    assert back.attrs["gwtools_cache"]["complete"] is True
    assert engine_counts(ds.path) == (len(everything), len(everything))


def test_a_full_sync_always_repairs(shop: Shop) -> None:
    with shop.connect() as gw:
        assert gw.sync().complete
    everything = set(read(shop)["id"])
    damage(oldest_month_file(shop), "truncated")
    with shop.connect() as gw, pytest.warns(gwtools.GatewayDataWarning, match="could not be read"):
        assert gw.sync(full=True).complete
    assert set(read(shop)["id"]) == everything
    assert engine_counts(shop.dataset().path) == (len(everything), len(everything))


def test_a_quarantine_folder_that_is_a_file_is_named_in_the_error(shop: Shop) -> None:
    # The move aside failed on a file named _quarantine with "cannot write the cache at
    # …/payments …: Not a directory. Check the folder": the dataset folder, which is fine.
    with shop.connect() as gw:
        assert gw.sync().complete
    damage(oldest_month_file(shop), "zero-byte")
    blocker = shop.dataset().quarantine_path.parent
    blocker.write_text("not a folder")
    with shop.connect() as gw, pytest.raises(gwtools.CacheError) as caught:
        gw.sync()
    said = str(caught.value)
    assert f"{blocker} is a file, not a folder" in said, said
    assert "Move or rename that file" in said
    blocker.unlink()
    with shop.connect() as gw, pytest.warns(gwtools.GatewayDataWarning, match="moved it to"):
        assert gw.sync().complete
    assert len(read(shop)) == 300


def test_a_copied_cache_whose_quarantined_month_was_fetched_again_is_complete(
    shop: Shop, tmp_path: Path
) -> None:
    # Whether a quarantined month is still owed was read from the file's ctime, which a copy
    # (backup restore, rsync, cp -a, another machine) sets to the time of the copy: the copy
    # of a repaired cache warned "partial" (and strict=True raised) until its next sync.
    with shop.connect() as gw:
        assert gw.sync().complete
    damage(oldest_month_file(shop), "zero-byte")
    with pytest.warns(gwtools.GatewayDataWarning, match="moved it to"), shop.connect() as gw:
        assert gw.sync().complete  # moved aside, and its month fetched again
    copy = tmp_path / "copied"
    shutil.copytree(shop.cache_dir, copy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gwtools.GatewayDataWarning)
        frame = gwtools.read_cache(copy, "payments", account="shop", strict=True)
    assert len(frame) == 300 and frame.attrs["gwtools_cache"]["complete"] is True
    # One moved aside since (no sync has fetched it again) is still said, in the copy too.
    damage(oldest_month_file(shop), "zero-byte")
    with pytest.warns(gwtools.GatewayDataWarning, match="moved it to"), shop.dataset().lock():
        pass
    again = tmp_path / "copied-again"
    shutil.copytree(shop.cache_dir, again)
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync has fetched those months"):
        gwtools.read_cache(again, "payments", account="shop")


# -- _state.json ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"high_water": 12345}', "not an ISO 8601 time"),
        (b'{"high_water": "2099-01-01T00:00:00+00:00"}', "later than this machine's clock"),
        (b'{"high_water": "last tuesday"}', "not an ISO 8601 time"),
        (b'{"high_water": "2024-0', "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        # JSON's null was read as "no state": the cache's own record gone without a word.
        (b"null", "not a JSON object"),
        (b"", "not valid JSON"),  # what a full disk leaves of a file being written
    ],
    ids=["number", "future", "words", "unparsable", "list", "null", "empty"],
)
def test_a_state_that_cannot_be_right_is_ignored_and_everything_listed(
    shop: Shop, content: bytes, says: str
) -> None:
    with shop.connect() as gw:
        assert gw.sync("payments").complete
    ds = shop.dataset()
    ds.state_path.write_bytes(content)
    with shop.connect() as gw, pytest.warns(gwtools.GatewayDataWarning, match=says) as caught:
        result = gw.sync("payments")
    assert "lists everything again" in str(caught[0].message)
    payments = result.resources["payments"]
    assert payments.complete and payments.mode == "full"
    assert payments.unchanged == 300  # every cached row was listed again
    high = ds.state()["high_water"]
    assert isinstance(high, str) and high < "2099"  # a real mark again
    assert len(read(shop)) == 300


def test_a_state_that_is_a_folder_is_one_clear_error_for_every_reader_and_the_sync(
    shop: Shop,
) -> None:
    # _state.json made a folder (a mistaken mkdir, a bad restore) raised a bare
    # IsADirectoryError from read_cache, scan_cache, cache_state and the sync alike.
    with shop.connect() as gw:
        assert gw.sync("payments").complete
    ds = shop.dataset()
    ds.state_path.unlink()
    ds.state_path.mkdir()
    readers = {
        "read_cache": lambda: read(shop),
        "scan_cache": lambda: gwtools.scan_cache(shop.cache_dir, "payments", account="shop"),
        "cache_state": lambda: gwtools.cache_state(shop.cache_dir, "payments", account="shop"),
        "shared": lambda: gwtools.scan_cache(
            str(shop.cache_dir), "payments", account="shop", filesystem=pafs.LocalFileSystem()
        ),
    }
    for name, reader in readers.items():
        with pytest.raises(gwtools.CacheError) as caught:
            reader()
        said = str(caught.value)
        assert str(ds.state_path) in said and "is a folder" in said, (name, said)
        assert "gwtools sync" in said, (name, said)
    with shop.connect() as gw, pytest.raises(gwtools.CacheError, match="is a folder"):
        gw.sync("payments")
    assert ds.state_path.is_dir()  # left for its owner to look at, not deleted
    # Once it is moved away, the next sync lists everything again and the cache is whole.
    ds.state_path.rmdir()
    with shop.connect() as gw:
        assert gw.sync("payments").resources["payments"].mode == "full"
    assert len(read(shop)) == 300


@pytest.mark.parametrize("value", [5, "last tuesday", "2099-01-01T00:00:00+00:00"])
def test_a_sync_time_that_cannot_be_right_does_not_make_the_cache_complete(
    shop: Shop, value: object
) -> None:
    # A hand-edited "last_full_sync": 5 (and no high-water mark) read as a completed sync: no
    # warning that rows may be missing, and strict=True passed.
    with shop.connect() as gw:
        assert gw.sync("payments").complete
    ds = shop.dataset()
    state = json.loads(ds.state_path.read_text())
    state.pop("high_water")
    state["last_full_sync"] = value
    ds.state_path.write_text(json.dumps(state))
    with pytest.warns(gwtools.GatewayDataWarning) as caught:
        frame = read(shop)
    said = [str(w.message) for w in caught]
    assert any("its last_full_sync" in m and "reads as partial" in m for m in said), said
    assert any("are partial" in m for m in said), said
    assert frame.attrs["gwtools_cache"]["complete"] is False
    with (
        pytest.warns(gwtools.GatewayDataWarning, match="its last_full_sync"),
        pytest.raises(gwtools.CacheError, match="partial"),
    ):
        gwtools.read_cache(shop.cache_dir, "payments", account="shop", strict=True)


# -- a cache no sync has completed -----------------------------------------------------------
def test_a_cache_no_sync_completed_is_served_as_partial(shop: Shop) -> None:
    """The first sync dies after merging one month: the rows are readable, but read_cache
    warns (how many rows, since when, what to run) and marks the frame; strict raises."""
    killed = shop.sync_process(crash_at="compact.month-done@1", resources="payments")
    assert killed.returncode == -9, killed.stderr[-2000:]
    with pytest.warns(gwtools.GatewayDataWarning, match="partial") as caught:
        partial = read(shop)
    message = str(caught[0].message)
    assert f"{len(partial):,} rows" in message and "since" in message
    assert "gwtools sync" in message
    assert 0 < len(partial) < 300
    info = partial.attrs["gwtools_cache"]
    assert info["complete"] is False and "gwtools sync" in info["message"]
    with pytest.raises(gwtools.CacheError, match="partial"):
        gwtools.read_cache(shop.cache_dir, "payments", account="shop", strict=True)
    with shop.connect() as gw:
        assert gw.sync().complete
    with warnings.catch_warnings():
        warnings.simplefilter("error", gwtools.GatewayDataWarning)
        assert len(read(shop)) == 300


# -- folders that cannot be written ----------------------------------------------------------
def test_a_cache_path_that_is_a_file_is_one_clear_error(shop: Shop, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    gw = gwtools.connect(shop.key, shop.base_url, cache_dir=blocker, account="shop")
    with gw, pytest.raises(gwtools.CacheError, match="is a file, not a folder") as caught:
        gw.sync()
    assert str(blocker) in str(caught.value) and "GW_CACHE_DIR" in str(caught.value)
    result = CliRunner().invoke(
        main,
        ["sync", "--account", "shop"],
        env={"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url, "GW_CACHE_DIR": str(blocker)},
    )
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"Error: {blocker} is a file, not a folder"), result.output
    assert "GW_CACHE_DIR" in lines[0]


@pytest.mark.parametrize("name", ["_sync.lock", "_rejects.jsonl"])
def test_a_folder_where_the_cache_keeps_a_file_is_named_in_the_error(shop: Shop, name: str) -> None:
    # "cannot write the cache at …/payments while creating the cache folder: Is a directory.
    # Check the folder": the dataset folder is fine; the folder named like the lock file (or
    # the rejects file) is what stood in the way, and nothing said which.
    with shop.connect() as gw:
        assert gw.sync().complete
    blocker = shop.dataset().path / name
    blocker.unlink(missing_ok=True)
    blocker.mkdir()
    with pytest.raises(gwtools.CacheError) as caught:
        if name == "_rejects.jsonl":
            # Only a sync with something to reject writes it: write one as the sync does.
            shop.dataset().append_rejects(["bad record"], sync_id="s")
        else:
            with shop.connect() as gw:
                gw.sync()
    said = str(caught.value)
    assert f"{blocker} is a folder" in said, said
    assert "move it" in said.lower(), said
    blocker.rmdir()
    with shop.connect() as gw:
        assert gw.sync().complete
    # The lock of the failed sync was released: another can take it at once.
    lock = shop.dataset().file_lock(timeout=0)
    lock.acquire()
    lock.release()


#: Runs inside its own mount namespace with a small tmpfs at argv[1]: a first sync that
#: completes, then the condition (``full``: a file fills the disk; ``read-only``: the tmpfs is
#: remounted read-only), then a library sync and a CLI sync; prints what happened as JSON.
IN_NAMESPACE = r"""
import json, os, subprocess, sys
from pathlib import Path
import gwtools

cache, condition = sys.argv[1], sys.argv[2]
out = {}
with gwtools.connect(cache_dir=cache, account="shop") as gw:
    out["first"] = gw.sync().complete
before = gwtools.read_cache(cache, "payments")


def fill():
    st = os.statvfs(cache)
    with open(os.path.join(cache, "filler"), "wb") as fh:
        try:
            fh.write(b"\0" * (st.f_bavail * st.f_frsize))
            fh.flush()
        except OSError:
            pass


if condition == "full":
    fill()
elif condition == "full-at-merge":  # the batches are staged; the disk fills as the merge starts
    from gwtools.cache import _dataset

    def on_step(step):
        if step == "compact.start":
            _dataset.on_step = None  # once: the sync after freeing the space has room
            fill()

    _dataset.on_step = on_step
elif condition == "payments-elsewhere":  # the payments folder on a file system of its own
    import shutil

    payments = os.path.join(cache, "shop", "test", "payments")
    shutil.copytree(payments, os.path.join(cache, "saved"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", payments], check=True)
    shutil.copytree(os.path.join(cache, "saved"), payments, dirs_exist_ok=True)
else:
    subprocess.run(["mount", "-o", "remount,ro", cache], check=True)
with gwtools.connect(cache_dir=cache, account="shop") as gw:
    try:
        gw.sync(full=True)
        out["error"] = None
    except gwtools.CacheError as exc:
        out["error"] = str(exc)
after = gwtools.read_cache(cache, "payments")
out["unchanged"] = bool(before.equals(after)) and after.attrs["gwtools_cache"]["complete"]
out["temporaries_in_dataset"] = [str(p) for p in Path(cache).rglob(".tmp-*") if "_staging" not in str(p)]
cli = subprocess.run(
    [sys.executable, "-m", "gwtools", "sync", "--full", "--account", "shop", "--cache-dir", cache],
    capture_output=True, text=True,
)
out["cli"] = [cli.returncode, cli.stdout, cli.stderr]
if condition.startswith("full"):
    os.remove(os.path.join(cache, "filler"))
    with gwtools.connect(cache_dir=cache, account="shop") as gw:
        out["after_freeing"] = gw.sync(full=True).complete
    out["rows"] = len(gwtools.read_cache(cache, "payments"))
print(json.dumps(out))
"""


def in_namespace(shop: Shop, tmp_path: Path, condition: str) -> dict[str, Any]:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) to mount a small tmpfs")
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("this machine does not allow unprivileged mount namespaces")
    mount = tmp_path / "mnt"
    mount.mkdir()
    env = {**os.environ, "GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url}
    proc = subprocess.run(
        [
            "unshare",
            "-rm",
            "sh",
            "-c",
            'mount -t tmpfs -o size=4m tmpfs "$1" && exec "$2" -c "$3" "$1" "$4"',
            "sh",
            str(mount),
            sys.executable,
            IN_NAMESPACE,
            condition,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def test_a_full_disk_is_one_clear_error_and_nothing_cached_is_lost(
    shop: Shop, tmp_path: Path
) -> None:
    out = in_namespace(shop, tmp_path, "full")
    assert out["first"] is True
    assert out["error"] is not None and "the disk is full" in out["error"], out
    assert "/payments" in out["error"] or "/refunds" in out["error"]
    assert "Free some space" in out["error"]
    assert out["unchanged"] is True and out["temporaries_in_dataset"] == []
    code, _stdout, stderr = out["cli"]
    assert code == 1 and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith("Error: cannot write the cache at") and "disk is full" in stderr
    assert out["after_freeing"] is True and out["rows"] == 300


def test_a_disk_that_fills_during_the_merge_is_one_clear_error_and_nothing_cached_is_lost(
    shop: Shop, tmp_path: Path
) -> None:
    # The batches fit, the merge's new month file does not: the error must be the full
    # disk's (pyarrow's write error carries its errno only in its text), the months as they
    # were, no temporary left in the dataset, and the next sync, given room, completes.
    out = in_namespace(shop, tmp_path, "full-at-merge")
    assert out["first"] is True
    assert out["error"] is not None and "the disk is full" in out["error"], out
    assert "Free some space" in out["error"]
    assert out["unchanged"] is True and out["temporaries_in_dataset"] == []
    assert out["after_freeing"] is True and out["rows"] == 300


def test_a_dataset_folder_on_another_file_system_than_the_staging_says_so(
    shop: Shop, tmp_path: Path
) -> None:
    # Merged months are renamed from _staging (beside the dataset) into it, which only works
    # within one file system. A dataset folder moved to another disk (a mount, a symlink)
    # failed every sync with "Invalid cross-device link. Check the folder, then run the sync
    # again", which fails the same way.
    out = in_namespace(shop, tmp_path, "payments-elsewhere")
    assert out["first"] is True
    error = out["error"]
    assert error is not None and "different file systems" in error, out
    assert "_staging" in error and "one file system" in error, error
    assert out["unchanged"] is True and out["temporaries_in_dataset"] == []


def test_a_read_only_folder_is_one_clear_error_and_reading_still_works(
    shop: Shop, tmp_path: Path
) -> None:
    out = in_namespace(shop, tmp_path, "read-only")
    assert out["error"] is not None and "read-only" in out["error"], out
    assert "GW_CACHE_DIR" in out["error"]
    # A cache shared read-only is still readable: the error says how, in both vocabularies.
    assert "refresh=False" in out["error"] and "gwtools.read_cache" in out["error"]
    assert "gwtools export --no-refresh" in out["error"]
    assert out["unchanged"] is True
    code, _stdout, stderr = out["cli"]
    assert code == 1 and len(stderr.strip().splitlines()) == 1, stderr
    assert "read-only" in stderr
