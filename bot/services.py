"""Use cases shared by the CLI, the Slack listeners and the scheduler."""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from bot.classify import Classifier, build_classifier, classifier_fingerprint
from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.config import Settings
from bot.domain import Digest, Note, ParsedNote, Role
from bot.llm_reader import ModelReader, ReadStats, read_stored_notes
from bot.metrics import INGEST_OUTCOMES, Metrics, NullMetrics
from bot.notes.digest import build_digest, week_bounds, week_label
from bot.notes.ingest import (
    NoteFileError,
    content_hash,
    find_note_files,
    note_key,
    parse_note_file,
    scan_note_paths,
)
from bot.notes.sample_notes import sample_identities, team_notes_dir
from bot.notes.search import Query, parse_query
from bot.store import (
    IndexedNote,
    NoteRemoval,
    Page,
    PreparedNote,
    Store,
    index_note,
    prepare_note,
)
from bot.store.ledger import Ledger

log = logging.getLogger(__name__)

INGEST_BATCH_NOTES = 5000  # notes per transaction when ingesting many files
PARALLEL_MIN_FILES = 16  # from this many files on, parse and classify in worker processes
PREPARE_WORKERS = 2
FINGERPRINT_KEY = "classifier_fingerprint"  # store_meta: what the stored notes were classified by


@dataclass
class Services:
    """What every entry point needs: settings, the store, the taxonomy and where the use
    cases report their metrics (`bot.metrics`)."""

    settings: Settings
    store: Store
    taxonomy: Taxonomy
    metrics: Metrics = field(default_factory=NullMetrics)

    @classmethod
    def build(cls, settings: Settings, metrics: Metrics | None = None) -> Services:
        taxonomy = load_taxonomy(settings.roles_file)
        return cls(
            settings=settings,
            store=Store.open(settings.database_url),
            taxonomy=taxonomy,
            metrics=metrics or NullMetrics(),
        )

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
    read: list[Path] = field(default_factory=list)  # note files found and read
    skipped: list[Path] = field(default_factory=list)  # in the folders, not note files
    reading: ReadStats | None = None  # what the model server read (PRDIGEST_LLM_URL)

    @property
    def failed(self) -> int:
        return len(self.errors)

    def summary(self) -> str:
        return (
            f"{self.new} new, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.failed} failed ({self.files} {'file' if self.files == 1 else 'files'})"
        )


def ingest_paths(
    services: Services,
    paths: Sequence[Path],
    on_file: Callable[[Path], None] | None = None,
    now: datetime | None = None,
    reader: ModelReader | None = None,
) -> IngestReport:
    """Parse, classify and store every note file; a bad file is reported, the rest land.

    With a `reader`, once every note is stored, the model server reads the notes it should
    (`bot.llm_reader.read_stored_notes`): a server that fails costs no note.

    Files are saved in batches of about INGEST_BATCH_NOTES notes per transaction (a
    failed batch is retried file by file, so each file still lands all or nothing).
    With many files, parsing and classification run in worker processes while this
    process writes to the database.
    """
    report = IngestReport()
    store = services.store
    fresh_store = store.get_meta(FINGERPRINT_KEY) is None and store.count_notes() == 0
    missing = [p for p in paths if not p.exists()]
    report.errors.extend(NoteFileError(str(p), 0, "not found") for p in missing)
    files, report.skipped = scan_note_paths([p for p in paths if p.exists()])
    report.read = files
    batch: list[PreparedFile] = []
    pending = 0
    for prepared in _prepare_files(files, services):
        report.files += 1
        if isinstance(prepared, NoteFileError):
            report.errors.append(prepared)
            log.info("skipped %s", prepared)
            if on_file is not None:
                on_file(Path(prepared.source_file))
            continue
        batch.append(prepared)
        pending += len(prepared.notes)
        if pending >= INGEST_BATCH_NOTES:
            _save_batch(services, batch, report, on_file, now)
            batch, pending = [], 0
    if batch:
        _save_batch(services, batch, report, on_file, now)
    for outcome in INGEST_OUTCOMES:
        services.metrics.notes_ingested(outcome, getattr(report, outcome))
    if fresh_store and report.new:
        # Every stored note was classified by the current roles and rules.
        store.set_meta(FINGERPRINT_KEY, classifier_fingerprint(services.taxonomy))
    if reader is not None:
        report.reading = read_stored_notes(store, services.taxonomy, reader)
    return report


class NewestFileWins:
    """Which file a note read from two files comes from: the newest file (by modification
    time; on a tie the later name), so re-ingesting both changes nothing."""

    def __init__(self) -> None:
        self._ranks: dict[str, tuple[int, str] | None] = {}

    def _rank(self, name: str) -> tuple[int, str] | None:
        if name not in self._ranks:
            try:
                self._ranks[name] = (Path(name).stat().st_mtime_ns, name)
            except OSError:
                self._ranks[name] = None
        return self._ranks[name]

    def __call__(self, new: str, old: str) -> bool:
        old_rank = self._rank(old)
        new_rank = self._rank(new)
        return old_rank is None or new_rank is None or new_rank >= old_rank


