"""Train the learned blend (`bot/classify/data/verdict_blend.json`) of the rules and the
verdict model.

The blend must learn how far to trust the model on notes it has not seen, so it is fitted on
readings the model gives notes it was not trained on: the development sets are dealt into
FOLDS folds, and each fold is read by a verdict model trained on the other folds. The rules
read every note as they do in production (`rules_reading`). Deterministic: the same
labelled sets, rules and features give the same file. Held-out sets are never loaded. Needs
the `train` extra (scikit-learn); trained by `python -m bot.classify.train`.
"""

from __future__ import annotations

from bot.classify import Classifier
from bot.classify.models import BlendModel, blend_features
from bot.classify.settings import THRESHOLDS as T
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import features, normalise
from bot.classify.train.labelled import DEV_SETS, Labelled, load_set
from bot.classify.train.model_files import VERDICT_CLASSES, fit_softmax
from bot.classify.train.verdicts import train as train_verdict
from bot.domain import Confidence, Verdict

CLASSES = VERDICT_CLASSES
FOLDS = 5
C = 1.0  # inverse L2 strength
DIGITS = 4


def rules_reading(rules: Classifier, note: Labelled) -> tuple[Verdict, Confidence, bool]:
    """What the blend reads of a note besides the verdict model's probabilities: the rules'
    verdict, whether they are sure of it, and whether the note is short (as
    `VerdictModel.proba_of` tells it)."""
    by_rules = rules.classify_by_rules(note.title, note.paragraph)
    short = len(features(normalise(note.paragraph.strip()).lower())) < T.short_features
    return by_rules.verdict, by_rules.verdict_confidence, short


def examples() -> tuple[list[dict[str, float]], list[int]]:
    """One row per development note the blend decides: what it reads of the note, and the
    note's main verdict."""
    rules = Classifier(load_taxonomy(), audience_model=False)
    by_set = {name: load_set(name) for name in DEV_SETS}
    rows: list[dict[str, float]] = []
    labels: list[int] = []
    for fold in range(FOLDS):
        held = [name for i, name in enumerate(DEV_SETS) if i % FOLDS == fold]
        model = train_verdict(
            note for name in DEV_SETS if name not in held for note in by_set[name]
        )
        for note in (note for name in held for note in by_set[name]):
            reading = model.proba(normalise(note.paragraph.strip()).lower())
            by_rules = rules.classify_by_rules(note.title, note.paragraph)
            if reading.short and by_rules.verdict_confidence is Confidence.HIGH:
                continue  # the rules decide these without the blend
            rows.append(blend_features(by_rules, reading))
            labels.append(CLASSES.index(Verdict(note.verdict)))
    return rows, labels


def train() -> BlendModel:
    return fit(*examples())


def fit(rows: list[dict[str, float]], labels: list[int]) -> BlendModel:
    intercept, weights = fit_softmax(
        rows, labels, len(CLASSES), c=C, min_count=1, prune=0.0, digits=DIGITS
    )
    return BlendModel(classes=CLASSES, intercept=intercept, weights=weights)
