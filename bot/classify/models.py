"""The learned models beside the rules: logistic regressions over a note's `text.features`,
each trained from every labelled development set by its script in `train/` (deterministic),
shipped as a file in `data/` and loaded once (bot/classify/README.md: "The role model", "The
verdict model", "The audience model").

Roles: writers the rules have never read name the same things in other words. `RoleModel`
reads the title and the paragraph, the title's features marked apart ("t:kernel");
`blend_roles` decides the roles together with the rules.

Verdicts: writers say "read this closely" in more ways than any phrase table holds.
`VerdictModel` reads the paragraph; `blend_verdict` decides between it and the rules with a
small learned `BlendModel` (trained by `train/blend.py` on readings of notes the model was
not trained on): never deep on weak evidence, and low confidence below `verdict_sure_min`.

Audiences: "写 kernel 的同学得逐行看，做量化的扫一眼就行" gives two groups two verdicts, and
writers name groups in words the rules' audience table has never read ("whoever owns the
Dockerfile", "搞 EP 的"). `attend` has the role model read each clause on its own; for one
role, `AudienceModel` weighs the note's features by each clause's share of that role (and
half that for its neighbours, where the verdict often sits: "对做量化的同学来说，不用细看").
Everyone else is one more group (`OTHERS`). `refine` gives a role its own verdict only where
the rules told its readers nothing and the model is fairly sure of a verdict other than the
main one. Retrain it after the role model changes.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import math
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Self

from bot.classify.cues import EVEN
from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import features, read_clauses, squared_counts
from bot.domain import Classification, Confidence, Verdict

FORMAT = 1
_DATA = Path(__file__).parent / "data"
ROLE_MODEL_PATH = _DATA / "role_model.json.gz"
VERDICT_MODEL_PATH = _DATA / "verdict_model.json.gz"
BLEND_PATH = _DATA / "verdict_blend.json"
AUDIENCE_MODEL_PATH = _DATA / "audience_model.json.gz"


def model_text(path: Path) -> str:
    """A model file's JSON text (the large ones ship gzipped: `.json.gz`)."""
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")


def _from_json(raw: str, kind: str) -> tuple[Any, tuple[float, ...], dict[str, tuple[float, ...]]]:
    """A model file's body, intercept and weights (written by `train/model_files.py`)."""
    body = json.loads(raw)
    if body.get("format") != FORMAT:
        raise ValueError(f"{kind}: file format {body.get('format')!r}, expected {FORMAT}")
    weights = {str(g): tuple(float(x) for x in w) for g, w in body["weights"].items()}
    return body, tuple(float(x) for x in body["intercept"]), weights


# --------------------------------------------------------------------------- the role model

TITLE_MARK = "t:"


def column_sums(rows: list[tuple[float, ...]], width: int) -> list[float]:
    """The sums of the first `width` columns of `rows`, each added in order (as `sum` adds
    it, so the same figures as a sum over the features one by one)."""
    if not rows:
        return [0.0] * width
    return list(map(sum, itertools.islice(zip(*rows, strict=True), width)))


