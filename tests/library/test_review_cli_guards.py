"""CLI guards: what a command says when its options point at the wrong place."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from gwtools.cli import main
from tests.library._shop import Shop


def _env(shop: Shop, cache: Path) -> dict[str, str]:
    return {"GW_API_KEY": shop.key, "GW_BASE_URL": shop.base_url, "GW_CACHE_DIR": str(cache)}


def test_a_dataset_folder_left_by_a_failed_first_sync_reads_as_nothing_cached(
    shop: Shop, tmp_path: Path
) -> None:
    # A first sync refused by the gateway (a revoked key here) leaves the dataset's folder
    # behind with its _sync.lock only; --no-refresh then took it for a cache and lost the
    # "check --account" hint a mistyped account gets when no folder was made.
    shop.card()
    env = _env(shop, tmp_path / "cache")
    runner = CliRunner()
    assert runner.invoke(main, ["sync", "--account", "shop"], env=env).exit_code == 0
    revoked = {**env, "GW_API_KEY": "sk_test_" + "z" * 24}
    failed = runner.invoke(main, ["sync", "--account", "shpo"], env=revoked)
    assert failed.exit_code == 1, failed.output
    left = tmp_path / "cache" / "shpo" / "test" / "payments"
    assert [p.name for p in left.iterdir()] == ["_sync.lock"]
    out = tmp_path / "p.csv"
    export = [
        "export",
        "payments",
        "--format",
        "csv",
        "--out",
        str(out),
        "--no-refresh",
        "--account",
        "shpo",
    ]
    result = runner.invoke(main, export, env=env)
    assert result.exit_code == 1 and not out.exists(), result.output
    assert "nothing cached for account 'shpo'" in result.stderr, result.stderr
    assert "check --account (e.g. --account shop)" in result.stderr, result.stderr
    assert revoked["GW_API_KEY"] not in result.output
