"""Re-classification cost: `prdigest reclassify` over N stored notes after the roles changed.

.venv/bin/python -m tests.bench.bench_reclassify --notes 20000

Ingests N synthetic notes, then runs `prdigest reclassify` twice as whole CLI runs: with a
roles file that changes most classifications (every note is re-classified and most are
written), then again with nothing left to change (classification only).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.corpus import write_corpus

ROLES = """mode = "replace"
[[roles]]
slug = "kernels"
name_zh = "内核"
name_en = "Kernels"
keywords = { "kernel" = 3.0, "cuda" = 3.0, "内核" = 3.0, "triton" = 3.0 }
[[roles]]
slug = "serving"
name_zh = "服务"
name_en = "Serving"
keywords = { "api" = 3.0, "scheduler" = 3.0, "调度" = 3.0, "多模态" = 3.0, "cache" = 2.0 }
"""


def timed(script: Path, env: dict[str, str], *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([str(script), *args], env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {done.stderr}")
    return elapsed, done.stdout.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=20_000)
    parser.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "digests"
        write_corpus(folder, args.notes, 100)
        roles = Path(tmp) / "roles.toml"
        roles.write_text(ROLES, encoding="utf-8")
        url = args.database_url or f"sqlite:///{Path(tmp) / 'bench.db'}"
        env = {**os.environ, "PRDIGEST_DATABASE_URL": url, "PRDIGEST_DIGESTS_DIR": str(folder)}
        script = Path(sys.executable).with_name("prdigest")
        timed(script, env, "ingest")
        env["PRDIGEST_ROLES_FILE"] = str(roles)
        changed, summary = timed(script, env, "reclassify")
        again, summary_again = timed(script, env, "reclassify")
    print(f"notes: {args.notes}")
    print(
        f"reclassify after a roles change: {changed:.1f} s = "
        f"{changed * 1000 / args.notes:.3f} ms/note ({summary})"
    )
    print(
        f"reclassify with nothing to change: {again:.1f} s = "
        f"{again * 1000 / args.notes:.3f} ms/note ({summary_again})"
    )


if __name__ == "__main__":
    main()
