"""Upgrading a store that holds pauses: 0007 gives SQLite's `pause until` ends their zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from bot.domain import Pause
from bot.store import Store
from bot.store.engine import MIGRATIONS, SCHEMA_HEAD, create_db_engine

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
NEXT_YEAR = datetime.now(UTC).year + 1  # pauses not over yet


def upgrade_to(url: str, revision: str) -> None:
    engine = create_db_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)
    engine.dispose()


def test_upgrade_reads_midnight_pause_ends_in_the_zone(
    empty_db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    upgrade_to(empty_db_url, "0006")
    sqlite = empty_db_url.startswith("sqlite")
    midnight = datetime(NEXT_YEAR, 1, 11, tzinfo=UTC)
    weeks = datetime(NEXT_YEAR, 1, 5, 3, 22, 55, 123456, tzinfo=UTC)
    over = datetime(2020, 1, 11, tzinfo=UTC)
    # As the previous version stored them: SQLite kept `pause until` as the local midnight's
    # wall-clock time without its offset; PostgreSQL kept the instant (16:00 UTC the day before).
    shanghai_midnight = midnight - timedelta(hours=8)
    rows = {
        "U1": midnight if sqlite else shanghai_midnight,  # pause until YEAR-01-11
        "U2": weeks,  # pause 2w
        "U3": over,  # a pause until 2020-01-11, long over
    }
    engine = create_db_engine(empty_db_url)
    with engine.begin() as conn:
        for user, until in rows.items():
            stored: object = until.strftime("%Y-%m-%d %H:%M:%S.%f") if sqlite else until
            conn.execute(
                sa.text(
                    "INSERT INTO pauses (team_id, user_id, started_at, until) "
                    "VALUES ('T1', :user, :started, :until)"
                ),
                {
                    "user": user,
                    "started": T0 if not sqlite else "2026-11-23 09:00:00.000000",
                    "until": stored,
                },
            )
    engine.dispose()

    monkeypatch.setenv("PRDIGEST_TIMEZONE", "Asia/Shanghai")
    store = Store.open(empty_db_url)
    try:
        with store.engine.connect() as conn:
            version = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        assert version == SCHEMA_HEAD
        readers = store.readers
        assert readers.pause_of("T1", "U1") == Pause(T0, shanghai_midnight)
        assert readers.pause_of("T1", "U2") == Pause(T0, weeks), "not a midnight: kept"
        assert readers.pause_of("T1", "U3") == Pause(T0, over), "over already: kept"
    finally:
        store.close()


def test_upgrade_in_utc_changes_no_pause(empty_db_url: str) -> None:
    upgrade_to(empty_db_url, "0006")
    midnight = datetime(NEXT_YEAR, 1, 11, tzinfo=UTC)
    engine = create_db_engine(empty_db_url)
    with engine.begin() as conn:
        meta = sa.MetaData()
        pauses = sa.Table("pauses", meta, autoload_with=conn)
        conn.execute(
            pauses.insert().values(team_id="T1", user_id="U1", started_at=T0, until=midnight)
        )
    engine.dispose()
    store = Store.open(empty_db_url)
    try:
        assert store.readers.pause_of("T1", "U1") == Pause(T0, midnight)
    finally:
        store.close()
