"""Commands over the notes: ingest, notes, lookup, roles, remove-samples."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress
from rich.table import Table

from bot.classify.taxonomy import Taxonomy, TaxonomyError, load_taxonomy
from bot.cli.runtime import CliError, err, open_services, out, say, settings_or_exit
from bot.domain import Role, count_text
from bot.notes.ingest import NOTE_SUFFIXES, find_note_files
from bot.notes.sample_notes import (
    NotesFolderError,
    missing_sqlite_file,
    sample_files_in,
    team_notes_dir,
)
from bot.notes.search import QueryError
from bot.ops.logs import json_logging
from bot.render.replies import ANY_WORD_NOTE
from bot.render.terminal import lookup_renderable
from bot.services import ingest_paths, lookup, remove_sample_notes

PROGRESS_MIN_FILES = 10
NOTES_LIMIT = 100
NOTES_LIMIT_MAX = 10**9  # beyond it a database LIMIT overflows; 0 shows all anyway


def ingest(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="Note files or folders (default: the team's notes folder PRDIGEST_DIGESTS_DIR).",
        ),
    ] = None,
) -> None:
    """Parse, classify and store note files; prints new/updated/unchanged/failed counts.

    Without PATH: the team's notes folder PRDIGEST_DIGESTS_DIR, which must be set and is
    never the bundled sample notes. A PATH that names the samples stores them, and says
    they are samples (`post` never posts them; `remove-samples` removes them).
    A bad file is reported with its file and line and exits 1; every other file still lands.
    With PRDIGEST_LLM_URL the model server then reads the notes it should; when it fails,
    one line says so and the notes keep the local classifier's reading.
    """
    from bot.llm_reader import build_reader

    settings = settings_or_exit()
    if paths:
        targets, samples = list(paths), sample_files_in(paths)
    else:
        try:
            targets, samples = [team_notes_dir(settings.digests_dir)], []
        except NotesFolderError as exc:
            raise CliError(str(exc)) from None
    with open_services(settings) as services:
        files = find_note_files([p for p in targets if p.exists()])
        reader = build_reader(services.settings, services.store, services.taxonomy)
        if len(files) >= PROGRESS_MIN_FILES:
            with Progress(console=err, transient=True, disable=json_logging()) as progress:
                task = progress.add_task("ingesting", total=len(files))
                report = ingest_paths(
                    services, targets, on_file=lambda _p: progress.advance(task), reader=reader
                )
        else:
            report = ingest_paths(services, targets, reader=reader)
        problem = reader.finish() if reader is not None else None
    say(_file_list("read", report.read))
    if report.reading is not None and reader is not None:
        say(report.reading.summary(reader.read_by))
    if problem is not None:
        say(problem, logging.WARNING, "[yellow]prdigest:[/yellow] ")
    if report.skipped:
        why = f" (note files end in {' or '.join(NOTE_SUFFIXES)})"
        say(_file_list("skipped", report.skipped, why), logging.WARNING, "[yellow]")
    for error in report.errors:
        say(str(error), logging.ERROR, "[red]error[/red] ")
    if samples:
        say(
            f"{len(samples)} of the files read are the sample notes bundled with prdigest, "
            "not your team's: `post` and `serve` never post them; `prdigest remove-samples` "
            "removes them",
            logging.WARNING,
            "[yellow]samples:[/yellow] ",
        )
    elif not paths and not files and targets[0].is_dir():
        say(
            f"{targets[0]} (PRDIGEST_DIGESTS_DIR) holds no note files yet: write your team's "
            f"notes there (files ending in {' or '.join(NOTE_SUFFIXES)})",
            logging.WARNING,
        )
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
    """List stored notes, oldest first (the first --limit of them), each with who read it
    (the classifier or llm:MODEL)."""
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
            out.print(lookup_renderable(listed, slug, services.taxonomy, show_reader=True))
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
        matched = _what_matched(services.taxonomy, result.query.text, result.role)
        if not found:
            _say_no_match(matched, result.suggestions)
            return
        out.print(matched, style="dim", highlight=False, markup=False)
        out.print(lookup_renderable(found, slug, services.taxonomy))
        out.print(f"{len(found)} of {result.page.total_text} notes", style="dim")
        if result.page.any_word:
            out.print(ANY_WORD_NOTE, style="dim")


def _what_matched(taxonomy: Taxonomy, text: str, role: Role | None) -> str:
    """What a lookup matched: "role … (matched alias `moe`)", "role …" or "free text …"."""
    named = taxonomy.named_by(text) if role is not None else None
    if named is None:
        return f"free text `{text}`"
    role, how = named
    said = {"slug": "", "alias": f" (matched alias `{text}`)", "name": " (matched its name)"}
    return f"role {role.slug} · {role.label}{said[how]}"


def _say_no_match(matched: str, suggestions: Sequence[Role]) -> None:
    """No note matched: say so, and name the roles whose names are closest to the query."""
    out.print(f"No note matches {matched}.", highlight=False, markup=False)
    if suggestions:
        names = ", ".join(f"{r.slug} ({r.label})" for r in suggestions)
        first = suggestions[0].slug
        out.print(
            f"Closest roles: {names}; e.g. `prdigest lookup {first}`",
            highlight=False,
            markup=False,
        )
    else:
        out.print(
            "No role has a similar name: `prdigest roles` lists them.",
            highlight=False,
            markup=False,
        )


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


def remove_samples(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed; remove nothing.")
    ] = False,
) -> None:
    """Remove from the store the sample notes bundled with prdigest (an older quick start
    stored them): the notes whose repo, title and text are a sample's, with their fixes and
    the ledger's records of them. The team's notes, subscriptions, saved searches and
    posted digests stay; nothing of the team's is posted again.
    """
    settings = settings_or_exit()
    if missing_sqlite_file(settings.database_url):
        out.print("no store yet: nothing to remove", highlight=False)
        return
    with open_services(settings) as services:
        removal = remove_sample_notes(services, dry_run=dry_run)
    if removal.open_runs:
        runs = ", ".join(f"#{r}" for r in removal.open_runs)
        raise CliError(
            f"digest run {runs} is unfinished and its messages, already made, hold sample "
            "notes: nothing removed; `prdigest post` finishes the run, then run "
            "`prdigest remove-samples` again"
        )
    if not removal.note_ids:
        out.print("no sample notes in the store: nothing to remove", highlight=False)
        return
    verb = "would remove" if dry_run else "removed"
    out.print(
        f"{verb} {count_text(len(removal.note_ids))} sample notes "
        f"({', '.join(f'#{i}' for i in removal.note_ids[:10])}"
        f"{' …' if len(removal.note_ids) > 10 else ''}), with {removal.fixes} fixes, "
        f"{removal.posted} records of posting them and {removal.dms} of DMs with them",
        highlight=False,
        soft_wrap=True,
    )
