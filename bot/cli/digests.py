"""Commands that show or post a week's digest: preview, post."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli.runtime import (
    CliError,
    DependencyError,
    open_services,
    out,
    reclassify_on_start,
    require_notes_folder,
    say,
    settings_or_exit,
)
from bot.config import Settings
from bot.notes.digest import now_utc, week_bounds
from bot.notes.sample_notes import (
    NotesFolderError,
    bundled_notes_dir,
    missing_sqlite_file,
    team_notes_dir,
)
from bot.render.terminal import digest_renderable
from bot.services import (
    Services,
    ingest_paths,
    notes_not_ingested,
    preview_digest,
    sample_note_ids,
)

if TYPE_CHECKING:
    from bot.delivery.weekly import RunResult


class _DropErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@contextmanager
def _reported_here(*names: str) -> Iterator[None]:
    """Errors the loggers `names` would log are raised to the command too, which prints them
    as its one line: keep that line from appearing twice (warnings still show)."""
    dropped = _DropErrors()
    loggers = [logging.getLogger(name) for name in names]
    for logger in loggers:
        logger.addFilter(dropped)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(dropped)


def preview(
    week: Annotated[
        str | None,
        typer.Option(
            "--week", metavar="WEEK", help="ISO week such as 2026-W48 (default: this week)."
        ),
    ] = None,
    samples: Annotated[
        bool,
        typer.Option("--samples", help="Preview the bundled sample notes, whatever is set."),
    ] = False,
) -> None:
    """Render this week's digest in the terminal, as it would be posted; no Slack needed.

    With PRDIGEST_DIGESTS_DIR set: what `post` would post from the team's store, ingesting
    that folder first when the store is empty. Without it, or with --samples: the sample
    notes bundled with prdigest, from a temporary store that is removed afterwards (the
    configured database is not opened).
    """
    settings = settings_or_exit()
    if week is not None:
        try:
            week_bounds(week, settings.zone)
        except ValueError as exc:
            raise CliError(f"--week: {exc}") from None
    with ExitStack() as stack:
        why_samples, level = ("--samples", logging.INFO) if samples else _samples_instead(settings)
        notes_dir = settings.digests_dir
        if why_samples is not None or notes_dir is None:
            say(
                f"{why_samples}: previewing the sample notes bundled with prdigest, in a "
                "temporary store that is removed afterwards",
                level,
            )
            notes_dir = bundled_notes_dir()
            scratch = Path(stack.enter_context(TemporaryDirectory(prefix="prdigest-preview-")))
            settings = settings.model_copy(
                update={"database_url": f"sqlite:///{scratch / 'preview.db'}"}
            )
        services = stack.enter_context(open_services(settings))
        if services.store.count_notes() == 0:
            report = ingest_paths(services, [notes_dir])
            for error in report.errors:
                say(str(error), logging.ERROR, "[red]error[/red] ")
            say(f"ingested {notes_dir}: {report.summary()}")
        else:
            reclassify_on_start(services)
        digest = preview_digest(services, week, now_utc(), samples=why_samples is not None)
        out.print(digest_renderable(digest, services.taxonomy))
        if why_samples is None and (held := len(sample_note_ids(services))):
            say(
                f"{held} sample notes bundled with prdigest are in the store and left out, as "
                "`post` leaves them out: `prdigest remove-samples` removes them",
                logging.WARNING,
            )


def _samples_instead(settings: Settings) -> tuple[str | None, int]:
    """Why `preview` shows the bundled samples rather than the team's notes (and how loud
    to say it), or None: the notes folder is unset or holds the samples, or it does not
    exist and the store is empty."""
    try:
        folder = team_notes_dir(settings.digests_dir)
    except NotesFolderError:
        if settings.digests_dir is None:
            return "PRDIGEST_DIGESTS_DIR (your team's notes folder) is not set", logging.INFO
        return (
            f"{settings.digests_dir} (PRDIGEST_DIGESTS_DIR) holds the bundled sample notes, "
            "which `post` and `serve` refuse",
            logging.WARNING,
        )
    if not folder.exists() and not _store_has_notes(settings):
        return f"{folder} (PRDIGEST_DIGESTS_DIR) does not exist", logging.WARNING
    return None, logging.INFO


def _store_has_notes(settings: Settings) -> bool:
    """Whether the configured store holds notes, without creating a missing SQLite file."""
    if missing_sqlite_file(settings.database_url):
        return False
    with open_services(settings) as services:
        return services.store.count_notes() > 0


def post(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the messages instead of posting them.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --dry-run: print Block Kit JSON.")
    ] = False,
    channel_rate: Annotated[
        float | None,
        typer.Option(
            "--channel-rate",
            min=0,
            metavar="RATE",
            help="Channel messages/s (PRDIGEST_CHANNEL_RATE).",
        ),
    ] = None,
    dm_rate: Annotated[
        float | None,
        typer.Option(
            "--dm-rate", min=0, metavar="RATE", help="Starting DMs per second (PRDIGEST_DM_RATE)."
        ),
    ] = None,
    channel_only: Annotated[
        bool,
        typer.Option(
            "--channel-only",
            help="Post the channel digest alone; readers get their DMs at their own times.",
        ),
    ] = False,
) -> None:
    """Post the weekly digest now: every note not yet posted to PRDIGEST_CHANNEL, once.

    Ingests the team's notes folder PRDIGEST_DIGESTS_DIR first (it must be set; the bundled
    sample notes are refused there and never posted from the store), then posts one parent
    message and one thread reply per role, then sends every reader their DM now, whatever
    their own time (the posted notes for them they were not sent yet, within their budget);
    an unfinished earlier run is finished first. Posts nothing when there is nothing new or
    another process is posting. --dry-run needs no token and changes nothing (files not yet
    ingested are not shown); it prints the messages as Slack shows them, --json as Block Kit.
    """
    if as_json and not dry_run:
        # Without --dry-run the digest would be posted for real, not printed.
        raise CliError("--json prints the messages of a dry run: use it with --dry-run")
    settings = settings_or_exit()
    if not dry_run and settings.slack_bot_token is None:
        raise CliError("SLACK_BOT_TOKEN is not set (use --dry-run to see the messages)")
    require_notes_folder(settings)
    with open_services(settings) as services:
        result = _publish_now(services, dry_run, channel_rate, dm_rate, not channel_only)
        waiting = notes_not_ingested(services) if dry_run else 0
    _print_run(result, as_json)
    if waiting:
        say(
            f"{waiting} notes in {settings.digests_dir} are not ingested yet and not shown: "
            "`prdigest post` ingests them first (or run `prdigest ingest`)",
            logging.WARNING,
        )


def _publish_now(
    services: Services,
    dry_run: bool,
    channel_rate: float | None,
    dm_rate: float | None,
    dms: bool,
) -> RunResult:
    """One run of the weekly job at the rates asked for; Slack's refusal or a run taken over
    by another process ends the command with one line."""
    from bot.delivery.weekly import DeliveryError, Pacing, publish_weekly_digest
    from bot.slack.client import build_web_client
    from bot.store.ledger import LostClaimError

    settings = services.settings
    client = None if dry_run else build_web_client(settings)
    if not dry_run:
        reclassify_on_start(services)
    pacing = replace(
        Pacing.from_settings(settings),
        channel_per_second=settings.channel_rate if channel_rate is None else channel_rate,
        dm_per_second=settings.dm_rate if dm_rate is None else dm_rate,
    )
    try:
        with _reported_here("bot.delivery.weekly"):
            return publish_weekly_digest(
                services, client, now_utc(), dry_run=dry_run, pacing=pacing, dms=dms
            )
    except DeliveryError as exc:
        raise DependencyError(str(exc)) from None
    except LostClaimError:
        raise DependencyError(
            "another process took over this digest run and finishes it; nothing else to do"
        ) from None


def _print_run(result: RunResult, as_json: bool) -> None:
    """Skipped files, the messages of a dry run (as Slack shows them, or Block Kit JSON),
    then the outcome."""
    from bot.render.digest_blocks import message_text
    from bot.render.terminal import slack_text

    for error in result.ingest_errors:
        say(error, logging.WARNING, "[yellow]skipped[/yellow] ")
    for message in result.preview:
        if as_json:
            item = {"part": message.part, "channel": message.channel, **message.payload}
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
        else:
            out.rule(f"{message.part} → {message.channel}")
            out.print(slack_text(message_text(message.payload)), highlight=False)
    if as_json:
        say(result.message)
    else:
        out.print(result.message, highlight=False, soft_wrap=True)


def tick(
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            metavar="ISO-8601",
            help="The moment to act at, with its time zone (e.g. 2027-01-04T01:05:00+00:00); "
            "default: the clock's.",
        ),
    ] = None,
) -> None:
    """Do what is due at one moment, as `serve` does every minute.

    The channel digest when its slot (PRDIGEST_SCHEDULE in PRDIGEST_TIMEZONE) is due and
    not yet run, then every reader's DM whose own day and time has come and that was not
    sent yet; each at most once, whatever ran before (serve, another replica, an earlier
    tick). A moment missed by up to PRDIGEST_MISFIRE_GRACE is still due. Prints what it
    did; exits 0 when nothing was due, 1 when Slack refused.
    """
    moment = _moment(now) if now is not None else now_utc()
    settings = settings_or_exit()
    if not settings.channel:
        raise CliError("PRDIGEST_CHANNEL is not set: set it to the channel ID (C…) of the digest")
    if settings.slack_bot_token is None:
        raise CliError("SLACK_BOT_TOKEN is not set")
    require_notes_folder(settings)
    from bot.delivery.scheduler import run_due
    from bot.slack.client import build_web_client

    with open_services(settings) as services:
        reclassify_on_start(services)
        client = build_web_client(settings)
        with _reported_here("bot.delivery.weekly", "bot.delivery.scheduler"):
            result = run_due(services, client, moment)
    for line in result.lines():
        out.print(line, highlight=False, soft_wrap=True, markup=False)
    if result.errors:
        raise DependencyError("; ".join(result.errors))


def _moment(text: str) -> datetime:
    """`--now`: an ISO 8601 time that names its zone (an offset or Z)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CliError(
            f"--now: {text!r} is not an ISO 8601 time such as 2027-01-04T01:05:00+00:00"
        ) from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise CliError(
            f"--now: {text!r} names no time zone; add one, e.g. {text.strip()}+00:00 (UTC) "
            "or +08:00"
        )
    return moment
