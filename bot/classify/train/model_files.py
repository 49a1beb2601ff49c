"""Writing and checking a learned model's file: the shared `--check` workflow of the
training scripts."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TypeVar

from bot.classify.models import FORMAT, RoleModel, VerdictWeights, model_text
from bot.domain import Verdict

# The label order of every three-verdict model (verdict, blend, audience).
VERDICT_CLASSES = (Verdict.DEEP, Verdict.SKIM, Verdict.SKIP)


M = TypeVar("M", bound=RoleModel | VerdictWeights)


def model_json(model: RoleModel | VerdictWeights) -> str:
    """The model file that `from_json` reads (a role model's whole weights written short)."""
    weights = sorted(model.weights.items())
    if isinstance(model, RoleModel):
        labels = ("roles", list(model.roles))
        rows: dict[str, list[float]] = {
            g: [int(x) if x == int(x) else x for x in w] for g, w in weights
        }
    else:
        labels = ("classes", [v.value for v in model.classes])
        rows = {g: list(w) for g, w in weights}
    body = {
        "format": FORMAT,
        labels[0]: labels[1],
        "intercept": list(model.intercept),
        "weights": rows,
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")) + "\n"


# --check refits a model and compares what the two models predict on the labelled sets, not
# their bytes: another scikit-learn, numpy or BLAS reaches the same optimum to within rounding,
# which moves weights in their last digits but not the answers. Measured with scikit-learn
# 1.9.1 against files written by 1.5: at most 0.1% of decisions flipped, mean shift < 0.002.
MAX_FLIPPED = 0.005  # share of examples whose most probable class may differ
MAX_MEAN_SHIFT = 0.01  # mean absolute difference of the predicted probabilities
MANIFEST = Path(__file__).resolve().parent.parent / "data" / "training.json"
TOOLCHAIN = ("scikit-learn", "numpy", "scipy")


@dataclass(frozen=True)
class Agreement:
    """How far two models' predictions on the same examples are apart."""

    examples: int
    flipped: int
    mean_shift: float

    @property
    def same(self) -> bool:
        return self.flipped <= MAX_FLIPPED * self.examples and self.mean_shift <= MAX_MEAN_SHIFT

    def __str__(self) -> str:
        return (
            f"{self.flipped} of {self.examples} decisions differ "
            f"(at most {MAX_FLIPPED:.1%}), mean probability shift {self.mean_shift:.4f} "
            f"(at most {MAX_MEAN_SHIFT})"
        )


def agreement(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]]) -> Agreement:
    """Compare two models' probability vectors, example by example."""
    if len(a) != len(b):
        raise ValueError("the two models were scored on different examples")
    flipped = 0
    shift = 0.0
    cells = 0
    for u, v in zip(a, b, strict=True):
        flipped += max(range(len(u)), key=u.__getitem__) != max(range(len(v)), key=v.__getitem__)
        shift += sum(abs(x - y) for x, y in zip(u, v, strict=True))
        cells += len(u)
    return Agreement(len(a), flipped, shift / cells if cells else 0.0)


def softmax_predictions(
    model: VerdictWeights, rows: Iterable[dict[str, float]]
) -> list[tuple[float, ...]]:
    """A three-verdict model's probabilities for each row, in its class order."""
    return [tuple(model.row_proba(row).values()) for row in rows]


def training_data_digest() -> str:
    """sha256 over every development set's files: what the models are trained on."""
    from bot.classify.train.labelled import DEV_SETS, set_files

    digest = hashlib.sha256()
    for name in DEV_SETS:
        for path in set_files(name):
            digest.update(path.name.encode("utf-8") + b"\0" + path.read_bytes())
    return digest.hexdigest()


def toolchain() -> dict[str, str]:
    return {name: metadata.version(name) for name in TOOLCHAIN}


def read_manifest() -> dict[str, dict[str, object]]:
    """What each shipped model file was trained from: `{file name: {...}}`."""
    if not MANIFEST.exists():
        return {}
    body: dict[str, dict[str, object]] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return body


def record_training(path: Path) -> None:
    """Note in the manifest the file's digest, the data it was trained on and the toolchain."""
    manifest = read_manifest()
    manifest[path.name] = {
        "sha256": hashlib.sha256(model_text(path).encode("utf-8")).hexdigest(),
        "trained_on": training_data_digest(),
        "toolchain": toolchain(),
    }
    text = json.dumps(dict(sorted(manifest.items())), indent=2, sort_keys=True) + "\n"
    MANIFEST.write_text(text, encoding="utf-8")


def write_or_check(
    argv: list[str] | None,
    doc: str,
    default: Path,
    fit: Callable[[], M],
    read: Callable[[str], M],
    predict: Callable[[M], Sequence[Sequence[float]]],
    command: str,
) -> int:
    """Train with `fit`; write the file (and its manifest entry), or with --check exit 1 when
    the shipped file predicts otherwise than the model trained now."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    model = fit()
    if not args.check:
        text = model_json(model).encode("utf-8")
        gzipped = args.out.suffix == ".gz"
        args.out.write_bytes(gzip.compress(text, compresslevel=9, mtime=0) if gzipped else text)
        if args.out.resolve().parent == MANIFEST.parent:
            record_training(args.out)
        print(f"wrote {args.out}: {len(model.weights)} features")
        return 0
    found = agreement(predict(model), predict(read(model_text(args.out))))
    if found.same:
        print(f"{args.out}: up to date ({found})")
        return 0
    print(f"{args.out} is stale: {found}; run {command}", file=sys.stderr)
    return 1


def fit_softmax(
    rows: list[dict[str, float]],
    labels: list[int],
    classes: int,
    *,
    c: float,
    min_count: int,
    prune: float,
    digits: int,
) -> tuple[tuple[float, ...], dict[str, tuple[float, ...]]]:
    """Fit a multinomial logistic regression (scikit-learn, deterministic) on feature rows.

    Features in fewer than `min_count` rows are dropped; weights are rounded to `digits`
    and a feature whose largest weight is under `prune` is left out. Returns the intercept
    and the weights, one per class in label order.
    """
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.linear_model import LogisticRegression

    seen = Counter(g for row in rows for g in row)
    rows = [{g: v for g, v in row.items() if seen[g] >= min_count} for row in rows]
    vectorizer = DictVectorizer(sort=True)
    x = vectorizer.fit_transform(rows)
    fitted = LogisticRegression(C=c, max_iter=10_000, tol=1e-6).fit(x, labels)
    order = [list(fitted.classes_).index(i) for i in range(classes)]
    coef = fitted.coef_
    weights: dict[str, tuple[float, ...]] = {}
    for j, gram in enumerate(vectorizer.get_feature_names_out()):
        w = tuple(round(float(coef[k, j]), digits) for k in order)
        if max(abs(v) for v in w) >= prune:
            weights[str(gram)] = w
    intercept = tuple(round(float(fitted.intercept_[k]), digits) for k in order)
    return intercept, weights
