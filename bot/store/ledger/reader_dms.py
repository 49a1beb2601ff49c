"""Each reader's own weekly DM: claimed once per reader and scheduled moment, like a channel
run is per slot.

`reader_dm_runs` is unique per (team, user, slot), so a reader's moment is handled at most
once, by whichever process or replica claims it first; `open_reader` is unique, so a reader
has at most one unfinished DM. A claim is one transaction whose first statement is the
INSERT: it reads what the reader was sent before (`dm_deliveries`, unique per reader and
note), plans the DM and stores its messages and deliveries, or settles the moment when there
is nothing to send. Each message's `ts` is recorded as soon as Slack accepts it; a DM left
unfinished by a crash is taken over and first looked for in the reader's DM history.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.store.clock import aware, utcnow
from bot.store.ledger.dms import sent_to
from bot.store.ledger.records import (
    DONE,
    EMPTY,
    OPEN,
    LedgerPart,
    LostClaimError,
    Part,
    PlannedPart,
    claim_is_free,
)
from bot.store.ledger.runs import claimant_is_dead
from bot.store.schema import (
    digest_run_notes,
    digest_runs,
    dm_deliveries,
    reader_dm_messages,
    reader_dm_runs,
)

OFF = "off"  # the reader turned their DMs off (`/prdigest dm off`)
PAUSED = "paused"  # the reader was paused at that moment
# A reader whose previous DM was due longer ago than this gets the newest week, as a first
# DM does: two weeks and a day, so a week missed while no process ran loses nothing.
FRESH_START = timedelta(days=15)


@dataclass(frozen=True)
class ChannelNote:
    """A note the channel digest posted: in which finished run, of which week."""

    note_id: int
    run_id: int
    week: str


@dataclass(frozen=True)
class ReaderWindow:
    """What a reader's DM may hold, as the claim finds it: the notes the channel posted
    since the reader's previous DM (for a first DM, the newest digest week's), the notes
    sent to them before, and when their previous DM was due (None: never)."""

    posted: list[ChannelNote]
    sent: set[int]
    previous_due: datetime | None


@dataclass(frozen=True)
class ReaderDmPlan:
    """A reader's DM as planned: its messages (none: the moment is settled with `status`),
    the notes it shows in full (note id, channel run id, part) and those over budget."""

    status: str = EMPTY  # EMPTY, OFF or PAUSED when there are no messages
    parts: list[PlannedPart] = field(default_factory=list)
    shown: list[tuple[int, int, str]] = field(default_factory=list)
    left_out: list[tuple[int, str]] = field(default_factory=list)  # (note id, role or "")
    week: str | None = None


ReaderPlanner = Callable[[ReaderWindow], ReaderDmPlan]


@dataclass(frozen=True)
class ReaderDm:
    """One reader's DM for one moment, as the ledger holds it."""

    id: int
    run_key: str
    team_id: str
    user_id: str
    slot: str
    due_at: datetime
    status: str
    claimed_by: str | None
    heartbeat: datetime | None
    attempts: int
    upto_run: int | None
    week: str | None
    note_count: int
    left_out: list[tuple[int, str]]
    last_error: str | None
    created_at: datetime

    @property
    def resumed(self) -> bool:
        return self.attempts > 1


@dataclass(frozen=True)
class _Moment:
    """A reader's moment being claimed: whose, which slot and when it is due, the channel
    whose digest it follows, the claimant, the run key and the time of the claim."""

    team_id: str
    user_id: str
    slot: str
    due_at: datetime
    channel: str
    owner: str
    run_key: str
    now: datetime


@dataclass(frozen=True)
class ReaderClaim:
    """The outcome of `claim_reader_dm`: "new" (a DM to send), "settled" (nothing to send;
    `status` says why), "done" (the moment was handled before) or "busy" (the reader has
    an unfinished DM)."""

    outcome: str
    run: ReaderDm | None = None
    status: str = ""


def _dm_from_row(row: Any) -> ReaderDm:
    return ReaderDm(
        id=row.id,
        run_key=row.run_key,
        team_id=row.team_id,
        user_id=row.user_id,
        slot=row.slot,
        due_at=aware(row.due_at),
        status=row.status,
        claimed_by=row.claimed_by,
        heartbeat=None if row.heartbeat is None else aware(row.heartbeat),
        attempts=row.attempts,
        upto_run=row.upto_run,
        week=row.week,
        note_count=row.note_count,
        left_out=[(int(i), str(r)) for i, r in row.left_out or []],
        last_error=row.last_error,
        created_at=aware(row.created_at),
    )


