"""The shipped model files, checked without refitting them: each is the file its training
wrote, fitted from what this checkout holds (the labelled sets, the rule data, the rules'
readings and the features), with the pinned toolchain and BLAS. The slow suite refits every
model and compares the bytes (tests/slow/test_training.py)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from bot.classify.models import VerdictModel, model_text
from bot.classify.train import check, manifest_change, trained
from bot.classify.train.inputs import training_settings
from bot.classify.train.model_files import (
    MANIFEST,
    NUMERICS,
    PINNED_BLAS,
    TOOLCHAIN,
    VERDICT_CLASSES,
    agreement,
    model_json,
    read_manifest,
    softmax_predictions,
    text_digest,
    write_file,
)
from bot.classify.train.outputs import stale_inputs

DATA = MANIFEST.parent
MODEL_FILES = (
    "role_model.json.gz",
    "verdict_model.json.gz",
    "audience_model.json.gz",
    "verdict_blend.json",
)
ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def test_the_manifest_names_every_model_file() -> None:
    assert sorted(read_manifest()["files"]) == sorted(MODEL_FILES)
    assert sorted(p.name for p in DATA.glob("*.json*") if p != MANIFEST) == sorted(MODEL_FILES)


@pytest.mark.parametrize("name", MODEL_FILES)
def test_each_model_file_is_what_its_training_wrote(name: str) -> None:
    found = text_digest(model_text(DATA / name))
    assert found == read_manifest()["files"][name], f"{name} was changed by hand: retrain it"


def test_the_models_were_fitted_from_what_the_checkout_holds() -> None:
    stale = stale_inputs()
    assert not stale, (
        f"the model files were fitted from other {', '.join(stale)}: retrain with "
        f"`python -m bot.classify.train`"
    )


def test_the_recorded_settings_are_the_training_settings() -> None:
    assert read_manifest()["settings"] == training_settings(), (
        "a training setting changed: retrain with `python -m bot.classify.train`"
    )


def test_training_used_the_pinned_toolchain_and_blas() -> None:
    """The versions the `train` extra pins, and the BLAS kernels and threads the entry point
    pins, are the ones the shipped files were made with."""
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    pinned: dict[str, str] = {}
    for line in extras["optional-dependencies"]["train"]:
        requirement = Requirement(line)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"{line}: training needs exact versions"
        pinned[requirement.name] = spec.version
    assert set(pinned) == set(TOOLCHAIN)
    assert read_manifest()["toolchain"] == pinned
    assert read_manifest()["blas"] == PINNED_BLAS


def test_the_entry_point_pins_the_blas_before_numpy_is_loaded() -> None:
    """Whatever the caller's environment says, the training runs on one thread with the
    kernels the shipped files were made with."""
    code = (
        "import sys\n"
        "sys.argv = ['train', '--help']\n"
        "try:\n"
        "    import bot.classify.train.__main__\n"
        "except SystemExit:\n"
        "    pass\n"
        "import sklearn.linear_model\n"
        "from bot.classify.train.model_files import blas_in_use\n"
        "print(blas_in_use())\n"
    )
    env = {**os.environ, **dict.fromkeys(NUMERICS, "4"), "OPENBLAS_CORETYPE": "Prescott"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == repr(PINNED_BLAS)


def test_a_gzipped_file_keeps_its_bytes_while_its_text_is_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "model.json.gz"
    text = '{"format":1}\n'
    assert write_file(path, text)
    raw = path.read_bytes()
    assert raw[4:8] == b"\0\0\0\0", "no time in the gzip header"
    assert not raw[3] & 0x08, "no file name in the gzip header"
    assert (
        write_file(tmp_path / "again.json.gz", text)
        and (tmp_path / "again.json.gz").read_bytes() == raw
    )
    other = gzip.compress(text.encode(), compresslevel=1, mtime=1_700_000_000)
    path.write_bytes(other)  # as another zlib, or an older writer, left it
    assert not write_file(path, text)
    assert path.read_bytes() == other
    assert write_file(path, '{"format":2}\n')
    assert model_text(path) == '{"format":2}\n'
    plain = tmp_path / "blend.json"
    assert write_file(plain, text) and plain.read_text(encoding="utf-8") == text
    assert not write_file(plain, text)


def test_agreement_counts_every_flipped_decision() -> None:
    a = [(0.7, 0.2, 0.1)] * 300
    assert agreement(a, a).flipped == 0 and agreement(a, a).mean_shift == 0.0
    one_flip = [(0.2, 0.7, 0.1), *a[1:]]
    assert agreement(a, one_flip).flipped == 1
    assert str(agreement(a, one_flip)).startswith("1 of 300 decisions differ")
    nudged = [(0.66, 0.24, 0.1)] * 300
    assert agreement(a, nudged).flipped == 0 and agreement(a, nudged).mean_shift > 0.02
    with pytest.raises(ValueError, match="different examples"):
        agreement(a, a[1:])


def test_check_names_each_file_that_differs_and_counts_its_decisions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No tolerance: a file is as shipped only with exactly the text training would write."""
    model = VerdictModel(VERDICT_CLASSES, (0.0, 0.0, 0.0), {"a": (1.0, 0.0, 0.0)})
    rows = [{"a": 1.0}, {"b": 1.0}, {"a": 0.5}]

    def on_rows(m: VerdictModel) -> list[tuple[float, ...]]:
        return softmax_predictions(m, rows)

    same, moved, missing = tmp_path / "same.json", tmp_path / "moved.json.gz", tmp_path / "x.json"
    write_file(same, model_json(model))
    write_file(moved, model_json(replace(model, intercept=(0.0, 0.7, 0.0))))
    files = [trained(p, model, VerdictModel.from_json, on_rows) for p in (same, moved, missing)]
    assert check(files[:1]) == 0
    assert check(files) == 1
    out = capsys.readouterr()
    assert "same.json: as shipped" in out.out
    assert "moved.json.gz: differs: 2 of 3 decisions differ" in out.out
    assert "x.json: differs: missing" in out.out
    assert "stale: moved.json.gz, x.json; run `python -m bot.classify.train`" in out.err
    write_file(moved, model_json(replace(model, intercept=(0.0, 0.0, 1e-4))))
    assert check(files[1:2]) == 1, "a change in the last digit is a difference"


def test_a_changed_manifest_says_which_of_its_entries_differ() -> None:
    now = json.dumps({"fitted from": {"rule data": "a", "features": "b"}, "toolchain": {}})
    was = json.dumps({"fitted from": {"rule data": "c", "features": "b"}, "toolchain": {}})
    assert manifest_change(now)(was) == "fitted from: rule data"
    assert manifest_change(now)(json.dumps({"toolchain": {}})) == "fitted from"
