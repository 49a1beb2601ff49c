"""Leave one set out: the verdict model trained on all development sets but one, scored on it.

For each development set, `bot.classify.train.verdicts.train` fits the model on every other
development set, and three classifiers are scored on the one left out (verdict accuracy as
in tests/labelled.py: the main verdict and every audience-specific verdict right):

- rules: the rules alone. They were written while reading the development sets, so on a
  set the rules were tuned on this column is optimistic;
- model: the model's verdict with the rules' audience-specific verdicts;
- shipped: rules and model blended as `bot.classify.models.blend_verdict` does in production (the
  learned blend itself is the shipped one, fitted on out-of-fold readings of every
  development set, this one included: a few numbers read, so slightly optimistic);
- audience (with --audience, slower): shipped, then each group's own verdict from the
  audience model (`bot.classify.models`), itself trained on every set but the one left out.

Each cell is the verdict accuracy, with the accuracy of the main verdict alone in brackets.

The model column is honest for every set: the model never saw the set it is scored on.
Held-out sets are never loaded here.

.venv/bin/python -m tests.bench.verdict_loso [--sets dev12,dev13] [--audience]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace

from bot.classify import build_classifier
from bot.classify.models import VerdictModel, attend, blend_verdict, load_role_model
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import normalise
from bot.classify.train.audiences import train as train_audience
from bot.classify.train.verdicts import train
from bot.domain import Classification
from tests.labelled import DEV_SETS, load_set, score

COLUMNS = ("rules", "model", "shipped")


def _model_only(rules: Classification, model: VerdictModel, text: str) -> Classification:
    proba = model.proba(text).proba
    choice = max(proba, key=lambda v: proba[v])
    kept = {r: v for r, v in rules.role_verdicts.items() if v is not choice}
    return replace(rules, verdict=choice, role_verdicts=kept)


def _known(answers: dict[str, Classification]) -> Callable[[str, str], Classification]:
    return lambda title, _paragraph: answers[title]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", help="comma-separated sets to leave out (default: all)")
    parser.add_argument("--audience", action="store_true", help="add the audience column")
    args = parser.parse_args()
    columns = (*COLUMNS, "audience") if args.audience else COLUMNS
    role_model = load_role_model()
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    sets = {name: load_set(name) for name in DEV_SETS}
    held_out = args.sets.split(",") if args.sets else list(DEV_SETS)
    print("| left out | notes | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    right = dict.fromkeys(columns, 0)
    main_right = dict.fromkeys(columns, 0)
    count = 0
    for held in held_out:
        model = train(n for name in DEV_SETS if name != held for n in sets[name])
        audience = (
            train_audience(
                (n for name in DEV_SETS if name != held for n in sets[name]),
                role_model,
            )
            if args.audience
            else None
        )
        notes = sets[held]
        answers: dict[str, dict[str, Classification]] = {c: {} for c in columns}
        for n in notes:
            rules = classifier.classify_by_rules(n.title, n.paragraph)
            text = normalise(n.paragraph.strip()).lower()
            answers["rules"][n.title] = rules
            answers["model"][n.title] = _model_only(rules, model, text)
            answers["shipped"][n.title] = blend_verdict(rules, model.proba(text))
            if audience is not None:
                answers["audience"][n.title] = audience.refine(
                    answers["shipped"][n.title],
                    attend(text, role_model),
                    classifier._split_roles,
                )
        scores = {c: score(notes, _known(answers[c]), taxonomy.slugs) for c in columns}
        cells = " | ".join(
            f"{scores[c].verdict_accuracy:.3f} ({scores[c].main_verdict_accuracy:.3f})"
            for c in columns
        )
        print(f"| {held} | {len(notes)} | {cells} |")
        count += len(notes)
        for c in columns:
            right[c] += round(scores[c].verdict_accuracy * len(notes))
            main_right[c] += round(scores[c].main_verdict_accuracy * len(notes))
    totals = " | ".join(f"{right[c] / count:.3f} ({main_right[c] / count:.3f})" for c in columns)
    print(f"| all | {count} | {totals} |")


if __name__ == "__main__":
    main()
