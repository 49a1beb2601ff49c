"""Classification speed over the 92 labelled notes (the budget is 0.2 ms per note).

Wall time on a shared machine swings with the load; the CPU time of this process is
reported beside it and is the steadier figure.

.venv/bin/python -m tests.bench.bench_classify [--phases] [--against CHECKOUT]

--against compares with the classifier of another checkout (say `git worktree add
/tmp/before <commit>`) in the same run: blocks of rounds alternate between this checkout
and a child process classifying the same notes with the other, and the ratio of their CPU
medians is printed, so that the load of a shared machine weighs on both alike.

--phases also times each part of a classification on its own (CPU µs/note, median over
the rounds): the rules, the clauses and their features, the sums of their weights, the role
model, the verdict model, the audience model's clause reading and its verdicts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bot.classify import Classifier, build_classifier
from bot.classify.models import attend
from bot.classify.taxonomy import load_taxonomy
from bot.classify.text import normalise, read_clauses, squared_counts
from tests.bench.corpus import base_notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--phases", action="store_true", help="time each part on its own")
    parser.add_argument("--against", type=Path, help="another checkout to compare with")
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
    if args.against is not None:
        ours, theirs = against(classifier, notes, args.against, args.rounds)
        print(
            f"against {args.against}: CPU median {statistics.median(theirs) * 1e6:.0f} µs/note "
            f"there, {statistics.median(ours) * 1e6:.0f} µs/note here: "
            f"{statistics.median(theirs) / statistics.median(ours):.2f} times as fast"
        )


# Classifies the notes (JSON on stdin) with the checkout at argv[1], argv[2] rounds, and
# prints each round's CPU seconds per note. Either layout of the package is read.
_CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from bot.classify import build_classifier
try:
    from bot.classify.taxonomy import load_taxonomy
except ImportError:  # a checkout from before the package
    from bot.taxonomy import load_taxonomy
notes = json.loads(sys.stdin.read())
classifier = build_classifier(load_taxonomy(None))
for title, paragraph in notes:
    classifier.classify(title, paragraph)
out = []
for _ in range(int(sys.argv[2])):
    cpu = time.process_time()
    for title, paragraph in notes:
        classifier.classify(title, paragraph)
    out.append((time.process_time() - cpu) / len(notes))
print(json.dumps(out))
"""


def against(
    classifier: Classifier,
    notes: list[tuple[str, str]],
    checkout: Path,
    rounds: int,
    blocks: int = 5,
) -> tuple[list[float], list[float]]:
    """CPU seconds per note of each round here and in `checkout`, in alternating blocks."""
    ours: list[float] = []
    theirs: list[float] = []
    per_block = max(1, rounds // blocks)
    for _ in range(blocks):
        for _ in range(per_block):
            cpu = time.process_time()
            for title, paragraph in notes:
                classifier.classify(title, paragraph)
            ours.append((time.process_time() - cpu) / len(notes))
        child = subprocess.run(
            [sys.executable, "-c", _CHILD, str(checkout.resolve()), str(per_block)],
            input=json.dumps(notes),
            capture_output=True,
            text=True,
            check=True,
            cwd=checkout,
        )
        theirs += json.loads(child.stdout)
    return ours, theirs


def phases(classifier: Classifier, notes: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    """Each part of `Classifier.classify` timed on its own, over the same notes."""
    texts = [(normalise(t).lower(), p.strip(), normalise(p.strip()).lower()) for t, p in notes]
    rules = [classifier.rules.classify(*note) for note in texts]
    read = [read_clauses(text) for _, _, text in texts]
    weighed = [classifier.weigh(r[1], r[2]) for t, r in zip(texts, read, strict=True)]
    squares = [squared_counts(grams) for grams, _, _ in weighed]
    role_model, audience = classifier._role_model, classifier._audience
    attention = [
        attend(t[2], role_model, (r[0], r[1], w[1]))
        for t, r, w in zip(texts, read, weighed, strict=True)
    ]
    parts: dict[str, Callable[[int], object]] = {
        "rules": lambda i: classifier.rules.classify(*texts[i]),
        "clauses and their features": lambda i: read_clauses(texts[i][2]),
        "weight sums": lambda i: classifier.weigh(read[i][1], read[i][2]),
        "role model": lambda i: role_model.proba_of(
            texts[i][0], weighed[i][0], squares[i], weighed[i][2]
        ),
        "verdict model": lambda i: classifier._model.proba_of(
            weighed[i][0], squares[i], complex(weighed[i][2][-2], weighed[i][2][-1])
        ),
        "audience: clause reading": lambda i: attend(
            texts[i][2], role_model, (read[i][0], read[i][1], weighed[i][1])
        ),
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
