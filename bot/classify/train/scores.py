"""How a classifier is scored on a labelled set, in aggregate (tests, benches and
`python -m bot.classify.train diff` alike).

A note's verdict counts as right when its main verdict is right and, for a note that
splits its audience, every named group's verdict and the verdict of everyone else are
right too. Role scores allow a note's `maybe` roles without penalty.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.classify.train.labelled import Labelled
from bot.domain import Verdict

NAMED_ROLES = ("release-infra", "moe-quant", "multimodal")


class Decided(Protocol):
    """What a scored reading of a note says: a `Classification`, or one recorded of it."""

    @property
    def roles(self) -> tuple[str, ...]: ...

    @property
    def verdict(self) -> Verdict: ...

    def verdict_for(self, role: str) -> Verdict: ...


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


def verdict_right(label: Labelled, got: Decided, slugs: Iterable[str]) -> bool:
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
    notes: list[Labelled], classify: Callable[[str, str], Decided], slugs: tuple[str, ...]
) -> SetScore:
    """Score `classify` on `notes`, in aggregate."""
    return score_readings(notes, [classify(n.title, n.paragraph) for n in notes], slugs)


def score_readings(
    notes: Sequence[Labelled], readings: Sequence[Decided], slugs: tuple[str, ...]
) -> SetScore:
    """Score the readings of `notes` (one each, in order), in aggregate."""
    if len(notes) != len(readings):
        raise ValueError(f"{len(readings)} readings of {len(notes)} notes")
    per_role = {s: RoleScore() for s in slugs}
    right = main = 0
    for label, got in zip(notes, readings, strict=True):
        count_roles(per_role, label, got.roles)
        main += got.verdict.value == label.verdict
        right += verdict_right(label, got, slugs)
    n = len(notes)
    return SetScore(n, right / n, main / n, {s: v.f1 for s, v in per_role.items()})
