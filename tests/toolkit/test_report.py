"""Reports: tables in and out, and a notebook run headless against a real sandbox."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pandas as pd
import pytest

import gwtools
from gwtools import ConfigurationError, report
from gwtools.analysis import to_pandas
from gwtools.cache._dataset import Dataset
from gwtools.report._tables import _select

if TYPE_CHECKING:
    from gwtools import Gateway
    from gwtools.sandbox import Sandbox

Build = Callable[[list[dict[str, Any]]], pd.DataFrame]


def _cache(tmp_path: Path, payments: pd.DataFrame, refunds: pd.DataFrame) -> Path:
    root = tmp_path / "cache" / "acct" / "test"
    Dataset(root / "payments", "payments").write_batch(payments)
    Dataset(root / "refunds", "refunds").write_batch(refunds)
    return root


def test_save_tables_writes_csv_and_parquet(tmp_path: Path) -> None:
    frame = pd.DataFrame({"code": ["a", "b"], "count": [2, 1]})
    names = report.save_tables({"codes": frame}, tmp_path / "t")
    assert names == ["codes.csv", "codes.parquet"]  # names only: outputs never show a path
    assert pd.read_csv(tmp_path / "t" / "codes.csv")["count"].tolist() == [2, 1]
    assert pd.read_parquet(tmp_path / "t" / "codes.parquet").equals(frame)
    assert report.save_tables({"codes": frame}, None) == []


def test_load_tables_from_a_cache_filters_local_days_and_currency(
    tmp_path: Path, make_payments: Build, make_refunds: Build
) -> None:
    payments = make_payments(
        [
            {
                "status": "succeeded",
                "amount": 100,
                "created_at": "2026-11-01T15:00:00Z",
            },  # 1 Nov MYT
            {
                "status": "succeeded",
                "amount": 100,
                "created_at": "2026-11-01T17:00:00Z",
            },  # 2 Nov MYT
            {
                "status": "succeeded",
                "amount": 100,
                "currency": "JPY",
                "created_at": "2026-11-02T02:00:00Z",
            },
        ]
    )
    refunds = make_refunds(
        [
            {
                "payment_id": "pay_1",
                "amount": 50,
                "created_at": "2026-11-02T03:00:00Z",
            },  # made on 2 Nov
            {
                "payment_id": "pay_2",
                "amount": 50,
                "created_at": "2026-11-20T03:00:00Z",
            },  # of a 2 Nov payment
            {"payment_id": "pay_0", "amount": 50, "created_at": "2026-11-20T03:00:00Z"},  # neither
        ]
    )
    cache = _cache(tmp_path, payments, refunds)
    # Never synced: each table read says its rows may be partial (the data line below too).
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync of them has completed"):
        t = report.load_tables(
            cache=cache,
            since="2026-11-02",
            until="2026-11-02",
            tz="Asia/Kuala_Lumpur",
            as_of="2026-11-21",
        )
    assert not isinstance(t.payments, pd.DataFrame)  # lazy: nothing loaded
    assert sorted(to_pandas(t.payments)["id"]) == ["pay_2", "pay_3"]
    # the period's payments' refunds, whenever made (cohort view); the refunds made in the
    # period, whichever payment's (refund-date view): two populations, never mixed
    assert sorted(to_pandas(t.refunds)["id"]) == ["rfnd_2"]
    assert sorted(to_pandas(t.refunds_made)["id"]) == ["rfnd_1"]
    # pandas tables are chosen the same way
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync of them has completed"):
        chosen = _select(
            gwtools.read_cache(cache, "payments"),
            gwtools.read_cache(cache, "refunds"),
            "2026-11-02", "2026-11-02", "Asia/Kuala_Lumpur", None,
        )  # fmt: skip
    assert [sorted(frame["id"]) for frame in chosen] == [["pay_2", "pay_3"], ["rfnd_2"], ["rfnd_1"]]
    assert t.as_of == pd.Timestamp("2026-11-21", tz="UTC")
    assert repr(t).splitlines() == [
        "2 payments and 1 refunds from a local cache, 2026-11-02 to 2026-11-02 (Asia/Kuala_Lumpur)",
        # the rows' own span, in local days; the hand-made cache was never synced
        "payments created 2026-11-02 to 2026-11-02; no sync of the payments and refunds has "
        "completed: rows may be missing; run gwtools sync",
    ]
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync of them has completed"):
        myr = report.load_tables(cache=cache, currency="myr", tz="UTC")
    mine = to_pandas(myr.payments)
    assert set(mine["currency"]) == {"MYR"} and len(mine) == 2
    assert sorted(to_pandas(myr.refunds)["id"]) == ["rfnd_1", "rfnd_2", "rfnd_3"]
    assert myr.refunds_made is myr.refunds  # no days chosen: one population
    # named as the data names it, whatever case it was typed in
    assert myr.currency == "MYR" and repr(myr).splitlines()[0].endswith(", MYR only")
    with pytest.raises(ValueError, match="unknown time zone"):
        report.load_tables(cache=cache, tz="Nowhere/Land")


def test_load_tables_says_sandbox_data_on_its_first_line_only_when_it_is(
    tmp_path: Path, make_payments: Build, make_refunds: Build
) -> None:
    from gwtools import plots

    payments = make_payments([{"status": "succeeded", "amount": 100}])
    refunds = make_refunds([{"payment_id": "pay_1", "amount": 100}])
    cache = _synced_cache(tmp_path, payments, refunds)
    real = report.load_tables(cache=cache, tz="UTC")
    assert not real.sandbox_data and not plots.is_sandbox_data(real)
    assert "sandbox" not in repr(real)
    assert repr(real).startswith("1 payments and 1 refunds from a local cache")
    # A report passes sandbox_data=True for the embedded sandbox's cache it synced.
    marked = report.load_tables(cache=cache, tz="UTC", sandbox_data=True)
    assert marked.sandbox_data and plots.is_sandbox_data(marked)
    first, *rest = repr(marked).splitlines()
    assert first == "sandbox data: not real payments" and rest == repr(real).splitlines()


def test_load_tables_says_what_the_rows_span_and_how_the_last_sync_went(
    tmp_path: Path, make_payments: Build, make_refunds: Build
) -> None:
    """Its second line: the payments' first and last local days, and when the cache was
    last synced (UTC) and whether every page was read, or which table was not."""
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 100, "created_at": "2026-11-01T17:00:00Z"},
            {"status": "failed", "amount": 100, "created_at": "2026-11-19T03:00:00Z"},
        ]
    )
    cache = _cache(tmp_path, payments, make_refunds([{"payment_id": "pay_1", "amount": 50}]))

    def synced(refunds_at: str, refunds_complete: bool) -> str:
        for resource, at, complete in (
            ("payments", "2026-11-21T08:30:00+00:00", True),
            ("refunds", refunds_at, refunds_complete),
        ):
            Dataset(cache / resource, resource).write_state(
                {"high_water": at, "last_full_sync": at, "last_sync": at,
                 "completeness": {"complete": complete}}
            )  # fmt: skip
        return repr(report.load_tables(cache=cache, tz="Asia/Kuala_Lumpur")).splitlines()[1]

    # 17:00 UTC on 1 Nov is 2 Nov in Kuala Lumpur
    assert synced("2026-11-21T08:29:00+00:00", True) == (
        "payments created 2026-11-02 to 2026-11-19; last sync 2026-11-21 08:30 UTC, complete"
    )
    assert synced("2026-11-21T09:05:00+00:00", False) == (
        "payments created 2026-11-02 to 2026-11-19; last sync 2026-11-21 09:05 UTC INCOMPLETE "
        "for the refunds: rows may be missing; run gwtools sync again to finish it"
    )
    # Tables from no cache say nothing of a sync.
    bare = report.Tables(
        payments, make_refunds([]), "x", "UTC", pd.Timestamp("2026-11-21", tz="UTC")
    )
    assert repr(bare).splitlines()[1] == "payments created 2026-11-01 to 2026-11-19"


def test_sync_summary_reads_hand_edited_times_without_failing() -> None:
    """The newest time wins, in UTC; a naive one is UTC; an unreadable one is left out."""
    done = {"completeness": {"complete": True}}
    assert report.sync_summary(
        {"payments": {**done, "last_sync": "garbage"},
         "refunds": {**done, "last_sync": "2026-11-01T10:00:00"}}
    ) == "last sync 2026-11-01 10:00 UTC, complete"  # fmt: skip
    assert report.sync_summary(
        {"payments": {"completeness": {"complete": False}, "last_sync": "2026-11-01T10:00:00+08:00"},
         "refunds": {**done, "last_sync": "2026-10-31T09:00:00Z"}}
    ) == (
        "last sync 2026-11-01 02:00 UTC INCOMPLETE for the payments: rows may be missing; "
        "run gwtools sync again to finish it"
    )  # fmt: skip
    assert report.sync_summary({}) == ""


def test_describe_source_hides_port_path_and_key() -> None:
    assert report.describe_source("https://api.example.com:8443/v1", embedded=False) == (
        "https://api.example.com"
    )
    assert "127.0.0.1" not in report.describe_source("http://127.0.0.1:5555/v1", embedded=True)


def test_notebooks_are_shipped_with_the_package() -> None:
    names = sorted(p.name for p in report.notebooks_dir().glob("*.ipynb"))
    assert names == sorted(report.NOTEBOOKS)


CARDS = {
    "4242424242424242": 3,  # succeed
    "4000000000009995": 2,  # insufficient_funds
    "4000000000009987": 1,  # lost_card
}


@pytest.fixture
def gateway_with_payments(sandbox_b: Sandbox, tmp_path: Path) -> Iterator[tuple[Gateway, str]]:
    from gwtools._gateway import connect

    account = httpx.post(f"{sandbox_b.base_url}/_sandbox/accounts", timeout=10).json()
    with httpx.Client(
        base_url=sandbox_b.base_url,
        headers={"Authorization": f"Bearer {account['secret_key']}"},
        timeout=10,
    ) as http:
        for number, times in CARDS.items():
            for _ in range(times):
                card = {"number": number, "exp_month": 1, "exp_year": 2031, "cvc": "123"}
                body = {
                    "amount": 2500,
                    "currency": "myr",
                    "payment_method_data": {"type": "card", "card": card},
                }
                assert http.post("/v1/payments", json=body).status_code in (200, 201, 402)
    gw = connect(
        account["secret_key"], sandbox_b.base_url, cache_dir=tmp_path / "cache", progress=False
    )
    yield gw, account["secret_key"]
    gw.close()


@pytest.mark.slow
def test_run_report_writes_html_and_tables_without_secrets(
    gateway_with_payments: tuple[Gateway, str], tmp_path: Path
) -> None:
    gw, key = gateway_with_payments
    out = tmp_path / "report"
    result = report.run_report(
        out, tz="Asia/Kuala_Lumpur", gateway=gw, notebooks=["02_declines.ipynb"]
    )
    page = out / "02_declines.html"
    assert result.html == [page]
    html = page.read_text()
    assert "Declines: which codes" in html and "insufficient_funds" in html
    assert "load_tables(" not in html  # code is hidden
    assert "<img" in html and "data:image/png;base64" in html  # self-contained figures
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"https?://", html)  # nothing fetched
    # 6 payments, 3 failed: insufficient_funds 2 of 3, lost_card 1 of 3
    codes = pd.read_csv(out / "tables" / "decline_codes.csv")
    assert dict(zip(codes["decline_code"], codes["count"], strict=True)) == {
        "insufficient_funds": 2,
        "lost_card": 1,
    }
    assert (out / "tables" / "decline_codes.parquet").exists()
    assert result.overview.payments == 6 and result.overview.decided == 6
    index = result.index.read_text()
    assert "02_declines.html" in index and "tables/decline_codes.csv" in index
    # A gateway's own data (a sandbox the library cannot tell from a gateway) is not labelled.
    assert not result.sandbox_data
    assert "sandbox data" not in html and "sandbox data" not in index
    port = str(httpx.URL(gw.settings.base_url).port)
    for text in (html, index):
        assert key not in text and key[-8:] not in text
        assert not re.search(rf":{port}\b", text)
        assert str(tmp_path) not in text and str(Path.home()) + "/" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tz", "Mars/Base"], "unknown time zone 'Mars/Base'"),
        (["--since", "yesterday"], "--since=yesterday is not a date or time"),
        (["--spark-path", "/data/x"], "need --source spark"),
    ],
)
def test_report_command_refuses_bad_options_before_connecting(
    args: list[str], message: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from gwtools.cli import main

    result = CliRunner().invoke(main, ["report", "--out", str(tmp_path), *args])
    assert result.exit_code == 2 and message in result.output


@pytest.mark.parametrize(
    ("source", "message"),
    [("nowhere", "no cache at"), ("nosuch://bucket/gw", "Check the URL's scheme")],
)
def test_a_source_that_cannot_be_read_is_one_line_and_leaves_no_folder(
    source: str, message: str, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from gwtools.cli import main

    out = tmp_path / "report"
    result = CliRunner().invoke(
        main,
        [
            "report",
            "--out",
            str(out),
            "--source",
            str(tmp_path / source) if "://" not in source else source,
        ],
    )
    assert result.exit_code != 0
    assert result.output.startswith("Error: ") and message in result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1
    assert not out.exists()


@pytest.mark.slow
def test_demo_command_end_to_end(tmp_path: Path) -> None:
    """`gwtools demo` as the README runs it, in a subprocess (its sandbox ends with it);
    a smaller seeded history keeps it quick."""
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "GW_SANDBOX_PAYMENTS": "400",
        "GW_CACHE_DIR": str(tmp_path / "cache"),
        "GW_API_KEY": "",
        "GW_BASE_URL": "",
    }
    done = subprocess.run(
        [sys.executable, "-m", "gwtools", "demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "Report written to ./gwtools-report/" in out, out + done.stderr[-2000:]
    # the summary's Data: line, one parenthesis (it said "(seeded demo history) (sandbox data: …)")
    assert (
        "Data: the embedded sandbox (seeded demo history); sandbox data: not real payments\n"
    ) in out, out
    # The demo history carries one incident of each kind, whose attempts come on top of the 400.
    listed = len(pd.read_csv(tmp_path / "gwtools-report" / "tables" / "payments.csv"))
    assert listed > 400
    assert re.search(rf"payments\s+{listed:,} \(\d+ refunds\)", out), out
    assert "success rate" in out and "top declines" in out and "worst FPX bank" in out, out
    assert not re.search(r"127\.0\.0\.1|sk_test_|/tmp/", out + done.stderr), out + done.stderr
    report_dir = tmp_path / "gwtools-report"
    assert sorted(p.name for p in report_dir.glob("*.html")) == [
        "01_overview_and_export.html",
        "02_declines.html",
        "03_refunds.html",
        "04_fpx_banks.html",
        "05_monitoring.html",
        "06_data_quality.html",
        "index.html",
    ]
    assert (report_dir / "tables" / "payments.parquet").exists()
    monitoring = (report_dir / "05_monitoring.html").read_text()
    for kind in ("card_testing", "fpx_bank_outage", "decline_spike"):
        assert kind in monitoring, kind
    # GW_TIMEZONE is unset here: the demo's own zone reaches every notebook (tz parameter)
    for page in report_dir.glob("0*.html"):
        assert "to now (Asia/Kuala_Lumpur)" in page.read_text(), page.name
    # The embedded sandbox's data says so on every page: a banner on top, and the first
    # line of the notebook's first output.
    for page in report_dir.glob("*.html"):
        text = page.read_text()
        assert 'class="gwtools-sandbox"' in text, page.name
        assert text.index("gwtools-sandbox") < text.index("<h1"), page.name
    for page in report_dir.glob("0*.html"):
        assert "sandbox data: not real payments\n" in page.read_text(), page.name


@pytest.mark.slow
def test_report_includes_monitoring_and_data_quality(
    gateway_with_payments: tuple[Gateway, str], tmp_path: Path
) -> None:
    """05 and 06 run in the report on a tiny history: too little for a baseline, so no alert,
    and the 6 payments break no quality rule, nor did the sync."""
    gw, _ = gateway_with_payments
    names = ["05_monitoring.ipynb", "06_data_quality.ipynb"]
    assert set(names) <= set(report.NOTEBOOKS)
    result = report.run_report(tmp_path / "r", gateway=gw, notebooks=names)
    pages = {p.name: p.read_text() for p in result.html}
    assert "Monitoring: is something wrong right now?" in pages["05_monitoring.html"]
    assert "No alerts: monitored window " in pages["05_monitoring.html"]
    assert "Data quality: can I trust these numbers?" in pages["06_data_quality.html"]
    assert "05_monitoring.html" in result.index.read_text()
    # What the data spans and how the report's own sync went, on the index page too.
    assert result.coverage.startswith("payments created ") and result.coverage.endswith(
        " UTC, complete"
    )
    assert result.coverage in result.index.read_text()
    rules = pd.read_csv(tmp_path / "r" / "tables" / "quality_rules.csv")
    # Nine rules on the rows, and the sync the report ran: both tables read completely.
    assert rules["ok"].all() and len(rules) == 10
    assert rules.set_index("rule").loc["last_sync_complete", "checked"] == 2
    assert rules.set_index("rule").loc["payment_ids_unique", "checked"] == 6
    assert pd.read_csv(tmp_path / "r" / "tables" / "alerts.csv").empty


@pytest.mark.slow
def test_report_on_a_selection_with_no_payments(
    gateway_with_payments: tuple[Gateway, str], tmp_path: Path
) -> None:
    gw, _ = gateway_with_payments
    # A currency the payments do not hold is refused (a typo would read as no payments): an
    # empty selection is a window without payments.
    with pytest.raises(ConfigurationError, match="currency='EUR': the payments are in"):
        report.run_report(tmp_path / "r", currency="EUR", gateway=gw, notebooks=[])
    assert not (tmp_path / "r").exists()
    result = report.run_report(
        tmp_path / "r",
        since="2001-01-01",
        until="2001-01-31",
        gateway=gw,
        notebooks=["04_fpx_banks.ipynb", "05_monitoring.ipynb"],
    )
    assert result.overview.payments == 0
    assert "0 payments and 0 refunds" in result.html[0].read_text()  # ran through, said so
    # No alert on nothing is no clean bill of health: the monitoring page says so (it said
    # "No alerts.", where `gwtools monitor` exits 2, unable to look).
    monitoring = result.html[1].read_text()
    assert "Nothing to monitor: no payments or refunds" in monitoring
    assert "No alerts" not in monitoring
    assert pd.read_csv(tmp_path / "r" / "tables" / "fpx_banks.csv").empty


@pytest.mark.parametrize(
    ("cell", "said"),
    [
        ("1 / 0", r"02_declines.ipynb failed in cell 3: ZeroDivisionError"),
        # a kernel killed (out of memory on a large history, say): it was nbclient's
        # DeadKernelError, a traceback naming no notebook, and nothing kept
        ("import os\nos._exit(1)", r"02_declines.ipynb stopped: its kernel died"),
    ],
)
def test_a_failing_notebook_is_named_and_kept(
    cell: str,
    said: str,
    gateway_with_payments: tuple[Gateway, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    broken = tmp_path / "notebooks"
    broken.mkdir()
    nb = new_notebook(
        cells=[
            new_code_cell("cache = None", metadata={"tags": ["parameters"]}),
            new_code_cell(cell),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, broken / "02_declines.ipynb")
    monkeypatch.setattr(report._run, "notebooks_dir", lambda: broken)
    gw, _ = gateway_with_payments
    with pytest.raises(report.ReportError, match=said):
        report.run_report(tmp_path / "r", gateway=gw, notebooks=["02_declines.ipynb"])
    assert (tmp_path / "r" / "02_declines.failed.ipynb").exists()


def test_private_caches_of_dead_processes_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A killed kernel never cleans up its embedded-sandbox cache; the next process does."""
    import subprocess
    import sys

    from gwtools import _embedded

    registry = _embedded._Registry()  # a fresh one: this process's may already hold a cache
    monkeypatch.setattr(_embedded.tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    orphan = tmp_path / f"gwtools-embedded-{int(gone.stdout)}-abc"
    living = tmp_path / f"gwtools-embedded-{os.getppid()}-def"  # the test runner's parent
    unrelated = tmp_path / "gwtools-embedded-notapid"
    for path in (orphan, living, unrelated):
        (path / "sandbox").mkdir(parents=True)

    mine = Path(registry.private_cache_dir())

    assert mine.parent == tmp_path and mine.name.startswith(f"gwtools-embedded-{os.getpid()}-")
    assert not orphan.exists()
    assert living.exists() and unrelated.exists()
    assert registry.private_cache_dir() == str(mine)  # one per process
    assert registry.private_cache is not None
    registry.private_cache.cleanup()


def test_tidy_tables_drops_the_unnamed_index_and_wraps_only_long_text() -> None:
    from bs4 import BeautifulSoup

    advice = "retry once later; if it fails again ask the customer to call their bank"
    frame = pd.DataFrame(
        {"decline_code": ["lost_card", None], "count": [3, 1], "advice": [advice, "retry"]}
    ).astype({"decline_code": "string"})
    soup = BeautifulSoup(report.tidy_tables(frame.to_html()), "html.parser")
    table = soup.find("table")
    assert "gwtools-table" in table["class"] and not table.has_attr("border")
    assert "gwtools-scroll" in table.parent["class"]  # scrolls sideways, never cut
    header = [th.get_text() for th in table.select("thead th")]
    assert header == ["decline_code", "count", "advice"]  # no empty index corner
    assert table.select("tbody th") == []  # no 0, 1 down the side
    assert str(table.select("thead th")[0]) == "<th>decline_<wbr/>code</th>"
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in table.select("tbody tr")]
    assert rows == [["lost_card", "3", advice], ["", "1", "retry"]]  # <NA> shown blank
    long = [td.get_text() for td in table.select("td.gwtools-long")]
    assert long == [advice]  # only text longer than LONG_TEXT wraps
    assert len(advice) > report.LONG_TEXT > len("retry")


