"""The `prdigest` command line: the one place that reads settings and builds the services."""

from __future__ import annotations

import getpass
import json
import logging
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, Annotated, Any

import sqlalchemy as sa
import typer
from rich.console import Console
from rich.markup import escape as escape_markup
from rich.progress import Progress
from rich.table import Table
from typer.core import TyperArgument, TyperCommand, TyperGroup
from typer.models import CommandFunctionType

from bot import __version__
from bot.classify.taxonomy import TaxonomyError, load_taxonomy
from bot.config import Settings, SettingsError, check_database_url, load_settings, masked_url
from bot.digest import now_utc, week_bounds
from bot.domain import Verdict, count_text
from bot.ingest import NOTE_SUFFIXES, find_note_files
from bot.logs import configure_logging, json_logging
from bot.metrics import Metrics
from bot.render.terminal import digest_renderable, lookup_renderable
from bot.sample_notes import bundled_notes_dir, missing_sqlite_file
from bot.search import QueryError
from bot.services import Services, ingest_paths, lookup, notes_not_ingested, preview_digest
from bot.store import Store, StoreError, describe_unavailable, is_unavailable

if TYPE_CHECKING:
    from bot.server import RunningServer, ShutdownSignal, SocketModeConnection, WsgiApp
    from bot.watch import SlackLink

out = Console()
err = Console(stderr=True, soft_wrap=True)
log = logging.getLogger("bot.cli")
PROGRESS_MIN_FILES = 10
NOTES_LIMIT = 100
NOTES_LIMIT_MAX = 10**9  # beyond it a database LIMIT overflows; 0 shows all anyway


class CliError(Exception):
    """A problem worth one line on stderr and a non-zero exit, not a traceback.

    Exit status 2: bad input or settings, fixed by changing the command or a variable.
    """

    exit_code = 2


class DependencyError(CliError):
    """The database or Slack is unreachable or refused: one line, exit status 1."""

    exit_code = 1


