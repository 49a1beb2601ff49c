"""Train the audience model (`bot/classify/data/audience_model.json.gz`) from every development set.

Each example is one role of one note: the note's gold roles take the main verdict unless
the note gives their readers another, and every group the note names takes its own; a note
that tells everyone else their verdict adds one example for them.
The clauses are weighed by the shipped role model, so retrain after retraining that.
Deterministic: the same labelled sets give the same file. Held-out sets are never loaded.
Needs the `train` extra (scikit-learn); trained by `python -m bot.classify.train`.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.classify.models import (
    MOST,
    OTHERS,
    Attention,
    AudienceModel,
    RoleModel,
    attend,
    spread,
)
from bot.classify.text import normalise
from bot.classify.train.labelled import Labelled
from bot.classify.train.model_files import (
    VERDICT_CLASSES,
    fit_softmax,
)
from bot.domain import Verdict

CLASSES = VERDICT_CLASSES
C = 5.0  # inverse L2 strength, chosen on the validation sets
MIN_ROWS = 3  # a feature seen in fewer training rows is dropped
PRUNE = 0.1  # weights whose largest magnitude is below this are left out of the file
DIGITS = 3


def pair_features(attention: Attention, role: str) -> dict[str, float]:
    """The note's features weighed by how much each clause speaks of `role`: each clause's
    l2-normalised counts times its share, marked by where the clause stands ("a:" the
    clause itself, "n:" the next, "p:" the previous); and the largest share ("most").
    `AudienceModel.reader` gives the same probabilities without building them."""
    out: dict[str, float] = {}
    for mark, i, weight in spread(attention, role):
        unit = weight / attention.norms[i]
        for gram in attention.grams[i]:
            key = mark + gram
            out[key] = out.get(key, 0.0) + unit
    out[MOST] = attention.most(role)
    return out


def examples(
    notes: Iterable[Labelled], role_model: RoleModel
) -> tuple[list[dict[str, float]], list[int]]:
    """One row per role a note speaks to, with the verdict it gives that role."""
    rows: list[dict[str, float]] = []
    labels: list[int] = []
    for note in notes:
        attention = attend(normalise(note.paragraph.strip()).lower(), role_model)
        for role in sorted(note.roles | set(note.role_verdicts)):
            verdict = note.role_verdicts.get(role, note.verdict)
            rows.append(pair_features(attention, role))
            labels.append(CLASSES.index(Verdict(verdict)))
        if note.others_verdict is not None and attention.most(OTHERS):
            rows.append(pair_features(attention, OTHERS))
            labels.append(CLASSES.index(Verdict(note.others_verdict)))
    return rows, labels


def train(notes: Iterable[Labelled], role_model: RoleModel) -> AudienceModel:
    """Fit the model on the roles of `notes`."""
    return fit(*examples(notes, role_model))


def fit(rows: list[dict[str, float]], labels: list[int]) -> AudienceModel:
    intercept, weights = fit_softmax(
        rows, labels, len(CLASSES), c=C, min_count=MIN_ROWS, prune=PRUNE, digits=DIGITS
    )
    return AudienceModel(classes=CLASSES, intercept=intercept, weights=weights)
