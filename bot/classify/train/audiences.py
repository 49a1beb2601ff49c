"""Train the audience model (`bot/classify/data/audience_model.json`) from every development set.

Each example is one role of one note: the note's gold roles take the main verdict unless
the note gives their readers another, and every group the note names takes its own; a note
that tells everyone else their verdict adds one example for them.
The clauses are weighed by the shipped role model, so retrain after retraining that.
Deterministic: the same labelled sets give the same file. Held-out sets are never loaded.
Needs the `train` extra (scikit-learn).

.venv/bin/python -m bot.classify.train.audiences           # write the model file
.venv/bin/python -m bot.classify.train.audiences --check   # exit 1 when the file is stale
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.classify.audience_model import MODEL_PATH, OTHERS, AudienceModel, attend, pair_features
from bot.classify.role_model import RoleModel
from bot.classify.role_model import load_model as load_role_model
from bot.classify.text import normalise
from bot.classify.train.labelled import Labelled, development_notes
from bot.classify.train.model_files import (
    VERDICT_CLASSES,
    fit_softmax,
    softmax_predictions,
    write_or_check,
)
from bot.domain import Verdict

CLASSES = VERDICT_CLASSES
C = 5.0  # inverse L2 strength, chosen on the validation sets
MIN_ROWS = 3  # a feature seen in fewer training rows is dropped
PRUNE = 0.1  # weights whose largest magnitude is below this are left out of the file
DIGITS = 3


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


def main(argv: list[str] | None = None) -> int:
    rows, labels = examples(development_notes(), load_role_model())
    return write_or_check(
        argv,
        __doc__,
        MODEL_PATH,
        lambda: fit(rows, labels),
        AudienceModel.from_json,
        lambda model: softmax_predictions(model, rows),
        "python -m bot.classify.train.audiences",
    )


if __name__ == "__main__":
    raise SystemExit(main())
