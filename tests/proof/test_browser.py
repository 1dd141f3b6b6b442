"""A dashboard served by Voila works in a real browser: widgets render, a filter changes the plot
and the table.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._browser import CHROMIUM_ARGS, find_chromium, voila, write_notebook

if TYPE_CHECKING:
    from playwright.sync_api import Page

CHROMIUM = find_chromium()

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(90),
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium binary (looked at $GW_CHROMIUM, /usr/bin/chromium, PATH); "
        "install Debian's chromium as .ci/run does",
    ),
]

# A dashboard part: (CSS selector, property of the matching elements that shows its content).
Part = tuple[str, str]
TINY_PARTS: dict[str, Part] = {
    "plot": (".widget-output img", "src"),
    "table": (".widget-html table", "innerText"),
}
KERNEL_PYTHON: Part = (".kernel-python", "innerText")
# gwtools.widgets.Dashboard: VBox[..., summary, image, table, drill, drilldown, ...]
DASHBOARD_PARTS: dict[str, Part] = {
    "plot": ("img.widget-image", "src"),
    "table": ("img.widget-image + .widget-html", "innerText"),
    "drilldown": (".widget-vbox > .widget-dropdown + .widget-html", "innerText"),
}
_READ_PARTS = """parts => Object.fromEntries(Object.entries(parts).map(([name, [sel, prop]]) =>
    [name, [...document.querySelectorAll(sel)].map(e => e[prop] || "").join("\\n")]))"""


def _read(page: Page, parts: dict[str, Part]) -> dict[str, str]:
    state: dict[str, str] = page.evaluate(_READ_PARTS, parts)
    return state


def _wait_for_change(page: Page, parts: dict[str, Part], before: dict[str, str]) -> dict[str, str]:
    """Until every part shows something and differs from ``before``; then its new content."""
    page.wait_for_function(
        f"""([parts, before]) => {{
            const now = ({_READ_PARTS})(parts);
            return Object.keys(parts).every(k => now[k] !== "" && now[k] !== before[k]);
        }}""",
        arg=[parts, before],
        timeout=20_000,
    )
    return _read(page, parts)


TINY_DASHBOARD = """
import sys

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

frame = pd.DataFrame({"bank": ["A", "A", "B", "B", "B"], "amount": [10, 20, 5, 7, 9]})
choice = widgets.Dropdown(options=["A", "B"], value="A", description="Bank")
plot, table = widgets.Output(), widgets.HTML()

def render(_=None):
    rows = frame[frame["bank"] == choice.value]
    with plot:
        plot.clear_output(wait=True)
        fig, ax = plt.subplots(figsize=(4, 2))
        ax.bar(range(len(rows)), rows["amount"])
        plt.show()
    table.value = rows.to_html(index=False)

choice.observe(render, names="value")
render()
python = widgets.HTML(f"<code class='kernel-python'>{sys.executable}</code>")
display(widgets.VBox([choice, plot, table, python]))
"""


def _drive(
    tmp_path: Path,
    source: str,
    parts: dict[str, Part],
    change: Callable[[Page], None],
    fixed: dict[str, Part] | None = None,
) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Serve ``source`` as a notebook, wait for ``parts``, ``change`` a filter, wait for every
    part to change. Screenshots before.png and after.png land in ``tmp_path``.

    Returns the parts before (with the ``fixed`` ones, which need not change) and after,
    and the page's JavaScript errors.
    """
    from playwright.sync_api import sync_playwright

    notebook = write_notebook(tmp_path / "dashboard.ipynb", source)
    errors: list[str] = []
    with voila(notebook) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=30_000
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url, timeout=30_000)
            # The kernel runs the notebook first: the parts appear once it has.
            for selector, _ in parts.values():
                page.wait_for_selector(selector, timeout=45_000)
            before = _read(page, {**parts, **(fixed or {})})
            page.screenshot(path=tmp_path / "before.png", full_page=True)
            change(page)
            after = _wait_for_change(page, parts, before)
            page.screenshot(path=tmp_path / "after.png", full_page=True)
        finally:
            browser.close()
    return before, after, errors


def test_harness_on_a_tiny_dashboard(tmp_path: Path) -> None:
    """The harness itself, on a plain ipywidgets page (a Dropdown, an Output plot, a table)."""

    def pick_b(page: Page) -> None:
        page.locator(".widget-dropdown select").select_option(label="B", timeout=10_000)

    fixed = {"python": KERNEL_PYTHON}
    before, after, errors = _drive(tmp_path, TINY_DASHBOARD, TINY_PARTS, pick_b, fixed)

    # Voila's kernel (kernelspec argv "python") is this interpreter, with these packages.
    assert before["python"] == sys.executable

    assert before["plot"].startswith("data:image/png") and after["plot"] != before["plot"]
    assert before["table"].split() == ["bank", "amount", "A", "10", "A", "20"]
    assert after["table"].split() == ["bank", "amount", "B", "5", "B", "7", "B", "9"]
    assert not errors, errors


FPX_DASHBOARD = """
import pandas as pd
from IPython.display import display

from gwtools._schema import conform
from gwtools.widgets import fpx_dashboard

BANKS = [("MB2U0227", "Maybank2u"), ("BCBB0235", "CIMB Clicks"), ("PBB0233", "Public Bank")]
rows = [
    {
        "id": f"pay_{i:024d}", "api_variant": "A", "livemode": False,
        "status": "failed" if i % 5 == 0 else "succeeded", "status_raw": "x",
        "outcome": "failed" if i % 5 == 0 else "succeeded",
        "amount": 1000 + i, "currency": "MYR", "amount_major": (1000 + i) / 100,
        "method_type": "fpx", "fpx_bank_code": BANKS[i % 3][0], "fpx_bank": BANKS[i % 3][1],
        "created_at": pd.Timestamp("2026-01-01", tz="UTC") + pd.Timedelta(hours=7 * i),
    }
    for i in range(120)
]
payments = conform(pd.DataFrame(rows), "payments")
display(fpx_dashboard(payments, tz="Asia/Kuala_Lumpur", export_dir="exports"))
"""


def test_fpx_dashboard_bank_filter_changes_plot_and_table(tmp_path: Path) -> None:
    def pick_public_bank(page: Page) -> None:
        bank = page.locator(".widget-select-multiple", has=page.get_by_text("bank", exact=True))
        bank.locator("select").select_option(label="Public Bank (PBB0233)", timeout=10_000)

    before, after, errors = _drive(tmp_path, FPX_DASHBOARD, DASHBOARD_PARTS, pick_public_bank)

    banks = ("MB2U0227", "BCBB0235", "PBB0233")
    assert before["plot"] and after["plot"] != before["plot"]
    assert all(code in before["table"] and code in before["drilldown"] for code in banks)
    for part in ("table", "drilldown"):
        assert "PBB0233" in after[part]
        assert "MB2U0227" not in after[part] and "BCBB0235" not in after[part]
    # 120 payments, every third at Public Bank: 40 attempts, of which i % 5 == 0 failed (8).
    assert after["table"].split("\n")[1].split("\t")[:3] == ["PBB0233", "Public Bank", "40"]
    assert not errors, errors
