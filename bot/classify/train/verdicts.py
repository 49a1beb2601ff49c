"""Train the verdict model (`bot/classify/data/verdict_model.json.gz`) from every development set.

Deterministic: the same labelled sets give the same file. Held-out sets are never loaded.
Needs the `train` extra (scikit-learn); trained by `python -m bot.classify.train`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from bot.classify.models import VerdictModel
from bot.classify.text import features, normalise
from bot.classify.train.labelled import Labelled
from bot.classify.train.model_files import (
    VERDICT_CLASSES,
    fit_softmax,
)
from bot.domain import Verdict

CLASSES = VERDICT_CLASSES
C = 10.0  # inverse L2 strength, chosen by leave-one-set-out (tests/bench/verdict_loso.py)
MIN_NOTES = 2  # a feature seen in fewer training notes is dropped
PRUNE = 0.02  # weights whose largest magnitude is below this are left out of the file
DIGITS = 4


def vector(paragraph: str) -> dict[str, float]:
    counts = Counter(features(normalise(paragraph).lower()))
    norm = math.sqrt(sum(c * c for c in counts.values())) or 1.0
    return {g: c / norm for g, c in counts.items()}


def train(notes: Iterable[Labelled]) -> VerdictModel:
    """Fit the model on `notes` (their paragraphs and main verdicts)."""
    notes = list(notes)
    rows = [vector(n.paragraph) for n in notes]
    labels = [CLASSES.index(Verdict(n.verdict)) for n in notes]
    intercept, weights = fit_softmax(
        rows, labels, len(CLASSES), c=C, min_count=MIN_NOTES, prune=PRUNE, digits=DIGITS
    )
    return VerdictModel(classes=CLASSES, intercept=intercept, weights=weights)
