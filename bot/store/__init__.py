"""Persistence: notes, subscriptions and (later revisions) the delivery ledger.

`Store.open(url)` connects to SQLite or PostgreSQL and applies Alembic migrations.
"""

from bot.store.sql import FileResult, IndexedNote, Page, Store, StoreError, index_note, utcnow

__all__ = [
    "FileResult",
    "IndexedNote",
    "Page",
    "Store",
    "StoreError",
    "index_note",
    "utcnow",
]
