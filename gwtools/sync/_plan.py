"""The plan of an incremental sync: where to list from, and how to re-read the rows still open.

An incremental sync lists the rows created since a cutoff, and must also re-read every cached
row still in a non-final state, plus every payment whose refunds are new or changed (a refund
changes its payment's ``refunded``/``refunded_amount``). Those re-reads are done by listing
from an earlier creation time, by status-filtered lists, or by retrieving ids one by one,
whichever needs fewest requests (:func:`choose_cutoff`; a status list is priced by how many of
its rows its first page shows still in the status).

Pure: functions over plain data (the cached rows' ids, statuses and creation times, the page
info of probed first pages); no HTTP, no clock, no files. The run (``_run.py``) reads the
cache, fetches the pages the plan asks for, and carries the plan out, in four steps:

1. :func:`survey`: the cached rows still open, per status, created before the default cutoff
   (the high-water mark minus the overlap); the rows to re-read whatever their status.
2. :meth:`Survey.to_probe`: the statuses whose list's first page is worth a look first.
3. :meth:`Survey.plan`: with those pages, the cutoff to list from and, per status, whether to
   list it or retrieve its rows by id (a :class:`_Plan`).
4. :meth:`_Plan.leftover`: once the lists are read, what none of them returned: a range to
   list again where that is cheaper (:func:`_relist_from`), and the ids to retrieve.

Times are integers (microseconds since the epoch, UTC) throughout.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gwtools import _schema
from gwtools._schema import Resource
from gwtools.http._paging import PAGE_LIMIT, list_cost
from gwtools.http._wire import PageInfo

__all__ = [
    "DEFAULT_OVERLAP",
    "Leftover",
    "OpenGroup",
    "Survey",
    "choose_cutoff",
    "columns",
    "created_us",
    "default_cutoff",
    "open_statuses",
    "survey",
]

#: Rows created this long before the high-water mark are listed again, in case the gateway
#: committed them late or clocks disagree.
DEFAULT_OVERLAP = dt.timedelta(minutes=10)
#: A status with fewer old open rows is retrieved by id without probing its list.
_PROBE_MIN_ROWS = 2


@dataclass
class OpenGroup:
    """Cached rows in one open status created before the default cutoff, as priced for
    :func:`choose_cutoff` (creation times as sorted integers).

    ``left`` rows fell within the span of the status list's first page but were not on it:
    they left the status, and only a listing or a retrieve by id re-reads them. Of the
    ``unknown`` rows, a share ``stay`` is expected to still be in the status, and the rest of
    the status list returns them for ``rest`` more requests; the others are retrieved by id.
    ``rest=None``: the list was not probed, and costs what listing the rows that stay costs.
    """

    unknown: np.ndarray
    left: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))
    stay: float = 1.0
    rest: float | None = None

    def costs(
        self, options: np.ndarray, variant: str | None, page_limit: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(requests by id, requests by the status list) to re-read the rows before each option."""
        unknown = np.searchsorted(self.unknown, options, side="left")
        left = np.searchsorted(self.left, options, side="left")
        rest = (
            list_cost(unknown * self.stay, variant, page_limit) if self.rest is None else self.rest
        )
        by_status = np.where(unknown > 0, rest + (1 - self.stay) * unknown, 0) + left
        return unknown + left, by_status


