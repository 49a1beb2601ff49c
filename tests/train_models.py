"""Retrain every shipped model in dependency order, deterministically, with the pinned
toolchain (`pip install -e '.[train]'`), and record each in bot/classify/data/training.json.

.venv/bin/python -m tests.train_models           # write every model file
.venv/bin/python -m tests.train_models --check   # exit 1 when any predicts otherwise

Order: the role model weighs the audience model's clauses, and the blend reads the verdict
model's out-of-fold readings, so roles and verdicts come first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from tests import train_audience_model, train_role_model, train_verdict_blend, train_verdict_model

STEPS: tuple[Callable[[list[str] | None], int], ...] = (
    train_role_model.main,
    train_verdict_model.main,
    train_verdict_blend.main,
    train_audience_model.main,
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    failed = [step.__module__ for step in STEPS if step(args) != 0]
    if failed:
        print(f"stale: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
