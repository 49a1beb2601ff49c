"""Saving note files: new notes inserted, changed ones updated (their fixes kept),
unchanged ones skipped, each batch in one transaction; and the search text a note is stored
with (`index_note`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.domain import Classification, ParsedNote
from bot.notes.ingest import content_hash, note_key
from bot.notes.search import index_text, verdict_token
from bot.store.clock import utcnow
from bot.store.engine import StorePart
from bot.store.fixes import fixes_of
from bot.store.locks import NOTES_LOCK, lock_writes
from bot.store.rows import chunks, classification_columns, note_role_rows
from bot.store.schema import note_roles, notes

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileResult:
    """What one file's ingestion changed."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0


# Does a note read from file `new` replace the same note stored from file `old`?
SourceRule = Callable[[str, str], bool]


@dataclass(frozen=True)
class IndexedNote:
    """A note's classification and its search text, ready to store.

    Built by `index_note`; bulk ingestion builds these in worker processes.
    """

    classification: Classification
    search_title: str
    search_body: str


def index_note(parsed: ParsedNote, classification: Classification) -> IndexedNote:
    """Search text: title tokens; body = title + paragraph tokens + the verdict token."""
    title = index_text(parsed.title)
    body = f"{title} {index_text(parsed.paragraph)} {verdict_token(classification.verdict.rank)}"
    return IndexedNote(classification, title, body)


class PreparedNote(NamedTuple):
    """A parsed note with its identity key and content hash and, when already known, its
    classification and search text. Bulk ingestion prepares notes in worker processes,
    so the process writing to the database only writes."""

    note: ParsedNote
    key: str
    content_hash: str
    indexed: IndexedNote | None = None


def prepare_note(note: ParsedNote, indexed: IndexedNote | None = None) -> PreparedNote:
    return PreparedNote(note, note_key(note.repo, note.title), content_hash(note), indexed)


