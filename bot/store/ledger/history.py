"""What was posted: notes never planned for a channel, the weeks that have a digest, and
each finished run's notes in the order the channel shows them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.store.clock import aware
from bot.store.ledger.records import DONE, EMPTY, LedgerPart
from bot.store.schema import (
    delivered_messages,
    digest_run_notes,
    digest_runs,
    note_fixes,
    notes,
)


@dataclass(frozen=True)
class PostedNote:
    """A note as a finished digest run posted it: in which run (`addition`: a follow-up)
    and in which role's thread, and whether an editor fixed it after the run's messages
    were made (`fixed_since`)."""

    note_id: int
    run_id: int
    addition: bool
    role: str
    fixed_since: bool


class History(LedgerPart):
    """What was posted, to which channel, in which week."""

    def unposted_note_ids(self, channel: str | None) -> list[int]:
        """Notes never planned for `channel` (for any channel when None), oldest first."""
        with self.engine.connect() as conn:
            return unposted_ids(conn, channel)

    def week_posted(self, channel: str | None, week: str) -> bool:
        """Whether a digest (not an empty slot) was already made for this week."""
        with self.engine.connect() as conn:
            return digest_made(conn, channel, week)

    def run_notes(self, run_id: int) -> dict[int, str]:
        """note id -> the role thread it was posted in."""
        stmt = sa.select(digest_run_notes.c.note_id, digest_run_notes.c.role).where(
            digest_run_notes.c.run_id == run_id
        )
        with self.engine.connect() as conn:
            return {row.note_id: row.role for row in conn.execute(stmt)}

    def latest_week_notes(self, channel: str | None) -> tuple[str, list[int]] | None:
        """The week of the newest finished digest and every note its runs posted
        (the digest and its additions), in posting order; None before the first digest."""
        done = sa.select(digest_runs).where(
            digest_runs.c.status == DONE, digest_runs.c.note_count > 0
        )
        if channel is not None:
            done = done.where(digest_runs.c.channel == channel)
        with self.engine.connect() as conn:
            latest = conn.execute(done.order_by(digest_runs.c.id.desc()).limit(1)).first()
            if latest is None:
                return None
            stmt = _week_notes(latest.channel, latest.week)
            return latest.week, list(conn.execute(stmt).scalars())

    def week_note_ids(self, channel: str | None, week: str) -> list[int]:
        """Every note the finished digest runs of `week` posted (to `channel`, or any),
        in posting order; empty when that week's digest was never posted."""
        with self.engine.connect() as conn:
            return list(conn.execute(_week_notes(channel, week)).scalars())

    def week_as_posted(self, channel: str | None, week: str) -> list[PostedNote]:
        """The notes of the finished digest runs of `week` (to `channel`, or any) in the
        order the channel shows them: run by run, thread by thread, each note where its
        message placed it. Empty when that week's digest was never posted."""
        stmt = (
            sa.select(
                digest_run_notes.c.note_id,
                digest_run_notes.c.run_id,
                digest_run_notes.c.role,
                digest_runs.c.addition,
                digest_runs.c.created_at,
                note_fixes.c.fixed_at,
            )
            .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
            .outerjoin(note_fixes, note_fixes.c.note_id == digest_run_notes.c.note_id)
            .where(digest_runs.c.week == week, digest_runs.c.status == DONE)
        )
        if channel is not None:
            stmt = stmt.where(digest_runs.c.channel == channel)
        with self.engine.connect() as conn:
            rows = conn.execute(stmt).all()
            run_ids = sorted({row.run_id for row in rows})
            messages = conn.execute(
                sa.select(
                    delivered_messages.c.run_id,
                    delivered_messages.c.part,
                    delivered_messages.c.seq,
                    delivered_messages.c.payload,
                ).where(
                    delivered_messages.c.run_id.in_(run_ids),
                    delivered_messages.c.kind == "thread",
                )
            ).all()
        # Where each note sits: its message's place in the run, then its block's.
        place: dict[tuple[int, int], tuple[int, int]] = {}
        for message in messages:
            blocks = (message.payload or {}).get("blocks") or []
            for position, block in enumerate(blocks):
                block_id = str(block.get("block_id") or "")
                if block_id.startswith("note-") and block_id[5:].isdigit():
                    place[(message.run_id, int(block_id[5:]))] = (message.seq, position)
        unplaced = (2**31, 0)  # a note without a recorded message goes last in its run
        ordered = sorted(
            rows, key=lambda r: (r.run_id, place.get((r.run_id, r.note_id), unplaced), r.note_id)
        )
        return [
            PostedNote(
                note_id=row.note_id,
                run_id=row.run_id,
                addition=bool(row.addition),
                role=row.role,
                fixed_since=row.fixed_at is not None
                and aware(row.fixed_at) > aware(row.created_at),
            )
            for row in ordered
        ]

    def last_digest_finished(self, channel: str | None) -> datetime | None:
        """When the newest digest run (to `channel`, or any) was delivered completely."""
        stmt = sa.select(sa.func.max(digest_runs.c.finished_at)).where(digest_runs.c.status == DONE)
        if channel is not None:
            stmt = stmt.where(digest_runs.c.channel == channel)
        with self.engine.connect() as conn:
            finished = conn.execute(stmt).scalar()
        return aware(finished) if finished is not None else None

    def notes_posted_between(self, channel: str, start: datetime, end: datetime) -> list[int]:
        """Notes of the runs of `channel` started in [start, end), in posting order."""
        stmt = (
            sa.select(digest_run_notes.c.note_id)
            .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
            .where(
                digest_runs.c.channel == channel,
                digest_runs.c.created_at >= start,
                digest_runs.c.created_at < end,
            )
            .order_by(digest_runs.c.id, digest_run_notes.c.note_id)
        )
        with self.engine.connect() as conn:
            return list(conn.execute(stmt).scalars())

    def first_run_since(self, channel: str, moment: datetime) -> int | None:
        """The first run of `channel` with notes started at or after `moment`."""
        stmt = sa.select(sa.func.min(digest_runs.c.id)).where(
            digest_runs.c.channel == channel,
            digest_runs.c.created_at >= moment,
            digest_runs.c.note_count > 0,
        )
        with self.engine.connect() as conn:
            found = conn.execute(stmt).scalar()
        return int(found) if found is not None else None


