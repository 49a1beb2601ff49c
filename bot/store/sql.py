"""The one store implementation: SQLAlchemy Core over SQLite or PostgreSQL."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from bot.config import hide_password, masked_url
from bot.domain import Classification, Confidence, Note, NoteFix, ParsedNote, Verdict, count_text
from bot.notes.ingest import content_hash, note_key
from bot.notes.search import Query, QueryTerm, index_text, match_ids, verdict_token
from bot.store.clock import aware, utcnow
from bot.store.locks import MIGRATION_LOCK, NOTES_LOCK, lock_reader, lock_writes
from bot.store.readers import Readers
from bot.store.schema import (
    llm_readings,
    metadata,
    note_fixes,
    note_roles,
    notes,
    store_meta,
    subscriptions,
)

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"
WAL_SWITCH_SECONDS = 30  # as long as the busy timeout
SCHEMA_HEAD = "0008"  # the newest revision in migrations/versions (a test checks it)
_CHUNK = 500
COUNT_CAP = 1000
MAX_ROW_ID = 2**63 - 1  # the largest id SQLite INTEGER and PostgreSQL BIGINT hold
TITLE_TIER_MAX = 200


DATABASE_SETTING = "PRDIGEST_DATABASE_URL"
CONNECT_TIMEOUT_SECONDS = 5


class StoreError(RuntimeError):
    """The database cannot be reached or migrated; the message says which."""


_SQLITE_QUERY_FAULTS = ("no such", "syntax error", "table ", "near ")


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` means the database cannot be reached right now (down, restarting,
    connection dropped) rather than a fault in a query."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa.exc.OperationalError) and type(exc.orig).__module__ == "sqlite3":
        # SQLite reports a broken query as an "operational" error too.
        return not str(exc.orig).startswith(_SQLITE_QUERY_FAULTS)
    return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError | sa.exc.TimeoutError)


def describe_unavailable(exc: BaseException, url: str, setting: str = DATABASE_SETTING) -> str:
    """One line naming the database (password masked), the cause and what to check."""
    reason = hide_password(_first_line(exc), url)
    fix = (
        "that its folder exists and is writable"
        if url.startswith("sqlite")
        else "that the database server is running"
    )
    return f"the database at {masked_url(url)} is unavailable ({reason}): check {setting} and {fix}"


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


@dataclass(frozen=True)
class Page:
    """One page of notes and how many matched in all (at least, when `capped`)."""

    notes: list[Note]
    total: int
    capped: bool = False
    any_word: bool = False  # no note had every word: these have at least one

    @property
    def total_text(self) -> str:
        """The total as people read it: "1,010+" when counting stopped at the cap."""
        return count_text(self.total, self.capped)


def _filter_notes(
    stmt: sa.Select[Any], role: str | None, since: datetime | None, until: datetime | None
) -> sa.Select[Any]:
    """Narrow a select over `notes` to one role's notes ingested within [since, until)."""
    if role is not None:
        stmt = stmt.join(note_roles, note_roles.c.note_id == notes.c.id).where(
            note_roles.c.role == role
        )
    if since is not None:
        stmt = stmt.where(notes.c.ingested_at >= since)
    if until is not None:
        stmt = stmt.where(notes.c.ingested_at < until)
    return stmt


def _use_wal(cursor: Any) -> None:
    """Switch to WAL, waiting for other processes doing the same.

    Two connections switching a new file at once both hold a shared lock and both want the
    exclusive one; SQLite answers one of them "database is locked" at once rather than call
    the busy handler (waiting could deadlock). Its statement has ended, so it may retry.
    """
    deadline = time.monotonic() + WAL_SWITCH_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    _use_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA cache_size=-65536")  # 64 MiB: FTS merges and bulk ingest
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.execute("PRAGMA wal_autocheckpoint=10000")  # fewer, larger checkpoints (40 MiB)
    cursor.close()


def create_db_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # pool_pre_ping replaces connections a database restart dropped; the connect timeout
    # keeps a request from hanging on a host that does not answer.
    return sa.create_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=10,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS},
    )