def test_tidy_tables_keeps_a_named_index_on_the_header_row() -> None:
    from bs4 import BeautifulSoup

    shares = pd.DataFrame(
        {"succeeded": [0.9], "attempts": [10]}, index=pd.Index(["BSN"], name="bank")
    )
    soup = BeautifulSoup(report.tidy_tables(shares.to_html()), "html.parser")
    assert len(soup.select("thead tr")) == 1  # pandas' row of its own for the name is gone
    assert [th.get_text() for th in soup.select("thead th")] == ["bank", "succeeded", "attempts"]
    assert [th.get_text() for th in soup.select("tbody th")] == ["BSN"]


def test_tidy_tables_says_an_empty_table_has_no_rows() -> None:
    """An empty result (no declines, no refunds) was a bare header with an empty index
    corner (and, for a named index, a second header row): it now says so in one row."""
    from bs4 import BeautifulSoup

    for frame, header in (
        (pd.DataFrame({"reason": pd.Series([], dtype="string"), "count": []}), ["reason", "count"]),
        (pd.DataFrame({"succeeded": []}, index=pd.Index([], name="bank")), ["bank", "succeeded"]),
    ):
        soup = BeautifulSoup(report.tidy_tables(frame.to_html()), "html.parser")
        assert len(soup.select("thead tr")) == 1
        assert [th.get_text() for th in soup.select("thead th")] == header
        (cell,) = soup.select("tbody td")
        assert cell.get_text() == "no rows" and cell["colspan"] == str(len(header))


