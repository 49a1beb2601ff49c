"""Free-text search over notes: SQLite FTS5 or PostgreSQL full-text, ranked in tiers
(title, verdict, newest), and the indexed words a saved search matches against."""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from bot.notes.search import Query, QueryTerm, match_ids, verdict_token
from bot.store.engine import StorePart
from bot.store.note_queries import Page, notes_by_id
from bot.store.rows import chunks
from bot.store.schema import notes

COUNT_CAP = 1000
TITLE_TIER_MAX = 200


class NoteSearch(StorePart):
    """Full-text search and the words a saved search matches."""

    def search(self, query: Query, limit: int, offset: int = 0) -> Page:
        """Free-text search: the notes with every word (`search.has_every_word`, the rule
        of a watch); if no note has them all, the notes with any word (`any_word`).

        Ranked in tiers: all terms in the title first, then deep before skim before skip,
        then newest. Discrete tiers (rather than a score over every match) let the index
        be read in order and stop after one page, so cost does not grow with the corpus.
        `total` is exact up to COUNT_CAP past the page; beyond that it is a lower bound
        and the page says `capped`.
        """
        if not query.terms:
            return Page([], 0)
        cap = offset + limit + COUNT_CAP
        operators = ["AND", "OR"] if len(query.terms) > 1 else ["AND"]
        search = self._search_sqlite if self.dialect == "sqlite" else self._search_postgres
        with self.engine.connect() as conn:
            for operator in operators:
                ids, total = search(conn, query.terms, operator, limit, offset, cap + 1)
                if total:
                    break
            return Page(
                notes_by_id(conn, ids),
                min(total, cap),
                capped=total > cap,
                any_word=operator == "OR",
            )

    def matching(self, query: Query, among: Sequence[int]) -> set[int]:
        """The notes of `among` that have every word of `query` (`search.has_every_word`).

        Saved searches (`watch`) pick a digest's notes with this: it reads only those
        notes' indexed words, so its cost does not grow with the corpus.
        """
        return match_ids(query, self.search_tokens(among))

    def search_tokens(self, ids: Sequence[int]) -> dict[int, frozenset[str]]:
        """The words the full-text index holds for each note (title, paragraph, verdict)."""
        found: dict[int, frozenset[str]] = {}
        with self.engine.connect() as conn:
            for chunk in chunks(list(ids)):
                stmt = sa.select(notes.c.id, notes.c.search_body).where(notes.c.id.in_(chunk))
                for row in conn.execute(stmt):
                    found[row.id] = frozenset(row.search_body.split())
        return found

    @staticmethod
    def _search_sqlite(
        conn: Connection, terms: Sequence[QueryTerm], op: str, limit: int, offset: int, cap: int
    ) -> tuple[list[int], int]:
        expr = "(" + f" {op} ".join(_fts5_term(t) for t in terms) + ")"
        newest = sa.text(
            "SELECT rowid FROM notes_fts WHERE notes_fts MATCH :q ORDER BY rowid DESC LIMIT :n"
        )
        count_sql = sa.text(
            "SELECT count(*) FROM (SELECT 1 FROM notes_fts WHERE notes_fts MATCH :q LIMIT :cap)"
        )
        total = int(conn.execute(count_sql, {"q": expr, "cap": cap}).scalar_one())
        if total == 0:
            return [], 0
        title_sql = sa.text(
            "SELECT rowid FROM notes_title_fts WHERE notes_title_fts MATCH :q "
            "ORDER BY rowid DESC LIMIT :n"
        )
        title_ids = list(conn.execute(title_sql, {"q": expr, "n": TITLE_TIER_MAX + 1}).scalars())
        ranked: list[int] = []
        if len(title_ids) <= TITLE_TIER_MAX:
            # Title hits (usually few) come first, ranked here; past the cap the title tier
            # is dropped and every match is ranked by verdict, then newest.
            rank_stmt = sa.select(notes.c.id, notes.c.verdict_rank)
            rank_of = {
                row.id: row.verdict_rank
                for row in conn.execute(rank_stmt.where(notes.c.id.in_(title_ids)))
            }
            ranked = sorted(title_ids, key=lambda i: (rank_of[i], -i))
        buckets = [f'{expr} AND "{verdict_token(rank)}"' for rank in (0, 1, 2)]
        exclude = set(ranked)
        ids = ranked[offset : offset + limit]
        skip = max(0, offset - len(ranked))
        for bucket in buckets:
            need = limit - len(ids)
            if need <= 0:
                break
            fetch = need + skip + len(exclude)
            found = [
                i
                for i in conn.execute(newest, {"q": bucket, "n": fetch}).scalars()
                if i not in exclude
            ]
            ids.extend(found[skip : skip + need])
            skip = max(0, skip - len(found))
        return ids, total

    @staticmethod
    def _search_postgres(
        conn: Connection, terms: Sequence[QueryTerm], op: str, limit: int, offset: int, cap: int
    ) -> tuple[list[int], int]:
        match = (" & " if op == "AND" else " | ").join(_tsquery_term(t) for t in terms)
        title = "to_tsvector('simple', search_title)"
        vector = f"(setweight({title}, 'A') || setweight(to_tsvector('simple', search_body), 'B'))"
        page_sql = sa.text(
            f"SELECT n.id FROM notes AS n, to_tsquery('simple', :q) AS q "
            f"WHERE {vector} @@ q "
            f"ORDER BY ({title} @@ q) DESC, n.verdict_rank, n.id DESC "
            "LIMIT :limit OFFSET :offset"
        )
        count_sql = sa.text(
            f"SELECT count(*) FROM (SELECT 1 FROM notes "
            f"WHERE {vector} @@ to_tsquery('simple', :q) LIMIT :cap) AS matches"
        )
        ids = list(conn.execute(page_sql, {"q": match, "limit": limit, "offset": offset}).scalars())
        total = int(conn.execute(count_sql, {"q": match, "cap": cap}).scalar_one())
        return ids, total


def _fts5_term(term: QueryTerm) -> str:
    """All of a word's tokens (CJK bigrams); the index keeps no positions, so no phrases."""
    parts = [f'"{token}"' for token in term.tokens]
    if term.prefix:
        parts[-1] += "*"
    return parts[0] if len(parts) == 1 else "(" + " AND ".join(parts) + ")"


def _tsquery_term(term: QueryTerm) -> str:
    """As on SQLite: all of a word's tokens in any order, so both stores (and a watch)
    find the same notes."""
    parts = list(term.tokens)
    if term.prefix:
        parts[-1] += ":*"
    return "(" + " & ".join(parts) + ")" if len(parts) > 1 else parts[0]
