"""Train the verdict model (`bot/classify/data/verdict_model.json`) from every development set.

Deterministic: the same labelled sets give the same file. Held-out sets are never loaded.
Needs the `dev` extra (scikit-learn).

.venv/bin/python -m tests.train_verdict_model           # write bot/classify/data/verdict_model.json
.venv/bin/python -m tests.train_verdict_model --check   # exit 1 when the file is stale
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from bot.classify.rules import _normalise
from bot.classify.verdict_model import MODEL_PATH, VerdictModel, features
from bot.domain import Verdict
from tests.labelled import Labelled, development_notes
from tests.model_files import VERDICT_CLASSES, fit_softmax, softmax_predictions, write_or_check

CLASSES = VERDICT_CLASSES
C = 10.0  # inverse L2 strength, chosen by leave-one-set-out (tests/bench/verdict_loso.py)
MIN_NOTES = 2  # a feature seen in fewer training notes is dropped
PRUNE = 0.02  # weights whose largest magnitude is below this are left out of the file
DIGITS = 4


def vector(paragraph: str) -> dict[str, float]:
    counts = Counter(features(_normalise(paragraph).lower()))
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
        MODEL_PATH,
        lambda: train(notes),
        VerdictModel.from_json,
        lambda model: softmax_predictions(model, (vector(n.paragraph) for n in notes)),
        "python -m tests.train_verdict_model",
    )


if __name__ == "__main__":
    raise SystemExit(main())