class NoteSaving(StorePart):
    """Saving parsed note files."""

    def save_file(
        self,
        parsed: Sequence[ParsedNote | PreparedNote],
        prepare: Callable[[ParsedNote], IndexedNote],
        now: datetime | None = None,
        *,
        replaces: SourceRule | None = None,
        known_roles: Sequence[str] | None = None,
    ) -> FileResult:
        """Insert or update one file's notes in a single transaction (all or nothing).

        `prepare` (classification and search text) runs only for notes that are new or
        changed and not prepared already, so re-ingesting unchanged files is cheap.
        """
        return self.save_files([parsed], prepare, now, replaces=replaces, known_roles=known_roles)[
            0
        ]

    def save_files(
        self,
        files: Sequence[Sequence[ParsedNote | PreparedNote]],
        prepare: Callable[[ParsedNote], IndexedNote],
        now: datetime | None = None,
        *,
        replaces: SourceRule | None = None,
        known_roles: Sequence[str] | None = None,
    ) -> list[FileResult]:
        """Save several files' notes in one transaction: all of them or none.

        Bulk ingestion batches files this way (one commit per batch is much cheaper than
        one per file) and falls back to `save_file` per file when a batch fails.
        `replaces(new_file, old_file)` decides whether a note stored from another file
        is overwritten (None: always); a note that loses counts as unchanged. A changed
        note keeps its fix (`known_roles`: the taxonomy's slugs, to drop retired roles).
        """
        now = now or utcnow()
        with self.engine.begin() as conn:
            lock_writes(conn, NOTES_LOCK)  # concurrent ingests of one folder take turns
            return [
                self._save(conn, parsed, prepare, now, replaces, known_roles) for parsed in files
            ]

    def _save(
        self,
        conn: Connection,
        parsed: Sequence[ParsedNote | PreparedNote],
        prepare: Callable[[ParsedNote], IndexedNote],
        now: datetime,
        replaces: SourceRule | None = None,
        known_roles: Sequence[str] | None = None,
    ) -> FileResult:
        by_key: dict[str, PreparedNote] = {}
        duplicates = 0
        for item in parsed:
            if not isinstance(item, PreparedNote):
                item = prepare_note(item)
            if item.key in by_key:
                duplicates += 1
                note = item.note
                log.info("%s: repeats the note titled %r; first kept", note.source, note.title)
                continue
            by_key[item.key] = item
        sqlite = conn.dialect.name == "sqlite"
        existing = _existing_sqlite(conn, list(by_key)) if sqlite else _existing(conn, list(by_key))
        fresh: list[tuple[PreparedNote, IndexedNote]] = []
        changed: list[tuple[int, dict[str, Any]]] = []
        revised: list[tuple[int, ParsedNote, IndexedNote, str]] = []
        unchanged = duplicates
        for key, item in by_key.items():
            found = existing.get(key)
            if found is not None and found[1] == item.content_hash:
                unchanged += 1
                continue
            note = item.note
            if found is not None and replaces is not None:
                old_source = found[2]
                if old_source != note.source_file and not replaces(note.source_file, old_source):
                    log.info("%s: the same note in %s is newer; kept", note.source, old_source)
                    unchanged += 1
                    continue
            indexed = item.indexed or prepare(note)
            if found is not None:
                revised.append((found[0], note, indexed, item.content_hash))
            else:
                fresh.append((item, indexed))
        fixes = fixes_of(conn, [r[0] for r in revised]) if revised else {}
        for note_id, note, indexed, digest in revised:
            fix = fixes.get(note_id)
            if fix is not None:
                indexed = index_note(note, fix.apply(indexed.classification, known_roles))
            changed.append((note_id, {**_note_row(note, indexed, digest), "updated_at": now}))
        role_rows: list[dict[str, Any]] = []
        if fresh and sqlite:
            _insert_new_sqlite(conn, fresh, now)
        elif fresh:
            rows = [
                {
                    **_note_row(item.note, indexed, item.content_hash),
                    "key": item.key,
                    "ingested_at": now,
                    "updated_at": now,
                }
                for item, indexed in fresh
            ]
            # Ids are read back by range: this transaction holds the write lock, so every
            # row above the old maximum is one of ours.
            before = conn.execute(sa.select(sa.func.max(notes.c.id))).scalar() or 0
            conn.execute(notes.insert(), rows)
            stmt = sa.select(notes.c.key, notes.c.id).where(notes.c.id > before)
            ids = {found.key: found.id for found in conn.execute(stmt)}
            for row in rows:
                role_rows.extend(note_role_rows(ids[row["key"]], row))
        for note_id, row in changed:
            conn.execute(notes.update().where(notes.c.id == note_id).values(row))
            conn.execute(note_roles.delete().where(note_roles.c.note_id == note_id))
            role_rows.extend(note_role_rows(note_id, row))
        if role_rows and sqlite:
            conn.exec_driver_sql(
                "INSERT INTO note_roles (note_id, role, verdict_rank) VALUES (?, ?, ?)",
                [(r["note_id"], r["role"], r["verdict_rank"]) for r in role_rows],
            )
        elif role_rows:
            conn.execute(note_roles.insert(), role_rows)
        return FileResult(new=len(fresh), updated=len(changed), unchanged=unchanged)

    def content_hashes(self) -> dict[str, str]:
        """Identity key -> content hash of every note: what re-ingestion can skip."""
        with self.engine.connect() as conn:
            stmt = sa.select(notes.c.key, notes.c.content_hash)
            return {row.key: row.content_hash for row in conn.execute(stmt)}


def _note_row(parsed: ParsedNote, indexed: IndexedNote, digest: str) -> dict[str, Any]:
    return {
        "repo": parsed.repo,
        "title": parsed.title,
        "paragraph": parsed.paragraph,
        "pr": parsed.pr,
        "pr_url": parsed.pr_url,
        "content_hash": digest,
        **classification_columns(indexed.classification),
        "source_file": parsed.source_file,
        "source_line": parsed.line,
        "search_title": indexed.search_title,
        "search_body": indexed.search_body,
    }


