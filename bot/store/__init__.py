"""Persistence: notes, subscriptions and (later revisions) the delivery ledger.

`Store.open(url)` connects to SQLite or PostgreSQL and applies Alembic migrations. `sql` is
the engine and notes, `readers` the readers' settings, `ledger` what was delivered, `schema`
the tables, `clock` and `locks` what they share.

May import: `bot.domain`, `bot.config` and `bot.notes` (note identity and search tokens);
never readers, delivery, Slack, render, services, ops or the CLI.
"""

from bot.store.clock import utcnow
from bot.store.sql import (
    FileResult,
    IndexedNote,
    Page,
    Store,
    StoreError,
    describe_unavailable,
    index_note,
    is_unavailable,
)

__all__ = [
    "FileResult",
    "IndexedNote",
    "Page",
    "Store",
    "StoreError",
    "describe_unavailable",
    "index_note",
    "is_unavailable",
    "utcnow",
]
