"""Training reproduces the shipped model files byte for byte, and the recorded outputs are
what the classifier decides: each command runs as the classifier's guide says to run it,
in a process of its own (the entry point pins the BLAS before numpy is loaded)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.classify.train.outputs import OUTPUTS

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = (
    "role_model.json.gz",
    "verdict_model.json.gz",
    "verdict_blend.json",
    "audience_model.json.gz",
    "training.json",
)


def train(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot.classify.train", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=1200,
    )


def test_retraining_writes_exactly_the_shipped_files(tmp_path: Path) -> None:
    """`--check` refits every model (a few minutes) and compares the text each file would
    get with the shipped one, with no tolerance."""
    done = train("--check", cwd=tmp_path)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    for name in SHIPPED:
        assert f"{name}: as shipped" in done.stdout
    assert "warning" not in done.stderr


def test_the_record_is_what_the_classifier_decides(tmp_path: Path) -> None:
    """`diff` finds nothing to show, and `record` writes the shipped record again."""
    done = train("diff", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.rstrip().endswith("nothing differs from the record"), done.stdout
    assert "all development sets: 0 of" in done.stdout
    again = tmp_path / "outputs.json"
    shutil.copy(OUTPUTS, again)
    done = train("record", "--outputs", str(again), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "unchanged" in done.stdout
    fresh = tmp_path / "fresh.json"
    done = train("record", "--outputs", str(fresh), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert fresh.read_bytes() == OUTPUTS.read_bytes()
