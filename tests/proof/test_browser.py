"""A dashboard served by Voila works in a real browser: widgets render, a filter changes the plot
and the table, and the page asks nothing of any machine but the loopback Voila server.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pytest

import gwtools

from ._browser import CHROMIUM_ARGS, PageLog, find_chromium, voila, write_notebook

if TYPE_CHECKING:
    from playwright.sync_api import Locator, Page

CHROMIUM = find_chromium()
# The page renders in ~4 s here (a whole test takes ~20 s beside the other xdist worker on
# 2 cores): a wide margin for slower CI machines, paid only by a test that fails anyway.
RENDER_TIMEOUT_S = 150

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(RENDER_TIMEOUT_S + 90),
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
BUTTONS: Part = ("button.jupyter-button", "outerHTML")
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


def _shoot(page: Page, element: Locator, path: Path) -> None:
    """A screenshot of ``element``, whole: Voila scrolls inside a box, so the viewport grows."""
    box = element.bounding_box(timeout=10_000)
    if box is not None and box["height"] + 40 > page.viewport_size["height"]:  # type: ignore[index]
        page.set_viewport_size({"width": 1280, "height": min(int(box["height"]) + 40, 8000)})
    element.screenshot(path=path, timeout=10_000)


def _why_not_rendered(page: Page, notebook: Path, parts: dict[str, Part], log: PageLog) -> str:
    """What the page and Voila's log say when the dashboard did not appear in time."""
    missing = [
        f"{name} ({selector})"
        for name, (selector, _) in parts.items()
        if page.query_selector(selector) is None
    ]
    outputs = page.eval_on_selector_all(
        "[data-mime-type*='stderr'], [data-mime-type*='error'], .jp-OutputArea-output pre",
        "els => els.map(e => e.innerText).join('\\n---\\n')",
    )
    voila_log = (notebook.parent / "voila.log").read_text(errors="replace")
    return (
        f"the dashboard did not render within {RENDER_TIMEOUT_S} s (screenshot: {notebook.parent}/timeout.png)\n"
        f"missing: {', '.join(missing)}\n{log.report()}\noutputs:\n{str(outputs)[-3000:]}\nvoila.log:\n{voila_log[-3000:]}"
    )