class _Group(TyperGroup):
    """Turns a CliError from any command into one line on stderr and its exit status."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            say(str(exc), logging.ERROR, "[red]prdigest:[/red] ")
            raise typer.Exit(exc.exit_code) from None


_REQUIRED_ARGUMENT = re.compile(r"^\{([A-Z_]+)\}")
_KEEP_HYPHEN = "\u2011"  # a non-breaking hyphen stands in for "-" while help is wrapped


@contextmanager
def _unbroken_hyphens(formatter: Any) -> Iterator[None]:
    """Text written inside has each KEEP_HYPHEN turned back into "-" once wrapped."""
    start = len(formatter.buffer)
    yield
    formatter.buffer[start:] = [p.replace(_KEEP_HYPHEN, "-") for p in formatter.buffer[start:]]


class _Command(TyperCommand):
    """Help that names each argument by its metavar (`PATH`), without a type label, and
    wraps between words only (`--no-scheduler`, `2026-W48` are never split at a hyphen)."""

    def format_help_text(self, ctx: Any, formatter: Any) -> None:
        written = self.help
        self.help = written.replace("-", _KEEP_HYPHEN) if written else written
        try:
            with _unbroken_hyphens(formatter):
                super().format_help_text(ctx, formatter)
        finally:
            self.help = written

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        # A required argument reads as `QUERY...`, as in every man page, not `{QUERY}...`.
        return [_REQUIRED_ARGUMENT.sub(r"\1", piece) for piece in super().collect_usage_pieces(ctx)]

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                arguments.append((param.metavar or param.name or "", param.help or ""))
            else:
                record = param.get_help_record(ctx)
                if record is not None:
                    options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                kept = [(term, text.replace("-", _KEEP_HYPHEN)) for term, text in rows]
                with formatter.section(title), _unbroken_hyphens(formatter):
                    formatter.write_dl(kept)


class _Typer(typer.Typer):
    """Every command of the app gets the plain help of `_Command`."""

    def command(
        self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs: Any
    ) -> Callable[[CommandFunctionType], CommandFunctionType]:
        return super().command(name, cls=cls or _Command, **kwargs)


def say(message: str, level: int = logging.INFO, label: str = "") -> None:
    """A line for the operator on stderr: printed after `label` (rich markup; the message
    itself is shown as written), or logged at `level` when log lines are JSON, so that
    stderr stays one object per line."""
    if json_logging():
        log.log(level, message)
    else:
        err.print(f"{label}{escape_markup(message)}", highlight=False)


app = _Typer(
    cls=_Group,
    help="prdigest: weekly, role-specific reading lists of vLLM pull-request notes.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: paragraphs re-wrapped to the terminal, flags without a type label.
    rich_markup_mode=None,
)


def settings_or_exit() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        raise CliError(str(exc)) from None


class _DropErrors(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@contextmanager
def _reported_here(logger: logging.Logger) -> Iterator[None]:
    """Errors `logger` would log are raised to the command too, which prints them as its one
    line: keep that line from appearing twice (warnings still show)."""
    dropped = _DropErrors()
    logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


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


def _print_version(value: bool) -> None:
    if value:
        out.print(f"prdigest {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
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
    if settings is not None and settings.log_format == "json":
        # Collected logs: every command logs at PRDIGEST_LOG_LEVEL, each line one object.
        configure_logging(logging.DEBUG if verbose else settings.log_level, "json")
    else:
        configure_logging(logging.DEBUG if verbose else logging.WARNING)


@app.command()
def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH", help="Note files or folders (default: PRDIGEST_DIGESTS_DIR)."
        ),
    ] = None,
) -> None:
    """Parse, classify and store note files; prints new/updated/unchanged/failed counts.

    A bad file is reported with its file and line and exits 1; every other file still lands.
    """
    with open_services() as services:
        targets = list(paths or [services.settings.digests_dir])
        files = find_note_files([p for p in targets if p.exists()])
        if len(files) >= PROGRESS_MIN_FILES:
            with Progress(console=err, transient=True, disable=json_logging()) as progress:
                task = progress.add_task("ingesting", total=len(files))
                report = ingest_paths(services, targets, on_file=lambda _p: progress.advance(task))
        else:
            report = ingest_paths(services, targets)
    say(_file_list("read", report.read))
    if report.skipped:
        why = f" (note files end in {' or '.join(NOTE_SUFFIXES)})"
        say(_file_list("skipped", report.skipped, why), logging.WARNING, "[yellow]")
    for error in report.errors:
        say(str(error), logging.ERROR, "[red]error[/red] ")
    out.print(report.summary(), highlight=False, soft_wrap=True)
    if report.errors:
        raise typer.Exit(1)


def _file_list(verb: str, files: list[Path], why: str = "", most: int = 10) -> str:
    """ "read 3 files: a.txt, b.txt, c.txt", naming at most `most` of them."""
    if not files:
        return f"{verb} no files"
    noun = "file" if len(files) == 1 else "files"
    names = ", ".join(str(f) for f in files[:most])
    rest = f" and {len(files) - most:,} more" if len(files) > most else ""
    return f"{verb} {len(files):,} {noun}{why}: {names}{rest}"


def _parse_since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CliError(f"--since: not a date such as 2026-11-23: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _print_json_lines(notes: list[dict[str, object]]) -> None:
    for item in notes:
        sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")


@app.command()
def notes(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    role: Annotated[
        str | None, typer.Option("--role", metavar="ROLE", help="Role slug or alias.")
    ] = None,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="DATE", help="Only notes ingested on/after this date."),
    ] = None,
    limit: Annotated[
        int,
        typer.Option(
            "--limit",
            min=0,
            max=NOTES_LIMIT_MAX,
            metavar="N",
            help="Notes to show; 0 shows them all.",
        ),
    ] = NOTES_LIMIT,
) -> None:
    """List stored notes, oldest first (the first --limit of them)."""
    since_at = _parse_since(since)
    with open_services() as services:
        slug = None
        if role is not None:
            found = services.taxonomy.resolve(role)
            if found is None:
                hints = ", ".join(r.slug for r in services.taxonomy.suggest(role))
                hint = f"did you mean {hints}? " if hints else ""
                raise CliError(f"unknown role {role!r}; {hint}`prdigest roles` lists them")
            slug = found.slug
        listed = services.store.list_notes(role=slug, since=since_at, limit=limit or None)
        total = len(listed)
        if limit and total == limit:
            total = services.store.count_notes(role=slug, since=since_at)
        if as_json:
            _print_json_lines([n.as_json() for n in listed])
        else:
            out.print(lookup_renderable(listed, slug, services.taxonomy))
    shown = f"{count_text(len(listed))} of {count_text(total)} notes"
    if total > len(listed):
        more = total - len(listed)
        hint = f"{shown}; {count_text(more)} more: --limit 0 shows all, --since narrows"
        if as_json:
            say(hint)
        else:
            out.print(hint, style="dim", highlight=False)
    elif not as_json:
        out.print(f"{count_text(total)} notes", style="dim", highlight=False)


@app.command("lookup")
def lookup_command(
    query: Annotated[
        list[str],
        typer.Argument(metavar="QUERY", help="A role or alias (moe, mm) or free text."),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=1000, metavar="N", help="Notes to show.")
    ] = 10,
) -> None:
    """Search notes: a role's reading list, or a ranked free-text search (Chinese or English)."""
    if not " ".join(query).strip():
        raise CliError(
            "nothing to look up: give a role or words, e.g. `prdigest lookup moe` "
            "or `prdigest lookup fp8 marlin`"
        )
    with open_services() as services:
        try:
            result = lookup(services, " ".join(query), limit=limit)
        except QueryError as exc:
            raise CliError(str(exc)) from None
        found = result.page.notes
        if as_json:
            _print_json_lines([n.as_json() for n in found])
            return
        slug = result.role.slug if result.role else None
        out.print(lookup_renderable(found, slug, services.taxonomy))
        out.print(f"{len(found)} of {result.page.total_text} notes", style="dim")
        if result.suggestions:
            names = ", ".join(r.slug for r in result.suggestions)
            out.print(f"No match. Roles with a similar name: {names}")


