"""Vocabulary from usage: every cue of the rule data fires on notes of at least two writers'
development sets, or is an entry of a standard dictionary marked as such (data/cues.toml,
[dictionary]). Computed from the data and the sets (tests/support/cue_usage.py); the
bench `python -m tests.bench.cue_usage` lists where each cue fires."""

from __future__ import annotations

import re

import pytest

from bot.classify.cues import IDIOMS, RULE_DATA, idiom_matches, scan
from bot.classify.text import normalise
from tests.labelled import DEV_SETS, load_set
from tests.support.cue_usage import (
    DICTIONARY,
    EARLY_SETS,
    MIN_WRITERS,
    Usage,
    alternatives,
    cue_usage,
    grammar_only,
    writer_of,
)


@pytest.fixture(scope="module")
def usage() -> Usage:
    return cue_usage()


def test_every_cue_fires_for_two_writers_or_is_a_dictionary_entry(usage: Usage) -> None:
    rare = [
        f"{c.table} {c.where}: {c.text!r} fires on {sorted(usage.sets[c]) or 'no set'}"
        for c in usage.rare()
    ]
    assert not rare, (
        f"cues on fewer than {MIN_WRITERS} writers' development sets (remove them, or mark an "
        "entry of a standard dictionary in [dictionary] of data/cues.toml):\n" + "\n".join(rare)
    )


def test_the_rule_data_is_read_whole(usage: Usage) -> None:
    """Every table of the rule data has cues, and every family and audience construction
    has alternatives the count finds: a table left out would pass unnoticed."""
    tables = {c.table for c in usage.sets}
    assert tables == {
        *("lexicon", "weak_skip", "side_cues", "families", "audiences", "hints", "grammar"),
        "roles",
    }
    assert all(usage.sets[c] for c in usage.sets if c.table == "lexicon" and c.text == "skim")
    fired = [c for c in usage.sets if c.table == "audiences" and len(usage.writers(c)) > 10]
    assert len(fired) > 20


def test_every_dictionary_entry_names_a_cue_of_its_table(usage: Usage) -> None:
    present = {(c.table, c.text) for c in usage.sets}
    stale = sorted(DICTIONARY - present)
    assert not stale, f"[dictionary] entries that name no cue of their table: {stale}"


def test_the_early_sets_count_as_one_writer() -> None:
    assert {writer_of(s) for s in EARLY_SETS} == {"early"}
    assert writer_of("dev12") != writer_of("dev13")


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        (r"ab|cd", ["ab", "cd"]),
        (r"x\s(?:ab|cd)\sy", [r"x\s(?:ab|cd)\sy", "ab", "cd"]),
        (r"(?:only|just)\s+note", [r"(?:only|just)\s+note", "only", "just"]),
        # the forms of one word are one cue
        (r"glanc(?:e|ed|ing)\b", [r"glanc(?:e|ed|ing)\b"]),
        (r"(?:any|every)one", ["(?:any|every)one"]),
        # a look-around's branches are conditions; a set's "|" is a character
        (r"读(?![写者])|看(?=[吧呢]|$)", ["读(?![写者])", "看(?=[吧呢]|$)"]),
        (r"a[|b]c", ["a[|b]c"]),
    ],
)
def test_alternatives_of_an_expression(regex: str, expected: list[str]) -> None:
    assert sorted(regex[s:e] for s, e in alternatives(regex)) == sorted(expected)
    assert re.compile(regex)


@pytest.mark.parametrize(
    ("text", "grammar"),
    [
        ("it", True),
        (r"do\s+not", True),
        ("(?:也|亦)", True),
        ("→", True),
        ("no-one", True),
        ("skim", False),
        (r"would\s+do\s+well\s+to", False),
        ("不会少块肉", False),
        (r"看(?=[吧呢])", False),
    ],
)
def test_function_words_alone_are_grammar(text: str, grammar: bool) -> None:
    assert grammar_only(text) is grammar


def test_every_match_of_a_family_is_found_near_its_anchors() -> None:
    """A family's pattern runs only near its anchors: in every development note, each match
    the pattern has over the whole text is one the anchored scan finds too. An alternative no
    anchor leads to, or an anchor hidden inside a longer phrase ("认真读" in "认真读透"), would
    be a cue the data holds and the classifier never reads."""
    missed: list[str] = []
    for name in DEV_SETS:
        for note in load_set(name):
            text = normalise(note.paragraph).lower()
            _phrases, near = scan(text)
            found = {(id(i), m.span()) for i, m in idiom_matches(text, near)}
            missed += [
                f"{name}: {idiom.family} {m.group()!r} (anchors {list(idiom.anchors)})"
                for idiom in IDIOMS
                for m in idiom.pattern.finditer(text)
                if (id(idiom), m.span()) not in found
            ]
    assert not missed, "matches no anchor leads to:\n" + "\n".join(missed[:20])


@pytest.mark.parametrize(
    ("text", "matched"),
    [
        ("多模态的同学应该认真读透。", "应该认真读透"),  # "认真读" is a phrase; "读透" an anchor
        ("其他组可以不必关心。", "不必关心"),  # the anchors "可以不" and "不必" overlap
        ("标题即全文，可以直接划过。", "直接划过"),
    ],
)
def test_an_anchor_inside_or_across_a_phrase_is_found(text: str, matched: str) -> None:
    lowered = normalise(text).lower()
    _phrases, near = scan(lowered)
    assert matched in {m.group() for _idiom, m in idiom_matches(lowered, near)}


def test_every_match_of_a_hint_holds_one_of_its_anchors() -> None:
    """A PR's state hint is searched only where one of its kind's anchors stands: a match
    that holds none ("[wip]" with no "wip" anchor) would be read only by chance."""
    missed: list[str] = []
    for name in DEV_SETS:
        for note in load_set(name):
            text = normalise(note.title).lower() + "\n" + normalise(note.paragraph).lower()
            for kind, table in RULE_DATA["hints"].items():
                missed += [
                    f"{name}: {kind} {m.group()!r}"
                    for alternative in table["alternatives"]
                    for m in re.finditer(alternative, text)
                    if not any(a in m.group() for a in table["anchors"])
                ]
    assert not missed, "hint matches that hold no anchor of their kind:\n" + "\n".join(missed)
