"""The labelled note sets the models are trained on and scored against (tests/fixtures).

Sets: `seeds` (the sample files in digests/), `dev` and `dev2` (hand-written notes used to
develop the vocabulary), `dev3`, `dev4` and `dev5` (more development notes in other
styles), `dev6` and `dev7` (once held out as `unseen_v2` and `unseen_v3`, now development
sets), `dev8`–`dev75` (development notes by more writers), `unseen_v6`–`unseen_v12` (held
out, frozen: scored, never read for ideas; see fixtures/README.md),
`retired_v4` and `retired_v5` (once held out as `unseen_v4` and `unseen_v5`: frozen and
never read, but their aggregate steered a decision), and
`val1`–`val7` (validation: never trained on; their aggregate chose thresholds and steered
choices, and `val1`'s misses were read for classifier 7's cues, so they are development sets
in practice; see tests/bench/README.md, "Which sets chose which numbers").

"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from bot.notes.ingest import parse_note_text

# The labelled sets live with the tests of a source checkout (they do not ship in the wheel).
FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures"

# Held-out sets: each frozen with the sha256 in the `.sha256` file beside it.
UNSEEN = (
    "unseen_v6",
    "unseen_v7",
    "unseen_v8",
    "unseen_v9",
    "unseen_v10",
    "unseen_v11",
    "unseen_v12",
)
# Once held out, no longer: written and frozen like the held-out sets and never read note by
# note or trained on, but their aggregate steered a decision (see fixtures/README.md).
RETIRED = ("retired_v4", "retired_v5")
FROZEN = (*UNSEEN, *RETIRED)
# Validation sets: written after the verdict model and the newer rules, never trained on and
# scored in aggregate only, to compare approaches while the held-out sets stay untouched. That
# aggregate chose thresholds (val1-val5: the blends' guards and the audience model's numbers)
# and steered choices (val6-val7: the learned blend, the rule families), so their scores
# flatter those choices.
VALIDATION_SETS = ("val1", "val2", "val3", "val4", "val5", "val6", "val7")
DEV_SETS = (
    "seeds", "dev", "dev2", "dev3", "dev4", "dev5", "dev6", "dev7", "dev8", "dev9", "dev10",
    "dev11", "dev12", "dev13", "dev14", "dev15", "dev16", "dev17", "dev18", "dev19", "dev20",
    "dev21", "dev22", "dev23", "dev24", "dev25", "dev26", "dev27", "dev28",
    "dev29", "dev30", "dev31", "dev32", "dev33", "dev34", "dev35", "dev36", "dev37", "dev38",
    "dev39", "dev40", "dev41", "dev42", "dev43", "dev44", "dev45", "dev46", "dev47", "dev48",
    "dev49", "dev50", "dev51", "dev52", "dev53", "dev54", "dev55", "dev56", "dev57", "dev58",
    "dev59", "dev60", "dev61", "dev62", "dev63", "dev64", "dev65", "dev66", "dev67", "dev68",
    "dev69", "dev70", "dev71", "dev72", "dev73", "dev74", "dev75",
)  # fmt: skip


@dataclass(frozen=True)
class Labelled:
    """One labelled note."""

    title: str
    paragraph: str
    roles: frozenset[str]
    maybe: frozenset[str]
    verdict: str
    role_verdicts: dict[str, str] = field(default_factory=dict)
    others_verdict: str | None = None


def _rows(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _labelled(row: dict[str, object], paragraph: str) -> Labelled:
    rv = row.get("role_verdicts")
    ov = row.get("others_verdict")
    return Labelled(
        title=str(row["title"]),
        paragraph=paragraph,
        roles=frozenset(row["roles"]),  # type: ignore[call-overload]
        maybe=frozenset(row["maybe"]),  # type: ignore[call-overload]
        verdict=str(row["verdict"]),
        role_verdicts={str(k): str(v) for k, v in rv.items()} if isinstance(rv, dict) else {},
        others_verdict=str(ov) if ov is not None else None,
    )


def unseen_digest(name: str) -> str:
    """sha256 of a frozen held-out file as it is now."""
    return hashlib.sha256((FIXTURES / f"{name}.jsonl").read_bytes()).hexdigest()


@functools.cache
def frozen_digest(name: str) -> str:
    """The sha256 a held-out file was frozen with (its `.sha256` file, read once)."""
    digest, _, filename = (FIXTURES / f"{name}.sha256").read_text(encoding="ascii").partition(" ")
    if filename.strip() != f"{name}.jsonl":
        raise ValueError(f"{name}.sha256 names {filename.strip()!r}, not {name}.jsonl")
    return digest


def development_notes() -> list[Labelled]:
    """Every note of every development set (what the learned models are trained on)."""
    return [note for name in DEV_SETS for note in load_set(name)]


def _note_files(name: str) -> list[Path]:
    """The note files whose paragraphs set `name` labels (only `seeds` and `dev`)."""
    return sorted(FIXTURES.glob("0*.txt")) if name == "seeds" else [FIXTURES / "notes_dev.txt"]


def _label_file(name: str) -> Path:
    if name in ("seeds", "dev"):
        return FIXTURES / f"labels_{name}.jsonl"
    return FIXTURES / (f"{name}.jsonl" if name in FROZEN else f"labels_{name}.jsonl")


def set_files(name: str) -> list[Path]:
    """Every file set `name` is read from."""
    notes = _note_files(name) if name in ("seeds", "dev") else []
    return [*notes, _label_file(name)]


def load_set(name: str) -> list[Labelled]:
    """The labelled notes of set `name`."""
    if name in ("seeds", "dev"):
        paths = _note_files(name)
        paragraphs: dict[str, str] = {}
        for path in paths:
            for note in parse_note_text(path.read_text(encoding="utf-8"), path.name):
                paragraphs[note.title] = note.paragraph
        rows = _rows(_label_file(name))
        return [_labelled(r, paragraphs[str(r["title"])]) for r in rows]
    if name in FROZEN and unseen_digest(name) != frozen_digest(name):
        raise ValueError(f"{name}.jsonl changed: it is no longer a held-out set")
    return [_labelled(r, str(r["paragraph"])) for r in _rows(_label_file(name))]
