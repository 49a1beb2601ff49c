"""Training of the classifier's models: part of the product's source, run from a checkout.

Retrains every shipped model in dependency order, deterministically, with the pinned
toolchain (`pip install -e '.[train]'`), from the labelled sets in tests/fixtures
(`labelled`), and records each in bot/classify/data/training.json. scikit-learn is imported
only when a model is fitted, so the product runs without it. May import `bot.classify`,
`bot.domain` and `bot.ingest` (the note parser the sets are read with).

.venv/bin/python -m bot.classify.train           # write every model file
.venv/bin/python -m bot.classify.train --check   # exit 1 when any predicts otherwise

Order: the role model weighs the audience model's clauses, and the blend reads the verdict
model's out-of-fold readings, so roles and verdicts come first.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from bot.classify.train import audiences, blend, roles, verdicts

STEPS: tuple[Callable[[list[str] | None], int], ...] = (
    roles.main,
    verdicts.main,
    blend.main,
    audiences.main,
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    failed = [step.__module__ for step in STEPS if step(args) != 0]
    if failed:
        print(f"stale: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
