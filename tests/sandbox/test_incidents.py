"""Incidents in the generated history, and the monitors on histories with and without them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

import gwtools
from gwtools import analysis
from gwtools.cli import main
from gwtools.sandbox import Sandbox, create_app, generate_history
from gwtools.sandbox.errors import SandboxConfigError

NOW = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
KINDS = {"card-testing": "card_testing", "bank-outage:RHB0218": "fpx_bank_outage",
         "decline-spike": "decline_spike"}  # fmt: skip


def _synced(tmp_path: Path, incidents: list[str]) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    with (
        Sandbox("B", rate_limits=False, seed_payments=9000, days=36, seed=3, now=NOW,
                incidents=incidents) as sb,
        gwtools.connect(sb.secret_key, sb.base_url, cache_dir=tmp_path, account="inc") as gw,
    ):  # fmt: skip
        gw.sync()
        return gw.payments(refresh=False), gw.refunds(refresh=False), sb.history or {}


def test_no_incident_no_alert(tmp_path: Path) -> None:
    payments, refunds, history = _synced(tmp_path, [])
    assert history["incidents"] == [] and len(payments) == 9000
    assert analysis.monitor(payments, refunds, tz="Asia/Kuala_Lumpur").empty
    # the history carries retries: orders with several attempts, some won back
    orders = analysis.orders(payments)
    assert (orders["attempts"] > 1).sum() > 100 and orders["recovered"].sum() > 50
    # and the retry advice holds: soft declines are won back more often than hard ones
    kinds = analysis.recovery(payments, by="decline_type").set_index("decline_type")["rate"]
    assert kinds["soft"] > kinds["hard"]


@pytest.mark.parametrize("incident", list(KINDS))
def test_each_incident_is_found(tmp_path: Path, incident: str) -> None:
    payments, refunds, history = _synced(tmp_path, [incident])
    (placed,) = history["incidents"]
    start, end = pd.Timestamp(placed["start"]), pd.Timestamp(placed["end"])
    assert NOW.timestamp() - 7 * 86400 <= start.timestamp() < end.timestamp() <= NOW.timestamp()
    alerts = analysis.monitor(payments, refunds, tz="Asia/Kuala_Lumpur")
    assert alerts["kind"].unique().tolist() == [KINDS[incident]]
    hit = alerts.iloc[0]
    assert hit["start"] < end and hit["end"] > start
    inside = payments[(payments["created_at"] >= start) & (payments["created_at"] < end)]
    if incident == "card-testing":
        small = inside[inside["amount"] <= 200]
        assert len(small) >= 300 and small["payment_method_id"].is_unique
        assert (small["outcome"] == "failed").mean() > 0.7
    elif incident == "decline-spike":
        cards = payments[payments["method_type"] == "card"]
        day = cards[(cards["created_at"] >= start) & (cards["created_at"] < end)]
        rest = cards.drop(day.index)
        rate = analysis.decline_rate(day)["rate"].iloc[0]
        assert rate >= 2 * analysis.decline_rate(rest)["rate"].iloc[0]
    else:
        bank = inside[inside["fpx_bank_code"] == "RHB0218"]
        assert len(bank) >= 20 and not (bank["status"] == "succeeded").any()


def test_same_seed_same_incidents() -> None:
    summaries = []
    for _ in range(2):
        app = create_app("B", now=NOW)
        summaries.append(generate_history(app, payments=300, days=10, seed=4,
                                          incidents=["card-testing", "decline-spike"]))  # fmt: skip
    assert summaries[0]["incidents"] == summaries[1]["incidents"]
    assert summaries[0]["payments"] == 300 + summaries[0]["incidents"][0]["payments"]


@pytest.mark.parametrize(
    ("incident", "message"),
    [
        ("meteor", "unknown incident 'meteor'"),
        ("bank-outage", "needs a bank code"),
        ("bank-outage:NOPE123", "unknown bank 'NOPE123'"),
        ("bank-outage:TEST0002", "a test bank"),
    ],
)
def test_bad_incidents_are_refused(incident: str, message: str) -> None:
    with pytest.raises(SandboxConfigError, match=message):
        Sandbox("B", seed_payments=10, incidents=[incident])
    result = CliRunner().invoke(
        main, ["sandbox", "--seed-payments", "10", "--incident", incident, "--port", "0"]
    )
    assert result.exit_code == 2 and message in result.output


def test_incidents_need_a_history() -> None:
    with pytest.raises(SandboxConfigError, match="seed_payments"):
        Sandbox("B", incidents=["card-testing"])


def test_the_sandbox_retries_the_declines_the_library_calls_soft() -> None:
    """The history's customers retry soft declines; the sandbox may not import the library's
    classification (docs/architecture.md: separate parts), so the two lists are kept equal by this test."""
    from gwtools._schema import SOFT_DECLINE_CODES
    from gwtools.sandbox.history import SOFT_REASONS

    assert SOFT_REASONS == SOFT_DECLINE_CODES
