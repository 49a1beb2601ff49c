"""What every part of the ledger shares: run statuses, a message part as planned and as
stored, the claim check every write makes, and `LedgerPart`, the engine they work on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from bot.store.schema import digest_runs

OPEN = "open"
DONE = "done"
EMPTY = "empty"  # a scheduled slot that found nothing to post


@dataclass(frozen=True)
class PlannedPart:
    """One Slack message of a run, rendered before anything is posted."""

    part: str  # "parent", "role:moe-quant:2", "dm:T:U:1"
    kind: str  # "parent", "thread" or "dm"
    channel: str  # channel ID, or a user ID for a DM
    payload: dict[str, Any]  # {"text": ..., "blocks": [...]}


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


def part_from_row(row: Any) -> Part:
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


def slot_key(moment: datetime) -> str:
    """A scheduled moment as the ledger keys it: its UTC time, ISO 8601 to the second."""
    return moment.astimezone(UTC).isoformat(timespec="seconds")


def claim_is_free(
    status: str,
    claimed_by: str | None,
    heartbeat: datetime | None,
    now: datetime,
    stale_after: timedelta,
    is_dead: Callable[[str], bool],
) -> bool:
    """An unfinished run (a channel digest or a reader's DM) may be taken over when it was
    released, its heartbeat is older than `stale_after`, or its claimant died."""
    if status != OPEN:
        return False
    if claimed_by is None or heartbeat is None:
        return True
    if now - heartbeat > stale_after:
        return True
    return is_dead(claimed_by)


class LostClaimError(RuntimeError):
    """Another process took this run over (our heartbeat went stale); stop posting."""


def owned(run_id: int, owner: str) -> Any:
    """The run, while `owner` still holds its claim: every write of a run checks this."""
    return sa.and_(
        digest_runs.c.id == run_id,
        digest_runs.c.claimed_by == owner,
        digest_runs.c.status == OPEN,
    )


class LedgerPart:
    """The engine every part of the `Ledger` works on, and when a claim goes stale."""

    engine: Engine
    stale_after: timedelta