@dataclass
class PreparedFile:
    """A parsed file whose notes carry their identity and, where the worker process that
    read the file classified them, their classification and search text (notes the store
    already has unchanged are not classified)."""

    path: Path
    notes: list[PreparedNote]


def _prepare_files(files: list[Path], services: Services) -> Iterator[PreparedFile | NoteFileError]:
    """Parse files in order; in worker processes (which also classify) when there are many."""
    workers = min(PREPARE_WORKERS, os.cpu_count() or 1)
    if len(files) < PARALLEL_MIN_FILES or workers < 1:
        for path in files:
            try:
                yield PreparedFile(path, [prepare_note(n) for n in parse_note_file(path)])
            except NoteFileError as exc:
                yield exc
        return
    known = services.store.content_hashes()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers,
        mp_context=context,
        initializer=_start_worker,
        initargs=(services.taxonomy, known),
    ) as pool:
        yield from pool.map(_prepare_in_worker, files, chunksize=4)


_worker_classifier: Classifier | None = None
_worker_known: dict[str, str] = {}


def _start_worker(taxonomy: Taxonomy, known: dict[str, str]) -> None:
    global _worker_classifier, _worker_known
    _worker_classifier = build_classifier(taxonomy)
    _worker_known = known


def _prepare_in_worker(path: Path) -> PreparedFile | NoteFileError:
    """Parse a file and classify the notes the store does not already have as they are."""
    try:
        notes = parse_note_file(path)
    except NoteFileError as exc:
        return exc
    assert _worker_classifier is not None
    classify = _worker_classifier.classify
    known = _worker_known
    prepared: list[PreparedNote] = []
    for note in notes:
        item = prepare_note(note)
        if known.get(item.key) != item.content_hash:
            item = item._replace(indexed=index_note(note, classify(note.title, note.paragraph)))
        prepared.append(item)
    return PreparedFile(path, prepared)


def _save_batch(
    services: Services,
    batch: list[PreparedFile],
    report: IngestReport,
    on_file: Callable[[Path], None] | None,
    now: datetime | None,
) -> None:
    """Save a batch in one transaction; if that fails, file by file."""
    store = services.store
    classifiers: list[Classifier] = []

    def prepare(note: ParsedNote) -> IndexedNote:
        # Only notes no worker process classified come here; the classifier is built
        # on the first.
        if not classifiers:
            classifiers.append(build_classifier(services.taxonomy))
        return index_note(note, classifiers[0].classify(note.title, note.paragraph))

    rule = NewestFileWins()
    known = services.taxonomy.slugs
    try:
        results = store.save_files(
            [p.notes for p in batch], prepare, now, replaces=rule, known_roles=known
        )
    except sa.exc.SQLAlchemyError:
        log.warning("a batch of %d files failed; saving them one by one", len(batch))
        results = []
        for prepared in batch:
            try:
                results.append(
                    store.save_file(prepared.notes, prepare, now, replaces=rule, known_roles=known)
                )
            except sa.exc.SQLAlchemyError as exc:
                reason = f"not saved: {exc.__class__.__name__}"
                report.errors.append(NoteFileError(str(prepared.path), 0, reason))
                log.exception("could not save %s", prepared.path)
    for result in results:
        report.new += result.new
        report.updated += result.updated
        report.unchanged += result.unchanged
    if on_file is not None:
        for prepared in batch:
            on_file(prepared.path)


def notes_not_ingested(services: Services) -> int:
    """How many notes in PRDIGEST_DIGESTS_DIR are new or changed (read-only check).

    Raises NotesFolderError when the folder is unset or holds the bundled samples.
    """
    known = services.store.content_hashes()
    count = 0
    for path in find_note_files([team_notes_dir(services.settings.digests_dir)]):
        try:
            notes = parse_note_file(path)
        except NoteFileError:
            continue
        count += sum(known.get(note_key(n.repo, n.title)) != content_hash(n) for n in notes)
    return count


def ingest_default(services: Services, now: datetime | None = None) -> IngestReport:
    """Ingest the team's notes folder (PRDIGEST_DIGESTS_DIR).

    Raises NotesFolderError, ingesting nothing, when it is unset or holds the bundled sample
    notes. An empty folder ingests nothing.
    """
    return ingest_paths(services, [team_notes_dir(services.settings.digests_dir)], now=now)


def sample_note_ids(services: Services) -> list[int]:
    """The stored notes that are bundled sample notes (same identity and content), by id:
    never posted, and removed by `prdigest remove-samples`."""
    return services.store.notes_with_identity(sample_identities())


