"""Notes as rows: reading a row back into a `Note` or `NoteFix`, the columns a
classification fills, and the per-role rows that order a role's notes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from bot.domain import Classification, Confidence, Note, NoteFix, Verdict
from bot.store.clock import aware
from bot.store.schema import notes

_CHUNK = 500


def row_to_note(row: Any) -> Note:
    return Note(
        id=row.id,
        repo=row.repo,
        title=row.title,
        paragraph=row.paragraph,
        pr=row.pr,
        pr_url=row.pr_url,
        roles=tuple(row.roles),
        primary_role=row.primary_role,
        verdict=Verdict(row.verdict),
        role_verdicts={k: Verdict(v) for k, v in (row.role_verdicts or {}).items()},
        excerpt=row.excerpt,
        verdict_confidence=Confidence(row.verdict_confidence),
        read_by=row.read_by,
        source=f"{row.source_file}:{row.source_line}",
        ingested_at=aware(row.ingested_at),
        updated_at=aware(row.updated_at),
    )


def row_to_fix(row: Any) -> NoteFix:
    return NoteFix(
        note_id=row.note_id,
        roles=tuple(row.roles),
        primary_role=row.primary_role,
        verdict=Verdict(row.verdict) if row.verdict else None,
        fixed_by=row.fixed_by,
        fixed_at=aware(row.fixed_at),
        revision=row.revision,
    )


NOTE_COLUMNS = [c for c in notes.c if c.name not in ("search_title", "search_body")]


def chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def classification_columns(c: Classification) -> dict[str, Any]:
    return {
        "roles": list(c.roles),
        "primary_role": c.primary_role,
        "verdict": c.verdict.value,
        "verdict_rank": c.verdict.rank,
        "role_verdicts": {k: v.value for k, v in c.role_verdicts.items()},
        "excerpt": c.excerpt,
        "verdict_confidence": c.verdict_confidence.value,
        "read_by": c.read_by,
    }


def note_role_rows(note_id: int, row: dict[str, Any]) -> list[dict[str, Any]]:
    verdicts = row["role_verdicts"]
    return [
        {
            "note_id": note_id,
            "role": role,
            "verdict_rank": Verdict(verdicts.get(role, row["verdict"])).rank,
        }
        for role in row["roles"]
    ]
