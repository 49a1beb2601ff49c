"""Ingest throughput: `prdigest ingest` over N synthetic notes, as a whole CLI run (wall and CPU).

.venv/bin/python -m tests.bench.bench_ingest --notes 100000
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.corpus import write_corpus


def children_cpu() -> float:
    """CPU seconds of finished child processes (and the worker processes they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--per-file", type=int, default=100)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
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


if __name__ == "__main__":
    main()
