"""Leave one rule family out: what each family of the rules adds to the classifier.

For each family in `bot.classify.rules.FAMILIES` the classifier is built without it and scored
against the full classifier: verdict accuracy (the main verdict and every audience-specific
verdict right), the main verdict alone, named-role macro-F1 and macro-F1 over all roles, each
with its change in notes (or F1 points). Two grounds:

- `--loso SETS` (the ablation that decides): each development set named is left out in turn,
  the verdict, role and audience models are trained on every other development set, and the
  set is classified by the rules with and without each family beside those models (the learned
  blend is the shipped one). Sets the rules were never written against (dev48-dev75) make the
  rules' columns honest too. Slow: three models trained per set left out.
- default: the validation sets val1-val7 with the shipped models (never trained on them).

A family earns its place when leaving it out costs at least `--min-notes` notes of verdict or
main verdict, or `--min-f1` of named-role or all-role F1, on the ground scored.

.venv/bin/python -m tests.bench.ablation [--loso dev48,dev49] [--families a,b] [--min-notes 3]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bot.classify.models import AudienceModel, RoleModel, VerdictModel
from bot.classify.pipeline import Classifier
from bot.classify.rules import FAMILIES
from bot.classify.taxonomy import load_taxonomy
from bot.classify.train.audiences import train as train_audience
from bot.classify.train.model_files import model_json
from bot.classify.train.roles import labelled_roles
from bot.classify.train.roles import train as train_roles
from bot.classify.train.verdicts import train as train_verdicts
from bot.domain import Classification
from tests.labelled import DEV_SETS, VALIDATION_SETS, Labelled, SetScore, load_set, score


def _pooled(
    notes: list[Labelled], answers: dict[str, Classification], slugs: tuple[str, ...]
) -> SetScore:
    return score(notes, lambda title, paragraph: answers[title + "\n" + paragraph], slugs)


def fold_models(
    held: str, sets: dict[str, list[Labelled]], slugs: tuple[str, ...], cache: Path | None
) -> tuple[VerdictModel, RoleModel, AudienceModel]:
    """The verdict, role and audience models trained on every development set but `held`,
    kept in `cache` as model files (`held`-verdict.json, -role.json, -audience.json)."""
    paths = (
        [cache / f"{held}-{kind}.json" for kind in ("verdict", "role", "audience")] if cache else []
    )
    if paths and all(p.exists() for p in paths):
        text = [p.read_text(encoding="utf-8") for p in paths]
        return (
            VerdictModel.from_json(text[0]),
            RoleModel.from_json(text[1]),
            AudienceModel.from_json(text[2]),
        )
    rest = [n for name in DEV_SETS if name != held for n in sets[name]]
    roles = train_roles(rest, labelled_roles(rest, slugs))
    models = (train_verdicts(rest), roles, train_audience(rest, roles))
    for path, model in zip(paths, models, strict=True) if paths else ():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model_json(model), encoding="utf-8")
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loso", help="comma-separated development sets to leave out in turn")
    parser.add_argument("--families", help="comma-separated families (default: all)")
    parser.add_argument("--cache", type=Path, help="keep each fold's models here")
    parser.add_argument(
        "--together", action="store_true", help="also leave every family named out at once"
    )
    parser.add_argument("--min-notes", type=int, default=3)
    parser.add_argument("--min-f1", type=float, default=0.003)
    args = parser.parse_args()
    families = args.families.split(",") if args.families else list(FAMILIES)
    variants = [frozenset(), *(frozenset({f}) for f in families)]
    if args.together:
        variants.append(frozenset(families))
    taxonomy = load_taxonomy(None)
    answers: dict[frozenset[str], dict[str, Classification]] = {v: {} for v in variants}
    notes: list[Labelled] = []
    if args.loso:
        sets = {name: load_set(name) for name in DEV_SETS}
        for held in args.loso.split(","):
            models = fold_models(held, sets, taxonomy.slugs, args.cache)
            for off in variants:
                reader = Classifier(taxonomy, off=off, models=models)
                for n in sets[held]:
                    answers[off][n.title + "\n" + n.paragraph] = reader.classify(
                        n.title, n.paragraph
                    )
            notes += sets[held]
            print(f"left out {held}", flush=True)
        ground = f"leave one set out: {args.loso}"
    else:
        notes = [note for name in VALIDATION_SETS for note in load_set(name)]
        for off in variants:
            reader = Classifier(taxonomy, off=off)
            for n in notes:
                answers[off][n.title + "\n" + n.paragraph] = reader.classify(n.title, n.paragraph)
        ground = f"validation sets {', '.join(VALIDATION_SETS)}"
    n = len(notes)
    full = _pooled(notes, answers[frozenset()], taxonomy.slugs)
    print(f"{ground}: {n} notes")
    print("| left out | what it does | verdict | main verdict | named F1 | all F1 | earns |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| (nothing) | the classifier | {full.verdict_accuracy:.3f} | "
        f"{full.main_verdict_accuracy:.3f} | {full.named_macro_f1:.3f} | "
        f"{full.all_macro_f1:.3f} | |"
    )
    rows = [(f, frozenset({f}), FAMILIES[f]) for f in families]
    if args.together:
        rows.append(("all of them", frozenset(families), "every family above at once"))
    for family, off, what in rows:
        got = _pooled(notes, answers[off], taxonomy.slugs)
        d_verdict = round((full.verdict_accuracy - got.verdict_accuracy) * n)
        d_main = round((full.main_verdict_accuracy - got.main_verdict_accuracy) * n)
        d_named = full.named_macro_f1 - got.named_macro_f1
        d_all = full.all_macro_f1 - got.all_macro_f1
        earns = max(d_verdict, d_main) >= args.min_notes or max(d_named, d_all) >= args.min_f1
        print(
            f"| {family} | {what} | {got.verdict_accuracy:.3f} ({-d_verdict:+d}) | "
            f"{got.main_verdict_accuracy:.3f} ({-d_main:+d}) | "
            f"{got.named_macro_f1:.3f} ({-d_named:+.3f}) | {got.all_macro_f1:.3f} "
            f"({-d_all:+.3f}) | {'yes' if earns else 'no'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
