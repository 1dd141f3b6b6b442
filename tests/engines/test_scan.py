"""Lazy tables over the cache: scan_cache and Gateway.scan against read_cache and payments()."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import gwtools
from gwtools import analysis as a
from gwtools.cache._dataset import to_arrow
from gwtools.cache._scan import connection
from tests.engines.conftest import SAMPLE
from tests.toolkit.conftest import build_payments


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values("id").reset_index(drop=True)


def test_scan_is_lazy_and_canonical(engine_cache: Path) -> None:
    lazy = gwtools.scan_cache(engine_cache, "payments")
    assert isinstance(lazy, duckdb.DuckDBPyRelation)
    assert lazy.columns == list(gwtools.empty_payments().columns)
    eager = gwtools.read_cache(engine_cache, "payments")
    pd.testing.assert_frame_equal(_sorted(a.to_pandas(lazy)), _sorted(eager))


@pytest.mark.parametrize(
    "filters",
    [
        {"since": "2026-09-30", "until": "2026-10-31"},
        {"status": "failed"},
        {"status": ["failed", "canceled"], "since": "2026-11-01T15:30:00"},
    ],
)
def test_filters_match_read_cache(engine_cache: Path, filters: dict[str, Any]) -> None:
    lazy = a.to_pandas(gwtools.scan_cache(engine_cache, "payments", **filters))
    eager = gwtools.read_cache(engine_cache, "payments", **filters)
    assert len(eager) > 0
    pd.testing.assert_frame_equal(_sorted(lazy), _sorted(eager))


def test_since_is_inclusive_and_until_exclusive(engine_cache: Path) -> None:
    # pay_edge_midnight was created at 2026-11-01 15:30:00 UTC exactly.
    at = "2026-11-01T15:30:00"
    ids = a.to_pandas(gwtools.scan_cache(engine_cache, "payments", since=at))["id"].tolist()
    assert "pay_edge_midnight" in ids
    ids = a.to_pandas(gwtools.scan_cache(engine_cache, "payments", until=at))["id"].tolist()
    assert "pay_edge_midnight" not in ids


def _two_files(root: Path) -> Path:
    """A payments dataset whose month holds two files, as an interrupted compaction leaves
    it: the later file (names sort in write order) has the newer version of pay_1."""
    month = root / "payments" / "created_month=2026-11"
    month.mkdir(parents=True)
    older = build_payments(
        [{"status": "pending", "amount": 100}, {"status": "failed", "amount": 5}]
    )
    newer = build_payments([{"status": "succeeded", "amount": 100}])
    pq.write_table(to_arrow(older, "payments"), month / "part-00000000000000000001-a.parquet")
    pq.write_table(to_arrow(newer, "payments"), month / "part-00000000000000000002-b.parquet")
    (root / "payments" / "_state.json").write_text('{"high_water": "2026-11-02T02:00:00Z"}')
    return month


def test_an_interrupted_sync_is_deduplicated_newest_file_wins(tmp_path: Path) -> None:
    # Hidden or underscored files are never data, whatever their extension.
    month = _two_files(tmp_path)
    shutil.copy(month / "part-00000000000000000001-a.parquet", month / ".tmp-part-x.parquet")
    shutil.copy(month / "part-00000000000000000001-a.parquet", month / "_ignored.parquet")
    lazy = a.to_pandas(gwtools.scan_cache(tmp_path, "payments")).sort_values("id")
    assert lazy[["id", "status"]].values.tolist() == [["pay_1", "succeeded"], ["pay_2", "failed"]]
    pd.testing.assert_frame_equal(_sorted(lazy), _sorted(gwtools.read_cache(tmp_path, "payments")))


def test_a_cache_on_a_pyarrow_filesystem(engine_cache: Path) -> None:
    # An in-memory filesystem stands in for shared storage (s3://…): same rows, same analyses.
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(engine_cache), "shared/gwtools", destination_filesystem=memory)
    remote = gwtools.scan_cache("shared/gwtools", "payments", filesystem=memory)
    local = gwtools.scan_cache(engine_cache, "payments")
    pd.testing.assert_frame_equal(_sorted(a.to_pandas(remote)), _sorted(a.to_pandas(local)))
    pd.testing.assert_frame_equal(
        a.decline_rate(remote, freq="week", tz="Asia/Kuala_Lumpur"),
        a.decline_rate(local, freq="week", tz="Asia/Kuala_Lumpur"),
    )
    sub = pafs.SubTreeFileSystem(str(engine_cache / "acct" / "test"), pafs.LocalFileSystem())
    refunds = gwtools.scan_cache("refunds", "refunds", filesystem=sub, status="failed")
    failed = gwtools.read_cache(engine_cache, "refunds", status="failed")
    assert "rfnd_edge_failed" in set(failed["id"])
    assert set(a.to_pandas(refunds)["id"]) == set(failed["id"])


def test_a_remote_interrupted_sync_is_deduplicated(tmp_path: Path) -> None:
    _two_files(tmp_path)
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(tmp_path), "bucket", destination_filesystem=memory)
    lazy = a.to_pandas(gwtools.scan_cache("bucket/payments", "payments", filesystem=memory))
    assert lazy.sort_values("id")["status"].tolist() == ["succeeded", "failed"]


def test_a_cache_no_sync_completed_warns_or_raises(tmp_path: Path) -> None:
    # As read_cache: rows of a partial cache are usable, but the user is told.
    _two_files(tmp_path)
    (tmp_path / "payments" / "_state.json").unlink()
    with pytest.warns(gwtools.GatewayDataWarning, match="partial: no sync of them has completed"):
        gwtools.scan_cache(tmp_path, "payments")
    with pytest.raises(gwtools.CacheError, match="Run `gwtools sync`"):
        gwtools.scan_cache(tmp_path, "payments", strict=True)
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(tmp_path), "bucket", destination_filesystem=memory)
    with pytest.raises(gwtools.CacheError, match="partial"):
        gwtools.scan_cache("bucket", "payments", filesystem=memory, strict=True)


def test_a_file_url_reads_the_local_cache(engine_cache: Path) -> None:
    lazy = gwtools.scan_cache(engine_cache.as_uri(), "refunds")
    assert len(lazy) == len(gwtools.read_cache(engine_cache, "refunds"))


def test_nothing_is_read_until_a_result_is_asked_for(tmp_path: Path) -> None:
    # A file whose data pages are destroyed but whose footer is intact: making the lazy
    # table reads footers only, so it works; asking for rows reads the pages, and fails.
    _two_files(tmp_path)
    part = next((tmp_path / "payments").glob("*/part-*1-a.parquet"))
    data = bytearray(part.read_bytes())
    footer_start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    data[4:footer_start] = bytes(footer_start - 4)
    part.write_bytes(bytes(data))
    lazy = gwtools.scan_cache(tmp_path, "payments")
    assert lazy.columns == list(gwtools.empty_payments().columns)
    with pytest.raises(duckdb.Error):
        a.to_pandas(lazy)


def test_read_cache_reads_shared_storage_as_it_reads_a_folder(
    engine_cache: Path, tmp_path: Path
) -> None:
    fsspec = pytest.importorskip("fsspec")
    fsspec.filesystem("memory").put(str(engine_cache), f"/{tmp_path.name}", recursive=True)
    url = f"memory://{tmp_path.name}"
    for resource in ("payments", "refunds"):
        local = gwtools.read_cache(engine_cache, resource)
        pd.testing.assert_frame_equal(gwtools.read_cache(url, resource), local)
    remote = gwtools.read_cache(url, "payments", status="failed", since="2026-09-01")
    pd.testing.assert_frame_equal(
        remote, gwtools.read_cache(engine_cache, "payments", status="failed", since="2026-09-01")
    )
    assert remote.attrs["gwtools_cache"]["complete"] is True
    # A pyarrow filesystem object, a path on it: the same.
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(engine_cache), "shared/gw", destination_filesystem=memory)
    pd.testing.assert_frame_equal(
        gwtools.read_cache("shared/gw", "refunds", filesystem=memory),
        gwtools.read_cache(engine_cache, "refunds"),
    )
    # The URL branch of scan_cache: a scheme pyarrow does not know goes through fsspec.
    lazy = gwtools.scan_cache(url, "payments", status="failed")
    assert set(a.to_pandas(lazy)["id"]) == set(
        gwtools.read_cache(engine_cache, "payments", status="failed")["id"]
    )


def test_a_cache_the_sandbox_filled_is_labelled_sandbox_data_wherever_it_is_read(
    tmp_path: Path,
) -> None:
    """The shipped sample is sandbox data: its state says so, and every reader of the folder
    (or of a copy on shared storage) labels what it reads; a copy without that state is not
    labelled (real data never is)."""
    from gwtools import plots, report

    fsspec = pytest.importorskip("fsspec")
    sample = SAMPLE.parents[1]
    fsspec.filesystem("memory").put(str(sample), f"/{tmp_path.name}", recursive=True)
    for where in (sample, f"memory://{tmp_path.name}"):
        assert gwtools.cache_state(where, "payments")["sandbox_data"] is True
        assert gwtools.read_cache(where, "payments").attrs["gwtools_source"] == "sandbox data"
        source = gwtools.open_source(where)
        assert source.sandbox_data and not source.embedded and plots.is_sandbox_data(source)
    tables = report.load_tables(source=str(sample), tz="UTC")
    assert tables.sandbox_data and repr(tables).startswith("sandbox data: not real payments")

    unmarked = tmp_path / "copy"
    shutil.copytree(sample, unmarked)
    for state in unmarked.rglob("_state.json"):
        state.write_text(state.read_text().replace('"sandbox_data": true', '"sandbox_data": false'))
    assert "gwtools_source" not in gwtools.read_cache(unmarked, "payments").attrs
    assert not gwtools.open_source(unmarked).sandbox_data


def test_a_partial_cache_on_shared_storage_warns_in_read_cache(tmp_path: Path) -> None:
    _two_files(tmp_path)
    (tmp_path / "payments" / "_state.json").unlink()
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(tmp_path), "bucket", destination_filesystem=memory)
    with pytest.warns(gwtools.GatewayDataWarning, match=r"read_cache\(\.\.\., strict=True\)"):
        frame = gwtools.read_cache("bucket", "payments", filesystem=memory)
    assert frame.attrs["gwtools_cache"]["complete"] is False
    assert frame["id"].tolist() == ["pay_1", "pay_2"]  # every row, the newest version of pay_1
    assert frame["status"].tolist() == ["succeeded", "failed"]
    with pytest.raises(gwtools.CacheError, match="partial"):
        gwtools.read_cache("bucket", "payments", filesystem=memory, strict=True)


@pytest.mark.parametrize("read", [gwtools.read_cache, gwtools.scan_cache])
def test_an_unknown_url_scheme_says_what_to_check(read: Any) -> None:
    with pytest.raises(gwtools.ConfigurationError, match=r"'nosuch://b/gw'.*Check the URL"):
        read("nosuch://b/gw", "payments")


def test_an_fsspec_filesystem(engine_cache: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    memory = fsspec.filesystem("memory")
    memory.put(str(engine_cache), "/gw", recursive=True)
    lazy = gwtools.scan_cache("/gw", "refunds", filesystem=memory)
    assert len(lazy) == len(gwtools.read_cache(engine_cache, "refunds"))


def test_errors_say_what_to_do(tmp_path: Path, engine_cache: Path) -> None:
    with pytest.raises(gwtools.CacheError, match=r"no cache at"):
        gwtools.scan_cache(tmp_path / "nowhere", "payments")
    # The filters are checked by read_cache's rules, before any file is looked at.
    with pytest.raises(gwtools.ConfigurationError, match="since="):
        gwtools.scan_cache(engine_cache, "payments", since="last tuesday")
    with pytest.raises(gwtools.ConfigurationError, match="'failed'"):
        gwtools.scan_cache(tmp_path / "nowhere", "payments", status="declined")
    with pytest.raises(gwtools.ConfigurationError, match="swap them"):
        gwtools.scan_cache(engine_cache, "payments", since="2026-10-31", until="2026-09-30")
    upper = gwtools.scan_cache(engine_cache, "payments", status="FAILED")
    assert len(upper) == len(gwtools.read_cache(engine_cache, "payments", status="failed"))
    shutil.copytree(engine_cache / "acct", engine_cache.parent / "two" / "other")
    shutil.copytree(engine_cache / "acct", engine_cache.parent / "two" / "acct")
    with pytest.raises(gwtools.ConfigurationError, match="pass account= and mode=") as said:
        gwtools.scan_cache(engine_cache.parent / "two", "payments")
    # the folders it names work as the source (the CLI's --source has no --mode)
    named = str(said.value).rsplit("(", 1)[1].rstrip(")").split(", ")
    assert sorted(named) == [
        str(engine_cache.parent / "two" / a / "test") for a in ("acct", "other")
    ]
    assert len(gwtools.scan_cache(named[0], "payments")) == len(
        gwtools.read_cache(engine_cache, "payments")
    )
    one = gwtools.scan_cache(engine_cache.parent / "two", "payments", account="other", mode="test")
    assert len(one) == len(gwtools.read_cache(engine_cache, "payments"))
    # A mistyped account or mode: the message lists what the folder holds.
    for wrong in ({"mode": "live"}, {"account": "acme", "mode": "test"}):
        with pytest.raises(gwtools.CacheError, match=r"it holds account='acct' mode='test'\)"):
            gwtools.read_cache(engine_cache, "payments", **wrong)  # type: ignore[arg-type]
    memory = pafs._MockFileSystem()
    with pytest.raises(gwtools.CacheError, match="no cache at 'missing'"):
        gwtools.scan_cache("missing", "payments", filesystem=memory)


def test_tables_on_two_engines_are_refused(engine_cache: Path) -> None:
    lazy = gwtools.scan_cache(engine_cache, "payments")
    eager = gwtools.read_cache(engine_cache, "refunds")
    with pytest.raises(gwtools.ConfigurationError, match="different engines"):
        a.refund_rate(lazy, eager)
    with pytest.raises(gwtools.ConfigurationError, match=r"cannot analyse a builtins\.list"):
        a.decline_rate([1, 2])  # type: ignore[arg-type]


def test_gateway_scan_equals_payments(tmp_path: Path) -> None:
    gw = gwtools.connect(cache_dir=tmp_path)
    try:
        with pytest.warns(gwtools.GatewayDataWarning, match="no sync of them has completed"):
            assert len(gw.scan("payments")) == 0  # nothing cached yet: an empty lazy table
        gw.sync()
        pd.testing.assert_frame_equal(
            _sorted(a.to_pandas(gw.scan("payments", status="failed"))),
            _sorted(gw.payments(status="failed", refresh=False)),
        )
        pd.testing.assert_frame_equal(
            a.refund_rate(gw.scan("payments"), gw.scan("refunds"), freq="month"),
            a.refund_rate(gw.payments(refresh=False), gw.refunds(refresh=False), freq="month"),
        )
    finally:
        gw.close()


# -- local time on the engines: offsets of zones with daylight saving ----------------------
def _buckets(times: list[str], freq: str, tz: str) -> dict[str, list[str]]:
    """The ``period`` of one failed payment per time, on pandas and on DuckDB."""
    payments = build_payments([{"status": "failed", "amount": 1, "created_at": t} for t in times])
    out = {}
    for name, table in (("pandas", payments), ("duckdb", connection().from_df(payments))):
        counts = a.outcome_counts(table, freq=freq, tz=tz)
        out[name] = [str(p) for p, n in zip(counts["period"], counts["attempts"], strict=True) if n]
    return out


def test_days_across_a_daylight_saving_change() -> None:
    # Chile moved from UTC-3 to UTC-4 at 2024-04-07 03:00 UTC. 02:59 UTC is 23:59 on 6 April
    # (UTC-3); 03:30 UTC is 23:30 on 6 April (UTC-4); 04:00 UTC is midnight on 7 April.
    got = _buckets(
        ["2024-04-07T02:59:00Z", "2024-04-07T03:30:00Z", "2024-04-07T04:00:00Z"],
        "day",
        "America/Santiago",
    )
    assert (
        got["duckdb"] == got["pandas"] == ["2024-04-06 00:00:00-03:00", "2024-04-07 00:00:00-04:00"]
    )


def test_weeks_and_half_hour_offsets() -> None:
    # Lord Howe Island shifts by 30 minutes (UTC+11 to +10:30 at 2024-04-06 15:00 UTC).
    # 2024-04-07 13:29 UTC is Sunday 23:59 (+10:30): week of Monday 1 April;
    # 13:30 UTC is Monday 8 April 00:00: the next week.
    got = _buckets(["2024-04-07T13:29:00Z", "2024-04-07T13:30:00Z"], "week", "Australia/Lord_Howe")
    assert (
        got["duckdb"] == got["pandas"] == ["2024-04-01 00:00:00+11:00", "2024-04-08 00:00:00+10:30"]
    )
    # Months: 31 Jan 23:00 local in London (UTC+0) and 1 Apr 00:30 BST (31 Mar 23:30 UTC).
    got = _buckets(["2024-01-31T23:00:00Z", "2024-03-31T23:30:00Z"], "month", "Europe/London")
    assert (
        got["duckdb"] == got["pandas"] == ["2024-01-01 00:00:00+00:00", "2024-04-01 00:00:00+01:00"]
    )


def _scan_settings(env: dict[str, str]) -> Any:
    """Scan the sample cache in a fresh process (the connection is made once per process)."""
    import os
    import subprocess
    import sys

    code = (
        "import gwtools\n"
        "from gwtools.cache._scan import connection\n"
        "try:\n"
        "    gwtools.scan_cache('data/sample-cache', 'payments')\n"
        "except gwtools.ConfigurationError as exc:\n"
        "    print('refused:', exc)\n"
        "else:\n"
        "    print(connection().sql(\"select current_setting('memory_limit'), "
        "current_setting('temp_directory')\").fetchall()[0])\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[2],
    )


def test_lazy_tables_spill_past_a_bounded_memory(tmp_path: Path) -> None:
    """DuckDB's working memory is bounded (3 GB, or GW_DUCKDB_MEMORY_LIMIT) and it spills to
    the system's temporary folder, never to a .tmp in the analyst's working folder."""
    default = _scan_settings({"GW_DUCKDB_MEMORY_LIMIT": ""})
    assert default.returncode == 0, default.stderr
    assert "('2.7 GiB'," in default.stdout  # DuckDB counts 3 GB (10^9) in GiB
    assert "gwtools-duckdb" in default.stdout and "'.tmp'" not in default.stdout
    raised = _scan_settings({"GW_DUCKDB_MEMORY_LIMIT": "12GB"})
    assert "('11.1 GiB'," in raised.stdout, raised.stderr
    bad = _scan_settings({"GW_DUCKDB_MEMORY_LIMIT": "lots"})
    assert "refused: GW_DUCKDB_MEMORY_LIMIT='lots' is not a memory size" in bad.stdout
    assert "e.g. '3GB'" in bad.stdout


def test_a_spill_needs_no_folder_of_a_fixed_name(tmp_path: Path) -> None:
    """On a shared server (JupyterHub) the first user to spill owned /tmp/gwtools-duckdb, and
    every other user's spilling query failed on it. Each process spills into a folder of its
    own, which it removes when it ends."""
    import os
    import subprocess
    import sys

    (tmp_path / "gwtools-duckdb").write_text("another user's")  # root ignores modes: a file
    code = (
        "from gwtools.cache._scan import connection\n"
        "print(connection().sql('select count(*) from (select i % 3000000 as k, count(*) "
        "from range(6000000) t(i) group by k)').fetchall()[0][0])\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "TMPDIR": str(tmp_path), "GW_DUCKDB_MEMORY_LIMIT": "50MB"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr  # was: Failed to create directory …/gwtools-duckdb
    assert run.stdout.split() == ["3000000"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gwtools-duckdb"]  # its own is gone
    # A process that never spilled and ends without its exit handlers (a killed kernel) leaves
    # no folder either: each test run left one empty folder per notebook kernel.
    quick = (
        "import os\nfrom gwtools.cache._scan import connection\n"
        "connection().sql('select 1').fetchall()\nos._exit(0)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", quick], env=env, check=True, timeout=300)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gwtools-duckdb"]


@pytest.mark.parametrize("rows", ["all", "none"])
def test_lazy_results_come_through_arrow_with_duckdbs_own_dtypes(rows: str) -> None:
    """Results are collected through Arrow (DuckDB's ``.df()`` made a Python object per text
    value), with the dtypes ``.df()`` gives: nullable where a null is, decimals as floats."""
    from gwtools.analysis._engine import from_arrow

    rel = connection().sql(
        "SELECT i, sum(i) OVER () AS total, b, v, d, ts, dec, i32, u, f, n, ok "
        "FROM (VALUES (1::BIGINT, true, 'a', DATE '2024-01-01', "
        "TIMESTAMPTZ '2024-01-01 00:00:00+00', 1.5::DECIMAL(18,2), 1::INTEGER, 7::UBIGINT, "
        "0.5::DOUBLE, 5::BIGINT, true), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
        "6, false)) t(i, b, v, d, ts, dec, i32, u, f, n, ok)"
        + (" WHERE false" if rows == "none" else "")
    )
    expected = rel.df()
    if rows == "none":
        expected["v"] = expected["v"].astype("str")  # text, where .df() had no value to tell
    pd.testing.assert_frame_equal(from_arrow(rel.to_arrow_table()), expected)


def test_a_file_rewritten_in_place_is_read_anew(tmp_path: Path) -> None:
    """The connection keeps Parquet footers between queries; a file replaced under the same
    name (another tool rewriting the cache) must still be read as it is now."""
    month = tmp_path / "payments" / "created_month=2026-11"
    month.mkdir(parents=True)
    (tmp_path / "payments" / "_state.json").write_text('{"high_water": "2026-11-02T02:00:00Z"}')
    part = month / "part-00000000000000000001-a.parquet"
    first = build_payments([{"status": "failed", "amount": 5}])
    pq.write_table(to_arrow(first, "payments"), part)
    assert a.to_pandas(gwtools.scan_cache(tmp_path, "payments"))["status"].tolist() == ["failed"]
    # More rows, in more row groups: stale footers would read the old layout.
    now = build_payments([{"status": "succeeded", "amount": 100 + i} for i in range(50)])
    pq.write_table(to_arrow(now, "payments"), part, row_group_size=7)
    again = a.to_pandas(gwtools.scan_cache(tmp_path, "payments"))
    assert len(again) == 50 and set(again["status"]) == {"succeeded"}
    assert sorted(again["amount"].tolist()) == [100 + i for i in range(50)]


def test_a_partial_cache_warning_points_at_the_callers_line(tmp_path: Path) -> None:
    # Once one frame past it (scan_cache called from a notebook cell: the line of IPython
    # that runs cells), and Python shows a warning once per line: a second cell scanning the
    # partial cache, after a failed sync, was not warned.
    import inspect
    import warnings

    _two_files(tmp_path)
    (tmp_path / "payments" / "_state.json").unlink()
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(tmp_path), "bucket", destination_filesystem=memory)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno  # type: ignore[union-attr]
        gwtools.scan_cache(tmp_path, "payments")
        gwtools.read_cache("bucket", "payments", filesystem=memory)
        gwtools.read_cache(tmp_path, "payments")  # a local folder: its own reader warns
    partial = [w for w in caught if issubclass(w.category, gwtools.GatewayDataWarning)]
    assert [(w.filename, w.lineno) for w in partial] == [
        (__file__, line + 1),
        (__file__, line + 2),
        (__file__, line + 3),
    ]


def test_open_source_refuses_a_sync_it_would_not_do(tmp_path: Path) -> None:
    # A cache folder and a Gateway are read as they are: sync=True was once ignored without
    # a word, and the analyst took the cache's old numbers for current ones.
    with pytest.raises(gwtools.ConfigurationError, match=r"does not sync.*gwtools sync"):
        gwtools.open_source(SAMPLE, sync=True)
    gw = gwtools.connect("sk_" + "test_" + "a" * 24, "http://127.0.0.1:9", cache_dir=tmp_path)
    try:
        with pytest.raises(gwtools.ConfigurationError, match=r"does not sync.*gw\.sync\(\)"):
            gwtools.open_source(gw, sync=True)
    finally:
        gw.close()
    # Reading as it is, as asked: nothing to refuse.
    assert len(gwtools.open_source(SAMPLE, sync=False).payments) == 2000


def test_a_file_that_cannot_be_read_is_said_and_the_other_rows_are_scanned(
    tmp_path: Path,
) -> None:
    # As read_cache: a zero-byte or truncated part file (a full disk, a killed copy) leaves
    # its rows out, with a warning naming it, or a CacheError with strict=True. Once DuckDB's
    # InvalidInputException ("too small to be a Parquet file"), from scan_cache and from
    # every dashboard and notebook opened on the cache.
    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE.parents[1], cache)
    (damaged,) = cache.glob("sandbox/test/payments/created_month=2026-09/*.parquet")
    damaged.write_bytes(b"")
    with pytest.warns(gwtools.GatewayDataWarning, match=r"cannot be read.*rows are missing"):
        read = gwtools.read_cache(cache, "payments")
    with pytest.warns(gwtools.GatewayDataWarning) as caught:
        lazy = gwtools.scan_cache(cache, "payments")
    said = str(caught[0].message)
    assert f"{damaged} cannot be read" in said and "Run `gwtools sync`" in said
    assert "scan_cache(..., strict=True) raises instead" in said
    assert len(lazy) == len(read) < 2000
    assert set(a.to_pandas(lazy)["id"]) == set(read["id"])
    with pytest.raises(gwtools.CacheError, match="cannot be read"):
        gwtools.scan_cache(cache, "payments", strict=True)


def test_an_analysis_of_a_lazy_table_whose_file_a_sync_replaced_says_to_scan_again(
    tmp_path: Path,
) -> None:
    """A lazy table names its part files; a sync since then merged a month into a new file.
    Any analysis of the old table said DuckDB's "No files found that match the pattern";
    it now raises CacheError, saying the cache changed and to scan it again."""
    cache = tmp_path / "cache"
    shutil.copytree(Path(__file__).parents[2] / "data" / "sample-cache" / "sandbox", cache / "s")
    payments = gwtools.scan_cache(cache, "payments")
    old = sorted(cache.glob("s/test/payments/created_month=*/*.parquet"))[0]
    old.rename(old.with_name("part-09999999999999999999-merged.parquet"))  # a sync's merge
    with pytest.raises(gwtools.CacheError, match=r"changed since.*Scan the cache again"):
        a.decline_rate(payments)
    again = gwtools.scan_cache(cache, "payments")  # what the error says to do works
    assert int(a.decline_rate(again)["n"].sum()) > 0


@pytest.mark.parametrize("read", [gwtools.read_cache, gwtools.scan_cache])
def test_mode_is_taken_in_any_case_and_a_blank_account_or_unknown_mode_is_refused(
    read: Any,
) -> None:
    sample = Path(__file__).parents[2] / "data" / "sample-cache"
    assert len(read(sample, "payments", mode="TEST")) == len(read(sample, "payments"))
    for kw, param in (({"mode": "prod"}, "mode"), ({"account": ""}, "account")):
        with pytest.raises(gwtools.ConfigurationError, match="or leave it out") as info:
            read(sample, "payments", **kw)
        assert info.value.param == param  # not "no cached payments … check the directory"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"[1, 2]", "not a JSON object"),
        (b'"synced"', "not a JSON object"),
        (b'{"high_water": "last tuesday"}', "not an ISO 8601 time"),
        (b'{"high_water": "2099-01-01T00:00:00+00:00"}', "later than this machine's clock"),
        (b'{"high_wat', "not valid JSON"),
    ],
    ids=["list", "text", "words", "future", "unparsable"],
)
def test_a_damaged_state_on_shared_storage_is_checked_as_a_local_one(
    tmp_path: Path, content: bytes, says: str
) -> None:
    # A state that is not an object crashed every read of a shared cache (AttributeError:
    # 'list' object has no attribute 'get'), and a high-water mark that cannot be right made
    # it complete without a word, where the same folder read locally warns and is partial.
    _two_files(tmp_path)
    (tmp_path / "payments" / "_state.json").write_bytes(content)
    memory = pafs._MockFileSystem()
    pafs.copy_files(str(tmp_path), "bucket", destination_filesystem=memory)
    for read in (gwtools.read_cache, gwtools.scan_cache):
        with pytest.warns(gwtools.GatewayDataWarning) as caught:
            table = read("bucket", "payments", filesystem=memory)
        said = [str(w.message) for w in caught]
        assert any(says in s and "_state.json" in s for s in said), said
        assert any("partial" in s for s in said), said
        assert len(table) == 2
        with (
            pytest.warns(gwtools.GatewayDataWarning, match=says),
            pytest.raises(gwtools.CacheError, match="partial"),
        ):
            read("bucket", "payments", filesystem=memory, strict=True)
    fsspec = pytest.importorskip("fsspec")
    shared = fsspec.filesystem("memory")
    shared.put(str(tmp_path / "payments"), f"/{tmp_path.name}/payments", recursive=True)
    with pytest.warns(gwtools.GatewayDataWarning, match=says):
        local = gwtools.cache_state(tmp_path, "payments")
    with pytest.warns(gwtools.GatewayDataWarning, match=says):
        assert gwtools.cache_state(f"memory://{tmp_path.name}", "payments") == local


def test_a_file_url_of_a_folder_with_spaces_or_accents_reads_that_folder(tmp_path: Path) -> None:
    # A file URL escapes such characters (Path.as_uri() gives file:///…/my%20cache%20%E2%98%95):
    # the escapes were taken for the folder's name, so "no cache at …/my%20cache…".
    cache = tmp_path / "my cache ☕"
    shutil.copytree(SAMPLE, cache)
    url = cache.as_uri()
    assert "%20" in url
    expected = gwtools.read_cache(cache, "payments")
    pd.testing.assert_frame_equal(gwtools.read_cache(url, "payments"), expected, check_like=True)
    assert len(gwtools.scan_cache(url, "payments")) == len(expected)
    assert gwtools.cache_state(url, "payments") == gwtools.cache_state(cache, "payments")
    assert len(gwtools.open_source(url).payments) == len(expected)
    from click.testing import CliRunner

    from gwtools.cli import main

    out = tmp_path / "out.csv"
    result = CliRunner().invoke(
        main,
        ["export", "payments", "--format", "csv", "--out", str(out), "--source", url],
        env={"GW_API_KEY": "", "GW_BASE_URL": "", "GW_SANDBOX_VARIANT": "none"},
    )
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(out)) == len(expected)


@pytest.mark.spark
def test_spark_reads_a_file_url_of_a_folder_with_spaces(tmp_path: Path, spark: Any) -> None:
    # Refused as "no cached payments at …/my%20cache…" before Spark was asked; and Spark's
    # own reader would have looked for a folder named with the escapes.
    cache = tmp_path / "my cache ☕"
    shutil.copytree(SAMPLE, cache)  # the mode's folder, holding payments/ and refunds/
    source = gwtools.open_source("spark", spark_path=cache.as_uri())
    assert source.payments.count() == len(gwtools.read_cache(cache, "payments"))


def test_a_scan_that_races_a_syncs_merge_lists_the_files_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sync renamed a month's merged file over its old one (or removed a month) between the
    # scan's listing and DuckDB's reading of the footers: scan_cache (and every dashboard,
    # notebook and report opened on the cache) raised DuckDB's "IO Error: No files found that
    # match the pattern", where read_cache lists again and reads a complete set.
    from gwtools.cache import _scan

    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE.parents[1], cache)
    listed = _scan.dataset_files
    merged: list[Path] = []

    def listing_then_a_merge(fs: pafs.FileSystem, folder: str) -> list[str]:
        files = listed(fs, folder)
        if not merged:  # the first listing only: a merge lands just after it
            old = Path(files[0])
            merged.append(old.rename(old.with_name("part-09999999999999999999-merged.parquet")))
        return files

    monkeypatch.setattr(_scan, "dataset_files", listing_then_a_merge)
    lazy = gwtools.scan_cache(cache, "payments")
    assert merged and len(lazy) == 2000
    assert set(a.to_pandas(lazy)["id"]) == set(gwtools.read_cache(cache, "payments")["id"])


def test_a_source_shown_in_a_notebook_is_one_line_and_reads_no_row() -> None:
    # `src` in a cell printed both DuckDB tables' previews (a query each: rows of payments)
    # and every dataset's whole state, about 60 lines.
    source = gwtools.open_source(SAMPLE)
    shown = repr(source)
    assert shown == (
        "Source(payments=<duckdb table, 28 columns>, refunds=<duckdb table, 12 columns>, "
        "description='a local cache', engine='duckdb', sandbox_data=True, "
        "states=['payments', 'refunds'])"
    )