@dataclass(frozen=True)
class RoleModel:
    """One-vs-rest logistic regressions over l2-normalised feature counts."""

    roles: tuple[str, ...]
    intercept: tuple[float, ...]
    weights: dict[str, tuple[float, ...]]  # feature -> one weight per role

    def proba(self, title: str, text: str) -> dict[str, float]:
        """The probability of each role for a normalised, lower-cased title and paragraph."""
        return self.proba_of(title, features(text))

    @functools.cached_property
    def _title_weights(self) -> dict[str, tuple[float, ...]]:
        size = len(TITLE_MARK)
        return {g[size:]: w for g, w in self.weights.items() if g.startswith(TITLE_MARK)}

    def proba_of(
        self,
        title: str,
        paragraph_grams: list[str],
        paragraph_squares: int | None = None,
        totals: list[float] | None = None,
    ) -> dict[str, float]:
        """`proba` given the paragraph's `features` and, if known, their `squared_counts` and
        the `column_sums` of their weights. The title's features count as features of their
        own ("t:" + feature), each `title_repeat` times (as `train/roles.py` reads a note)."""
        title_grams = features(title)
        if paragraph_squares is None:
            paragraph_squares = squared_counts(paragraph_grams)
        # a marked title feature counts T.title_repeat times its count in the title
        squares = paragraph_squares + T.title_repeat**2 * squared_counts(title_grams)
        if totals is None:
            rows = list(filter(None, map(self.weights.get, paragraph_grams)))
            totals = column_sums(rows, len(self.roles))
        # the title's weights added on to the paragraph's, in the order training reads them
        rows = list(filter(None, map(self._title_weights.get, title_grams))) * T.title_repeat
        if rows:
            totals = list(map(sum, zip(*rows, strict=True), totals))
        return self.proba_of_totals(totals, math.sqrt(squares) or 1.0)

    def proba_of_totals(self, totals: list[float], norm: float) -> dict[str, float]:
        """Each role's probability given the `column_sums` of a note's (or clause's) weights
        and the l2 norm of its feature counts (extra columns are not read)."""
        exp = math.exp
        return {
            role: 1.0 / (1.0 + exp(-(b + total / norm)))
            for role, b, total in zip(self.roles, self.intercept, totals, strict=False)
        }

    @classmethod
    def from_json(cls, raw: str) -> RoleModel:
        body, intercept, weights = _from_json(raw, cls.__name__)
        roles = tuple(str(r) for r in body["roles"])
        if any(len(w) != len(roles) for w in weights.values()):
            raise ValueError("role model: every feature needs one weight per role")
        return cls(roles=roles, intercept=intercept, weights=weights)


@functools.cache
def load_role_model(path: Path = ROLE_MODEL_PATH) -> RoleModel:
    return RoleModel.from_json(model_text(path))


def blend_roles(
    rules: Classification,
    proba: dict[str, float],
    thresholds: tuple[float, float] = (T.role_keep_min, T.role_add_min),
    base_rates: dict[str, float] | None = None,
) -> Classification:
    """The rules' classification with its roles decided together with the model.

    The model drops a role only when it is fairly sure of some role: a note it knows too few
    words of says little against the rules. Roles the model does not know (a team's own
    roles) are left to the rules. A note the rules find no role for gets the model's closest;
    when the model would keep none either, its order comes from words that show no role
    ("use", "fix"), and the closest is the commonest reader (`base_rates`: the model's
    reading of a note with no words).
    """

    def stays(role: str) -> bool:
        if proba.get(role, 1.0) >= drop_min:
            return True
        told = rules.role_verdicts.get(role)  # the note tells this role's readers to read it
        return told is not None and told is not Verdict.SKIP

    def joins(role: str) -> bool:  # unless the note tells this role's readers to skip it
        if proba[role] < add_min or role in rules.roles:
            return False
        return rules.verdict_for(role) is not Verdict.SKIP or rules.verdict is Verdict.SKIP

    keep_min, add_min = thresholds
    drop_min = keep_min if max(proba.values(), default=0.0) >= add_min else 0.0
    added = sorted(filter(joins, proba), key=lambda r: (-proba[r], r))
    roles = tuple([r for r in rules.roles if stays(r)] + added)
    if not roles:  # the rules' role the model likes best; none: the model's closest
        closest = proba
        if not rules.roles and base_rates and max(proba.values(), default=0.0) < keep_min:
            closest = {r: base_rates[r] for r in proba}
        roles = (max(rules.roles or sorted(closest), key=lambda r: closest.get(r, 0.0)),)
    if roles == rules.roles:
        return rules
    return replace(rules, roles=roles, primary_role=roles[0])


# --------------------------------------------------------------------------- verdicts


def packed(weights: tuple[float, ...]) -> complex:
    """A feature's three verdict weights as one complex number, relative to the second.

    A softmax does not change when the same amount is added to every class, so three
    weights carry two numbers of information: (w0 - w1) + (w2 - w1)j. Summing complex
    numbers runs in C, which keeps scoring a note cheap.
    """
    return complex(weights[0] - weights[1], weights[2] - weights[1])


