"""Writing and checking a learned model's file: the shared `--check` workflow of the
training scripts."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar

from bot.domain import Verdict
from bot.verdict_model import VerdictWeights

# The label order of every three-verdict model (verdict, blend, audience).
VERDICT_CLASSES = (Verdict.DEEP, Verdict.SKIM, Verdict.SKIP)


class ModelFile(Protocol):
    @property
    def intercept(self) -> tuple[float, ...]: ...

    @property
    def weights(self) -> Mapping[str, Sequence[float]]: ...

    def to_json(self) -> str: ...


M = TypeVar("M", bound=ModelFile)


def same_weights(a: ModelFile, b: ModelFile, tolerance: float) -> bool:
    """The same features, and every weight and intercept within `tolerance`."""
    if set(a.weights) ^ set(b.weights):
        return False
    pairs = [(a.intercept, b.intercept), *((a.weights[g], b.weights[g]) for g in a.weights)]
    return all(abs(x - y) <= tolerance for u, v in pairs for x, y in zip(u, v, strict=True))


def same_softmax(a: VerdictWeights, b: VerdictWeights, tolerance: float) -> bool:
    """The same verdicts in the same order, and `same_weights`."""
    return a.classes == b.classes and same_weights(a, b, tolerance)


def write_or_check(
    argv: list[str] | None,
    doc: str,
    default: Path,
    fit: Callable[[], M],
    read: Callable[[str], M],
    same: Callable[[M, M], bool],
    command: str,
) -> int:
    """Train with `fit`; write the file, or with --check exit 1 when it differs."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    model = fit()
    if not args.check:
        args.out.write_text(model.to_json(), encoding="utf-8")
        print(f"wrote {args.out}: {len(model.weights)} features")
        return 0
    if same(model, read(args.out.read_text(encoding="utf-8"))):
        print(f"{args.out}: up to date ({len(model.weights)} features)")
        return 0
    print(f"{args.out} is stale: run {command}", file=sys.stderr)
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
