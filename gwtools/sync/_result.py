"""What a sync reports: per resource and in total, as text, HTML and JSON-ready values.

:class:`SyncResult` is what :meth:`gwtools.Gateway.sync` returns; each resource's
:class:`ResourceResult` carries its completeness report (:meth:`ResourceResult.report`), which
the sync also writes into the dataset's state. :class:`GatewayDataWarning` is how a sync (and
the cache) says that data was only partly usable.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from html import escape
from typing import Any

__all__ = ["GatewayDataWarning", "ResourceResult", "SyncResult"]


class GatewayDataWarning(UserWarning):
    """The gateway sent data gwtools could only partly use (unknown status, rejected records)."""


#: The warnings that say cached data is partial: no sync of it completed, or a part file
#: cannot be read (the readers leave its rows out). Both name the cache's folder.
_PARTIAL_CACHE = (".* are partial: ", ".* cannot be read .*rows are missing")


def hold_back_incompleteness(*, sync: bool = True) -> None:
    """From now on, no warning that the cache is partial, nor (``sync``) that a sync was
    incomplete. Every other warning still shows. A notebook kernel holds back the first kind
    only: its first output (:class:`gwtools.report.Tables`) says the cache is partial without
    naming its local folder, while the sync's own warning names no folder and says why."""
    for pattern in (("the sync is incomplete",) if sync else ()) + _PARTIAL_CACHE:
        warnings.filterwarnings("ignore", pattern, GatewayDataWarning)


@contextlib.contextmanager
def incompleteness_said() -> Iterator[None]:
    """No warning that a sync was incomplete or a cache is partial, for a caller that says so
    itself (an exit status, a report's data line); every other warning still shows."""
    with warnings.catch_warnings():
        hold_back_incompleteness()
        yield


@dataclass
class ResourceResult:
    """What a sync did for one resource."""

    resource: str
    #: rows as received (a row read twice, as variant B's windows meeting on a shared page
    #: do, counts twice); new + updated + unchanged count distinct ids
    fetched: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    rejected: int = 0
    requests: int = 0
    rate_limited: int = 0
    retries: int = 0
    seconds: float = 0.0
    mode: str = "full"  # or "incremental"
    strategy: str = ""
    api_variant: str | None = None
    reread_by_id: int = 0
    complete: bool = True
    #: rows in the list pages kept (completeness report; a page fetched again counts once)
    listed: int = 0
    #: rows the gateway said its lists hold (variant A's meta.total; None in variant B)
    expected: int | None = None
    #: list pages that came back short, and pages fetched again
    short_pages: int = 0
    refetched: int = 0
    #: rejected records by why
    rejects_by_reason: dict[str, int] = field(default_factory=dict)
    #: why the sync of this resource is incomplete (empty when complete)
    problems: list[str] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        """The completeness report: rows listed vs expected, requests, retries, rejects, why."""
        return {name: copy.copy(getattr(self, name)) for name in _REPORT}

    def to_dict(self) -> dict[str, Any]:
        """Every field as a plain value; those of the report only under ``"report"``."""
        rest = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _REPORT}
        return {**rest, "report": self.report()}


#: The fields of the completeness report (:meth:`ResourceResult.report`), in its order.
_REPORT = (
    "complete",
    "listed",
    "expected",
    "requests",
    "retries",
    "rate_limited",
    "short_pages",
    "refetched",
    "rejected",
    "rejects_by_reason",
    "problems",
)


_FIELDS = ("fetched", "new", "updated", "unchanged", "rejected")
_HTTP = ("requests", "rate_limited", "retries")


