"""The delivery ledger: which notes went to which channel, and every Slack message sent.

A digest run is claimed atomically: `digest_runs.open_channel` is unique, so a channel has at
most one unfinished run, and `digest_run_notes` is unique per (channel, note), so no note is
ever planned twice for one channel. The first statement of a claim is an INSERT, so on SQLite
the claim holds the database write lock from its first step; on PostgreSQL a concurrent claim
waits on the unique index until the first one commits or rolls back.

A run's messages (`delivered_messages`) are planned, rendered and stored when the run is
claimed; a message's `ts` is recorded right after Slack accepts it. A resumed run therefore
posts exactly the parts that are still missing.

`Ledger` is composed of one module per concern: `runs` (claiming, heartbeats, finishing),
`messages` (posted messages and those to update in place), `dms` (DM deliveries),
`reader_dms` (each reader's own weekly DM, claimed once per reader and moment) and
`history` (what was posted, week by week); `records` holds what they share.

May import: the rest of `bot.store` (its tables and clock), like the store itself.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.engine import Engine

from bot.store.ledger.dms import DmRecords
from bot.store.ledger.history import History, PostedNote
from bot.store.ledger.messages import Messages, StaleMessage
from bot.store.ledger.reader_dms import (
    OFF,
    PAUSED,
    ChannelNote,
    ReaderClaim,
    ReaderDm,
    ReaderDmPlan,
    ReaderDms,
    ReaderPlanner,
    ReaderWindow,
)
from bot.store.ledger.records import (
    DONE,
    EMPTY,
    OPEN,
    LostClaimError,
    Part,
    PlannedPart,
    slot_key,
)
from bot.store.ledger.runs import (
    Claim,
    Plan,
    Planner,
    Run,
    RunClaims,
    claimant_is_dead,
    process_identity,
)

__all__ = [
    "DONE",
    "EMPTY",
    "OFF",
    "OPEN",
    "PAUSED",
    "ChannelNote",
    "Claim",
    "Ledger",
    "LostClaimError",
    "Part",
    "Plan",
    "PlannedPart",
    "Planner",
    "PostedNote",
    "ReaderClaim",
    "ReaderDm",
    "ReaderDmPlan",
    "ReaderPlanner",
    "ReaderWindow",
    "Run",
    "StaleMessage",
    "claimant_is_dead",
    "process_identity",
    "slot_key",
]


class Ledger(RunClaims, Messages, DmRecords, ReaderDms, History):
    """The delivery ledger on the store's engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: Engine, stale_after: timedelta = timedelta(minutes=10)) -> None:
        self.engine = engine
        self.stale_after = stale_after
