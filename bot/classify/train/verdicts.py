"""Train the verdict model (`bot/classify/data/verdict_model.json.gz`) from every development set.

Deterministic: the same labelled sets give the same file. Held-out sets are never loaded.
Needs the `train` extra (scikit-learn).

.venv/bin/python -m bot.classify.train.verdicts           # write the model file
.venv/bin/python -m bot.classify.train.verdicts --check   # exit 1 when the file is stale
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from bot.classify.models import VERDICT_MODEL_PATH, VerdictModel
from bot.classify.text import features, normalise
from bot.classify.train.labelled import Labelled, development_notes
from bot.classify.train.model_files import (
    VERDICT_CLASSES,
    fit_softmax,
    softmax_predictions,
    write_or_check,
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


def main(argv: list[str] | None = None) -> int:
    notes = development_notes()
    return write_or_check(
        argv,
        __doc__,
        VERDICT_MODEL_PATH,
        lambda: train(notes),
        VerdictModel.from_json,
        lambda model: softmax_predictions(model, (vector(n.paragraph) for n in notes)),
        "python -m bot.classify.train.verdicts",
    )


if __name__ == "__main__":
    raise SystemExit(main())
