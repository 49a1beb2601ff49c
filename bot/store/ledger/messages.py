"""Posted messages: recording what Slack accepted or refused for good, and finding the
posted messages whose notes were revised or fixed since, to update them in place."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.store.clock import utcnow
from bot.store.ledger.records import (
    LedgerPart,
    LostClaimError,
    Part,
    PlannedPart,
    owned,
    part_from_row,
)
from bot.store.schema import (
    delivered_messages,
    digest_run_notes,
    digest_runs,
    note_fixes,
    notes,
)


@dataclass(frozen=True)
class StaleMessage:
    """A posted thread message whose notes changed (`revised`: those to mark) since."""

    run_id: int
    run_key: str
    part: str
    role: str
    addition: bool
    ts: str
    channel: str
    payload: dict[str, Any]
    role_note_ids: list[int]  # every note of the run in this role's thread
    role_parts: int  # how many messages that thread has
    revised: set[int]


class Messages(LedgerPart):
    """Posted messages: sent, refused, and revised in place."""

    def parts(self, run_id: int) -> list[Part]:
        stmt = (
            sa.select(delivered_messages)
            .where(delivered_messages.c.run_id == run_id)
            .order_by(delivered_messages.c.seq)
        )
        with self.engine.connect() as conn:
            return [part_from_row(row) for row in conn.execute(stmt)]

    # -- revisions in place ----------------------------------------------------------------

    def stale_messages(
        self, channel: str, note_ids: Iterable[int] | None = None
    ) -> list[StaleMessage]:
        """Posted channel messages holding a note revised or fixed since it was posted."""
        found: list[StaleMessage] = []
        with self.engine.connect() as conn:
            for run_id, part in _parts_with_changes(conn, channel, note_ids):
                message = _posted_message(conn, run_id, part)
                if message is None:
                    continue  # not posted yet: it goes out as planned, and is updated later
                found.append(_stale_message(message, part, _run_note_states(conn, run_id)))
        return found

    def record_update(self, message: StaleMessage, payload: dict[str, Any]) -> None:
        """The message was updated in Slack: it now shows its notes as they are."""
        with self.engine.begin() as conn:
            conn.execute(
                delivered_messages.update()
                .where(
                    delivered_messages.c.run_id == message.run_id,
                    delivered_messages.c.part == message.part,
                )
                .values(payload=payload)
            )
            in_part = sa.select(digest_run_notes.c.note_id).where(
                digest_run_notes.c.run_id == message.run_id,
                digest_run_notes.c.part == message.part,
            )
            ids = list(conn.execute(in_part).scalars())
            mark_shown(conn, message.run_id, ids)
            if message.revised:
                conn.execute(
                    digest_run_notes.update()
                    .where(
                        digest_run_notes.c.run_id == message.run_id,
                        digest_run_notes.c.note_id.in_(sorted(message.revised)),
                    )
                    .values(revised=True)
                )

    def record_sent(
        self,
        run_id: int,
        part: str,
        owner: str,
        *,
        ts: str,
        thread_ts: str | None,
        posted_channel: str | None,
    ) -> None:
        """Record a message Slack accepted (and refresh the claim's heartbeat)."""
        now = utcnow()
        with self.engine.begin() as conn:
            conn.execute(
                delivered_messages.update()
                .where(
                    delivered_messages.c.run_id == run_id,
                    delivered_messages.c.part == part,
                    delivered_messages.c.ts.is_(None),
                )
                .values(ts=ts, thread_ts=thread_ts, posted_channel=posted_channel, posted_at=now)
            )
            beat = conn.execute(
                digest_runs.update().where(owned(run_id, owner)).values(heartbeat=now)
            )
            if beat.rowcount != 1:
                raise LostClaimError(f"digest run {run_id} was taken over by another process")

    def record_undeliverable(self, run_id: int, part: str, error: str) -> None:
        """A DM Slack refuses for good (user gone): settled, but not marked as sent."""
        with self.engine.begin() as conn:
            conn.execute(
                delivered_messages.update()
                .where(delivered_messages.c.run_id == run_id, delivered_messages.c.part == part)
                .values(error=error)
            )


def mark_shown(conn: Connection, run_id: int, note_ids: Sequence[int] | None = None) -> None:
    """Record the notes of a run as they are now (content and fix) as what was shown."""
    shown_hash = (
        sa.select(notes.c.content_hash)
        .where(notes.c.id == digest_run_notes.c.note_id)
        .scalar_subquery()
    )
    shown_fix = sa.func.coalesce(
        sa.select(note_fixes.c.revision)
        .where(note_fixes.c.note_id == digest_run_notes.c.note_id)
        .scalar_subquery(),
        0,
    )
    stmt = digest_run_notes.update().where(digest_run_notes.c.run_id == run_id)
    if note_ids is not None:
        stmt = stmt.where(digest_run_notes.c.note_id.in_(list(note_ids)))
    conn.execute(stmt.values(shown_hash=shown_hash, shown_fix=shown_fix))


def insert_parts(conn: Connection, run_id: int, parts: Sequence[PlannedPart], start: int) -> None:
    """Store a run's planned messages, numbered from `start` (DMs follow the channel's)."""
    if not parts:
        return
    conn.execute(
        delivered_messages.insert(),
        [
            {
                "run_id": run_id,
                "part": p.part,
                "seq": start + i,
                "kind": p.kind,
                "channel": p.channel,
                "payload": p.payload,
            }
            for i, p in enumerate(parts)
        ],
    )


# Steps of `Messages.stale_messages`: which messages changed, then each one as it stands.

_FIX_REVISION = sa.func.coalesce(note_fixes.c.revision, 0)  # 0: never fixed


def _parts_with_changes(
    conn: Connection, channel: str, note_ids: Iterable[int] | None
) -> list[tuple[int, str]]:
    """(run id, part) of the channel's messages holding a note whose content or fix
    differs from what the message showed, in run and part order."""
    stale = (
        sa.select(digest_run_notes.c.run_id, digest_run_notes.c.part)
        .join(notes, notes.c.id == digest_run_notes.c.note_id)
        .outerjoin(note_fixes, note_fixes.c.note_id == digest_run_notes.c.note_id)
        .where(
            digest_run_notes.c.channel == channel,
            digest_run_notes.c.part.is_not(None),
            sa.or_(
                digest_run_notes.c.shown_hash.is_(None),
                digest_run_notes.c.shown_hash != notes.c.content_hash,
                digest_run_notes.c.shown_fix != _FIX_REVISION,
            ),
        )
    )
    if note_ids is not None:
        stale = stale.where(digest_run_notes.c.note_id.in_(list(note_ids)))
    return sorted({(row.run_id, row.part) for row in conn.execute(stale)})


def _posted_message(conn: Connection, run_id: int, part: str) -> Any:
    """The message row with its run's key and kind, or None while it is not posted."""
    return conn.execute(
        sa.select(delivered_messages, digest_runs.c.run_key, digest_runs.c.addition)
        .join(digest_runs, digest_runs.c.id == delivered_messages.c.run_id)
        .where(
            delivered_messages.c.run_id == run_id,
            delivered_messages.c.part == part,
            delivered_messages.c.ts.is_not(None),
        )
    ).first()


def _run_note_states(conn: Connection, run_id: int) -> Sequence[Any]:
    """Every note of the run: its thread and part, what was shown and what it is now."""
    return conn.execute(
        sa.select(
            digest_run_notes.c.note_id,
            digest_run_notes.c.role,
            digest_run_notes.c.part,
            digest_run_notes.c.shown_hash,
            digest_run_notes.c.shown_fix,
            digest_run_notes.c.revised,
            notes.c.content_hash,
            _FIX_REVISION.label("fix_rev"),
        )
        .join(notes, notes.c.id == digest_run_notes.c.note_id)
        .outerjoin(note_fixes, note_fixes.c.note_id == digest_run_notes.c.note_id)
        .where(digest_run_notes.c.run_id == run_id)
    ).all()


def _stale_message(message: Any, part: str, rows: Sequence[Any]) -> StaleMessage:
    """The message, its role's thread (every note, how many messages) and the notes of
    this part to mark revised: changed now, or marked before."""
    role = next(r.role for r in rows if r.part == part)
    return StaleMessage(
        run_id=message.run_id,
        run_key=message.run_key,
        part=part,
        role=role,
        addition=bool(message.addition),
        ts=message.ts,
        channel=message.posted_channel or message.channel,
        payload=dict(message.payload),
        role_note_ids=[r.note_id for r in rows if r.role == role],
        role_parts=len({r.part for r in rows if r.role == role}),
        revised={
            r.note_id
            for r in rows
            if r.part == part
            and (r.revised or r.shown_hash != r.content_hash or r.shown_fix != r.fix_rev)
        },
    )
