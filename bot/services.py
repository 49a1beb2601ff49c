"""Use cases shared by the CLI, the Slack listeners and the scheduler."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from bot.classify import build_classifier
from bot.config import Settings
from bot.digest import build_digest, week_bounds, week_label
from bot.domain import Classification, Digest, Note, ParsedNote, Role
from bot.ingest import NoteFileError, find_note_files, parse_note_file
from bot.search import Query, parse_query
from bot.store import Page, Store
from bot.store.ledger import Ledger
from bot.taxonomy import Taxonomy, load_taxonomy

log = logging.getLogger(__name__)


@dataclass
class Services:
    """What every entry point needs: settings, the store and the taxonomy."""

    settings: Settings
    store: Store
    taxonomy: Taxonomy

    @classmethod
    def build(cls, settings: Settings) -> Services:
        taxonomy = load_taxonomy(settings.roles_file)
        return cls(settings=settings, store=Store.open(settings.database_url), taxonomy=taxonomy)

    def close(self) -> None:
        self.store.close()


@dataclass
class IngestReport:
    """Counts of one ingestion run and the files that failed."""

    files: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[NoteFileError] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.errors)

    def summary(self) -> str:
        return (
            f"{self.new} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.failed} failed ({self.files} files)"
        )


def ingest_paths(
    services: Services,
    paths: Sequence[Path],
    on_file: Callable[[Path], None] | None = None,
    now: datetime | None = None,
) -> IngestReport:
    """Parse, classify and store every note file; a bad file is reported, the rest land."""
    report = IngestReport()
    missing = [p for p in paths if not p.exists()]
    report.errors.extend(NoteFileError(str(p), 0, "no such file or folder") for p in missing)
    files = find_note_files([p for p in paths if p.exists()])
    classifier = build_classifier(services.taxonomy)

    def classify(note: ParsedNote) -> Classification:
        return classifier.classify(note.title, note.paragraph)

    for path in files:
        report.files += 1
        try:
            parsed = parse_note_file(path)
            result = services.store.save_file(parsed, classify, now=now)
        except NoteFileError as exc:
            report.errors.append(exc)
            log.info("skipped %s", exc)
        except sa.exc.SQLAlchemyError as exc:
            report.errors.append(
                NoteFileError(str(path), 0, f"not saved: {exc.__class__.__name__}")
            )
            log.exception("could not save %s", path)
        else:
            report.new += result.new
            report.updated += result.updated
            report.unchanged += result.unchanged
        if on_file is not None:
            on_file(path)
    return report


def ingest_default(services: Services, now: datetime | None = None) -> IngestReport:
    return ingest_paths(services, [services.settings.digests_dir], now=now)


@dataclass(frozen=True)
class LookupResult:
    """A `/prdigest` or `prdigest lookup` answer: the parsed query and one page of notes."""

    query: Query
    page: Page
    offset: int
    suggestions: tuple[Role, ...] = ()

    @property
    def role(self) -> Role | None:
        return self.query.role


def lookup(services: Services, text: str, limit: int = 10, offset: int = 0) -> LookupResult:
    """A role slug or alias lists that role's notes; anything else is a ranked text search.

    Raises QueryError for a query that cannot be run (e.g. too long).
    """
    query = parse_query(text, services.taxonomy)
    if query.role is not None:
        page = services.store.role_notes(query.role.slug, limit=limit, offset=offset)
        return LookupResult(query, page, offset)
    page = services.store.search(query, limit=limit, offset=offset)
    suggestions: tuple[Role, ...] = ()
    if page.total == 0 and query.text:
        suggestions = tuple(services.taxonomy.suggest(query.text))
    return LookupResult(query, page, offset, suggestions)


def notes_of_week(services: Services, week: str) -> list[Note]:
    start, end = week_bounds(week, services.settings.zone)
    return services.store.list_notes(since=start, until=end)


def preview_digest(services: Services, week: str | None, now: datetime) -> Digest:
    """The notes ingested in `week`; without a week, what `prdigest post` would post now.

    "Now" is every note not yet posted to `PRDIGEST_CHANNEL` (to any channel when unset),
    labelled as an addition when this week's digest already went out.
    """
    if week is not None:
        return build_digest(notes_of_week(services, week), services.taxonomy, week)
    label = week_label(now, services.settings.zone)
    ledger = Ledger(services.store.engine)
    channel = services.settings.channel
    unposted = services.store.get_notes(ledger.unposted_note_ids(channel))
    addition = ledger.week_posted(channel, label)
    return build_digest(unposted, services.taxonomy, label, addition)
