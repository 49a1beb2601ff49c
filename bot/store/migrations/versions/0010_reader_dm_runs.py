"""Each reader's weekly DM at their own day and time: one row per reader and scheduled
moment (claimed once, like a channel run), and the DM's messages as planned and sent.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "reader_dm_runs",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("run_key", sa.String(32), nullable=False, unique=True),
        sa.Column("team_id", sa.String(32), nullable=False),
        sa.Column("user_id", sa.String(32), nullable=False),
        sa.Column("slot", sa.String(60), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(10), nullable=False),
        sa.Column("open_reader", sa.String(80), nullable=True, unique=True),
        sa.Column("claimed_by", sa.String(200), nullable=True),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("heartbeat", sa.DateTime(timezone=True), nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("upto_run", sa.BigInteger, nullable=True),
        sa.Column("week", sa.String(10), nullable=True),
        sa.Column("note_count", sa.Integer, nullable=False),
        sa.Column("left_out", sa.JSON, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.UniqueConstraint("team_id", "user_id", "slot", name="uq_reader_dm_runs_reader_slot"),
    )
    op.create_index("ix_reader_dm_runs_due_at", "reader_dm_runs", ["due_at"])
    op.create_table(
        "reader_dm_messages",
        sa.Column(
            "run_id",
            _ID,
            sa.ForeignKey("reader_dm_runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("part", sa.String(120), primary_key=True),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("channel", sa.String(32), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("ts", sa.String(32), nullable=True),
        sa.Column("posted_channel", sa.String(32), nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=True),
    )


def downgrade() -> None:
    op.drop_table("reader_dm_messages")
    op.drop_index("ix_reader_dm_runs_due_at", table_name="reader_dm_runs")
    op.drop_table("reader_dm_runs")