def _current_revision(conn: Connection) -> str | None:
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (a no-op when already there).

    Alembic is imported only when there is something to do: it is most of the start-up
    time of a short command such as `prdigest lookup`.
    """
    with engine.connect() as conn:
        if _current_revision(conn) == SCHEMA_HEAD:
            return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        lock_writes(conn, MIGRATION_LOCK)  # several replicas may start at once
        if _current_revision(conn) == SCHEMA_HEAD:
            return
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def _row_to_note(row: Any) -> Note:
    return Note(
        id=row.id,
        repo=row.repo,
        title=row.title,
        paragraph=row.paragraph,
        pr=row.pr,
        pr_url=row.pr_url,
        roles=tuple(row.roles),
        primary_role=row.primary_role,
        verdict=Verdict(row.verdict),
        role_verdicts={k: Verdict(v) for k, v in (row.role_verdicts or {}).items()},
        excerpt=row.excerpt,
        verdict_confidence=Confidence(row.verdict_confidence),
        read_by=row.read_by,
        source=f"{row.source_file}:{row.source_line}",
        ingested_at=aware(row.ingested_at),
        updated_at=aware(row.updated_at),
    )


def _row_to_fix(row: Any) -> NoteFix:
    return NoteFix(
        note_id=row.note_id,
        roles=tuple(row.roles),
        primary_role=row.primary_role,
        verdict=Verdict(row.verdict) if row.verdict else None,
        fixed_by=row.fixed_by,
        fixed_at=aware(row.fixed_at),
        revision=row.revision,
    )


_NOTE_COLUMNS = [c for c in notes.c if c.name not in ("search_title", "search_body")]


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class Store:
    """Notes, roles, full-text search and subscriptions in one SQL database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str, setting: str = DATABASE_SETTING) -> Store:
        """Connect and migrate; a bad URL or unreachable server raises StoreError whose
        message names `setting` (the variable or argument the URL came from)."""
        try:
            engine = create_db_engine(url)
        except (sa.exc.SQLAlchemyError, ValueError, ImportError) as exc:
            raise StoreError(
                f"cannot use the database URL {masked_url(url)} "
                f"({hide_password(_first_line(exc), url)}): check {setting}"
            ) from None
        try:
            migrate(engine)
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            engine.dispose()
            raise StoreError(describe_unavailable(exc, url, setting)) from None
        return cls(engine)

    @property
    def readers(self) -> Readers:
        """Verdict filters, saved searches and pauses."""
        return Readers(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError:
            return False
        return True

    # -- notes -----------------------------------------------------------------------

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
        for chunk in _chunks(list(by_key)):
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
        fixes = self._fixes(conn, [r[0] for r in revised]) if revised else {}
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
                role_rows.extend(_role_rows(ids[row["key"]], row))
            if conn.dialect.name == "sqlite":
                _index_new_rows(conn, [(ids[row["key"]], row) for row in fresh])
        for note_id, row in changed:
            conn.execute(notes.update().where(notes.c.id == note_id).values(row))
            conn.execute(note_roles.delete().where(note_roles.c.note_id == note_id))
            role_rows.extend(_role_rows(note_id, row))
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

    def count_notes(self, role: str | None = None, since: datetime | None = None) -> int:
        """How many notes `list_notes` would list without a limit."""
        stmt = _filter_notes(sa.select(sa.func.count()).select_from(notes), role, since, None)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def get_notes(self, ids: Iterable[int]) -> list[Note]:
        """Notes by id, in the order given (missing ids are left out)."""
        with self.engine.connect() as conn:
            return self._notes_by_id(conn, list(ids))

    @staticmethod
    def _notes_by_id(conn: Connection, wanted: list[int]) -> list[Note]:
        found: dict[int, Note] = {}
        # An id no database integer can hold (a mistyped or forged one) is simply missing.
        askable = [i for i in wanted if 0 < i <= MAX_ROW_ID]
        for chunk in _chunks(askable):
            for row in conn.execute(sa.select(*_NOTE_COLUMNS).where(notes.c.id.in_(chunk))):
                found[row.id] = _row_to_note(row)
        return [found[i] for i in wanted if i in found]

    def list_notes(
        self,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[Note]:
        """Notes oldest first, optionally one role's and within [since, until)."""
        stmt = _filter_notes(sa.select(*_NOTE_COLUMNS).order_by(notes.c.id), role, since, until)
        if limit is not None:
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [_row_to_note(row) for row in conn.execute(stmt)]

    def role_notes(self, role: str, limit: int, offset: int = 0) -> Page:
        """One role's notes: deep before skim before skip (for that role), newest first."""
        stmt = (
            sa.select(*_NOTE_COLUMNS)
            .join(note_roles, note_roles.c.note_id == notes.c.id)
            .where(note_roles.c.role == role)
            .order_by(note_roles.c.verdict_rank, note_roles.c.note_id.desc())
            .limit(limit)
            .offset(offset)
        )
        count = sa.select(sa.func.count()).select_from(note_roles).where(note_roles.c.role == role)
        with self.engine.connect() as conn:
            rows = [_row_to_note(row) for row in conn.execute(stmt)]
            total = int(conn.execute(count).scalar_one())
        return Page(rows, total)

    def search(self, query: Query, limit: int, offset: int = 0) -> Page:
        """Free-text search: the notes with every word (`search.has_every_word`, the rule
        of a watch); if no note has them all, the notes with any word (`any_word`).

        Ranked in tiers: all terms in the title first, then deep before skim before skip,
        then newest. Discrete tiers (rather than a score over every match) let the index
        be read in order and stop after one page, so cost does not grow with the corpus.
        `total` is exact up to COUNT_CAP past the page; beyond that it is a lower bound
        and the page says `capped`.
        """
        if not query.terms:
            return Page([], 0)
        cap = offset + limit + COUNT_CAP
        operators = ["AND", "OR"] if len(query.terms) > 1 else ["AND"]
        search = self._search_sqlite if self.dialect == "sqlite" else self._search_postgres
        with self.engine.connect() as conn:
            for operator in operators:
                ids, total = search(conn, query.terms, operator, limit, offset, cap + 1)
                if total:
                    break
            return Page(
                self._notes_by_id(conn, ids),
                min(total, cap),
                capped=total > cap,
                any_word=operator == "OR",
            )

    def matching(self, query: Query, among: Sequence[int]) -> set[int]:
        """The notes of `among` that have every word of `query` (`search.has_every_word`).

        Saved searches (`watch`) pick a digest's notes with this: it reads only those
        notes' indexed words, so its cost does not grow with the corpus.
        """
        return match_ids(query, self.search_tokens(among))

    def search_tokens(self, ids: Sequence[int]) -> dict[int, frozenset[str]]:
        """The words the full-text index holds for each note (title, paragraph, verdict)."""
        found: dict[int, frozenset[str]] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(ids)):
                stmt = sa.select(notes.c.id, notes.c.search_body).where(notes.c.id.in_(chunk))
                for row in conn.execute(stmt):
                    found[row.id] = frozenset(row.search_body.split())
        return found

    @staticmethod
    def _search_sqlite(
        conn: Connection, terms: Sequence[QueryTerm], op: str, limit: int, offset: int, cap: int
    ) -> tuple[list[int], int]:
        expr = "(" + f" {op} ".join(_fts5_term(t) for t in terms) + ")"
        newest = sa.text(
            "SELECT rowid FROM notes_fts WHERE notes_fts MATCH :q ORDER BY rowid DESC LIMIT :n"
        )
        count_sql = sa.text(
            "SELECT count(*) FROM (SELECT 1 FROM notes_fts WHERE notes_fts MATCH :q LIMIT :cap)"
        )
        total = int(conn.execute(count_sql, {"q": expr, "cap": cap}).scalar_one())
        if total == 0:
            return [], 0
        title_sql = sa.text(
            "SELECT rowid FROM notes_title_fts WHERE notes_title_fts MATCH :q "
            "ORDER BY rowid DESC LIMIT :n"
        )
        title_ids = list(conn.execute(title_sql, {"q": expr, "n": TITLE_TIER_MAX + 1}).scalars())
        ranked: list[int] = []
        if len(title_ids) <= TITLE_TIER_MAX:
            # Title hits (usually few) come first, ranked here; past the cap the title tier
            # is dropped and every match is ranked by verdict, then newest.
            rank_stmt = sa.select(notes.c.id, notes.c.verdict_rank)
            rank_of = {
                row.id: row.verdict_rank
                for row in conn.execute(rank_stmt.where(notes.c.id.in_(title_ids)))
            }
            ranked = sorted(title_ids, key=lambda i: (rank_of[i], -i))
        buckets = [f'{expr} AND "{verdict_token(rank)}"' for rank in (0, 1, 2)]
        exclude = set(ranked)
        ids = ranked[offset : offset + limit]
        skip = max(0, offset - len(ranked))
        for bucket in buckets:
            need = limit - len(ids)
            if need <= 0:
                break
            fetch = need + skip + len(exclude)
            found = [
                i
                for i in conn.execute(newest, {"q": bucket, "n": fetch}).scalars()
                if i not in exclude
            ]
            ids.extend(found[skip : skip + need])
            skip = max(0, skip - len(found))
        return ids, total

    @staticmethod
    def _search_postgres(
        conn: Connection, terms: Sequence[QueryTerm], op: str, limit: int, offset: int, cap: int
    ) -> tuple[list[int], int]:
        match = (" & " if op == "AND" else " | ").join(_tsquery_term(t) for t in terms)
        title = "to_tsvector('simple', search_title)"
        vector = f"(setweight({title}, 'A') || setweight(to_tsvector('simple', search_body), 'B'))"
        page_sql = sa.text(
            f"SELECT n.id FROM notes AS n, to_tsquery('simple', :q) AS q "
            f"WHERE {vector} @@ q "
            f"ORDER BY ({title} @@ q) DESC, n.verdict_rank, n.id DESC "
            "LIMIT :limit OFFSET :offset"
        )
        count_sql = sa.text(
            f"SELECT count(*) FROM (SELECT 1 FROM notes "
            f"WHERE {vector} @@ to_tsquery('simple', :q) LIMIT :cap) AS matches"
        )
        ids = list(conn.execute(page_sql, {"q": match, "limit": limit, "offset": offset}).scalars())
        total = int(conn.execute(count_sql, {"q": match, "cap": cap}).scalar_one())
        return ids, total

    # -- corrections and re-classification -------------------------------------------

    @staticmethod
    def _fixes(conn: Connection, ids: Sequence[int]) -> dict[int, NoteFix]:
        found: dict[int, NoteFix] = {}
        for chunk in _chunks(list(ids)):
            for row in conn.execute(sa.select(note_fixes).where(note_fixes.c.note_id.in_(chunk))):
                found[row.note_id] = _row_to_fix(row)
        return found

    def fixes_for(self, ids: Iterable[int]) -> dict[int, NoteFix]:
        """note id -> its fix, for the notes given that have one."""
        with self.engine.connect() as conn:
            return self._fixes(conn, list(ids))

    def get_fix(self, note_id: int) -> NoteFix | None:
        return self.fixes_for([note_id]).get(note_id)

    def save_fix(
        self,
        note_id: int,
        classification: Classification,
        fix: NoteFix,
        now: datetime | None = None,
    ) -> NoteFix:
        """Store `fix` (its revision counted up) and the note's classification with the
        fix applied, in one transaction. KeyError when the note does not exist.

        The note's row is locked first, so fixes of one note made at once take turns:
        each gets its own revision and the last one stored is the one applied.
        """
        now = now or utcnow()
        with self.engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql("BEGIN IMMEDIATE")  # SQLite has no row locks
            row = conn.execute(
                sa.select(notes.c.id, notes.c.search_body)
                .where(notes.c.id == note_id)
                .with_for_update()
            ).first()
            if row is None:
                raise KeyError(note_id)
            before = conn.execute(
                sa.select(note_fixes.c.revision).where(note_fixes.c.note_id == note_id)
            ).scalar()
            stored = replace(fix, note_id=note_id, fixed_at=now, revision=(before or 0) + 1)
            values = {
                "roles": list(stored.roles),
                "primary_role": stored.primary_role,
                "verdict": stored.verdict.value if stored.verdict else None,
                "revision": stored.revision,
                "fixed_by": stored.fixed_by,
                "fixed_at": now,
            }
            if before is None:
                conn.execute(note_fixes.insert().values(note_id=note_id, **values))
            else:
                conn.execute(
                    note_fixes.update().where(note_fixes.c.note_id == note_id).values(values)
                )
            self._classify_rows(conn, [(note_id, row.search_body, classification)])
        return stored

    def reclassify_batch(self, items: Sequence[tuple[int, Classification]]) -> None:
        """Store new classifications of existing notes (search text follows the verdict)."""
        if not items:
            return
        with self.engine.begin() as conn:
            bodies: dict[int, str] = {}
            for chunk in _chunks([i for i, _ in items]):
                stmt = sa.select(notes.c.id, notes.c.search_body).where(notes.c.id.in_(chunk))
                bodies.update((row.id, row.search_body) for row in conn.execute(stmt))
            self._classify_rows(conn, [(i, bodies[i], c) for i, c in items if i in bodies])

    @staticmethod
    def _classify_rows(conn: Connection, items: Sequence[tuple[int, str, Classification]]) -> None:
        """Write classifications in bulk: one executemany per statement, not per note."""
        role_rows: list[dict[str, Any]] = []
        same_verdict: list[dict[str, Any]] = []
        new_verdict: list[dict[str, Any]] = []
        for note_id, body, c in items:
            row = {"note": note_id, **_classification_columns(c)}
            head, _, token = body.rpartition(" ")
            if token == verdict_token(c.verdict.rank):
                same_verdict.append(row)
            else:
                # The search text carries the verdict; re-indexing it is the costly part,
                # so it is written only when the verdict changed.
                new_verdict.append(
                    {**row, "search_body": f"{head} {verdict_token(c.verdict.rank)}"}
                )
            role_rows.extend(_role_rows(note_id, row))
        for rows in (same_verdict, new_verdict):
            if rows:
                columns: dict[str, Any] = {n: sa.bindparam(n) for n in rows[0] if n != "note"}
                stmt = notes.update().where(notes.c.id == sa.bindparam("note")).values(columns)
                conn.execute(stmt, rows)
        for chunk in _chunks([note_id for note_id, _, _ in items]):
            conn.execute(note_roles.delete().where(note_roles.c.note_id.in_(chunk)))
        if role_rows:
            conn.execute(note_roles.insert(), role_rows)

    # -- readings by a model server -----------------------------------------------------

    def cached_readings(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Reading key -> the stored answer, for the keys that have one."""
        found: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(list(dict.fromkeys(keys))):
                stmt = sa.select(llm_readings.c.key, llm_readings.c.reading)
                for row in conn.execute(stmt.where(llm_readings.c.key.in_(chunk))):
                    found[row.key] = row.reading
        return found

    def save_readings(
        self, readings: Sequence[tuple[str, str, dict[str, Any]]], now: datetime | None = None
    ) -> None:
        """Store (key, model, reading) answers; a key stored meanwhile (another replica
        read the same text) is overwritten with the same reading."""
        if not readings:
            return
        rows = [
            {"key": k, "model": m, "reading": r, "read_at": now or utcnow()}
            for k, m, r in dict((k, (k, m, r)) for k, m, r in readings).values()
        ]
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert as pg_insert

                pg = pg_insert(llm_readings)
                stmt: sa.Insert = pg.on_conflict_do_update(
                    index_elements=["key"], set_={"reading": pg.excluded.reading}
                )
            else:
                from sqlalchemy.dialects.sqlite import insert as sqlite_insert

                lite = sqlite_insert(llm_readings)
                stmt = lite.on_conflict_do_update(
                    index_elements=["key"], set_={"reading": lite.excluded.reading}
                )
            for chunk in _chunks(rows):
                conn.execute(stmt, list(chunk))

    def recent_fixes(self, limit: int) -> list[tuple[Note, NoteFix]]:
        """The newest editor fixes (newest first) with their notes as stored (fix applied)."""
        stmt = (
            sa.select(*_NOTE_COLUMNS, *(c.label(f"fix_{c.name}") for c in note_fixes.c))
            .join(note_fixes, note_fixes.c.note_id == notes.c.id)
            .order_by(note_fixes.c.fixed_at.desc(), notes.c.id.desc())
            .limit(limit)
        )
        found: list[tuple[Note, NoteFix]] = []
        with self.engine.connect() as conn:
            for row in conn.execute(stmt):
                fix = NoteFix(
                    note_id=row.fix_note_id,
                    roles=tuple(row.fix_roles),
                    primary_role=row.fix_primary_role,
                    verdict=Verdict(row.fix_verdict) if row.fix_verdict else None,
                    fixed_by=row.fix_fixed_by,
                    fixed_at=aware(row.fix_fixed_at),
                    revision=row.fix_revision,
                )
                found.append((_row_to_note(row), fix))
        return found

    def notes_after(self, after_id: int, limit: int) -> list[Note]:
        """Up to `limit` notes with an id above `after_id`, by id (to walk every note)."""
        stmt = sa.select(*_NOTE_COLUMNS).where(notes.c.id > after_id).order_by(notes.c.id)
        with self.engine.connect() as conn:
            return [_row_to_note(row) for row in conn.execute(stmt.limit(limit))]

    def get_meta(self, key: str) -> str | None:
        with self.engine.connect() as conn:
            return conn.execute(
                sa.select(store_meta.c.value).where(store_meta.c.key == key)
            ).scalar()

    def set_meta(self, key: str, value: str) -> None:
        """Set a fact in one statement (insert or replace), so replicas writing the same
        key at the same moment neither fail nor leave two rows."""
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        stmt = insert(store_meta).values(key=key, value=value)
        stmt = stmt.on_conflict_do_update(
            index_elements=[store_meta.c.key], set_={"value": stmt.excluded.value}
        )
        with self.engine.begin() as conn:
            conn.execute(stmt)

    # -- moving between databases ----------------------------------------------------

    def copy_to(self, target: Store, batch: int = 5000) -> dict[str, int]:
        """Copy every table (notes, subscriptions, the delivery ledger) into an empty store.

        Used to move from SQLite to PostgreSQL without re-posting anything: the ledger
        moves with the notes. Returns rows copied per table.
        """
        if target.count_notes():
            raise StoreError("the target database already has notes; copy into an empty one")
        copied: dict[str, int] = {}
        with self.engine.connect() as source, target.engine.begin() as dest:
            for table in metadata.sorted_tables:
                count = 0
                rows = source.execute(sa.select(table)).mappings()
                while chunk := rows.fetchmany(batch):
                    dest.execute(table.insert(), [dict(row) for row in chunk])
                    count += len(chunk)
                copied[table.name] = count
            if dest.dialect.name == "sqlite":
                for fts in ("notes_fts", "notes_title_fts"):
                    dest.exec_driver_sql(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
            else:
                for table in metadata.sorted_tables:
                    if "id" in table.c and table.c.id.autoincrement is True:
                        dest.execute(
                            sa.text(
                                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                                f"COALESCE((SELECT max(id) FROM {table.name}), 0) + 1, false)"
                            )
                        )
        return copied

    # -- subscriptions ---------------------------------------------------------------

    def subscribe(
        self,
        team_id: str,
        user_id: str,
        roles: Iterable[str],
        level: Verdict | None = None,
    ) -> list[str]:
        """Add roles to a user's subscriptions; returns the ones that were new.

        `level` is the least verdict wanted from the new ones (None: every note); an
        existing subscription keeps its filter (`Readers.set_level` changes it).
        """
        added: list[str] = []
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            have = self._user_roles(conn, team_id, user_id)
            for role in dict.fromkeys(roles):
                if role in have:
                    continue
                conn.execute(
                    subscriptions.insert().values(
                        team_id=team_id,
                        user_id=user_id,
                        role=role,
                        created_at=utcnow(),
                        min_verdict=level.value if level else None,
                    )
                )
                added.append(role)
        return added

    def unsubscribe(self, team_id: str, user_id: str, roles: Iterable[str] | None) -> list[str]:
        """Remove roles (all of them when `roles` is None); returns the ones removed."""
        with self.engine.begin() as conn:
            lock_reader(conn, team_id, user_id)
            have = self._user_roles(conn, team_id, user_id)
            gone = have if roles is None else [r for r in dict.fromkeys(roles) if r in have]
            if gone:
                conn.execute(
                    subscriptions.delete().where(
                        subscriptions.c.team_id == team_id,
                        subscriptions.c.user_id == user_id,
                        subscriptions.c.role.in_(gone),
                    )
                )
        return list(gone)

    def subscriptions_of(self, team_id: str, user_id: str) -> list[str]:
        with self.engine.connect() as conn:
            return self._user_roles(conn, team_id, user_id)

    def all_subscriptions(self) -> dict[tuple[str, str], list[str]]:
        """(team, user) -> roles, for the weekly DMs."""
        out: dict[tuple[str, str], list[str]] = {}
        stmt = sa.select(subscriptions).order_by(
            subscriptions.c.team_id, subscriptions.c.user_id, subscriptions.c.created_at
        )
        with self.engine.connect() as conn:
            for row in conn.execute(stmt):
                out.setdefault((row.team_id, row.user_id), []).append(row.role)
        return out

    @staticmethod
    def _user_roles(conn: Connection, team_id: str, user_id: str) -> list[str]:
        stmt = (
            sa.select(subscriptions.c.role)
            .where(subscriptions.c.team_id == team_id, subscriptions.c.user_id == user_id)
            .order_by(subscriptions.c.created_at, subscriptions.c.role)
        )
        return list(conn.execute(stmt).scalars())


def _classification_columns(c: Classification) -> dict[str, Any]:
    return {
        "roles": list(c.roles),
        "primary_role": c.primary_role,
        "verdict": c.verdict.value,
        "verdict_rank": c.verdict.rank,
        "role_verdicts": {k: v.value for k, v in c.role_verdicts.items()},
        "excerpt": c.excerpt,
        "verdict_confidence": c.verdict_confidence.value,
        "read_by": c.read_by,
    }


def _note_row(parsed: ParsedNote, indexed: IndexedNote, digest: str) -> dict[str, Any]:
    return {
        "repo": parsed.repo,
        "title": parsed.title,
        "paragraph": parsed.paragraph,
        "pr": parsed.pr,
        "pr_url": parsed.pr_url,
        "content_hash": digest,
        **_classification_columns(indexed.classification),
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


def _role_rows(note_id: int, row: dict[str, Any]) -> list[dict[str, Any]]:
    verdicts = row["role_verdicts"]
    return [
        {
            "note_id": note_id,
            "role": role,
            "verdict_rank": Verdict(verdicts.get(role, row["verdict"])).rank,
        }
        for role in row["roles"]
    ]


def _fts5_term(term: QueryTerm) -> str:
    """All of a word's tokens (CJK bigrams); the index keeps no positions, so no phrases."""
    parts = [f'"{token}"' for token in term.tokens]
    if term.prefix:
        parts[-1] += "*"
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def _tsquery_term(term: QueryTerm) -> str:
    """As on SQLite: all of a word's tokens in any order, so both stores (and a watch)
    find the same notes."""
    parts = list(term.tokens)
    if term.prefix:
        parts[-1] += ":*"
    return "(" + " & ".join(parts) + ")" if len(parts) > 1 else parts[0]


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