def test_tidy_tables_leaves_other_markup_alone() -> None:
    plain = "<p>5 payments</p><table><tr><td>x</td></tr></table>"
    assert report.tidy_tables(plain) == plain
    assert report.tidy_tables("no markup at all") == "no markup at all"


def test_report_pages_carry_the_table_styles() -> None:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("frame")
    cell.outputs = [
        nbformat.v4.new_output(
            "execute_result",
            data={"text/html": pd.DataFrame({"a": [1]}).to_html(), "text/plain": "a 1"},
            execution_count=1,
        )
    ]
    notebook.cells = [cell]
    page = report.export_html(notebook, "A title")
    assert "table.gwtools-table" in page  # TABLE_CSS is in the page
    assert 'class="dataframe gwtools-table"' in page and "<th>0</th>" not in page
    assert not re.search(r"<(script|link)[^>]+(src|href)=\"https?://", page)
    assert "sandbox data" not in page  # real data: no banner
    marked = report.export_html(notebook, "A title", sandbox_data=True)
    banner = marked.index('class="gwtools-sandbox"')
    assert "sandbox data: not real payments" in marked[banner:]
    assert banner < marked.index('gwtools-table"')  # above the first output


@pytest.mark.slow
def test_notebook_without_tz_parameter_follows_gw_timezone(
    tmp_path: Path, make_payments: Build, make_refunds: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A notebook run as an analyst runs it (no tz given) buckets in GW_TIMEZONE, not in a
    zone written into the notebook."""
    import nbformat
    import papermill

    payments = make_payments(
        [{"status": "succeeded", "amount": 100, "created_at": "2026-11-01T23:30:00Z"}]
    )
    refunds = make_refunds([{"payment_id": "pay_1", "amount": 50}])
    cache = _cache(tmp_path, payments, refunds)
    monkeypatch.setenv("GW_TIMEZONE", "Europe/London")  # the kernel inherits it
    out = tmp_path / "run.ipynb"
    papermill.execute_notebook(
        str(report.notebooks_dir() / "01_overview_and_export.ipynb"),
        str(out),
        parameters={"source": str(cache), "interactive": False},
        progress_bar=False,
        kernel_name="python3",
    )
    shown = [
        "".join(o.get("data", {}).get("text/plain", ""))
        for cell in nbformat.read(out, as_version=4).cells
        if cell.cell_type == "code" and cell.source.endswith("\ndata")
        for o in cell.outputs
    ]
    (lines,) = [text.splitlines() for text in shown]
    assert lines[0] == "1 payments and 1 refunds from a local cache, start to now (Europe/London)"
    assert lines[1].startswith("payments created 2026-11-01 to 2026-11-01;")  # London's day


def test_save_tables_streams_a_lazy_table_to_what_pandas_writes(
    tmp_path: Path, make_payments: Build, make_refunds: Build
) -> None:
    import gwtools

    payments = make_payments(
        [{"status": "succeeded", "amount": 100 * i, "created_at": f"2026-11-0{i}T02:00:00Z"}
         for i in range(1, 6)]
    )  # fmt: skip
    cache = _synced_cache(tmp_path, payments, make_refunds([]))
    lazy = gwtools.scan_cache(cache, "payments")
    report.save_tables({"lazy": lazy}, tmp_path / "t")
    eager = gwtools.read_cache(cache, "payments")
    eager.to_csv(tmp_path / "eager.csv", index=False)
    got = (tmp_path / "t" / "lazy.csv").read_text()
    assert got == (tmp_path / "eager.csv").read_text()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t" / "lazy.parquet"), eager)


@pytest.mark.spark
def test_save_tables_writes_spark_canonical_tables_in_creation_order(
    tmp_path: Path, make_payments: Build, make_refunds: Build, spark: Any
) -> None:
    """Spark reads the month files biggest first; a report's payments.csv is in read_cache's
    order (creation time, then id) whatever the engine. Other tables keep their own order."""
    import gwtools

    days = ["2026-09-03", "2026-10-01", "2026-10-01", "2026-10-02", "2026-11-05", "2026-09-01"]
    payments = make_payments(
        [{"id": f"pay_{9 - i}", "status": "succeeded", "amount": 100, "created_at": f"{d}T02:00:00Z"}
         for i, d in enumerate(days)]
    )  # fmt: skip
    cache = _cache(tmp_path, payments, make_refunds([{"payment_id": "pay_9", "amount": 50}]))
    src = gwtools.open_source("spark", spark_path=str(cache))
    shuffled = src.payments.orderBy("amount", "id", ascending=False)  # any order but creation
    report.save_tables({"payments": shuffled, "ids": src.payments.select("id")}, tmp_path / "t")
    with pytest.warns(gwtools.GatewayDataWarning, match="partial"):  # written, never synced
        eager = gwtools.read_cache(cache, "payments")
    assert eager["id"].tolist() == ["pay_4", "pay_9", "pay_7", "pay_8", "pay_6", "pay_5"]
    eager.to_csv(tmp_path / "eager.csv", index=False)
    assert (tmp_path / "t" / "payments.csv").read_text() == (tmp_path / "eager.csv").read_text()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "t" / "payments.parquet"), eager)
    # A notebook's data line on Spark: the same span (Spark gives naive UTC), the same states.
    on_spark = report.load_tables("spark", spark_path=str(cache), tz="Asia/Kuala_Lumpur")
    with pytest.warns(gwtools.GatewayDataWarning, match="partial"):
        on_duckdb = report.load_tables(cache, tz="Asia/Kuala_Lumpur")
    assert repr(on_spark).splitlines()[1:] == repr(on_duckdb).splitlines()[1:]
    assert repr(on_spark).splitlines()[1].startswith("payments created 2026-09-01 to 2026-11-05;")


def test_report_from_a_cache_folder_reads_it_and_syncs_nothing(
    tmp_path: Path, make_payments: Build, make_refunds: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``source=`` a cache folder: the notebooks read it lazily; no gateway is contacted or
    started (the embedded sandbox's variant is invalid, so starting it would fail)."""
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 100, "method_type": "fpx",
             "fpx_bank_code": "MB2U0227", "fpx_bank": "Maybank2u"},
            {"status": "failed", "amount": 100, "method_type": "fpx", "fpx_bank_code": "MB2U0227",
             "fpx_bank": "Maybank2u", "failure_code": "processing_error"},
            {"status": "succeeded", "amount": 100},
        ]
    )  # fmt: skip
    cache = _cache(tmp_path, payments, make_refunds([{"payment_id": "pay_1", "amount": 50}]))
    monkeypatch.setenv("GW_SANDBOX_VARIANT", "none")
    monkeypatch.delenv("GW_API_KEY", raising=False)
    monkeypatch.delenv("GW_BASE_URL", raising=False)
    with pytest.warns(gwtools.GatewayDataWarning, match="no sync of them has completed"):
        result = report.run_report(
            tmp_path / "r", source=cache, tz="UTC", notebooks=["04_fpx_banks.ipynb"]
        )
    assert result.source == "a local cache" and result.overview.payments == 3
    banks = pd.read_csv(tmp_path / "r" / "tables" / "fpx_banks.csv")
    assert banks["fpx_bank_code"].tolist() == ["MB2U0227"]
    assert banks["attempts"].tolist() == [2] and banks["rate"].tolist() == [0.5]
    page = result.html[0].read_text()
    assert "3 payments and 1 refunds from a local cache" in page
    # The cache was never synced: the data line says so, and the page names no local path
    # (the library's warning, which names the cache's folder, is not shown on the page).
    assert "no sync of the payments and refunds has completed" in page
    assert str(tmp_path) not in page and "GatewayDataWarning" not in page


