"""Query understanding and text tokenisation for search, shared by the CLI and Slack.

CJK text is indexed as overlapping character bigrams so that two-character words such
as 量化, 缓存 or 视频 match; ASCII words are lower-cased. The store turns the tokens
into an SQLite FTS5 or a PostgreSQL tsvector query.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass

from bot.classify.taxonomy import Taxonomy
from bot.domain import Role

MAX_QUERY_CHARS = 500
MAX_QUERY_TERMS = 16

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]+|[a-z0-9]+")
_IS_CJK = re.compile(rf"[{_CJK}]")
# The lookahead captures the token starting here; the match then consumes one CJK character
# (so the next pair starts at the following one) or the whole ASCII word.
_INDEX_TOKEN = re.compile(
    rf"(?=([{_CJK}]{{2}}|(?<![{_CJK}])[{_CJK}](?![{_CJK}])|[a-z0-9]+))(?:[{_CJK}]|[a-z0-9]+)"
)


# Characters whose NFKC form changes what is indexed: full-width letters and digits,
# half-width katakana, CJK compatibility ideographs, circled and enclosed forms,
# ligatures. Full-width punctuation (，。（）) only separates words, so it needs nothing.
_NEEDS_NFKC = re.compile(
    "[\u2460-\u24ff\u3200-\u33ff\uf900-\ufaff\ufb00-\ufb4f"
    "\uff10-\uff19\uff21-\uff3a\uff41-\uff5a\uff61-\uffef]"
)


def _fold(text: str) -> str:
    """Lower-case, with NFKC only where it changes a word (the costly step)."""
    if not text.isascii() and _NEEDS_NFKC.search(text):
        text = unicodedata.normalize("NFKC", text)
    return text.lower()


def index_text(text: str) -> str:
    """The form stored for full-text search: ASCII words and overlapping CJK bigrams.

    A lone CJK character stays a unigram. Ingestion runs this on every note, so one
    regular expression finds every token: at each CJK character the pair it starts (its
    run's last character starts none), a CJK character alone, or a whole ASCII word.
    """
    return " ".join(_INDEX_TOKEN.findall(_fold(text)))


def verdict_token(rank: int) -> str:
    """A token stored with each note's text so that search can read one verdict at a time."""
    return f"0prdv{rank}"


def tokenize(text: str) -> list[str]:
    """Index tokens as a list."""
    return index_text(text).split()


@dataclass(frozen=True)
class QueryTerm:
    """One word of a query: all of its tokens must appear (a phrase of bigrams)."""

    tokens: tuple[str, ...]
    prefix: bool  # the last token may be a prefix (e.g. "quant" finds "quantization")


@dataclass(frozen=True)
class Query:
    """A parsed `/prdigest` or `prdigest lookup` query."""

    text: str
    role: Role | None
    terms: tuple[QueryTerm, ...]

    @property
    def is_empty(self) -> bool:
        return self.role is None and not self.terms


class QueryError(ValueError):
    """A query that cannot be run (too long, nothing searchable)."""


def parse_query(text: str, taxonomy: Taxonomy) -> Query:
    """A role slug or alias selects that role; anything else is free text."""
    text = " ".join(text.split())
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"query is {len(text)} characters long; the limit is {MAX_QUERY_CHARS}")
    role = taxonomy.resolve(text) if text else None
    if role is not None:
        return Query(text=text, role=role, terms=())
    return text_query(text)


def text_query(text: str) -> Query:
    """A free-text query, even when the words happen to name a role."""
    text = " ".join(text.split())
    terms: list[QueryTerm] = []
    seen: set[tuple[str, ...]] = set()
    for word in text.split():
        for run in _TOKEN.findall(_fold(word)):
            if _IS_CJK.match(run):
                if len(run) == 1:
                    term = QueryTerm((run,), prefix=True)
                else:
                    term = QueryTerm(tuple(run[i : i + 2] for i in range(len(run) - 1)), False)
            else:
                term = QueryTerm((run,), prefix=len(run) >= 3)
            if term.tokens not in seen:
                seen.add(term.tokens)
                terms.append(term)
    return Query(text=text, role=None, terms=tuple(terms[:MAX_QUERY_TERMS]))


def _term_in(term: QueryTerm, tokens: frozenset[str]) -> bool:
    *whole, last = term.tokens
    if not all(t in tokens for t in whole):
        return False
    return last in tokens or (term.prefix and any(t.startswith(last) for t in tokens))


def has_every_word(query: Query, words: frozenset[str]) -> bool:
    """Whether a note (its indexed `words`) has every word of `query`: the one rule of a
    watch, and of a lookup's first answer. A word of three or more letters, or a lone CJK
    character, also matches longer words that start with it (`quant`: quantization); a
    longer CJK word matches when the note has all of its bigrams.

    Nothing here depends on the other notes, so a watch's notes are the same whether it
    is asked about every stored note or one run's new notes.
    """
    return bool(query.terms) and all(_term_in(t, words) for t in query.terms)


def match_ids(query: Query, tokens: Mapping[int, frozenset[str]]) -> set[int]:
    """The notes (id -> indexed words) that have every word of `query` (`has_every_word`)."""
    return {note_id for note_id, words in tokens.items() if has_every_word(query, words)}
