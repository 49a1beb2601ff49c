"""Leave-one-set-out comparison of role choices on the development sets.

For each development set the role model is trained on the other sets and scored on the
one left out, alone and blended with the rules; the rules are scored as they are (they
were written while reading every development set, so their column is optimistic). The
figure per column is the role F1 of every role, their mean over the named roles
(release-infra, moe-quant, multimodal) and the lowest role F1 of the set.

Held-out and validation sets are never loaded here.

.venv/bin/python -m tests.bench.role_loso [--jobs N] [--sets dev45,dev46]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from bot.classify import build_classifier
from bot.classify.models import blend_roles
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import features, normalise
from bot.classify.train.roles import labelled_roles, train
from bot.domain import Classification
from tests.labelled import DEV_SETS, NAMED_ROLES, load_set, score

# (role_keep_min, role_add_min) compared for the blend; the shipped pair is in
# bot/classify/settings.py
BLENDS = ((0.2, 0.4), (0.25, 0.4), (0.3, 0.4), (0.25, 0.5), (0.1, 0.5), (0.15, 0.6))
MODEL_ALONE = 0.4  # the model alone: every role at or above this probability
Probas = list[dict[str, float]]
Chooser = Callable[[Classification, dict[str, float]], Classification]


def _fold(held: str) -> tuple[str, Probas]:
    notes = [n for name in DEV_SETS if name != held for n in load_set(name)]
    model = train(notes, labelled_roles(notes, load_taxonomy(None).slugs))
    return held, [
        model.proba_of(normalise(n.title).lower(), features(normalise(n.paragraph).lower()))
        for n in load_set(held)
    ]


def _model_alone(rules: Classification, proba: dict[str, float]) -> Classification:
    order = sorted(proba, key=lambda r: (-proba[r], r))
    roles = tuple(r for r in order if proba[r] >= MODEL_ALONE) or (order[0],)
    return replace(rules, roles=roles, primary_role=roles[0])


def _blend(keep: float, add: float) -> Chooser:
    def run(rules: Classification, proba: dict[str, float]) -> Classification:
        return blend_roles(rules, proba, (keep, add))

    return run


def _known(answers: dict[str, Classification]) -> Callable[[str, str], Classification]:
    return lambda title, _paragraph: answers[title]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sets", help="comma-separated sets to leave out (default: all)")
    args = parser.parse_args()
    held_out = args.sets.split(",") if args.sets else list(DEV_SETS)
    if unknown := set(held_out) - set(DEV_SETS):
        parser.error(f"not development sets: {', '.join(sorted(unknown))}")
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    with ProcessPoolExecutor(args.jobs) as pool:
        probas = dict(pool.map(_fold, held_out))
    columns: dict[str, Chooser] = {
        "rules": lambda rules, _proba: rules,
        f"model@{MODEL_ALONE}": _model_alone,
        **{f"blend{k},{a}": _blend(k, a) for k, a in BLENDS},
    }
    print("left out | " + " | ".join(f"{c} named/min" for c in columns))
    named: dict[str, list[float]] = {c: [] for c in columns}
    lowest: dict[str, list[float]] = {c: [] for c in columns}
    per_role: dict[str, dict[str, list[float]]] = {c: {} for c in columns}
    for held in held_out:
        notes = load_set(held)
        texts = [(n.title, n.paragraph.strip()) for n in notes]
        rules = [
            classifier.rules.classify(normalise(t).lower(), p, normalise(p).lower())
            for t, p in texts
        ]
        cells = []
        for column, choose in columns.items():
            answers = {
                n.title: choose(r, p) for n, r, p in zip(notes, rules, probas[held], strict=True)
            }
            result = score(notes, _known(answers), taxonomy.slugs)
            named[column].append(result.named_macro_f1)
            lowest[column].append(min(result.role_f1.values()))
            for slug, f1 in result.role_f1.items():
                per_role[column].setdefault(slug, []).append(f1)
            cells.append(f"{result.named_macro_f1:.3f}/{min(result.role_f1.values()):.2f}")
        print(f"{held:8} | " + " | ".join(cells))
    print(
        "mean     | "
        + " | ".join(
            f"{statistics.mean(named[c]):.3f}/{statistics.mean(lowest[c]):.2f}" for c in columns
        )
    )
    print("\nmean role F1 per column (" + ", ".join(NAMED_ROLES) + " are the named roles)")
    for column in columns:
        means = " ".join(f"{slug}={statistics.mean(v):.3f}" for slug, v in per_role[column].items())
        print(f"{column:14} {means}")


if __name__ == "__main__":
    main()
