"""Table definitions (SQLAlchemy Core). Migrations in `migrations/` create them."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

notes = sa.Table(
    "notes",
    metadata,
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
    sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False, index=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("search_title", sa.Text, nullable=False),
    sa.Column("search_body", sa.Text, nullable=False),
)

note_roles = sa.Table(
    "note_roles",
    metadata,
    sa.Column(
        "note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("role", sa.String(64), primary_key=True),
    sa.Column("verdict_rank", sa.SmallInteger, nullable=False),
    sa.Index("ix_note_roles_role_rank", "role", "verdict_rank", "note_id"),
)

subscriptions = sa.Table(
    "subscriptions",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), primary_key=True),
    sa.Column("role", sa.String(64), primary_key=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
)
