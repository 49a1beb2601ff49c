"""Aggregate scores of the shipped classifier on every labelled set (one line per set).

Development sets are read while the classifier is written; validation sets are never
trained on or read note by note, but their aggregate chose thresholds, so their scores
flatter those choices (tests/bench/README.md, "Which sets chose which numbers"); held-out
sets are frozen and scored here in aggregate only. Columns:
verdict accuracy (main verdict and every audience-specific verdict right), the main
verdict alone, named-role macro-F1 (release-infra, moe-quant, multimodal), macro-F1 over
all nine roles; for the rules alone as well as for the shipped rules + verdict model. A
second table splits each kind of set by the verdict's confidence (the flag the digest shows).

.venv/bin/python -m tests.bench.verdict_report
"""

from __future__ import annotations

from collections.abc import Callable

from bot.classify import build_classifier
from bot.classify.taxonomy import load_taxonomy
from bot.domain import Classification, Confidence
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
    # each kind's notes with the shipped classification of each, classified once
    shipped_by_kind: dict[str, list[tuple[Labelled, Classification]]] = {}
    for kind, names in groups:
        total = 0
        right = main_right = 0.0
        for name in names:
            notes = load_set(name)
            got = [classifier.classify(n.title, n.paragraph) for n in notes]
            shipped_by_kind.setdefault(kind, []).extend(zip(notes, got, strict=True))
            shipped = score(notes, _in_order(got), taxonomy.slugs)
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
    for kind, shipped_notes in shipped_by_kind.items():
        for confidence in Confidence:
            given = [
                (label, got) for label, got in shipped_notes if got.verdict_confidence is confidence
            ]
            whole = sum(verdict_right(label, got, taxonomy.slugs) for label, got in given)
            main_ok = sum(got.verdict.value == label.verdict for label, got in given)
            n = max(len(given), 1)
            print(
                f"| {kind} | {confidence.value} | {len(given)} | {whole / n:.3f} | "
                f"{main_ok / n:.3f} |"
            )


def _in_order(results: list[Classification]) -> Callable[[str, str], Classification]:
    """A classify function that answers with `results`, one per call, in order (`score`
    asks for the notes in order)."""
    answers = iter(results)
    return lambda _title, _paragraph: next(answers)


if __name__ == "__main__":
    main()
