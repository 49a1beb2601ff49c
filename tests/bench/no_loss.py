"""No loss: the classifier against an earlier one, set by set, in one table.

Scores, per set: verdict accuracy (the main verdict and every audience-specific verdict right),
the main verdict alone and named-role macro-F1, on

- every development set left out in turn (`--loso`, default every development set): the
  verdict, role and audience models trained on all the other development sets (the learned
  blend is the shipped one), the rules as they are;
- the validation sets val1-val7, and with `--held-out` the held-out sets, with the shipped
  models (aggregates only: run it with `--held-out` once, when the work it measures is done).

`--json OUT` writes the scores; `--before JSON` prints them beside that earlier run's (made by
this command in a checkout of the earlier classifier) with the change in points, and marks a
drop of more than one point. Fold models are cached (`--cache`, see tests/bench/ablation.py).

.venv/bin/python -m tests.bench.no_loss --cache /tmp/folds [--json OUT] [--before JSON]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from bot.classify.pipeline import Classifier
from bot.classify.taxonomy import load_taxonomy
from tests.bench.ablation import fold_models
from tests.labelled import DEV_SETS, FROZEN, VALIDATION_SETS, load_set, score

METRICS = ("verdict", "main verdict", "named-role F1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loso", help="comma-separated development sets (default: all)")
    parser.add_argument("--cache", type=Path)
    parser.add_argument("--json", type=Path, help="write the scores here")
    parser.add_argument("--before", type=Path, help="scores of the earlier classifier")
    parser.add_argument("--held-out", action="store_true", help="score the held-out sets too")
    args = parser.parse_args()
    taxonomy = load_taxonomy(None)
    scores: dict[str, list[float]] = {}
    sets = {name: load_set(name) for name in DEV_SETS}
    for held in args.loso.split(",") if args.loso else DEV_SETS:
        reader = Classifier(taxonomy, models=fold_models(held, sets, taxonomy.slugs, args.cache))
        got = score(sets[held], reader.classify, taxonomy.slugs)
        scores[f"{held} (left out)"] = [
            got.verdict_accuracy,
            got.main_verdict_accuracy,
            got.named_macro_f1,
        ]
    shipped = Classifier(taxonomy)
    for name in (*VALIDATION_SETS, *(FROZEN if args.held_out else ())):
        got = score(load_set(name), shipped.classify, taxonomy.slugs)
        scores[name] = [got.verdict_accuracy, got.main_verdict_accuracy, got.named_macro_f1]
    if args.json:
        args.json.write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
    before: dict[str, list[float]] = (
        json.loads(args.before.read_text(encoding="utf-8")) if args.before else {}
    )
    head = " | ".join(f"{m} before | after" for m in METRICS)
    print(f"| set | {head} | more than a point lost |")
    print("|---|" + "---|---|" * len(METRICS) + "---|")
    for name, now in scores.items():
        was = before.get(name)
        cells = " | ".join(
            f"{was[i]:.3f} | {now[i]:.3f}" if was else f"- | {now[i]:.3f}"
            for i in range(len(METRICS))
        )
        lost = [m for i, m in enumerate(METRICS) if was and was[i] - now[i] > 0.01 + 1e-9]
        print(f"| {name} | {cells} | {', '.join(lost)} |")


if __name__ == "__main__":
    main()
