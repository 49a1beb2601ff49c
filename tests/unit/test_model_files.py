"""The shipped model files, checked without refitting them: each is the file its training
recorded, trained on today's development sets with the pinned toolchain. The slow suite
refits every model and compares what it predicts (`--check` of each training script)."""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from bot.classify.models import model_text
from bot.classify.train.model_files import (
    MANIFEST,
    TOOLCHAIN,
    agreement,
    read_manifest,
    training_data_digest,
)

DATA = MANIFEST.parent
MODEL_FILES = (
    "role_model.json.gz",
    "verdict_model.json.gz",
    "audience_model.json.gz",
    "verdict_blend.json",
)
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


@pytest.mark.parametrize("name", MODEL_FILES)
def test_each_model_file_is_what_its_training_wrote(name: str) -> None:
    recorded = read_manifest()[name]
    found = hashlib.sha256(model_text(DATA / name).encode("utf-8")).hexdigest()
    assert found == recorded["sha256"], f"{name} was changed by hand: retrain it"


@pytest.mark.parametrize("name", MODEL_FILES)
def test_each_model_was_trained_on_todays_development_sets(name: str) -> None:
    assert read_manifest()[name]["trained_on"] == training_data_digest(), (
        f"the development sets changed after {name} was trained: python -m bot.classify.train"
    )


def test_training_used_the_pinned_toolchain() -> None:
    """The versions the `train` extra pins are the ones every shipped file was made with."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    pinned: dict[str, str] = {}
    for line in extras["optional-dependencies"]["train"]:
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{line}: training needs exact versions"
        pinned[requirement.name] = spec.version
    assert set(pinned) == set(TOOLCHAIN)
    for name in MODEL_FILES:
        assert read_manifest()[name]["toolchain"] == pinned, name


def test_agreement_counts_flipped_decisions_and_shift() -> None:
    a = [(0.7, 0.2, 0.1)] * 300
    assert agreement(a, a).same
    one_flip = [(0.2, 0.7, 0.1), *a[1:]]
    found = agreement(a, one_flip)
    assert (found.flipped, found.same) == (1, True)  # 1 of 300 is within 0.5%
    two_flips = [(0.2, 0.7, 0.1)] * 2 + a[2:]
    assert not agreement(a, two_flips).same
    nudged = [(0.66, 0.24, 0.1)] * 300
    assert agreement(a, nudged).flipped == 0
    assert not agreement(a, nudged).same  # a mean shift over 0.01
