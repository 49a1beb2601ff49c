"""A learned role model beside the rules: one logistic regression per reader role.

The rules find a role by its weighted domain keywords; writers the rules have never read
name the same things in other words. This model reads the title and the paragraph as bags
of the verdict model's features (English words, word pairs, Chinese character pairs), with
the title's features marked apart ("t:kernel"), and gives each role the probability that
the note is for its readers. It is trained from every labelled development set by
`bot/classify/train/roles.py` (deterministic) and shipped as `bot/classify/data/role_model.json`,
loaded once.

`blend` decides the roles with the rules: a role the rules chose stays unless the model
finds it unlikely while fairly sure of some role, a role the rules missed joins when the
model is fairly sure of it, and a role the note addresses with its own reading verdict
always stays. The rules' order (and
so their primary role) is kept.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import features, squared_counts
from bot.domain import Classification, Verdict

__all__ = ["MODEL_PATH", "RoleModel", "blend", "column_sums", "load_model", "note_features"]

MODEL_PATH = Path(__file__).parent / "data" / "role_model.json"
FORMAT = 1

TITLE_MARK = "t:"


def note_features(title: str, grams: list[str]) -> list[str]:
    """The features of a note: its paragraph's `features` and its normalised, lower-cased
    title's, marked."""
    marked = [TITLE_MARK + g for g in features(title)]
    return grams + marked * T.title_repeat


@dataclass(frozen=True)
class RoleModel:
    """One-vs-rest logistic regressions over l2-normalised feature counts."""

    roles: tuple[str, ...]
    intercept: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]  # feature -> one weight per role

    def proba(self, title: str, text: str) -> dict[str, float]:
        """The probability of each role for a normalised, lower-cased title and paragraph."""
        return self.proba_of(title, features(text))

    @functools.cached_property
    def _title_weights(self) -> dict[str, tuple[float, ...]]:
        """The weights of the title's features, by the feature unmarked."""
        size = len(TITLE_MARK)
        return {g[size:]: w for g, w in self.weights.items() if g.startswith(TITLE_MARK)}

    def proba_of(
        self,
        title: str,
        paragraph_grams: list[str],
        paragraph_squares: int | None = None,
        totals: list[float] | None = None,
    ) -> dict[str, float]:
        """`proba` given the paragraph's `features` (computed once for both models) and, if
        known, their `squared_counts` and the `column_sums` of their weights: the
        `note_features` without building them."""
        title_grams = features(title)
        if paragraph_squares is None:
            paragraph_squares = squared_counts(paragraph_grams)
        # a marked title feature never looks like a paragraph one, and counts T.title_repeat
        # times its count in the title
        squares = paragraph_squares + T.title_repeat**2 * squared_counts(title_grams)
        if totals is None:
            rows = list(filter(None, map(self.weights.get, paragraph_grams)))
            totals = column_sums(rows, len(self.roles))
        # the title's weights added on to the paragraph's, in `note_features` order
        rows = list(filter(None, map(self._title_weights.get, title_grams))) * T.title_repeat
        if rows:
            totals = list(map(sum, zip(*rows, strict=True), totals))
        return self.proba_of_totals(totals, math.sqrt(squares) or 1.0)

    def proba_of_totals(self, totals: list[float], norm: float) -> dict[str, float]:
        """Each role's probability given the `column_sums` of a note's (or clause's) weights
        and the l2 norm of its feature counts (extra columns are not read)."""
        exp = math.exp
        return {
            role: 1.0 / (1.0 + exp(-(b + total / norm)))
            for role, b, total in zip(self.roles, self.intercept, totals, strict=False)
        }

    def to_json(self) -> str:
        body = {
            "format": FORMAT,
            "roles": list(self.roles),
            "intercept": list(self.intercept),
            "weights": {g: [_compact(x) for x in w] for g, w in sorted(self.weights.items())},
        }
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, raw: str) -> RoleModel:
        body = json.loads(raw)
        found = body.get("format")
        roles = tuple(str(r) for r in body.get("roles", ()))
        weights = {str(g): tuple(float(x) for x in w) for g, w in body.get("weights", {}).items()}
        if found != FORMAT:
            raise ValueError(f"role model format {found!r}, expected {FORMAT}")
        if any(len(w) != len(roles) for w in weights.values()):
            raise ValueError("role model: every feature needs one weight per role")
        intercept = tuple(float(x) for x in body["intercept"])
        return cls(roles=roles, intercept=intercept, weights=weights)


def column_sums(rows: list[tuple[float, ...]], width: int) -> list[float]:
    """The sums of the first `width` columns of `rows`, each added in order (as `sum` adds
    it, so the same figures as a sum over the features one by one)."""
    if not rows:
        return [0.0] * width
    return list(map(sum, itertools.islice(zip(*rows, strict=True), width)))


def _compact(weight: float) -> float | int:
    return int(weight) if weight == int(weight) else weight


@functools.cache
def load_model(path: Path = MODEL_PATH) -> RoleModel:
    """The shipped model (read once per process)."""
    return RoleModel.from_json(path.read_text(encoding="utf-8"))


def blend(
    rules: Classification,
    proba: dict[str, float],
    thresholds: tuple[float, float] = (T.role_keep_min, T.role_add_min),
) -> Classification:
    """The rules' classification with its roles decided together with the model.

    The model drops a role only when it is fairly sure of some role: a note it knows too few
    words of says little against the rules. Roles the model does not know (a team's own
    roles) are left to the rules.
    """
    verdict = rules.verdict

    def stays(role: str) -> bool:
        if proba.get(role, 1.0) >= drop_min:
            return True
        told = rules.role_verdicts.get(role)  # the note tells this role's readers to read it
        return told is not None and told is not Verdict.SKIP

    def told_to_skip(role: str) -> bool:
        return rules.verdict_for(role) is Verdict.SKIP and verdict is not Verdict.SKIP

    keep_min, add_min = thresholds
    drop_min = keep_min if max(proba.values(), default=0.0) >= add_min else 0.0
    kept = [r for r in rules.roles if stays(r)]
    added = sorted(
        (
            r
            for r, p in proba.items()
            if p >= add_min and r not in rules.roles and not told_to_skip(r)
        ),
        key=lambda r: (-proba[r], r),
    )
    roles = tuple(kept + added)
    if not roles:
        roles = (max(rules.roles, key=lambda r: proba.get(r, 0.0)),)
    if roles == rules.roles:
        return rules
    return replace(rules, roles=roles, primary_role=roles[0])
