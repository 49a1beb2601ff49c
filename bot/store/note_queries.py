"""Reading notes back: by id, oldest first (optionally one role's, within dates), one
role's best first, and page by page by id."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.domain import Note, count_text
from bot.store.engine import StorePart
from bot.store.rows import NOTE_COLUMNS, chunks, row_to_note
from bot.store.schema import note_roles, notes

MAX_ROW_ID = 2**63 - 1  # the largest id SQLite INTEGER and PostgreSQL BIGINT hold


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


class NoteQueries(StorePart):
    """Notes by id, by role and in order."""

    def count_notes(self, role: str | None = None, since: datetime | None = None) -> int:
        """How many notes `list_notes` would list without a limit."""
        stmt = _filter_notes(sa.select(sa.func.count()).select_from(notes), role, since, None)
        with self.engine.connect() as conn:
            return int(conn.execute(stmt).scalar_one())

    def get_notes(self, ids: Iterable[int]) -> list[Note]:
        """Notes by id, in the order given (missing ids are left out)."""
        with self.engine.connect() as conn:
            return notes_by_id(conn, list(ids))

    def list_notes(
        self,
        role: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[Note]:
        """Notes oldest first, optionally one role's and within [since, until)."""
        stmt = _filter_notes(sa.select(*NOTE_COLUMNS).order_by(notes.c.id), role, since, until)
        if limit is not None:
            stmt = stmt.limit(limit)
        with self.engine.connect() as conn:
            return [row_to_note(row) for row in conn.execute(stmt)]

    def role_notes(self, role: str, limit: int, offset: int = 0) -> Page:
        """One role's notes: deep before skim before skip (for that role), newest first."""
        stmt = (
            sa.select(*NOTE_COLUMNS)
            .join(note_roles, note_roles.c.note_id == notes.c.id)
            .where(note_roles.c.role == role)
            .order_by(note_roles.c.verdict_rank, note_roles.c.note_id.desc())
            .limit(limit)
            .offset(offset)
        )
        count = sa.select(sa.func.count()).select_from(note_roles).where(note_roles.c.role == role)
        with self.engine.connect() as conn:
            rows = [row_to_note(row) for row in conn.execute(stmt)]
            total = int(conn.execute(count).scalar_one())
        return Page(rows, total)

    def notes_after(self, after_id: int, limit: int) -> list[Note]:
        """Up to `limit` notes with an id above `after_id`, by id (to walk every note)."""
        stmt = sa.select(*NOTE_COLUMNS).where(notes.c.id > after_id).order_by(notes.c.id)
        with self.engine.connect() as conn:
            return [row_to_note(row) for row in conn.execute(stmt.limit(limit))]


def notes_by_id(conn: Connection, wanted: list[int]) -> list[Note]:
    """Notes by id in the order given, inside the caller's connection (search pages)."""
    found: dict[int, Note] = {}
    # An id no database integer can hold (a mistyped or forged one) is simply missing.
    askable = [i for i in wanted if 0 < i <= MAX_ROW_ID]
    for chunk in chunks(askable):
        for row in conn.execute(sa.select(*NOTE_COLUMNS).where(notes.c.id.in_(chunk))):
            found[row.id] = row_to_note(row)
    return [found[i] for i in wanted if i in found]
