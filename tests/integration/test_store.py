"""The SQL store on SQLite and PostgreSQL: identity, updates, atomic files, search."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from bot.domain import Classification, Confidence, ParsedNote, Verdict
from bot.notes.search import text_query
from bot.store import FileResult, IndexedNote, Store, StoreError, index_note, prepare_note

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)


def parsed(
    title: str, paragraph: str = "值得精读。", line: int = 3, pr: int | None = None
) -> ParsedNote:
    return ParsedNote(
        repo="vllm-project/vllm",
        title=title,
        paragraph=paragraph,
        pr=pr,
        pr_url=None if pr is None else f"https://github.com/vllm-project/vllm/pull/{pr}",
        source_file="digests/a.txt",
        line=line,
    )


def labelled(
    roles: tuple[str, ...] = ("kernels",),
    verdict: Verdict = Verdict.DEEP,
    role_verdicts: dict[str, Verdict] | None = None,
) -> Classification:
    return Classification(
        roles=roles,
        primary_role=roles[0],
        verdict=verdict,
        role_verdicts=role_verdicts or {},
        excerpt="for kernel authors",
    )


def save(
    store: Store,
    items: list[tuple[ParsedNote, Classification]],
    now: datetime | None = None,
) -> FileResult:
    labels = dict(items)
    return store.save_file(
        [note for note, _ in items], lambda note: index_note(note, labels[note]), now=now
    )


def test_reingest_is_a_no_op_and_a_changed_paragraph_updates_in_place(store: Store) -> None:
    first = save(store, [(parsed("A"), labelled()), (parsed("B"), labelled())], now=T0)
    assert (first.new, first.updated, first.unchanged) == (2, 0, 0)
    again = save(store, [(parsed("A"), labelled()), (parsed("B"), labelled())], now=T0)
    assert (again.new, again.updated, again.unchanged) == (0, 0, 2)
    before = {n.title: n for n in store.list_notes()}

    later = T0 + timedelta(days=1)
    revised = save(
        store,
        [(parsed(" a ", "已修订，快速浏览即可。"), labelled(verdict=Verdict.SKIM))],
        now=later,
    )
    assert (revised.new, revised.updated) == (0, 1)
    after = {n.id: n for n in store.list_notes()}
    note = after[before["A"].id]
    assert note.paragraph == "已修订，快速浏览即可。" and note.verdict is Verdict.SKIM
    assert note.ingested_at == before["A"].ingested_at == T0
    assert note.updated_at == later
    assert len(after) == 2, "ingestion never deletes, and a revision is not a new note"


def test_prepared_notes_of_several_files_read_back_as_classified(store: Store) -> None:
    """Bulk ingestion hands the store notes prepared in worker processes: each reads back
    with its classification, its id, its role rows and its full-text entries."""
    split = {"release-infra": Verdict.SKIP}
    label = replace(
        labelled(("kernels", "release-infra"), Verdict.DEEP, split),
        verdict_confidence=Confidence.LOW,
        read_by="llm:test",
    )
    store.save_file([parsed("Earlier")], lambda note: index_note(note, labelled()), now=T0)
    first = [prepare_note(parsed("量化 kernel", pr=7), index_note(parsed("量化 kernel"), label))]
    second_note = replace(parsed("Other file", "缓存布局"), source_file="digests/b.txt")
    second = [prepare_note(second_note, index_note(second_note, labelled(("release-infra",))))]
    again = [prepare_note(parsed("量化 kernel", pr=7))]  # the same note again: unchanged

    def unprepared(note: ParsedNote) -> IndexedNote:
        raise AssertionError(f"{note.title} should come prepared")

    results = store.save_files([first, second, again], unprepared, now=T0 + timedelta(1))
    assert [(r.new, r.unchanged) for r in results] == [(1, 0), (1, 0), (0, 1)]
    notes = {n.title: n for n in store.list_notes()}
    note = notes["量化 kernel"]
    assert note.id == notes["Earlier"].id + 1 and notes["Other file"].id == note.id + 1
    assert note.roles == ("kernels", "release-infra") and note.primary_role == "kernels"
    assert note.role_verdicts == split and note.verdict is Verdict.DEEP
    assert (note.verdict_confidence, note.read_by) == (Confidence.LOW, "llm:test")
    assert note.pr == 7 and note.ingested_at == note.updated_at == T0 + timedelta(1)
    assert note.source == "digests/a.txt:3"
    assert [n.title for n in store.role_notes("release-infra", limit=10).notes] == [
        "Other file",
        "量化 kernel",  # skip for release-infra readers: after the deep read
    ]
    assert _search(store, "量化") == ["量化 kernel"]
    assert _search(store, "缓存") == ["Other file"]
    assert _search(store, "kern") == ["量化 kernel"]


def test_duplicate_titles_inside_one_file_keep_the_first(store: Store) -> None:
    result = save(store, [(parsed("Same"), labelled()), (parsed("SAME", "other"), labelled())])
    assert (result.new, result.unchanged) == (1, 1)
    assert [n.paragraph for n in store.list_notes()] == ["值得精读。"]


def test_a_file_lands_all_or_nothing(store: Store) -> None:
    broken = labelled(roles=("kernels", "kernels"))  # violates the note_roles primary key
    with pytest.raises(sa.exc.IntegrityError):
        save(store, [(parsed("ok"), labelled()), (parsed("bad"), broken)])
    assert store.count_notes() == 0
    assert store.role_notes("kernels", limit=10).total == 0


def test_role_notes_order_by_that_roles_verdict_then_newest(store: Store) -> None:
    split = {"release-infra": Verdict.DEEP, "kernels": Verdict.SKIP}
    save(store, [(parsed("old deep"), labelled(("kernels",), Verdict.DEEP))], now=T0)
    save(store, [(parsed("skim"), labelled(("kernels",), Verdict.SKIM))], now=T0 + timedelta(1))
    save(
        store,
        [(parsed("infra split"), labelled(("release-infra", "kernels"), Verdict.DEEP, split))],
        now=T0 + timedelta(2),
    )
    save(store, [(parsed("new deep"), labelled(("kernels",), Verdict.DEEP))], now=T0 + timedelta(3))
    page = store.role_notes("kernels", limit=10)
    assert [n.title for n in page.notes] == ["new deep", "old deep", "skim", "infra split"]
    assert page.total == 4
    assert [n.title for n in store.role_notes("release-infra", limit=10).notes] == ["infra split"]
    assert [n.title for n in store.role_notes("kernels", limit=2, offset=2).notes] == [
        "skim",
        "infra split",
    ]


def _search(store: Store, text: str) -> list[str]:
    return [n.title for n in store.search(text_query(text), limit=20).notes]


def test_search_matches_two_character_cjk_words_and_ascii_any_case(store: Store) -> None:
    save(
        store,
        [
            (parsed("新增 FP8 量化内核"), labelled()),
            (parsed("前缀缓存命中率提升", "KV 缓存复用"), labelled()),
            (parsed("视频输入支持", "多模态 video 处理器"), labelled()),
            (parsed("Marlin MoE kernel", "Faster fp8 Marlin path for experts"), labelled()),
            (parsed("Quantization config cleanup"), labelled()),
        ],
    )
    assert _search(store, "量化") == ["新增 FP8 量化内核"]
    assert _search(store, "缓存") == ["前缀缓存命中率提升"]
    assert _search(store, "视频") == ["视频输入支持"]
    assert _search(store, "VIDEO") == ["视频输入支持"]
    assert set(_search(store, "fp8")) == {"新增 FP8 量化内核", "Marlin MoE kernel"}
    assert _search(store, "fp8 marlin") == ["Marlin MoE kernel"]
    assert _search(store, "quant") == ["Quantization config cleanup"], "prefix match"
    assert _search(store, "量") == ["新增 FP8 量化内核"], "a lone CJK character is a prefix"
    assert _search(store, "缓存命中") == ["前缀缓存命中率提升"]
    assert _search(store, "存命缓") == [], "bigrams must be consecutive"
    assert _search(store, "zzzz") == []
    # No note has both words: fall back to notes with either.
    assert set(_search(store, "视频 marlin")) == {"视频输入支持", "Marlin MoE kernel"}


def test_search_ranks_title_hits_then_verdict_then_newest(store: Store) -> None:
    body = "A note that mentions scheduler once."
    save(
        store,
        [(parsed("Scheduler rewrite", "Unrelated words."), labelled(verdict=Verdict.SKIP))],
        now=T0,
    )
    save(store, [(parsed("skim one", body), labelled(verdict=Verdict.SKIM))], now=T0)
    save(store, [(parsed("deep old", body), labelled(verdict=Verdict.DEEP))], now=T0)
    save(store, [(parsed("deep new", body), labelled(verdict=Verdict.DEEP))], now=T0 + timedelta(1))
    assert _search(store, "scheduler") == ["Scheduler rewrite", "deep new", "deep old", "skim one"]


def test_subscriptions_are_idempotent_per_team_and_user(store: Store) -> None:
    assert store.subscribe("T1", "U1", ["moe-quant", "kv-cache", "moe-quant"]) == [
        "moe-quant",
        "kv-cache",
    ]
    assert store.subscribe("T1", "U1", ["moe-quant"]) == []
    assert store.subscribe("T2", "U1", ["hardware"]) == ["hardware"]
    assert store.subscriptions_of("T1", "U1") == ["moe-quant", "kv-cache"]
    assert store.unsubscribe("T1", "U1", ["kv-cache", "models"]) == ["kv-cache"]
    assert store.all_subscriptions() == {("T1", "U1"): ["moe-quant"], ("T2", "U1"): ["hardware"]}
    assert store.unsubscribe("T2", "U1", None) == ["hardware"]
    assert store.subscriptions_of("T2", "U1") == []


def test_notes_keep_pr_source_and_json_fields(store: Store) -> None:
    save(
        store,
        [(replace(parsed("With PR", pr=42), line=7), labelled(("moe-quant", "kernels")))],
        now=T0,
    )
    (note,) = store.list_notes(role="kernels")
    data = note.as_json()
    assert data["pr"] == 42 and data["source"] == "digests/a.txt:7"
    assert data["roles"] == ["moe-quant", "kernels"] and data["primary_role"] == "moe-quant"
    assert store.list_notes(since=T0 + timedelta(seconds=1)) == []


def test_unreachable_database_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match=r"unavailable .*refused.*PRDIGEST_DATABASE_URL"):
        Store.open("postgresql+psycopg://postgres@127.0.0.1:1/nowhere")


def test_migration_is_applied_once_and_reopen_is_cheap(db_url: str) -> None:
    first = Store.open(db_url)
    save(first, [(parsed("kept"), labelled())])
    first.close()
    second = Store.open(db_url)
    assert [n.title for n in second.list_notes()] == ["kept"]
    with second.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar_one() == 1
    second.close()


def test_schema_head_constant_matches_the_migrations() -> None:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from bot.store.engine import MIGRATIONS, SCHEMA_HEAD

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_current_head() == SCHEMA_HEAD


def test_verdict_confidence_is_stored(store: Store) -> None:
    unsure = replace(labelled(verdict=Verdict.SKIM), verdict_confidence=Confidence.LOW)
    save(store, [(parsed("A"), unsure), (parsed("B"), labelled())])
    got = {n.title: n.verdict_confidence for n in store.list_notes()}
    assert got == {"A": Confidence.LOW, "B": Confidence.HIGH}
    save(store, [(parsed("A", "值得精读，已修订。"), labelled())])
    (revised,) = [n for n in store.list_notes() if n.title == "A"]
    assert revised.verdict_confidence is Confidence.HIGH
