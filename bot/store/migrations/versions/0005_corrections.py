"""Corrections and revisions in place: note fixes, a key/value table, per-note message.

* `note_fixes`: an editor's roles / primary role / verdict for a note, with who and when;
  it wins over the classifier, through re-ingestion and re-classification.
* `store_meta`: small key/value facts about the store (the classifier fingerprint).
* `digest_run_notes` learns which message holds each note (`part`), what the note looked
  like when posted (`shown_hash`: its content hash, `shown_fix`: its fix revision) and
  whether its message was updated since (`revised`).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "note_fixes",
        sa.Column(
            "note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("roles", sa.JSON, nullable=False),
        sa.Column("primary_role", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(8), nullable=True),
        sa.Column("revision", sa.Integer, nullable=False),
        sa.Column("fixed_by", sa.String(64), nullable=False),
        sa.Column("fixed_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "store_meta",
        sa.Column("key", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    with op.batch_alter_table("digest_run_notes") as batch:
        batch.add_column(sa.Column("part", sa.String(120), nullable=True))
        batch.add_column(sa.Column("shown_hash", sa.String(32), nullable=True))
        batch.add_column(sa.Column("shown_fix", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("revised", sa.Boolean, nullable=False, server_default=sa.false())
        )
    _backfill()


def _backfill() -> None:
    """Notes posted before this revision: their message from the stored payloads, and
    their current content as what was shown (they are not marked revised)."""
    bind = op.get_bind()
    op.execute(
        "UPDATE digest_run_notes SET shown_hash = "
        "(SELECT content_hash FROM notes WHERE notes.id = digest_run_notes.note_id)"
    )
    messages = sa.table(
        "delivered_messages",
        sa.column("run_id", sa.Integer),
        sa.column("part", sa.String),
        sa.column("kind", sa.String),
        sa.column("payload", sa.JSON),
    )
    run_notes = sa.table(
        "digest_run_notes",
        sa.column("run_id", sa.Integer),
        sa.column("note_id", sa.Integer),
        sa.column("part", sa.String),
    )
    rows = bind.execute(
        sa.select(messages.c.run_id, messages.c.part, messages.c.payload).where(
            messages.c.kind == "thread"
        )
    )
    for row in rows.fetchall():
        payload: Any = row.payload
        if isinstance(payload, str):
            payload = json.loads(payload)
        for block in (payload or {}).get("blocks") or []:
            block_id = str(block.get("block_id") or "")
            if block_id.startswith("note-") and block_id[5:].isdigit():
                bind.execute(
                    run_notes.update()
                    .where(
                        run_notes.c.run_id == row.run_id,
                        run_notes.c.note_id == int(block_id[5:]),
                    )
                    .values(part=row.part)
                )


def downgrade() -> None:
    with op.batch_alter_table("digest_run_notes") as batch:
        batch.drop_column("revised")
        batch.drop_column("shown_fix")
        batch.drop_column("shown_hash")
        batch.drop_column("part")
    op.drop_table("store_meta")
    op.drop_table("note_fixes")