def test_save_tables_keeps_csv_to_what_a_spreadsheet_opens(tmp_path: Path) -> None:
    """A table longer than ``csv_max_rows`` is saved as Parquet only, every row, and the
    warning says so and how to get the CSV; a table of exactly the limit keeps its CSV."""
    from gwtools.cache._scan import connection

    at_limit = pd.DataFrame({"n": [1, 2]})
    longer = connection().from_df(pd.DataFrame({"n": [1, 2, 3]}))  # counted in DuckDB
    with pytest.warns(UserWarning) as caught:
        names = report.save_tables(
            {"small": at_limit, "payments": longer}, tmp_path / "t", csv_max_rows=2
        )
    assert names == ["small.csv", "small.parquet", "payments.parquet"]
    assert [str(w.message) for w in caught] == [
        "payments: 3 rows, more than a spreadsheet opens (2), so it was saved as "
        "payments.parquet only (every row). For a CSV anyway: `gwtools export payments "
        "--format csv` or save_tables(..., csv_max_rows=None)."
    ]
    assert pd.read_parquet(tmp_path / "t" / "payments.parquet")["n"].tolist() == [1, 2, 3]
    assert not (tmp_path / "t" / "payments.csv").exists()
    every = report.save_tables({"payments": longer}, tmp_path / "all", csv_max_rows=None)
    assert every == ["payments.csv", "payments.parquet"]
    assert report.CSV_MAX_ROWS == 1_048_576 - 1  # Excel's rows, less the header


