"""The classifier's pipeline: normalise -> the rules -> the paragraph's features -> the role
and verdict models, each blended with the rules -> the audience model -> `Classification`.

A `Classifier` is built once per taxonomy (`build_classifier`) and is pure and deterministic.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import replace
from pathlib import Path

from bot.classify.models import (
    TITLE_MARK,
    AudienceModel,
    RoleModel,
    VerdictModel,
    attend,
    blend_roles,
    blend_verdict,
    load_audience_model,
    load_role_model,
    load_verdict_model,
    model_text,
    packed,
)
from bot.classify.rules import Rules
from bot.classify.taxonomy import Taxonomy
from bot.classify.text import normalise, read_clauses, squared_counts
from bot.domain import Classification, Confidence


class Classifier:
    """A taxonomy's rules and the shipped models; build with `build_classifier`."""

    def __init__(
        self,
        taxonomy: Taxonomy,
        *,
        audience_model: bool = True,
        off: frozenset[str] = frozenset(),
        models: tuple[VerdictModel, RoleModel, AudienceModel] | None = None,
    ) -> None:
        """For evaluation: `audience_model=False` leaves audience-specific verdicts to the
        rules, `off` leaves rule families out, `models` replaces the shipped models."""
        self.taxonomy = taxonomy
        self.slugs = taxonomy.slugs
        self.rules = Rules(taxonomy, off)
        verdicts, roles, audience = models or (load_verdict_model(), load_role_model(), None)
        self._model, self._role_model = verdicts, roles
        self._audience = (audience or load_audience_model()) if audience_model else None
        # Each paragraph feature's role weights, then its packed verdict weights (zeros where
        # a model does not know it): one look-up a feature for both models.
        self._width = width = len(self._role_model.roles)
        role_weights = self._role_model.weights.items()
        self._weights = {g: (*w, 0.0, 0.0) for g, w in role_weights if g[:2] != TITLE_MARK}
        for g, w in self._model.weights.items():
            v = packed(w)
            self._weights[g] = (*self._weights.get(g, (0.0,) * width)[:width], v.real, v.imag)
        # the roles the audience model may give a verdict of their own
        self._split_roles = tuple(r for r in self._role_model.roles if r in self.slugs)
        # A team's own roles are the rules' alone; the model speaks only for roles it knows.
        self._role_filter = (
            None if set(self._role_model.roles) <= set(self.slugs) else frozenset(self.slugs)
        )
        # what the role model gives a note with no words: each role's base rate
        self._base_rates = self._role_model.proba_of_totals([0.0] * width, 1.0)

    def classify(self, title: str, paragraph: str) -> Classification:
        """Roles and verdict from the rules, each decided together with its learned model."""
        display = paragraph.strip()
        text = normalise(display).lower()
        title_text = normalise(title).lower()
        by_rules = self.rules.classify(title_text, display, text)
        parts, clause_grams, pieces = read_clauses(text)
        grams, totals, sums = self.weigh(clause_grams, pieces)
        squares = squared_counts(grams)
        proba = self._role_model.proba_of(title_text, grams, squares, sums)
        if self._role_filter is not None:
            proba = {r: p for r, p in proba.items() if r in self._role_filter}
        reading = self._model.proba_of(grams, squares, complex(sums[-2], sums[-1]))
        no_role = not by_rules.roles  # none fits: the closest is a guess, and the note says so
        if no_role and not proba:  # ...and the model knows none of the roles: the first
            by_rules = replace(by_rules, roles=self.slugs[:1], primary_role=self.slugs[0])
        got = blend_verdict(blend_roles(by_rules, proba, base_rates=self._base_rates), reading)
        if no_role:
            # the closest role is the note's own reader, not "everyone else" it speaks of
            own = {r: v for r, v in got.role_verdicts.items() if r not in got.roles}
            got = replace(got, verdict_confidence=Confidence.LOW, role_verdicts=own)
        if self._audience is not None:
            attention = attend(text, self._role_model, (parts, clause_grams, totals))
            got = self._audience.refine(got, attention, self._split_roles)
        told = got.role_verdicts
        if len(told) < len(self.slugs) or all(v is got.verdict for v in told.values()):
            # only what differs from the main verdict, unless everyone else is told theirs
            told = {r: v for r, v in told.items() if v is not got.verdict}
        return got if told == got.role_verdicts else replace(got, role_verdicts=told)

    def weigh(
        self, clause_grams: list[list[str]], pieces: list[int | list[str]]
    ) -> tuple[list[str], list[list[float]], list[float]]:
        """The paragraph's features, each clause's sums of their role weights, and the
        paragraph's sums of their role and packed verdict weights, given `read_clauses`."""
        get, width = self._weights.get, self._width
        cols = [list(zip(*filter(None, map(get, g)), strict=True)) for g in clause_grams]
        totals: list[list[float]] = [
            list(map(sum, c[:width])) if c else [0.0] * width for c in cols
        ]
        grams: list[str] = []
        sums = [0.0] * (width + 2)
        for piece in pieces:  # the paragraph's sums go on from piece to piece, in order
            if isinstance(piece, int):
                grams += clause_grams[piece]
                piece_cols = cols[piece]
            else:
                grams += piece
                piece_cols = list(zip(*filter(None, map(get, piece)), strict=True))
            if piece_cols:
                sums = list(map(sum, piece_cols, sums))
        return grams, totals, sums

    def classify_by_rules(self, title: str, paragraph: str) -> Classification:
        """The classification by the rules alone (for evaluation and explanations): no role
        (and an empty primary role) when none fits, which `classify` fills with the role
        model's closest."""
        display = paragraph.strip()
        title_text = normalise(title).lower()
        return self.rules.classify(title_text, display, normalise(display).lower())

    def scores(self, title: str, paragraph: str) -> dict[str, float]:
        """Raw per-role evidence (title and paragraph hits only), for debugging."""
        return self.rules.scores(title, paragraph)