def choose_cutoff(
    cached_created: np.ndarray,
    candidate_created: np.ndarray,
    default: np.int64 | int,
    page_limit: int = PAGE_LIMIT,
    open_created: np.ndarray | None = None,
    *,
    groups: Sequence[OpenGroup] = (),
    variant: str | None = None,
) -> int:
    """The creation time to list from so that re-reading what may have changed costs fewest requests.

    Listing from ``c`` costs what :func:`list_cost` says for the cached rows created at or
    after ``c``. Before ``c``, every candidate costs one retrieve by id, and the open rows of
    each status (``groups``; ``open_created``: one status whose rows all stay) cost their
    status-filtered list or their retrieves by id, whichever is cheaper. ``c`` is at most
    ``default`` (the high-water mark minus the overlap); listing from the oldest cached row
    is an option, so the plan never costs more than a fresh full listing. Times are integers.
    """
    cached = np.sort(cached_created)
    cands = np.sort(candidate_created[candidate_created < default])
    groups = list(groups)
    if open_created is not None:
        groups.append(OpenGroup(np.sort(open_created[open_created < default])))
    points: list[np.ndarray] = [cands, np.array([default]), cached[:1]]
    points += [g.unknown for g in groups] + [g.left for g in groups]
    options = np.unique(np.concatenate(points).astype(np.int64))
    options = options[options <= default]
    listed = len(cached) - np.searchsorted(cached, options, side="left")
    cost = list_cost(listed, variant, page_limit) + np.searchsorted(cands, options, side="left")
    for g in groups:
        cost = cost + np.minimum(*g.costs(options, variant, page_limit))
    best = len(cost) - 1 - int(np.argmin(cost[::-1]))  # on a tie, the latest: fewer rows listed
    return int(options[best])


def _relist_from(
    created: np.ndarray, todo: np.ndarray, until: int, variant: str | None
) -> int | None:
    """Where listing again up to ``until`` beats retrieving the ``todo`` rows by id, if anywhere.

    Listing from ``x`` re-reads every ``todo`` row created at or after ``x``; the others are
    retrieved by id. ``created``: every cached row's creation time, sorted.
    """
    todo = np.sort(todo)
    if len(todo) == 0:
        return None
    listed = np.searchsorted(created, until, side="left") - np.searchsorted(
        created, todo, side="left"
    )
    cost = list_cost(listed, variant) + np.arange(len(todo))
    best = len(cost) - 1 - int(np.argmin(cost[::-1]))  # on a tie, the latest: fewer rows listed
    return int(todo[best]) if cost[best] < len(todo) else None


@dataclass
class _Status:
    """The cached rows of one open status created before the cutoff, and how to re-read them."""

    status: str  # as the gateway names it (the filter value)
    rows: dict[str, int]  # id -> creation time
    #: the first page of the status's list, from its oldest row to the default cutoff
    probe: PageInfo | None = None
    by_list: bool = False  # list the rest of the status (else: retrieve the rows not seen)

    @property
    def first(self) -> dt.datetime:
        """The oldest row's creation time: where the status's list starts."""
        return from_us(min(self.rows.values()))


def _page_ids(info: PageInfo) -> set[str]:
    return {i for i in info.ids if i is not None}


def _probed_group(s: _Status, variant: str | None) -> OpenGroup:
    """What the first page of a status's list says about its cached rows (see OpenGroup).

    Cached rows within the page's time span that are not on it have left the status. For the
    older ones, variant A's total says how many rows are still in the status. Variant B gives
    no total; its first page holds the newest rows, the ones most likely to have moved on, so
    their share would overstate how many older rows left: those are expected to stay (the
    rows left over are relisted or retrieved by id after the lists, see :func:`_relist_from`).
    """
    created = np.sort(np.array(list(s.rows.values()), dtype=np.int64))
    info = s.probe
    if info is None:  # not probed, or not listable: only by id
        return OpenGroup(created, stay=0.0, rest=0.0)
    on_page = _page_ids(info)
    complete = not info.has_more if info.variant == "B" else (info.total_pages or 1) <= 1
    stamps = [t for t in (info.first_created, info.last_created) if t is not None]
    # A complete list spans all the rows; otherwise the page spans its own time range.
    low = us(min(stamps)) if stamps and not complete else np.iinfo(np.int64).min
    unseen = [c for i, c in s.rows.items() if i not in on_page]
    left = np.sort(np.array([c for c in unseen if c >= low], dtype=np.int64))
    unknown = np.sort(np.array([c for c in unseen if c < low], dtype=np.int64))
    if complete:
        return OpenGroup(unknown, left, stay=1.0, rest=0.0)
    if info.variant == "A":
        still = max(0, (info.total or 0) - info.count)  # in the status, older than the page
        stay = min(1.0, still / len(unknown)) if len(unknown) else 1.0
        return OpenGroup(unknown, left, stay=stay, rest=float(info.total_pages or 1))
    return OpenGroup(unknown, left, stay=1.0, rest=float(list_cost(len(unknown), variant)))


