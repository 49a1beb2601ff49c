"""Writing and checking a learned model's file: the shared `--check` workflow of the
training scripts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypeVar


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