def _likeliest(proba: dict[Verdict, float]) -> Verdict:
    return max(proba, key=lambda v: (proba[v], -v.rank))


@dataclass(frozen=True)
class VerdictWeights:
    """A multinomial logistic regression over the three verdicts."""

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

    @classmethod
    def from_json(cls, raw: str) -> Self:
        body, intercept, weights = _from_json(raw, cls.__name__)
        classes = tuple(Verdict(v) for v in body["classes"])
        return cls(classes=classes, intercept=intercept, weights=weights)


@dataclass(frozen=True)
class Reading:
    """The verdict model's probabilities for one note, and whether the note is short."""

    proba: dict[Verdict, float]
    short: bool = False


@dataclass(frozen=True)
class VerdictModel(VerdictWeights):
    """The verdict of a whole note, over its l2-normalised feature counts."""

    def proba(self, text: str) -> Reading:
        """The probability of each verdict for a normalised, lower-cased paragraph."""
        return self.proba_of(features(text))

    def proba_of(
        self, grams: list[str], squares: int | None = None, total: complex | None = None
    ) -> Reading:
        """`proba` of a paragraph given its `features` and, if known, their `squared_counts`
        and the sum of their `packed` weights."""
        if squares is None:
            squares = squared_counts(grams)
        if total is None:
            total = sum(map(self._packed.get, grams, itertools.repeat(0j)), 0j)
        norm = math.sqrt(squares) or 1.0
        return Reading(self.softmax(total / norm), short=len(grams) < T.short_features)


@functools.cache
def load_verdict_model(path: Path = VERDICT_MODEL_PATH) -> VerdictModel:
    return VerdictModel.from_json(model_text(path))


@dataclass(frozen=True)
class BlendModel(VerdictWeights):
    """The main verdict from the rules' reading and the model's, over `blend_features`."""


@functools.cache
def load_blend(path: Path = BLEND_PATH) -> BlendModel:
    return BlendModel.from_json(model_text(path))


def blend_features(rules: Classification, reading: Reading) -> dict[str, float]:
    """What the blend reads of a note: the rules' verdict and whether they are sure of it,
    the model's log-probability of each verdict and of the rules' verdict, and whether the
    note is short."""
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


def blend_verdict(
    rules: Classification, reading: Reading, model: BlendModel | None = None
) -> Classification:
    """The rules' classification with the main verdict decided together with the model."""
    if reading.short and rules.verdict_confidence is Confidence.HIGH:
        return rules  # a sentence or so: too few words for the model to weigh against them
    proba = (model or load_blend()).row_proba(blend_features(rules, reading))
    choice = _likeliest(proba)
    p = proba[choice]
    if reading.short:
        # a sentence or so, and no verdict the rules are sure of: little evidence either way
        if choice is Verdict.DEEP or p < T.verdict_sure_min:
            return rules
        return _with_verdict(rules, choice, Confidence.LOW)
    if choice is Verdict.DEEP and p < T.deep_min:
        return _with_verdict(rules, Verdict.SKIM, Confidence.LOW)  # never deep on weak evidence
    confidence = Confidence.HIGH if p >= T.verdict_sure_min else Confidence.LOW
    if choice is rules.verdict and confidence is rules.verdict_confidence:
        return rules
    return _with_verdict(rules, choice, confidence)


def _with_verdict(
    rules: Classification, verdict: Verdict, confidence: Confidence
) -> Classification:
    role_verdicts = {r: v for r, v in rules.role_verdicts.items() if v is not verdict}
    return replace(
        rules, verdict=verdict, role_verdicts=role_verdicts, verdict_confidence=confidence
    )


# --------------------------------------------------------------------------- audiences

