"""The ``gwtools`` command line: a thin layer over the library.

Each command lives in the module that owns its concern and is imported only when
it runs, so ``gwtools sandbox`` starts without loading pandas::

    gwtools sandbox --variant B --seed-payments 5000 --days 90
    gwtools sync
    gwtools export payments --format csv --out payments.csv
    gwtools report --out report/
    gwtools monitor --tz Asia/Kuala_Lumpur
    gwtools check --json
    gwtools demo
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, NoReturn, TextIO

import click

#: command name -> "module:attribute" of its click command.
COMMANDS: dict[str, str] = {
    "check": "gwtools.cli._monitor:check",
    "demo": "gwtools.cli._report:demo",
    "export": "gwtools.cli._sync:export",
    "monitor": "gwtools.cli._monitor:monitor",
    "report": "gwtools.cli._report:report",
    "sandbox": "gwtools.sandbox.cli:sandbox",
    "sync": "gwtools.cli._sync:sync",
}


#: command name -> its help's first paragraph, for the list `gwtools --help` shows without
#: importing any command (their modules load pandas, DuckDB or FastAPI: seconds). A test
#: keeps the list equal to what the commands themselves would show.
SUMMARIES: dict[str, str] = {
    "check": "Check the cached data against the quality rules; exit 1 if a rule fails, 2 if "
    "it cannot check.",
    "demo": "Start the embedded sandbox, sync its demo history, write the report and summarise it.",
    "export": "Write canonical payments or refunds to CSV or Parquet, streamed from the cache "
    "in batches (any size, never the whole table in memory).",
    "monitor": "Print alerts (decline spike, card testing, FPX bank outage, refund spike); "
    "exit 1 if any, 2 if it cannot check (nothing cached, a bad value, no payments in the "
    "window), 3 if there are none but the cache is known partial.",
    "report": "Run the analyst notebooks against the gateway; write HTML and CSV/Parquet tables.",
    "sandbox": "Run the local sandbox gateway; print its base URL and a test secret key.",
    "sync": "Bring the local Parquet cache of payments and refunds up to date.",
}

#: commands whose module imports an extra (listed as not installed without it)
COMMAND_EXTRAS: dict[str, str] = {"sandbox": "sandbox"}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            from gwtools.extras import extra_of

            extra = extra_of(exc.name)
            if extra is None:
                raise
            return _needs_extra(cmd_name, extra)
        command: click.Command = getattr(module, attr)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with the command meant named for a mistyped one, as click names the option
        meant for a mistyped option."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            import difflib

            typed = args[0] if args else ""
            likely = difflib.get_close_matches(typed, self.list_commands(ctx), n=1)
            if typed in COMMANDS or not likely:
                raise
            raise click.UsageError(f"{exc.message} Did you mean {likely[0]!r}?", ctx) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's list of commands, from :data:`SUMMARIES` instead of the commands."""
        from gwtools.extras import missing

        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(map(len, names))
        rows = []
        for name in names:
            extra = COMMAND_EXTRAS.get(name)
            if extra is not None and missing(extra):
                command: click.Command | None = _needs_extra(name, extra)
            elif name in SUMMARIES:
                command = click.Command(name, help=SUMMARIES[name])
            else:  # one added at run time
                command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        """Any gwtools error a command lets through is one line (``Error: …``), exit 1; a
        gwtools warning is one line too (``Warning: …``), without Python's source lines. A
        reader that stopped early (``| head``) ends the command quietly, exit status 141.
        Ctrl-C is ``Interrupted.`` and exit status 130 (as a shell reports SIGINT), never 1,
        which ``check`` and ``monitor`` use for "a rule failed" and "alerts fired"."""
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _warning_shower()
                return super().invoke(ctx)
        except KeyboardInterrupt:
            _interrupted()
        except click.ClickException as exc:
            _mask_keys(exc)
            raise
        except BrokenPipeError:
            reader_gone()
        except Exception as exc:
            if is_interrupt(exc):
                _interrupted()
            line = error_line(exc)
            if line is None:
                raise
            raise click.ClickException(_masked(line)) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.ClickException as exc:
            _mask_keys(exc)
            raise


class AnswersInJson(click.Command):
    """A command whose ``--json`` output is JSON even when it stops with an error: a script
    that parses standard output gets an object (``{"error": …, "message": …}``, the line said
    on standard error too), not an empty string, while the exit status still tells what
    happened. An error raised as :class:`JsonAnswer` brings its own object."""

    #: Fields every error object of the command starts with (``gwtools sync``: its result's).
    json_error_fields: ClassVar[Mapping[str, Any]] = {}

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        # (asked before the parser consumes args: an option's value may be refused there)
        as_json = "--json" in (args[: args.index("--")] if "--" in args else args)
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            if as_json:
                self._say_in_json(exc)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            if ctx.params.get("as_json"):
                self._say_in_json(exc)
            raise

    def _say_in_json(self, exc: click.ClickException) -> None:
        """``UsageError`` for a value refused, else ``CannotCheck`` (``check``, ``monitor``)
        unless the error brings its own object; keys masked, as on standard error."""
        import json

        answer = getattr(exc, "answer", None)
        if answer is None:
            kind = "UsageError" if isinstance(exc, click.UsageError) else "CannotCheck"
            answer = {**self.json_error_fields, "error": kind, "message": exc.format_message()}
        click.echo(_masked(json.dumps(answer, indent=2)))


