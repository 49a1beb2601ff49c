"""Notes keep how sure the classifier was of their verdict ("low" when the words say little).

Notes stored before this revision count as "high": they are re-classified, and get their
real confidence, when their paragraph next changes.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "notes",
        sa.Column("verdict_confidence", sa.String(8), nullable=False, server_default="high"),
    )


def downgrade() -> None:
    with op.batch_alter_table("notes") as batch:
        batch.drop_column("verdict_confidence")