@app.command("copy-db")
def copy_db(
    target_url: Annotated[
        str,
        typer.Argument(
            metavar="URL",
            help="SQLAlchemy URL of an empty database, e.g. postgresql+psycopg://…",
        ),
    ],
) -> None:
    """Copy notes, subscriptions and the delivery ledger into another (empty) database.

    For moving from SQLite to PostgreSQL: afterwards point PRDIGEST_DATABASE_URL at the
    target. Nothing already posted is posted again, because the ledger moves too.
    """
    try:
        target_url = check_database_url(target_url)
    except ValueError as exc:
        raise CliError(f"copy-db URL: {exc} (got {masked_url(target_url)!r})") from None
    with open_services() as services:
        try:
            target = Store.open(target_url, setting="the URL given to copy-db")
        except StoreError as exc:
            raise DependencyError(str(exc)) from None
        try:
            copied = services.store.copy_to(target)
        except StoreError as exc:
            raise CliError(str(exc)) from None
        finally:
            target.close()
    summary = ", ".join(f"{name} {count}" for name, count in copied.items())
    out.print(f"copied: {summary}", highlight=False, soft_wrap=True)


def _verdict_option(value: str | None) -> Verdict | None:
    if value is None:
        return None
    try:
        return Verdict(value.strip().lower())
    except ValueError:
        raise CliError(f"--verdict: expected deep, skim or skip, not {value!r}") from None


@app.command()
def fix(
    note_id: Annotated[
        str,
        typer.Argument(metavar="NOTE_ID", help="The note's id (`prdigest notes --json`)."),
    ],
    roles: Annotated[
        str,
        typer.Option("--roles", metavar="ROLES", help="Comma-separated roles (slugs or aliases)."),
    ],
    primary: Annotated[
        str | None,
        typer.Option("--primary", metavar="ROLE", help="The primary role (default: the first)."),
    ] = None,
    verdict: Annotated[
        str | None,
        typer.Option(
            "--verdict", metavar="VERDICT", help="deep, skim or skip (default: the classifier's)."
        ),
    ] = None,
) -> None:
    """Correct a note's roles, primary role and verdict: the fix wins over the classifier
    and survives re-ingestion and re-classification. A note already posted is updated in
    its digest thread by the next `prdigest post` or scheduled run.
    """
    from bot.corrections import FixError, fix_note

    if not note_id.strip().isdigit():
        raise CliError(f"NOTE_ID: expected a number such as 12, not {note_id!r}")
    chosen = _verdict_option(verdict)
    words = [w.strip() for w in roles.split(",") if w.strip()]
    with open_services() as services:
        try:
            result = fix_note(
                services, int(note_id), words, primary, chosen, f"cli:{getpass.getuser()}"[:64]
            )
        except FixError as exc:
            raise CliError(str(exc)) from None
    before, after = result.before, result.after
    out.print(
        f"fixed note #{after.id} {after.title!r}: "
        f"{'/'.join(before.roles)} {before.verdict.value} → "
        f"{'/'.join(after.roles)} {after.verdict.value} (primary {after.primary_role})",
        highlight=False,
        markup=False,
        soft_wrap=True,
    )