MARKS = ("a:", "n:", "p:")
MOST = "most"
_EVEN_TAIL = re.compile(r"\s*[也都亦]")
# Everyone else, read like one more group: the clauses that speak of the rest of the readers
# ("everyone else", "the rest of us", "其他人", "其余读者") take its share.
OTHERS = "*others"
# (every alternative starts with a character, "e(?<!\we)" being "\be": a fast scan)
_OTHERS = re.compile(
    r"e(?<!\we)(?:veryone|verybody)\s+else\b|a(?<!\wa)(?:nyone|nybody)\s+else\b"
    r"|n(?<!\wn)(?:o\s?one|o-one|obody)\s+else\b"
    r"|t(?<!\wt)he\s+rest\s+of\s+(?:us|you|them|the\s+(?:team|org|company|group|readers))\b"
    r"|t(?<!\wt)he\s+rest\b(?!\s+of\b)|o(?<!\wo)thers\b|a(?<!\wa)ll\s+other\b"
    r"|o(?<!\wo)ther\s+(?:readers|teams?|folks|people|groups|engineers|platforms?)\b"
    r"|m(?<!\wm)ost\s+(?:people|readers|folks|engineers|of\s+us|of\s+you|of\s+the\s+team)\b"
    r"|其[他它余](?:的)?(?:人|同学|读者|团队|方向|组|各位|朋友|同事|平台|工程师)"
    r"|别的(?:人|组|团队|同学|方向)|别人|剩下的(?:人|同学)|大多数人|多数人|大部分人|旁人"
)


@dataclass(frozen=True)
class Attention:
    """A note read clause by clause: each clause's features, the l2 norm of their counts
    and the probability the role model gives each role for that clause alone."""

    grams: tuple[list[str], ...]
    norms: tuple[float, ...]
    roles: tuple[dict[str, float], ...]
    _most: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    def most(self, role: str) -> float:
        """The largest probability any clause gives `role`."""
        found = self._most.get(role)
        if found is None:
            found = self._most[role] = max((p.get(role, 0.0) for p in self.roles), default=0.0)
        return found


def attend(
    text: str,
    role_model: RoleModel,
    read: tuple[list[str], list[list[str]], list[list[float]]] | None = None,
) -> Attention:
    """Read a normalised, lower-cased paragraph clause by clause, given (if known) its
    clauses, their features (`read_clauses`) and the `column_sums` of their role weights."""
    if read is None:
        parts, grams = read_clauses(text)[:2]
        rows = (list(filter(None, map(role_model.weights.get, g))) for g in grams)
        read = parts, grams, [column_sums(r, len(role_model.roles)) for r in rows]
    parts, grams, totals = read
    norms = tuple([math.sqrt(s) or 1.0 for s in map(squared_counts, grams)])
    roles = tuple(map(role_model.proba_of_totals, totals, norms))
    others = _OTHERS.search(text) is not None
    even = False
    # (most notes have no clause that speaks of everyone else or stands for everyone)
    for i, (part, proba) in enumerate(zip(parts, roles, strict=True)):
        if not others and not even and not any(map(EVEN.match, parts[i:])):
            break
        # "even ROCm build maintainers only need the summary", "即便是维护构建的同学，也只需…":
        # the closest readers stand for everyone, so the clause (and the "也" clause that
        # finishes it) names no group of its own
        even = EVEN.match(part) is not None or (even and _EVEN_TAIL.match(part) is not None)
        if even:
            proba.update(dict.fromkeys(proba, 0.0))
        if others:
            # "else" needs someone named first: a note that opens with everyone else sets
            # nobody apart
            proba[OTHERS] = 1.0 if i and _OTHERS.search(part) else 0.0
    # every clause's probabilities are of the same roles: each one's largest, found in C
    values = zip(*map(dict.values, roles), strict=True)
    most = dict(zip(roles[0], map(max, values), strict=True)) if roles else {}
    return Attention(tuple(grams), norms, roles, most)


def spread(attention: Attention, role: str) -> Iterator[tuple[str, int, float]]:
    """(mark, clause, weight): how much each clause counts for `role` (its share of the
    role, none under `min_share`, and its neighbours'), and as what."""
    shares = [p.get(role, 0.0) for p in attention.roles]
    total = sum(shares) + 1e-6
    last = len(shares) - 1
    for i, share in enumerate(shares):
        if (weight := share / total) >= T.min_share:
            yield "a:", i, weight
            if i < last:
                yield "n:", i + 1, weight * T.neighbour
            if i > 0:
                yield "p:", i - 1, weight * T.neighbour


