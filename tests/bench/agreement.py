"""How often a second reader agrees with a set's labels, and the classifier beside them.

A second reader labelled the verdicts of `unseen_v9` and of `val1`+`val2` from the notes
alone (told only which roles each note is for, which groups it sets apart and whether it
speaks to everyone else), without seeing the labels. Their agreement with the labels is
the most a classifier can be expected to score on the set; the classifier is also scored
on the notes where both readers agree. The second reader also chose the roles of
`unseen_v9`'s notes from the title and paragraph alone; their named-role macro-F1 against
the labels is printed beside the classifier's. Aggregates only.

.venv/bin/python -m tests.bench.agreement
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.classify import build_classifier
from bot.classify.taxonomy import load_taxonomy
from bot.domain import Classification
from tests.labelled import (
    Labelled,
    RoleScore,
    count_roles,
    load_set,
    named_macro_f1,
    verdict_right,
)
from tests.support.notefiles import FIXTURES

# The second reader's answers: the file, and the sets whose notes it answers, in order.
ANSWERS = {
    "second_reader_unseen_v9.jsonl": ("unseen_v9",),
    "second_reader_val1_val2.jsonl": ("val1", "val2"),
}
# The second reader's roles for each note: the file, and the set whose notes it answers.
ROLE_ANSWERS = {"second_reader_unseen_v9_roles.jsonl": "unseen_v9"}


@dataclass(frozen=True)
class Answer:
    verdict: str
    groups: dict[str, str]
    others: str | None

    def agrees(self, label: Labelled) -> tuple[bool, bool]:
        """(the main verdict agrees, every verdict of the note agrees)."""
        main = self.verdict == label.verdict
        groups = all(self.groups.get(r) == v for r, v in label.role_verdicts.items())
        others = label.others_verdict is None or self.others == label.others_verdict
        return main, main and groups and others


def _rows(name: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line]
    return sorted(rows, key=lambda row: int(row["id"]))


def answers(name: str) -> list[Answer]:
    """The second reader's verdicts in file `name`, in the order of its sets' notes."""
    return [Answer(r["verdict"], dict(r.get("groups") or {}), r.get("others")) for r in _rows(name)]


def role_answers(name: str) -> list[list[str]]:
    """The second reader's roles in file `name`, in the order of its set's notes."""
    return [list(r["roles"]) for r in _rows(name)]


def named_f1(notes: list[Labelled], chosen: list[tuple[str, ...]], slugs: tuple[str, ...]) -> float:
    """Named-role macro-F1 of `chosen` (one tuple of roles per note) against the labels."""
    per_role = {s: RoleScore() for s in slugs}
    for label, roles in zip(notes, chosen, strict=True):
        count_roles(per_role, label, roles)
    return named_macro_f1({s: v.f1 for s, v in per_role.items()})


def main() -> None:
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    classified: dict[str, list[Classification]] = {}  # each set's notes, classified once

    def classify_set(name: str) -> list[Classification]:
        if name not in classified:
            classified[name] = [classifier.classify(n.title, n.paragraph) for n in load_set(name)]
        return classified[name]

    for name, sets in ANSWERS.items():
        notes = [note for s in sets for note in load_set(s)]
        ours = [got for s in sets for got in classify_set(s)]
        second = answers(name)
        if len(second) != len(notes):
            raise SystemExit(f"{name}: {len(second)} answers for {len(notes)} notes")
        main_agree = both_agree = right = right_where_agreed = 0
        for label, answer, got in zip(notes, second, ours, strict=True):
            main_ok, all_ok = answer.agrees(label)
            ok = verdict_right(label, got, taxonomy.slugs)
            main_agree += main_ok
            both_agree += all_ok
            right += ok
            right_where_agreed += ok and all_ok
        n = len(notes)
        print(
            f"{'+'.join(sets)} ({n} notes): the second reader agrees on {both_agree / n:.3f} "
            f"(main verdict {main_agree / n:.3f}); the classifier {right / n:.3f}, and "
            f"{right_where_agreed / max(both_agree, 1):.3f} on the {both_agree} notes both "
            "readers agree on"
        )
    for name, set_name in ROLE_ANSWERS.items():
        notes = load_set(set_name)
        second_roles = [tuple(r) for r in role_answers(name)]
        our_roles = [got.roles for got in classify_set(set_name)]
        print(
            f"{set_name} roles: the second reader's named-role macro-F1 "
            f"{named_f1(notes, second_roles, taxonomy.slugs):.3f}, the classifier's "
            f"{named_f1(notes, our_roles, taxonomy.slugs):.3f}"
        )


if __name__ == "__main__":
    main()
