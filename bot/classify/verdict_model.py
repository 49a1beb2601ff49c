"""A learned verdict model beside the rules: logistic regression over words and characters.

Writers say "read this closely" in more ways than any phrase table holds. This model reads
the whole paragraph as a bag of English words, word pairs and Chinese character pairs,
and gives the probability of each verdict. It is trained from every labelled
development set by `bot/classify/train/verdicts.py` (deterministic) and shipped as
`bot/classify/data/verdict_model.json`, loaded once.

`blend` decides between the rules and the model with a small learned blend (a logistic
regression over the rules' verdict and confidence and the model's probabilities, trained by
`bot/classify/train/blend.py` on readings of notes the model was not trained on, shipped as
`bot/classify/data/verdict_blend.json`): never deep on weak evidence (then the note is a
low-confidence skim), and low confidence below `verdict_sure_min` (bot/classify/settings.py).
Audience-specific verdicts stay the rules' own.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar, Self

from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import features, squared_counts
from bot.domain import Classification, Confidence, Verdict

__all__ = [
    "BLEND_PATH",
    "MODEL_PATH",
    "BlendModel",
    "Reading",
    "VerdictModel",
    "blend",
    "blend_features",
    "load_blend",
    "load_model",
]

MODEL_PATH = Path(__file__).parent / "data" / "verdict_model.json"
FORMAT = 1

BLEND_PATH = Path(__file__).parent / "data" / "verdict_blend.json"


@dataclass(frozen=True)
class Reading:
    """The model's probabilities for one note, and whether the note is short."""

    proba: dict[Verdict, float]
    short: bool = False


def packed(weights: tuple[float, ...]) -> complex:
    """A feature's three verdict weights as one complex number, relative to the second.

    A softmax does not change when the same amount is added to every class, so three
    weights carry two numbers of information: (w0 - w1) + (w2 - w1)j. Summing complex
    numbers runs in C, which keeps scoring a note cheap.
    """
    return complex(weights[0] - weights[1], weights[2] - weights[1])


@dataclass(frozen=True)
class VerdictWeights:
    """A multinomial logistic regression over the three verdicts, and its model file."""

    KIND: ClassVar[str] = "verdict"

    classes: tuple[Verdict, ...]
    intercept: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]

    def softmax(self, total: complex) -> dict[Verdict, float]:
        """The probability of each verdict given the `packed` sum of a row's weights."""
        i0, i1, i2 = self.intercept
        scores = (i0 - i1 + total.real, 0.0, i2 - i1 + total.imag)
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        whole = sum(exps)
        return {v: e / whole for v, e in zip(self.classes, exps, strict=True)}

    @functools.cached_property
    def _packed(self) -> dict[str, complex]:
        return {g: packed(w) for g, w in self.weights.items()}

    def row_proba(self, row: dict[str, float]) -> dict[Verdict, float]:
        """The probability of each verdict for a row of named feature values."""
        total = 0j
        for key, value in row.items():
            w = self._packed.get(key)
            if w is not None:
                total += value * w
        return self.softmax(total)

    def to_json(self) -> str:
        body = {
            "format": FORMAT,
            "classes": [v.value for v in self.classes],
            "intercept": list(self.intercept),
            "weights": {g: list(w) for g, w in sorted(self.weights.items())},
        }
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, raw: str) -> Self:
        body = json.loads(raw)
        if body.get("format") != FORMAT:
            raise ValueError(f"{cls.KIND} model format {body.get('format')!r}, expected {FORMAT}")
        return cls(
            classes=tuple(Verdict(v) for v in body["classes"]),
            intercept=tuple(float(x) for x in body["intercept"]),
            weights={str(g): tuple(float(x) for x in w) for g, w in body["weights"].items()},
        )


@dataclass(frozen=True)
class VerdictModel(VerdictWeights):
    """The verdict of a whole note, over its l2-normalised feature counts."""

    def proba(self, text: str) -> Reading:
        """The probability of each verdict for a normalised, lower-cased paragraph."""
        return self.proba_of(features(text))

    def proba_of(
        self, grams: list[str], squares: int | None = None, total: complex | None = None
    ) -> Reading:
        """`proba` of a paragraph given its `features` (computed once for both models) and,
        if known, their `squared_counts` and the sum of their `packed` weights."""
        if squares is None:
            squares = squared_counts(grams)
        if total is None:
            total = sum(map(self._packed.get, grams, itertools.repeat(0j)), 0j)
        norm = math.sqrt(squares) or 1.0
        return Reading(self.softmax(total / norm), short=len(grams) < T.short_features)


@functools.cache
def load_model(path: Path = MODEL_PATH) -> VerdictModel:
    """The shipped model (read once per process)."""
    return VerdictModel.from_json(path.read_text(encoding="utf-8"))


def blend_features(rules: Classification, reading: Reading) -> dict[str, float]:
    """What the learned blend reads of a note: the rules' verdict and whether they are sure
    of it, the model's log-probability of each verdict and of the rules' verdict, and
    whether the note is short."""
    sure = "high" if rules.verdict_confidence is Confidence.HIGH else "low"
    logs = {v: math.log(max(p, T.proba_floor)) for v, p in reading.proba.items()}
    row = {
        f"rules:{rules.verdict.value}:{sure}": 1.0,
        f"agree:{rules.verdict.value}": logs[rules.verdict],
    }
    row.update({f"log:{v.value}": x for v, x in logs.items()})
    if reading.short:
        row["short"] = 1.0
    return row


@dataclass(frozen=True)
class BlendModel(VerdictWeights):
    """The main verdict from the rules' reading and the model's, over `blend_features`
    (`row_proba`)."""

    KIND: ClassVar[str] = "blend"


@functools.cache
def load_blend(path: Path = BLEND_PATH) -> BlendModel:
    """The shipped blend (read once per process)."""
    return BlendModel.from_json(path.read_text(encoding="utf-8"))


def blend(
    rules: Classification, reading: Reading, model: BlendModel | None = None
) -> Classification:
    """The rules' classification with the main verdict decided together with the model."""
    if reading.short and rules.verdict_confidence is Confidence.HIGH:
        return rules  # a sentence or so: too few words for the model to weigh against them
    proba = (model or load_blend()).row_proba(blend_features(rules, reading))
    choice = max(proba, key=lambda v: (proba[v], -v.rank))
    p = proba[choice]
    if reading.short:
        # a sentence or so, and no verdict the rules are sure of: little evidence either way
        if choice is Verdict.DEEP or p < T.verdict_sure_min:
            return rules
        return _with_verdict(rules, choice, Confidence.LOW)
    if choice is Verdict.DEEP and p < T.deep_min:
        return _cautious(rules)  # never deep on weak evidence
    confidence = Confidence.HIGH if p >= T.verdict_sure_min else Confidence.LOW
    if choice is rules.verdict and confidence is rules.verdict_confidence:
        return rules
    return _with_verdict(rules, choice, confidence)


def _cautious(rules: Classification) -> Classification:
    """Weak evidence: the cautious verdict, flagged low confidence."""
    return _with_verdict(rules, Verdict.SKIM, Confidence.LOW)


def _with_verdict(
    rules: Classification, verdict: Verdict, confidence: Confidence
) -> Classification:
    role_verdicts = {r: v for r, v in rules.role_verdicts.items() if v is not verdict}
    return replace(
        rules, verdict=verdict, role_verdicts=role_verdicts, verdict_confidence=confidence
    )
