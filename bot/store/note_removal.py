"""Removing notes by identity: what `prdigest remove-samples` does to the bundled sample
notes an older quick start left in a team's store.

A removed note takes with it only the rows that exist for it alone: its roles, an editor's
fix, the ledger's record of which run and message it was posted in, and of which readers it
was sent to by DM. Runs and their posted messages stay: they record what Slack holds, and
the team's notes in the same runs stay posted (nothing of theirs is posted again).
Subscriptions, saved searches, pauses and the model server's cached readings are not tied
to a note and are not touched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.store.engine import StorePart
from bot.store.ledger.records import OPEN
from bot.store.rows import chunks
from bot.store.schema import (
    digest_run_notes,
    digest_runs,
    dm_deliveries,
    note_fixes,
    note_roles,
    notes,
)

# The rows that hang off a note alone, in the order they are removed (the note last).
_NOTE_ROWS = (
    ("fixes", note_fixes),
    ("posted", digest_run_notes),
    ("dms", dm_deliveries),
    ("roles", note_roles),
)


@dataclass(frozen=True)
class NoteRemoval:
    """The notes to remove and the rows that go with them (counted before or as removed).

    `open_runs`: unfinished digest runs that planned some of these notes; while one is
    unfinished its messages are already rendered, so nothing is removed.
    """

    note_ids: tuple[int, ...]
    fixes: int = 0
    posted: int = 0
    dms: int = 0
    open_runs: tuple[int, ...] = ()


class NoteRemover(StorePart):
    """Finding notes by identity and content, and removing them with their own rows."""

    def notes_with_identity(self, identities: Mapping[str, str]) -> list[int]:
        """Ids of the stored notes whose identity key is in `identities` with the same
        content hash (key -> content hash), by id."""
        found: list[int] = []
        with self.engine.connect() as conn:
            for chunk in chunks(sorted(identities)):
                stmt = sa.select(notes.c.id, notes.c.key, notes.c.content_hash).where(
                    notes.c.key.in_(chunk)
                )
                found += [r.id for r in conn.execute(stmt) if identities[r.key] == r.content_hash]
        return sorted(found)

    def plan_removal(self, note_ids: Sequence[int]) -> NoteRemoval:
        """What removing `note_ids` would remove, changing nothing."""
        with self.engine.connect() as conn:
            return _removal(conn, note_ids)

    def remove_notes(self, note_ids: Sequence[int]) -> NoteRemoval:
        """Remove the notes and their own rows in one transaction; nothing is removed when
        an unfinished digest run holds one of them (see `NoteRemoval.open_runs`)."""
        with self.engine.begin() as conn:
            removal = _removal(conn, note_ids)
            if removal.open_runs or not removal.note_ids:
                return removal
            for chunk in chunks(removal.note_ids):
                for _, table in _NOTE_ROWS:
                    conn.execute(table.delete().where(table.c.note_id.in_(chunk)))
                conn.execute(notes.delete().where(notes.c.id.in_(chunk)))
        return removal


def _removal(conn: Connection, note_ids: Sequence[int]) -> NoteRemoval:
    ids = tuple(sorted(set(note_ids)))
    counts = dict.fromkeys(("fixes", "posted", "dms"), 0)
    runs: set[int] = set()
    for chunk in chunks(ids):
        for name, table in _NOTE_ROWS:
            if name in counts:
                count = sa.select(sa.func.count()).select_from(table)
                counts[name] += int(
                    conn.execute(count.where(table.c.note_id.in_(chunk))).scalar_one()
                )
        unfinished = (
            sa.select(digest_run_notes.c.run_id)
            .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
            .where(digest_run_notes.c.note_id.in_(chunk), digest_runs.c.status == OPEN)
        )
        runs.update(conn.execute(unfinished).scalars())
    return NoteRemoval(ids, open_runs=tuple(sorted(runs)), **counts)
