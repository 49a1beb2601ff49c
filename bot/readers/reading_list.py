"""Which notes each reader gets in a weekly DM.

A reader's DM holds, each note at most once: the new notes of their roles that pass the
role's verdict filter (under the note's primary role when subscribed to it); then, under
one heading per saved search (`watch`), the new notes with every word of it (a role word:
that role's notes) that no role section took; then, in the first digest after a pause, a
capped "while you were away" section with the notes posted during the pause that match
their roles or searches.

A DM shows at most the reader's budget of those notes in full (`within_budget`, ranked by
`reader_rank`); the rest are counted and listed on demand.

`select_reading` and `within_budget` are pure; a `ReadingPool` reads the notes and their
search words once for every reader of one delivery.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from bot.classify.taxonomy import Taxonomy
from bot.domain import Confidence, Note, Pause, Reader
from bot.notes.search import match_ids, parse_query
from bot.store import Store

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


def reader_rank(reader: Reader) -> Callable[[Note], tuple[int, int, float, int]]:
    """How good a read a note is for `reader`, best first: their own verdict (the best one
    for a role they take the note from, where a note splits its audience; else the note's),
    then the verdict's confidence, then the newest, then the higher id: the same order
    every time."""

    def key(note: Note) -> tuple[int, int, float, int]:
        ranks = [note.verdict_for(s.role).rank for s in reader.roles if s.accepts(note)]
        verdict = min(ranks) if ranks else note.verdict.rank
        unsure = 0 if note.verdict_confidence is Confidence.HIGH else 1
        return (verdict, unsure, -note.ingested_at.timestamp(), -note.id)

    return key


@dataclass(frozen=True)
class Budgeted:
    """A DM within the reader's budget: the sections with the notes shown in full, and the
    notes left out (with the role they came under, if any), best first."""

    sections: list[ReadingSection]
    left_out: list[tuple[Note, str | None]]


def within_budget(reader: Reader, sections: Sequence[ReadingSection], budget: int) -> Budgeted:
    """At most `budget` notes in full (0: all), best first by `reader_rank`.

    This week's notes (roles and watches) are ranked together and come first; the "while
    you were away" notes share the same budget and fill what is left of it. Each section
    keeps its kept notes best first; sections follow their best note, "away" last."""
    rank = reader_rank(reader)
    week = [(n, s) for s in sections if s.kind != "away" for n in s.notes]
    away = [(n, s) for s in sections if s.kind == "away" for n in s.notes]
    week.sort(key=lambda pair: rank(pair[0]))
    if budget <= 0:
        kept, rest = week + away, []
    else:
        kept, rest = week[:budget], week[budget:]
        room = budget - len(kept)
        kept += away[:room]
        rest += away[room:]
    keep_ids = {n.id for n, _ in kept}
    shaped: list[tuple[tuple[bool, tuple[int, int, float, int]], ReadingSection]] = []
    for section in sections:
        mine = sorted((n for n in section.notes if n.id in keep_ids), key=rank)
        if mine:
            away_last = section.kind == "away"
            order = (away_last, (0, 0, 0.0, 0) if away_last else rank(mine[0]))
            shaped.append((order, replace(section, notes=tuple(mine))))
    shaped.sort(key=lambda pair: pair[0])
    return Budgeted(
        [section for _, section in shaped],
        [(n, s.role) for n, s in rest],
    )


class ReadingPool:
    """What choosing many readers' DMs reads from the store, read once: the notes, their
    search words, and which notes each saved search matches."""

    def __init__(self, store: Store, taxonomy: Taxonomy) -> None:
        self.store = store
        self.taxonomy = taxonomy
        self._notes: dict[int, Note] = {}
        self._tokens: dict[int, frozenset[str]] = {}
        self._hits: dict[str, dict[int, bool]] = {}

    def notes(self, ids: Iterable[int]) -> list[Note]:
        """The notes with these ids, in that order (a note deleted since is left out)."""
        wanted = list(dict.fromkeys(ids))
        missing = [i for i in wanted if i not in self._notes]
        if missing:
            self._notes.update((n.id, n) for n in self.store.get_notes(missing))
        return [self._notes[i] for i in wanted if i in self._notes]

    def watch_hits(self, queries: Iterable[str], among: Sequence[Note]) -> dict[str, set[int]]:
        """query -> the notes of `among` it matches (as `watch_matches` decides)."""
        queries = list(queries)
        if not queries:
            return {}
        unread = [n.id for n in among if n.id not in self._tokens]
        if unread:
            self._tokens.update(self.store.search_tokens(unread))
            self._tokens.update((i, frozenset()) for i in unread if i not in self._tokens)
        out: dict[str, set[int]] = {}
        for query in queries:
            known = self._hits.setdefault(query, {})
            fresh = [n for n in among if n.id not in known]
            if fresh:
                hits = watch_matches(self.taxonomy, query, fresh, self._tokens)
                known.update((n.id, n.id in hits) for n in fresh)
            out[query] = {n.id for n in among if known[n.id]}
        return out

    def sections(
        self, reader: Reader, notes: Sequence[Note], sent: set[int], missed: Sequence[Note] = ()
    ) -> list[ReadingSection]:
        """The reader's DM sections from `notes` (and a pause's `missed` notes)."""
        hits = self.watch_hits(reader.watches, [*notes, *missed])
        return select_reading(reader, notes, sent, self.taxonomy, hits, missed)
