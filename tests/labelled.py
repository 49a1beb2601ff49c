"""The labelled note sets and how a classifier is scored on them (aggregates only), for
tests and benches: the sets are loaded by `bot.classify.train.labelled` and scored by
`bot.classify.train.scores`.

Which sets there are, and what each was used for, is told in
`bot/classify/train/labelled.py` and tests/fixtures/README.md.
"""

from __future__ import annotations

from bot.classify.train.labelled import (
    DEV_SETS,
    FROZEN,
    RETIRED,
    UNSEEN,
    VALIDATION_SETS,
    Labelled,
    development_notes,
    frozen_digest,
    load_set,
    set_files,
    unseen_digest,
)
from bot.classify.train.scores import (
    NAMED_ROLES,
    RoleScore,
    SetScore,
    count_roles,
    named_macro_f1,
    score,
    score_readings,
    verdict_right,
)

__all__ = [
    "DEV_SETS",
    "FROZEN",
    "NAMED_ROLES",
    "RETIRED",
    "UNSEEN",
    "VALIDATION_SETS",
    "Labelled",
    "RoleScore",
    "SetScore",
    "count_roles",
    "development_notes",
    "frozen_digest",
    "load_set",
    "named_macro_f1",
    "score",
    "score_readings",
    "set_files",
    "unseen_digest",
    "verdict_right",
]
