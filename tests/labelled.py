"""The labelled note sets and how a classifier is scored on them (aggregates only).

Sets: `seeds` (the sample files in digests/), `dev` and `dev2` (hand-written notes used to
develop the vocabulary), `dev3`, `dev4` and `dev5` (more development notes in other
styles), `dev6` and `dev7` (once held out as `unseen_v2` and `unseen_v3`, now development
sets), `dev8`–`dev75` (development notes by more writers), `unseen_v6`–`unseen_v9` (held
out, frozen: scored, never read for ideas; see fixtures/README.md),
`retired_v4` and `retired_v5` (once held out as `unseen_v4` and `unseen_v5`: frozen and
never read, but their aggregate steered a decision), and
`val1`–`val7` (validation: scored in aggregate only, never trained or tuned on).

A note's verdict counts as right when its main verdict is right and, for a note that
splits its audience, every named group's verdict and the verdict of everyone else are
right too. Role scores allow a note's `maybe` roles without penalty.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from bot.domain import Classification
from bot.ingest import parse_note_text
from tests.fixtures_util import FIXTURES

NAMED_ROLES = ("release-infra", "moe-quant", "multimodal")
# Held-out sets and the sha256 each was frozen with.
UNSEEN: dict[str, str] = {
    "unseen_v6": "d88cdb967b123b8f4f1cb602b03c6565c02a44200b81d344188cd22351d62b5d",
    "unseen_v7": "eb6b5634c523b4b58a5bb20a61841955b07da63efb69a55e1bd0e7403e74f442",
    "unseen_v8": "12d7605968bda6f69107d673945961fcfb34e188a255ff7d52dc81c73c5ccec1",
    "unseen_v9": "e51db0908a608ffd956e46e65f02d95ad4c116328b97c9e18ad45d599a45dbc0",
}
# Once held out, no longer: written and frozen like the held-out sets and never read note by
# note or trained on, but their aggregate steered a decision (see fixtures/README.md).
RETIRED: dict[str, str] = {
    "retired_v4": "4c2f3d37e425c3cac7588187d54ff7129caff065f6519e8abc279241234f69c0",
    "retired_v5": "53de2f4d9df7dfba261483cc56829b54cbebf962f2db7514a2ed28ebb691275f",
}
FROZEN = {**UNSEEN, **RETIRED}
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
    """sha256 of a frozen held-out file."""
    return hashlib.sha256((FIXTURES / f"{name}.jsonl").read_bytes()).hexdigest()


def development_notes() -> list[Labelled]:
    """Every note of every development set (what the learned models are trained on)."""
    return [note for name in DEV_SETS for note in load_set(name)]


def load_set(name: str) -> list[Labelled]:
    """The labelled notes of set `name`."""
    if name in ("seeds", "dev"):
        paths = sorted(FIXTURES.glob("0*.txt")) if name == "seeds" else [FIXTURES / "notes_dev.txt"]
        paragraphs: dict[str, str] = {}
        for path in paths:
            for note in parse_note_text(path.read_text(encoding="utf-8"), path.name):
                paragraphs[note.title] = note.paragraph
        rows = _rows(FIXTURES / f"labels_{name}.jsonl")
        return [_labelled(r, paragraphs[str(r["title"])]) for r in rows]
    if name in FROZEN and unseen_digest(name) != FROZEN[name]:
        raise ValueError(f"{name}.jsonl changed: it is no longer a held-out set")
    path = FIXTURES / (f"{name}.jsonl" if name in FROZEN else f"labels_{name}.jsonl")
    return [_labelled(r, str(r["paragraph"])) for r in _rows(path)]


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
