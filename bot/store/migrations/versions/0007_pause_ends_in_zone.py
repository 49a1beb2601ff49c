"""Pauses set with `pause until DATE` on SQLite end at the start of DATE in PRDIGEST_TIMEZONE.

Before this revision SQLite stored such an end as the local midnight's wall-clock time
without its offset, read back as UTC (hours off outside UTC); every time is now stored as
UTC. The ends of pauses not yet over that sit exactly on a midnight are read again as
midnight in PRDIGEST_TIMEZONE (the only times stored in another zone; a `pause 2w` end
falls on a microsecond-exact midnight practically never). PostgreSQL kept the offset:
nothing changes there. No schema change.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import sqlalchemy as sa
from alembic import op

from bot.config import SettingsError, load_settings

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

log = logging.getLogger(__name__)

_STORED = "%Y-%m-%d %H:%M:%S.%f"  # how SQLAlchemy writes a datetime into SQLite


def _zone() -> ZoneInfo | None:
    try:
        return load_settings().zone
    except SettingsError as exc:
        log.warning("pause ends kept as stored (%s): check PRDIGEST_TIMEZONE", exc)
        return None


def upgrade() -> None:
    conn = op.get_bind()
    if conn.dialect.name != "sqlite":
        return
    zone = _zone()
    if zone is None or zone.key == "UTC":
        return
    now = datetime.now(UTC)
    rows = conn.execute(sa.text("SELECT team_id, user_id, until FROM pauses")).all()
    for team_id, user_id, until in rows:
        stored = datetime.fromisoformat(until)
        if stored.time() != datetime.min.time():
            continue
        meant = stored.replace(tzinfo=zone).astimezone(UTC)
        if max(stored.replace(tzinfo=UTC), meant) <= now:
            continue  # over already: its digests went out as they did
        conn.execute(
            sa.text("UPDATE pauses SET until = :until WHERE team_id = :team AND user_id = :user"),
            {"until": meant.strftime(_STORED), "team": team_id, "user": user_id},
        )


def downgrade() -> None:
    """The old reading (local midnight taken as UTC) was the fault; nothing to restore."""