@dataclass
class SyncResult:
    """What :meth:`Gateway.sync` did: rows and requests, per resource and in total.

    ``rate_limited`` is the number of 429 answers received. Prints as a small table, in a
    terminal and in Jupyter.
    """

    resources: dict[str, ResourceResult] = field(default_factory=dict)
    seconds: float = 0.0

    def _sum(self, name: str) -> int:
        return sum(int(getattr(r, name)) for r in self.resources.values())

    fetched = property(lambda self: self._sum("fetched"))
    new = property(lambda self: self._sum("new"))
    updated = property(lambda self: self._sum("updated"))
    unchanged = property(lambda self: self._sum("unchanged"))
    rejected = property(lambda self: self._sum("rejected"))
    requests = property(lambda self: self._sum("requests"))
    rate_limited = property(lambda self: self._sum("rate_limited"))
    retries = property(lambda self: self._sum("retries"))

    @property
    def complete(self) -> bool:
        """Whether every resource was listed completely (see :attr:`problems`)."""
        return all(r.complete for r in self.resources.values())

    @property
    def problems(self) -> list[str]:
        """Why the sync is incomplete, one line each (empty when complete)."""
        return [p for r in self.resources.values() for p in r.problems]

    @property
    def report(self) -> dict[str, dict[str, Any]]:
        """Per resource: rows listed vs expected, requests, retries, rejects and why."""
        return {name: r.report() for name, r in self.resources.items()}

    @property
    def rows_per_second(self) -> float:
        return self.fetched / self.seconds if self.seconds > 0 else 0.0

    def _rows(self) -> list[list[str]]:
        head = ["resource", "mode", *_FIELDS, "requests", "429s", "retries", "seconds"]
        rows = [head]
        for r in self.resources.values():
            rows.append(
                [
                    r.resource,
                    r.mode,
                    *(f"{getattr(r, f):,}" for f in (*_FIELDS, *_HTTP)),
                    f"{r.seconds:.2f}",
                ]
            )
        if len(self.resources) > 1:
            rows.append(
                [
                    "total",
                    "",
                    *(f"{getattr(self, f):,}" for f in (*_FIELDS, *_HTTP)),
                    f"{self.seconds:.2f}",
                ]
            )
        return rows

    def __str__(self) -> str:
        rows = self._rows()
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(
                c.rjust(w) if i > 1 else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            )
            for r in rows
        ]
        return "\n".join(lines) + self._note()

    def _note(self) -> str:
        if self.complete:
            return ""
        why = "".join(f"\n  - {p}" for p in self.problems)
        return (
            "\nincomplete: the high-water mark was not advanced; the next sync lists the "
            f"affected range again{why}"
        )

    def _report_html(self) -> str:
        head = ["resource", "listed", "expected", "short pages", "re-fetched", "rejects"]
        cells = []
        for r in self.resources.values():
            why = ", ".join(f"{k}: {v:,}" for k, v in sorted(r.rejects_by_reason.items()))
            cells.append(
                [
                    r.resource,
                    f"{r.listed:,}",
                    "" if r.expected is None else f"{r.expected:,}",
                    f"{r.short_pages:,}",
                    f"{r.refetched:,}",
                    f"{r.rejected:,}" + (f" ({why})" if why else ""),
                ]
            )
        rows = "".join(
            "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in cells
        )
        th = "".join(f"<th>{escape(c)}</th>" for c in head)
        return (
            "<details><summary>completeness</summary>"
            f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table></details>"
        )

    def _repr_html_(self) -> str:
        rows = self._rows()
        head = "".join(f"<th>{escape(c)}</th>" for c in rows[0])
        body = "".join(
            "<tr>"
            + "".join(
                f"<td style='text-align:{'left' if i < 2 else 'right'}'>{escape(c)}</td>"
                for i, c in enumerate(r)
            )
            + "</tr>"
            for r in rows[1:]
        )
        note = ""
        if not self.complete:
            items = "".join(f"<li>{escape(p)}</li>" for p in self.problems)
            note = (
                "<p><b>incomplete</b>: the high-water mark was not advanced; the next sync "
                f"lists the affected range again</p><ul>{items}</ul>"
            )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        return table + note + self._report_html()

    def __repr__(self) -> str:
        return (
            f"SyncResult(fetched={self.fetched}, new={self.new}, updated={self.updated}, "
            f"unchanged={self.unchanged}, rejected={self.rejected}, requests={self.requests}, "
            f"rate_limited={self.rate_limited}, retries={self.retries}, seconds={self.seconds:.2f}, "
            f"complete={self.complete})"
        )

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready values (``gwtools sync --json`` prints this)."""
        return {
            "complete": self.complete,
            "problems": self.problems,
            "seconds": self.seconds,
            **{f: getattr(self, f) for f in (*_FIELDS, *_HTTP)},
            "resources": {k: v.to_dict() for k, v in self.resources.items()},
        }
