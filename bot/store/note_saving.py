"""Saving note files: new notes inserted, changed ones updated (their fixes kept),
unchanged ones skipped, each batch in one transaction; and the search text a note is stored
with (`index_note`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

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


class NoteSaving(StorePart):
    """Saving parsed note files."""

    def save_file(
        self,
        parsed: Sequence[ParsedNote],
        prepare: Callable[[ParsedNote], IndexedNote],
        now: datetime | None = None,
        *,
        replaces: SourceRule | None = None,
        known_roles: Sequence[str] | None = None,
    ) -> FileResult:
        """Insert or update one file's notes in a single transaction (all or nothing).

        `prepare` (classification and search text) runs only for notes that are new or
        changed, so re-ingesting unchanged files is cheap.
        """
        return self.save_files([parsed], prepare, now, replaces=replaces, known_roles=known_roles)[
            0
        ]

    def save_files(
        self,
        files: Sequence[Sequence[ParsedNote]],
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
        parsed: Sequence[ParsedNote],
        prepare: Callable[[ParsedNote], IndexedNote],
        now: datetime,
        replaces: SourceRule | None = None,
        known_roles: Sequence[str] | None = None,
    ) -> FileResult:
        by_key: dict[str, tuple[ParsedNote, str]] = {}
        duplicates = 0
        for note in parsed:
            key = note_key(note.repo, note.title)
            if key in by_key:
                duplicates += 1
                log.info("%s: repeats the note titled %r; first kept", note.source, note.title)
                continue
            by_key[key] = (note, content_hash(note))
        existing: dict[str, tuple[int, str, str]] = {}
        for chunk in chunks(list(by_key)):
            stmt = sa.select(notes.c.id, notes.c.key, notes.c.content_hash, notes.c.source_file)
            for found in conn.execute(stmt.where(notes.c.key.in_(chunk))):
                existing[found.key] = (found.id, found.content_hash, found.source_file)
        fresh: list[dict[str, Any]] = []
        changed: list[tuple[int, dict[str, Any]]] = []
        revised: list[tuple[int, ParsedNote, IndexedNote, str]] = []
        unchanged = duplicates
        for key, (note, digest) in by_key.items():
            if key in existing and existing[key][1] == digest:
                unchanged += 1
                continue
            if key in existing and replaces is not None:
                old_source = existing[key][2]
                if old_source != note.source_file and not replaces(note.source_file, old_source):
                    log.info("%s: the same note in %s is newer; kept", note.source, old_source)
                    unchanged += 1
                    continue
            indexed = prepare(note)
            if key in existing:
                revised.append((existing[key][0], note, indexed, digest))
            else:
                row = _note_row(note, indexed, digest)
                fresh.append({**row, "key": key, "ingested_at": now, "updated_at": now})
        fixes = fixes_of(conn, [r[0] for r in revised]) if revised else {}
        for note_id, note, indexed, digest in revised:
            fix = fixes.get(note_id)
            if fix is not None:
                indexed = index_note(note, fix.apply(indexed.classification, known_roles))
            changed.append((note_id, {**_note_row(note, indexed, digest), "updated_at": now}))
        role_rows: list[dict[str, Any]] = []
        if fresh:
            # Ids are read back by range: this transaction holds the write lock, so every
            # row above the old maximum is one of ours.
            before = conn.execute(sa.select(sa.func.max(notes.c.id))).scalar() or 0
            if conn.dialect.name == "sqlite":
                _insert_notes_sqlite(conn, fresh)
            else:
                conn.execute(notes.insert(), fresh)
            stmt = sa.select(notes.c.key, notes.c.id).where(notes.c.id > before)
            ids = {found.key: found.id for found in conn.execute(stmt)}
            for row in fresh:
                role_rows.extend(note_role_rows(ids[row["key"]], row))
            if conn.dialect.name == "sqlite":
                _index_new_rows(conn, [(ids[row["key"]], row) for row in fresh])
        for note_id, row in changed:
            conn.execute(notes.update().where(notes.c.id == note_id).values(row))
            conn.execute(note_roles.delete().where(note_roles.c.note_id == note_id))
            role_rows.extend(note_role_rows(note_id, row))
        if role_rows and conn.dialect.name == "sqlite":
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


_SQLITE_COLUMNS = [c.name for c in notes.c if c.name != "id"]
_SQLITE_INSERT = (
    f"INSERT INTO notes ({', '.join(_SQLITE_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in _SQLITE_COLUMNS)})"
)
_SQLITE_JSON = [i for i, c in enumerate(_SQLITE_COLUMNS) if c in ("roles", "role_verdicts")]
_SQLITE_TIMES = [i for i, c in enumerate(_SQLITE_COLUMNS) if c in ("ingested_at", "updated_at")]


def _insert_notes_sqlite(conn: Connection, rows: list[dict[str, Any]]) -> None:
    """Bulk insert through the driver: SQLAlchemy's per-row work was a fifth of ingest time.

    Values are stored as SQLAlchemy's SQLite types store them: JSON text, and datetimes
    as naive UTC text, so reads through SQLAlchemy see the same thing.
    """
    stamps: dict[datetime, str] = {}
    values: list[tuple[Any, ...]] = []
    for row in rows:
        value = [row[c] for c in _SQLITE_COLUMNS]
        for i in _SQLITE_JSON:
            value[i] = json.dumps(value[i])
        for i in _SQLITE_TIMES:
            moment = value[i]
            if moment not in stamps:
                stamps[moment] = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            value[i] = stamps[moment]
        values.append(tuple(value))
    conn.exec_driver_sql(_SQLITE_INSERT, values)


def _index_new_rows(conn: Connection, rows: list[tuple[int, dict[str, Any]]]) -> None:
    """Add new notes to the SQLite FTS5 tables (updates and deletes use triggers)."""
    conn.exec_driver_sql(
        "INSERT INTO notes_fts(rowid, search_body) VALUES (?, ?)",
        [(note_id, row["search_body"]) for note_id, row in rows],
    )
    conn.exec_driver_sql(
        "INSERT INTO notes_title_fts(rowid, search_title) VALUES (?, ?)",
        [(note_id, row["search_title"]) for note_id, row in rows],
    )
