"""Notes, their roles, full-text search and subscriptions.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

SQLITE_FTS = [
    "CREATE VIRTUAL TABLE notes_fts USING fts5(search_title, search_body, content='notes', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER notes_fts_insert AFTER INSERT ON notes BEGIN "
    "INSERT INTO notes_fts(rowid, search_title, search_body) "
    "VALUES (new.id, new.search_title, new.search_body); END",
    "CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN "
    "INSERT INTO notes_fts(notes_fts, rowid, search_title, search_body) "
    "VALUES ('delete', old.id, old.search_title, old.search_body); END",
    "CREATE TRIGGER notes_fts_update AFTER UPDATE OF search_title, search_body ON notes BEGIN "
    "INSERT INTO notes_fts(notes_fts, rowid, search_title, search_body) "
    "VALUES ('delete', old.id, old.search_title, old.search_body); "
    "INSERT INTO notes_fts(rowid, search_title, search_body) "
    "VALUES (new.id, new.search_title, new.search_body); END",
]
POSTGRES_FTS = [
    "CREATE INDEX ix_notes_search ON notes USING gin (("
    "setweight(to_tsvector('simple', search_title), 'A') || "
    "setweight(to_tsvector('simple', search_body), 'B')))",
]


def upgrade() -> None:
    op.create_table(
        "notes",
        sa.Column("id", BigId, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(32), nullable=False, unique=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("paragraph", sa.Text, nullable=False),
        sa.Column("pr", sa.Integer, nullable=True),
        sa.Column("pr_url", sa.Text, nullable=True),
        sa.Column("content_hash", sa.String(32), nullable=False),
        sa.Column("roles", sa.JSON, nullable=False),
        sa.Column("primary_role", sa.String(64), nullable=False),
        sa.Column("verdict", sa.String(8), nullable=False),
        sa.Column("verdict_rank", sa.SmallInteger, nullable=False),
        sa.Column("role_verdicts", sa.JSON, nullable=False),
        sa.Column("excerpt", sa.Text, nullable=False),
        sa.Column("source_file", sa.Text, nullable=False),
        sa.Column("source_line", sa.Integer, nullable=False),
        sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("search_title", sa.Text, nullable=False),
        sa.Column("search_body", sa.Text, nullable=False),
    )
    op.create_index("ix_notes_ingested_at", "notes", ["ingested_at"])
    op.create_table(
        "note_roles",
        sa.Column(
            "note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
        ),
        sa.Column("role", sa.String(64), primary_key=True),
        sa.Column("verdict_rank", sa.SmallInteger, nullable=False),
    )
    op.create_index("ix_note_roles_role_rank", "note_roles", ["role", "verdict_rank", "note_id"])
    op.create_table(
        "subscriptions",
        sa.Column("team_id", sa.String(32), primary_key=True),
        sa.Column("user_id", sa.String(32), primary_key=True),
        sa.Column("role", sa.String(64), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_FTS if dialect == "sqlite" else POSTGRES_FTS:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS notes_fts")
    op.drop_table("subscriptions")
    op.drop_table("note_roles")
    op.drop_table("notes")
