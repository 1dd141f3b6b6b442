"""The report's HTML: readable pandas tables (:func:`tidy_tables`), executed notebooks as
self-contained pages (:func:`export_html`), and the banner that marks sandbox data."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from gwtools.plots import SANDBOX_COLOUR, SANDBOX_NOTE

#: Text longer than this in a table cell wraps in a wide, left-aligned column (retry advice).
LONG_TEXT = 40
_MISSING = frozenset({"<NA>", "NaN", "NaT", "None", "nan"})

#: Styles of the tables :func:`tidy_tables` marks: compact, numbers on one line, long text
#: wrapped in a wide column, a scroll bar (not a cut) when a table is wider than the page.
TABLE_CSS = """
.gwtools-scroll {overflow-x: auto; max-width: 100%}
table.gwtools-table {border-collapse: collapse; border: none; font-size: 12px;
  table-layout: auto; margin: 4px 0 1em 0}
table.gwtools-table th, table.gwtools-table td {padding: 3px 6px; text-align: right;
  white-space: nowrap; vertical-align: top; border: none; line-height: 1.35}
table.gwtools-table thead th {white-space: normal; vertical-align: bottom;
  border-bottom: 1px solid #999}
table.gwtools-table td.gwtools-long {white-space: normal; min-width: 20em; max-width: 34em;
  text-align: left}
table.gwtools-table tbody tr:nth-child(odd) {background: #f4f6f8}
table.gwtools-table tbody tr:nth-child(even) {background: transparent}
"""


def _drop_unnamed_index(table: Any) -> None:
    """Remove pandas' index column when it is the unnamed 0, 1, 2…; a named index keeps its
    column, its name moved up into the header row (pandas gives it a row of its own)."""
    head = table.find("thead")
    body = table.find("tbody")
    if head is None or body is None:
        return
    header_rows = head.find_all("tr", recursive=False)
    body_rows = body.find_all("tr", recursive=False)
    if not header_rows:
        return
    # An empty table has no rows to tell an index by: pandas' corner alone marks it.
    leading = [row.find(["th", "td"], recursive=False) for row in body_rows]
    if not all(cell is not None and cell.name == "th" for cell in leading):
        return  # no index column, or a MultiIndex pandas spans over several rows
    if any(cell.has_attr("rowspan") for cell in leading):
        return
    corner = header_rows[0].find("th", recursive=False)
    if corner is None or corner.get_text(strip=True) or corner.has_attr("colspan"):
        return
    if len(header_rows) == 1:
        for row in [*header_rows, *body_rows]:
            row.find(["th", "td"], recursive=False).decompose()
        return
    names = header_rows[1].find_all(["th", "td"], recursive=False)
    if len(header_rows) == 2 and names and all(not c.get_text(strip=True) for c in names[1:]):
        corner.string = names[0].get_text()
        header_rows[1].decompose()


def _say_no_rows(table: Any, soup: Any) -> None:
    """An empty table's body: one row saying so, across the columns (a bare header read as
    a table that failed to show)."""
    body = table.find("tbody")
    if body is None or body.find("tr") is not None:
        return
    header = table.select("thead tr")
    columns = len(header[-1].find_all(["th", "td"], recursive=False)) if header else 1
    cell = soup.new_tag("td", attrs={"colspan": str(columns), "style": "text-align: left"})
    cell.string = "no rows"
    row = soup.new_tag("tr")
    row.append(cell)
    body.append(row)


def _classes(tag: Any) -> list[str]:
    return [c for value in tag.get_attribute_list("class") if value for c in str(value).split()]


def tidy_tables(markup: str) -> str:
    """The pandas tables in ``markup`` made readable (styled by :data:`TABLE_CSS`): the
    unnamed index column dropped, column names breakable after underscores, long text
    (:data:`LONG_TEXT`) wrapping in a wide column, missing values blank, and each table in
    a box that scrolls sideways rather than being cut. Other markup is left as it is."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(markup, "html.parser")
    tables = [
        t
        for t in soup.find_all("table")
        if {"dataframe", "gwtools-table"} & set(t.get_attribute_list("class"))
    ]
    if not tables:
        return markup
    for table in tables:
        _drop_unnamed_index(table)
        _say_no_rows(table, soup)
        for cell in table.select("thead th"):
            text = cell.get_text()
            if "_" in text and not cell.find(True):
                cell.clear()
                for i, part in enumerate(text.split("_")):
                    if i:
                        cell.append("_")
                        cell.append(soup.new_tag("wbr"))
                    cell.append(part)
        for cell in table.select("tbody td"):
            text = cell.get_text()
            if text.strip() in _MISSING:
                cell.string = ""
            elif len(text) > LONG_TEXT:
                cell["class"] = " ".join([*_classes(cell), "gwtools-long"])
        del table["border"]
        table["class"] = " ".join(
            [c for c in _classes(table) if c != "gwtools-table"] + ["gwtools-table"]
        )
        if table.parent is None or "gwtools-scroll" not in _classes(table.parent):
            table.wrap(soup.new_tag("div", attrs={"class": "gwtools-scroll"}))
    return str(soup)


def _tidy_outputs(notebook: Any) -> None:
    """Every HTML output of ``notebook`` through :func:`tidy_tables` (the report's copy only:
    the stored notebooks keep what the kernel displayed)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "text/html" in data:
                markup = data["text/html"]
                text = "".join(markup) if isinstance(markup, list) else markup
                data["text/html"] = tidy_tables(text)


#: JupyterLab's HTML template without its CDN scripts (require.js, MathJax, Mermaid): the
#: report opens offline and tells no third party that it was opened. Figures are inline PNGs.
_OFFLINE_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style>{{ resources.gwtools_css }}</style>{%- endblock extra_css -%}
{%- block body_header -%}{{ super() }}{{ resources.gwtools_banner }}{%- endblock body_header -%}
"""


def nav_bar(links: Sequence[tuple[str, str]], current: str | None = None) -> str:
    """A line of links between a report's pages (HTML): ``links`` are (file name, title)
    pairs, the page named ``current`` shown in bold rather than linked; empty for no links."""
    items = [
        f"<b>{html.escape(label)}</b>"
        if href == current
        else f'<a href="{html.escape(href)}">{html.escape(label)}</a>'
        for href, label in links
    ]
    if not items:
        return ""
    return (
        '<nav class="gwtools-nav" style="font-family: sans-serif; font-size: 13px; '
        f'margin: 0.5em 0 1em 0">{" · ".join(items)}</nav>'
    )


def export_html(
    notebook: Any,
    title: str,
    *,
    sandbox_data: bool = False,
    links: Sequence[tuple[str, str]] = (),
    current: str | None = None,
) -> str:
    """An executed notebook as the report's self-contained page: code hidden, no CDN
    scripts, tables tidied (:func:`tidy_tables`); with ``sandbox_data``, the
    :func:`sandbox_banner` on top; with ``links``, a :func:`nav_bar` to the report's other
    pages (``current``: this page's file name). Text about the notebook's stored outputs is
    left out, and text about the sandbox's demo history unless the data is the sandbox's
    (cells tagged ``stored-outputs`` and ``sandbox-demo``). ``notebook`` is changed in
    place."""
    import jinja2
    from nbconvert import HTMLExporter

    dropped = {"stored-outputs"} | (set() if sandbox_data else {"sandbox-demo"})
    notebook.cells = [
        c for c in notebook.cells if not dropped & set(c.get("metadata", {}).get("tags", []))
    ]
    _tidy_outputs(notebook)
    exporter = HTMLExporter(
        extra_loaders=[jinja2.DictLoader({"gwtools_report.html.j2": _OFFLINE_TEMPLATE})],
        template_file="gwtools_report.html.j2",
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(
        notebook,
        resources={
            "metadata": {"name": title},
            "gwtools_css": TABLE_CSS,
            "gwtools_banner": (sandbox_banner() if sandbox_data else "") + nav_bar(links, current),
        },
    )
    return str(body)


def sandbox_banner() -> str:
    """The "sandbox data" banner (HTML) on top of the report's pages when its data came from
    a sandbox: the first thing a reader sees, in the colour of the figures' note."""
    return (
        f'<div class="gwtools-sandbox" role="note" style="border: 2px solid {SANDBOX_COLOUR}; '
        f'color: {SANDBOX_COLOUR}; padding: 0.5em 1em; margin: 0.5em 0 1em 0; font-weight: bold">'
        f"{html.escape(SANDBOX_NOTE)}: every figure and table here comes from the sandbox "
        "gateway's generated demo history.</div>"
    )
