"""Persistence: notes, subscriptions and (later revisions) the delivery ledger.

`Store.open(url)` connects to SQLite or PostgreSQL and applies Alembic migrations.
"""

from bot.store.sql import (
    FileResult,
    IndexedNote,
    Page,
    Store,
    StoreError,
    describe_unavailable,
    index_note,
    is_unavailable,
    utcnow,
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
