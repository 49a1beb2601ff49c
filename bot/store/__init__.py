"""Persistence: notes, subscriptions and (later revisions) the delivery ledger.

`Store.open(url)` connects to SQLite or PostgreSQL and applies Alembic migrations.
"""

from bot.store.sql import FileResult, Page, Store, StoreError, utcnow

__all__ = ["FileResult", "Page", "Store", "StoreError", "utcnow"]
