"""Which notes a reader's DM holds: filters, primary role, watch dedupe, the away cap."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from bot.classify.taxonomy import load_taxonomy
from bot.domain import Pause, Reader, RoleSubscription, Verdict
from bot.readers.reading_list import AWAY_MAX_NOTES, select_reading
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
