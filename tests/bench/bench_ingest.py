"""Ingest throughput: `prdigest ingest` over N synthetic notes, as a whole CLI run (wall and CPU).

.venv/bin/python -m tests.bench.bench_ingest --notes 100000 [--phases]

`--phases` also runs each step of ingestion in this process over the first 10,000 notes
(or fewer) and prints its CPU time per note: what ingestion costs besides classifying.
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bot.classify import build_classifier
from bot.classify.taxonomy import load_taxonomy
from bot.domain import ParsedNote
from bot.notes.ingest import parse_note_file
from bot.services import INGEST_BATCH_NOTES, PreparedFile
from bot.store import IndexedNote, Store, index_note, prepare_note
from tests.bench.corpus import write_corpus

PHASE_NOTES = 10_000
T = TypeVar("T")


def children_cpu() -> float:
    """CPU seconds of finished child processes (and the worker processes they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def phases(files: list[Path], notes: int, database: str) -> list[str]:
    """CPU time per note of each step, in this process, over the first files."""
    spent: dict[str, float] = {}

    def timed(name: str, step: Callable[[], T]) -> T:
        started = time.process_time()
        result = step()
        spent[name] = spent.get(name, 0.0) + time.process_time() - started
        return result

    use = files[: max(1, PHASE_NOTES * len(files) // notes)]
    classifier = build_classifier(load_taxonomy(None))
    parsed = timed("parse the files", lambda: [parse_note_file(p) for p in use])
    count = sum(map(len, parsed))
    keyed = timed("identity and content hash", lambda: [list(map(prepare_note, f)) for f in parsed])
    labels = timed(
        "classify",
        lambda: [[classifier.classify(n.title, n.paragraph) for n in f] for f in parsed],
    )
    indexed = timed(
        "search text",
        lambda: [
            [index_note(n, c) for n, c in zip(f, cs, strict=True)]
            for f, cs in zip(parsed, labels, strict=True)
        ],
    )
    prepared = [
        PreparedFile(path, [k._replace(indexed=i) for k, i in zip(ks, ix, strict=True)])
        for path, ks, ix in zip(use, keyed, indexed, strict=True)
    ]
    shipped = timed(
        "to the writing process (pickle)",
        lambda: [pickle.loads(pickle.dumps(p)) for p in prepared],
    )

    def unprepared(note: ParsedNote) -> IndexedNote:
        raise AssertionError(f"{note.source} was not prepared")

    per_batch = max(1, INGEST_BATCH_NOTES * len(shipped) // count)  # files per transaction
    store = Store.open(database)
    try:
        for first in range(0, len(shipped), per_batch):
            batch = [p.notes for p in shipped[first : first + per_batch]]
            timed(
                "write rows and full-text entries", lambda b=batch: store.save_files(b, unprepared)
            )
    finally:
        store.close()
    lines = [f"phases, CPU time in one process over {count} notes (µs/note):"]
    lines += [f"  {name:36} {seconds * 1e6 / count:7.1f}" for name, seconds in spent.items()]
    rest = sum(seconds for name, seconds in spent.items() if name != "classify")
    lines.append(f"  {'all but classify':36} {rest * 1e6 / count:7.1f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--per-file", type=int, default=100)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    parser.add_argument("--phases", action="store_true", help="CPU per note of each step")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "digests"
        files = write_corpus(folder, args.notes, args.per_file)
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        env = {**os.environ, "PRDIGEST_DATABASE_URL": url, "PRDIGEST_DIGESTS_DIR": str(folder)}
        script = Path(sys.executable).with_name("prdigest")
        cpu_before = children_cpu()
        started = time.perf_counter()
        done = subprocess.run([str(script), "ingest"], env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        cpu = children_cpu() - cpu_before
        if done.returncode != 0:
            sys.exit(f"ingest failed: {done.stderr}")
        again_started = time.perf_counter()
        again = subprocess.run([str(script), "ingest"], env=env, capture_output=True, text=True)
        again_elapsed = time.perf_counter() - again_started
        steps = (
            phases(files, args.notes, f"sqlite:///{Path(tmp) / 'phases.db'}") if args.phases else []
        )
    print(f"files: {len(files)}, notes: {args.notes}")
    per_note = elapsed * 1000 / args.notes
    print(f"first ingest: {elapsed:.1f} s = {per_note:.3f} ms/note  ({done.stdout.strip()})")
    print(
        f"  CPU time of all its processes: {cpu:.1f} s = {cpu * 1000 / args.notes:.3f} ms/note "
        "(steadier than wall time on a shared machine)"
    )
    print(
        f"re-ingest (unchanged): {again_elapsed:.1f} s = "
        f"{again_elapsed * 1000 / args.notes:.3f} ms/note  ({again.stdout.strip()})"
    )
    for line in steps:
        print(line)


if __name__ == "__main__":
    main()
