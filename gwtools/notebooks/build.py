"""Write the analyst notebooks from the cells below (the notebooks' one source).

After changing a cell, run ``python gwtools/notebooks/build.py --execute`` to rebuild the
notebooks and store their outputs, and commit both. ``--keep-outputs`` rebuilds the sources
without running anything: each cell whose source did not change keeps its stored outputs,
a changed cell has none until the next ``--execute``. Without either option the notebooks
are written with no outputs at all.

Stored outputs are the demo's: ``--execute`` runs the notebooks on the embedded sandbox with
``GW_TIMEZONE=Asia/Kuala_Lumpur`` (as ``gwtools demo`` does) and its history ending at
``GW_SANDBOX_NOW`` (``PINNED_NOW``, as the test suite pins it), and ``conftest.py`` beside this
file gives nbval's kernels the same time zone. Cells that start with ``# NBVAL_CHECK_OUTPUT``
have their outputs compared by ``pytest --nbval-lax``; figures and widgets are not compared.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
CHECK = "# NBVAL_CHECK_OUTPUT"
#: The time zone of the stored outputs (the demo's): ``--execute`` and nbval run with it.
STORED_TIMEZONE = "Asia/Kuala_Lumpur"

PARAMETERS = """\
# Parameters (papermill): `gwtools report` sets these; change them here for your own run.
source = None  # None: the configured gateway, synced (GW_BASE_URL + GW_API_KEY, else the embedded
# sandbox); a synced cache folder or URL ("/data/gwtools", "s3://bucket/gwtools"): read as it
# is, no network; "spark": a Spark session reads spark_path
spark_master = None  # with spark: the master URL, e.g. spark://head:7077; None: local, 2 cores
spark_path = None  # with spark: the folder holding payments/ and refunds/; None: the gateway cache
base_url = None  # None: GW_BASE_URL with GW_API_KEY, or the embedded sandbox when neither is set
since = None  # first local day, "YYYY-MM-DD"; None: from the first payment
until = None  # last local day, inclusive; None: up to now
tz = None  # zone of days and weeks, e.g. "Asia/Kuala_Lumpur"; None: GW_TIMEZONE, else UTC
currency = None  # e.g. "MYR" keeps one currency; None keeps all (amounts stay per currency)
source_name = None  # how the data's origin is named in outputs (reports set it)
sandbox_data = False  # True: outputs say "sandbox data" (reports set it for the embedded
# sandbox's cache; the embedded sandbox as the source says so anyway)
as_of = None  # when pending ages are measured; None: the sandbox clock, or now on a gateway
out_dir = None  # where tables are saved as CSV and Parquet; None: nothing is written
interactive = True  # False in reports: static figures only, no dashboards"""


def setup(*extra: str) -> str:
    imports = "\n".join(extra)
    return f"""\
%matplotlib inline
from IPython.display import display

from gwtools import analysis, plots
from gwtools.report import load_tables, notebook_display, save_tables
{imports}

notebook_display()
tz = analysis.resolve_tz(tz)  # the parameter, else GW_TIMEZONE, else UTC
# Lazy tables: every analysis runs in the engine (DuckDB, or Spark) and returns a small table.
data = load_tables(
    source, base_url=base_url, spark_master=spark_master, spark_path=spark_path, since=since,
    until=until, tz=tz, currency=currency, as_of=as_of, source_name=source_name,
    sandbox_data=sandbox_data,
)  # its first line says "sandbox data" when it is: figures and dashboards given origin=data too
payments, refunds = data.payments, data.refunds"""


#: A markdown cell about this folder's stored outputs: a report's pages leave it out.
STORED_OUTPUTS = "stored-outputs"
#: A markdown cell about the embedded sandbox's demo history: only reports on sandbox data
#: keep it.
SANDBOX_DEMO = "sandbox-demo"


