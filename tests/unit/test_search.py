"""Query parsing and tokenisation (pure functions)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.classify.taxonomy import load_taxonomy
from bot.notes.search import (
    MAX_QUERY_CHARS,
    QueryError,
    index_text,
    match_ids,
    parse_query,
    text_query,
    tokenize,
)

TAXONOMY = load_taxonomy(None)


def test_cjk_bigrams_ascii_words_and_punctuation() -> None:
    assert tokenize("前缀缓存，FP8（量化）") == ["前缀", "缀缓", "缓存", "fp8", "量化"]
    assert tokenize("单") == ["单"]
    assert tokenize("mm_prefix-range v0.6.1") == ["mm", "prefix", "range", "v0", "6", "1"]


def test_cjk_runs_give_pairs_and_a_lone_character_stays_whole() -> None:
    assert tokenize("量化a缓存b存") == ["量化", "a", "缓存", "b", "存"]
    assert tokenize("ab量") == ["ab", "量"]
    assert tokenize("量化缓") == ["量化", "化缓"]


_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"


def _index_text_run_by_run(text: str) -> str:
    """The indexing rule written out plainly: runs of CJK or ASCII letters and digits; a CJK
    run longer than one character becomes its overlapping pairs."""
    out: list[str] = []
    for run in re.findall(rf"[{_CJK}]+|[a-z0-9]+", text.lower()):
        if len(run) > 1 and re.match(rf"[{_CJK}]", run):
            out.extend(run[i : i + 2] for i in range(len(run) - 1))
        else:
            out.append(run)
    return " ".join(out)


@given(st.text(alphabet="量化缓存 ab9A-，。\nカ한", max_size=40))
def test_index_text_follows_the_rule_run_by_run(text: str) -> None:
    assert index_text(text) == _index_text_run_by_run(text)


def test_compatibility_forms_fold_like_their_plain_forms() -> None:
    assert tokenize("ＦＰ８ ＭｏＥ") == tokenize("fp8 moe")
    assert tokenize("ｶﾞ") == tokenize("ガ")
    assert tokenize("①") == ["1"]


def test_a_role_word_selects_the_role_and_anything_else_is_text() -> None:
    assert parse_query("moe", TAXONOMY).role is not None
    assert parse_query("  MM ", TAXONOMY).role is not None
    query = parse_query("kv marlin", TAXONOMY)
    assert query.role is None
    assert [t.tokens for t in query.terms] == [("kv",), ("marlin",)]
    assert [t.prefix for t in query.terms] == [False, True]  # 3+ letters may be a prefix
    assert [t.tokens for t in text_query("缓存命中").terms] == [("缓存", "存命", "命中")]
    assert text_query("量").terms[0].prefix


def test_overlong_queries_are_refused() -> None:
    with pytest.raises(QueryError, match="limit"):
        parse_query("x" * (MAX_QUERY_CHARS + 1), TAXONOMY)
    assert parse_query("", TAXONOMY).is_empty


def test_a_note_has_every_word_or_not_whatever_the_other_notes() -> None:
    notes = {
        1: frozenset(tokenize("Marlin AWQ kernel")),
        2: frozenset(tokenize("MarlinMoE AWQ layout")),
        3: frozenset(tokenize("Marlin FP8 调度器")),
        4: frozenset(tokenize("请求调度优化")),
        5: frozenset(tokenize("kv mm")),
    }
    assert match_ids(text_query("marlin awq"), notes) == {1, 2}  # a longer word counts
    assert match_ids(text_query("marlin"), notes) == {1, 2, 3}
    assert match_ids(text_query("调度器"), notes) == {3}  # 调度 alone lacks 度器
    assert match_ids(text_query("调"), notes) == {3, 4}  # a lone CJK character: a prefix
    assert match_ids(text_query("k"), notes) == set()  # a short word only as a whole word
    assert match_ids(text_query("kv"), notes) == {5}
    # Asked about a few notes (a run's), each answers as it does among all of them.
    for query in ("marlin awq", "marlin", "调度器", "awq marlinmoe"):
        everywhere = match_ids(text_query(query), notes)
        assert match_ids(text_query(query), {2: notes[2], 3: notes[3]}) == everywhere & {2, 3}
