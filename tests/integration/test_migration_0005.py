"""Upgrading a store that already posted digests: 0005 learns which message holds each note."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from bot.store import Store
from bot.store.engine import MIGRATIONS, create_db_engine
from bot.store.ledger import Ledger

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def test_upgrade_records_the_message_of_every_posted_note(empty_db_url: str) -> None:
    engine = create_db_engine(empty_db_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0004")
    with engine.begin() as conn:
        meta = sa.MetaData()
        notes, runs, run_notes, messages = (
            sa.Table(name, meta, autoload_with=conn)
            for name in ("notes", "digest_runs", "digest_run_notes", "delivered_messages")
        )
        for note_id in (1, 2):
            conn.execute(
                notes.insert().values(
                    id=note_id,
                    key=f"k{note_id}",
                    repo="vllm-project/vllm",
                    title=f"note {note_id}",
                    paragraph="值得精读。",
                    content_hash=f"hash{note_id}",
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
        conn.execute(
            runs.insert().values(
                id=1,
                run_key="r1",
                channel="C1",
                week="2026-W48",
                addition=False,
                status="done",
                attempts=1,
                dm_planned=True,
                note_count=2,
                created_at=T0,
            )
        )
        for part, ids in (("role:kernels:1", [1]), ("role:kernels:2", [2])):
            blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "heading"}}]
            blocks += [{"type": "section", "block_id": f"note-{i}"} for i in ids]
            conn.execute(
                messages.insert().values(
                    run_id=1,
                    part=part,
                    seq=int(part[-1]),
                    kind="thread",
                    channel="C1",
                    payload={"text": "t", "blocks": blocks},
                    ts=f"1700000000.00000{part[-1]}",
                )
            )
        for note_id in (1, 2):
            conn.execute(
                run_notes.insert().values(run_id=1, note_id=note_id, channel="C1", role="kernels")
            )
    engine.dispose()

    store = Store.open(empty_db_url)
    try:
        with store.engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT note_id, part, shown_hash, shown_fix, revised FROM digest_run_notes "
                    "ORDER BY note_id"
                )
            ).all()
        assert [(r[0], r[1], r[2], r[3], bool(r[4])) for r in rows] == [
            (1, "role:kernels:1", "hash1", 0, False),
            (2, "role:kernels:2", "hash2", 0, False),
        ]
        assert Ledger(store.engine).stale_messages("C1") == [], "nothing changed since posting"
        with store.engine.begin() as conn:
            conn.execute(sa.text("UPDATE notes SET content_hash = 'new' WHERE id = 2"))
        [stale] = Ledger(store.engine).stale_messages("C1")
        assert (stale.part, stale.revised, stale.role_parts) == ("role:kernels:2", {2}, 2)
        assert json.dumps(stale.payload).count("note-") == 1
    finally:
        store.close()
