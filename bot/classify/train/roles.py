"""Train the role model (`bot/classify/data/role_model.json.gz`) from every development set.

Deterministic: the same labelled sets give the same file. Held-out sets are never loaded.
Needs the `train` extra (scikit-learn); trained by `python -m bot.classify.train`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from bot.classify.models import TITLE_MARK, RoleModel
from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import features, normalise
from bot.classify.train.labelled import Labelled

C = 8.0  # inverse L2 strength, chosen by leave-one-set-out (tests/bench/role_loso.py)
MIN_NOTES = 2  # a feature seen in fewer training notes is dropped
PRUNE = 0.1  # weights of smaller magnitude are zero; features with none left are dropped
DIGITS = 2


def note_features(title: str, grams: list[str]) -> list[str]:
    """The features of a note: its paragraph's `features` and its normalised, lower-cased
    title's, marked (`RoleModel.proba_of` reads a note so without building them)."""
    marked = [TITLE_MARK + g for g in features(title)]
    return grams + marked * T.title_repeat


def vector(title: str, paragraph: str) -> dict[str, float]:
    grams = note_features(normalise(title).lower(), features(normalise(paragraph.strip()).lower()))
    counts = Counter(grams)
    norm = math.sqrt(sum(c * c for c in counts.values())) or 1.0
    return {g: c / norm for g, c in counts.items()}


def labelled_roles(notes: Iterable[Labelled], slugs: Iterable[str]) -> tuple[str, ...]:
    """The roles of `slugs` that some note is labelled with, in their order: the model can
    learn only those (a role with no labelled notes is left to the rules)."""
    found = {role for note in notes for role in note.roles}
    return tuple(slug for slug in slugs if slug in found)


def train(notes: Iterable[Labelled], roles: tuple[str, ...]) -> RoleModel:
    """Fit one regression per role on `notes`; a note's `maybe` roles teach nothing."""
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    notes = list(notes)
    rows = [vector(n.title, n.paragraph) for n in notes]
    seen: Counter[str] = Counter(g for row in rows for g in row)
    rows = [{g: v for g, v in row.items() if seen[g] >= MIN_NOTES} for row in rows]
    vectorizer = DictVectorizer(sort=True)
    x = vectorizer.fit_transform(rows).tocsr()
    x.indices = x.indices.astype("int32")
    x.indptr = x.indptr.astype("int32")
    columns = []
    intercept = []
    for role in roles:
        y = [int(role in n.roles) for n in notes]
        weight = [0.0 if role in n.maybe and role not in n.roles else 1.0 for n in notes]
        fitted = LogisticRegression(C=C, solver="liblinear", intercept_scaling=10.0)
        fitted.fit(x, y, sample_weight=weight)
        columns.append(fitted.coef_[0])
        intercept.append(round(float(fitted.intercept_[0]), DIGITS))
    weights: dict[str, tuple[float, ...]] = {}
    for j, gram in enumerate(vectorizer.get_feature_names_out()):
        w = tuple(_pruned(float(col[j])) for col in columns)
        if any(w):
            weights[str(gram)] = w
    return RoleModel(roles=roles, intercept=tuple(intercept), weights=weights)


def _pruned(weight: float) -> float:
    return round(weight, DIGITS) if abs(weight) >= PRUNE else 0.0


def predictions(model: RoleModel, notes: Iterable[Labelled]) -> list[tuple[float, float]]:
    """Each role's probability for each note, as (yes, no): one decision per note and role."""
    found: list[tuple[float, float]] = []
    for note in notes:
        title = normalise(note.title).lower()
        proba = model.proba(title, normalise(note.paragraph.strip()).lower())
        found += [(p, 1.0 - p) for p in proba.values()]
    return found
