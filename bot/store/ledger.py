"""The delivery ledger: which notes went to which channel, and every Slack message sent.

A digest run is claimed atomically: `digest_runs.open_channel` is unique, so a channel has at
most one unfinished run, and `digest_run_notes` is unique per (channel, note), so no note is
ever planned twice for one channel. The first statement of a claim is an INSERT, so on SQLite
the claim holds the database write lock from its first step; on PostgreSQL a concurrent claim
waits on the unique index until the first one commits or rolls back.

A run's messages (`delivered_messages`) are planned, rendered and stored when the run is
claimed; a message's `ts` is recorded right after Slack accepts it. A resumed run therefore
posts exactly the parts that are still missing.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from bot.store.clock import aware, utcnow
from bot.store.schema import (
    delivered_messages,
    digest_run_notes,
    digest_runs,
    dm_deliveries,
    note_fixes,
    notes,
)

OPEN = "open"
DONE = "done"
EMPTY = "empty"  # a scheduled slot that found nothing to post


def process_identity() -> str:
    """`host:pid:random` — lets a run on the same host tell whether its claimant died."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def claimant_is_dead(claimed_by: str) -> bool:
    """True when the claimant ran on this host and its process no longer exists."""
    host, _, rest = claimed_by.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


@dataclass(frozen=True)
class PlannedPart:
    """One Slack message of a run, rendered before anything is posted."""

    part: str  # "parent", "role:moe-quant:2", "dm:T:U:1"
    kind: str  # "parent", "thread" or "dm"
    channel: str  # channel ID, or a user ID for a DM
    payload: dict[str, Any]  # {"text": ..., "blocks": [...]}


@dataclass(frozen=True)
class Plan:
    """What a new run will post: its notes (note id -> thread role) and its messages."""

    note_roles: dict[int, str]
    parts: list[PlannedPart]
    note_parts: dict[int, str] = field(default_factory=dict)  # note id -> the part holding it


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


@dataclass(frozen=True)
class Run:
    id: int
    run_key: str
    channel: str
    week: str
    slot: str | None
    addition: bool
    status: str
    claimed_by: str | None
    heartbeat: datetime | None
    attempts: int
    dm_planned: bool
    note_count: int
    created_at: datetime

    @property
    def resumed(self) -> bool:
        return self.attempts > 1


@dataclass(frozen=True)
class Part:
    run_id: int
    part: str
    seq: int
    kind: str
    channel: str
    payload: dict[str, Any]
    ts: str | None
    thread_ts: str | None
    posted_channel: str | None
    error: str | None

    @property
    def settled(self) -> bool:
        return self.ts is not None or self.error is not None


@dataclass
class Claim:
    """The outcome of `claim_run`: a run to deliver, or why there is none."""

    outcome: str  # "new", "resume", "nothing", "busy", "slot_done"
    run: Run | None = None
    holder: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _run(row: Any) -> Run:
    return Run(
        id=row.id,
        run_key=row.run_key,
        channel=row.channel,
        week=row.week,
        slot=row.slot,
        addition=bool(row.addition),
        status=row.status,
        claimed_by=row.claimed_by,
        heartbeat=None if row.heartbeat is None else aware(row.heartbeat),
        attempts=row.attempts,
        dm_planned=bool(row.dm_planned),
        note_count=row.note_count,
        created_at=aware(row.created_at),
    )


def _part(row: Any) -> Part:
    return Part(
        run_id=row.run_id,
        part=row.part,
        seq=row.seq,
        kind=row.kind,
        channel=row.channel,
        payload=dict(row.payload),
        ts=row.ts,
        thread_ts=row.thread_ts,
        posted_channel=row.posted_channel,
        error=row.error,
    )


Planner = Callable[[list[int], bool], Plan | None]


class _NothingToPost(Exception):
    """Rolls back a claim that found nothing to post."""


class LostClaimError(RuntimeError):
    """Another process took this run over (our heartbeat went stale); stop posting."""


