"""Block Kit messages of the weekly digest: limits, order, splitting, labels (no Slack)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.domain import Confidence, Note, Verdict
from bot.i18n.texts import Language, texts_for
from bot.notes.digest import build_digest
from bot.render.blocks import SUBSCRIBE_ACTION_ID
from bot.render.digest_blocks import (
    DmSection,
    digest_title,
    dm_messages,
    message_text,
    parent_message,
    role_messages,
)
from tests.support.fakeslack import validate_blocks

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
TAXONOMY: Taxonomy = load_taxonomy(None)

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


def make_note(
    i: int,
    verdict: Verdict = Verdict.DEEP,
    roles: tuple[str, ...] = ("moe-quant",),
    title_len: int = 40,
    excerpt_len: int = 60,
) -> Note:
    return Note(
        id=i,
        repo="vllm-project/vllm",
        title=f"Note {i} " + "标" * title_len,
        paragraph="…",
        pr=1000 + i,
        pr_url=f"https://github.com/vllm-project/vllm/pull/{1000 + i}",
        roles=roles,
        primary_role=roles[0],
        verdict=verdict,
        role_verdicts={},
        excerpt="为" * excerpt_len,
        source="a.txt:1",
        ingested_at=T0 + timedelta(minutes=i),
        updated_at=T0,
    )


def ids_in(blocks: list[dict[str, object]]) -> list[int]:
    return [
        int(str(b["block_id"]).removeprefix("note-"))
        for b in blocks
        if str(b.get("block_id", "")).startswith("note-")
    ]


def test_title_and_addition_label() -> None:
    assert digest_title("2026-W48", False, BOTH) == "vLLM 精读推荐 · 2026-W48"
    assert digest_title("2026-W48", True, BOTH) == "vLLM 精读推荐 · 2026-W48 · 补充 / addition"


def test_parent_has_counts_per_role_and_top_deep_reads() -> None:
    notes = [
        make_note(1, Verdict.DEEP, ("moe-quant",)),
        make_note(2, Verdict.SKIM, ("moe-quant", "kernels")),
        make_note(3, Verdict.SKIP, ("kernels",)),
    ]
    digest = build_digest(notes, TAXONOMY, "2026-W48")
    message = parent_message(digest, BOTH)
    assert validate_blocks(message["blocks"]) == []
    text = message_text(message)
    assert "vLLM 精读推荐 · 2026-W48" in text
    moe = TAXONOMY.get("moe-quant").label.replace("&", "&amp;")
    assert f"*{moe}*: 2  (精读 deep 1 · 浏览 skim 1)" in text
    assert "Top deep reads" in text and "Note 1" in text and "Note 2" not in text.split("Top")[1]


def test_empty_digest_says_so() -> None:
    message = parent_message(build_digest([], TAXONOMY, "2026-W48"), BOTH)
    assert "No new notes" in message_text(message)


def test_role_thread_order_other_roles_and_subscribe_button() -> None:
    notes = [
        make_note(1, Verdict.SKIP),
        make_note(2, Verdict.DEEP, ("moe-quant", "kernels")),
        make_note(3, Verdict.SKIM),
    ]
    digest = build_digest(notes, TAXONOMY, "2026-W48")
    [section] = digest.sections
    [message] = role_messages(section, digest, TAXONOMY, BOTH)
    assert validate_blocks(message["blocks"]) == []
    assert ids_in(message["blocks"]) == [2, 3, 1]
    assert TAXONOMY.get("kernels").name_zh in str(message["blocks"]), "other roles shown"
    button = message["blocks"][-1]["elements"][0]
    assert (button["action_id"], button["value"]) == (SUBSCRIBE_ACTION_ID, "moe-quant")


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(list(Verdict)),
            st.integers(min_value=1, max_value=300),
            st.integers(min_value=0, max_value=400),
        ),
        min_size=1,
        max_size=120,
    )
)
def test_role_threads_split_within_limits_and_keep_every_note(
    specs: list[tuple[Verdict, int, int]],
) -> None:
    notes = [make_note(i, v, title_len=t, excerpt_len=e) for i, (v, t, e) in enumerate(specs)]
    digest = build_digest(notes, TAXONOMY, "2026-W48", addition=True)
    [section] = digest.sections
    messages = role_messages(section, digest, TAXONOMY, BOTH)
    seen: list[int] = []
    for message in messages:
        assert validate_blocks(message["blocks"]) == []
        assert "补充" in message["blocks"][0]["text"]["text"]
        seen.extend(ids_in(message["blocks"]))
    assert sorted(seen) == sorted(n.id for n in notes) and len(seen) == len(set(seen))
    assert messages[-1]["blocks"][-1]["type"] == "actions"
    assert all(m["blocks"][-1]["type"] != "actions" for m in messages[:-1])


def test_dm_messages_split_and_link_the_thread() -> None:
    notes = tuple(make_note(i, title_len=200, excerpt_len=380) for i in range(80))
    section = DmSection(TAXONOMY.get("moe-quant"), notes, "https://test.slack.com/archives/C1/p1")
    messages = dm_messages("2026-W48", False, [section], TAXONOMY, BOTH)
    assert len(messages) > 1
    seen = [i for m in messages for i in ids_in(m["blocks"])]
    assert sorted(seen) == list(range(80))
    for message in messages:
        assert validate_blocks(message["blocks"]) == []
    assert "https://test.slack.com/archives/C1/p1" in str(messages[0]["blocks"])


def test_low_confidence_verdict_is_marked() -> None:
    unsure = replace(make_note(1, Verdict.SKIM), verdict_confidence=Confidence.LOW)
    digest = build_digest([unsure, make_note(2, Verdict.DEEP)], TAXONOMY, "2026-W48")
    [message] = role_messages(digest.sections[0], digest, TAXONOMY, BOTH)
    assert validate_blocks(message["blocks"]) == []
    texts = {
        b["block_id"]: str(b["text"]["text"])  # type: ignore[index]
        for b in message["blocks"]
        if str(b.get("block_id", "")).startswith("note-")
    }
    assert "(low confidence)" in texts["note-1"]
    assert "(low confidence)" not in texts["note-2"]
