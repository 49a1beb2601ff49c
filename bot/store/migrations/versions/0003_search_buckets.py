"""Search that stops early: verdict tokens in the index, a title index, newest-first indexes.

Ranking by (title match, verdict, newest) lets SQLite read the FTS5 index in rowid order
and stop after a page instead of scoring every match, so positions are not needed
(detail='none' keeps the index small and ingestion fast); a title-only FTS5 table
answers the title tier from short doclists; a one-character prefix index serves
single-character CJK queries (量 finds 量化).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

OLD_SQLITE = [
    "DROP TRIGGER IF EXISTS notes_fts_insert",
    "DROP TRIGGER IF EXISTS notes_fts_delete",
    "DROP TRIGGER IF EXISTS notes_fts_update",
    "DROP TABLE IF EXISTS notes_fts",
]
NEW_SQLITE = [
    "CREATE VIRTUAL TABLE notes_fts USING fts5(search_body, content='notes', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0', detail='none', prefix='1')",
    "CREATE VIRTUAL TABLE notes_title_fts USING fts5(search_title, content='notes', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0', detail='none', prefix='1')",
    # New rows are indexed by the store in bulk (Store._save): a per-row insert trigger
    # doubled the cost of ingestion. Deletes and updates stay with triggers.
    "CREATE TRIGGER notes_fts_delete AFTER DELETE ON notes BEGIN "
    "INSERT INTO notes_fts(notes_fts, rowid, search_body) "
    "VALUES ('delete', old.id, old.search_body); "
    "INSERT INTO notes_title_fts(notes_title_fts, rowid, search_title) "
    "VALUES ('delete', old.id, old.search_title); END",
    "CREATE TRIGGER notes_fts_update AFTER UPDATE OF search_title, search_body ON notes BEGIN "
    "INSERT INTO notes_fts(notes_fts, rowid, search_body) "
    "VALUES ('delete', old.id, old.search_body); "
    "INSERT INTO notes_title_fts(notes_title_fts, rowid, search_title) "
    "VALUES ('delete', old.id, old.search_title); "
    "INSERT INTO notes_fts(rowid, search_body) VALUES (new.id, new.search_body); "
    "INSERT INTO notes_title_fts(rowid, search_title) VALUES (new.id, new.search_title); END",
    # Merge segments less eagerly while writing: bulk ingestion is the hot path.
    "INSERT INTO notes_fts(notes_fts, rank) VALUES ('automerge', 8)",
    "INSERT INTO notes_fts(notes_fts) VALUES ('rebuild')",
    "INSERT INTO notes_title_fts(notes_title_fts) VALUES ('rebuild')",
]
# The body index also carries the title's tokens and a verdict token (see bot.notes.search).
SEARCH_BODY = (
    "UPDATE notes SET search_body = search_title || ' ' || search_body || ' 0prdv' || verdict_rank"
)


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.drop_index("ix_note_roles_role_rank", table_name="note_roles")
    op.execute(
        "CREATE INDEX ix_note_roles_role_rank ON note_roles (role, verdict_rank, note_id DESC)"
    )
    for statement in OLD_SQLITE if sqlite else []:
        op.execute(statement)
    op.execute(SEARCH_BODY)
    for statement in NEW_SQLITE if sqlite else []:
        op.execute(statement)


def downgrade() -> None:
    raise NotImplementedError("0003 is not reversible; restore a backup taken before upgrading")