def md(text: str, *, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    cell: nbformat.NotebookNode = new_markdown_cell(textwrap.dedent(text).strip())
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def code(text: str, *, check: bool = False, tags: tuple[str, ...] = ()) -> nbformat.NotebookNode:
    source = textwrap.dedent(text).strip()
    if check:
        source = f"{CHECK}\n{source}"
    cell: nbformat.NotebookNode = new_code_cell(source)
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def export(tables: str) -> nbformat.NotebookNode:
    """The last cell: save ``tables`` (a dict literal) when ``out_dir`` is set."""
    return code(
        textwrap.dedent(tables).strip()
        + "\nfiles = save_tables(tables, out_dir)\n"
        + 'print("saved: " + ", ".join(files) if files else "not saved: set out_dir to write CSV and Parquet")'
    )


NOTEBOOKS: dict[str, list[nbformat.NotebookNode]] = {
    "01_overview_and_export.ipynb": [
        md("""
        # Payments overview and export

        Where do our payments end up, and how many of those the bank decided did it approve?
        This notebook gives the headline figures, the status mix, the success rate per method
        with its 95% interval, the funnel, and writes the canonical tables as CSV and Parquet
        for colleagues who work in Excel, DuckDB or Spark.

        """),
        md(
            """
            With no key configured it runs on the embedded sandbox's seeded demo history. The
            outputs stored here were made with `GW_TIMEZONE=Asia/Kuala_Lumpur` and
            `GW_SANDBOX_NOW=2026-11-20T12:00:00Z`: set both to get the same numbers; otherwise
            the history ends now and days are UTC days. Set `GW_API_KEY` and `GW_BASE_URL`
            (never a key in a notebook) to run it on your gateway.
            """,
            tags=(STORED_OUTPUTS,),
        ),
        md(
            """
            The embedded sandbox's demo history holds three planted incidents in its last week
            (05_monitoring finds them), which are in every figure here: a card-testing hour adds
            hundreds of small declined card payments, so that week's decline rate jumps.
            """,
            tags=(SANDBOX_DEMO,),
        ),
        code(PARAMETERS, tags=("parameters",)),
        code(setup()),
        code("data", check=True),
        md("""
        ## Headlines

        The success rate counts decided payments only (succeeded or failed): payments still
        open, canceled or expired were never decided. The worst FPX bank's rate is different:
        succeeded / *finished* attempts, where time-outs and customer cancellations count
        against the bank (as in 04_fpx_banks), so it is lower than a decided-only rate and not
        comparable with the rates here. Banks need at least 20 finished attempts to be ranked,
        and are ranked by the upper end of their interval, so a bank with a handful of payments
        cannot top the list by chance. The refund rate is refunded / succeeded payments.
        """),
        code("print(analysis.overview(payments, refunds))", check=True),
        md("## Where payments are now (canonical status, the same for both API variants)"),
        code("analysis.status_counts(payments)", check=True),
        md("""
        ## Success rate by method

        `n` is the number of decided payments behind each rate; `ci_low`/`ci_high` bound the
        95% Wilson interval.
        """),
        code('success = analysis.success_rate(payments, by="method_type")\nsuccess', check=True),
        code('analysis.success_rate(payments, by="currency")', check=True),
        md("""
        ## The funnel

        A final status says where a payment is, not the road it took: *reached* counts the
        payments at a stage or past it, `now` those at it today. Failed, canceled and expired
        payments left the funnel (`exited`); neither API says at which step, so they are all
        counted on the first row, whose `step_conversion` (reached / the previous stage's
        reached) is therefore every exit, not a first-step loss. `share_of_created` = reached /
        created; `refunded` counts succeeded payments with a refund (its conversion is the
        refund rate).
        """),
        code("funnel = analysis.funnel(payments)\nfunnel", check=True),
        code("plots.funnel(funnel, origin=data)"),
        md("## Weekly decline rate, for a first look (see 02_declines for the detail)"),
        code(
            'weekly = analysis.decline_rate(payments, freq="week", tz=data.tz)\n'
            "plots.decline_rate_over_time(weekly, origin=data)"
        ),
        md("""
        ## Export

        The canonical tables, as the library returns them (every column, its type and where
        it comes from: docs/tables.md), plus the summary tables above. In the canonical tables
        `amount` and `refunded_amount` are minor units (sen for MYR; `amount_major` is RM) and
        times are UTC; the summary tables use major units. From a terminal, `gwtools export
        payments --format parquet --out payments.parquet` writes the payments table of the
        gateway's cache (all of it: its `--since`/`--until` are UTC times, not local days).
        A table longer than a spreadsheet opens (1,048,575 rows) is saved as Parquet only,
        with a warning below: `gwtools export` writes its CSV when you need one.
        """),
        export(
            """
            tables = {
                "payments": payments,
                "refunds": refunds,
                "status_counts": analysis.status_counts(payments),
                "success_by_method": success,
                "funnel": funnel,
            }
            """
        ),
    ],
    "02_declines.ipynb": [
        md("""
        # Declines: which codes, how many, and is a retry worth it?

        A declined payment is lost revenue, but not all declines are equal. *Soft* declines
        (insufficient funds, generic decline, processing error, incorrect CVC) may succeed on
        a retry; *hard* ones (lost, stolen or expired card) never will. This notebook ranks the
        decline codes, splits soft from hard with what to do about each, and follows the
        decline rate by method, brand, amount and week.
        """),
        code(PARAMETERS, tags=("parameters",)),
        code(setup("from gwtools.widgets import declines_dashboard")),
        code("data", check=True),
        md("""
        ## Decline codes, most frequent first

        Every failed payment, card and FPX: an FPX payment the bank refused or that timed out
        carries the gateway's failure code (no card decline code), and the soft/hard advice is
        written for cards (04_fpx_banks follows the banks). `share` is of all failed payments;
        `decline_code` lists the codes seen with each reason; amounts stay per currency, in
        major units.
        """),
        code("breakdown = analysis.decline_breakdown(payments)\nbreakdown", check=True),
        code("plots.decline_pareto(breakdown, origin=data)"),
        md("## Soft or hard: what to retry"),
        code("types = analysis.decline_types(payments)\ntypes", check=True),
        md("""
        ## Decline rate by method and card brand

        Decline rate = failed / (succeeded + failed). Open payments are undecided and canceled
        or expired ones never reached the issuer, so neither dilutes the rate. Read `n` and the
        interval before comparing small groups.
        """),
        code(
            'by_brand = analysis.decline_rate(payments, by=["method_type", "card_brand"])\nby_brand',
            check=True,
        ),
        md("## By amount band (major units of each currency)"),
        code(
            'by_band = analysis.decline_rate(payments, by="amount_band")\n'
            'by_band[by_band["attempts"] > 0]',
            check=True,
        ),
        md("## Week by week, with the 95% interval as a band"),
        code(
            'weekly = analysis.decline_rate(payments, freq="week", tz=data.tz)\n'
            "plots.decline_rate_over_time(weekly, origin=data)"
        ),
        md("""
        ## Explore (interactive runs; reports skip it)

        Filter by date, method, currency, status or bank; switch between the code ranking and
        the rate over time; drill into a code to see its payments; export what you see.
        """),
        code("""
            if interactive:
                display(declines_dashboard(payments, tz=data.tz, origin=data))
            """),
        export(
            """
            tables = {
                "decline_codes": breakdown,
                "decline_types": types,
                "decline_rate_by_brand": by_brand,
                "decline_rate_by_amount_band": by_band,
                "decline_rate_weekly": weekly,
            }
            """
        ),
    ],
    "03_refunds.ipynb": [
        md("""
        # Refunds: how much comes back, why, and what is still pending

        Refund rate by count and by amount, per currency. Two ways to date a refund answer two
        questions: by the **payment's** creation (cohort: which sales came back?) or by the
        **refund's** own date (operations: how much did we refund this week?). FPX refunds
        take 3-5 business days to reach the customer, so pending ones are aged in business
        days. With `since`/`until` set, `refunds` are the chosen payments' refunds, whenever
        made, and `data.refunds_made` the refunds made on the chosen days, whichever payment
        they belong to: the refund-date chart and the reasons use the latter.
        """),
        code(PARAMETERS, tags=("parameters",)),
        code(setup("from gwtools.widgets import refunds_dashboard")),
        code("data", check=True),
        md("""
        ## Refund rate, payment cohort

        `rate` = refunded payments / succeeded payments (`payments`; with its interval),
        `amount_rate` = refunded / captured amount, in major units of `currency`. Failed
        refunds returned nothing and are not counted; pending ones are (in the reasons table
        below, `failed` counts the failed refunds left out of `count`, `share` and amounts).
        """),
        code("rate = analysis.refund_rate(payments, refunds)\nrate", check=True),
        code('analysis.refund_rate(payments, refunds, by="method_type")', check=True),
        md("""
        ## Week by week: cohort versus refund date

        The first chart is the cohort view by count: refunded / succeeded payments of each
        week's sales. Its last weeks look low because their refunds have not happened yet. The
        second is by amount and by refund date: the amount refunded in each week / the amount
        captured in that week's sales, with no interval (refunds of older sales make it a ratio,
        not a proportion). It has no such lag, but its first weeks are low (no earlier sales to
        refund) and a week with fewer sales, such as a partial last week, jumps.
        """),
        code(
            'cohort = analysis.refund_rate(payments, refunds, freq="week", tz=data.tz)\n'
            "plots.refund_rate_over_time(cohort, origin=data)"
        ),
        code(
            'by_refund_date = analysis.refund_rate(payments, data.refunds_made, freq="week", tz=data.tz, cohort="refund")\n'
            'plots.refund_rate_over_time(by_refund_date, measure="amount", origin=data)'
        ),
        md("## Why: reasons, and partial versus full refunds"),
        code("reasons = analysis.refunds_by_reason(data.refunds_made)\nreasons", check=True),
        code("kinds = analysis.partial_vs_full(payments, refunds)\nkinds", check=True),
        md("""
        ## How long after capture

        From each refunded payment's capture to its refunds, per method.
        """),
        code("timing = analysis.time_to_refund(payments, refunds)\ntiming", check=True),
        md("""
        ## Still pending

        Age in business days (Monday to Friday in the report's time zone, the creation day not
        counted; pass `holidays=` to `pending_refunds` to leave public holidays out), measured
        at `data.as_of`; `created_at` is shown in UTC. An FPX refund past 5 business days is
        overdue: worth a look with the bank. Card refunds have no documented window, so
        `overdue` is empty for them.
        """),
        code(
            "pending = analysis.pending_refunds(payments, refunds, now=data.as_of, tz=data.tz)\n"
            "print(f\"{len(pending):,} pending, {int(pending['overdue'].fillna(False).sum()):,} overdue\")\n"
            'pending.sort_values("age_business_days", ascending=False).head(10)',
            check=True,
        ),
        md("## Explore (interactive runs; reports skip it)"),
        code("""
            if interactive:
                dashboard = refunds_dashboard(payments, refunds, tz=data.tz, now=data.as_of, origin=data)
                display(dashboard)
            """),
        export(
            """
            tables = {
                "refund_rate": rate,
                "refund_rate_weekly_cohort": cohort,
                "refund_rate_weekly_by_refund_date": by_refund_date,
                "refund_reasons": reasons,
                "refund_partial_vs_full": kinds,
                "refund_timing": timing,
                "refunds_pending": pending,
            }
            """
        ),
    ],
    "04_fpx_banks.ipynb": [
        md("""
        # FPX banks: who completes, who fails, who times out

        FPX sends the customer to their bank's page; how each bank's payments end says where
        customers are lost. Per bank: attempts, succeeded, failed, timed out, canceled by the
        customer, still pending, the success rate with its 95% interval, and the median time
        to complete. A bank with a handful of attempts gets a wide interval: do not read a
        trend into it.
        """),
        code(PARAMETERS, tags=("parameters",)),
        code(setup("from gwtools.widgets import fpx_dashboard")),
        code("data", check=True),
        md("""
        ## Banks, worst first

        `rate` = succeeded / finished attempts (`n`); time-outs, customer cancellations and
        expiries count as finished (they happen on the bank's side of the flow), pending
        attempts do not. `median_minutes`: from creation to capture of the succeeded ones
        (empty when none succeeded).
        Ranking, the same everywhere (this table, the chart, the overview's "worst FPX bank"):
        banks with at least 20 finished attempts, worst first by the upper end of the 95%
        interval (worst even at its best), then banks with fewer attempts (`rank_note` says
        why), then the gateway's test banks.
        """),
        code("banks = analysis.fpx_banks(payments)\nbanks", check=True),
        code("plots.fpx_success_rates(banks, origin=data)"),
        md("""
        ## How each bank's attempts end

        Shares of all attempts, pending ones included (so `succeeded` is below `rate` above),
        sorted by succeeded share. The table keeps the gateway's test banks; the heatmap leaves
        them out.
        """),
        code("shares = analysis.fpx_outcome_shares(payments)\nshares", check=True),
        code("plots.fpx_outcome_heatmap(shares, origin=data)"),
        md("""
        ## Over time, per calendar month (local time)

        With more than three banks the chart hides the intervals: read `n`, `ci_low` and
        `ci_high` in `monthly` before trusting a move. The first and last months may be partial.
        """),
        code(
            'monthly = analysis.fpx_banks(payments, freq="month", tz=data.tz)\n'
            "plots.fpx_rate_over_time(monthly, origin=data)"
        ),
        md("## Explore (interactive runs; reports skip it)"),
        code("""
            if interactive:
                display(fpx_dashboard(payments, tz=data.tz, origin=data))
            """),
        export(
            """
            tables = {"fpx_banks": banks, "fpx_outcome_shares": shares.reset_index(), "fpx_banks_monthly": monthly}
            """
        ),
    ],
    "05_monitoring.ipynb": [
        md("""
        # Monitoring: is something wrong right now?

        Four monitors compare the last 7 days of data with the 28 days before them (the
        baseline) and raise an alert when a figure moves further than chance allows *and* far
        enough to matter. Each alert says what moved, where, when, by how much against the
        baseline, and how serious it is. The statistics are set so that each kind of monitor
        raises a false alarm on a normal history at most 1% of the time, however many days,
        banks or hours it looks at; on 20 normal sandbox histories none raised any.
        docs/monitoring.md has the rules, the thresholds and how they were calibrated;
        `gwtools monitor` prints the same alerts from a terminal for the gateway's synced cache
        in `GW_TIMEZONE` (or `--tz`), and exits 1 when there are any, 2 when it cannot check,
        for a cron job.
        """),
        md(
            """
            The embedded sandbox's demo history places one incident of each kind but a refund
            spike in its last week (a card-testing hour, an outage at one FPX bank and a day of
            card declines), so on it the monitors below have something to find.
            """,
            tags=(SANDBOX_DEMO,),
        ),
        code(PARAMETERS, tags=("parameters",)),
        code(setup("from gwtools.widgets import alert_payments, monitor_dashboard")),
        code("data", check=True),
        md("""
        ## The four monitors

        | alert | what it watches | raised when |
        |---|---|---|
        | `decline_spike` | card decline rate per local day, all cards and per brand; each order's first attempt only (a customer's retries after a decline are not fresh evidence) | the day's rate is at least 1.5 times the baseline's, with at least 5 declines, and above the control limit (`high` from twice the baseline) |
        | `card_testing` | card attempts of at most 2.00 (major units of the payment's currency) per hour; its `limit` is a count per hour | at least 30 in an hour, far above the usual count of such attempts, at least 80% on different cards and mostly declined: someone checking stolen card numbers (`high` from 100) |
        | `fpx_bank_outage` | each real FPX bank per hour of Malaysia time | its payments succeed at most half as often as usual for that bank, and improbably so, or several time out in a row (`high` when nothing succeeded) |
        | `refund_spike` | refunds created per local day | at least 5, at least twice the usual daily count and above its control limit (`high` from three times) |

        A scope whose baseline is too small to trust (under 50 decided card payments, or 25
        attempts at a bank) is skipped rather than guessed at. A decline spike counts each
        order's first attempt only and leaves out the attempts of a card-testing alert, so its
        rates are lower than 02_declines' decline rate. With `since`/`until` set, the
        window is the last 7 days of that selection and the baseline what the selection holds
        before it.
        """),
        md("""
        ## Alerts in the last 7 days

        One row per alert: `start`/`end` in local time (FPX outages are judged in Malaysia
        time), `observed` against `expected` (the baseline: a rate, or a count for card testing
        and refunds), `limit` (the control limit that was crossed), `n` (the payments or
        refunds behind it) and `severity`; below the table, the window watched and each alert's
        explanation in one sentence. No rows: nothing crossed its limit in that window (with no
        payments or refunds to watch, the line says so instead).
        """),
        code(
            "alerts = analysis.monitor(payments, data.refunds_made, tz=data.tz)\n"
            'alerts.drop(columns="explanation")',
            check=True,
        ),
        code("print(analysis.describe_alerts(alerts, tz=data.tz))", check=True),
        md("""
        ## On a timeline

        One row per kind and scope; each bar runs from the alert's start to its end (red:
        `high`, orange: `medium`), a diamond marks each alert's middle (so a one-hour alert
        still shows), and the label gives what was observed against the usual.
        """),
        code("plots.monitor_timeline(alerts, tz=data.tz, origin=data)"),
        md("""
        ## The payments behind each alert (the first 5 of each)

        The payments in the alert's scope created between its start and end (for a refund
        spike, the refunds): every attempt, retries, successes and open ones too, so more rows
        than the alert's `n`, which counts what the monitor judged (first attempts for a decline
        spike, finished ones for an outage). `alert` is the alert's row above; the export below
        has them all.
        """),
        code("alert_payments(payments, data.refunds_made, alerts, limit=5)", check=True),
        md("""
        ## Explore (interactive runs; reports skip it)

        Pick another window (`window from`/`to`, local days; empty: the last 7 days) or keep
        one method, currency or bank; select an alert under *drill into* to list its payments;
        export what you see.
        """),
        code("""
            if interactive:
                display(monitor_dashboard(payments, data.refunds_made, tz=data.tz, origin=data))
            """),
        export(
            """
            tables = {"alerts": alerts, "alert_payments": alert_payments(payments, data.refunds_made, alerts)}
            """
        ),
    ],
    "06_data_quality.ipynb": [
        md("""
        # Data quality: can I trust these numbers?

        Every figure in the other notebooks rests on the cached payments and refunds agreeing
        with each other. These rules check that they do: each counts the rows that break it
        and names up to five of them, so a failing rule says where to look. A rule that fails
        on a fresh sync points at the gateway's data; one that fails only here and not after
        `gwtools sync --full` points at the cache. docs/monitoring.md describes each rule;
        `gwtools check` runs the same on the gateway's synced cache from a terminal (and exits 1
        when a rule fails, 2 when it cannot check).
        """),
        code(PARAMETERS, tags=("parameters",)),
        code(setup("from gwtools.widgets import quality_dashboard, quality_examples")),
        code("data", check=True),
        md("""
        ## The rules

        | rule | in an analyst's words |
        |---|---|
        | `refunded_amount_matches_refunds` | a payment's refunded amount is the sum of its succeeded and pending refunds (the gateway counts a refund when it is created and gives the amount back only if it fails) |
        | `refunded_flag_matches_amounts` | a payment is marked refunded exactly when its refunds cover what was captured |
        | `refund_payment_cached` | every refund's payment is in the payments table |
        | `captured_flag_matches_status` | money was captured exactly for the succeeded payments |
        | `refund_currency_matches_payment` | a refund is in its payment's currency |
        | `refunds_within_captured_amount` | no payment has more refunded than was captured |
        | `payment_ids_unique`, `refund_ids_unique` | no payment or refund is counted twice |
        | `no_hourly_holes` | no stretch of hours without a single payment where the usual traffic of those hours makes silence unlikely (a sign of a missed sync window or an outage of our own) |
        | `last_sync_complete` | the last sync read every page of both tables (from what the cache's last sync recorded; left out when the data comes from no cache, such as your own DataFrames) |

        With `since`/`until` set, the rules look at the chosen payments and their refunds;
        run the notebook over all dates to check every refund's payment.
        """),
        md("""
        ## Results

        `checked`: the rows a rule looked at (hours for holes, tables for
        `last_sync_complete`); `count`: the rows breaking it; `examples`: up to five of their
        ids (amounts in the examples below are minor units). These rules check that the tables
        agree, not how recent they are: the `data` output above says what the payments span
        and how the last sync went.
        """),
        code(
            "rules = analysis.quality(payments, refunds, completeness=data.states, tz=data.tz)\n"
            'rules.drop(columns="description")',
            check=True,
        ),
        code("plots.quality_rules(rules, origin=data)"),
        md("""
        ## The rows behind failing rules

        One row per example of each failing rule, with the fields the rules compare (for a
        duplicated id, every copy; for a hole, the hours). Empty when every rule holds.
        """),
        code("examples = quality_examples(rules, payments, refunds)\nexamples", check=True),
        md("""
        ## Explore (interactive runs; reports skip it)

        Narrow the payments by date, method, currency, status or bank and see which rules
        still fail; select a failing rule under *drill into* to list its rows.
        """),
        code("""
            if interactive:
                display(quality_dashboard(payments, refunds, tz=data.tz, origin=data))
            """),
        export(
            """
            tables = {"quality_rules": rules, "quality_examples": examples}
            """
        ),
    ],
}


def build() -> dict[Path, nbformat.NotebookNode]:
    """Every notebook, without outputs, by path."""
    built = {}
    for name, cells in NOTEBOOKS.items():
        nb = new_notebook(cells=cells)
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.metadata["language_info"] = {"name": "python"}
        built[HERE / name] = nb
    return built


def execute(nb: nbformat.NotebookNode) -> None:
    """Run a notebook with its default parameters (the embedded sandbox) in a scratch cache,
    so a cache left by earlier runs cannot change what the stored outputs show."""
    import tempfile

    from nbclient import NotebookClient

    with tempfile.TemporaryDirectory(prefix="gwtools-nb-cache-") as cache:
        # Inherited by the kernel: a scratch cache, and the demo's time zone.
        from gwtools._embedded import PINNED_NOW

        # The demo history ends where the test suite pins it, so nbval sees the same data.
        settings = {
            "GW_CACHE_DIR": cache,
            "GW_TIMEZONE": STORED_TIMEZONE,
            "GW_SANDBOX_NOW": PINNED_NOW.isoformat(),
        }
        old = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            NotebookClient(
                nb,
                timeout=600,
                kernel_name="python3",
                resources={"metadata": {"path": str(HERE)}},
                store_widget_state=False,  # dashboards come alive when run; no stale snapshots
            ).execute()
        finally:
            for name, value in old.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
    for cell in nb.cells:
        cell.metadata.pop("execution", None)


def keep_outputs(nb: nbformat.NotebookNode, stored: nbformat.NotebookNode) -> int:
    """Give each cell of ``nb`` the id of the ``stored`` cell at the same place (a small
    diff), and its outputs when their sources are the same; return how many code cells
    changed (they get no outputs). The notebook's metadata stays the stored one."""
    changed = 0
    nb.metadata = stored.metadata
    for i, cell in enumerate(nb.cells):
        old = stored.cells[i] if i < len(stored.cells) else None
        if old is not None and old.cell_type == cell.cell_type and "id" in old:
            cell.id = old.id
        if cell.cell_type != "code":
            continue
        if old is not None and old.cell_type == "code" and old.source == cell.source:
            cell.outputs = old.outputs
            cell.execution_count = old.execution_count
        else:
            changed += 1
    return changed


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="also run them and store outputs")
    mode.add_argument(
        "--keep-outputs",
        action="store_true",
        help="rebuild the sources only; unchanged cells keep their stored outputs",
    )
    parser.add_argument("names", nargs="*", help="only these notebooks (default: all)")
    args = parser.parse_args()
    for path, notebook in build().items():
        if args.names and path.name not in args.names:
            continue
        if args.execute:
            execute(notebook)  # raises on a failing cell: the stored notebook stays as it was
            print(f"executed {path.name}", file=sys.stderr)
        elif args.keep_outputs and path.exists():
            changed = keep_outputs(notebook, nbformat.read(path, as_version=4))
            print(
                f"{path.name}: {changed} changed code cells (no outputs until --execute)",
                file=sys.stderr,
            )
        nbformat.write(notebook, path)
