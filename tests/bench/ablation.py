"""Leave one rule family out: what each family of the rules adds to the shipped classifier.

For each family in `bot.classify.rules.FAMILIES` the classifier is built without it (the
models and the learned blend as shipped) and scored on the validation sets val1-val7 (1,050
notes the models were never trained on), pooled: verdict accuracy (the main verdict and every
audience-specific verdict right), the main verdict alone, named-role macro-F1 and the macro-F1
over all roles, each with its change against the full classifier in notes (or F1 points).
A family earns its place when leaving it out costs at least `--min-notes` notes of verdict or
main verdict, or `--min-f1` of named-role or all-role F1.

.venv/bin/python -m tests.bench.ablation [--families a,b] [--min-notes 3] [--min-f1 0.003]
"""

from __future__ import annotations

import argparse

from bot.classify.pipeline import Classifier
from bot.classify.rules import FAMILIES
from bot.classify.taxonomy import load_taxonomy
from tests.labelled import VALIDATION_SETS, SetScore, load_set, score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", help="comma-separated families (default: all)")
    parser.add_argument("--min-notes", type=int, default=3)
    parser.add_argument("--min-f1", type=float, default=0.003)
    args = parser.parse_args()
    families = args.families.split(",") if args.families else list(FAMILIES)
    taxonomy = load_taxonomy(None)
    notes = [note for name in VALIDATION_SETS for note in load_set(name)]
    n = len(notes)

    def run(off: frozenset[str]) -> SetScore:
        return score(notes, Classifier(taxonomy, off=off).classify, taxonomy.slugs)

    full = run(frozenset())
    print(f"validation sets {', '.join(VALIDATION_SETS)}: {n} notes")
    print("| left out | what it does | verdict | main verdict | named F1 | all F1 | earns |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| (nothing) | the shipped classifier | {full.verdict_accuracy:.3f} | "
        f"{full.main_verdict_accuracy:.3f} | {full.named_macro_f1:.3f} | "
        f"{full.all_macro_f1:.3f} | |"
    )
    for family in families:
        got = run(frozenset({family}))
        d_verdict = round((full.verdict_accuracy - got.verdict_accuracy) * n)
        d_main = round((full.main_verdict_accuracy - got.main_verdict_accuracy) * n)
        d_named = full.named_macro_f1 - got.named_macro_f1
        d_all = full.all_macro_f1 - got.all_macro_f1
        earns = max(d_verdict, d_main) >= args.min_notes or max(d_named, d_all) >= args.min_f1
        print(
            f"| {family} | {FAMILIES[family]} | {got.verdict_accuracy:.3f} ({-d_verdict:+d}) | "
            f"{got.main_verdict_accuracy:.3f} ({-d_main:+d}) | "
            f"{got.named_macro_f1:.3f} ({-d_named:+.3f}) | {got.all_macro_f1:.3f} "
            f"({-d_all:+.3f}) | {'yes' if earns else 'no'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