class JsonAnswer(click.ClickException):
    """An error of an :class:`AnswersInJson` command with the object ``--json`` prints."""

    def __init__(self, message: str, answer: dict[str, Any]) -> None:
        super().__init__(message)
        self.answer = answer


def _masked(text: str) -> str:
    """``text`` with anything shaped like an API key masked (``sk_test_…abcd``)."""
    from gwtools.secrets import redact

    return redact(text)


def _mask_keys(exc: click.ClickException) -> None:
    """Mask any key in a usage error's message. Click quotes what was typed ("No such command
    'sk_test_…'", "cannot read sk_test_…", a value not among the choices): a key typed where
    something else goes is already in the shell's history, and must not be copied into the
    terminal's scrollback or a CI log as well."""
    # click types message as Final, but reads it only when the error is shown: after this.
    exc.message = _masked(exc.message)  # type: ignore[misc]


#: The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


#: The exit status of a command whose reader went away (``| head``): 128 + SIGPIPE, as a
#: shell reports a tool the signal ended; never 1 (a rule failed, alerts fired).
BROKEN_PIPE = 141


def reader_gone() -> NoReturn:
    """End the command quietly, as Unix tools end when the reader of their output stops
    early (``gwtools check | head -c 5``): standard output goes to the null device, so that
    what is still buffered for it does not fail again at exit, and no ``Error:`` line."""
    with contextlib.suppress(OSError, ValueError):  # (a stream with no file behind it)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    raise click.exceptions.Exit(BROKEN_PIPE)


def _interrupted() -> NoReturn:
    # On a line of its own: a progress bar (or the terminal's ^C) may hold the current one.
    click.echo("\nInterrupted.", err=True)
    raise click.exceptions.Exit(INTERRUPTED)


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C surfacing from inside DuckDB: a query interrupted (DuckDB's
    InterruptException), or the RuntimeError its Python client raises in place of the
    KeyboardInterrupt that a SIGINT during a query would have been."""
    duckdb = sys.modules.get("duckdb")  # only once something has loaded it
    if duckdb is not None and isinstance(exc, getattr(duckdb, "InterruptException", ())):
        return True
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


_python_showwarning = warnings.showwarning


def _warning_shower() -> Callable[..., None]:
    """``warnings.showwarning`` for one command: gwtools' warnings as a person reads them, each
    once (a damaged ``_state.json`` is read by the scan, the partial-data check and the folder
    lookup alike: one line, not three); any other keeps Python's format (with the source line
    a developer needs)."""
    said: set[str] = set()

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if not category.__module__.startswith("gwtools"):
            _python_showwarning(message, category, filename, lineno, file, line)
        elif str(message) not in said:
            said.add(str(message))
            click.echo(f"Warning: {message}", err=True)

    return show


def error_line(exc: BaseException) -> str | None:
    """A gwtools error, or a file or folder a command could not use, as its one ``Error:``
    line; None for anything else (a bug keeps its traceback)."""
    # Only raised once gwtools._errors is loaded; importing it here would load pandas for
    # `gwtools sandbox` too.
    errors = sys.modules.get("gwtools._errors")
    if errors is not None and isinstance(exc, errors.GatewayError):
        return str(exc)
    scans = sys.modules.get("gwtools.cache._scan")  # only lazy tables name part files
    if scans is not None:
        said = scans.files_gone(exc, "run the command again") or scans.unreadable_part(exc, None)
        if said is not None:
            return str(said)
    if isinstance(exc, OSError):
        from gwtools.cli._paths import oserror_line

        return oserror_line(exc)
    return None


def require_extra(extra: str | tuple[str, ...], needed_for: str) -> None:
    """A usage error (status 2) naming the one ``pip install "gwtools[...]"`` that installs
    every one of ``extra`` missing; nothing when they are installed."""
    from gwtools import ConfigurationError
    from gwtools.extras import require

    try:
        require(extra, needed_for)
    except ConfigurationError as exc:
        raise click.UsageError(str(exc)) from None


def _needs_extra(name: str, extra: str) -> click.Command:
    """A stand-in for a command whose optional part is not installed: it says what to install
    (whatever options it was given) instead of a ModuleNotFoundError traceback."""

    def refuse(**_: Any) -> None:
        require_extra(extra, f"gwtools {name}")
        # Its modules are there, yet importing the command failed: a broken install.
        raise click.UsageError(
            f"gwtools {name} could not load its optional '{extra}' part of gwtools: "
            f'reinstall it with pip install --force-reinstall "gwtools[{extra}]"'
        )

    return click.Command(
        name,
        callback=refuse,
        help=f'(not installed: pip install "gwtools[{extra}]")',
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
    )


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="gwtools")
def main(**_: Any) -> None:
    """gwtools: payment gateway payments and refunds into pandas, Parquet and reports."""
