"""Training of the classifier's models, and the record of what the classifier decides: part
of the product's source, run from a checkout.

Retrains every shipped model in dependency order, deterministically, with the pinned
toolchain (`pip install -e '.[train]'`), from the labelled sets in tests/fixtures
(`labelled`), and records in bot/classify/data/training.json what they were fitted from
(`inputs`). scikit-learn is imported only when a model is fitted, so the product runs
without it. May import `bot.classify`, `bot.domain` and `bot.notes.ingest` (the note
parser the sets are read with).

.venv/bin/python -m bot.classify.train           # retrain: write every model file that changed
.venv/bin/python -m bot.classify.train --check   # exit 1 unless retraining writes the same bytes
.venv/bin/python -m bot.classify.train diff      # the decisions that differ from the recorded
.venv/bin/python -m bot.classify.train record    # record the classifier's decisions

Order: the role model weighs the audience model's clauses, and the blend reads the verdict
model's out-of-fold readings, so roles and verdicts come first.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from bot.classify.models import (
    AUDIENCE_MODEL_PATH,
    BLEND_PATH,
    ROLE_MODEL_PATH,
    VERDICT_MODEL_PATH,
    AudienceModel,
    BlendModel,
    RoleModel,
    VerdictModel,
    VerdictWeights,
)
from bot.classify.taxonomy import load_taxonomy
from bot.classify.train import audiences, blend, inputs, outputs, roles, verdicts
from bot.classify.train.labelled import development_notes
from bot.classify.train.model_files import (
    COMMAND,
    MANIFEST,
    PINNED_BLAS,
    agreement,
    blas_in_use,
    manifest_text,
    model_json,
    shipped_text,
    softmax_predictions,
    write_file,
)

M = TypeVar("M", bound=RoleModel | VerdictWeights)


@dataclass(frozen=True)
class Trained:
    """One model file as training makes it: its text, and how many of the decisions on its
    training examples a model read from other text (the shipped file's) makes otherwise."""

    path: Path
    text: str
    differing: Callable[[str], str]  # another text of the file -> "N of M decisions differ"


def trained(
    path: Path,
    model: M,
    read: Callable[[str], M],
    predict: Callable[[M], Sequence[Sequence[float]]],
) -> Trained:
    def differing(other: str) -> str:
        try:
            return str(agreement(predict(model), predict(read(other))))
        except (ValueError, KeyError) as exc:  # other roles or classes, or no model file
            return f"not comparable ({exc})"

    return Trained(path, model_json(model), differing)


def train_all() -> list[Trained]:
    """Fit every model; return each model file and the manifest, as training writes them."""
    notes = development_notes()
    slugs = load_taxonomy(None).slugs
    learnable = roles.labelled_roles(notes, slugs)
    for role in slugs:
        if role not in learnable:
            print(f"no labelled notes for {role}: the role model leaves it to the rules")

    started = time.monotonic()
    role_model = roles.train(notes, learnable)

    def role_predictions(model: RoleModel) -> list[tuple[float, float]]:
        if model.roles != role_model.roles:
            raise ValueError(f"roles {', '.join(model.roles)}, not {', '.join(learnable)}")
        return roles.predictions(model, notes)

    files = [trained(ROLE_MODEL_PATH, role_model, RoleModel.from_json, role_predictions)]
    _done("role model", role_model.weights, started)

    started = time.monotonic()
    verdict_model = verdicts.train(notes)
    rows = [verdicts.vector(n.paragraph) for n in notes]
    files.append(trained(VERDICT_MODEL_PATH, verdict_model, VerdictModel.from_json, _on(rows)))
    _done("verdict model", verdict_model.weights, started)

    started = time.monotonic()
    rows, labels = blend.examples()
    blend_model = blend.fit(rows, labels)
    files.append(trained(BLEND_PATH, blend_model, BlendModel.from_json, _on(rows)))
    _done("blend", blend_model.weights, started)

    started = time.monotonic()
    rows, labels = audiences.examples(notes, role_model)
    audience_model = audiences.fit(rows, labels)
    files.append(trained(AUDIENCE_MODEL_PATH, audience_model, AudienceModel.from_json, _on(rows)))
    _done("audience model", audience_model.weights, started)

    blas = blas_in_use()
    if blas != PINNED_BLAS:
        print(
            f"warning: the BLAS ran as {'; '.join(blas)}, not as {'; '.join(PINNED_BLAS)} "
            f"as the shipped files were made: weights may differ in their last digits "
            f"(run `{COMMAND}` in a process of its own on an x86-64 CPU)",
            file=sys.stderr,
        )
    manifest = manifest_text(
        {t.path.name: t.text for t in files},
        inputs.fitted_from(role_model),
        inputs.training_settings(),
        blas,
    )
    return [*files, Trained(MANIFEST, manifest, manifest_change(manifest))]


def _on(rows: list[dict[str, float]]) -> Callable[[VerdictWeights], list[tuple[float, ...]]]:
    """A three-verdict model's probabilities on `rows`."""
    return lambda model: softmax_predictions(model, rows)


def _done(what: str, weights: dict[str, tuple[float, ...]], started: float) -> None:
    print(f"fitted the {what}: {len(weights):,} features, {time.monotonic() - started:.0f} s")


def write(files: list[Trained]) -> int:
    """Write every file whose text changed; leave the others byte for byte as they are."""
    for entry in files:
        print(
            f"{entry.path.name}: {'written' if write_file(entry.path, entry.text) else 'unchanged'}"
        )
    return 0


def check(files: list[Trained]) -> int:
    """Exit 1 unless every file holds exactly the text training would write; say how the
    others differ."""
    stale: list[str] = []
    for entry in files:
        found = shipped_text(entry.path)
        if found == entry.text:
            print(f"{entry.path.name}: as shipped")
            continue
        stale.append(entry.path.name)
        print(
            f"{entry.path.name}: differs: {'missing' if found is None else entry.differing(found)}"
        )
    if stale:
        print(f"stale: {', '.join(stale)}; run `{COMMAND}`", file=sys.stderr)
        return 1
    return 0


def manifest_change(now: str) -> Callable[[str], str]:
    """How another text of the manifest differs from `now`: which entries, and within one
    which parts ("fitted from: rule data, rules' readings")."""

    def change(other: str) -> str:
        old, new = json.loads(other), json.loads(now)
        parts: list[str] = []
        for key in sorted(old.keys() | new.keys()):
            a, b = old.get(key), new.get(key)
            if a == b:
                continue
            if isinstance(a, dict) and isinstance(b, dict):
                inner = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
                parts.append(f"{key}: {', '.join(inner)}")
            else:
                parts.append(key)
        return "; ".join(parts) or "formatting"

    return change


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=COMMAND,
        description="Retrain the classifier's models, or compare and record "
        "what the classifier decides on the labelled sets.",
    )
    parser.add_argument(
        "command",
        nargs="?",
        choices=("diff", "record"),
        help="diff: print the decisions that differ from the recorded ones; record: record "
        "them (after a retraining, with a new CLASSIFIER_VERSION when they changed)",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 unless every file is as shipped"
    )
    parser.add_argument(
        "--outputs",
        type=Path,
        default=outputs.OUTPUTS,
        help="the recorded outputs (default: tests/fixtures/classifier_outputs.json)",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.command == "diff":
        return outputs.diff(args.outputs)
    if args.command == "record":
        return outputs.record(args.outputs)
    started = time.monotonic()
    files = train_all()
    done = check(files) if args.check else write(files)
    print(f"trained in {time.monotonic() - started:.0f} s")
    return done
