"""Readings by a model server, stored under the hash of what was read so the same text
is never asked twice."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from bot.store.clock import utcnow
from bot.store.engine import StorePart
from bot.store.rows import chunks
from bot.store.schema import llm_readings


class Readings(StorePart):
    """The model server's readings, by key."""

    def cached_readings(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Reading key -> the stored answer, for the keys that have one."""
        found: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for chunk in chunks(list(dict.fromkeys(keys))):
                stmt = sa.select(llm_readings.c.key, llm_readings.c.reading)
                for row in conn.execute(stmt.where(llm_readings.c.key.in_(chunk))):
                    found[row.key] = row.reading
        return found

    def save_readings(
        self, readings: Sequence[tuple[str, str, dict[str, Any]]], now: datetime | None = None
    ) -> None:
        """Store (key, model, reading) answers; a key stored meanwhile (another replica
        read the same text) is overwritten with the same reading."""
        if not readings:
            return
        rows = [
            {"key": k, "model": m, "reading": r, "read_at": now or utcnow()}
            for k, m, r in dict((k, (k, m, r)) for k, m, r in readings).values()
        ]
        with self.engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                from sqlalchemy.dialects.postgresql import insert as pg_insert

                pg = pg_insert(llm_readings)
                stmt: sa.Insert = pg.on_conflict_do_update(
                    index_elements=["key"], set_={"reading": pg.excluded.reading}
                )
            else:
                from sqlalchemy.dialects.sqlite import insert as sqlite_insert

                lite = sqlite_insert(llm_readings)
                stmt = lite.on_conflict_do_update(
                    index_elements=["key"], set_={"reading": lite.excluded.reading}
                )
            for chunk in chunks(rows):
                conn.execute(stmt, list(chunk))