# Classifiers by their taxonomy's digest (its roles): immutable data under an explicit key,
# the oldest of _CACHE_SIZE dropped first.
_CACHE: dict[str, Classifier] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 8


def build_classifier(taxonomy: Taxonomy) -> Classifier:
    """The compiled classifier for `taxonomy` (built once per set of roles)."""
    found = _CACHE.get(taxonomy.digest)
    if found is None:
        found = Classifier(taxonomy)
        with _CACHE_LOCK:
            if len(_CACHE) >= _CACHE_SIZE:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[taxonomy.digest] = found
    return found


def classify(title: str, paragraph: str, taxonomy: Taxonomy) -> Classification:
    """Classify one note: its reader roles, primary role, verdict(s) and excerpt."""
    return build_classifier(taxonomy).classify(title, paragraph)


# Raise when a change of code alters what the classifier decides for some note (a test holds
# the outputs on the development sets to the version that produced them). The fingerprint
# is this version plus the roles and the model files, so an edit that decides nothing
# differently (a comment, a refactor) re-classifies nothing.
CLASSIFIER_VERSION = 12

# The data files whose content decides a classification (the fingerprint hashes them).
MODEL_FILES = (
    "data/verdict_model.json.gz",
    "data/verdict_blend.json",
    "data/role_model.json.gz",
    "data/audience_model.json.gz",
)


def classifier_fingerprint(taxonomy: Taxonomy) -> str:
    """The classifier's version, the roles (names, aliases, keywords, audience) and the model
    files: when it changes, stored notes were classified differently and are re-classified."""
    digest = hashlib.sha256(f"classifier {CLASSIFIER_VERSION}\n".encode())
    digest.update(repr(taxonomy.roles).encode("utf-8"))
    for name in MODEL_FILES:
        digest.update(model_text(Path(__file__).parent / name).encode("utf-8"))
    return digest.hexdigest()[:32]