class Ledger:
    """The delivery ledger on the store's engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine, stale_after: timedelta = timedelta(minutes=10)) -> None:
        self.engine = engine
        self.stale_after = stale_after

    # -- reading ------------------------------------------------------------------------

    @staticmethod
    def _unposted_ids(conn: Connection, channel: str | None) -> list[int]:
        posted = sa.select(digest_run_notes.c.note_id)
        if channel is not None:
            posted = posted.where(digest_run_notes.c.channel == channel)
        stmt = sa.select(notes.c.id).where(notes.c.id.not_in(posted)).order_by(notes.c.id)
        return list(conn.execute(stmt).scalars())

    def unposted_note_ids(self, channel: str | None) -> list[int]:
        """Notes never planned for `channel` (for any channel when None), oldest first."""
        with self.engine.connect() as conn:
            return self._unposted_ids(conn, channel)

    @staticmethod
    def _week_posted(
        conn: Connection, channel: str | None, week: str, exclude: int | None = None
    ) -> bool:
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

    def week_posted(self, channel: str | None, week: str) -> bool:
        """Whether a digest (not an empty slot) was already made for this week."""
        with self.engine.connect() as conn:
            return self._week_posted(conn, channel, week)

    def get_run(self, run_id: int) -> Run:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(digest_runs).where(digest_runs.c.id == run_id)).one()
        return _run(row)

    def runs(self, channel: str | None = None) -> list[Run]:
        stmt = sa.select(digest_runs).order_by(digest_runs.c.id)
        if channel is not None:
            stmt = stmt.where(digest_runs.c.channel == channel)
        with self.engine.connect() as conn:
            return [_run(row) for row in conn.execute(stmt)]

    def slot_run(self, channel: str, slot: str) -> Run | None:
        stmt = sa.select(digest_runs).where(
            digest_runs.c.channel == channel, digest_runs.c.slot == slot
        )
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        return _run(row) if row is not None else None

    def parts(self, run_id: int) -> list[Part]:
        stmt = (
            sa.select(delivered_messages)
            .where(delivered_messages.c.run_id == run_id)
            .order_by(delivered_messages.c.seq)
        )
        with self.engine.connect() as conn:
            return [_part(row) for row in conn.execute(stmt)]

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
            stmt = self._week_notes(latest.channel, latest.week)
            return latest.week, list(conn.execute(stmt).scalars())

    def week_note_ids(self, channel: str | None, week: str) -> list[int]:
        """Every note the finished digest runs of `week` posted (to `channel`, or any),
        in posting order; empty when that week's digest was never posted."""
        with self.engine.connect() as conn:
            return list(conn.execute(self._week_notes(channel, week)).scalars())

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

    @staticmethod
    def _week_notes(channel: str | None, week: str) -> sa.Select[Any]:
        stmt = (
            sa.select(digest_run_notes.c.note_id)
            .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
            .where(digest_runs.c.week == week, digest_runs.c.status == DONE)
            .order_by(digest_runs.c.id, digest_run_notes.c.note_id)
        )
        if channel is not None:
            stmt = stmt.where(digest_runs.c.channel == channel)
        return stmt

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

    def dm_sent_notes(self, team_id: str, user_id: str) -> set[int]:
        stmt = sa.select(dm_deliveries.c.note_id).where(
            dm_deliveries.c.team_id == team_id, dm_deliveries.c.user_id == user_id
        )
        with self.engine.connect() as conn:
            return set(conn.execute(stmt).scalars())

    # -- claiming -----------------------------------------------------------------------

    def claim_run(
        self,
        *,
        channel: str,
        week: str,
        slot: str | None,
        owner: str,
        plan: Planner,
        now: datetime | None = None,
    ) -> Claim:
        """Resume a crashed run of `channel`, or start a new one with every unposted note.

        `plan(note_ids, addition)` renders the new run's messages inside the claim, so the
        run's note set and messages are fixed before anything is posted. It returns None when
        there is nothing to post.
        """
        now = now or utcnow()
        try:
            return self._claim_new(channel, week, slot, owner, plan, now)
        except _NothingToPost:
            return Claim("nothing")
        except sa.exc.IntegrityError:
            pass  # another run holds the channel, or this slot already has a run
        return self._claim_existing(channel, slot, owner, now)

    def _claim_new(
        self, channel: str, week: str, slot: str | None, owner: str, plan: Planner, now: datetime
    ) -> Claim:
        with self.engine.begin() as conn:
            # The INSERT comes first: it takes the channel's open slot (and the write lock).
            run_id = conn.execute(
                digest_runs.insert()
                .values(
                    run_key=uuid.uuid4().hex,
                    channel=channel,
                    week=week,
                    slot=slot,
                    addition=False,
                    status=OPEN,
                    open_channel=channel,
                    claimed_by=owner,
                    claimed_at=now,
                    heartbeat=now,
                    attempts=1,
                    dm_planned=False,
                    note_count=0,
                    created_at=now,
                )
                .returning(digest_runs.c.id)
            ).scalar_one()
            ids = self._unposted_ids(conn, channel)
            addition = self._week_posted(conn, channel, week, exclude=run_id)
            planned = plan(ids, addition)
            if planned is None:
                if slot is None:
                    raise _NothingToPost
                # Remember the slot, so catch-up does not try it again.
                conn.execute(
                    digest_runs.update()
                    .where(digest_runs.c.id == run_id)
                    .values(status=EMPTY, open_channel=None, claimed_by=None, finished_at=now)
                )
                return Claim("nothing", details={"slot_recorded": True})
            if planned.note_roles:
                conn.execute(
                    digest_run_notes.insert(),
                    [
                        {
                            "run_id": run_id,
                            "note_id": note_id,
                            "channel": channel,
                            "role": role,
                            "part": planned.note_parts.get(note_id),
                        }
                        for note_id, role in planned.note_roles.items()
                    ],
                )
                self._mark_shown(conn, run_id)
            self._insert_parts(conn, run_id, planned.parts, start=0)
            conn.execute(
                digest_runs.update()
                .where(digest_runs.c.id == run_id)
                .values(addition=addition, note_count=len(planned.note_roles))
            )
            row = conn.execute(sa.select(digest_runs).where(digest_runs.c.id == run_id)).one()
        return Claim("new", run=_run(row))

    @staticmethod
    def _mark_shown(conn: Connection, run_id: int, note_ids: Sequence[int] | None = None) -> None:
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

    # -- revisions in place ----------------------------------------------------------------

    def stale_messages(
        self, channel: str, note_ids: Iterable[int] | None = None
    ) -> list[StaleMessage]:
        """Posted channel messages holding a note revised or fixed since it was posted."""
        fix_rev = sa.func.coalesce(note_fixes.c.revision, 0)
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
                    digest_run_notes.c.shown_fix != fix_rev,
                ),
            )
        )
        if note_ids is not None:
            stale = stale.where(digest_run_notes.c.note_id.in_(list(note_ids)))
        found: list[StaleMessage] = []
        with self.engine.connect() as conn:
            keys = sorted({(row.run_id, row.part) for row in conn.execute(stale)})
            for run_id, part in keys:
                message = conn.execute(
                    sa.select(delivered_messages, digest_runs.c.run_key, digest_runs.c.addition)
                    .join(digest_runs, digest_runs.c.id == delivered_messages.c.run_id)
                    .where(
                        delivered_messages.c.run_id == run_id,
                        delivered_messages.c.part == part,
                        delivered_messages.c.ts.is_not(None),
                    )
                ).first()
                if message is None:
                    continue  # not posted yet: it goes out as planned, and is updated later
                rows = conn.execute(
                    sa.select(
                        digest_run_notes.c.note_id,
                        digest_run_notes.c.role,
                        digest_run_notes.c.part,
                        digest_run_notes.c.shown_hash,
                        digest_run_notes.c.shown_fix,
                        digest_run_notes.c.revised,
                        notes.c.content_hash,
                        fix_rev.label("fix_rev"),
                    )
                    .join(notes, notes.c.id == digest_run_notes.c.note_id)
                    .outerjoin(note_fixes, note_fixes.c.note_id == digest_run_notes.c.note_id)
                    .where(digest_run_notes.c.run_id == run_id)
                ).all()
                role = next(r.role for r in rows if r.part == part)
                found.append(
                    StaleMessage(
                        run_id=run_id,
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
                            and (
                                r.revised
                                or r.shown_hash != r.content_hash
                                or r.shown_fix != r.fix_rev
                            )
                        },
                    )
                )
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
            self._mark_shown(conn, message.run_id, ids)
            if message.revised:
                conn.execute(
                    digest_run_notes.update()
                    .where(
                        digest_run_notes.c.run_id == message.run_id,
                        digest_run_notes.c.note_id.in_(sorted(message.revised)),
                    )
                    .values(revised=True)
                )

    @staticmethod
    def _insert_parts(
        conn: Connection, run_id: int, parts: Sequence[PlannedPart], start: int
    ) -> None:
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

    def _claim_existing(self, channel: str, slot: str | None, owner: str, now: datetime) -> Claim:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(digest_runs).where(digest_runs.c.open_channel == channel)
            ).first()
            slot_row = None
            if slot is not None:
                slot_row = conn.execute(
                    sa.select(digest_runs).where(
                        digest_runs.c.channel == channel, digest_runs.c.slot == slot
                    )
                ).first()
        if row is None:
            if slot_row is not None:
                return Claim("slot_done", run=_run(slot_row))
            # The other claim rolled back in between (it had nothing to post).
            return Claim("busy")
        run = _run(row)
        if not self.claimable(run, now):
            return Claim("busy", run=run, holder=run.claimed_by)
        if not self._take_over(run, owner, now):
            return Claim("busy", run=run, holder=run.claimed_by)
        return Claim("resume", run=self.get_run(run.id))

    def claimable(self, run: Run, now: datetime | None = None) -> bool:
        """An unfinished run may be taken over when released, stale, or its claimant died."""
        now = now or utcnow()
        if run.status != OPEN:
            return False
        if run.claimed_by is None or run.heartbeat is None:
            return True
        if now - run.heartbeat > self.stale_after:
            return True
        return claimant_is_dead(run.claimed_by)

    def _take_over(self, run: Run, owner: str, now: datetime) -> bool:
        with self.engine.begin() as conn:
            stmt = digest_runs.update().where(
                digest_runs.c.id == run.id, digest_runs.c.status == OPEN
            )
            if run.claimed_by is None:
                stmt = stmt.where(digest_runs.c.claimed_by.is_(None))
            else:
                stmt = stmt.where(digest_runs.c.claimed_by == run.claimed_by)
            result = conn.execute(
                stmt.values(
                    claimed_by=owner,
                    claimed_at=now,
                    heartbeat=now,
                    attempts=digest_runs.c.attempts + 1,
                )
            )
            return result.rowcount == 1

    def open_runs(self) -> list[Run]:
        stmt = sa.select(digest_runs).where(digest_runs.c.status == OPEN)
        with self.engine.connect() as conn:
            return [_run(row) for row in conn.execute(stmt)]

    def take_over_if_claimable(self, run: Run, owner: str) -> Run | None:
        now = utcnow()
        if self.claimable(run, now) and self._take_over(run, owner, now):
            return self.get_run(run.id)
        return None

    # -- progress -----------------------------------------------------------------------

    def _owned(self, run_id: int, owner: str) -> Any:
        return sa.and_(
            digest_runs.c.id == run_id,
            digest_runs.c.claimed_by == owner,
            digest_runs.c.status == OPEN,
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
                digest_runs.update().where(self._owned(run_id, owner)).values(heartbeat=now)
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

    def heartbeat(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as conn:
            beat = conn.execute(
                digest_runs.update().where(self._owned(run_id, owner)).values(heartbeat=utcnow())
            )
            if beat.rowcount != 1:
                raise LostClaimError(f"digest run {run_id} was taken over by another process")

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
                sa.select(digest_runs).where(self._owned(run_id, owner)).with_for_update()
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
            self._insert_parts(conn, run_id, parts, start=int(count))
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

    def finish(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as conn:
            done = conn.execute(
                digest_runs.update()
                .where(self._owned(run_id, owner))
                .values(
                    status=DONE,
                    open_channel=None,
                    claimed_by=None,
                    finished_at=utcnow(),
                    last_error=None,
                )
            )
            if done.rowcount != 1:
                raise LostClaimError(f"digest run {run_id} was taken over by another process")

    def release(self, run_id: int, owner: str, error: str) -> None:
        """Leave the run unfinished and free for the next run or start to resume."""
        with self.engine.begin() as conn:
            conn.execute(
                digest_runs.update()
                .where(self._owned(run_id, owner))
                .values(claimed_by=None, heartbeat=None, last_error=error)
            )
