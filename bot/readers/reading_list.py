"""Which notes each reader gets in a weekly DM.

A reader's DM holds, each note at most once: the new notes of their roles that pass the
role's verdict filter (under the note's primary role when subscribed to it); then, under
one heading per saved search (`watch`), the new notes with every word of it (a role word:
that role's notes) that no role section took; then, in the first digest after a pause, a
capped "while you were away" section with the notes posted during the pause that match
their roles or searches.

`select_reading` is pure; `ReadingPlan.prepare` gathers what it needs from the store and
the ledger once per digest run, before the run's DM plan is fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bot.classify.taxonomy import Taxonomy
from bot.domain import Note, Pause, Reader
from bot.notes.search import match_ids, parse_query
from bot.store import Store
from bot.store.ledger import Ledger

AWAY_MAX_NOTES = 15  # notes in a "while you were away" section


@dataclass(frozen=True)
class ReadingSection:
    """One heading of a reader's DM.

    `kind` is "role" (then `role` is its slug), "watch" (`query` is the saved search) or
    "away" (`pause` is the pause it covers; `more` notes did not fit under the cap).
    """

    kind: str
    notes: tuple[Note, ...]
    role: str | None = None
    query: str = ""
    pause: Pause | None = None
    more: int = 0


def _newest_best(rank: Callable[[Note], int]) -> Callable[[Note], tuple[int, float, int]]:
    return lambda n: (rank(n), -n.ingested_at.timestamp(), -n.id)


def _role_order(slug: str) -> Callable[[Note], tuple[int, float, int]]:
    return _newest_best(lambda n: n.verdict_for(slug).rank)


def select_reading(
    reader: Reader,
    notes: Sequence[Note],
    sent: set[int],
    taxonomy: Taxonomy,
    watch_hits: Mapping[str, set[int]],
    missed: Sequence[Note] = (),
) -> list[ReadingSection]:
    """A reader's DM sections from a run's new `notes`; `sent` are notes DM'd before,
    `watch_hits` the note ids each saved search matches, `missed` the notes of a pause."""
    known = set(taxonomy.slugs)
    subs = [s for s in reader.roles if s.role in known]
    sub_of = {s.role: s for s in subs}
    taken = set(sent)
    by_role: dict[str, list[Note]] = {s.role: [] for s in subs}
    for note in notes:
        if note.id in taken:
            continue
        eligible = [r for r in note.roles if r in sub_of and sub_of[r].accepts(note)]
        if not eligible:
            continue
        target = note.primary_role if note.primary_role in eligible else eligible[0]
        by_role[target].append(note)
        taken.add(note.id)
    sections: list[ReadingSection] = []
    for slug in taxonomy.slugs:
        members = by_role.get(slug)
        if members:
            ordered = sorted(members, key=_role_order(slug))
            sections.append(ReadingSection("role", tuple(ordered), role=slug))
    overall = _newest_best(lambda n: n.verdict.rank)
    for query in reader.watches:
        hits = watch_hits.get(query, set())
        members = [n for n in notes if n.id in hits and n.id not in taken]
        taken.update(n.id for n in members)
        if members:
            sections.append(
                ReadingSection("watch", tuple(sorted(members, key=overall)), query=query)
            )
    if missed and reader.pause is not None:
        hit_any = set().union(*(watch_hits.get(q, set()) for q in reader.watches))

        def best_rank(note: Note) -> int | None:
            ranks = [note.verdict_for(s.role).rank for s in subs if s.accepts(note)]
            if ranks:
                return min(ranks)
            return note.verdict.rank if note.id in hit_any else None

        unique = {n.id: n for n in missed}.values()
        away = [n for n in unique if n.id not in taken and best_rank(n) is not None]
        away.sort(key=_newest_best(lambda n: best_rank(n) or 0))
        if away:
            sections.append(
                ReadingSection(
                    "away",
                    tuple(away[:AWAY_MAX_NOTES]),
                    pause=reader.pause,
                    more=max(0, len(away) - AWAY_MAX_NOTES),
                )
            )
    return sections


def watch_matches(
    taxonomy: Taxonomy, query: str, among: list[Note], tokens: Mapping[int, frozenset[str]]
) -> set[int]:
    """The notes of `among` that `query` watches: a role word (`fp8`, `量化`) means that
    role's notes, anything else the notes with every one of its words (`tokens`: each
    note's indexed words), as the watch's reply counts them and a lookup lists them."""
    parsed = parse_query(query, taxonomy)
    if parsed.role is not None:
        return {n.id for n in among if parsed.role.slug in n.roles}
    return match_ids(parsed, {n.id: tokens.get(n.id, frozenset()) for n in among})


@dataclass
class ReadingPlan:
    """Everything a digest run needs to choose each reader's notes, read once."""

    taxonomy: Taxonomy
    notes: list[Note]
    readers: list[Reader]  # not paused at the run's start
    watch_hits: dict[str, set[int]] = field(default_factory=dict)
    missed: dict[tuple[str, str], list[Note]] = field(default_factory=dict)

    @classmethod
    def prepare(
        cls,
        store: Store,
        ledger: Ledger,
        taxonomy: Taxonomy,
        channel: str,
        run_id: int | None,
        run_started: datetime,
        notes: list[Note],
    ) -> ReadingPlan:
        """A reader paused when the run started gets nothing now; a pause that ended
        before it makes this run (the first with notes after the pause) carry a
        "while you were away" section. `run_id` None: a run not claimed yet (dry run)."""
        readers: list[Reader] = []
        missed: dict[tuple[str, str], list[Note]] = {}
        first_since: dict[datetime, int | None] = {}
        for reader in store.readers.all_readers():
            pause = reader.pause
            if pause is not None and pause.active(run_started):
                continue
            readers.append(reader)
            if pause is None or pause.until > run_started:
                continue
            if pause.until not in first_since:
                first_since[pause.until] = ledger.first_run_since(channel, pause.until)
            if first_since[pause.until] != run_id:
                continue
            ids = ledger.notes_posted_between(channel, pause.started_at, pause.until)
            if ids:
                missed[reader.key] = store.get_notes(ids)
        by_id = {n.id: n for n in notes} | {n.id: n for ns in missed.values() for n in ns}
        queries = sorted({q for r in readers for q in r.watches})
        tokens = store.search_tokens(sorted(by_id)) if queries else {}
        hits = {q: watch_matches(taxonomy, q, list(by_id.values()), tokens) for q in queries}
        return cls(taxonomy, notes, readers, hits, missed)

    def sections(self, reader: Reader, sent: set[int]) -> list[ReadingSection]:
        return select_reading(
            reader,
            self.notes,
            sent,
            self.taxonomy,
            self.watch_hits,
            self.missed.get(reader.key, ()),
        )
