"""Editor fixes and re-classification: a fix stored with its revision and applied to
its note, new classifications written in bulk, and the facts the store keeps about itself
(`store_meta`, such as the classifier fingerprint that says when to re-classify)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from bot.domain import Classification, Note, NoteFix, Verdict
from bot.notes.search import verdict_token
from bot.store.clock import aware, utcnow
from bot.store.engine import StorePart
from bot.store.rows import (
    NOTE_COLUMNS,
    chunks,
    classification_columns,
    note_role_rows,
    row_to_fix,
    row_to_note,
)
from bot.store.schema import note_fixes, note_roles, notes, store_meta


class Fixes(StorePart):
    """Editor fixes, re-classification and the store's own facts."""

    def fixes_for(self, ids: Iterable[int]) -> dict[int, NoteFix]:
        """note id -> its fix, for the notes given that have one."""
        with self.engine.connect() as conn:
            return fixes_of(conn, list(ids))

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
            for chunk in chunks([i for i, _ in items]):
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
            row = {"note": note_id, **classification_columns(c)}
            head, _, token = body.rpartition(" ")
            if token == verdict_token(c.verdict.rank):
                same_verdict.append(row)
            else:
                # The search text carries the verdict; re-indexing it is the costly part,
                # so it is written only when the verdict changed.
                new_verdict.append(
                    {**row, "search_body": f"{head} {verdict_token(c.verdict.rank)}"}
                )
            role_rows.extend(note_role_rows(note_id, row))
        for rows in (same_verdict, new_verdict):
            if rows:
                columns: dict[str, Any] = {n: sa.bindparam(n) for n in rows[0] if n != "note"}
                stmt = notes.update().where(notes.c.id == sa.bindparam("note")).values(columns)
                conn.execute(stmt, rows)
        for chunk in chunks([note_id for note_id, _, _ in items]):
            conn.execute(note_roles.delete().where(note_roles.c.note_id.in_(chunk)))
        if role_rows:
            conn.execute(note_roles.insert(), role_rows)

    def recent_fixes(self, limit: int) -> list[tuple[Note, NoteFix]]:
        """The newest editor fixes (newest first) with their notes as stored (fix applied)."""
        stmt = (
            sa.select(*NOTE_COLUMNS, *(c.label(f"fix_{c.name}") for c in note_fixes.c))
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
                found.append((row_to_note(row), fix))
        return found

    def notes_after(self, after_id: int, limit: int) -> list[Note]:
        """Up to `limit` notes with an id above `after_id`, by id (to walk every note)."""
        stmt = sa.select(*NOTE_COLUMNS).where(notes.c.id > after_id).order_by(notes.c.id)
        with self.engine.connect() as conn:
            return [row_to_note(row) for row in conn.execute(stmt.limit(limit))]

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


def fixes_of(conn: Connection, ids: Sequence[int]) -> dict[int, NoteFix]:
    """note id -> its fix, inside a transaction of the caller (saving notes keeps fixes)."""
    found: dict[int, NoteFix] = {}
    for chunk in chunks(list(ids)):
        for row in conn.execute(sa.select(note_fixes).where(note_fixes.c.note_id.in_(chunk))):
            found[row.note_id] = row_to_fix(row)
    return found