@app.command()
def reclassify(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; store nothing.")
    ] = False,
) -> None:
    """Run the classifier over every stored note again and print what changes; fixes
    stay. `serve` and `post` do this on start when the roles file or the rules changed.
    """
    from bot.corrections import reclassify as run_reclassify

    with open_services() as services:
        changes = run_reclassify(
            services,
            dry_run=dry_run,
            on_change=lambda c: out.print(
                c.describe() + (" (fixed)" if c.fixed else ""),
                highlight=False,
                markup=False,
                soft_wrap=True,
            ),
        )
    verb = "would change" if dry_run else "changed"
    out.print(f"{len(changes)} notes {verb}", highlight=False)


@app.command()
def roles() -> None:
    """Show the role taxonomy: slugs, names and lookup aliases."""
    # The taxonomy alone: no database is opened (or created) to show it.
    try:
        taxonomy = load_taxonomy(settings_or_exit().roles_file)
    except TaxonomyError as exc:
        raise CliError(str(exc)) from None
    table = Table(title="Reader roles")
    table.add_column("slug", style="bold")
    table.add_column("name")
    table.add_column("aliases")
    for role in taxonomy.roles:
        table.add_row(role.slug, role.label, ", ".join(role.aliases))
    out.print(table)


@app.command()
def preview(
    week: Annotated[
        str | None,
        typer.Option(
            "--week", metavar="WEEK", help="ISO week such as 2026-W48 (default: this week)."
        ),
    ] = None,
) -> None:
    """Render this week's digest in the terminal, as it would be posted; no Slack needed.

    Ingests PRDIGEST_DIGESTS_DIR first when the store is empty. When that folder does not
    exist either, previews the bundled sample notes in a temporary store (nothing is kept).
    """
    settings = settings_or_exit()
    if week is not None:
        try:
            week_bounds(week, settings.zone)
        except ValueError as exc:
            raise CliError(f"--week: {exc}") from None
    with ExitStack() as stack:
        notes_dir = settings.digests_dir
        if not notes_dir.exists() and not _store_has_notes(settings):
            notes_dir = bundled_notes_dir()
            scratch = Path(stack.enter_context(TemporaryDirectory(prefix="prdigest-preview-")))
            say(
                f"{settings.digests_dir} (PRDIGEST_DIGESTS_DIR) does not exist: previewing the "
                "sample notes bundled with prdigest, in a temporary store",
                logging.WARNING,
            )
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
            _reclassify_on_start(services)
        digest = preview_digest(services, week, now_utc())
        out.print(digest_renderable(digest, services.taxonomy))


def _store_has_notes(settings: Settings) -> bool:
    """Whether the configured store holds notes, without creating a missing SQLite file."""
    if missing_sqlite_file(settings.database_url):
        return False
    with open_services(settings) as services:
        return services.store.count_notes() > 0


