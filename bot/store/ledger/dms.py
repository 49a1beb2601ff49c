"""DM deliveries: which notes each reader was sent (a note goes to a reader once)."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.store.ledger.records import LedgerPart
from bot.store.schema import dm_deliveries


def sent_to(conn: Connection, team_id: str, user_id: str) -> set[int]:
    """The notes the reader was sent by DM."""
    stmt = sa.select(dm_deliveries.c.note_id).where(
        dm_deliveries.c.team_id == team_id, dm_deliveries.c.user_id == user_id
    )
    return set(conn.execute(stmt).scalars())


class DmRecords(LedgerPart):
    """Which notes each reader was sent by DM."""

    def dm_sent_notes(self, team_id: str, user_id: str) -> set[int]:
        with self.engine.connect() as conn:
            return sent_to(conn, team_id, user_id)
