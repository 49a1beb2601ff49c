"""Each reader's own settings (reading budget, DM day and time, DMs off, language) and the
profile Slack reports of them (time zone and locale from `users.info`, cached).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "reader_settings",
        sa.Column("team_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("budget", sa.SmallInteger, nullable=True),
        sa.Column("dm_weekday", sa.SmallInteger, nullable=True),
        sa.Column("dm_time", sa.String(5), nullable=True),
        sa.Column("dm_off", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("language", sa.String(8), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "reader_profiles",
        sa.Column("team_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("tz", sa.String(64), nullable=True),
        sa.Column("locale", sa.String(16), nullable=True),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("reader_profiles")
    op.drop_table("reader_settings")
