"""Classification speed over the 92 labelled notes (the budget is 0.2 ms per note).

Wall time on a shared machine swings with the load; the CPU time of this process is
reported beside it and is the steadier figure.

.venv/bin/python -m tests.bench.bench_classify [--phases]

--phases also times each part of a classification on its own (CPU µs/note, median over
the rounds): the rules, the paragraph's features, the role model, the verdict model, the
audience model's clause reading and its verdicts.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bot.classify import Classifier, build_classifier
from bot.classify.audience_model import attend
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import features, normalise
from tests.bench.corpus import base_notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--phases", action="store_true", help="time each part on its own")
    args = parser.parse_args()
    notes = base_notes()
    classifier = build_classifier(load_taxonomy(None))
    per_round = []
    cpu_round = []
    for _ in range(args.rounds):
        started, cpu = time.perf_counter(), time.process_time()
        for title, paragraph in notes:
            classifier.classify(title, paragraph)
        per_round.append((time.perf_counter() - started) / len(notes))
        cpu_round.append((time.process_time() - cpu) / len(notes))
    print(
        f"classify: median {statistics.median(per_round) * 1e6:.0f} µs/note, "
        f"best {min(per_round) * 1e6:.0f} µs/note; CPU median "
        f"{statistics.median(cpu_round) * 1e6:.0f} µs/note "
        f"({len(notes)} notes x {args.rounds} rounds)"
    )
    if args.phases:
        for name, cpu_us in phases(classifier, notes, args.rounds).items():
            print(f"  {name}: CPU median {cpu_us:.0f} µs/note")


def phases(classifier: Classifier, notes: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    """Each part of `Classifier.classify` timed on its own, over the same notes."""
    texts = [(normalise(t).lower(), p.strip(), normalise(p.strip()).lower()) for t, p in notes]
    grams = [features(text) for _, _, text in texts]
    rules = [classifier.rules.classify(*note)[0] for note in texts]
    role_model, audience = classifier._role_model, classifier._audience
    attention = [attend(text, role_model) for _, _, text in texts]
    parts: dict[str, Callable[[int], object]] = {
        "rules": lambda i: classifier.rules.classify(*texts[i]),
        "paragraph features": lambda i: features(texts[i][2]),
        "role model": lambda i: role_model.proba_of(texts[i][0], grams[i]),
        "verdict model": lambda i: classifier._model.proba_of(grams[i]),
        "audience: clause reading": lambda i: attend(texts[i][2], role_model),
    }
    if audience is not None:
        split = classifier._split_roles
        parts["audience: verdicts"] = lambda i: audience.refine(rules[i], attention[i], split)
    out = {}
    for name, part in parts.items():
        cpu_round = []
        for _ in range(rounds):
            cpu = time.process_time()
            for i in range(len(texts)):
                part(i)
            cpu_round.append((time.process_time() - cpu) / len(texts))
        out[name] = statistics.median(cpu_round) * 1e6
    return out


if __name__ == "__main__":
    main()
