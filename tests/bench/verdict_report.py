"""Aggregate scores of the shipped classifier on every labelled set (one line per set).

Development sets are read while the classifier is written; validation sets are never
trained or tuned on; held-out sets are frozen and scored here in aggregate only. Columns:
verdict accuracy (main verdict and every audience-specific verdict right), the main
verdict alone, named-role macro-F1 (release-infra, moe-quant, multimodal), macro-F1 over
all nine roles; for the rules alone as well as for the shipped rules + verdict model. A
second table splits each kind of set by the verdict's confidence (the flag the digest shows).

.venv/bin/python -m tests.bench.verdict_report
"""

from __future__ import annotations

from bot.classify import Classifier, build_classifier
from bot.domain import Confidence
from bot.taxonomy import load_taxonomy
from tests.labelled import (
    DEV_SETS,
    RETIRED,
    UNSEEN,
    VALIDATION_SETS,
    Labelled,
    SetScore,
    load_set,
    score,
    verdict_right,
)


def _cells(result: SetScore) -> str:
    return (
        f"{result.verdict_accuracy:.3f} | {result.main_verdict_accuracy:.3f} | "
        f"{result.named_macro_f1:.3f} | {result.all_macro_f1:.3f}"
    )


def main() -> None:
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    print(
        "| set | kind | notes | verdict | main verdict | named-role F1 | all-role F1 "
        "| rules alone: verdict | main verdict |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    groups = (
        ("development", DEV_SETS),
        ("validation", VALIDATION_SETS),
        ("retired held out", RETIRED),
        ("held out", UNSEEN),
    )
    for kind, names in groups:
        total = 0
        right = main_right = 0.0
        for name in names:
            notes = load_set(name)
            shipped = score(notes, classifier.classify, taxonomy.slugs)
            rules = score(notes, classifier.classify_by_rules, taxonomy.slugs)
            print(
                f"| {name} | {kind} | {len(notes)} | {_cells(shipped)} | "
                f"{rules.verdict_accuracy:.3f} | {rules.main_verdict_accuracy:.3f} |"
            )
            total += len(notes)
            right += shipped.verdict_accuracy * len(notes)
            main_right += shipped.main_verdict_accuracy * len(notes)
        overall = f"{right / total:.3f} | {main_right / total:.3f}"
        print(f"| all {kind} | | {total} | {overall} | | | | |")
    print("\n| sets | confidence | notes | verdict | main verdict |\n|---|---|---|---|---|")
    for kind, names in groups:
        notes = [note for name in names for note in load_set(name)]
        for confidence, right, main_right in _by_confidence(classifier, notes, taxonomy.slugs):
            n = len(right)
            print(
                f"| {kind} | {confidence.value} | {n} | {sum(right) / max(n, 1):.3f} | "
                f"{sum(main_right) / max(n, 1):.3f} |"
            )


def _by_confidence(
    classifier: Classifier, notes: list[Labelled], slugs: tuple[str, ...]
) -> list[tuple[Confidence, list[bool], list[bool]]]:
    """For each verdict confidence: whether each note given it was right, whole and main."""
    out = {c: ([], []) for c in Confidence}
    for label in notes:
        got = classifier.classify(label.title, label.paragraph)
        whole, main = out[got.verdict_confidence]
        whole.append(verdict_right(label, got, slugs))
        main.append(got.verdict.value == label.verdict)
    return [(c, whole, main) for c, (whole, main) in out.items()]


if __name__ == "__main__":
    main()
