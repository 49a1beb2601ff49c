"""What the shipped models are fitted from, as digests `training.json` records: when one
differs from what a checkout holds now, the model files are stale and need retraining.

- the labelled sets: every development set's files (the notes and their labels);
- the rule data: every phrase table and role file in `bot/classify/data` (`*.toml`);
- the rules' readings: what the blend reads of each development note besides the verdict
  model's probabilities (the rules' verdict, whether they are sure of it, whether the note
  is short), so that a change of the rules' code or thresholds that reads a note otherwise
  shows, and one that reads every note alike (a refactor, a comment) does not;
- the features: the rows the role, verdict and audience models are fitted on (the text
  pipeline's features, the title's weight, the clauses and their shares of each role).

The training settings (each model's regularisation, pruning and rounding) are recorded
beside them. Computing the digests takes a few seconds; refitting takes minutes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bot.classify import Classifier
from bot.classify.models import RoleModel
from bot.classify.taxonomy import load_taxonomy
from bot.classify.train import audiences, blend, roles, verdicts
from bot.classify.train.labelled import DEV_SETS, development_notes, set_files

DATA = Path(__file__).resolve().parent.parent / "data"


def labelled_sets_digest() -> str:
    """sha256 over every development set's files: what the models are trained on."""
    digest = hashlib.sha256()
    for name in DEV_SETS:
        for path in set_files(name):
            digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()


def rule_data_files() -> list[Path]:
    """The data files the rules read (phrase tables, roles)."""
    return sorted(DATA.glob("*.toml"))


def rule_data_digest() -> str:
    digest = hashlib.sha256()
    for path in rule_data_files():
        digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()


def rules_readings_digest() -> str:
    """sha256 of what the blend reads of every development note besides the model."""
    rules = Classifier(load_taxonomy(), audience_model=False)
    digest = hashlib.sha256()
    for note in development_notes():
        verdict, confidence, short = blend.rules_reading(rules, note)
        digest.update(f"{verdict.value} {confidence.value} {short:d}\n".encode())
    return digest.hexdigest()


def features_digest(role_model: RoleModel) -> str:
    """sha256 of the rows the role, verdict and audience models are fitted on (the audience
    model's read through `role_model`, as training reads them)."""
    notes = development_notes()
    digest = hashlib.sha256()
    for note in notes:
        digest.update(_row(roles.vector(note.title, note.paragraph)))
        digest.update(_row(verdicts.vector(note.paragraph)))
    rows, labels = audiences.examples(notes, role_model)
    for row, label in zip(rows, labels, strict=True):
        digest.update(_row(row) + str(label).encode())
    return digest.hexdigest()


def _row(row: dict[str, float]) -> bytes:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def fitted_from(role_model: RoleModel) -> dict[str, str]:
    """The digests of what the models are fitted from (`role_model` weighs the clauses the
    audience model reads: the one trained with it, or the shipped one)."""
    return {
        "labelled sets": labelled_sets_digest(),
        "rule data": rule_data_digest(),
        "rules' readings": rules_readings_digest(),
        "features": features_digest(role_model),
    }


def training_settings() -> dict[str, dict[str, float]]:
    """Each model's training settings (regularisation, pruning, rounding, folds)."""
    return {
        "roles": {"C": roles.C, "min_notes": roles.MIN_NOTES, "prune": roles.PRUNE,
                  "digits": roles.DIGITS},
        "verdicts": {"C": verdicts.C, "min_notes": verdicts.MIN_NOTES, "prune": verdicts.PRUNE,
                     "digits": verdicts.DIGITS},
        "blend": {"C": blend.C, "folds": blend.FOLDS, "digits": blend.DIGITS},
        "audiences": {"C": audiences.C, "min_rows": audiences.MIN_ROWS,
                      "prune": audiences.PRUNE, "digits": audiences.DIGITS},
    }  # fmt: skip
