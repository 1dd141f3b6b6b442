"""``gwtools export``'s output file: an existing file keeps its permission bits, a symlink
stays a link (its target is written), and an export no row matches is a valid file that says
so on standard error."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result

import gwtools
from gwtools.cli import main
from tests.library._shop import Shop
from tests.library.test_cli import NO_KEY, SAMPLE


def _export(
    out: Path | str,
    *args: str,
    fmt: str = "csv",
    resource: str = "refunds",
    source: Path = SAMPLE,
) -> Result:
    return CliRunner().invoke(
        main,
        ["export", resource, "--format", fmt, "--out", str(out), "--source", str(source), *args],
        env=NO_KEY,
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_existing_file_keeps_its_permission_bits(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"refunds.{fmt}"
    out.write_text("old\n")
    out.chmod(0o640)
    result = _export(out, fmt=fmt)
    assert result.exit_code == 0, result.output
    assert _mode(out) == 0o640
    read = pd.read_csv if fmt == "csv" else pd.read_parquet
    assert len(read(out)) == len(gwtools.read_cache(SAMPLE, "refunds"))  # the new export
    # another mode, to tell "kept" from a fixed 0640
    out.chmod(0o600)
    assert _export(out, fmt=fmt).exit_code == 0 and _mode(out) == 0o600
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_new_file_gets_the_umask_mode(tmp_path: Path) -> None:
    umask = os.umask(0o027)
    try:
        out = tmp_path / "new.csv"
        result = _export(out)
    finally:
        os.umask(umask)
    assert result.exit_code == 0, result.output
    assert _mode(out) == 0o640


def test_a_symlink_stays_a_link_and_its_target_is_written(tmp_path: Path) -> None:
    elsewhere = tmp_path / "data"
    elsewhere.mkdir()
    target = elsewhere / "refunds.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    link = tmp_path / "latest.csv"
    link.symlink_to(target)
    result = _export(link)
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert len(pd.read_csv(target)) == len(gwtools.read_cache(SAMPLE, "refunds"))
    assert _mode(target) == 0o640
    # the temporary file went beside the target, and nothing is left of it anywhere
    assert not list(tmp_path.glob(".*.tmp")) and not list(elsewhere.glob(".*.tmp"))

    # a relative link, and a chain of links, are followed to the end
    (tmp_path / "rel.csv").symlink_to(Path("data") / "refunds.csv")
    (tmp_path / "chain.csv").symlink_to(tmp_path / "rel.csv")
    target.write_text("old\n")
    assert _export(tmp_path / "chain.csv", "--status", "pending").exit_code == 0
    assert (tmp_path / "chain.csv").is_symlink() and (tmp_path / "rel.csv").is_symlink()
    assert set(pd.read_csv(target)["status"]) == {"pending"}


def test_a_dangling_symlink_creates_its_target_or_says_why_not(tmp_path: Path) -> None:
    link = tmp_path / "out.csv"
    link.symlink_to(tmp_path / "made.csv")
    assert _export(link).exit_code == 0
    assert link.is_symlink() and (tmp_path / "made.csv").is_file()

    broken = tmp_path / "broken.csv"
    broken.symlink_to(tmp_path / "no" / "such" / "x.csv")
    result = _export(broken)
    assert result.exit_code == 2, result.output
    assert f"it links to {tmp_path / 'no' / 'such' / 'x.csv'}" in result.output
    assert "does not exist" in result.output and "Traceback" not in result.output
    assert broken.is_symlink() and not (tmp_path / "no").exists()


def test_the_library_writes_through_a_link_too(tmp_path: Path) -> None:
    """write_table, which the notebooks and dashboards use as well, is where it is done."""
    target = tmp_path / "t.parquet"
    target.write_bytes(b"")
    target.chmod(0o604)
    link = tmp_path / "l.parquet"
    link.symlink_to(target)
    frame = gwtools.read_cache(SAMPLE, "refunds")
    assert gwtools.write_table(frame, link, "parquet") == len(frame)
    assert link.is_symlink() and _mode(target) == 0o604
    pd.testing.assert_frame_equal(pd.read_parquet(target), frame)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_an_export_no_row_matches_is_a_valid_file_and_says_so(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / f"payments.{fmt}"
    result = _export(out, "--since", "2030-01-01", "--status", "FAILED", fmt=fmt,
                     resource="payments")  # fmt: skip
    assert result.exit_code == 0, result.output
    canonical = gwtools.read_cache(SAMPLE, "payments").iloc[:0]
    if fmt == "csv":
        assert out.read_text().strip() == ",".join(canonical.columns)
    else:
        pd.testing.assert_frame_equal(pd.read_parquet(out), canonical, check_index_type=False)
    said = result.stderr
    assert "wrote 0 payments to" in said
    assert (
        "0 payments matched --since 2030-01-01 (created at or after 2030-01-01 00:00:00 UTC)"
        in (said)
    )
    assert "--status failed" in said  # as the library reads it
    assert f"in {SAMPLE}; it holds 2,000 payments created 2026-08-22 " in said
    assert f"{out} holds the column names only" in said
    assert result.stdout == ""


def test_an_export_with_rows_says_nothing_more(tmp_path: Path) -> None:
    result = _export(tmp_path / "r.csv", "--until", "2026-10-01")
    assert result.exit_code == 0, result.output
    assert "matched" not in result.stderr and "column names only" not in result.stderr


def test_no_rows_to_standard_output_keeps_the_data_clean(tmp_path: Path) -> None:
    result = _export("-", "--until", "2001-01-01T08:00:00+08:00")
    assert result.exit_code == 0, result.output
    header = ",".join(gwtools.read_cache(SAMPLE, "refunds").columns)
    assert result.stdout == header + "\n"  # the notice is not in the data
    assert "0 refunds matched --until 2001-01-01T08:00:00+08:00 (created before 2001-01-01 " in (
        result.stderr
    )
    assert "00:00:00 UTC)" in result.stderr and "standard output holds" in result.stderr


def test_no_rows_after_a_sync_names_the_synced_cache(shop: Shop, tmp_path: Path) -> None:
    shop.card()
    env = {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url,
           "GW_CACHE_DIR": str(tmp_path / "cache")}  # fmt: skip
    out = tmp_path / "none.csv"
    result = CliRunner().invoke(
        main,
        ["export", "payments", "--format", "csv", "--out", str(out), "--account", "shop",
         "--status", "canceled"],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "0 payments matched --status canceled in " in result.stderr
    assert str(tmp_path / "cache" / "shop" / "test") in result.stderr
    assert "it holds 1 payment created " in result.stderr
    assert shop.key not in result.output
    assert len(pd.read_csv(out)) == 0


def test_standard_output_is_the_files_utf8_bytes_whatever_the_locale(tmp_path: Path) -> None:
    # `--out -` in a terminal or job whose locale is not UTF-8 (a Windows console, a latin-1
    # locale) died half-way with "'latin-1' codec can't encode character" after writing part
    # of the rows; the file export is UTF-8, and standard output must be the same bytes.
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    part = sorted((cache / "sandbox" / "test" / "refunds").glob("*/*.parquet"))[0]
    table = pq.read_table(part)
    i = table.schema.get_field_index("metadata")
    values = table.column(i).to_pylist()
    values[0] = '{"note":"Café ☕ 支付, \\"ok\\""}'
    column = pa.array(values, type=table.schema.field(i).type)
    pq.write_table(table.set_column(i, table.schema.field(i), column), part)
    args = ["export", "refunds", "--format", "csv", "--source", str(cache)]

    out = tmp_path / "r.csv"
    result = CliRunner().invoke(main, [*args, "--out", str(out)], env=NO_KEY)
    assert result.exit_code == 0, result.output
    result = CliRunner(charset="latin-1").invoke(main, [*args, "--out", "-"], env=NO_KEY)
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == out.read_bytes()
    assert "☕" in out.read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("link", [False, True], ids=["fifo", "link-to-fifo"])
def test_a_pipe_or_device_is_written_into_not_replaced(
    fmt: str, link: bool, tmp_path: Path
) -> None:
    # `--out /dev/null` (as root) replaced the device with a regular file holding the export,
    # since the file is written beside the target and renamed over it; `--out /dev/stdout`
    # into a pipe was refused ("…/fd/pipe:[…]: No such file or directory"). A FIFO stands in
    # for both: it must stay a FIFO, and its reader get the export.
    whole = tmp_path / f"whole.{fmt}"
    assert _export(whole, fmt=fmt).exit_code == 0
    assert whole.stat().st_size < 60_000  # fits a pipe's buffer: no reader thread needed
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = fifo
    if link:
        out = tmp_path / f"stdout.{fmt}"
        out.symlink_to(fifo)
    # A reader that is there (so the export's open does not wait) and never blocks.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = _export(out, fmt=fmt)
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:  # a writer still holds it open
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert link == out.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert b"".join(chunks) == whole.read_bytes()


def _cache_copy(tmp_path: Path) -> Path:
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(SAMPLE, cache)
    return cache


def _month_file(cache: Path) -> Path:
    return next((cache / "sandbox/test/refunds/created_month=2026-10").glob("*.parquet"))


def test_an_export_into_the_caches_own_dataset_is_refused(tmp_path: Path) -> None:
    cache = _cache_copy(tmp_path)
    month = _month_file(cache)
    before = month.read_bytes()
    dataset = cache / "sandbox/test/refunds"
    link = tmp_path / "link"
    link.symlink_to(dataset)
    for out in (
        month,  # a month's file overwritten with the whole table
        month.parent / "x.parquet",  # a foreign file that engines read as part of the month
        dataset / "x.parquet",
        link / "x.parquet",  # the same, reached through a link
        cache / "sandbox/test/_staging/refunds/x.parquet",
    ):
        out.parent.mkdir(parents=True, exist_ok=True)
        result = _export(out, fmt="parquet", resource="refunds")
        assert result.exit_code == 1, (out, result.output)
        assert "inside the cache" in result.output and "outside" in result.output, result.output
        with pytest.raises(gwtools.ConfigurationError, match="inside the cache"):
            gwtools.write_table(gwtools.read_cache(SAMPLE, "refunds"), out, "parquet")
    assert month.read_bytes() == before
    assert sorted(p.name for p in month.parent.iterdir()) == [month.name]
    assert not list(dataset.glob("*.parquet"))
    # beside the datasets, in the cache's folder, is no part of any dataset
    assert _export(cache / "refunds.parquet", fmt="parquet").exit_code == 0


@pytest.mark.parametrize("name", ["refunds.csv.gz", "refunds.csv.zip", "refunds.parquet.bz2"])
def test_a_compressed_file_name_is_refused_not_written_plain(name: str, tmp_path: Path) -> None:
    # --out refunds.csv.gz was written as plain CSV: pandas, zcat and spreadsheets then
    # failed on it ("Not a gzipped file"), as to_csv would have compressed it.
    out = tmp_path / name
    fmt = "parquet" if ".parquet" in name else "csv"
    result = _export(out, fmt=fmt)
    assert result.exit_code == 1, result.output
    assert "compressed" in result.output and out.suffix in result.output, result.output
    with pytest.raises(gwtools.ConfigurationError, match="compressed"):
        gwtools.write_table(gwtools.read_cache(SAMPLE, "refunds"), out, fmt)
    assert list(tmp_path.iterdir()) == []


def test_a_warning_is_said_once_per_command(tmp_path: Path) -> None:
    # A damaged _state.json was read by the scan, by the partial-data check and by the
    # folder lookup: export said the same "is not valid JSON" warning two or three times.
    cache = _cache_copy(tmp_path)
    (cache / "sandbox/test/refunds/_state.json").write_text("garbage{")
    for args in (["--source", str(cache)], ["--no-refresh", "--cache-dir", str(cache)]):
        result = CliRunner().invoke(
            main,
            ["export", "refunds", "--format", "csv", "--out", str(tmp_path / "r.csv"), *args],
            env=NO_KEY,
        )
        assert result.exit_code == 3, result.output
        assert result.stderr.count("is not valid JSON") == 1, result.stderr


def test_the_other_resources_dataset_as_source_is_named(tmp_path: Path) -> None:
    # --source …/refunds for `export payments` said "no cached payments under …/refunds: run
    # a sync first", though a sync had run: the folder was the refunds' dataset.
    refunds = SAMPLE / "sandbox" / "test" / "refunds"
    result = CliRunner().invoke(
        main,
        ["export", "payments", "--format", "csv", "--out", str(tmp_path / "p.csv"),
         "--source", str(refunds)],
        env=NO_KEY,
    )  # fmt: skip
    said = result.output
    assert result.exit_code == 1, said
    assert f"{refunds} holds the cached refunds, not payments" in said, said
    assert f"use {refunds.parent}" in said and "run a sync first" not in said, said
    with pytest.raises(gwtools.CacheNotFoundError, match="holds the cached refunds"):
        gwtools.read_cache(refunds, "payments")
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("inner", ["sandbox/test", "sandbox/test/refunds"])
def test_an_account_the_source_folder_is_not_is_refused(inner: str, tmp_path: Path) -> None:
    # --source at a mode's or dataset's folder with --account naming another account
    # exported that folder's rows anyway (and exit 3, from reading state under source/account).
    source = SAMPLE / inner
    result = CliRunner().invoke(
        main,
        ["export", "refunds", "--format", "csv", "--out", str(tmp_path / "r.csv"),
         "--source", str(source), "--account", "shop-b"],
        env=NO_KEY,
    )  # fmt: skip
    said = result.output
    assert result.exit_code == 1, said
    assert "account 'sandbox'" in said and "'shop-b'" in said, said
    assert not (tmp_path / "r.csv").exists()
    with pytest.raises(gwtools.CacheNotFoundError, match="account 'sandbox'"):
        gwtools.read_cache(source, "refunds", account="shop-b")
    with pytest.raises(gwtools.CacheNotFoundError, match="test mode"):
        gwtools.read_cache(source, "refunds", mode="live")
    assert len(gwtools.read_cache(source, "refunds", account="sandbox", mode="test")) == 115


def test_an_out_ending_in_a_slash_is_a_folder_not_a_file_name(tmp_path: Path) -> None:
    # --out exports/ (no such folder yet) wrote a file named "exports": the slash, which
    # says folder, was dropped by Path().
    out = f"{tmp_path / 'exports'}/"
    result = _export(out)
    assert result.exit_code in (1, 2), result.output
    assert "folder" in result.output and "exports/table.csv" in result.output, result.output
    with pytest.raises(gwtools.ConfigurationError, match="ends with /"):
        gwtools.write_table(gwtools.read_cache(SAMPLE, "refunds"), out, "csv")
    assert list(tmp_path.iterdir()) == []


def test_a_bad_out_is_refused_before_the_sync_runs(shop: Shop, tmp_path: Path) -> None:
    # `export --refresh` synced the whole history first and only then refused an --out that
    # write_table would never take (compressed name, trailing /, inside a cache's dataset).
    shop.card()
    other = _cache_copy(tmp_path)  # a cache whose dataset the --out points into
    cache = tmp_path / "synced"
    env = {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url, "GW_CACHE_DIR": str(cache)}
    for out, said in (
        (tmp_path / "p.csv.gz", "compressed"),
        (f"{tmp_path / 'exports'}/", "ends with /"),
        (other / "sandbox/test/payments/x.csv", "inside the cache"),
    ):
        result = CliRunner().invoke(
            main, ["export", "payments", "--format", "csv", "--out", str(out)], env=env
        )
        assert result.exit_code == 1, (out, result.output)
        assert said in result.stderr, result.stderr
        assert not cache.exists(), f"{out}: synced before refusing it"
    assert not (tmp_path / "exports").exists() and not (tmp_path / "p.csv.gz").exists()
    assert not list((other / "sandbox/test/payments").glob("x.csv*"))


BOM = b"\xef\xbb\xbf"


def test_encoding_utf_8_sig_adds_the_byte_order_mark_excel_needs(tmp_path: Path) -> None:
    # Excel on Windows opens a CSV without a byte-order mark in the ANSI code page: the
    # bank name "Bank Simpanan Nasional — BSN" or a description "Café" showed as mojibake.
    # --encoding utf-8-sig is the opt-in; the default bytes stay exactly as they were.
    plain, sig = tmp_path / "plain.csv", tmp_path / "sig.csv"
    assert _export(plain).exit_code == 0
    result = _export(sig, "--encoding", "utf-8-sig")
    assert result.exit_code == 0, result.output
    assert not plain.read_bytes().startswith(BOM)
    assert sig.read_bytes() == BOM + plain.read_bytes()
    assert pd.read_csv(sig, encoding="utf-8-sig").columns[0] == "id"
    # to standard output too, and through the library
    out = CliRunner().invoke(
        main,
        ["export", "refunds", "--format", "csv", "--out", "-", "--encoding", "utf-8-sig",
         "--source", str(SAMPLE)],
        env=NO_KEY,
    )  # fmt: skip
    assert out.exit_code == 0 and out.stdout_bytes == BOM + plain.read_bytes()
    frame = pd.DataFrame({"description": ["Café — 50%"]})
    gwtools.write_table(frame, tmp_path / "lib.csv", "csv", encoding="utf-8-sig")
    assert (tmp_path / "lib.csv").read_bytes() == BOM + "description\nCafé — 50%\n".encode()
    # Parquet has no text encoding to choose: refused, not ignored
    refused = _export(tmp_path / "r.parquet", "--encoding", "utf-8-sig", fmt="parquet")
    assert refused.exit_code == 2 and "--encoding" in refused.output, refused.output
    with pytest.raises(gwtools.ConfigurationError, match="encoding"):
        gwtools.write_table(frame, tmp_path / "lib.parquet", "parquet", encoding="utf-8-sig")
    with pytest.raises(gwtools.ConfigurationError, match="utf-8-sig"):
        gwtools.write_table(frame, tmp_path / "x.csv", "csv", encoding="latin-1")
    assert not (tmp_path / "r.parquet").exists() and not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("inner", ["", "sandbox", "sandbox/test", "sandbox/test/refunds"])
def test_the_account_a_source_folder_is_exports_a_complete_cache_as_complete(
    inner: str, tmp_path: Path
) -> None:
    # --source at an account's, mode's or dataset's folder with --account naming that same
    # account exported every row, then read the sync state under {source}/{account}, found
    # none and exited 3: "no sync of the cached refunds has completed", for a complete cache.
    source = SAMPLE / inner if inner else SAMPLE
    out = tmp_path / "r.csv"
    result = _export(out, "--account", "sandbox", source=source)
    assert result.exit_code == 0, result.output
    assert "rows may be missing" not in result.stderr, result.stderr
    assert len(pd.read_csv(out)) == len(gwtools.read_cache(SAMPLE, "refunds")) == 115
    # a cache known partial is still said to be, whichever of its folders is given
    partial = _cache_copy(tmp_path)
    state_file = partial / "sandbox/test/refunds/_state.json"
    state = json.loads(state_file.read_text())
    state["completeness"]["complete"] = False
    state_file.write_text(json.dumps(state))
    said = _export(out, "--account", "sandbox", source=partial / inner if inner else partial)
    assert said.exit_code == 3 and "rows may be missing" in said.stderr, said.output


@pytest.mark.parametrize(
    ("name", "fmt", "named"),
    [
        ("payments.xlsx", "csv", "an Excel workbook"),
        ("payments.xls", "csv", "an Excel workbook"),
        ("payments.json", "csv", "JSON"),
        ("payments.tsv", "csv", "tab-separated"),
        ("payments.pq", "csv", "Parquet"),
        ("payments.xlsx", "parquet", "an Excel workbook"),
        ("payments.csv", "parquet", "CSV"),
        ("payments.parquet", "csv", "Parquet"),
    ],
)
def test_a_name_that_says_another_format_is_refused(
    name: str, fmt: str, named: str, tmp_path: Path
) -> None:
    # `--format csv --out payments.xlsx` wrote CSV text under an Excel name: Excel then
    # refused it ("the file format or file extension is not valid"); only .csv and
    # .parquet swapped were caught.
    out = tmp_path / name
    result = _export(out, fmt=fmt)
    assert result.exit_code == 2, result.output
    assert f"named as {named}" in result.output and f"--format is {fmt}" in result.output
    assert not out.exists()


@pytest.mark.parametrize(("name", "fmt"), [("p.txt", "csv"), ("p", "csv"), ("p.pq", "parquet")])
def test_a_name_that_fits_the_format_is_written(name: str, fmt: str, tmp_path: Path) -> None:
    assert _export(tmp_path / name, fmt=fmt).exit_code == 0
