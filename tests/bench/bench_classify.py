"""Classification speed over the 92 labelled notes (the budget is 0.2 ms per note).

Wall time on a shared machine swings with the load; the CPU time of this process is
reported beside it and is the steadier figure.

.venv/bin/python -m tests.bench.bench_classify
"""

from __future__ import annotations

import argparse
import statistics
import time

from bot.classify import build_classifier
from bot.taxonomy import load_taxonomy
from tests.bench.corpus import base_notes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=50)
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


if __name__ == "__main__":
    main()