def test_notebook_warnings_are_their_sentence_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a notebook a warning would name the kernel's temporary file (a path in a report)."""
    import warnings

    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)
    shown = warnings.formatwarning("payments: 3 rows", UserWarning, "/tmp/ipykernel_1/2.py", 8)
    assert "/tmp/ipykernel_1" in shown
    keep = ["display.width", "display.max_columns", "display.max_colwidth", "display.float_format"]
    with (
        pd.option_context(*(x for k in keep for x in (k, pd.get_option(k)))),  # restored after
        warnings.catch_warnings(record=True) as shown_here,
    ):
        warnings.simplefilter("always")
        report.notebook_display()
        # A partial cache's warnings name its local folder: the first output says it instead.
        for message in (
            "the cached payments at /srv/c/payments are partial: no sync of them has completed",
            "/srv/c/p/part-1.parquet cannot be read (0 bytes), so its rows are missing; …",
        ):
            warnings.warn(message, gwtools.GatewayDataWarning, stacklevel=1)
        warnings.warn("1 record rejected", gwtools.GatewayDataWarning, stacklevel=1)
        # the sync's own warning names no folder and says why: it still shows
        warnings.warn(
            "the sync is incomplete, …: 2 short pages", gwtools.GatewayDataWarning, stacklevel=1
        )
    assert [str(w.message) for w in shown_here] == [
        "1 record rejected",
        "the sync is incomplete, …: 2 short pages",
    ]
    assert (
        warnings.formatwarning("payments: 3 rows", UserWarning, "/tmp/ipykernel_1/2.py", 8)
        == "UserWarning: payments: 3 rows\n"
    )


