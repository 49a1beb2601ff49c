"""The one store implementation: SQLAlchemy Core over SQLite or PostgreSQL."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection, Engine

from bot.domain import Classification, Note, ParsedNote, Verdict
from bot.ingest import content_hash, note_key
from bot.search import Query, QueryTerm, index_text
from bot.store.schema import note_roles, notes, subscriptions

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"
_CHUNK = 500


class StoreError(RuntimeError):
    """The database cannot be reached or migrated; the message says which."""


@dataclass(frozen=True)
class FileResult:
    """What one file's ingestion changed."""

    new: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass(frozen=True)
class Page:
    """One page of notes and how many matched in all."""

    notes: list[Note]
    total: int


def utcnow() -> datetime:
    return datetime.now(UTC)


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def create_db_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (a no-op when already there)."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.begin() as conn:
        if MigrationContext.configure(conn).get_current_revision() == head:
            return
        if conn.dialect.name == "postgresql":
            # Several replicas may start at once: one migrates, the others wait.
            conn.execute(sa.text("SELECT pg_advisory_xact_lock(727001)"))
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
        source=f"{row.source_file}:{row.source_line}",
        ingested_at=_aware(row.ingested_at),
        updated_at=_aware(row.updated_at),
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
    def open(cls, url: str) -> Store:
        """Connect and migrate; a bad URL or unreachable server raises StoreError."""
        try:
            engine = create_db_engine(url)
            migrate(engine)
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise StoreError(f"cannot open database {_safe_url(url)}: {_first_line(exc)}") from None
        return cls(engine)

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
        classify: Callable[[ParsedNote], Classification],
        now: datetime | None = None,
    ) -> FileResult:
        """Insert or update one file's notes in a single transaction (all or nothing).

        `classify` runs only for notes that are new or changed, so re-ingesting is cheap.
        """
        now = now or utcnow()
        with self.engine.begin() as conn:
            return self._save(conn, parsed, classify, now)

    def _save(
        self,
        conn: Connection,
        parsed: Sequence[ParsedNote],
        classify: Callable[[ParsedNote], Classification],
        now: datetime,
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
        existing: dict[str, tuple[int, str]] = {}
        for chunk in _chunks(list(by_key)):
            stmt = sa.select(notes.c.id, notes.c.key, notes.c.content_hash)
            for found in conn.execute(stmt.where(notes.c.key.in_(chunk))):
                existing[found.key] = (found.id, found.content_hash)
        fresh: list[dict[str, Any]] = []
        changed: list[tuple[int, dict[str, Any]]] = []
        unchanged = duplicates
        for key, (note, digest) in by_key.items():
            if key in existing and existing[key][1] == digest:
                unchanged += 1
                continue
            row = _note_row(note, classify(note), digest)
            if key in existing:
                changed.append((existing[key][0], {**row, "updated_at": now}))
            else:
                fresh.append({**row, "key": key, "ingested_at": now, "updated_at": now})
        role_rows: list[dict[str, Any]] = []
        if fresh:
            conn.execute(notes.insert(), fresh)
            ids: dict[str, int] = {}
            for chunk in _chunks([row["key"] for row in fresh]):
                stmt = sa.select(notes.c.id, notes.c.key).where(notes.c.key.in_(chunk))
                ids.update((found.key, found.id) for found in conn.execute(stmt))
            for row in fresh:
                role_rows.extend(_role_rows(ids[row["key"]], row))
        for note_id, row in changed:
            conn.execute(notes.update().where(notes.c.id == note_id).values(row))
            conn.execute(note_roles.delete().where(note_roles.c.note_id == note_id))
            role_rows.extend(_role_rows(note_id, row))
        if role_rows:
            conn.execute(note_roles.insert(), role_rows)
        return FileResult(new=len(fresh), updated=len(changed), unchanged=unchanged)

    def count_notes(self) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(notes)).scalar_one())

    def get_notes(self, ids: Iterable[int]) -> list[Note]:
        """Notes by id, in the order given (missing ids are left out)."""
        with self.engine.connect() as conn:
            return self._notes_by_id(conn, list(ids))

    @staticmethod
    def _notes_by_id(conn: Connection, wanted: list[int]) -> list[Note]:
        found: dict[int, Note] = {}
        for chunk in _chunks(wanted):
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
        stmt = sa.select(*_NOTE_COLUMNS).order_by(notes.c.id)
        if role is not None:
            stmt = stmt.join(note_roles, note_roles.c.note_id == notes.c.id).where(
                note_roles.c.role == role
            )
        if since is not None:
            stmt = stmt.where(notes.c.ingested_at >= since)
        if until is not None:
            stmt = stmt.where(notes.c.ingested_at < until)
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
        """Free-text search: every term must match; if none do, any term may.

        Ranked by match quality (title counts more), then deep/skim/skip, then newest.
        """
        if not query.terms:
            return Page([], 0)
        with self.engine.connect() as conn:
            for operator in ("AND", "OR"):
                page = self._search(conn, query.terms, operator, limit, offset)
                if page.total or len(query.terms) == 1:
                    return page
        return page

    def _search(
        self, conn: Connection, terms: Sequence[QueryTerm], op: str, limit: int, offset: int
    ) -> Page:
        if self.dialect == "sqlite":
            match = f" {op} ".join(_fts5_term(t) for t in terms)
            sql = (
                "SELECT n.id FROM notes_fts JOIN notes AS n ON n.id = notes_fts.rowid "
                "WHERE notes_fts MATCH :q "
                "ORDER BY bm25(notes_fts, 4.0, 1.0), n.verdict_rank, n.id DESC "
                "LIMIT :limit OFFSET :offset"
            )
            count = "SELECT count(*) FROM notes_fts WHERE notes_fts MATCH :q"
        else:
            match = (" & " if op == "AND" else " | ").join(_tsquery_term(t) for t in terms)
            vector = (
                "(setweight(to_tsvector('simple', search_title), 'A') || "
                "setweight(to_tsvector('simple', search_body), 'B'))"
            )
            sql = (
                f"SELECT n.id FROM notes AS n, to_tsquery('simple', :q) AS q "
                f"WHERE {vector} @@ q "
                f"ORDER BY ts_rank({vector}, q) DESC, n.verdict_rank, n.id DESC "
                "LIMIT :limit OFFSET :offset"
            )
            count = f"SELECT count(*) FROM notes WHERE {vector} @@ to_tsquery('simple', :q)"
        params = {"q": match, "limit": limit, "offset": offset}
        ids = list(conn.execute(sa.text(sql), params).scalars())
        total = int(conn.execute(sa.text(count), {"q": match}).scalar_one())
        return Page(self._notes_by_id(conn, ids), total)

    # -- subscriptions ---------------------------------------------------------------

    def subscribe(self, team_id: str, user_id: str, roles: Iterable[str]) -> list[str]:
        """Add roles to a user's subscriptions; returns the ones that were new."""
        added: list[str] = []
        with self.engine.begin() as conn:
            have = self._user_roles(conn, team_id, user_id)
            for role in dict.fromkeys(roles):
                if role in have:
                    continue
                conn.execute(
                    subscriptions.insert().values(
                        team_id=team_id, user_id=user_id, role=role, created_at=utcnow()
                    )
                )
                added.append(role)
        return added

    def unsubscribe(self, team_id: str, user_id: str, roles: Iterable[str] | None) -> list[str]:
        """Remove roles (all of them when `roles` is None); returns the ones removed."""
        with self.engine.begin() as conn:
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


def _note_row(parsed: ParsedNote, c: Classification, digest: str) -> dict[str, Any]:
    return {
        "repo": parsed.repo,
        "title": parsed.title,
        "paragraph": parsed.paragraph,
        "pr": parsed.pr,
        "pr_url": parsed.pr_url,
        "content_hash": digest,
        "roles": list(c.roles),
        "primary_role": c.primary_role,
        "verdict": c.verdict.value,
        "verdict_rank": c.verdict.rank,
        "role_verdicts": {k: v.value for k, v in c.role_verdicts.items()},
        "excerpt": c.excerpt,
        "source_file": parsed.source_file,
        "source_line": parsed.line,
        "search_title": index_text(parsed.title),
        "search_body": index_text(parsed.paragraph),
    }


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
    phrase = '"' + " ".join(term.tokens) + '"'
    return phrase + "*" if term.prefix else phrase


def _tsquery_term(term: QueryTerm) -> str:
    parts = list(term.tokens)
    if term.prefix:
        parts[-1] += ":*"
    return "(" + " <-> ".join(parts) + ")" if len(parts) > 1 else parts[0]


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _safe_url(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return "(unparseable URL)"
