"""Persistence: notes, subscriptions, readers' settings and the delivery ledger.

`Store.open(url)` connects to SQLite or PostgreSQL and applies Alembic migrations. `sql` is
the `Store`, composed of one module per concern: `engine` (opening, migrations, errors),
`note_saving`, `note_queries`, `note_search`, `note_removal`, `fixes`, `readings` and
`subscriptions`, with `rows` the note rows they share. `readers` holds the readers'
settings, the `ledger` package what was delivered, `schema` the tables, `clock` and `locks`
what they share.

May import: `bot.domain`, `bot.config` and `bot.notes` (note identity and search tokens);
never readers, delivery, Slack, render, services, ops or the CLI.
"""

from bot.store.clock import utcnow
from bot.store.engine import StoreError, describe_unavailable, is_unavailable
from bot.store.note_queries import Page
from bot.store.note_removal import NoteRemoval
from bot.store.note_saving import FileResult, IndexedNote, PreparedNote, index_note, prepare_note
from bot.store.sql import Store

__all__ = [
    "FileResult",
    "IndexedNote",
    "NoteRemoval",
    "Page",
    "PreparedNote",
    "Store",
    "StoreError",
    "describe_unavailable",
    "index_note",
    "is_unavailable",
    "prepare_note",
    "utcnow",
]