@app.command()
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
) -> None:
    """Post the weekly digest now: every note not yet posted to PRDIGEST_CHANNEL, once.

    Ingests PRDIGEST_DIGESTS_DIR first, then posts one parent message, one thread reply per
    role and the subscribers' DMs; an unfinished earlier run is finished first. Posts
    nothing when there is nothing new or another process is posting. --dry-run needs no
    token and changes nothing (files not yet ingested are not shown).
    """
    from bot.delivery import DeliveryError, Pacing, publish_weekly_digest
    from bot.render.digest_blocks import message_text
    from bot.slack_client import build_web_client
    from bot.store.ledger import LostClaimError

    if as_json and not dry_run:
        # Without --dry-run the digest would be posted for real, not printed.
        raise CliError("--json prints the messages of a dry run: use it with --dry-run")
    settings = settings_or_exit()
    if not dry_run and settings.slack_bot_token is None:
        raise CliError("SLACK_BOT_TOKEN is not set (use --dry-run to see the messages)")
    with open_services(settings) as services:
        client = None if dry_run else build_web_client(settings)
        if not dry_run:
            _reclassify_on_start(services)
        pacing = replace(
            Pacing.from_settings(settings),
            channel_per_second=settings.channel_rate if channel_rate is None else channel_rate,
            dm_per_second=settings.dm_rate if dm_rate is None else dm_rate,
        )
        try:
            with _reported_here(logging.getLogger("bot.delivery")):
                result = publish_weekly_digest(
                    services, client, now_utc(), dry_run=dry_run, pacing=pacing
                )
        except DeliveryError as exc:
            raise DependencyError(str(exc)) from None
        except LostClaimError:
            raise DependencyError(
                "another process took over this digest run and finishes it; nothing else to do"
            ) from None
        waiting = notes_not_ingested(services) if dry_run else 0
    for error in result.ingest_errors:
        say(error, logging.WARNING, "[yellow]skipped[/yellow] ")
    for message in result.preview:
        if as_json:
            item = {"part": message.part, "channel": message.channel, **message.payload}
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
        else:
            out.rule(f"{message.part} → {message.channel}")
            out.print(message_text(message.payload), highlight=False, markup=False)
    if as_json:
        say(result.message)
    else:
        out.print(result.message, highlight=False, soft_wrap=True)
    if waiting:
        say(
            f"{waiting} notes in {settings.digests_dir} are not ingested yet and not shown: "
            "`prdigest post` ingests them first (or run `prdigest ingest`)",
            logging.WARNING,
        )


def _reclassify_on_start(services: Services) -> None:
    from bot.corrections import reclassify_if_changed

    changes = reclassify_if_changed(services)
    if changes is not None:
        say(
            "the roles or the rules changed: re-classified the stored notes "
            f"({len(changes)} changed)",
            label="prdigest: ",
        )


@app.command()
def serve(
    no_scheduler: Annotated[
        bool, typer.Option("--no-scheduler", help="Do not post the weekly digest from here.")
    ] = False,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="HTTP mode: address to bind.")
    ] = "0.0.0.0",
) -> None:
    """Run the Slack bot: Socket Mode when SLACK_APP_TOKEN is set, else HTTP on PRDIGEST_PORT.

    HTTP mode serves POST /slack/events, GET /healthz and GET /metrics; PRDIGEST_METRICS_PORT
    serves the last two on a port of their own (in Socket Mode too). The weekly digest
    schedule runs in the same process unless --no-scheduler. Stops cleanly on SIGTERM or
    Ctrl-C.
    """
    from bot.prometheus import PrometheusMetrics, measure_store
    from bot.server import (
        HealthCheck,
        ShutdownSignal,
        SocketModeConnection,
        make_ops_app,
        make_wsgi_app,
        missing_slack_settings,
    )
    from bot.slack_app import build_app
    from bot.slack_client import build_web_client
    from bot.watch import SlackLink

    settings = settings_or_exit()
    missing = missing_slack_settings(settings)
    if missing:
        raise CliError(
            f"serve needs {' and '.join(missing)} (SLACK_APP_TOKEN instead of "
            "SLACK_SIGNING_SECRET for Socket Mode); see 'Slack app setup' in the README. "
            "To try the bot without Slack, run `prdigest preview`."
        )
    root = logging.getLogger()
    if root.level > logging.getLevelName(settings.log_level):
        root.setLevel(settings.log_level)
    app_token = settings.slack_app_token
    secret = settings.slack_signing_secret
    metrics = PrometheusMetrics()
    with ShutdownSignal() as shutdown:
        services = _wait_for_store(settings, metrics, shutdown)
        if services is None:
            say("stopped", label="prdigest: ")
            return
        with _closing(services):
            _reclassify_on_start(services)
            measure_store(metrics, services.store, settings.channel)
            client = build_web_client(settings, metrics=metrics)
            link = SlackLink(client)
            health = HealthCheck(services.store, client, link)
            bolt = build_app(
                services,
                client,
                signing_secret=secret.get_secret_value() if secret else None,
                socket_mode=app_token is not None,
                link=link,
            )
            ops = None
            if settings.metrics_port is not None:
                ops = _listen(make_ops_app(health, metrics), host, settings.metrics_port)
                say(f"metrics on http://{host}:{ops.port}/metrics", label="prdigest: ")
            scheduler = None
            if not no_scheduler:
                from bot.scheduler import resume_after_outage, start_scheduler

                scheduler = start_scheduler(services, client)
                link.on_recovery(lambda: resume_after_outage(services, client))
            link.start(shutdown.event)
            try:
                if app_token is not None:
                    handler = SocketModeConnection(bolt, app_token.get_secret_value(), client)
                    if not _connect_socket_mode(handler, link, shutdown):
                        return
                    say("connected to Slack (Socket Mode)", label="prdigest: ")
                    shutdown.wait()
                    handler.close()
                else:
                    # /metrics stays off the public port when it has one of its own.
                    wsgi = make_wsgi_app(bolt, health, None if ops else metrics)
                    running = _listen(wsgi, host, settings.port)
                    say(
                        f"listening on http://{host}:{running.port}/slack/events",
                        label="prdigest: ",
                    )
                    shutdown.wait()
                    running.stop()
            finally:
                if scheduler is not None:
                    scheduler.shutdown(wait=False)
                if ops is not None:
                    ops.stop()
    say("stopped", label="prdigest: ")