def _existing(conn: Connection, keys: list[str]) -> dict[str, tuple[int, str, str]]:
    """Identity key -> (id, content hash, source file) of the stored notes among `keys`."""
    existing: dict[str, tuple[int, str, str]] = {}
    for chunk in chunks(keys):
        stmt = sa.select(notes.c.id, notes.c.key, notes.c.content_hash, notes.c.source_file)
        for found in conn.execute(stmt.where(notes.c.key.in_(chunk))):
            existing[found.key] = (found.id, found.content_hash, found.source_file)
    return existing


def _existing_sqlite(conn: Connection, keys: list[str]) -> dict[str, tuple[int, str, str]]:
    """`_existing` through the driver: bulk ingestion asks this once per file."""
    existing: dict[str, tuple[int, str, str]] = {}
    for chunk in chunks(keys):
        marks = ", ".join("?" * len(chunk))
        found = conn.exec_driver_sql(
            f"SELECT key, id, content_hash, source_file FROM notes WHERE key IN ({marks})",
            tuple(chunk),
        )
        for key, note_id, digest, source in found:
            existing[key] = (note_id, digest, source)
    return existing


# Every column of `notes`, in the table's order: `_insert_new_sqlite` gives a new row's values
# in this order, so a column added to the table fails every SQLite insert until it is given.
_SQLITE_COLUMNS = tuple(c.name for c in notes.c)
_TITLE, _BODY = _SQLITE_COLUMNS.index("search_title"), _SQLITE_COLUMNS.index("search_body")
_SQLITE_INSERT = (
    f"INSERT INTO notes ({', '.join(_SQLITE_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _SQLITE_COLUMNS)})"
)


def _insert_new_sqlite(
    conn: Connection, fresh: list[tuple[PreparedNote, IndexedNote]], now: datetime
) -> None:
    """Insert new notes, their role rows and their full-text entries through the driver
    (SQLAlchemy's per-row work was a fifth of ingest time).

    Values are stored as SQLAlchemy's SQLite types store them: JSON text, and datetimes as
    naive UTC text, so reads through SQLAlchemy see the same thing. Ids are given, not
    read back: this transaction holds the write lock and SQLite would number the rows the
    same way (one above the largest id, row after row).
    """
    first = (conn.exec_driver_sql("SELECT max(id) FROM notes").scalar() or 0) + 1
    stamp = now.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    rows: list[tuple[Any, ...]] = []
    role_rows: list[tuple[int, str, int]] = []
    dumps = json.dumps
    for note_id, (item, indexed) in enumerate(fresh, start=first):
        note = item.note
        c = indexed.classification
        verdicts = c.role_verdicts
        rows.append(
            (
                note_id,
                item.key,
                note.repo,
                note.title,
                note.paragraph,
                note.pr,
                note.pr_url,
                item.content_hash,
                dumps(list(c.roles)),
                c.primary_role,
                c.verdict.value,
                c.verdict.rank,
                dumps({k: v.value for k, v in verdicts.items()}),
                c.excerpt,
                note.source_file,
                note.line,
                stamp,
                stamp,
                indexed.search_title,
                indexed.search_body,
                c.verdict_confidence.value,
                c.read_by,
            )
        )
        role_rows.extend((note_id, role, verdicts.get(role, c.verdict).rank) for role in c.roles)
    conn.exec_driver_sql(_SQLITE_INSERT, rows)
    if role_rows:
        conn.exec_driver_sql(
            "INSERT INTO note_roles (note_id, role, verdict_rank) VALUES (?, ?, ?)", role_rows
        )
    # New rows are indexed here, in bulk (updates and deletes use triggers).
    conn.exec_driver_sql(
        "INSERT INTO notes_fts(rowid, search_body) VALUES (?, ?)", [(r[0], r[_BODY]) for r in rows]
    )
    conn.exec_driver_sql(
        "INSERT INTO notes_title_fts(rowid, search_title) VALUES (?, ?)",
        [(r[0], r[_TITLE]) for r in rows],
    )
