"""Where each cue of the rule data fires: the development sets and writers of every literal
phrase, regex alternative and anchor (tests/support/cue_usage.py says how they are found).

Cues that fire on fewer than two writers' sets and are no marked dictionary idiom are flagged
(`tests/unit/test_cue_usage.py` fails on them). By default only those are listed; `--all`
lists every cue.

.venv/bin/python -m tests.bench.cue_usage [--all] [--table lexicon]
"""

from __future__ import annotations

import argparse
from collections import Counter

from tests.support.cue_usage import MIN_WRITERS, NOT_HELD, cue_usage, in_dictionary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list every cue, not only the rare")
    parser.add_argument("--table", help="only this table (lexicon, families, audiences, ...)")
    args = parser.parse_args()
    usage = cue_usage()
    rare = set(usage.rare())
    shown = sorted(c for c in usage.sets if (args.all or c in rare))
    if args.table:
        shown = [c for c in shown if c.table == args.table]
    print("| table | where | cue | writers | sets | |")
    print("|---|---|---|---|---|---|")
    for cue in shown:
        sets = sorted(usage.sets[cue], key=lambda s: (len(s), s))
        listed = ", ".join(sets[:8]) + (f" (+{len(sets) - 8})" if len(sets) > 8 else "")
        flag = "dictionary" if in_dictionary(cue) else ("RARE" if cue in rare else "")
        text = cue.text.replace("|", "\\|")
        writers = len(usage.writers(cue))
        print(f"| {cue.table} | {cue.where} | `{text}` | {writers} | {listed} | {flag} |")
    counts = Counter(c.table for c in usage.sets)
    flagged = Counter(c.table for c in rare)
    print()
    for table, n in sorted(counts.items()):
        if table in NOT_HELD:  # the taxonomy's names for its readers, the grammar
            few = sum(len(usage.writers(c)) < MIN_WRITERS for c in usage.sets if c.table == table)
            print(f"{table}: {n} cues, {few} on fewer than {MIN_WRITERS} writers' sets (not held)")
            continue
        print(f"{table}: {n} cues, {flagged[table]} on fewer than {MIN_WRITERS} writers' sets")


if __name__ == "__main__":
    main()
