"""The labelled note sets and how a classifier is scored on them (aggregates only).

Sets: `seeds` (the sample files in digests/), `dev` and `dev2` (hand-written notes used to
develop the vocabulary), `dev3`, `dev4` and `dev5` (more development notes in other
styles), `dev6` and `dev7` (once held out as `unseen_v2` and `unseen_v3`, now development
sets), `dev8`–`dev75` (development notes by more writers), `unseen_v6`–`unseen_v10` (held
out, frozen: scored, never read for ideas; see fixtures/README.md),
`retired_v4` and `retired_v5` (once held out as `unseen_v4` and `unseen_v5`: frozen and
never read, but their aggregate steered a decision), and
`val1`–`val7` (validation: scored in aggregate only, never trained or tuned on).

A note's verdict counts as right when its main verdict is right and, for a note that
splits its audience, every named group's verdict and the verdict of everyone else are
right too. Role scores allow a note's `maybe` roles without penalty.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.domain import Classification
from bot.notes.ingest import parse_note_text
from tests.support.notefiles import FIXTURES

NAMED_ROLES = ("release-infra", "moe-quant", "multimodal")
# Held-out sets: each frozen with the sha256 in the `.sha256` file beside it.
UNSEEN = ("unseen_v6", "unseen_v7", "unseen_v8", "unseen_v9", "unseen_v10")
# Once held out, no longer: written and frozen like the held-out sets and never read note by
# note or trained on, but their aggregate steered a decision (see fixtures/README.md).
RETIRED = ("retired_v4", "retired_v5")
FROZEN = (*UNSEEN, *RETIRED)
# Validation sets: written after the verdict model and the newer rules, never trained or
# tuned on, scored in aggregate to compare approaches while the held-out sets stay untouched.
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


@dataclass
class RoleScore:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def f1(self) -> float:
        p = self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0
        r = self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0
        return 2 * p * r / (p + r) if p + r else 0.0


def named_macro_f1(role_f1: dict[str, float]) -> float:
    """The mean F1 of the named roles."""
    return sum(role_f1[r] for r in NAMED_ROLES) / len(NAMED_ROLES)


@dataclass
class SetScore:
    """Aggregate scores of one classifier on one set."""

    notes: int
    verdict_accuracy: float  # main verdict, audience verdicts and everyone else's all right
    main_verdict_accuracy: float
    role_f1: dict[str, float]

    @property
    def named_macro_f1(self) -> float:
        return named_macro_f1(self.role_f1)

    @property
    def all_macro_f1(self) -> float:
        return sum(self.role_f1.values()) / len(self.role_f1)

    def line(self, name: str) -> str:
        roles = " ".join(f"{k}={v:.2f}" for k, v in self.role_f1.items())
        return (
            f"{name}: n={self.notes} verdict={self.verdict_accuracy:.3f} "
            f"(main {self.main_verdict_accuracy:.3f}) named-F1={self.named_macro_f1:.3f} "
            f"all-F1={self.all_macro_f1:.3f} | {roles}"
        )


def verdict_right(label: Labelled, got: Classification, slugs: Iterable[str]) -> bool:
    """Main verdict, every named group's verdict and everyone else's verdict all right."""
    if got.verdict.value != label.verdict:
        return False
    for role, verdict in label.role_verdicts.items():
        if got.verdict_for(role).value != verdict:
            return False
    if label.others_verdict is not None:
        mentioned = label.roles | label.maybe | set(label.role_verdicts)
        outsider = next(s for s in slugs if s not in mentioned)
        if got.verdict_for(outsider).value != label.others_verdict:
            return False
    return True


def count_roles(per_role: dict[str, RoleScore], label: Labelled, roles: Iterable[str]) -> None:
    """Add one note's chosen `roles` to the per-role counts (its `maybe` roles are free)."""
    chosen = set(roles)
    for role in chosen:
        if role in label.roles:
            per_role[role].tp += 1
        elif role not in label.maybe:
            per_role[role].fp += 1
    for role in label.roles - chosen:
        per_role[role].fn += 1


def score(
    notes: list[Labelled], classify: Callable[[str, str], Classification], slugs: tuple[str, ...]
) -> SetScore:
    """Score `classify` on `notes`, in aggregate."""
    per_role = {s: RoleScore() for s in slugs}
    right = main = 0
    for label in notes:
        got = classify(label.title, label.paragraph)
        count_roles(per_role, label, got.roles)
        main += got.verdict.value == label.verdict
        right += verdict_right(label, got, slugs)
    n = len(notes)
    return SetScore(n, right / n, main / n, {s: v.f1 for s, v in per_role.items()})
