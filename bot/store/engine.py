"""Opening the database: the engine with its SQLite settings, migrations to the newest
schema, and the errors that say why a database cannot be used.

`StorePart` is what every part of `Store` stands on: the engine and its dialect."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from bot.config import hide_password, masked_url
from bot.store.locks import MIGRATION_LOCK, lock_writes

MIGRATIONS = Path(__file__).parent / "migrations"
WAL_SWITCH_SECONDS = 30  # as long as the busy timeout
SCHEMA_HEAD = "0010"  # the newest revision in migrations/versions (a test checks it)


DATABASE_SETTING = "PRDIGEST_DATABASE_URL"
CONNECT_TIMEOUT_SECONDS = 5


class StoreError(RuntimeError):
    """The database cannot be reached or migrated; the message says which."""


_SQLITE_QUERY_FAULTS = ("no such", "syntax error", "table ", "near ")


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` means the database cannot be reached right now (down, restarting,
    connection dropped) rather than a fault in a query."""
    if isinstance(exc, sa.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sa.exc.OperationalError) and type(exc.orig).__module__ == "sqlite3":
        # SQLite reports a broken query as an "operational" error too.
        return not str(exc.orig).startswith(_SQLITE_QUERY_FAULTS)
    return isinstance(exc, sa.exc.OperationalError | sa.exc.InterfaceError | sa.exc.TimeoutError)


def describe_unavailable(exc: BaseException, url: str, setting: str = DATABASE_SETTING) -> str:
    """One line naming the database (password masked), the cause and what to check."""
    reason = hide_password(_first_line(exc), url)
    fix = (
        "that its folder exists and is writable"
        if url.startswith("sqlite")
        else "that the database server is running"
    )
    return f"the database at {masked_url(url)} is unavailable ({reason}): check {setting} and {fix}"


def _use_wal(cursor: Any) -> None:
    """Switch to WAL, waiting for other processes doing the same.

    Two connections switching a new file at once both hold a shared lock and both want the
    exclusive one; SQLite answers one of them "database is locked" at once rather than call
    the busy handler (waiting could deadlock). Its statement has ended, so it may retry.
    """
    deadline = time.monotonic() + WAL_SWITCH_SECONDS
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    _use_wal(cursor)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA cache_size=-65536")  # 64 MiB: FTS merges and bulk ingest
    cursor.execute("PRAGMA temp_store=MEMORY")
    cursor.execute("PRAGMA wal_autocheckpoint=10000")  # fewer, larger checkpoints (40 MiB)
    cursor.close()


def create_db_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    # pool_pre_ping replaces connections a database restart dropped; the connect timeout
    # keeps a request from hanging on a host that does not answer.
    return sa.create_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=10,
        connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS},
    )


def _current_revision(conn: Connection) -> str | None:
    if not sa.inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision (a no-op when already there).

    Alembic is imported only when there is something to do: it is most of the start-up
    time of a short command such as `prdigest lookup`.
    """
    with engine.connect() as conn:
        if _current_revision(conn) == SCHEMA_HEAD:
            return
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        lock_writes(conn, MIGRATION_LOCK)  # several replicas may start at once
        if _current_revision(conn) == SCHEMA_HEAD:
            return
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class StorePart:
    """The engine every part of `Store` (notes, fixes, subscriptions, ...) works on."""

    engine: Engine

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name


def open_engine(url: str, setting: str = DATABASE_SETTING) -> Engine:
    """Connect and migrate; a bad URL or unreachable server raises StoreError whose
    message names `setting` (the variable or argument the URL came from)."""
    try:
        engine = create_db_engine(url)
    except (sa.exc.SQLAlchemyError, ValueError, ImportError) as exc:
        raise StoreError(
            f"cannot use the database URL {masked_url(url)} "
            f"({hide_password(_first_line(exc), url)}): check {setting}"
        ) from None
    try:
        migrate(engine)
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        engine.dispose()
        raise StoreError(describe_unavailable(exc, url, setting)) from None
    return engine