@app.command()
def doctor() -> None:
    """Check settings, database, Slack token, scopes and channel, note files and schedule.

    One line per check: ok, or FAIL with what to do. Changes nothing. Exits 0 when every
    check passes, 1 otherwise.
    """
    from rich.text import Text

    from bot.doctor import FAIL, OK, run_checks

    failed = False
    styles = {OK: "green", FAIL: "bold red"}
    for check in run_checks(now_utc()):
        failed = failed or check.failed
        line = Text.assemble(
            (f"{check.status:<4}", styles.get(check.status, "dim")),
            f"  {check.name:<14}{check.detail}",
        )
        out.print(line, soft_wrap=True, highlight=False)
    if failed:
        raise typer.Exit(1)


@contextmanager
def _closing(services: Services) -> Iterator[Services]:
    try:
        yield services
    finally:
        services.close()


def _wait_for_store(
    settings: Settings, metrics: Metrics, shutdown: ShutdownSignal
) -> Services | None:
    """Open the store, retrying with back-off while the database is unreachable (said once);
    None when a signal arrives first."""
    from bot.watch import Backoff

    backoff = Backoff()
    down_since: float | None = None
    while True:
        try:
            services = Services.build(settings, metrics)
        except StoreError as exc:
            if down_since is None:
                down_since = time.monotonic()
                say(f"{exc}; retrying with back-off", logging.ERROR, "[red]prdigest:[/red] ")
            else:
                log.debug("database still unavailable: %s", exc)
        except TaxonomyError as exc:
            raise CliError(str(exc)) from None
        else:
            if down_since is not None:
                waited = time.monotonic() - down_since
                say(f"the database answers (after {waited:.0f} s)", label="prdigest: ")
            return services
        if shutdown.sleep(backoff.delay()):
            return None


def _connect_socket_mode(
    handler: SocketModeConnection, link: SlackLink, shutdown: ShutdownSignal
) -> bool:
    """Open the Socket Mode connection, retrying with back-off while Slack is unreachable
    (said once, unless `link` already said that Slack is unreachable); False when a signal
    arrives first. A refused app token stops `serve`."""
    from slack_sdk.errors import SlackApiError

    from bot.slack_client import describe_unreachable, is_unreachable
    from bot.watch import UNREACHABLE, Backoff

    backoff = Backoff()
    said = link.check() == UNREACHABLE
    while True:
        try:
            handler.connect()
            return True
        except SlackApiError as exc:
            error = exc.response.get("error")
            raise CliError(
                f"Slack refused the Socket Mode connection ({error}): check SLACK_APP_TOKEN "
                "(an xapp-… token with connections:write)"
            ) from None
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            if not said:
                line = describe_unreachable(exc, handler.base_url)
                say(f"{line}; retrying with back-off", logging.ERROR, "[red]prdigest:[/red] ")
                said = True
        if shutdown.sleep(backoff.delay()):
            return False


def _listen(wsgi: WsgiApp, host: str, port: int) -> RunningServer:
    from bot.server import serve_in_thread

    try:
        return serve_in_thread(wsgi, host, port)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc}") from None


def main() -> None:
    """Console entry point."""
    app()
