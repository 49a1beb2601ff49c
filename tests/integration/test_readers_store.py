"""Readers' preferences in the store: verdict filters, watches, pauses (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from bot.domain import Pause, Reader, RoleSubscription, Verdict
from bot.notes.search import text_query
from bot.services import Services, ingest_paths
from bot.store import Store
from bot.store.readers import MAX_WATCHES, WatchOutcome
from tests.support.notefiles import seed_files

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_levels_are_kept_and_changed(store: Store) -> None:
    readers = store.readers
    assert store.subscribe("T1", "U1", ["moe-quant"], Verdict.DEEP) == ["moe-quant"]
    assert store.subscribe("T1", "U1", ["moe-quant", "kv-cache"]) == ["kv-cache"]
    assert readers.role_subscriptions("T1", "U1") == [
        RoleSubscription("moe-quant", Verdict.DEEP),
        RoleSubscription("kv-cache", None),
    ]
    assert readers.set_level("T1", "U1", ["moe-quant", "kv-cache"], Verdict.SKIM) == [
        "moe-quant",
        "kv-cache",
    ]
    assert readers.set_level("T1", "U1", ["kv-cache"], Verdict.SKIM) == []
    assert store.subscriptions_of("T1", "U1") == ["moe-quant", "kv-cache"]


def test_watches_are_unique_per_reader_and_capped(store: Store) -> None:
    readers = store.readers
    assert readers.watch("T1", "U1", "fp8 marlin") is WatchOutcome.ADDED
    assert readers.watch("T1", "U1", "FP8  Marlin") is WatchOutcome.EXISTS
    assert readers.watch("T1", "U2", "fp8 marlin") is WatchOutcome.ADDED
    for n in range(MAX_WATCHES - 1):
        assert readers.watch("T1", "U1", f"topic {n}") is WatchOutcome.ADDED
    assert readers.watch("T1", "U1", "one too many") is WatchOutcome.FULL
    assert readers.unwatch("T1", "U1", "Fp8 MARLIN") == ["fp8 marlin"]
    assert readers.unwatch("T1", "U1", "fp8 marlin") == []
    assert len(readers.unwatch("T1", "U1", None)) == MAX_WATCHES - 1
    assert readers.watches_of("T1", "U1") == []
    assert readers.watches_of("T1", "U2") == ["fp8 marlin"]


def test_pause_resume_and_all_readers(store: Store) -> None:
    readers = store.readers
    store.subscribe("T1", "U1", ["kernels"], Verdict.DEEP)
    readers.watch("T1", "U2", "cuda graph")
    readers.pause("T1", "U1", T0, T0 + timedelta(days=14))
    assert readers.pause_of("T1", "U1") == Pause(T0, T0 + timedelta(days=14))
    assert readers.resume("T1", "U1", T0 + timedelta(days=15)) is None, "already over"
    ended = readers.resume("T1", "U1", T0 + timedelta(days=2))
    assert ended == Pause(T0, T0 + timedelta(days=2))
    assert readers.pause_of("T1", "U1") == ended
    assert readers.resume("T1", "U1", T0 + timedelta(days=3)) is None
    assert readers.all_readers() == [
        Reader("T1", "U1", (RoleSubscription("kernels", Verdict.DEEP),), (), ended),
        Reader("T1", "U2", (), ("cuda graph",), None),
    ]


def test_matching_limits_a_search_to_given_notes(services: Services) -> None:
    ingest_paths(services, seed_files())
    store = services.store
    ids = [n.id for n in store.list_notes()]
    hits = store.matching(text_query("fp8"), ids)
    assert hits
    assert hits == {n.id for n in store.search(text_query("fp8"), limit=100).notes}
    half = ids[: len(ids) // 2]
    assert store.matching(text_query("fp8"), half) == hits & set(half)
    assert store.matching(text_query("zzqqxx"), ids) == set()
    # The same notes as a lookup finds (whole words, prefixes, CJK bigrams, one character).
    for words in ("quant", "量", "视频", "cuda graph", "kv offload", "nvfp4 marlin"):
        query = text_query(words)
        looked_up = {n.id for n in store.search(query, limit=100).notes}
        assert store.matching(query, ids) == looked_up, words
    assert store.matching(text_query("quant"), ids), "a prefix when no whole word matches"


def test_upgrade_from_0003_keeps_subscriptions_unfiltered(empty_db_url: str) -> None:
    """An existing database (schema 0003) keeps its subscribers: every note, as before."""
    from alembic import command
    from alembic.config import Config

    from bot.store.engine import MIGRATIONS, create_db_engine, migrate

    engine = create_db_engine(empty_db_url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0003")
        assert "watches" not in sa.inspect(conn).get_table_names()
        conn.execute(
            sa.text(
                "INSERT INTO subscriptions (team_id, user_id, role, created_at) "
                "VALUES ('T1', 'U1', 'kernels', :at)"
            ),
            {"at": T0},
        )
    migrate(engine)
    engine.dispose()
    store = Store.open(empty_db_url)
    try:
        assert store.readers.all_readers() == [
            Reader("T1", "U1", (RoleSubscription("kernels", None),))
        ]
        assert store.readers.watch("T1", "U1", "fp8") is WatchOutcome.ADDED
    finally:
        store.close()