def remove_sample_notes(services: Services, dry_run: bool = False) -> NoteRemoval:
    """Remove the bundled sample notes from the store with the rows that exist for them
    alone (`bot.store.note_removal`); with `dry_run`, only count them. Nothing is removed
    while an unfinished digest run holds one of them (`NoteRemoval.open_runs`)."""
    ids = sample_note_ids(services)
    if dry_run:
        return services.store.plan_removal(ids)
    return services.store.remove_notes(ids)


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
        if not suggestions:
            # Each word alone: "kernal fusion" is close to `kernels`.
            close = {
                r.slug: r for word in query.text.split() for r in services.taxonomy.suggest(word)
            }
            suggestions = tuple(close.values())[:3]
    return LookupResult(query, page, offset, suggestions)


def notes_of_week(services: Services, week: str) -> list[Note]:
    start, end = week_bounds(week, services.settings.zone)
    return services.store.list_notes(since=start, until=end)


def latest_digest(services: Services) -> Digest | None:
    """The newest digest posted to PRDIGEST_CHANNEL (with its additions), if any."""
    found = Ledger(services.store.engine).latest_week_notes(services.settings.channel)
    if found is None:
        return None
    week, ids = found
    return build_digest(services.store.get_notes(ids), services.taxonomy, week)


def preview_digest(
    services: Services, week: str | None, now: datetime, *, samples: bool = False
) -> Digest:
    """The notes ingested in `week`; without a week, what `prdigest post` would post now.

    "Now" is every note not yet posted to `PRDIGEST_CHANNEL` (to any channel when unset),
    labelled as an addition when this week's digest already went out. Bundled sample notes
    are left out, as `post` leaves them out, unless `samples` (a preview of the samples).
    """
    held = set() if samples else set(sample_note_ids(services))
    if week is not None:
        noted = [n for n in notes_of_week(services, week) if n.id not in held]
        return build_digest(noted, services.taxonomy, week)
    label = week_label(now, services.settings.zone)
    ledger = Ledger(services.store.engine)
    channel = services.settings.channel
    ids = [i for i in ledger.unposted_note_ids(channel) if i not in held]
    addition = ledger.week_posted(channel, label)
    return build_digest(services.store.get_notes(ids), services.taxonomy, label, addition)


@dataclass(frozen=True)
class PostedThread:
    """One role's thread of a posted digest run, its notes in the order it shows them."""

    role: Role
    addition: bool  # the thread of a follow-up ("补充 / addition") run
    notes: tuple[Note, ...]


@dataclass(frozen=True)
class WeekDigest:
    """A week's digest for `/prdigest week`, and where its notes come from.

    For a posted week, `threads` holds its notes as the channel shows them (a note fixed
    since stays in the thread it was posted in) and `fixed_since` the notes fixed after
    they were posted.
    """

    digest: Digest
    source: str  # "posted", "upcoming" (this week, not posted yet) or "ingested"
    threads: tuple[PostedThread, ...] = ()
    fixed_since: frozenset[int] = frozenset()


def week_digest(services: Services, week: str | None, now: datetime) -> WeekDigest:
    """The digest posted for `week` (default: this week) with its additions; for a week
    without one, this week's upcoming digest or the notes ingested in that earlier week.

    Raises ValueError for a label that is not an ISO week.
    """
    zone = services.settings.zone
    current = week_label(now, zone)
    label = week or current
    week_bounds(label, zone)  # validates the label
    channel = services.settings.channel
    posted = Ledger(services.store.engine).week_as_posted(channel, label)
    if posted:
        notes = {n.id: n for n in services.store.get_notes([p.note_id for p in posted])}
        threads: dict[tuple[int, str], list[Note]] = {}
        additions: set[int] = set()
        for item in posted:
            if item.note_id in notes:
                threads.setdefault((item.run_id, item.role), []).append(notes[item.note_id])
            if item.addition:
                additions.add(item.run_id)
        return WeekDigest(
            build_digest(notes.values(), services.taxonomy, label),
            "posted",
            threads=tuple(
                PostedThread(_thread_role(services.taxonomy, slug), run in additions, tuple(ns))
                for (run, slug), ns in threads.items()
            ),
            fixed_since=frozenset(p.note_id for p in posted if p.fixed_since),
        )
    if label == current:
        upcoming = preview_digest(services, None, now)
        return WeekDigest(build_digest(upcoming.notes, services.taxonomy, label), "upcoming")
    return WeekDigest(preview_digest(services, label, now), "ingested")


def _thread_role(taxonomy: Taxonomy, slug: str) -> Role:
    """The role of a posted thread; one that left the taxonomy since keeps its slug."""
    try:
        return taxonomy.get(slug)
    except KeyError:
        return Role(slug=slug, name_zh=slug, name_en=slug)