@dataclass(frozen=True)
class AudienceModel(VerdictWeights):
    """The verdict for one role, over the note's features weighed by how much each clause
    speaks of it: each clause's l2-normalised counts times its share, marked by where the
    clause stands (MARKS: "a:" the clause itself, "n:" the next, "p:" the previous); and
    the largest share (MOST). `train/audiences.py` builds these rows (`pair_features`)."""

    @functools.cached_property
    def _by_gram(self) -> dict[str, tuple[float, ...]]:
        """Each feature's `packed` weights under each of MARKS, as (real, imaginary) pairs
        (zeros under a mark it has none): one look-up a feature for all three."""
        pairs: dict[str, list[float]] = {}
        for key, w in self.weights.items():
            if key[:2] in MARKS:
                at, v = 2 * MARKS.index(key[:2]), packed(w)
                pairs.setdefault(key[2:], [0.0] * 2 * len(MARKS))[at : at + 2] = v.real, v.imag
        return {g: tuple(p) for g, p in pairs.items()}

    def reader(self, attention: Attention) -> Callable[[str], dict[Verdict, float]]:
        """The probability of each verdict for each role of one note: each clause's sums
        are found once, when a role first weighs that clause."""
        get = self._by_gram.get
        sums: dict[int, list[float]] = {}  # clause -> its sums, in `_by_gram` order

        def clause_sum(mark: str, i: int) -> complex:
            found = sums.get(i)
            if found is None:
                rows = list(filter(None, map(get, attention.grams[i])))
                found = sums[i] = list(map(sum, zip(*rows, strict=True))) or [0.0] * 2 * len(MARKS)
            at = 2 * MARKS.index(mark)
            return complex(found[at], found[at + 1]) / attention.norms[i]

        most_w = packed(self.weights.get(MOST, (0.0, 0.0, 0.0)))

        def read(role: str) -> dict[Verdict, float]:
            total = sum((w * clause_sum(mark, i) for mark, i, w in spread(attention, role)), 0j)
            return self.softmax(total + attention.most(role) * most_w)

        return read

    def refine(
        self, got: Classification, attention: Attention, known: Collection[str]
    ) -> Classification:
        """`got` with a verdict of its own for each group the note sets apart: only roles of
        `known` (the role model's), never the primary role, and never a role whose readers
        the rules already told something."""
        told = dict(got.role_verdicts)
        read: Callable[[str], dict[Verdict, float]] | None = None
        rest = [r for r in known if r not in got.roles and r not in got.role_verdicts]
        if rest and attention.most(OTHERS):
            # the note speaks of everyone else, and the rules told them nothing
            read = self.reader(attention)
            verdict = self._sure(read(OTHERS))
            if verdict is not None and verdict is not got.verdict:
                told.update(dict.fromkeys(rest, verdict))
        for role in known:
            if role == got.primary_role or role in got.role_verdicts:
                continue
            most = attention.most(role)
            if not most or (role not in got.roles and most < T.candidate_min):
                continue
            if read is None:
                read = self.reader(attention)
            verdict = self._sure(read(role))
            if verdict is not None and verdict is not got.verdict:
                told[role] = verdict
            elif verdict is got.verdict:
                told.pop(role, None)  # named apart from everyone else, with the main verdict
        return got if told == got.role_verdicts else replace(got, role_verdicts=told)

    @staticmethod
    def _sure(proba: dict[Verdict, float]) -> Verdict | None:
        """The likeliest verdict when the model is at least `audience_sure_min` sure of it."""
        verdict = _likeliest(proba)
        return verdict if proba[verdict] >= T.audience_sure_min else None


@functools.cache
def load_audience_model(path: Path = AUDIENCE_MODEL_PATH) -> AudienceModel:
    return AudienceModel.from_json(model_text(path))
