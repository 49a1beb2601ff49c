"""Writing and checking the learned models' files: their JSON text, their bytes, the
manifest (`training.json`) that says what they were fitted from, and the fitting itself."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from bot.classify.models import FORMAT, RoleModel, VerdictWeights, model_text
from bot.domain import Verdict

# The label order of every three-verdict model (verdict, blend, audience).
VERDICT_CLASSES = (Verdict.DEEP, Verdict.SKIM, Verdict.SKIP)


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


COMMAND = "python -m bot.classify.train"  # the entry point that trains and records
MANIFEST = Path(__file__).resolve().parent.parent / "data" / "training.json"
TOOLCHAIN = ("scikit-learn", "numpy", "scipy")

# How the shipped files' floating-point sums were done. An optimiser's path, and so the last
# digits of a weight, depend on the order of additions inside the BLAS: its thread count and
# the CPU kernels it picked (SkylakeX and Haswell kernels give different files). The entry
# point sets these before numpy is loaded; Haswell's kernels run on every x86-64 CPU with
# AVX2 (Intel since 2013, every AMD Zen).
NUMERICS = {
    "OPENBLAS_NUM_THREADS": "1",
    "OPENBLAS_CORETYPE": "Haswell",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


def blas_in_use() -> list[str]:
    """The BLAS and OpenMP libraries loaded, with their kernels and threads (call after a fit
    has loaded them)."""
    from threadpoolctl import threadpool_info

    found = {
        f"{pool['internal_api']} {pool.get('architecture') or ''}, {pool['num_threads']} thread"
        for pool in threadpool_info()
    }
    return sorted(line.replace(" ,", ",") for line in found)


# What `blas_in_use` says when the libraries run as NUMERICS pins them.
PINNED_BLAS = ["openblas Haswell, 1 thread", "openmp, 1 thread"]


@dataclass(frozen=True)
class Agreement:
    """How far two models' predictions on the same examples are apart."""

    examples: int
    flipped: int
    mean_shift: float

    def __str__(self) -> str:
        return (
            f"{self.flipped:,} of {self.examples:,} decisions differ, "
            f"mean probability shift {self.mean_shift:.4f}"
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


def toolchain() -> dict[str, str]:
    return {name: metadata.version(name) for name in TOOLCHAIN}


def read_manifest() -> dict[str, Any]:
    """What the shipped model files were trained from (`manifest_text` writes it)."""
    if not MANIFEST.exists():
        return {}
    body: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return body


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def manifest_text(
    files: dict[str, str],
    fitted_from: dict[str, str],
    settings: dict[str, dict[str, float]],
    blas: list[str],
) -> str:
    """training.json: each model file's sha256 (of its JSON text), the digests of what the
    models were fitted from, the training settings, the toolchain and the BLAS it ran on."""
    body = {
        "files": {name: text_digest(text) for name, text in sorted(files.items())},
        "fitted from": fitted_from,
        "settings": settings,
        "toolchain": toolchain(),
        "blas": blas,
    }
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def shipped_text(path: Path) -> str | None:
    """The JSON text of a shipped file (a model file or the manifest), or None without one."""
    return model_text(path) if path.exists() else None


def file_bytes(path: Path, text: str) -> bytes:
    """The bytes of a file holding `text`: gzipped with no name and time in its header for
    `.gz`, so the same text gives the same bytes with the same zlib."""
    raw = text.encode("utf-8")
    return gzip.compress(raw, compresslevel=9, mtime=0) if path.suffix == ".gz" else raw


def write_file(path: Path, text: str) -> bool:
    """Write `text` to `path` unless the file holds it already (a gzipped file then keeps its
    bytes, whichever zlib wrote them). True when the file was written."""
    if shipped_text(path) == text:
        return False
    path.write_bytes(file_bytes(path, text))
    return True


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
