"""Notes and roles files made up on the spot: a note file on disk, a stored note, a roles
file that replaces the defaults."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from bot.domain import Note, Verdict
from bot.services import Services

NOTE = "vllm-project/vllm\n\n{title} (#{pr})\n\n{paragraph}\n"


def write(path: Path, title: str, paragraph: str, pr: int = 1, mtime: int | None = None) -> Path:
    path.write_text(NOTE.format(title=title, pr=pr, paragraph=paragraph), encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def only_note(services: Services) -> tuple[int, str]:
    [note] = services.store.list_notes()
    return note.id, note.paragraph


def note(i: int, title: str = "A note", excerpt: str = "for kernel people") -> Note:
    at = datetime(2026, 11, 23, tzinfo=UTC)
    return Note(
        id=i,
        repo="vllm-project/vllm",
        title=f"{title} {i}",
        paragraph="值得精读",
        pr=1000 + i,
        pr_url=f"https://github.com/vllm-project/vllm/pull/{1000 + i}",
        roles=("kernels", "moe-quant"),
        primary_role="kernels",
        verdict=Verdict.DEEP,
        role_verdicts={"moe-quant": Verdict.SKIM},
        excerpt=excerpt,
        source="x.txt:1",
        ingested_at=at,
        updated_at=at,
    )


def replacing_roles(folder: Path) -> Path:
    """A roles file that replaces the defaults with three roles, the last matching nothing."""
    path = folder / "roles.toml"
    path.write_text(
        'mode = "replace"\n'
        '[[roles]]\nslug = "kernels"\nname_zh = "内核"\nname_en = "Kernels"\n'
        'keywords = { "kernel" = 3.0, "cuda" = 3.0, "内核" = 3.0 }\n'
        '[[roles]]\nslug = "serving"\nname_zh = "服务"\nname_en = "Serving"\n'
        'keywords = { "api" = 3.0, "scheduler" = 3.0, "调度" = 3.0, "多模态" = 3.0 }\n'
        '[[roles]]\nslug = "zz-last"\nname_zh = "最后"\nname_en = "Last"\n'
        'keywords = { "nothing-matches-this" = 3.0 }\n',
        encoding="utf-8",
    )
    return path
