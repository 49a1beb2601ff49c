"""Readings by the team's model server: who read each note, and a cache of the readings.

* `notes.read_by`: "classifier" (the local classifier) or "llm:<model>"; notes stored
  before this revision were read by the classifier.
* `llm_readings`: a model's validated reading of a note's text, keyed by the hash of the
  title, the paragraph, the model and the prompt version, so an unchanged note is never
  sent to the model again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "notes",
        sa.Column("read_by", sa.String(220), nullable=False, server_default="classifier"),
    )
    op.create_table(
        "llm_readings",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("reading", sa.JSON, nullable=False),
        sa.Column("read_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("llm_readings")
    with op.batch_alter_table("notes") as batch:
        batch.drop_column("read_by")
