"""A learned audience model: the verdict a note gives one group of readers.

"写 kernel 的同学得逐行看，做量化的扫一眼就行": two groups, two verdicts. The rules find a
group by the words their audience table knows; writers name groups in words it has never
read ("whoever owns the Dockerfile", "搞 EP 的"). This model reads a note clause by clause.
The role model, applied to each clause on its own, says how much that clause speaks of
each role; for one role, the note's features are weighed by that share (the clause itself,
and at half weight its neighbours, where the verdict often sits: "对做量化的同学来说，不用细看").
A logistic regression over those weighted features gives that role's verdict. It is
trained from every labelled development set by `bot/classify/train/audiences.py`
(deterministic; retrain after the role model changes) and shipped as
`bot/classify/data/audience_model.json`, loaded once.

Everyone else is read as one more group (`OTHERS`), its share held by the clauses that
speak of the rest of the readers ("其他人 pass", "the rest of us can ignore it").

`refine` gives a role its own verdict only where the rules told its readers nothing, the
role is not the note's primary one and the model is fairly sure of a verdict that differs
from the main one; everyone else likewise, when the rules told them nothing. Thresholds
were chosen on the validation sets.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

from bot.classify.cues import EVEN
from bot.classify.role_model import RoleModel, column_sums
from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import read_clauses, squared_counts
from bot.classify.verdict_model import VerdictWeights, packed
from bot.domain import Classification, Verdict

__all__ = [
    "MODEL_PATH",
    "Attention",
    "AudienceModel",
    "attend",
    "load_model",
    "pair_features",
]

MODEL_PATH = Path(__file__).parent / "data" / "audience_model.json"

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
        """The largest probability any clause gives `role` (found once per role)."""
        found = self._most.get(role)
        if found is None:
            found = self._most[role] = max((p.get(role, 0.0) for p in self.roles), default=0.0)
        return found

    def weights(self, role: str) -> list[float]:
        """Each clause's share of `role` (shares under `min_share` count as none)."""
        shares = [p.get(role, 0.0) for p in self.roles]
        total = sum(shares) + 1e-6
        return [w if (w := share / total) >= T.min_share else 0.0 for share in shares]


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


def _spread(attention: Attention, role: str) -> Iterator[tuple[str, int, float]]:
    """(mark, clause, weight): how much each clause counts for `role`, and as what."""
    last = len(attention.grams) - 1
    for i, weight in enumerate(attention.weights(role)):
        if weight:
            yield "a:", i, weight
            if i < last:
                yield "n:", i + 1, weight * T.neighbour
            if i > 0:
                yield "p:", i - 1, weight * T.neighbour


def pair_features(attention: Attention, role: str) -> dict[str, float]:
    """The note's features weighed by how much each clause speaks of `role`: each clause's
    l2-normalised counts times its share, marked by where the clause stands ("a:" the
    clause itself, "n:" the next, "p:" the previous); and the largest share ("most")."""
    out: dict[str, float] = {}
    for mark, i, weight in _spread(attention, role):
        unit = weight / attention.norms[i]
        for gram in attention.grams[i]:
            key = mark + gram
            out[key] = out.get(key, 0.0) + unit
    out[MOST] = attention.most(role)
    return out


@dataclass(frozen=True)
class AudienceModel(VerdictWeights):
    """The verdict for one role, over that role's `pair_features` (`row_proba`)."""

    KIND: ClassVar[str] = "audience"

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
        """`proba` of each role of one note, each clause's sums found once, when a role first
        weighs that clause: the same figures as `row_proba(pair_features(attention, role))`,
        faster."""
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
            total = sum((w * clause_sum(mark, i) for mark, i, w in _spread(attention, role)), 0j)
            return self.softmax(total + attention.most(role) * most_w)

        return read

    def refine(
        self, got: Classification, attention: Attention, known: Collection[str]
    ) -> Classification:
        """`got` with a verdict of its own for each group the note sets apart.

        Only roles of `known` (the role model's), never the primary role, and never a
        role whose readers the rules already told something.
        """
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
        """The most likely verdict when the model is at least `audience_sure_min` sure of it."""
        verdict = max(proba, key=lambda v: (proba[v], -v.rank))
        return verdict if proba[verdict] >= T.audience_sure_min else None


@functools.cache
def load_model(path: Path = MODEL_PATH) -> AudienceModel:
    """The shipped model (read once per process)."""
    return AudienceModel.from_json(path.read_text(encoding="utf-8"))
