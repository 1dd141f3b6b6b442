"""``gwtools sync`` and ``gwtools export``: the library's sync and cache on the command line.

The API key comes from ``GW_API_KEY`` or from a file (``--api-key-file``), never from an
argument: arguments end up in shell history and in every process listing. Examples::

    GW_API_KEY=… GW_BASE_URL=https://api.example.com gwtools sync
    gwtools sync --api-key-file ~/.config/gw/key --base-url https://api.example.com --full
    gwtools export payments --format csv --out payments.csv --since 2024-05-01 --status failed
"""

from __future__ import annotations

import contextlib
import shlex
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, cast

import click
from click.core import ParameterSource

from gwtools.cli import AnswersInJson, JsonAnswer, reader_gone, require_extra
from gwtools.cli._dates import check_date, created_span, not_before
from gwtools.cli._paths import oserror_line, out_file
from gwtools.cli._source import check_source_folder, source_advice

if TYPE_CHECKING:
    pass

Resource = Literal["payments", "refunds"]

_RESOURCES = ("payments", "refunds")


def _reject_key_argument(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is not None:
        raise click.UsageError(
            "an API key is never accepted as a command-line argument (it would be kept in shell "
            "history and shown in process listings); set GW_API_KEY or use --api-key-file PATH",
            ctx=ctx,
        )


def _read_key_file(path: str | None) -> str | None:
    from gwtools.secrets import hide_key

    if path is None:
        return None
    p = Path(path).expanduser()
    try:
        # The file's text never is a local of this frame (a traceback may show its locals),
        # and its lines are held hidden: shown masked.
        lines = [hide_key(line) for line in _key_lines(p)]
    except OSError as exc:
        raise click.BadParameter(
            f"cannot read {p}: {exc.strerror}", param_hint="--api-key-file"
        ) from None
    except UnicodeDecodeError:
        # (from None: the error's .object holds the file's bytes, the key among them)
        raise click.BadParameter(
            f"{p} is not UTF-8 text (saved as UTF-16?): save it as UTF-8 (or plain ASCII), "
            "one line holding the secret key",
            param_hint="--api-key-file",
        ) from None
    if len(lines) != 1:
        raise click.BadParameter(
            f"{p} must hold exactly one non-empty line: the secret key", param_hint="--api-key-file"
        )
    return lines[0]


def _key_lines(path: Path) -> list[str]:
    """The lines of a key file that are neither blank nor ``#`` comments, stripped."""
    # utf-8-sig: a byte-order mark (some Windows editors write one) is not part of the key.
    text = path.read_text(encoding="utf-8-sig")
    return [
        ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]


def _check_key_file(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an empty ``--api-key-file`` (``--api-key-file "$KEY_FILE"``, the variable unset):
    it would read as the working directory ("cannot read ."), or, with ``--source``, which
    refuses the option, as no option given at all."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            f"--api-key-file {shlex.quote(value)} is empty: give the file holding the secret "
            "key, or leave --api-key-file out (GW_API_KEY, else the embedded sandbox)",
        )
    return value


def gateway_options_given(
    api_key_file: str | None, base_url: str | None, cache_dir: str | None
) -> bool:
    """Whether an option choosing a gateway's cache was given, empty too (``--base-url
    "$URL"``, the variable unset): with ``--source`` it is refused, not dropped unsaid."""
    return any(v is not None for v in (api_key_file, base_url, cache_dir))


def _check_account(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an empty ``--account`` (``--account "$ACCOUNT"`` with the variable unset): with
    ``--source`` it would read as no account given (every account of the folder), or as an
    account that holds nothing."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            f"--account {shlex.quote(value)} is empty: it names an account's folder in the "
            "cache; give a name, e.g. --account shop-my, or leave --account out",
        )
    from gwtools.secrets import redact

    if value is not None and redact(value) != value:  # (redact masks what is shaped as a key)
        raise click.BadParameter(
            "--account looks like an API key: it names a folder of the cache, and a key is "
            "never written to disk; give the key by GW_API_KEY or --api-key-file, and name the "
            "account plainly, e.g. --account shop-my",
        )
    return value


def _check_cache_dir(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Refuse an empty ``--cache-dir`` (``--cache-dir "$DIR"`` with the variable unset), which
    would put a second cache in the working directory instead of GW_CACHE_DIR's."""
    if value is not None and not value.strip():
        raise click.BadParameter(
            f"--cache-dir {shlex.quote(value)} is empty: give the cache's folder (. for the "
            "working directory), or leave --cache-dir out for GW_CACHE_DIR's",
        )
    if value is not None:
        why = _url_not_folder(value, "--cache-dir")
        if why:
            raise click.BadParameter(why)
    return value


def _url_not_folder(given: str, option: str) -> str | None:
    """Why a cache folder given as a URL (``s3://bucket/gw``) is refused, or None: the cache a
    sync writes, and the one these options name, is a local folder (a URL would become one
    named ``s3:`` in the working directory); a cache on shared storage is read with --source."""
    if "://" not in given:
        return None
    return (
        f"{option} {given} is a URL, but the cache folder is local (a sync writes it there): give "
        "a local folder; to read a cache on shared storage as it is, give its URL as --source "
        f"to gwtools export or gwtools report (e.g. --source {given})"
    )


def connection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The options every command that talks to the gateway shares."""
    options = [
        click.option(
            "--api-key",
            hidden=True,
            expose_value=False,
            callback=_reject_key_argument,
            is_eager=True,
            help="Not accepted: use GW_API_KEY or --api-key-file.",
        ),
        click.option(
            "--api-key-file",
            type=click.Path(dir_okay=False),
            callback=_check_key_file,
            help="File holding the secret key (else GW_API_KEY).",
        ),
        click.option(
            "--base-url",
            help="Gateway address (else GW_BASE_URL; neither key nor URL: embedded sandbox).",
        ),
        click.option(
            "--cache-dir",
            # A file given here is refused by _cache_folder as GW_CACHE_DIR's is: one line.
            type=click.Path(path_type=str),
            callback=_check_cache_dir,
            metavar="DIRECTORY",
            help="Cache directory (else GW_CACHE_DIR, else the user cache directory).",
        ),
        click.option(
            "--account",
            callback=_check_account,
            help="Name of the cache directory for this account (default: a hash of the key).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _connect(
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
    progress: bool | None = None,
) -> Any:
    import gwtools

    try:
        return _open_gateway(api_key_file, base_url, cache_dir, account, progress)
    except gwtools.GatewayError as exc:
        raise click.ClickException(str(exc)) from None


def _open_gateway(
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
    progress: bool | None = None,
) -> Any:
    """:func:`_connect`, with what ``gwtools.connect`` refuses (a publishable key, a base URL
    that is not one) raised as the library's error, for a caller that says it its own way."""
    import gwtools

    key = _read_key_file(api_key_file)
    with contextlib.suppress(gwtools.GatewayError):  # connect() says what is wrong with those
        _cache_folder(key, base_url, cache_dir, account)  # a file there: before anything starts
    _refuse_a_cache_inside_a_cache(cache_dir)
    try:
        return gwtools.connect(
            key, base_url, cache_dir=cache_dir, account=account, progress=progress
        )
    except gwtools.ConfigurationError as exc:
        if exc.code != "missing_extra":
            raise
        # connect()'s advice names its api_key= argument; a command's user sets variables.
        command = click.get_current_context().command_path
        require_extra(
            "sandbox",
            f"{command} with no GW_API_KEY and GW_BASE_URL (the embedded sandbox; set both, or "
            "give --api-key-file and --base-url, for a real gateway)",
        )
        raise


#: The gateway's fields of a failed sync's JSON object (null for other errors).
_GATEWAY_FIELDS = ("http_status", "code", "param", "request_id")


class _SyncCommand(AnswersInJson):
    # a usage error's object has a failed sync's fields, so that a script reads one shape
    json_error_fields: ClassVar[Mapping[str, Any]] = {
        "complete": False,
        **dict.fromkeys(_GATEWAY_FIELDS),
    }


@click.command(cls=_SyncCommand)
@connection_options
@click.option(
    "--resource",
    "resources",
    type=click.Choice(_RESOURCES),
    multiple=True,
    help="Resource to sync (repeatable; default both, which also brings payments refunded "
    "since the last sync up to date).",
)
@click.option("--full", is_flag=True, help="List everything and make the cache equal to it.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Show a progress bar (default: on big interactive syncs).",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the result and its completeness report as JSON instead of a table.",
)
def sync(
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
    resources: tuple[str, ...],
    full: bool,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Bring the local Parquet cache of payments and refunds up to date.

    Exits with status 3 when the sync is incomplete (a page stayed short or unreadable, rows
    did not add up, an id was damaged): the next sync lists the affected range again.
    """
    import json

    from gwtools import CacheError, GatewayError

    def failed(exc: GatewayError | OSError) -> NoReturn:
        # (a CacheError is both: the library's own words; another OSError, a file or folder
        # in the cache it could not use, in the words its Error: line would have)
        message = str(exc) if isinstance(exc, GatewayError) else oserror_line(exc)
        # with --json, printed by the command class (redacted, as all)
        said = {k: getattr(exc, k, None) for k in _GATEWAY_FIELDS}
        answer = {"complete": False, "error": type(exc).__name__, "message": message, **said}
        raise JsonAnswer(message, answer) from None

    try:  # a key or address connect() refuses is a failed sync too (a pk_ key, no base URL)
        gw = _open_gateway(api_key_file, base_url, cache_dir, account, progress)
    except GatewayError as exc:
        failed(exc)
    except click.ClickException as exc:
        if exc.exit_code != 1:  # a usage error (status 2): not a failed sync
            raise
        failed(CacheError(exc.message))  # a file where the cache folder goes
    try:
        with _incompleteness_said():  # reported below (and by the exit status), not twice
            result = gw.sync(resources or _RESOURCES, full=full)
    except (GatewayError, OSError) as exc:
        failed(exc)
    finally:
        gw.close()
    if as_json:
        click.echo(json.dumps({**result.to_dict(), "cache": str(gw.cache_path)}, indent=2))
    else:
        click.echo(str(result))
        click.echo(f"cache: {gw.cache_path}")
    if not result.complete:
        if not as_json:
            click.echo(
                "gwtools sync: incomplete (see above); the next sync lists the affected range "
                "again",
                err=True,
            )
        raise SystemExit(3)


def _scan_cache(
    resource: Resource,
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
) -> Any:
    """A lazy table over the dataset a sync with the same options fills, with no connection:
    without a key that is the embedded sandbox's cache, and nothing is started to read it.
    Lazy, so commands over years of history never load it whole."""
    import gwtools

    folder = _cached_folder(resource, api_key_file, base_url, cache_dir, account)
    return gwtools.scan_cache(folder, resource)


def _cached_folder(
    resource: Resource,
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
) -> Path:
    """The cache folder a sync with the same options fills (its ``resource`` must be cached),
    found with no connection: without a key, the embedded sandbox's, and nothing is started."""
    import os

    import gwtools

    key = _read_key_file(api_key_file)
    try:
        folder = _cache_folder(key, base_url, cache_dir, account)
    except gwtools.GatewayError as exc:
        raise click.ClickException(str(exc)) from None
    if (
        key is None
        and base_url is None
        and not os.environ.get("GW_API_KEY", "")
        and not (os.environ.get("GW_BASE_URL", ""))
    ):
        source = "the embedded sandbox (no GW_API_KEY/GW_BASE_URL)"
    else:
        source = f"account {folder.parent.name!r} in {folder.name} mode"
    if not gwtools.cache_state(folder, resource) and not _holds_months(folder / resource):
        ctx = click.get_current_context(silent=True)
        also = (
            ", or export without --no-refresh (which syncs before exporting)"
            if ctx is not None and ctx.info_name == "export"
            else ""
        )
        chosen = _given_cache_dir(cache_dir)
        top = _cache_above(Path(chosen[0])) if chosen else None
        if chosen and top is not None:  # a sync "with the same options" would nest a cache
            given, option = chosen
            source_too = f", or --source {given}" if also else ""
            raise click.ClickException(
                f"nothing cached for {source} under {folder / resource}: {given} is a folder "
                f"inside the cache {top} (an account's, a mode's, a dataset's or a month's): "
                f"{option} {top}, the folder `gwtools sync` filled{source_too}"
            )
        others = _other_accounts(folder, resource) if account is not None else []
        if others:  # a mistyped --account: a sync would fetch everything into a new folder
            names = ("accounts " if len(others) > 1 else "account ") + ", ".join(
                repr(a) for a in others
            )
            raise click.ClickException(
                f"nothing cached for account {account!r} in {folder.name} mode: no {resource} "
                f"under {folder / resource}; {folder.parent.parent} holds {names} in "
                f"{folder.name} mode: check --account (e.g. --account {others[0]}), or run "
                f"`gwtools sync` with the same options to start a cache for {account!r}{also}."
            )
        raise click.ClickException(
            f"nothing cached yet for {source}: no {resource} under {folder / resource}. Run "
            f"`gwtools sync` with the same options first{also}."
        )
    return folder


def _holds_months(dataset: Path) -> bool:
    """Whether ``dataset`` (a dataset's folder) holds anything but the sync's bookkeeping
    (``_sync.lock``, ``_rejects.jsonl``, hidden temporaries): a first sync the gateway refused
    (a 401, a mistyped --account) leaves the folder with its lock alone, which is no cache."""
    try:
        return any(not p.name.startswith(("_", ".")) for p in dataset.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:  # (unreadable: the reader that follows says why, with what to do)
        return True


def _other_accounts(folder: Path, resource: Resource) -> list[str]:
    """The other accounts whose ``resource`` the cache holding ``folder`` (an account's mode
    folder) caches in the same mode."""
    root, mode = folder.parent.parent, folder.name
    try:
        return sorted(
            a.name
            for a in root.iterdir()
            if a != folder.parent and (a / mode / resource / "_state.json").is_file()
        )
    except OSError:  # (the advice is a courtesy: the error it goes with is said anyway)
        return []


def _cache_above(given: Path) -> Path | None:
    """The cache folder ``given`` lies in when it is an account's, a mode's or a dataset's
    folder of a cache (``{cache}/{account}/{mode}/{resource}``), or any folder inside a
    dataset (a month's), else None: a listing at most two folders deep and a look at the
    folders above, a few ``stat`` calls."""
    # ~ as the library reads it ("~/…" quoted in a script, or GW_CACHE_DIR's)
    given = given.expanduser().absolute()
    # inside a dataset: a folder above is one, with its _state.json
    for folder in given.parents:
        if folder.name in _RESOURCES and (folder / "_state.json").is_file():
            return folder.parents[2] if len(folder.parents) > 2 else None
    # k folders between given and a dataset's _state.json (0: given is the dataset's folder,
    # 1: a mode's, 2: an account's), so the cache is 3 - k folders above given
    for k in range(3):
        pattern = "/".join(["*"] * k + ["_state.json"])
        if any(p.parent.name in _RESOURCES for p in given.glob(pattern)):
            return given.parents[2 - k] if len(given.parents) > 2 - k else None
    return None


def _given_cache_dir(cache_dir: str | None) -> tuple[str, str] | None:
    """The cache folder the user gave (``--cache-dir``, else ``GW_CACHE_DIR``), and how to
    name that way in advice ("give --cache-dir", "set GW_CACHE_DIR to"); None if neither."""
    import os

    if cache_dir is not None:
        return cache_dir, "give --cache-dir"
    given = os.environ.get("GW_CACHE_DIR")
    return (given, "set GW_CACHE_DIR to") if given else None


def _refuse_a_cache_inside_a_cache(cache_dir: str | None) -> None:
    """Refuse, before a sync starts, a cache folder given inside an existing cache (its
    account's, mode's, dataset's or a month's folder): the sync would start a second cache
    there, whose Parquet files, inside a dataset, its readers would take for cached rows."""
    given = _given_cache_dir(cache_dir)
    top = _cache_above(Path(given[0])) if given else None
    if given is None or top is None:
        return
    raise click.ClickException(
        f"{given[0]} is a folder inside the cache {top} (an account's, a mode's, a dataset's "
        f"or a month's), where a sync would start a second cache inside the first: "
        f"{given[1]} {top}, the folder `gwtools sync` filled"
    )


def _cache_folder(
    key: str | None, base_url: str | None, cache_dir: str | None, account: str | None
) -> Path:
    """The cache folder of these options (gwtools.cache_path), refused in one line when a file
    stands where it or a folder above it goes (--cache-dir or GW_CACHE_DIR naming a file):
    before any sync starts, and instead of "nothing cached yet" advice that would not help."""
    import gwtools

    chosen = _given_cache_dir(cache_dir)
    why = _url_not_folder(chosen[0], "GW_CACHE_DIR") if chosen and cache_dir is None else None
    if why:  # (--cache-dir's is refused as it is read, a usage error)
        raise click.ClickException(why)
    folder = gwtools.cache_path(key, base_url, cache_dir=cache_dir, account=account)
    for step in (folder, *folder.parents):
        if step.exists():
            if not step.is_dir():
                given = "--cache-dir" if cache_dir is not None else "GW_CACHE_DIR"
                raise click.ClickException(
                    f"{step} is a file, not a folder: the cache goes in {folder}; give "
                    f"{given} a folder (or a path where one can be made)"
                )
            break
    return folder


def partial_reasons(states: dict[str, dict[str, Any]]) -> list[str]:
    """Why the cached data whose ``_state.json`` files these are is known to be partial (the
    library's word for it: no sync of it ever completed, or its last sync was incomplete), one
    line per dataset; empty when nothing says so."""
    reasons = []
    for resource, state in states.items():
        report = state.get("completeness")
        problems = report.get("problems") if isinstance(report, dict) else None
        if isinstance(report, dict) and report.get("complete") is False:
            first = f": {problems[0]}" if problems else ""
            more = f" (and {len(problems) - 1} more)" if problems and len(problems) > 1 else ""
            reasons.append(f"the last sync of the cached {resource} was incomplete{first}{more}")
        elif not (state.get("high_water") or state.get("last_full_sync")):
            reasons.append(f"no sync of the cached {resource} has completed")
        if unreadable := state.get("unreadable_files"):
            path, why = next(iter(unreadable.items()))
            more = f" (and {len(unreadable) - 1} more)" if len(unreadable) > 1 else ""
            reasons.append(
                f"{path} cannot be read ({why}){more}, so its rows are missing: run gwtools "
                "sync, which moves it aside to _quarantine and fetches its month again"
            )
    return reasons


def _guarded_note(guarded: dict[str, int]) -> str:
    cells = sum(guarded.values())
    columns = ", ".join(f"{c} ({n:,})" for c, n in guarded.items())
    return (
        f"gwtools export: {cells:,} text {'cell' if cells == 1 else 'cells'} starting with "
        f"= + - @ or a tab/CR written with a leading ' so that spreadsheets do not run them as "
        f"formulas, in {columns}; --no-formula-guard writes the exact text"
    )


def exit_partial(command: str, output: str, reasons: list[str]) -> NoReturn:
    """Say why the data ``command`` read is partial and exit 3, as after an incomplete sync:
    ``output`` is written, but a job must not take it for the whole."""
    click.echo(
        f"gwtools {command}: {'; '.join(reasons)}, so rows may be missing from {output}; run "
        "gwtools sync to complete the cache.",
        err=True,
    )
    raise SystemExit(3)


#: File name endings that say a format: what they name, and the --format writing it (None:
#: one gwtools export does not write).
_NAMED_AS: dict[str, tuple[str, str | None]] = {
    ".csv": ("CSV", "csv"),
    ".parquet": ("Parquet", "parquet"),
    ".pq": ("Parquet", "parquet"),
    ".xlsx": ("an Excel workbook", None),
    ".xlsm": ("an Excel workbook", None),
    ".xls": ("an Excel workbook", None),
    ".ods": ("an OpenDocument spreadsheet", None),
    ".json": ("JSON", None),
    ".jsonl": ("JSON", None),
    ".ndjson": ("JSON", None),
    ".tsv": ("tab-separated text", None),
    ".feather": ("Arrow/Feather", None),
    ".arrow": ("Arrow/Feather", None),
}
_EXCEL = (".xlsx", ".xlsm", ".xls", ".ods")


@click.command()
@click.argument("resource", type=click.Choice(_RESOURCES))
@click.option("--format", "fmt", type=click.Choice(["csv", "parquet"]), required=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    required=True,
    callback=out_file,
    help="File to write ('-' for standard output, CSV only).",
)
@click.option("--since", help="Only rows created at or after this date/time (UTC if naive).")
@click.option("--until", help="Only rows created before this date/time.")
@click.option("--status", multiple=True, help="Only these canonical statuses (repeatable).")
@click.option(
    "--refresh/--no-refresh",
    default=True,
    help="Sync before exporting (default), or read the cache as it is: nothing is contacted "
    "or started.",
)
@click.option(
    "--source",
    help="Export from this synced cache instead, read as it is with nothing synced: a folder "
    "(the cache, an account's or the dataset's) or a URL (s3://…, any fsspec protocol).",
)
@click.option(
    "--formula-guard/--no-formula-guard",
    default=True,
    help="CSV: write a text cell starting with = + - @ or a tab/CR with a leading ' so that "
    "spreadsheets do not run it as a formula (default), or write the exact text (CSV for "
    "programs). Parquet always holds the exact text.",
)
@click.option(
    "--encoding",
    type=click.Choice(["utf-8", "utf-8-sig"]),
    default="utf-8",
    show_default=True,
    help="CSV: utf-8-sig puts a byte-order mark first, which Excel on Windows needs to show "
    "non-ASCII text (Café, bank names) as written rather than as mojibake.",
)
@connection_options
def export(
    resource: str,
    fmt: str,
    out: str,
    since: str | None,
    until: str | None,
    status: tuple[str, ...],
    refresh: bool,
    source: str | None,
    formula_guard: bool,
    encoding: str,
    api_key_file: str | None,
    base_url: str | None,
    cache_dir: str | None,
    account: str | None,
) -> None:
    """Write canonical payments or refunds to CSV or Parquet, streamed from the cache in
    batches (any size, never the whole table in memory).

    Exits with status 3 when the sync before it is incomplete, or the cache read as it is
    (--no-refresh, --source) is known partial: the file holds what the cache holds, and the
    next sync finishes the job.
    """
    from gwtools import (
        ConfigurationError,
        GatewayError,
        cache_state,
        check_export_path,
        check_filters,
        scan_cache,
        write_table,
    )

    for option, value in (("--since", since), ("--until", until)):
        if value is not None:  # named as typed, with the formats taken
            check_date(value, option, option)
    try:  # the library's own check of --status/--since/--until, before anything starts
        where = check_filters(resource, since, until, list(status) or None)
    except ConfigurationError as exc:
        if exc.param == "since" and since is not None and until is not None:
            raise click.BadParameter(not_before(since, until), param_hint="--since") from None
        refused = str(exc)
        listed = [p.strip() for s in status if "," in s for p in s.split(",") if p.strip()]
        if exc.param == "status" and listed:  # `--status a,b`: the option repeats instead
            refused += "; give " + " ".join(f"--status {shlex.quote(p)}" for p in listed)
        raise click.BadParameter(refused, param_hint=f"--{exc.param}") from None
    if out == "-" and fmt != "csv":
        raise click.BadParameter("standard output takes CSV only", param_hint="--out")
    if encoding != "utf-8" and fmt != "csv":
        raise click.BadParameter(
            f"--encoding {encoding} is for CSV: Parquet stores its text as UTF-8 itself; leave "
            "--encoding out, or give --format csv",
            param_hint="--encoding",
        )
    suffix = Path(out).suffix.lower()
    said, its_format = _NAMED_AS.get(suffix, (None, None))
    if out != "-" and said is not None and its_format != fmt:
        # a file named for another format fails in whatever opens it by its name next
        # (Excel refuses CSV text in a .xlsx: "the file format or extension is not valid")
        other = f"give --format {its_format}, or " if its_format else ""
        raise click.BadParameter(
            f"{out} is named as {said} but --format is {fmt}: {other}give a file name ending "
            f".{fmt}" + (" (Excel opens CSV files)" if suffix in _EXCEL else ""),
            param_hint="--out",
        )
    try:  # what write_table refuses (compressed, a folder, inside a cache): before any sync
        check_export_path(out if out != "-" else sys.stdout, fmt)
    except ConfigurationError as exc:
        raise click.ClickException(str(exc)) from None
    kind = cast("Resource", resource)
    if source is not None and gateway_options_given(api_key_file, base_url, cache_dir):
        raise click.BadParameter(
            "--source reads that cache as it is: leave out --api-key-file, --base-url and "
            "--cache-dir (--account still chooses among the accounts it holds)",
            param_hint="--source",
        )
    given = click.get_current_context().get_parameter_source("refresh")
    if source is not None and refresh and given is ParameterSource.COMMANDLINE:
        # (--no-refresh is what --source does anyway)
        raise click.BadParameter(
            "--source reads that cache as it is, syncing nothing: leave out --refresh, or "
            "leave out --source to sync the gateway's own cache and export it",
            param_hint="--source",
        )
    if source is not None:
        check_source_folder(source, "or leave --source out to sync and export the gateway's own")
    problems: list[str] | None = None  # why the sync before the export was incomplete
    partial: list[str] = []  # why the cache read as it is is known partial
    cache: tuple[str | Path, str | None]  # the cache read, and its account: said on no rows
    try:
        if source is not None:
            cache = (source, account)
            with _incompleteness_said():  # said below (and by the exit status), not twice
                table = scan_cache(source, kind, account=account, since=where[0],
                                   until=where[1], status=where[2])  # fmt: skip
            # (the dataset scan_cache found: --account picks it in a folder of any level)
            partial = partial_reasons({kind: cache_state(source, kind, account=account)})
        elif refresh:
            # An incomplete sync is said below (and by the exit status), not twice.
            with _connect(api_key_file, base_url, cache_dir, account) as gw, _incompleteness_said():
                try:  # As payments() does: a payment's refunded_amount moves with its refunds.
                    result = gw.sync(
                        ("payments", "refunds") if kind == "payments" else ("refunds",)
                    )
                except GatewayError as exc:
                    instead = (
                        f"add --no-refresh to export the {kind} cached by the last sync in "
                        f"{gw.cache_path}, as they are, contacting nothing"
                    )
                    said = sync_failed(exc, gw.cache_path, kind, "export", instead)
                    raise click.ClickException(said) from None
                if not result.complete:
                    problems = result.problems
                table = gw.scan(kind, *where)  # (partial only when the sync was not complete)
                cache = (gw.cache_path, None)
        else:
            folder = _cached_folder(kind, api_key_file, base_url, cache_dir, account)
            cache = (folder, None)
            with _incompleteness_said():  # said below (and by the exit status), not twice
                table = scan_cache(folder, kind, since=where[0], until=where[1], status=where[2])
            partial = partial_reasons({kind: cache_state(folder, kind)})
        guarded: dict[str, int] = {}  # cells quoted against spreadsheet formulas, per column
        options: dict[str, Any] = {
            "formula_guard": formula_guard,
            "guarded": guarded,
            "encoding": encoding,
        }
        try:
            if out == "-":
                with _utf8_stdout() as stream:
                    count = write_table(table, stream, "csv", **options)
            else:  # /dev/stdout or a named pipe as well: a file never raises BrokenPipeError
                count = write_table(table, out, fmt, **options)
        except BrokenPipeError:
            reader_gone()  # (`| head`, or the reader of a FIFO --out): stop quietly
        if out != "-":
            click.echo(f"wrote {_counted(count, resource)} to {out}", err=True)
        if guarded:  # the text was changed: never silently
            click.echo(_guarded_note(guarded), err=True)
        if count == 0:  # not a silent failure: what was asked, and what there is
            with _incompleteness_said():
                said = _no_rows(kind, cache, (since, until, status), where)
            output = "standard output holds" if out == "-" else f"{out} holds"
            click.echo(f"gwtools export: {said}; {output} the column names only", err=True)
    except (GatewayError, ValueError) as exc:
        advice = source_advice(exc, source, "export", account) if source else None
        raise click.ClickException(advice or str(exc)) from None
    if problems is not None:
        exit_incomplete("export", "it", "the file", problems)
    if partial:
        exit_partial("export", "standard output" if out == "-" else out, partial)


def sync_failed(
    exc: Exception, folder: Path, resource: Resource, command: str, instead: str
) -> str:
    """The error of the sync before ``command``, with ``instead``, the way to use what the
    cache holds, when a sync has filled its ``resource`` before: the gateway may be down, the
    network or a key gone, while the rows the last sync fetched are there. Only for the
    gateway's own errors: one about the cache (a CacheError) would stop that way too."""
    import gwtools

    gateway_errors = (
        gwtools.APIConnectionError,
        gwtools.AuthenticationError,
        gwtools.InvalidRequestError,
        gwtools.RateLimitError,
        gwtools.APIError,
    )
    if not isinstance(exc, gateway_errors):
        return str(exc)
    try:
        cached = bool(gwtools.cache_state(folder, resource))
    except (OSError, ValueError):  # (the advice is a courtesy: the error is said anyway)
        cached = False
    if not cached:
        return str(exc)
    return f"{exc} (the {command}'s sync failed; {instead})"


@contextlib.contextmanager
def _utf8_stdout() -> Iterator[Any]:
    """Standard output as the CSV file is written: UTF-8, lines as pandas ends them, whatever
    the locale's encoding (a latin-1 or Windows console would fail on the first character it
    lacks, half-way through the rows) or its newline translation."""
    import io

    buffer = getattr(sys.stdout, "buffer", None)
    sys.stdout.flush()
    # (a text-only stream put in its place is written as it takes text)
    wrapper = None if buffer is None else io.TextIOWrapper(buffer, encoding="utf-8", newline="")
    try:
        yield sys.stdout if wrapper is None else wrapper
    except BrokenPipeError:
        reader_gone()  # before the wrapper below lets go of it, flushing
    finally:
        if wrapper is not None:  # standard output stays open: let go of it, not close it
            wrapper.detach()


def _no_rows(
    resource: Resource,
    cache: tuple[str | Path, str | None],
    given: tuple[str | None, str | None, tuple[str, ...]],
    where: Any,
) -> str:
    """Why an export holds no rows: the filters given (as typed, and as the UTC times they
    are) and what the cache read holds, e.g. ``0 payments matched --since 2030-01-01 (created
    at or after 2030-01-01 00:00:00 UTC) in data/cache; it holds 2,000 payments created
    2026-08-22 00:01 to 2026-11-20 05:59 UTC``."""
    import pandas as pd

    from gwtools import scan_cache

    since, until, status = given
    asked = []
    if since is not None:
        asked.append(f"--since {shlex.quote(since)} (created at or after {_utc(where[0])})")
    if until is not None:
        asked.append(f"--until {shlex.quote(until)} (created before {_utc(where[1])})")
    if status:  # as the library reads them (FAILED: failed)
        asked.append(" ".join(f"--status {shlex.quote(s)}" for s in where[2] or status))
    location, account = cache
    place = f"{location}" + (f" (--account {account})" if account else "")
    if not asked:
        return f"0 {resource} in {place}: it holds none"
    n, first, last = created_span(scan_cache(location, resource, account=account))
    if not n or first is None:
        held = f"it holds no {resource} at all"
    else:
        a, b = (pd.Timestamp(t) for t in (first, last))
        a, b = (t.tz_convert("UTC") if t.tzinfo else t for t in (a, b))
        held = (
            f"it holds {_counted(n, resource)} created {a:%Y-%m-%d %H:%M} to {b:%Y-%m-%d %H:%M} UTC"
        )
    return f"0 {resource} matched {', '.join(asked)} in {place}; {held}"


def _counted(n: int, resource: str) -> str:
    """``n`` rows of ``resource`` as said: "1 payment", "2,000 payments"."""
    return f"{n:,} {resource if n != 1 else resource[:-1]}"


def _utc(stamp: Any) -> str:
    return f"{stamp:%Y-%m-%d %H:%M:%S} UTC"


@contextlib.contextmanager
def _incompleteness_said() -> Iterator[None]:
    """No warning that the sync was incomplete or the cache is partial: the command says so
    itself, with its exit status (the library's own helper is private; the CLI uses public
    names only)."""
    from gwtools import GatewayDataWarning

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "the sync is incomplete", GatewayDataWarning)
        warnings.filterwarnings("ignore", ".* are partial: ", GatewayDataWarning)
        # a damaged part file: in partial_reasons, from cache_state's unreadable_files
        warnings.filterwarnings(
            "ignore", ".* cannot be read .*so its rows are missing", GatewayDataWarning
        )
        yield


def exit_incomplete(command: str, before: str, output: str, problems: list[str]) -> NoReturn:
    """Say why the sync before ``command`` was incomplete and exit 3, as ``gwtools sync`` does:
    what the cache holds is written, but a job must not take ``output`` for the whole."""
    click.echo(
        f"gwtools {command}: the sync before {before} was incomplete, so rows may be missing "
        f"from {output}; run gwtools sync (or this {command}) again to finish it. Why:",
        err=True,
    )
    for line in problems:
        click.echo(f"  {line}", err=True)
    raise SystemExit(3)
