"""A dashboard served by Voila works in a real browser: widgets render, a filter changes the plot
and the table.
"""

from __future__ import annotations

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

# Where the dashboard's parts live in the rendered page.
PLOT_IMAGES = ".jp-OutputArea-output img, .widget-output img, .jupyter-widgets img"
TABLES = ".jp-OutputArea-output table, .widget-html table, .jupyter-widgets table"
WIDGETS = ".jupyter-widgets"

TINY_DASHBOARD = """
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
display(widgets.VBox([choice, plot, table]))
"""


def _snapshot(page: Page) -> tuple[list[str], str]:
    images = page.eval_on_selector_all(PLOT_IMAGES, "els => els.map(e => e.src)")
    tables = page.eval_on_selector_all(TABLES, "els => els.map(e => e.innerText).join('\\n')")
    return images, tables


def test_tiny_dashboard_filter_changes_plot_and_table(tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    notebook = write_notebook(tmp_path / "dashboard.ipynb", TINY_DASHBOARD)
    with voila(notebook) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=30_000
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url, timeout=30_000)
            page.wait_for_selector(f"{WIDGETS} select", timeout=40_000)
            page.wait_for_selector(PLOT_IMAGES, timeout=20_000)
            page.wait_for_selector(TABLES, timeout=20_000)
            before_images, before_table = _snapshot(page)
            page.screenshot(path=tmp_path / "before.png", full_page=True)

            page.select_option(f"{WIDGETS} select", label="B")
            page.wait_for_function(
                """([sel, old]) => {
                    const srcs = [...document.querySelectorAll(sel)].map(e => e.src);
                    return srcs.length > 0 && srcs.join() !== old.join();
                }""",
                arg=[PLOT_IMAGES, before_images],
                timeout=20_000,
            )
            page.wait_for_function(
                "([sel, old]) => [...document.querySelectorAll(sel)]"
                ".map(e => e.innerText).join('\\n') !== old",
                arg=[TABLES, before_table],
                timeout=20_000,
            )
            after_images, after_table = _snapshot(page)
            page.screenshot(path=tmp_path / "after.png", full_page=True)
        finally:
            browser.close()

    assert before_images and after_images and before_images != after_images
    assert "10" in before_table and "5" not in before_table.split()
    assert "5" in after_table.split() and "10" not in after_table.split()
    assert not errors, errors