def _part_from_row(row: Any) -> Part:
    return Part(
        run_id=row.run_id,
        part=row.part,
        seq=row.seq,
        kind="dm",
        channel=row.channel,
        payload=dict(row.payload),
        ts=row.ts,
        thread_ts=None,
        posted_channel=row.posted_channel,
        error=row.error,
    )


def _owned(run_id: int, owner: str) -> Any:
    """The DM, while `owner` still holds its claim: every write of a DM checks this."""
    return sa.and_(
        reader_dm_runs.c.id == run_id,
        reader_dm_runs.c.claimed_by == owner,
        reader_dm_runs.c.status == OPEN,
    )


def _reader(team_id: str, user_id: str) -> Any:
    return sa.and_(reader_dm_runs.c.team_id == team_id, reader_dm_runs.c.user_id == user_id)


class ReaderDms(LedgerPart):
    """Readers' own DMs: claiming a reader's moment, sending, finishing, taking over."""

    # -- reading ---------------------------------------------------------------------------

    def reader_dm(self, run_id: int) -> ReaderDm:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(reader_dm_runs).where(reader_dm_runs.c.id == run_id)).one()
        return _dm_from_row(row)

    def reader_dm_by_key(self, run_key: str) -> ReaderDm | None:
        stmt = sa.select(reader_dm_runs).where(reader_dm_runs.c.run_key == run_key)
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        return _dm_from_row(row) if row is not None else None

    def reader_dms(self, team_id: str | None = None, user_id: str | None = None) -> list[ReaderDm]:
        """Every DM moment handled (of one reader when named), oldest first."""
        stmt = sa.select(reader_dm_runs).order_by(reader_dm_runs.c.id)
        if team_id is not None and user_id is not None:
            stmt = stmt.where(_reader(team_id, user_id))
        with self.engine.connect() as conn:
            return [_dm_from_row(row) for row in conn.execute(stmt)]

    def reader_dm_parts(self, run_id: int) -> list[Part]:
        stmt = (
            sa.select(reader_dm_messages)
            .where(reader_dm_messages.c.run_id == run_id)
            .order_by(reader_dm_messages.c.seq)
        )
        with self.engine.connect() as conn:
            return [_part_from_row(row) for row in conn.execute(stmt)]

    def handled_moments(self, since: datetime) -> set[tuple[str, str, str]]:
        """(team, user, slot) of every reader's moment due at or after `since` that was
        claimed (sent, settled or still unfinished)."""
        stmt = sa.select(
            reader_dm_runs.c.team_id, reader_dm_runs.c.user_id, reader_dm_runs.c.slot
        ).where(reader_dm_runs.c.due_at >= since)
        with self.engine.connect() as conn:
            return {(r.team_id, r.user_id, r.slot) for r in conn.execute(stmt)}

    def open_reader_dms(self) -> list[ReaderDm]:
        stmt = (
            sa.select(reader_dm_runs)
            .where(reader_dm_runs.c.status == OPEN)
            .order_by(reader_dm_runs.c.id)
        )
        with self.engine.connect() as conn:
            return [_dm_from_row(row) for row in conn.execute(stmt)]

    def posted_runs_of(self, channel: str, note_ids: Iterable[int]) -> dict[int, int]:
        """note id -> the finished run of `channel` that posted it."""
        ids = sorted(set(note_ids))
        if not ids:
            return {}
        stmt = (
            sa.select(digest_run_notes.c.note_id, digest_run_notes.c.run_id)
            .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
            .where(
                digest_run_notes.c.channel == channel,
                digest_run_notes.c.note_id.in_(ids),
                digest_runs.c.status == DONE,
            )
        )
        with self.engine.connect() as conn:
            return {row.note_id: row.run_id for row in conn.execute(stmt)}

    def reader_window(
        self, channel: str, team_id: str, user_id: str, due_at: datetime
    ) -> ReaderWindow:
        """What a DM of the reader due at `due_at` would hold if it were claimed now (a dry
        run's view)."""
        with self.engine.connect() as conn:
            return _window(conn, channel, team_id, user_id, None, due_at)[0]

    # -- claiming --------------------------------------------------------------------------

    def claim_reader_dm(
        self,
        *,
        team_id: str,
        user_id: str,
        slot: str,
        due_at: datetime,
        channel: str,
        owner: str,
        plan: ReaderPlanner,
        run_key: str | None = None,
        now: datetime | None = None,
    ) -> ReaderClaim:
        """Claim the reader's moment `slot` and plan its DM inside the claim, or learn that
        it was handled already or that the reader has an unfinished DM. `run_key` (new
        when None) goes into the DM's Slack metadata and its buttons."""
        moment = _Moment(
            team_id,
            user_id,
            slot,
            due_at,
            channel,
            owner,
            run_key or uuid.uuid4().hex,
            now or utcnow(),
        )
        try:
            return self._claim_dm(moment, plan)
        except sa.exc.IntegrityError:
            pass  # the moment has a row already, or the reader has an unfinished DM
        stmt = sa.select(reader_dm_runs).where(
            _reader(team_id, user_id), reader_dm_runs.c.slot == slot
        )
        with self.engine.connect() as conn:
            row = conn.execute(stmt).first()
        if row is not None:
            return ReaderClaim("done", run=_dm_from_row(row), status=row.status)
        return ReaderClaim("busy")

    def _claim_dm(self, moment: _Moment, plan: ReaderPlanner) -> ReaderClaim:
        team_id, user_id, channel, now = moment.team_id, moment.user_id, moment.channel, moment.now
        with self.engine.begin() as conn:
            # The INSERT comes first: it takes the reader's moment (and the write lock).
            run_id = conn.execute(
                reader_dm_runs.insert()
                .values(
                    run_key=moment.run_key,
                    team_id=team_id,
                    user_id=user_id,
                    slot=moment.slot,
                    due_at=moment.due_at,
                    status=OPEN,
                    open_reader=f"{team_id}:{user_id}",
                    claimed_by=moment.owner,
                    claimed_at=now,
                    heartbeat=now,
                    attempts=1,
                    note_count=0,
                    created_at=now,
                )
                .returning(reader_dm_runs.c.id)
            ).scalar_one()
            window, upto = _window(conn, channel, team_id, user_id, run_id, moment.due_at)
            planned = plan(window)
            values: dict[str, Any] = {
                "upto_run": upto,
                "week": planned.week,
                "note_count": len(planned.shown),
                "left_out": [[i, r] for i, r in planned.left_out] or None,
            }
            where = reader_dm_runs.c.id == run_id
            if not planned.parts:
                settled = planned.status if planned.status != OPEN else EMPTY
                conn.execute(
                    reader_dm_runs.update()
                    .where(where)
                    .values(
                        status=settled,
                        open_reader=None,
                        claimed_by=None,
                        finished_at=now,
                        **values,
                    )
                )
                return ReaderClaim("settled", status=settled)
            conn.execute(
                reader_dm_messages.insert(),
                [
                    {
                        "run_id": run_id,
                        "part": p.part,
                        "seq": i,
                        "channel": p.channel,
                        "payload": p.payload,
                    }
                    for i, p in enumerate(planned.parts)
                ],
            )
            if planned.shown:
                conn.execute(
                    dm_deliveries.insert(),
                    [
                        {
                            "team_id": team_id,
                            "user_id": user_id,
                            "note_id": note_id,
                            "run_id": channel_run,
                            "part": f"reader:{run_id}:{part}",
                        }
                        for note_id, channel_run, part in planned.shown
                    ],
                )
            conn.execute(reader_dm_runs.update().where(where).values(**values))
            row = conn.execute(sa.select(reader_dm_runs).where(where)).one()
        return ReaderClaim("new", run=_dm_from_row(row))

    # -- while sending -----------------------------------------------------------------------

    def reader_dm_heartbeat(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as conn:
            beat = conn.execute(
                reader_dm_runs.update().where(_owned(run_id, owner)).values(heartbeat=utcnow())
            )
            if beat.rowcount != 1:
                raise LostClaimError(f"reader DM {run_id} was taken over by another process")

    def record_reader_dm_sent(
        self, run_id: int, part: str, owner: str, *, ts: str, posted_channel: str
    ) -> None:
        """Record a DM message Slack accepted (and refresh the claim's heartbeat)."""
        now = utcnow()
        with self.engine.begin() as conn:
            conn.execute(
                reader_dm_messages.update()
                .where(
                    reader_dm_messages.c.run_id == run_id,
                    reader_dm_messages.c.part == part,
                    reader_dm_messages.c.ts.is_(None),
                )
                .values(ts=ts, posted_channel=posted_channel, posted_at=now)
            )
            beat = conn.execute(
                reader_dm_runs.update().where(_owned(run_id, owner)).values(heartbeat=now)
            )
            if beat.rowcount != 1:
                raise LostClaimError(f"reader DM {run_id} was taken over by another process")

    def record_reader_dm_undeliverable(self, run_id: int, part: str, error: str) -> None:
        """A DM Slack refuses for good (the reader is gone): settled, not marked sent."""
        with self.engine.begin() as conn:
            conn.execute(
                reader_dm_messages.update()
                .where(reader_dm_messages.c.run_id == run_id, reader_dm_messages.c.part == part)
                .values(error=error)
            )

    def finish_reader_dm(self, run_id: int, owner: str) -> None:
        with self.engine.begin() as conn:
            done = conn.execute(
                reader_dm_runs.update()
                .where(_owned(run_id, owner))
                .values(
                    status=DONE,
                    open_reader=None,
                    claimed_by=None,
                    finished_at=utcnow(),
                    last_error=None,
                )
            )
            if done.rowcount != 1:
                raise LostClaimError(f"reader DM {run_id} was taken over by another process")

    def release_reader_dm(self, run_id: int, owner: str, error: str) -> None:
        """Leave the DM unfinished and free to be resumed (its heartbeat says when it was
        let go, so a retry can wait a while)."""
        with self.engine.begin() as conn:
            conn.execute(
                reader_dm_runs.update()
                .where(_owned(run_id, owner))
                .values(claimed_by=None, heartbeat=utcnow(), last_error=error)
            )

    def take_over_reader_dm(
        self, run: ReaderDm, owner: str, *, retry_after: timedelta = timedelta(0)
    ) -> ReaderDm | None:
        """Take over an unfinished DM whose claimant died or went stale, or that was
        released at least `retry_after` ago; None when it is not free."""
        now = utcnow()
        free = claim_is_free(
            run.status, run.claimed_by, run.heartbeat, now, self.stale_after, claimant_is_dead
        )
        if not free:
            return None
        released_at = run.heartbeat if run.claimed_by is None else None
        if released_at is not None and now - released_at < retry_after:
            return None
        stmt = reader_dm_runs.update().where(
            reader_dm_runs.c.id == run.id, reader_dm_runs.c.status == OPEN
        )
        if run.claimed_by is None:
            stmt = stmt.where(reader_dm_runs.c.claimed_by.is_(None))
        else:
            stmt = stmt.where(reader_dm_runs.c.claimed_by == run.claimed_by)
        with self.engine.begin() as conn:
            taken = conn.execute(
                stmt.values(
                    claimed_by=owner,
                    claimed_at=now,
                    heartbeat=now,
                    attempts=reader_dm_runs.c.attempts + 1,
                )
            )
        return self.reader_dm(run.id) if taken.rowcount == 1 else None


def _window(
    conn: Connection,
    channel: str,
    team_id: str,
    user_id: str,
    run_id: int | None,
    due_at: datetime,
) -> tuple[ReaderWindow, int | None]:
    """The reader's window (see `ReaderWindow`) and the newest finished run of `channel`;
    `run_id` is the DM being claimed (not its own previous DM). A previous DM due more
    than FRESH_START before `due_at` (a reader back after weeks away) counts as none:
    the DM holds the newest digest week, as a first one does."""
    previous_stmt = (
        sa.select(reader_dm_runs.c.upto_run, reader_dm_runs.c.due_at)
        .where(_reader(team_id, user_id))
        .order_by(reader_dm_runs.c.id.desc())
        .limit(1)
    )
    if run_id is not None:
        previous_stmt = previous_stmt.where(reader_dm_runs.c.id != run_id)
    previous = conn.execute(previous_stmt).first()
    if previous is not None and aware(previous.due_at) < due_at - FRESH_START:
        previous = None
    sent = sent_to(conn, team_id, user_id)
    done = sa.and_(digest_runs.c.channel == channel, digest_runs.c.status == DONE)
    upto = conn.execute(sa.select(sa.func.max(digest_runs.c.id)).where(done)).scalar()
    posted: list[ChannelNote] = []
    if upto is not None:
        stmt = (
            sa.select(digest_run_notes.c.note_id, digest_runs.c.id, digest_runs.c.week)
            .join(digest_runs, digest_runs.c.id == digest_run_notes.c.run_id)
            .where(done, digest_runs.c.id <= upto)
            .order_by(digest_runs.c.id, digest_run_notes.c.note_id)
        )
        if previous is not None:
            stmt = stmt.where(digest_runs.c.id > (previous.upto_run or 0))
        else:
            # A reader's first DM: the newest digest week (the digest and its additions).
            newest = conn.execute(
                sa.select(digest_runs.c.week)
                .where(done, digest_runs.c.note_count > 0)
                .order_by(digest_runs.c.id.desc())
                .limit(1)
            ).scalar()
            stmt = stmt.where(digest_runs.c.week == newest)
        posted = [ChannelNote(r.note_id, r.id, r.week) for r in conn.execute(stmt)]
    previous_due = aware(previous.due_at) if previous is not None else None
    return ReaderWindow(posted, sent, previous_due), upto
