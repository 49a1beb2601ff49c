"""Digest runs: claiming one (a new run or resuming a crashed one), taking over a stale
claim, heartbeats, finishing and releasing; and which process holds a claim."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bot.store.clock import aware, utcnow
from bot.store.ledger.history import digest_made, unposted_ids
from bot.store.ledger.messages import insert_parts, mark_shown
from bot.store.ledger.records import (
    DONE,
    EMPTY,
    OPEN,
    LedgerPart,
    LostClaimError,
    PlannedPart,
    claim_is_free,
    owned,
)
from bot.store.schema import digest_run_notes, digest_runs


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
class Plan:
    """What a new run will post: its notes (note id -> thread role) and its messages."""

    note_roles: dict[int, str]
    parts: list[PlannedPart]
    note_parts: dict[int, str] = field(default_factory=dict)  # note id -> the part holding it


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


@dataclass
class Claim:
    """The outcome of `claim_run`: a run to deliver, or why there is none."""

    outcome: str  # "new", "resume", "nothing", "busy", "slot_done"
    run: Run | None = None
    holder: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def run_from_row(row: Any) -> Run:
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


Planner = Callable[[list[int], bool], Plan | None]


class _NothingToPost(Exception):
    """Rolls back a claim that found nothing to post."""


class RunClaims(LedgerPart):
    """Claiming, keeping and finishing digest runs."""

    def get_run(self, run_id: int) -> Run:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(digest_runs).where(digest_runs.c.id == run_id)).one()
        return run_from_row(row)

    def runs(self, channel: str | None = None) -> list[Run]:
        stmt = sa.select(digest_runs).order_by(digest_runs.c.id)
        if channel is not None:
            stmt = stmt.where(digest_runs.c.channel == channel)
        with self.engine.connect() as conn:
            return [run_from_row(row) for row in conn.execute(stmt)]

    def slot_run(self, channel: str, slot: str) -> Run | None:
        stmt = sa.select(digest_runs).where(
            digest_runs.c.channel == channel, digest_runs.c.slot == slot
        )
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        return run_from_row(row) if row is not None else None

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
            ids = unposted_ids(conn, channel)
            addition = digest_made(conn, channel, week, exclude=run_id)
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
                mark_shown(conn, run_id)
            insert_parts(conn, run_id, planned.parts, start=0)
            conn.execute(
                digest_runs.update()
                .where(digest_runs.c.id == run_id)
                .values(addition=addition, note_count=len(planned.note_roles))
            )
            row = conn.execute(sa.select(digest_runs).where(digest_runs.c.id == run_id)).one()
        return Claim("new", run=run_from_row(row))

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
                return Claim("slot_done", run=run_from_row(slot_row))
            # The other claim rolled back in between (it had nothing to post).
            return Claim("busy")
        run = run_from_row(row)
        if not self.claimable(run, now):
            return Claim("busy", run=run, holder=run.claimed_by)
        if not self._take_over(run, owner, now):
            return Claim("busy", run=run, holder=run.claimed_by)
        return Claim("resume", run=self.get_run(run.id))

    def claimable(self, run: Run, now: datetime | None = None) -> bool:
        """An unfinished run may be taken over when released, stale, or its claimant died."""
        return claim_is_free(
            run.status,
            run.claimed_by,
            run.heartbeat,
            now or utcnow(),
            self.stale_after,
            claimant_is_dead,
        )

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
            return [run_from_row(row) for row in conn.execute(stmt)]

    def take_over_if_claimable(self, run: Run, owner: str) -> Run | None:
        now = utcnow()
        if self.claimable(run, now) and self._take_over(run, owner, now):
            return self.get_run(run.id)
        return None

    def heartbeat(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as conn:
            beat = conn.execute(
                digest_runs.update().where(owned(run_id, owner)).values(heartbeat=utcnow())
            )
            if beat.rowcount != 1:
                raise LostClaimError(f"digest run {run_id} was taken over by another process")

    def finish(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as conn:
            done = conn.execute(
                digest_runs.update()
                .where(owned(run_id, owner))
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
                .where(owned(run_id, owner))
                .values(claimed_by=None, heartbeat=None, last_error=error)
            )
