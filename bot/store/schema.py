"""Table definitions (SQLAlchemy Core). Migrations in `migrations/` create them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

metadata = sa.MetaData()


class UtcDateTime(sa.TypeDecorator[datetime]):
    """An instant, stored as UTC and read back aware (in UTC) on every database.

    SQLite keeps a datetime as text without its offset: an aware value in another zone
    would be stored as its wall-clock time and read back hours off. A naive value has no
    instant to store, so it is refused.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"a stored time needs its zone: {value.isoformat()}")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


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
    sa.Column("ingested_at", UtcDateTime(), nullable=False, index=True),
    sa.Column("updated_at", UtcDateTime(), nullable=False),
    sa.Column("search_title", sa.Text, nullable=False),
    sa.Column("search_body", sa.Text, nullable=False),
    # migration 0006
    sa.Column("verdict_confidence", sa.String(8), nullable=False, server_default="high"),
    # migration 0008: "classifier" or "llm:<model>"
    sa.Column("read_by", sa.String(220), nullable=False, server_default="classifier"),
)

note_roles = sa.Table(
    "note_roles",
    metadata,
    sa.Column("note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("role", sa.String(64), primary_key=True),
    sa.Column("verdict_rank", sa.SmallInteger, nullable=False),
)

subscriptions = sa.Table(
    "subscriptions",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), primary_key=True),
    sa.Column("role", sa.String(64), primary_key=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    # Migration 0004. NULL: every verdict; "skim": deep and skim; "deep": deep only.
    sa.Column("min_verdict", sa.String(8), nullable=True),
)

# -- readers' saved searches and pauses (migration 0004) --------------------------------

watches = sa.Table(
    "watches",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("team_id", sa.String(32), nullable=False),
    sa.Column("user_id", sa.String(32), nullable=False),
    sa.Column("query_key", sa.String(200), nullable=False),  # case-folded, for uniqueness
    sa.Column("query", sa.Text, nullable=False),  # as the reader typed it (cleaned)
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.UniqueConstraint("team_id", "user_id", "query_key", name="uq_watches_user_query"),
)

pauses = sa.Table(
    "pauses",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), primary_key=True),
    sa.Column("started_at", UtcDateTime(), nullable=False),
    # The end of the pause (set to the moment of `resume` when ended early). The row stays
    # afterwards: the first digest after `until` sends what the reader missed.
    sa.Column("until", UtcDateTime(), nullable=False),
)

# -- readers' own settings and Slack profiles (migration 0009) ---------------------------

reader_settings = sa.Table(
    "reader_settings",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), primary_key=True),
    sa.Column("budget", sa.SmallInteger, nullable=True),  # NULL: PRDIGEST_DM_BUDGET; 0: all
    sa.Column("dm_weekday", sa.SmallInteger, nullable=True),  # 0 Monday; NULL: the schedule's
    sa.Column("dm_time", sa.String(5), nullable=True),  # "HH:MM" in the reader's zone
    sa.Column("dm_off", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("language", sa.String(8), nullable=True),  # "zh", "en"; NULL: Slack's locale
    sa.Column("updated_at", UtcDateTime(), nullable=False),
)

reader_profiles = sa.Table(
    "reader_profiles",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), primary_key=True),
    sa.Column("tz", sa.String(64), nullable=True),  # IANA name from users.info
    sa.Column("locale", sa.String(16), nullable=True),  # e.g. "zh-CN", "en-US"
    sa.Column("fetched_at", UtcDateTime(), nullable=False),
)

# -- corrections (migration 0005) ----------------------------------------------------

