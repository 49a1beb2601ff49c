"""What every command runs on: the consoles, one-line errors, settings and services."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from rich.console import Console
from rich.markup import escape as escape_markup

from bot.classify.taxonomy import TaxonomyError
from bot.config import Settings, SettingsError, load_settings
from bot.metrics import Metrics
from bot.notes.sample_notes import NotesFolderError, team_notes_dir
from bot.ops.logs import json_logging
from bot.services import Services
from bot.store import StoreError, describe_unavailable, is_unavailable

# The consoles hold no settings or stream: each print writes to the sys.stdout or sys.stderr of
# that moment (as a test runner swaps them), so sharing them keeps no state between commands.
out = Console()
err = Console(stderr=True, soft_wrap=True)
log = logging.getLogger("bot.cli")


class CliError(Exception):
    """A problem worth one line on stderr and a non-zero exit, not a traceback.

    Exit status 2: bad input or settings, fixed by changing the command or a variable.
    """

    exit_code = 2


class DependencyError(CliError):
    """The database or Slack is unreachable or refused: one line, exit status 1."""

    exit_code = 1


def say(message: str, level: int = logging.INFO, label: str = "") -> None:
    """A line for the operator on stderr: printed after `label` (rich markup; the message
    itself is shown as written), or logged at `level` when log lines are JSON, so that
    stderr stays one object per line."""
    if json_logging():
        log.log(level, message)
    else:
        err.print(f"{label}{escape_markup(message)}", highlight=False)


def settings_or_exit() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        raise CliError(str(exc)) from None


def require_notes_folder(settings: Settings) -> None:
    """What posts the digest (`post`, `tick`, `serve`'s schedule) ingests the team's notes
    folder: it must be set, and never be the bundled sample notes (an empty folder is fine:
    notes may reach the store by `prdigest ingest` elsewhere)."""
    try:
        team_notes_dir(settings.digests_dir)
    except NotesFolderError as exc:
        raise CliError(str(exc)) from None


@contextmanager
def open_services(
    settings: Settings | None = None, metrics: Metrics | None = None
) -> Iterator[Services]:
    settings = settings or settings_or_exit()
    try:
        services = Services.build(settings, metrics)
    except StoreError as exc:
        raise DependencyError(str(exc)) from None
    except TaxonomyError as exc:
        raise CliError(str(exc)) from None
    try:
        yield services
    except sa.exc.SQLAlchemyError as exc:
        if not is_unavailable(exc):
            raise
        # The database went away in the middle of the command.
        raise DependencyError(describe_unavailable(exc, settings.database_url)) from None
    finally:
        services.close()


def reclassify_on_start(services: Services) -> None:
    from bot.readers.corrections import reclassify_if_changed

    changes = reclassify_if_changed(services)
    if changes is not None:
        say(
            "the roles or the rules changed: re-classified the stored notes "
            f"({len(changes)} changed)",
            label="prdigest: ",
        )
