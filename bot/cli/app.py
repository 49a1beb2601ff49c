"""The `prdigest` command line: the typer app and its console entry point.

Each command group lives in its own module; this one puts them in the order `--help` lists.
"""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from bot import __version__
from bot.cli import database, digests, doctor, fixes, notes, serve
from bot.cli.help import PlainGroup, PlainTyper
from bot.cli.runtime import out
from bot.config import Settings, SettingsError, load_settings
from bot.ops.logs import configure_logging, secret_values


def _print_version(value: bool) -> None:
    if value:
        out.print(f"prdigest {__version__}", highlight=False)
        raise typer.Exit()


def _configure(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at DEBUG level.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", help="Show the version and exit.", is_eager=True, callback=_print_version
        ),
    ] = False,
) -> None:
    """prdigest: weekly, role-specific reading lists of vLLM pull-request notes."""
    try:
        settings: Settings | None = load_settings()
    except SettingsError:
        settings = None  # the command itself reports it
    secrets = secret_values(settings) if settings is not None else []
    if settings is not None and settings.log_format == "json":
        # Collected logs: every command logs at PRDIGEST_LOG_LEVEL, each line one object.
        configure_logging(logging.DEBUG if verbose else settings.log_level, "json", secrets)
    else:
        configure_logging(logging.DEBUG if verbose else logging.WARNING, secrets=secrets)


def build_app() -> typer.Typer:
    """The command table: which function answers which command, in `--help` order."""
    app = PlainTyper(
        cls=PlainGroup,
        help="prdigest: weekly, role-specific reading lists of vLLM pull-request notes.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        # Plain click help: paragraphs re-wrapped to the terminal, flags without a type label.
        rich_markup_mode=None,
    )
    app.callback()(_configure)
    app.command()(notes.ingest)
    app.command()(notes.notes)
    app.command("lookup")(notes.lookup_command)
    app.command("copy-db")(database.copy_db)
    app.command()(fixes.fix)
    app.command()(fixes.reclassify)
    app.command()(notes.roles)
    app.command("remove-samples")(notes.remove_samples)
    app.command()(digests.preview)
    app.command()(digests.post)
    app.command()(digests.tick)
    app.command()(serve.serve)
    app.command()(doctor.doctor)
    return app


# The command table holds functions only, no settings or connections: every command reads
# its settings when it runs.
app = build_app()


def main() -> None:
    """Console entry point."""
    app()
