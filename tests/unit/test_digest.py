"""Weekly grouping and ISO-week arithmetic (pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from bot.classify.taxonomy import load_taxonomy
from bot.domain import Note, Verdict
from bot.notes.digest import build_digest, week_bounds, week_label

TAXONOMY = load_taxonomy(None)
BERLIN = ZoneInfo("Europe/Berlin")
T0 = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)


def note(
    id: int,
    roles: tuple[str, ...],
    verdict: Verdict = Verdict.DEEP,
    age_hours: int = 0,
    role_verdicts: dict[str, Verdict] | None = None,
) -> Note:
    at = T0 + timedelta(hours=age_hours)
    return Note(
        id=id, repo="vllm-project/vllm", title=f"n{id}", paragraph="p", pr=None, pr_url=None,
        roles=roles, primary_role=roles[0], verdict=verdict, role_verdicts=role_verdicts or {},
        excerpt="", source="f.txt:1", ingested_at=at, updated_at=at,
    )  # fmt: skip


def test_each_note_once_in_its_primary_roles_section_best_first() -> None:
    split = {"release-infra": Verdict.DEEP, "kernels": Verdict.SKIP}
    notes = [
        note(1, ("kernels", "moe-quant"), Verdict.SKIM),
        note(2, ("kernels",), Verdict.DEEP, age_hours=1),
        note(3, ("moe-quant", "kernels"), Verdict.SKIP),
        note(4, ("kernels",), Verdict.DEEP, age_hours=5),
        note(5, ("release-infra", "kernels"), Verdict.DEEP, role_verdicts=split),
        note(6, ("no-such-role", "hardware"), Verdict.DEEP),
    ]
    digest = build_digest(notes, TAXONOMY, "2026-W48")
    sections = {s.role.slug: [n.id for n in s.notes] for s in digest.sections}
    assert sections == {
        "release-infra": [5],
        "moe-quant": [3],
        "kernels": [4, 2, 1],
        "hardware": [6],
    }
    assert sorted(n.id for n in digest.notes) == [1, 2, 3, 4, 5, 6]
    assert [s.role.slug for s in digest.sections] == [
        "release-infra",
        "moe-quant",
        "kernels",
        "hardware",
    ]  # taxonomy order
    kernels = next(s for s in digest.sections if s.role.slug == "kernels")
    assert kernels.counts() == {Verdict.DEEP: 2, Verdict.SKIM: 1, Verdict.SKIP: 0}
    # One per role first (roles with more deep reads first), then the next of each.
    assert [n.id for n in digest.top_deep_reads(2)] == [4, 5]
    assert [n.id for n in digest.top_deep_reads()] == [4, 5, 6, 2]


def test_empty_digest() -> None:
    digest = build_digest([], TAXONOMY, "2026-W48")
    assert digest.is_empty and digest.sections == ()


def test_week_label_uses_the_configured_zone() -> None:
    late_sunday_utc = datetime(2026, 11, 29, 23, 30, tzinfo=UTC)  # Monday 00:30 in Berlin
    assert week_label(late_sunday_utc, ZoneInfo("UTC")) == "2026-W48"
    assert week_label(late_sunday_utc, BERLIN) == "2026-W49"


def test_week_bounds_are_local_mondays_across_dst() -> None:
    start, end = week_bounds("2026-W13", BERLIN)  # the week DST starts (29 March 2026)
    assert start == datetime(2026, 3, 23, 0, 0, tzinfo=BERLIN).astimezone(UTC)
    assert end == datetime(2026, 3, 30, 0, 0, tzinfo=BERLIN).astimezone(UTC)
    assert end - start == timedelta(days=7, hours=-1)
    with pytest.raises(ValueError, match="ISO week"):
        week_bounds("2026-48", BERLIN)
    with pytest.raises(ValueError, match="ISO week"):
        week_bounds("2026-W60", BERLIN)