def _drive(
    notebook: Path,
    parts: dict[str, Part],
    change: Callable[[Page], None],
    *,
    fixed: dict[str, Part] | None = None,
    env: dict[str, str | None] | None = None,
    template: str = "gwtools",
) -> tuple[dict[str, str], dict[str, str], list[str], list[str]]:
    """Serve ``notebook`` with Voila (``env``: its environment changes), wait for ``parts``,
    ``change`` a filter, wait for every part to change. Screenshots before.png and after.png
    land beside the notebook.

    Returns the parts before (with the ``fixed`` ones, which need not change) and after,
    the page's JavaScript errors, and the requests that would have left loopback (refused).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    with voila(notebook, env=env, template=template) as url, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=30_000
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            log = PageLog(page)
            page.goto(url, wait_until="commit", timeout=30_000)
            # The kernel runs the notebook first: the parts appear once it has.
            try:
                page.wait_for_function(
                    "selectors => selectors.every(s => document.querySelector(s))",
                    arg=[selector for selector, _ in parts.values()],
                    polling=250,
                    timeout=RENDER_TIMEOUT_S * 1000,
                )
            except PlaywrightTimeout:
                page.screenshot(path=notebook.parent / "timeout.png", full_page=True)
                raise AssertionError(_why_not_rendered(page, notebook, parts, log)) from None
            before = _read(page, {**parts, **(fixed or {})})
            # The dashboard itself (the widget box around the plot), scrolled into view.
            dashboard = page.locator(next(iter(parts.values()))[0]).first.locator(
                "xpath=ancestor::div[contains(@class, 'widget-vbox')][last()]"
            )
            _shoot(page, dashboard, notebook.parent / "before.png")
            change(page)
            after = _wait_for_change(page, parts, before)
            _shoot(page, dashboard, notebook.parent / "after.png")
        finally:
            browser.close()
    return before, after, log.errors, log.outside


def test_harness_on_a_tiny_dashboard(tmp_path: Path) -> None:
    """The harness itself, on a plain ipywidgets page (a Dropdown, an Output plot, a table)."""

    def pick_b(page: Page) -> None:
        page.locator(".widget-dropdown select").select_option(label="B", timeout=10_000)

    fixed = {"python": KERNEL_PYTHON}
    notebook = write_notebook(tmp_path / "tiny.ipynb", TINY_DASHBOARD)
    before, after, errors, outside = _drive(notebook, TINY_PARTS, pick_b, fixed=fixed)

    # Voila's kernel (kernelspec argv "python") is this interpreter, with these packages.
    assert before["python"] == sys.executable

    assert before["plot"].startswith("data:image/png") and after["plot"] != before["plot"]
    assert before["table"].split() == ["bank", "amount", "A", "10", "A", "20"]
    assert after["table"].split() == ["bank", "amount", "B", "5", "B", "7", "B", "9"]
    assert not errors, errors
    assert outside == [], f"requests that left loopback: {outside}"


def test_the_guard_sees_what_the_stock_voila_page_fetches(tmp_path: Path) -> None:
    """Voila's own lab template links Font Awesome from a CDN: the request guard must see
    (and refuse) it, or its silence on the gwtools template would prove nothing."""

    def pick_b(page: Page) -> None:
        page.locator(".widget-dropdown select").select_option(label="B", timeout=10_000)

    notebook = write_notebook(tmp_path / "tiny.ipynb", TINY_DASHBOARD)
    *_, outside = _drive(notebook, TINY_PARTS, pick_b, template="lab")
    assert [u for u in outside if "fontawesome" in u], outside


NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _embedded_payments(
    cache: Path, env: dict[str, str | None], monkeypatch: pytest.MonkeyPatch
) -> pd.DataFrame:
    """The embedded sandbox's payments under ``env``, synced here into ``cache`` and read
    back with plain pandas."""
    for name, value in env.items():
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    gw = gwtools.connect(cache_dir=cache, progress=False)
    try:
        gw.payments()
    finally:
        gw.close()
    return pd.read_parquet(cache / "sandbox" / "test" / "payments")


def test_shipped_fpx_notebook_dashboard_bank_filter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """notebooks/04_fpx_banks.ipynb as shipped, on the embedded sandbox: pick a bank in its
    dashboard; the chart, the table and the drill-down show that bank only."""
    notebook = tmp_path / "04_fpx_banks.ipynb"
    shutil.copyfile(NOTEBOOKS / notebook.name, notebook)
    env: dict[str, str | None] = {
        "GW_API_KEY": None,  # neither key nor URL: the embedded, seeded sandbox
        "GW_BASE_URL": None,
        "GW_EXPORT_DIR": str(tmp_path / "exports"),
        "GW_SANDBOX_PAYMENTS": "1500",  # a smaller demo history: the notebook runs in seconds
    }
    picked: list[str] = []

    def pick_a_bank(page: Page) -> None:
        bank = page.locator(".widget-select-multiple", has=page.get_by_text("bank", exact=True))
        labels = bank.locator("option").all_inner_texts()
        picked.append(labels[len(labels) // 2])
        bank.locator("select").select_option(label=picked[0], timeout=10_000)

    fixed = {"buttons": BUTTONS}
    before, after, errors, outside = _drive(
        notebook, DASHBOARD_PARTS, pick_a_bank, fixed=fixed, env=env
    )

    # The kernel synced the embedded sandbox into a private cache of its own (gwtools.report,
    # whatever GW_CACHE_DIR says), but that sandbox's history is seeded: the same history,
    # synced here, is what the page showed.
    payments = _embedded_payments(tmp_path / "cache", env, monkeypatch)
    fpx = payments[payments["method_type"] == "fpx"]
    codes = set(fpx["fpx_bank_code"].dropna())
    code = re.search(r"\((\w+)\)$", picked[0])  # "Maybank2u (MB2U0227)", spaces may be nbsp
    assert code is not None and code[1] in codes and len(codes) > 2, (picked, codes)
    assert before["plot"] and after["plot"] != before["plot"]
    assert all(c in before["table"] for c in codes)
    for part in ("table", "drilldown"):
        assert code[1] in after[part]
        assert not [c for c in codes - {code[1]} if c in after[part]], after[part]
    header, row = after["table"].split("\n")[:2]
    shown = dict(zip(header.split("\t"), row.split("\t"), strict=True))
    assert shown["fpx_bank_code"] == code[1]
    assert int(shown["attempts"]) == (fpx["fpx_bank_code"] == code[1]).sum()
    assert not errors, errors
    # Offline-safe: no CDN asked for Font Awesome (or anything else); the export buttons
    # carry no icon that would need it.
    assert outside == [], f"requests that left loopback: {outside}"
    assert "\u2193 Export CSV" in before["buttons"] and "\u2193 Export Parquet" in before["buttons"]
    assert "fa-" not in before["buttons"], before["buttons"]