def unposted_ids(conn: Connection, channel: str | None) -> list[int]:
    """Notes never planned for `channel` (any channel when None), oldest first."""
    posted = sa.select(digest_run_notes.c.note_id)
    if channel is not None:
        posted = posted.where(digest_run_notes.c.channel == channel)
    stmt = sa.select(notes.c.id).where(notes.c.id.not_in(posted)).order_by(notes.c.id)
    return list(conn.execute(stmt).scalars())


def digest_made(
    conn: Connection, channel: str | None, week: str, exclude: int | None = None
) -> bool:
    """Whether a digest (not an empty slot) of `week` exists, run `exclude` aside."""
    stmt = (
        sa.select(sa.func.count())
        .select_from(digest_runs)
        .where(digest_runs.c.week == week, digest_runs.c.status != EMPTY)
    )
    if exclude is not None:
        stmt = stmt.where(digest_runs.c.id != exclude)
    if channel is not None:
        stmt = stmt.where(digest_runs.c.channel == channel)
    return int(conn.execute(stmt).scalar_one()) > 0


def _week_notes(channel: str | None, week: str) -> sa.Select[Any]:
    """The notes of the finished runs of `week`, in posting order."""
    stmt = (
        sa.select(digest_run_notes.c.note_id)
        .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
        .where(digest_runs.c.week == week, digest_runs.c.status == DONE)
        .order_by(digest_runs.c.id, digest_run_notes.c.note_id)
    )
    if channel is not None:
        stmt = stmt.where(digest_runs.c.channel == channel)
    return stmt
