"""Every script in tests/bench runs to the end on a small input.

The figures in the guides come from these scripts; a script broken by a change elsewhere
(a renamed method, a moved helper) would otherwise only be found the next time somebody
measures. Each runs as `python -m`, in its own process, as the guides say to run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fakellm import FakeLLM

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]

# (module and small arguments, a piece of what its last part prints)
RUNS = {
    "bench_classify": (["--rounds", "1", "--phases"], "audience: verdicts: CPU median"),
    "classifier_size": ([], "lines of code"),
    "bench_ingest": (["--notes", "200", "--per-file", "50"], "200 unchanged"),
    "bench_lookup": (
        ["--small", "50", "--large", "200", "--cli-runs", "1", "--rounds", "1"],
        "in-process search p95",
    ),
    "bench_reading": (
        ["--notes", "200", "--run", "20", "--readers", "20", "--watches", "1"],
        "20 readers",
    ),
    "bench_reclassify": (["--notes", "100"], "0 notes changed"),
    "bench_fanout": (["--dms", "20", "--limit", "200", "--latency", "0.001"], "exactly once"),
    "bench_ack": (["--notes", "200", "--users", "2", "--requests", "2"], "time to reply"),
    "bench_serve_rss": (["--notes", "200", "--rounds", "1"], "VmRSS"),
    "agreement": ([], "the second reader agrees on"),
    "role_loso": (["--sets", "dev69", "--jobs", "1"], "blend0.15,0.6"),
    "verdict_loso": (["--sets", "dev69"], "| dev69 | 10 |"),
    "verdict_report": ([], "| all held out |"),
    "ablation": (["--families", "negation", "--loso", "dev69"], "| negation |"),
    "no_loss": (["--loso", "dev69"], "| dev69 (left out) |"),
    "cue_usage": ([], "lexicon: "),
    # CI has no model server: the fake one of tests/support/fakellm.py answers ({fake} is its URL).
    # Without Chromium: the page of the picture, not the screenshot.
    "digest_picture": (["--html", "digest.html"], "wrote digest.html"),
    "bench_llm": (
        ["--sets", "val1", "--limit", "12", "--url", "{fake}", "--model", "test-model"],
        "llm (every note)",
    ),
}


@pytest.mark.parametrize("name", RUNS)
def test_bench_script_runs(name: str, tmp_path: Path) -> None:
    args, expected = RUNS[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FakeLLM(model="test-model") as fake:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                f"tests.bench.{name}",
                *(a.replace("{fake}", fake.url) for a in args),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert expected in done.stdout, done.stdout[-2000:]
    assert "Traceback" not in done.stderr


def test_every_bench_script_is_run() -> None:
    scripts = {p.stem for p in (ROOT / "tests" / "bench").glob("*.py")}
    assert scripts - {"__init__", "corpus"} == set(RUNS)