@dataclass
class Leftover:
    """What the lists of an incremental sync did not return, and how to re-read it."""

    #: list ``[relist_from, since)`` again (None: nothing worth listing again)
    relist_from: dt.datetime | None
    #: ids to retrieve one by one
    by_id: list[str]


@dataclass
class _Plan:
    """What an incremental sync re-reads besides the rows created since ``since``."""

    #: list the rows created from here on (the chosen cutoff)
    since_us: int
    #: the default cutoff: status lists stop there (later rows are in the main listing)
    until_us: int
    variant: str | None
    #: creation times of every cached row, sorted (what listing a range costs)
    created: np.ndarray
    #: cached rows to re-read whatever their status (payments whose refunds changed): id -> created
    extra: dict[str, int]
    #: ids to re-read that are not cached: only their id is known
    unknown: list[str]
    #: open statuses with rows before the cutoff, or with a probed page (its rows are kept)
    statuses: list[_Status]

    @property
    def since(self) -> dt.datetime:
        return from_us(self.since_us)

    @property
    def until(self) -> dt.datetime:
        return from_us(self.until_us)

    def leftover(self, seen: Collection[str]) -> Leftover:
        """Once the status lists returned the ids ``seen``: old open rows not returned and the
        plan's other rows go by id or, where that is cheaper, by listing their creation range
        again (up to ``since``, where the main listing starts)."""
        todo = dict(self.extra)
        for s in self.statuses:
            todo.update((i, c) for i, c in s.rows.items() if i not in seen)
        start = _relist_from(
            self.created, np.array(list(todo.values()), dtype=np.int64), self.since_us, self.variant
        )
        if start is not None:
            todo = {i: c for i, c in todo.items() if c < start}
        relist = None if start is None else from_us(start)
        return Leftover(relist, sorted(todo) + self.unknown)


@dataclass
class Survey:
    """The cached rows an incremental sync must re-read, before any request is made."""

    #: the default cutoff: the high-water mark minus the overlap
    default: int
    variant: str | None
    #: creation times of every cached row, sorted
    created: np.ndarray
    #: cached rows to re-read whatever their status: id -> created
    extra: dict[str, int]
    #: ids to re-read that are not cached
    unknown: list[str]
    #: per open status (by name), its rows created before the default cutoff
    statuses: list[_Status]

    @property
    def until(self) -> dt.datetime:
        """The default cutoff as a time: where the status lists stop."""
        return from_us(self.default)

    def _cutoff(self, groups: Sequence[OpenGroup]) -> int:
        extra = np.array(list(self.extra.values()), dtype=np.int64)
        return choose_cutoff(self.created, extra, self.default, groups=groups, variant=self.variant)

    def to_probe(self) -> list[str]:
        """The statuses whose list's first page (from the oldest row to the default cutoff)
        should be fetched before choosing, in order.

        A status whose rows the cutoff covers even if they all stay (its list at its
        cheapest) needs no probe, nor does one with a single row (retrieved by id).
        """
        optimistic = self._cutoff(
            [OpenGroup(np.sort(list(s.rows.values()))) for s in self.statuses]
        )
        return [
            s.status
            for s in self.statuses
            if len(s.rows) >= _PROBE_MIN_ROWS and min(s.rows.values()) < optimistic
        ]

    def plan(self, probes: Mapping[str, PageInfo]) -> _Plan:
        """Choose, given the first pages ``probes`` of the statuses' lists (by status; a status
        whose list could not be read is absent): the cutoff, and per status list or by id."""
        statuses = [dataclasses.replace(s, probe=probes.get(s.status)) for s in self.statuses]
        groups = [_probed_group(s, self.variant) for s in statuses]
        chosen = self._cutoff(groups)
        at = np.array([chosen], dtype=np.int64)
        for s, g in zip(statuses, groups, strict=True):
            by_id_cost, by_status_cost = g.costs(at, self.variant, PAGE_LIMIT)
            s.by_list = s.probe is not None and bool(by_status_cost[0] < by_id_cost[0])
            s.rows = {i: c for i, c in s.rows.items() if c < chosen}
        return _Plan(
            since_us=chosen,
            until_us=self.default,
            variant=self.variant,
            created=self.created,
            extra={i: c for i, c in self.extra.items() if c < chosen},
            unknown=self.unknown,
            statuses=[s for s in statuses if s.rows or s.probe],
        )


