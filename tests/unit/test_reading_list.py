"""Which notes a reader's DM holds: filters, primary role, watch dedupe, the away cap."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.classify.taxonomy import load_taxonomy
from bot.domain import Confidence, Note, Pause, Reader, RoleSubscription, Verdict
from bot.readers.reading_list import (
    AWAY_MAX_NOTES,
    ReadingSection,
    reader_rank,
    select_reading,
    within_budget,
)
from tests.support.notes import note

TAXONOMY = load_taxonomy(None)
T0 = datetime(2026, 11, 23, tzinfo=UTC)


def test_filters_pick_the_role_that_lets_a_note_through() -> None:
    # note(): kernels (primary, deep) and moe-quant (skim).
    notes = [note(1), replace(note(2), verdict=Verdict.SKIP, role_verdicts={})]
    reader = Reader(
        "T", "U", (RoleSubscription("kernels", Verdict.DEEP), RoleSubscription("moe-quant"))
    )
    sections = select_reading(reader, notes, set(), TAXONOMY, {})
    assert [(s.role, [n.id for n in s.notes]) for s in sections] == [
        ("moe-quant", [2]),
        ("kernels", [1]),
    ]
    strict = Reader("T", "U", (RoleSubscription("moe-quant", Verdict.DEEP),))
    assert select_reading(strict, notes, set(), TAXONOMY, {}) == []


def test_watches_take_only_what_roles_did_not_and_never_repeat() -> None:
    notes = [replace(note(i), roles=("kernels",), role_verdicts={}) for i in range(1, 6)]
    reader = Reader("T", "U", (RoleSubscription("moe-quant"),), ("a", "b"))
    hits = {"a": {1, 2, 3}, "b": {2, 3, 4}}
    sections = select_reading(reader, notes, {1}, TAXONOMY, hits)
    assert [(s.kind, s.query, [n.id for n in s.notes]) for s in sections] == [
        ("watch", "a", [3, 2]),
        ("watch", "b", [4]),
    ]


def test_away_section_is_capped_and_skips_what_was_sent() -> None:
    missed = [replace(note(i), ingested_at=T0 + timedelta(hours=i)) for i in range(40)]
    reader = Reader("T", "U", (RoleSubscription("kernels"),), (), Pause(T0, T0 + timedelta(7)))
    sections = select_reading(reader, [note(100)], {0, 1}, TAXONOMY, {}, missed)
    away = sections[-1]
    assert away.kind == "away" and away.pause == reader.pause
    assert len(away.notes) == AWAY_MAX_NOTES and away.more == 38 - AWAY_MAX_NOTES
    assert [n.id for n in away.notes] == list(range(39, 39 - AWAY_MAX_NOTES, -1)), "newest"
    assert select_reading(reader, [], set(), TAXONOMY, {}, []) == []


# ---------------------------------------------------------------- the reading budget


def graded(i: int, verdict: Verdict, hours: int = 0, **changes: object) -> Note:
    """A kernels note with one verdict, ingested `hours` after T0."""
    base = replace(note(i), role_verdicts={}, verdict=verdict, roles=("kernels",))
    return replace(base, ingested_at=T0 + timedelta(hours=hours), **changes)  # type: ignore[arg-type]


KERNELS = Reader("T", "U", (RoleSubscription("kernels"),))


def test_nine_notes_and_a_budget_of_five_keep_the_five_best() -> None:
    notes = [
        graded(1, Verdict.SKIP, hours=9),
        graded(2, Verdict.SKIM, hours=1),
        graded(3, Verdict.DEEP, hours=1, verdict_confidence=Confidence.LOW),
        graded(4, Verdict.DEEP, hours=2),
        graded(5, Verdict.SKIM, hours=5),
        graded(6, Verdict.DEEP, hours=1),
        graded(7, Verdict.SKIP, hours=1),
        graded(8, Verdict.SKIM, hours=5),  # ties with 5: the higher id first
        graded(9, Verdict.SKIM, hours=3),
    ]
    sections = select_reading(KERNELS, notes, set(), TAXONOMY, {})
    fitted = within_budget(KERNELS, sections, 5)
    kept = [n.id for s in fitted.sections for n in s.notes]
    # deep (high before low confidence, newest first), then skim (newest, then higher id)
    assert kept == [4, 6, 3, 8, 5]
    assert [n.id for n, _ in fitted.left_out] == [9, 2, 1, 7]
    assert all(role == "kernels" for _, role in fitted.left_out)
    everything = within_budget(KERNELS, sections, 0)
    assert len([n for s in everything.sections for n in s.notes]) == 9
    assert everything.left_out == []
    # The same notes in any order: the same choice.
    shuffled = select_reading(KERNELS, notes[::-1], set(), TAXONOMY, {})
    assert [n.id for s in within_budget(KERNELS, shuffled, 5).sections for n in s.notes] == kept


def test_the_readers_own_verdict_ranks_a_note_that_splits_its_audience() -> None:
    # note(): deep for kernels, skim for moe-quant.
    split = note(1)
    plain = replace(note(2), roles=("moe-quant",), role_verdicts={}, verdict=Verdict.SKIM)
    plain = replace(plain, ingested_at=T0 + timedelta(hours=5))  # newer
    moe_reader = Reader("T", "U", (RoleSubscription("moe-quant"),))
    kernel_reader = Reader("T", "U", (RoleSubscription("kernels"), RoleSubscription("moe-quant")))
    assert reader_rank(moe_reader)(split)[0] == Verdict.SKIM.rank
    assert reader_rank(kernel_reader)(split)[0] == Verdict.DEEP.rank
    for reader, first in ((moe_reader, 2), (kernel_reader, 1)):
        sections = select_reading(reader, [split, plain], set(), TAXONOMY, {})
        fitted = within_budget(reader, sections, 1)
        assert [n.id for s in fitted.sections for n in s.notes] == [first]


def test_watches_share_the_budget_and_away_fills_what_is_left() -> None:
    roles = [graded(i, Verdict.SKIM, hours=i) for i in range(1, 4)]
    watched = replace(graded(10, Verdict.DEEP), roles=("frontend",))
    missed = [graded(i, Verdict.DEEP, hours=i) for i in range(20, 24)]
    reader = Reader("T", "U", KERNELS.roles, ("openai",), Pause(T0, T0 + timedelta(days=7)))
    sections = select_reading(reader, [*roles, watched], set(), TAXONOMY, {"openai": {10}}, missed)
    assert [s.kind for s in sections] == ["role", "watch", "away"]
    fitted = within_budget(reader, sections, 5)
    # This week's four first (the watched deep read leads), then one of the away notes.
    assert [(s.kind, [n.id for n in s.notes]) for s in fitted.sections] == [
        ("watch", [10]),
        ("role", [3, 2, 1]),
        ("away", [23]),
    ]
    assert [n.id for n, _ in fitted.left_out] == [22, 21, 20]
    assert within_budget(reader, sections, 3).sections[-1].kind == "role", "no room: no away"


def test_an_empty_reading_list_stays_empty() -> None:
    assert within_budget(KERNELS, [], 5).sections == []
    empty = ReadingSection("role", (), role="kernels")
    assert within_budget(KERNELS, [empty], 5).sections == []
