"""Transaction locks that keep concurrent writers (replicas, a scheduled ingest, two commands
from one reader) from deciding their writes on reads another writer is about to change."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

MIGRATION_LOCK, NOTES_LOCK = 727001, 727002  # PostgreSQL advisory lock keys
READER_LOCKS = 727003  # ... and the first key of the (key, reader hash) pairs


def lock_writes(conn: Connection, key: int) -> None:
    """Make this transaction the only writer of its kind until it ends; others wait.

    Several processes (replicas, a scheduled ingest) may write at once, and their reads
    decide their writes. PostgreSQL: a transaction-scoped advisory lock on `key`. SQLite:
    BEGIN IMMEDIATE takes the database's write lock now (the driver would otherwise begin
    only at the first write, after those reads); the busy timeout makes others wait.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
    elif conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")


def lock_reader(conn: Connection, team_id: str, user_id: str) -> None:
    """Make this transaction the only one changing one reader's settings until it ends.

    Call it first in the transaction: what it then reads (a count against a limit, a row
    that decides insert or update) stays true until it commits. PostgreSQL: an advisory
    lock on the reader (other readers go on); SQLite: the database's write lock, as
    SQLite has no finer one.
    """
    if conn.dialect.name == "postgresql":
        conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(:space, hashtext(:reader))"),
            {"space": READER_LOCKS, "reader": f"{team_id}/{user_id}"},
        )
    elif conn.dialect.name == "sqlite":
        conn.exec_driver_sql("BEGIN IMMEDIATE")
