"""Delivery ledger of the weekly digest: runs, their notes, every Slack message, DMs.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "digest_runs",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(32), nullable=False, unique=True),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("week", sa.String(10), nullable=False),
        sa.Column("slot", sa.String(40), nullable=True),
        sa.Column("addition", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("open_channel", sa.String(32), nullable=True, unique=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("dm_planned", sa.Boolean, nullable=False),
        sa.Column("note_count", sa.Integer, nullable=False),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("channel", "slot", name="uq_digest_runs_channel_slot"),
    )
    op.create_index("ix_digest_runs_channel_week", "digest_runs", ["channel", "week"])
    op.create_table(
        "digest_run_notes",
        sa.Column(
            "run_id",
            BigId,
            sa.ForeignKey("digest_runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("role", sa.String(64), nullable=False),
        sa.UniqueConstraint("channel", "note_id", name="uq_digest_run_notes_channel_note"),
    )
    op.create_table(
        "delivered_messages",
        sa.Column(
            "run_id",
            BigId,
            sa.ForeignKey("digest_runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("part", sa.String(120), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("ts", sa.String(32), nullable=True),
        sa.Column("thread_ts", sa.String(32), nullable=True),
        sa.Column("posted_channel", sa.String(32), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_table(
        "dm_deliveries",
        sa.Column("team_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column(
            "note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column(
            "run_id",
            BigId,
            sa.ForeignKey("digest_runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("part", sa.String(120), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("dm_deliveries")
    op.drop_table("delivered_messages")
    op.drop_table("digest_run_notes")
    op.drop_index("ix_digest_runs_channel_week", table_name="digest_runs")
    op.drop_table("digest_runs")