def test_report_summary_counts_tables_not_files() -> None:
    from gwtools.cli._report import _tables_line

    files = [Path("t/funnel.csv"), Path("t/funnel.parquet"), Path("t/payments.parquet")]
    assert _tables_line(files) == "2 tables as CSV and Parquet; payments as Parquet only"
    assert _tables_line(files[:2]) == "1 table as CSV and Parquet"


def test_a_report_after_an_incomplete_sync_says_so_and_exits_3(
    gateway_with_payments: tuple[Gateway, str],
    sandbox_b: Sandbox,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gwtools.cli._report import _print_report

    gw, key = gateway_with_payments
    faults = f"{sandbox_b.base_url}/_sandbox/faults"
    httpx.put(faults, json={"garbled_id_rate": 1.0, "seed": 1}, timeout=10).raise_for_status()
    try:
        result = report.run_report(tmp_path / "r", gateway=gw, notebooks=[])
    finally:
        httpx.delete(faults, timeout=10)
    assert result.sync_problems and "INCOMPLETE" in result.coverage
    with pytest.raises(SystemExit) as exited:
        _print_report(result)
    assert exited.value.code == 3
    said = capsys.readouterr()
    assert "the sync before the report was incomplete" in said.err
    assert result.sync_problems[0] in said.err and key not in said.out + said.err
    # the next report, after a sync that reads every page, exits normally
    fixed = report.run_report(tmp_path / "r", gateway=gw, notebooks=[])
    assert fixed.sync_problems is None and fixed.coverage.endswith(" UTC, complete")
    _print_report(fixed)


def _synced_cache(tmp_path: Path, payments: pd.DataFrame, refunds: pd.DataFrame) -> Path:
    """A hand-made cache whose last sync read every page of both tables."""
    root = _cache(tmp_path, payments, refunds)
    at = "2026-11-21T08:30:00+00:00"
    for resource in ("payments", "refunds"):
        Dataset(root / resource, resource).write_state(
            {"high_water": at, "last_full_sync": at, "last_sync": at,
             "completeness": {"complete": True}}
        )  # fmt: skip
    return root


def test_a_report_on_a_cache_folder_with_an_unreadable_payments_file_says_so_and_exits_3(
    tmp_path: Path,
    make_payments: Build,
    make_refunds: Build,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A damaged payments month file in a cache folder read as it is: the pages' data line
    and the index say that rows are missing, and `gwtools report` exits 3 (it said
    "complete" and exited 0: only the refunds' state was checked for unreadable files)."""
    from gwtools.cli._report import _print_report

    payments = make_payments(
        [
            {"status": "succeeded", "amount": 100, "created_at": "2026-10-02T02:00:00Z"},
            {"status": "succeeded", "amount": 100, "created_at": "2026-11-02T02:00:00Z"},
        ]
    )
    cache = _synced_cache(tmp_path, payments, make_refunds([{"payment_id": "pay_2", "amount": 50}]))
    october = next((cache / "payments").glob("created_month=2026-10/*.parquet"))
    october.write_bytes(b"")
    with pytest.warns(gwtools.GatewayDataWarning):  # the library's own word, at this line
        result = report.run_report(tmp_path / "r", source=cache, tz="UTC", notebooks=[])
    assert result.overview.payments == 1  # October's row is missing
    assert "unreadable_files" in result.states["payments"]
    assert "complete" not in result.coverage.rsplit(";", 1)[-1].split()  # not "…, complete"
    assert "1 cached payments file cannot be read, so rows are missing" in result.coverage
    assert str(tmp_path) not in result.coverage  # a page's line: no local path
    with pytest.raises(SystemExit) as exited:
        _print_report(result)
    assert exited.value.code == 3
    assert october.name in capsys.readouterr().err


def test_sync_summary_counts_unreadable_files_whatever_the_sync_said() -> None:
    done = {"completeness": {"complete": True}, "last_sync": "2026-11-21T08:30:00Z"}
    lost = {**done, "unreadable_files": {"/c/a.parquet": "0 bytes", "/c/b.parquet": "cut"}}
    assert report.sync_summary({"payments": lost, "refunds": done}) == (
        "last sync 2026-11-21 08:30 UTC; 2 cached payments files cannot be read, so rows are "
        "missing: run gwtools sync, which fetches those months again"
    )
    late = {"completeness": {"complete": False}, "last_sync": "2026-11-21T09:00:00Z"}
    one = {**done, "unreadable_files": {"/c/a.parquet": "0 bytes"}}
    assert report.sync_summary({"payments": late, "refunds": one}) == (
        "last sync 2026-11-21 09:00 UTC INCOMPLETE for the payments: rows may be missing; run "
        "gwtools sync again to finish it; 1 cached refunds file cannot be read, so rows are "
        "missing: run gwtools sync, which fetches those months again"
    )


def test_a_failed_rerun_leaves_the_last_report_as_it_was(
    tmp_path: Path, make_payments: Build, make_refunds: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-running a report into its folder: when a notebook fails, the pages and tables of
    the ones that finished used to replace the last report's, under its index.html (whose
    overview and links were the last run's): a report mixing two runs' data. Now nothing
    of a failed run lands in the folder but the failed notebook, which the next good run
    removes. Two tiny notebooks stand in for the six (a kernel each, no analysis)."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    folder = tmp_path / "notebooks"
    folder.mkdir()
    cells = {
        # saves one table and shows which run made it
        "01_overview_and_export.ipynb": (
            "import pandas as pd\nfrom gwtools.report import save_tables\n"
            "print('made with since =', since)\n"
            "save_tables({'made': pd.DataFrame({'since': [str(since)]})}, out_dir)"
        ),
        "02_declines.ipynb": "if since is not None:\n    1 / 0  # the second run fails here",
    }
    for name, source in cells.items():
        nb = new_notebook(
            cells=[
                new_code_cell("since = None\nout_dir = None", metadata={"tags": ["parameters"]}),
                new_code_cell(source),
            ]
        )
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nbformat.write(nb, folder / name)
    monkeypatch.setattr(report._run, "notebooks_dir", lambda: folder)
    monkeypatch.setenv("GW_SANDBOX_VARIANT", "none")  # a cache folder: nothing is started
    payments = make_payments([{"status": "succeeded", "amount": 100}])
    cache = _synced_cache(tmp_path, payments, make_refunds([]))
    out = tmp_path / "r"
    names = list(cells)
    first = report.run_report(out, source=cache, tz="UTC", notebooks=names)
    assert [p.name for p in first.tables] == ["made.csv", "made.parquet"]
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert "made with since = None" in (out / "01_overview_and_export.html").read_text()
    with pytest.raises(report.ReportError, match=r"02_declines\.ipynb failed"):
        report.run_report(out, source=cache, tz="UTC", since="2026-11-02", notebooks=names)
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after.pop(Path("02_declines.failed.ipynb"))  # kept, with its traceback
    assert after == before  # the last report, every page and table as it was
    again = report.run_report(out, source=cache, tz="UTC", notebooks=names)
    assert not (out / "02_declines.failed.ipynb").exists()  # that failure is history
    assert [p.name for p in again.tables] == ["made.csv", "made.parquet"]
    assert sorted(p.name for p in out.iterdir()) == [
        "01_overview_and_export.html", "02_declines.html", "index.html", "tables"
    ]  # fmt: skip
    # Each page links back to the index and to the report's other pages (it had no link at
    # all: a reader who opened one page could not get to the others).
    for page in again.html:
        links = re.findall(r'<a href="([^"#]+)"', page.read_text())
        others = {p.name for p in again.html} - {page.name}
        assert "index.html" in links and others <= set(links), (page.name, links)
        assert all((out / link).exists() for link in links), links


def test_the_index_and_summary_say_which_days_and_currency_the_report_chose(
    tmp_path: Path,
    make_payments: Build,
    make_refunds: Build,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With --currency (or --since/--until) the index's overview counts the chosen payments
    only, but its Data line (and the command's summary) named the source alone: 1 payment
    read as the whole history. The pages' first output said it; now the index does too."""
    from gwtools.cli._report import _print_report

    monkeypatch.setenv("GW_SANDBOX_VARIANT", "none")
    payments = make_payments(
        [
            {"status": "succeeded", "amount": 100},
            {"status": "succeeded", "amount": 100, "currency": "JPY"},
            {"status": "succeeded", "amount": 100, "created_at": "2026-10-02T02:00:00Z"},
        ]
    )
    cache = _synced_cache(tmp_path, payments, make_refunds([]))
    result = report.run_report(
        tmp_path / "r", source=cache, tz="UTC", since="2026-11-01", currency="MYR", notebooks=[]
    )
    assert result.overview.payments == 1
    chosen = "2026-11-01 to now (UTC), MYR only"
    assert f"Data: a local cache, {chosen}." in result.index.read_text()
    _print_report(result)
    assert f"Data: a local cache, {chosen}" in capsys.readouterr().out
    everything = report.run_report(tmp_path / "all", source=cache, tz="UTC", notebooks=[])
    assert "Data: a local cache. payments created" in everything.index.read_text()


def test_a_killed_runs_staging_folder_is_removed_by_the_next_run(
    tmp_path: Path, make_payments: Build, make_refunds: Build
) -> None:
    """A run killed outright (out of memory) left its hidden staging folder, tables and all, in
    --out for good. The next run removes those of dead processes on this host, and leaves a
    running report's and another host's alone."""
    import os
    import subprocess
    import sys

    from gwtools.report._run import _HOST, _STAGE

    payments = make_payments([{"status": "succeeded", "amount": 100}])
    cache = _synced_cache(tmp_path, payments, make_refunds([]))
    out = tmp_path / "r"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    dead = out / f"{_STAGE}{_HOST}-{gone}-k1ll3d" / "tables"
    running = out / f"{_STAGE}{_HOST}-{os.getppid()}-running"
    elsewhere = out / f"{_STAGE}otherhost-{gone}-shared"
    for folder in (dead, running, elsewhere):
        folder.mkdir(parents=True)
    (dead / "payments.parquet").write_bytes(b"x" * 1000)
    report.run_report(out, source=cache, tz="UTC", notebooks=[])
    assert not dead.parent.exists()
    assert running.exists() and elsewhere.exists()
    assert not [p for p in out.glob(f"{_STAGE}*") if p not in (running, elsewhere)]


_CUT_SHORT_INDEX = """
import resource, signal, sys
from pathlib import Path

from gwtools import scan_cache
from gwtools.analysis import overview
from gwtools.report._run import Report, _write_index

out, sample = Path(sys.argv[1]), sys.argv[2]
figures = overview(scan_cache(sample, "payments"), scan_cache(sample, "refunds"))
report = Report(out_dir=out, html=[], tables=[], overview=figures, source="a cache", seconds=0)
# A full disk (or quota) part-way through the page: the write fails with EFBIG after 200
# bytes; or, with SIGXFSZ's default action (Python ignores the signal), it is killed there.
signal.signal(signal.SIGXFSZ, signal.SIG_IGN if sys.argv[3] == "fails" else signal.SIG_DFL)
resource.setrlimit(resource.RLIMIT_FSIZE, (200, 200))
_write_index(report)
"""


@pytest.mark.parametrize("how", ["fails", "killed"])
def test_an_index_cut_short_leaves_the_last_report_s_index(tmp_path: Path, how: str) -> None:
    """index.html is the report's entry point: a run that fails while writing it (disk full,
    killed) leaves the last report's index whole, never a page cut off mid-way; what a
    killed one leaves beside it, the next run removes, as it removes a killed run's stage."""
    import subprocess
    import sys

    sample = Path(__file__).resolve().parents[2] / "data" / "sample-cache"
    out = tmp_path / "report"
    out.mkdir()
    last = "<!doctype html><title>the last report</title>" + "<p>figures</p>" * 50
    (out / "index.html").write_text(last, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _CUT_SHORT_INDEX, str(out), str(sample), how],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if how == "fails":
        assert done.returncode == 1 and "File too large" in done.stderr, done.stderr
        assert sorted(p.name for p in out.iterdir()) == ["index.html"]  # no temporary left
    else:
        assert done.returncode == -25, done.stderr  # SIGXFSZ
    assert (out / "index.html").read_text(encoding="utf-8") == last
    report.run_report(out, source=sample, notebooks=[])  # the next run
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "tables"]


def test_run_report_reads_source_names_as_open_source_does(
    gateway_with_payments: tuple[Gateway, str], tmp_path: Path
) -> None:
    """open_source (and `gwtools report --source`) read "GATEWAY" as the gateway; run_report
    compared the text as it was, and read some other gateway than the one it was given."""
    gw, _ = gateway_with_payments
    result = report.run_report(tmp_path / "report", source="GATEWAY", gateway=gw, notebooks=[])
    assert result.overview.payments == 6
    assert result.source == report.run_report(tmp_path / "again", gateway=gw, notebooks=[]).source
