"""Synthetic note files for the benchmarks: the labelled notes, varied so each is distinct."""

from __future__ import annotations

import random
from pathlib import Path

from bot.notes.ingest import parse_note_file
from tests.support.notefiles import FIXTURES

FLAVOURS = [
    "跟进",
    "回归修复",
    "性能优化",
    "重构",
    "补充测试",
    "文档",
    "follow-up",
    "cleanup",
    "perf",
    "hotfix",
    "refactor",
    "backport",
]


def base_notes() -> list[tuple[str, str]]:
    """(title, paragraph) of the 92 labelled notes."""
    paths = [*sorted(FIXTURES.glob("0*.txt")), FIXTURES / "notes_dev.txt"]
    return [(n.title, n.paragraph) for p in paths for n in parse_note_file(p)]


def write_corpus(folder: Path, count: int, per_file: int = 100, seed: int = 7) -> list[Path]:
    """Write `count` distinct notes over files of `per_file` notes; returns the files."""
    rng = random.Random(seed)
    notes = base_notes()
    folder.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    for start in range(0, count, per_file):
        blocks = ["vllm-project/vllm"]
        for number in range(start, min(start + per_file, count)):
            title, paragraph = notes[number % len(notes)]
            flavour = rng.choice(FLAVOURS)
            blocks.append(f"{title} {flavour} {number} (#{10000 + number})")
            blocks.append(f"{paragraph} ({flavour} {number})")
        path = folder / f"bench_{start // per_file:05d}.txt"
        path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
        files.append(path)
    return files
