"""The rules' constructions for whom a statement speaks to: named regular expressions read
from the data file (data/cues.toml, the [audiences.*] tables, whose comments give the format),
compiled once.

`load_constructions` takes the function that compiles an expression, so that an evaluation can
compile them its own way (tests/support/cue_usage.py records where each one matches).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any, Protocol

from bot.classify.cues import RULE_DATA

__all__ = ["CONSTRUCTIONS", "Constructions", "Matcher", "expressions", "load_constructions"]


class Matcher(Protocol):
    """What the rules call on a compiled expression (`re.Pattern[str]` is one)."""

    @property
    def pattern(self) -> str: ...

    def search(self, string: str, pos: int = ..., endpos: int = ...) -> re.Match[str] | None: ...

    def match(self, string: str, pos: int = ..., endpos: int = ...) -> re.Match[str] | None: ...

    def fullmatch(self, string: str, pos: int = ..., endpos: int = ...) -> re.Match[str] | None: ...

    def finditer(
        self, string: str, pos: int = ..., endpos: int = ...
    ) -> Iterator[re.Match[str]]: ...

    def split(self, string: str, maxsplit: int = ...) -> list[str | Any]: ...


@dataclass(frozen=True)
class Constructions:
    """One field per [audiences.NAME] table that the rules use (and NAME_anchors for its
    anchors); the comments in the data file say what each one finds."""

    people: Matcher
    people_lead_en: Matcher
    workers_zh: Matcher
    workers_en: Matcher
    addressed_zh: Matcher
    addressed_zh_anchors: Matcher
    addressed_for: Matcher
    addressed_for_anchors: Matcher
    addressed_who: Matcher
    addressed_who_anchors: Matcher
    addressed_if_you: Matcher
    addressed_if_you_anchors: Matcher
    excepted: Matcher
    excepted_anchors: Matcher
    reader_words: Matcher
    bare_group: Matcher
    group_word_split: Matcher
    label_split: Matcher
    label: Matcher
    fronted_others: Matcher
    others_opening: Matcher
    others_opening_anchors: Matcher
    others_subject: Matcher
    others_subject_anchors: Matcher
    reader_noun: Matcher
    and_others: Matcher
    limited: Matcher
    enough: Matcher


_EDGE_WORD = re.compile(r"\\b([a-z])")
_PART = re.compile(r"\{([a-z_]+)\}")


def _alternative(text: str) -> str:
    """`\\bword...` as `w(?<!\\ww)ord...`: the same match, found faster."""
    edge = _EDGE_WORD.match(text)
    return f"{edge[1]}(?<!\\w{edge[1]}){text[edge.end() :]}" if edge else text


def _source(table: dict[str, Any]) -> str:
    if "regex" in table:
        return str(table["regex"])
    return "|".join(_alternative(str(a)) for a in table["alternatives"])


def expressions(tables: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Every expression of the [audiences.*] tables by field name, parts put in."""
    sources = {name: _source(table) for name, table in tables.items()}

    def put_in(match: re.Match[str]) -> str:
        if match[1] not in sources:
            raise ValueError(f"[audiences]: no table {match[1]!r} to put in")
        return sources[match[1]]

    out = {name: _PART.sub(put_in, source) for name, source in sources.items()}
    for name, table in tables.items():
        if "anchors" in table:
            out[f"{name}_anchors"] = "|".join(map(re.escape, table["anchors"]))
    return out


def load_constructions(
    tables: dict[str, dict[str, Any]], compile: Callable[[str, str], Matcher]
) -> Constructions:
    """The constructions of the [audiences.*] tables; `compile(expression, name)` compiles each.
    A table no field names is only a part of others ("{others_en}")."""
    found = expressions(tables)
    names = [f.name for f in fields(Constructions)]
    if missing := [n for n in names if n not in found]:
        raise ValueError(f"[audiences]: missing {', '.join(missing)}")
    return Constructions(**{n: compile(found[n], n) for n in names})


def _compile(expression: str, _name: str) -> re.Pattern[str]:
    return re.compile(expression)


CONSTRUCTIONS = load_constructions(RULE_DATA["audiences"], _compile)
