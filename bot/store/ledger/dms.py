"""DM deliveries: which notes each subscriber was sent, and fixing a run's DMs once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import sqlalchemy as sa

from bot.store.ledger.messages import insert_parts
from bot.store.ledger.records import LedgerPart, LostClaimError, PlannedPart, owned
from bot.store.schema import delivered_messages, digest_runs, dm_deliveries


class DmRecords(LedgerPart):
    """Which notes each subscriber was sent by DM."""

    def dm_sent_notes(self, team_id: str, user_id: str) -> set[int]:
        stmt = sa.select(dm_deliveries.c.note_id).where(
            dm_deliveries.c.team_id == team_id, dm_deliveries.c.user_id == user_id
        )
        with self.engine.connect() as conn:
            return set(conn.execute(stmt).scalars())

    def plan_dms(
        self,
        run_id: int,
        owner: str,
        plan: Callable[[dict[tuple[str, str], set[int]]], tuple[list[PlannedPart], list[Any]]],
        subscribers: Iterable[tuple[str, str]],
    ) -> None:
        """Fix the run's DMs once: which notes each subscriber gets, and the messages.

        `plan(already_sent)` gets each subscriber's notes sent before and returns the DM
        messages plus (team, user, note_id, part) rows for `dm_deliveries`.
        """
        with self.engine.begin() as conn:
            row = conn.execute(
                sa.select(digest_runs).where(owned(run_id, owner)).with_for_update()
            ).first()
            if row is None:
                raise LostClaimError(f"digest run {run_id} was taken over by another process")
            if row.dm_planned:
                return
            already: dict[tuple[str, str], set[int]] = {}
            for team_id, user_id in subscribers:
                stmt = sa.select(dm_deliveries.c.note_id).where(
                    dm_deliveries.c.team_id == team_id, dm_deliveries.c.user_id == user_id
                )
                already[(team_id, user_id)] = set(conn.execute(stmt).scalars())
            parts, rows = plan(already)
            count = conn.execute(
                sa.select(sa.func.count())
                .select_from(delivered_messages)
                .where(delivered_messages.c.run_id == run_id)
            ).scalar_one()
            insert_parts(conn, run_id, parts, start=int(count))
            if rows:
                conn.execute(
                    dm_deliveries.insert(),
                    [
                        {"team_id": t, "user_id": u, "note_id": n, "run_id": run_id, "part": p}
                        for t, u, n, p in rows
                    ],
                )
            conn.execute(
                digest_runs.update().where(digest_runs.c.id == run_id).values(dm_planned=True)
            )
