"""Choosing every reader's DM notes for one digest run: roles with filters and watches.

Builds a store of --notes notes, takes the newest --run of them as the run's notes, gives
--readers readers two roles (half of them filtered) and --watches saved searches each,
then times reading the readers (`all_readers`) and, with one `ReadingPool`, the selection
for every reader within a budget of 5 (the notes' search words read once, one search per
distinct watch).

.venv/bin/python -m tests.bench.bench_reading --notes 100000 --readers 2000 --watches 3
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from bot.config import load_settings
from bot.domain import Verdict
from bot.readers.reading_list import ReadingPool, within_budget
from bot.services import Services, ingest_paths
from tests.bench.bench_lookup import QUERIES
from tests.bench.corpus import write_corpus

WATCH_WORDS = [q for q in QUERIES if len(q) > 1] + ["marlin", "nvfp4", "eagle", "rocm", "视频"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=20000)
    parser.add_argument("--run", type=int, default=500, help="notes in the digest run")
    parser.add_argument("--readers", type=int, default=1000)
    parser.add_argument("--watches", type=int, default=3, help="saved searches per reader")
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url = f"sqlite:///{folder / 'bench.db'}"
        services = Services.build(load_settings(database_url=url))
        started = time.perf_counter()
        ingest_paths(services, write_corpus(folder / "digests", args.notes))
        print(f"corpus: {args.notes} notes in {time.perf_counter() - started:.1f} s")
        store = services.store
        slugs = list(services.taxonomy.slugs)
        for n in range(args.readers):
            level = Verdict.DEEP if n % 2 else None
            store.subscribe("T1", f"U{n}", rng.sample(slugs, 2), level)
            for word in rng.sample(WATCH_WORDS, min(args.watches, len(WATCH_WORDS))):
                store.readers.watch("T1", f"U{n}", word)
        notes = store.list_notes()[-args.run :]
        started = time.perf_counter()
        readers = store.readers.all_readers()
        prepared = time.perf_counter() - started
        pool = ReadingPool(store, services.taxonomy)
        started = time.perf_counter()
        chosen = 0
        for reader in readers:
            fitted = within_budget(reader, pool.sections(reader, notes, set()), 5)
            chosen += sum(len(s.notes) for s in fitted.sections)
        selected = time.perf_counter() - started
        distinct = len({q for r in readers for q in r.watches})
        print(
            f"{args.readers} readers, {distinct} distinct watches, {args.run}-note run: "
            f"readers read in {prepared * 1000:.0f} ms, selection {selected * 1000:.0f} ms "
            f"({selected / args.readers * 1e6:.0f} µs/reader), {chosen} notes chosen"
        )
        services.close()


if __name__ == "__main__":
    main()
