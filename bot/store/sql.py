"""`Store`: one SQL database (SQLite or PostgreSQL) composed of its parts.

Each concern lives in its own module and `Store` inherits them all, so callers keep one
object: `engine` (opening, migrations, errors), `note_saving` (ingesting note files),
`note_queries` (reading notes back), `note_search` (full-text search), `note_removal`
(removing notes by identity), `fixes` (editor fixes, re-classification, the store's facts),
`readings` (a model server's cached readings) and `subscriptions`. Readers' settings are
`store.readers`; the delivery ledger is `ledger`.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from bot.store.engine import DATABASE_SETTING, StoreError, open_engine
from bot.store.fixes import Fixes
from bot.store.note_queries import NoteQueries
from bot.store.note_removal import NoteRemover
from bot.store.note_saving import NoteSaving
from bot.store.note_search import NoteSearch
from bot.store.readers import Readers
from bot.store.readings import Readings
from bot.store.schema import metadata
from bot.store.subscriptions import Subscriptions


class Store(NoteSaving, NoteQueries, NoteSearch, NoteRemover, Fixes, Readings, Subscriptions):
    """Notes, roles, full-text search and subscriptions in one SQL database."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(cls, url: str, setting: str = DATABASE_SETTING) -> Store:
        """Connect and migrate; a bad URL or unreachable server raises StoreError whose
        message names `setting` (the variable or argument the URL came from)."""
        return cls(open_engine(url, setting))

    @property
    def readers(self) -> Readers:
        """Verdict filters, saved searches and pauses."""
        return Readers(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def ping(self) -> bool:
        try:
            with self.engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
        except sa.exc.SQLAlchemyError:
            return False
        return True

    # -- moving between databases ----------------------------------------------------

    def copy_to(self, target: Store, batch: int = 5000) -> dict[str, int]:
        """Copy every table (notes, subscriptions, the delivery ledger) into an empty store.

        Used to move from SQLite to PostgreSQL without re-posting anything: the ledger
        moves with the notes. Returns rows copied per table.
        """
        if target.count_notes():
            raise StoreError("the target database already has notes; copy into an empty one")
        copied: dict[str, int] = {}
        with self.engine.connect() as source, target.engine.begin() as dest:
            for table in metadata.sorted_tables:
                count = 0
                rows = source.execute(sa.select(table)).mappings()
                while chunk := rows.fetchmany(batch):
                    dest.execute(table.insert(), [dict(row) for row in chunk])
                    count += len(chunk)
                copied[table.name] = count
            if dest.dialect.name == "sqlite":
                for fts in ("notes_fts", "notes_title_fts"):
                    dest.exec_driver_sql(f"INSERT INTO {fts}({fts}) VALUES ('rebuild')")
            else:
                for table in metadata.sorted_tables:
                    if "id" in table.c and table.c.id.autoincrement is True:
                        dest.execute(
                            sa.text(
                                f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                                f"COALESCE((SELECT max(id) FROM {table.name}), 0) + 1, false)"
                            )
                        )
        return copied