def columns(resource: Resource) -> list[str]:
    """The cached columns :func:`survey` reads."""
    # Refunds have no status_raw: their raw and canonical statuses are the same words.
    raw = "status_raw" if resource == "payments" else "status"
    return list(dict.fromkeys(["id", "status", raw, "created_at"]))


def open_statuses(resource: Resource) -> list[str]:
    """The canonical statuses whose rows an incremental sync re-reads."""
    return sorted(
        _schema.OPEN_PAYMENT_STATUSES if resource == "payments" else _schema.OPEN_REFUND_STATUSES
    )


def default_cutoff(high_water: str, overlap: dt.timedelta) -> int:
    """Where an incremental sync lists from unless re-reads make an earlier start cheaper."""
    return us(dt.datetime.fromisoformat(high_water) - overlap)


def survey(
    cached: pa.Table,
    resource: Resource,
    *,
    high_water: str,
    overlap: dt.timedelta,
    variant: str | None,
    extra_ids: Collection[str] = (),
    created: np.ndarray | None = None,
) -> Survey:
    """What an incremental sync of ``resource`` must re-read, from the cached rows
    (``cached``: the :func:`columns` of every cached row) and the last sync's high-water mark.

    ``extra_ids``: rows to re-read whatever their status (payments whose refunds changed).
    ``created``: the cached rows' creation times from the earliest row to re-read (or the
    default cutoff, if earlier) on; given, ``cached`` need hold only the rows in an open
    status and those of ``extra_ids``, which is what a sync reads of a large cache.
    """
    default = default_cutoff(high_water, overlap)
    raw = "status_raw" if resource == "payments" else "status"  # the gateway's word
    is_open = pc.is_in(
        cached.column("status"), value_set=pa.array(open_statuses(resource), pa.large_string())
    )
    old_open = cached.filter(pc.and_(is_open, pc.less(created_us(cached), default)))
    extra = cached.filter(
        pc.is_in(cached.column("id"), value_set=pa.array(sorted(extra_ids), pa.large_string()))
    )
    extra_at = dict(zip(extra.column("id").to_pylist(), created_us(extra).tolist(), strict=True))
    rows: dict[str, dict[str, int]] = {}  # status -> id -> created
    for ident, status, at in zip(
        old_open.column("id").to_pylist(),
        old_open.column(raw).to_pylist(),
        created_us(old_open).tolist(),
        strict=True,
    ):
        rows.setdefault(status, {})[ident] = at
    return Survey(
        default=default,
        variant=variant,
        created=np.sort(created_us(cached) if created is None else created),
        extra=extra_at,
        unknown=sorted(i for i in extra_ids if i not in extra_at),
        statuses=[_Status(status, r) for status, r in sorted(rows.items())],
    )


def created_us(table: pa.Table) -> np.ndarray:
    """A table's ``created_at`` as integers (microseconds since the epoch, UTC)."""
    at: np.ndarray = table.column("created_at").cast(pa.int64()).to_numpy()
    return at


def us(t: dt.datetime) -> int:
    """A time as microseconds since the epoch."""
    return int(t.timestamp() * 1_000_000)


def from_us(at: int) -> dt.datetime:
    """Microseconds since the epoch as a UTC time."""
    return dt.datetime.fromtimestamp(at / 1_000_000, dt.UTC)
