"""Upgrading a store to 0008: its notes were read by the classifier, and it can keep
readings by a model server (and go back down)."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from bot.store import Store
from bot.store.engine import MIGRATIONS, create_db_engine

T0 = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_notes_stored_before_were_read_by_the_classifier(empty_db_url: str) -> None:
    engine = create_db_engine(empty_db_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0007")
    with engine.begin() as conn:
        notes = sa.Table("notes", sa.MetaData(), autoload_with=conn)
        conn.execute(
            notes.insert().values(
                id=1,
                key="k1",
                repo="vllm-project/vllm",
                title="note 1",
                paragraph="值得精读。",
                content_hash="hash1",
                roles=["kernels"],
                primary_role="kernels",
                verdict="deep",
                verdict_rank=0,
                role_verdicts={},
                excerpt="",
                source_file="a.txt",
                source_line=3,
                ingested_at=T0,
                updated_at=T0,
                search_title="note",
                search_body="note 0prdv0",
            )
        )
    engine.dispose()

    store = Store.open(empty_db_url)  # migrates to the head
    try:
        assert [n.read_by for n in store.list_notes()] == ["classifier"]
        reading = {"roles": ["kernels"], "verdict": "skim", "groups": {}, "others": None}
        store.save_readings([("a" * 64, "m", reading), ("a" * 64, "m", reading)])
        store.save_readings([("a" * 64, "m", {**reading, "verdict": "skip"})])
        assert store.cached_readings(["a" * 64, "b" * 64]) == {
            "a" * 64: {**reading, "verdict": "skip"}
        }
    finally:
        store.close()

    engine = create_db_engine(empty_db_url)
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0007")
        assert not sa.inspect(conn).has_table("llm_readings")
        assert "read_by" not in {c["name"] for c in sa.inspect(conn).get_columns("notes")}
    engine.dispose()
