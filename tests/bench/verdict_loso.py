"""Leave-one-set-out comparison of verdict models on the development sets.

For each development set, the learned models are trained on the other sets and scored on
the one left out; the rules are scored as they are (they were written while reading all
development sets, so their row is optimistic, see the README). Models compared:

- rules: the classifier as shipped (cues by meaning, negation, contrast, audiences);
- lr: multinomial logistic regression on character 1-3-grams of title and paragraph plus
  cue features (counts of each meaning class, negated or not, first and last sentence),
  trained deterministically (full-batch gradient descent, fixed epochs, L2);
- lr-text: the same regression without the rules' answer among its features;
- hybrid: the rules, with the regression deciding only the notes the rules mark low
  confidence, and never choosing deep there.

Held-out sets are never loaded here.

.venv/bin/python -m tests.bench.verdict_loso
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace

from bot.classify import _normalise, build_classifier
from bot.domain import Classification, Confidence, Verdict
from bot.taxonomy import load_taxonomy
from bot.verdicts import find_cues
from tests.labelled import DEV_SETS, Labelled, load_set, score

CLASSES = (Verdict.DEEP, Verdict.SKIM, Verdict.SKIP)
EPOCHS = 300
RATE = 0.5
L2 = 1e-3
MIN_COUNT = 2  # n-grams seen fewer times in training are dropped
Features = defaultdict[str, float]


def features(label: Labelled, rule: Classification, use_rule: bool) -> Features:
    """Sparse features of one note: n-grams, cue classes and the rules' own answer."""
    text = _normalise(label.paragraph).lower()
    out: Features = defaultdict(float)
    padded = f"^{text}$"
    for n in (1, 2, 3):
        for i in range(len(padded) - n + 1):
            out[f"g{n}:{padded[i : i + n]}"] += 1
    total = sum(out.values()) or 1
    for key in list(out):
        out[key] = out[key] / math.sqrt(total)
    cues = list(find_cues(text))
    for i, cue in enumerate(cues):
        tag = f"cue:{cue.meaning.value}:{'neg' if cue.negated else 'pos'}"
        out[tag] += 1.0
        if i == 0:
            out["first:" + cue.verdict.value] += 1.0
        if i == len(cues) - 1:
            out["last:" + cue.verdict.value] += 1.0
    if use_rule:
        out["rule:" + rule.verdict.value] += 1.0
        out["rule-confidence:" + rule.verdict_confidence.value] += 1.0
    out["bias"] = 1.0
    return out


class Logistic:
    """Multinomial logistic regression over sparse features (plain Python)."""

    def __init__(self) -> None:
        self.weights: dict[str, list[float]] = {}

    def fit(self, rows: list[Features], targets: list[int]) -> Logistic:
        seen: Counter[str] = Counter(k for row in rows for k in row)
        vocab = sorted(k for k, c in seen.items() if c >= MIN_COUNT or not k.startswith("g"))
        index = {k: i for i, k in enumerate(vocab)}
        data = [[(index[k], v) for k, v in row.items() if k in index] for row in rows]
        w = [[0.0] * len(CLASSES) for _ in vocab]
        n = len(data)
        for _ in range(EPOCHS):
            grad = [[0.0] * len(CLASSES) for _ in vocab]
            for x, y in zip(data, targets, strict=True):
                probs = _softmax([sum(w[i][c] * v for i, v in x) for c in range(len(CLASSES))])
                for c in range(len(CLASSES)):
                    err = probs[c] - (1.0 if c == y else 0.0)
                    if err:
                        for i, v in x:
                            grad[i][c] += err * v
            for i in range(len(vocab)):
                for c in range(len(CLASSES)):
                    w[i][c] -= RATE * (grad[i][c] / n + L2 * w[i][c])
        self.weights = {k: w[i] for k, i in index.items()}
        return self

    def proba(self, row: Features) -> list[float]:
        scores = [0.0] * len(CLASSES)
        for k, v in row.items():
            wk = self.weights.get(k)
            if wk is not None:
                for c in range(len(CLASSES)):
                    scores[c] += wk[c] * v
        return _softmax(scores)


def _softmax(scores: list[float]) -> list[float]:
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _predictor(
    model: Logistic,
    notes: list[Labelled],
    rules: list[Classification],
    hybrid: bool,
    use_rule: bool,
) -> Callable[[str, str], Classification]:
    by_title = {n.title: (n, r) for n, r in zip(notes, rules, strict=True)}

    def run(title: str, _paragraph: str) -> Classification:
        label, rule = by_title[title]
        if hybrid and rule.verdict_confidence is Confidence.HIGH:
            return rule
        probs = model.proba(features(label, rule, use_rule))
        order = sorted(range(len(CLASSES)), key=lambda c: -probs[c])
        choice = CLASSES[order[0]]
        if hybrid and choice is Verdict.DEEP:
            choice = CLASSES[order[1]]
        return replace(rule, verdict=choice)

    return run


def _known(answers: dict[str, Classification]) -> Callable[[str, str], Classification]:
    return lambda title, _paragraph: answers[title]


def main() -> None:
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    sets = {name: load_set(name) for name in DEV_SETS}
    rules = {
        name: [classifier.classify(n.title, n.paragraph) for n in notes]
        for name, notes in sets.items()
    }
    columns = ("rules", "lr", "lr-text", "hybrid")
    print("left out | notes | " + " | ".join(columns) + " | rules named-F1")
    right: Counter[str] = Counter()
    count = 0
    for held in DEV_SETS:
        train = [
            (n, r)
            for name in DEV_SETS
            if name != held
            for n, r in zip(sets[name], rules[name], strict=True)
        ]
        targets = [CLASSES.index(Verdict(n.verdict)) for n, _ in train]
        with_rule = Logistic().fit([features(n, r, True) for n, r in train], targets)
        text_only = Logistic().fit([features(n, r, False) for n, r in train], targets)
        notes, got = sets[held], rules[held]
        by_title = {n.title: r for n, r in zip(notes, got, strict=True)}
        scores = {
            "rules": score(notes, _known(by_title), taxonomy.slugs),
            "lr": score(notes, _predictor(with_rule, notes, got, False, True), taxonomy.slugs),
            "lr-text": score(
                notes, _predictor(text_only, notes, got, False, False), taxonomy.slugs
            ),
            "hybrid": score(notes, _predictor(with_rule, notes, got, True, True), taxonomy.slugs),
        }
        cells = " | ".join(f"{scores[c].verdict_accuracy:.3f}" for c in columns)
        print(f"{held:8} | {len(notes):5} | {cells} | {scores['rules'].named_macro_f1:.3f}")
        count += len(notes)
        for c in columns:
            right[c] += round(scores[c].verdict_accuracy * len(notes))
    print(f"{'all':8} | {count:5} | " + " | ".join(f"{right[c] / count:.3f}" for c in columns))


if __name__ == "__main__":
    main()
