"""How often a second reader agrees with a set's labels, and the classifier beside them.

A second reader labelled the verdicts of `unseen_v9` and of `val1`+`val2` from the notes
alone (told only which roles each note is for, which groups it sets apart and whether it
speaks to everyone else), without seeing the labels. Their agreement with the labels is
the most a classifier can be expected to score on the set; the classifier is also scored
on the notes where both readers agree. Aggregates only.

.venv/bin/python -m tests.bench.agreement
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bot.classify import build_classifier
from bot.taxonomy import load_taxonomy
from tests.fixtures_util import FIXTURES
from tests.labelled import Labelled, load_set, verdict_right

# The second reader's answers: the file, and the sets whose notes it answers, in order.
ANSWERS = {
    "second_reader_unseen_v9.jsonl": ("unseen_v9",),
    "second_reader_val1_val2.jsonl": ("val1", "val2"),
}


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


def answers(name: str) -> list[Answer]:
    rows = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line]
    rows.sort(key=lambda row: int(row["id"]))
    return [Answer(r["verdict"], dict(r.get("groups") or {}), r.get("others")) for r in rows]


def main() -> None:
    taxonomy = load_taxonomy(None)
    classifier = build_classifier(taxonomy)
    for name, sets in ANSWERS.items():
        notes = [note for s in sets for note in load_set(s)]
        second = answers(name)
        if len(second) != len(notes):
            raise SystemExit(f"{name}: {len(second)} answers for {len(notes)} notes")
        main_agree = both_agree = right = right_where_agreed = 0
        for label, answer in zip(notes, second, strict=True):
            main_ok, all_ok = answer.agrees(label)
            got = classifier.classify(label.title, label.paragraph)
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


if __name__ == "__main__":
    main()
