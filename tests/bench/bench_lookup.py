"""Search cost at scale: whole `prdigest lookup` runs at 2k vs 100k notes, and in-process p95.

.venv/bin/python -m tests.bench.bench_lookup --small 2000 --large 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bot.config import load_settings
from bot.services import Services, ingest_paths, lookup
from tests.bench.corpus import write_corpus

QUERIES = [
    "moe",
    "量化",
    "缓存",
    "视频",
    "fp8 marlin",
    "cuda graph",
    "speculative decoding",
    "kv offload",
    "多模态 编码器",
    "infra",
    "rocm",
    "eagle",
    "tool calling",
    "量",
]


def build(folder: Path, count: int) -> str:
    url = f"sqlite:///{folder / 'bench.db'}"
    files = write_corpus(folder / "digests", count)
    services = Services.build(load_settings(database_url=url))
    report = ingest_paths(services, files)
    services.close()
    assert report.new == count, report.summary()
    return url


def cli_times(url: str, runs: int) -> list[float]:
    env = {**os.environ, "PRDIGEST_DATABASE_URL": url}
    script = Path(sys.executable).with_name("prdigest")
    times = []
    for index in range(runs):
        query = QUERIES[index % len(QUERIES)].split()
        started = time.perf_counter()
        subprocess.run(
            [str(script), "lookup", *query, "--json"], env=env, check=True, capture_output=True
        )
        times.append(time.perf_counter() - started)
    return times


def in_process(url: str, rounds: int) -> list[float]:
    services = Services.build(load_settings(database_url=url))
    times = []
    for _ in range(rounds):
        for query in QUERIES:
            started = time.perf_counter()
            lookup(services, query, limit=10)
            times.append(time.perf_counter() - started)
    services.close()
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--cli-runs", type=int, default=28)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as small_dir, tempfile.TemporaryDirectory() as large_dir:
        small = build(Path(small_dir), args.small)
        large = build(Path(large_dir), args.large)
        cli_times(small, 2)  # warm the file cache
        cli_small = statistics.median(cli_times(small, args.cli_runs))
        cli_large = statistics.median(cli_times(large, args.cli_runs))
        search_small = in_process(small, args.rounds)
        search_large = in_process(large, args.rounds)
    print(
        f"CLI lookup median: {args.small} notes {cli_small * 1000:.0f} ms, "
        f"{args.large} notes {cli_large * 1000:.0f} ms, ratio {cli_large / cli_small:.2f}x"
    )
    print(
        f"in-process search p95: {args.small} notes {p95(search_small) * 1000:.2f} ms, "
        f"{args.large} notes {p95(search_large) * 1000:.2f} ms "
        f"(max {max(search_large) * 1000:.2f} ms, {len(search_large)} queries)"
    )


if __name__ == "__main__":
    main()