note_fixes = sa.Table(
    "note_fixes",
    metadata,
    sa.Column("note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("roles", sa.JSON, nullable=False),
    sa.Column("primary_role", sa.String(64), nullable=False),
    sa.Column("verdict", sa.String(8), nullable=True),  # NULL: the classifier's verdict stays
    sa.Column("revision", sa.Integer, nullable=False),
    sa.Column("fixed_by", sa.String(64), nullable=False),
    sa.Column("fixed_at", UtcDateTime(), nullable=False),
)

# -- readings by a model server (migration 0008) -------------------------------------------

llm_readings = sa.Table(
    "llm_readings",
    metadata,
    # sha256 of title, paragraph, model and prompt version: an unchanged note is not sent again
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("reading", sa.JSON, nullable=False),  # the validated answer
    sa.Column("read_at", sa.DateTime(timezone=True), nullable=False),
)

store_meta = sa.Table(
    "store_meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# -- weekly digest delivery ledger (migration 0002) ------------------------------------

digest_runs = sa.Table(
    "digest_runs",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("run_key", sa.String(32), nullable=False, unique=True),
    sa.Column("channel", sa.String(32), nullable=False),
    sa.Column("week", sa.String(10), nullable=False),
    sa.Column("slot", sa.String(40), nullable=True),
    sa.Column("addition", sa.Boolean, nullable=False),
    sa.Column("status", sa.String(10), nullable=False),
    # Equals `channel` while the run is unfinished, NULL after: at most one open run per channel.
    sa.Column("open_channel", sa.String(32), nullable=True, unique=True),
    sa.Column("claimed_by", sa.String(200), nullable=True),
    sa.Column("claimed_at", UtcDateTime(), nullable=True),
    sa.Column("heartbeat", UtcDateTime(), nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("dm_planned", sa.Boolean, nullable=False),
    sa.Column("note_count", sa.Integer, nullable=False),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime(), nullable=True),
    sa.UniqueConstraint("channel", "slot", name="uq_digest_runs_channel_slot"),
    sa.Index("ix_digest_runs_channel_week", "channel", "week"),
)

digest_run_notes = sa.Table(
    "digest_run_notes",
    metadata,
    sa.Column(
        "run_id", BigId, sa.ForeignKey("digest_runs.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("channel", sa.String(32), nullable=False),
    sa.Column("role", sa.String(64), nullable=False),
    # Which message holds the note, and what the note looked like when it was posted
    # (migration 0005): a later revision or fix updates that message in place.
    sa.Column("part", sa.String(120), nullable=True),
    sa.Column("shown_hash", sa.String(32), nullable=True),
    sa.Column("shown_fix", sa.Integer, nullable=False, server_default="0"),
    sa.Column("revised", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.UniqueConstraint("channel", "note_id", name="uq_digest_run_notes_channel_note"),
)

delivered_messages = sa.Table(
    "delivered_messages",
    metadata,
    sa.Column(
        "run_id", BigId, sa.ForeignKey("digest_runs.id", ondelete="CASCADE"), primary_key=True
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
    sa.Column("posted_at", UtcDateTime(), nullable=True),
)

dm_deliveries = sa.Table(
    "dm_deliveries",
    metadata,
    sa.Column("team_id", sa.String(32), primary_key=True),
    sa.Column("user_id", sa.String(32), primary_key=True),
    sa.Column("note_id", BigId, sa.ForeignKey("notes.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("run_id", BigId, sa.ForeignKey("digest_runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("part", sa.String(120), nullable=False),
)

# -- each reader's own weekly DM (migration 0010) -----------------------------------------

reader_dm_runs = sa.Table(
    "reader_dm_runs",
    metadata,
    sa.Column("id", BigId, primary_key=True, autoincrement=True),
    sa.Column("run_key", sa.String(32), nullable=False, unique=True),
    sa.Column("team_id", sa.String(32), nullable=False),
    sa.Column("user_id", sa.String(32), nullable=False),
    # The reader's scheduled moment (UTC, ISO 8601), or "post:<key>" for `prdigest post`.
    sa.Column("slot", sa.String(60), nullable=False),
    sa.Column("due_at", UtcDateTime(), nullable=False, index=True),  # the moment it stands for
    sa.Column("status", sa.String(10), nullable=False),  # open, done, empty, off, paused
    # "team:user" while the DM is unfinished, NULL after: one open DM per reader.
    sa.Column("open_reader", sa.String(80), nullable=True, unique=True),
    sa.Column("claimed_by", sa.String(200), nullable=True),
    sa.Column("claimed_at", UtcDateTime(), nullable=True),
    sa.Column("heartbeat", UtcDateTime(), nullable=True),
    sa.Column("attempts", sa.Integer, nullable=False),
    # The newest finished channel run this DM covered: the next DM starts after it.
    sa.Column("upto_run", sa.BigInteger, nullable=True),
    sa.Column("week", sa.String(10), nullable=True),  # the week its title names
    sa.Column("note_count", sa.Integer, nullable=False),  # notes shown in full
    sa.Column("left_out", sa.JSON, nullable=True),  # [[note id, role or ""], ...] over budget
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Column("created_at", UtcDateTime(), nullable=False),
    sa.Column("finished_at", UtcDateTime(), nullable=True),
    sa.UniqueConstraint("team_id", "user_id", "slot", name="uq_reader_dm_runs_reader_slot"),
)

reader_dm_messages = sa.Table(
    "reader_dm_messages",
    metadata,
    sa.Column(
        "run_id", BigId, sa.ForeignKey("reader_dm_runs.id", ondelete="CASCADE"), primary_key=True
    ),
    sa.Column("part", sa.String(120), primary_key=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("channel", sa.String(32), nullable=False),  # the reader's user ID
    sa.Column("payload", sa.JSON, nullable=False),
    sa.Column("ts", sa.String(32), nullable=True),
    sa.Column("posted_channel", sa.String(32), nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("posted_at", UtcDateTime(), nullable=True),
)

sa.Index(
    "ix_note_roles_role_rank",
    note_roles.c.role,
    note_roles.c.verdict_rank,
    note_roles.c.note_id.desc(),
)
