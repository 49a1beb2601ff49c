"""Readers' preferences: a verdict filter per subscription, saved searches, pauses.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # NULL: every verdict; "skim": deep and skim; "deep": deep only.
    op.add_column("subscriptions", sa.Column("min_verdict", sa.String(8), nullable=True))
    op.create_table(
        "watches",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("query_key", sa.String(200), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("team_id", "user_id", "query_key", name="uq_watches_user_query"),
    )
    op.create_table(
        "pauses",
        sa.Column("team_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("pauses")
    op.drop_table("watches")
    op.drop_column("subscriptions", "min_verdict")
