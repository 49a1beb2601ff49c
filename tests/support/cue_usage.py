"""Where each cue of the rule data fires on the development sets, and for how many writers.

The rules' vocabulary is general usage: every literal phrase and every alternative of every
regular expression of the rule data fires on notes of at least two writers' development sets,
or is a dictionary idiom marked as such (`idioms` in bot/classify/data/cues.toml). A cue is
found as the rules find it, on each development note's title and paragraph normalised and
lower-cased as the rules read them:

- the lexicon's phrases ([lexicon]) where the cue scan finds them (at word edges);
- each alternative of each family's patterns ([[families]]) where it takes part in a match the
  cue finder makes (patterns run near their anchors; edged families at word edges), and each
  anchor where a match holds it;
- the weak hints ([weak_skip]) and the side cues ([side_cues]) where their scans find them;
- each alternative of a PR's state hints ([hints.*]) where it takes part in a match in the
  title or the paragraph, and each anchor where a match holds it (every match holds one);
- each alternative of the grammar around a cue ([grammar]) where it takes part in a match
  anywhere in the title or the paragraph (the rules search it beside a cue or in a question:
  a count of where it stands at all is the most it can fire): listed, not held to the rule.
  The grammar holds no cue: each expression changes how a cue found by the lexicon or a
  family is read (a negator's reach, a hedge, a question and its answer, reading put off,
  the writer's own visit), in closed-class words and the idioms a dictionary lists for them;
- each alternative of each audience construction ([audiences.*]) where it takes part in a
  match while the rules classify the note (a search counts every match in the text searched),
  and each anchor where the rules look for it and find it;
- the roles' audience phrases (roles.toml) where the keyword scan finds them, in the title or
  the paragraph: listed, not held to the rule (with the keywords, they are the taxonomy's
  domain vocabulary, which a team's roles file extends).

An alternative is each branch of the expression's top-level "|" and of every group with more
than one (outside look-arounds, whose branches are conditions, not words).

A writer is a set's writer (tests/fixtures/README.md: one writer per set from dev6 on); the
first sets, whose writers are not recorded (seeds, dev, dev2, dev3, dev4, dev5, written while
the vocabulary was), count as one writer between them. Validation and held-out sets are never
read here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from bot.classify.constructions import Constructions, Matcher, expressions, load_constructions
from bot.classify.cues import (
    IDIOMS,
    RULE_DATA,
    SIDE_CUE_RE,
    edges_ok,
    idiom_matches,
    scan,
    weak_phrases,
)
from bot.classify.rules import Rules
from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.classify.text import normalise, squeeze
from bot.classify.train.labelled import DEV_SETS, load_set

# Sets whose writer is not recorded: one writer between them.
EARLY_SETS = ("seeds", "dev", "dev2", "dev3", "dev4", "dev5")
MIN_WRITERS = 2
# Tables listed with where they fire but not held to MIN_WRITERS: the taxonomy's names for
# its readers (a team's roles file extends them) and the grammar around a cue.
NOT_HELD = frozenset({"roles", "grammar"})

_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


def writer_of(name: str) -> str:
    """The writer of development set `name` ("early" for the first sets)."""
    return "early" if name in EARLY_SETS else name


@dataclass(frozen=True, order=True)
class Cue:
    """One piece of the rule data: its table, where in it, and its text as written."""

    # "lexicon", "families", "audiences", "weak_skip", "side_cues", "hints", "grammar", "roles"
    table: str
    where: str  # the meaning, family and pattern, construction or role it belongs to
    text: str  # the phrase, the alternative or the anchor as written
    at: int = 0  # where an alternative starts in its expression (two may read alike)


# --------------------------------------------------------------------------- alternatives


def alternatives(regex: str) -> list[tuple[int, int]]:
    """(start, end) of every alternative of `regex`: the branches of its top level and of each
    group with more than one, outside look-arounds and character sets, and not the forms of
    one word (`debug(?:s|ging)?`, `(?:any|every)one`: a group joined to a letter)."""
    out: list[tuple[int, int]] = []
    # per open group: look-around, branch starts, a letter before it, branch ends on a letter
    stack: list[tuple[bool, list[int], bool, list[bool]]] = [(False, [0], False, [])]
    looks, i, n = 0, 0, len(regex)
    letter = False  # the last token is a literal letter
    while i < n:
        ch = regex[i]
        if ch == "\\":
            i, letter = i + 2, False
            continue
        if ch == "[":
            i += 2 if regex.startswith("[^", i) else 1
            i += regex[i] == "]"  # a "]" first is a literal
            while regex[i] != "]":
                i += 2 if regex[i] == "\\" else 1
        elif ch == "(":
            look = regex.startswith(_LOOKAROUND, i)
            if regex.startswith("(?P<", i):
                body = regex.index(">", i) + 1
            elif regex.startswith(("(?<=", "(?<!"), i):
                body = i + 4
            elif regex.startswith(("(?:", "(?=", "(?!"), i):
                body = i + 3
            elif regex.startswith("(?", i):
                raise ValueError(f"a group the usage count does not know: {regex[i : i + 5]!r}")
            else:
                body = i + 1
            stack.append((look, [body], letter, []))
            looks += look
            i, letter = body, False
            continue
        elif ch == "|":
            stack[-1][1].append(i + 1)
            stack[-1][3].append(letter)
        elif ch == ")":
            look, starts, after_letter, ends = stack.pop()
            ends.append(letter)
            looks -= look
            j = i + 1
            while j < n and regex[j] in "?*+":
                j += 1
            if j < n and regex[j] == "{":
                j = regex.index("}", j) + 1
            before_letter = all(ends) and j < n and regex[j].isascii() and regex[j].isalpha()
            one_word = after_letter or before_letter
            if not look and not looks and len(starts) > 1 and not one_word:
                out += zip(starts, [s - 1 for s in starts[1:]] + [i], strict=True)
            letter = False
            i += 1
            continue
        letter = ch.isascii() and ch.isalpha()
        i += 1
    _look, starts, _after, _ends = stack.pop()
    out += zip(starts, [s - 1 for s in starts[1:]] + [n], strict=True)
    return sorted(out)


# Words of a closed class (articles, pronouns, auxiliaries and modals, prepositions,
# conjunctions, negators) and Chinese function characters: an alternative made of these
# alone is grammar, not vocabulary, and is no cue of its own.
_FUNCTION_WORDS = (
    "a an the this that these those it its they them their you your we us our i me my one "
    "is are was were be been being am do does did don't doesn't didn't not no can could may "
    "might must shall should will would can't cannot won't wouldn't shouldn't mustn't isn't "
    "aren't 'd 's 're 've 'll to of in on at by for with from as into over through about and "
    "or but if so than then who what which when where how why there here nor other others "
    "else most anyone anybody everyone everybody someone somebody nobody none zero two three "
    "four five six seven eight nine ten fifteen twenty thirty forty fifty sixty ninety half"
)
FUNCTION_WORDS = frozenset(_FUNCTION_WORDS.split())
FUNCTION_CHARS = frozenset(
    "的了也亦都就可要会能该应请把被去来再还又只仅才便即而但和与及或跟给对在从到于以为之其这那个一下上些此不没无别非未呢吗吧啊嘛着过得地我你他她它们"
)
_LOOK_GROUP = re.compile(r"\(\?<?[=!]")
_SYNTAX = re.compile(
    r"\\[sSbBwWdD]|\\u[0-9a-f]{4}|\[(?:\\.|[^\]])*\]|\{\d*,?\d*\}|\(\?P<\w+>|\(\?:|[()|?*+^$.]"
)


def _without_lookarounds(regex: str) -> str:
    while (m := _LOOK_GROUP.search(regex)) is not None:
        depth, i = 0, m.start()
        while True:
            if regex[i] == "\\":
                i += 2
                continue
            depth += {"(": 1, ")": -1}.get(regex[i], 0)
            i += 1
            if depth == 0:
                break
        regex = regex[: m.start()] + " " + regex[i:]
    return regex


def grammar_only(text: str) -> bool:
    """Is `text` (an alternative as written) made of function words and syntax alone?"""
    plain = _SYNTAX.sub(" ", _without_lookarounds(text)).replace("\\", "")
    words = re.findall(r"[a-z][a-z'-]*|'[a-z]+", plain)
    chars = re.findall(r"[\u3400-\u9fff]", plain)
    parts = [p for w in words for p in w.split("-") if p]
    return all(p in FUNCTION_WORDS for p in parts) and all(c in FUNCTION_CHARS for c in chars)


class _Names:
    """Group names handed out to alternatives, and the cue each stands for."""

    def __init__(self) -> None:
        self.cues: dict[str, Cue] = {}

    def instrument(self, regex: str, table: str, where: str) -> str:
        """`regex` with each alternative in a named group of its own (the same matches)."""
        opens: dict[int, list[tuple[int, str]]] = {}
        closes: dict[int, list[int]] = {}
        for s, e in alternatives(regex):
            if grammar_only(regex[s:e]):
                continue  # grammar, not vocabulary
            name = f"cue{len(self.cues)}"
            self.cues[name] = Cue(table, where, regex[s:e], s)
            if s == e:
                opens.setdefault(s, []).append((e, f"(?P<{name}>)"))
            else:
                opens.setdefault(s, []).append((e, f"(?P<{name}>"))
                closes.setdefault(e, []).append(s)
        out: list[str] = []
        for pos in range(len(regex) + 1):
            out += [")" for _s in sorted(closes.get(pos, ()), reverse=True)]  # inner first
            out += [t for _e, t in sorted(opens.get(pos, ()), reverse=True)]  # outer first
            out += regex[pos : pos + 1]
        return "".join(out)

    def fired(self, match: re.Match[str]) -> Iterator[Cue]:
        for name, value in match.groupdict().items():
            if value is not None and name in self.cues:
                yield self.cues[name]


# --------------------------------------------------------------------------- the rule data


def _family_cues(names: _Names) -> tuple[tuple[Any, ...], dict[int, list[Cue]], list[Cue]]:
    """The families' idioms with every alternative named, each one's anchors (by its index in
    IDIOMS) and every family cue."""
    idioms = []
    anchors: dict[int, list[Cue]] = {}
    patterns = [(f, k, p) for f in RULE_DATA["families"] for k, p in enumerate(f["patterns"])]
    for index, (idiom, (family, k, pattern)) in enumerate(zip(IDIOMS, patterns, strict=True)):
        where = f"{family['name']} #{k + 1}"
        regex = names.instrument(pattern["regex"], "families", where)
        idioms.append(replace(idiom, pattern=re.compile(regex)))
        anchors[index] = [
            Cue("families", f"{where} anchor", a)
            for a in pattern["anchors"]
            if not grammar_only(re.escape(a))
        ]
    cues = [c for c in names.cues.values() if c.table == "families"]
    return tuple(idioms), anchors, cues + [c for a in anchors.values() for c in a]


def _hint_cues(names: _Names) -> tuple[list[tuple[re.Pattern[str], list[Cue]]], list[Cue]]:
    """The state hints' alternatives, each with its own named group, with their kind's
    anchors; and every hint cue."""
    hints: list[tuple[re.Pattern[str], list[Cue]]] = []
    cues: list[Cue] = []
    for kind, table in RULE_DATA["hints"].items():
        anchors = [Cue("hints", f"{kind} anchor", a) for a in table["anchors"]]
        cues += anchors
        for k, alternative in enumerate(table["alternatives"]):
            regex = names.instrument(alternative, "hints", f"{kind} #{k + 1}")
            hints.append((re.compile(regex), anchors))
    cues += [c for c in names.cues.values() if c.table == "hints"]
    return hints, cues


def _grammar_cues(names: _Names) -> tuple[list[re.Pattern[str]], list[Cue]]:
    """The grammar's expressions, each alternative in a named group of its own; and every
    grammar cue."""
    table = RULE_DATA["grammar"]
    parts = [(k, v) for k, v in table.items() if isinstance(v, str)]
    parts += [(f"asks {k}", v) for k, v in table["asks"].items()]
    found = [re.compile(names.instrument(v, "grammar", k)) for k, v in parts]
    return found, [c for c in names.cues.values() if c.table == "grammar"]


class _Recorder:
    """A compiled construction that answers as the shipped one and notes every cue that its
    copy with named alternatives (`noted`) finds on the same call."""

    def __init__(self, shipped: str, noted: str, note: Callable[[re.Match[str]], None]) -> None:
        self._shipped = re.compile(shipped)
        self._noted = re.compile(noted)
        self._note = note

    @property
    def pattern(self) -> str:
        return self._shipped.pattern

    def _all(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> None:
        for m in self._noted.finditer(string, pos, endpos):
            self._note(m)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        self._all(string, pos, endpos)  # a search counts every match in the text searched
        return self._shipped.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        if (m := self._noted.match(string, pos, endpos)) is not None:
            self._note(m)
        return self._shipped.match(string, pos, endpos)

    def fullmatch(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> re.Match[str] | None:
        if (m := self._noted.fullmatch(string, pos, endpos)) is not None:
            self._note(m)
        return self._shipped.fullmatch(string, pos, endpos)

    def finditer(
        self, string: str, pos: int = 0, endpos: int = sys.maxsize
    ) -> Iterator[re.Match[str]]:
        self._all(string, pos, endpos)
        return self._shipped.finditer(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        self._all(string)
        return self._shipped.split(string, maxsplit)


def _audience_constructions(names: _Names, fired: set[Cue]) -> tuple[Constructions, list[Cue]]:
    """The audience constructions with every alternative named, noting what fires in
    `fired`, and every audience cue."""
    tables: dict[str, dict[str, Any]] = {}
    anchors: dict[str, dict[str, Cue]] = {}
    for name, table in RULE_DATA["audiences"].items():
        parts = [table["regex"]] if "regex" in table else table["alternatives"]
        regexes = [
            names.instrument(p, "audiences", name if "regex" in table else f"{name} #{k + 1}")
            for k, p in enumerate(parts)
        ]
        tables[name] = {
            "regex" if "regex" in table else "alternatives": (
                regexes[0] if "regex" in table else regexes
            )
        }
        if "anchors" in table:
            tables[name]["anchors"] = table["anchors"]
            anchors[f"{name}_anchors"] = {
                a: Cue("audiences", f"{name} anchor", a)
                for a in table["anchors"]
                if not grammar_only(re.escape(a))
            }

    shipped = expressions(RULE_DATA["audiences"])

    def compile_recording(expression: str, field: str) -> Matcher:
        own = anchors.get(field)

        def note(m: re.Match[str]) -> None:
            if own is not None:
                if m.group() in own:
                    fired.add(own[m.group()])
            else:
                fired.update(names.fired(m))

        return _Recorder(shipped[field], expression, note)

    cues = [c for c in names.cues.values() if c.table == "audiences"]
    cues += [c for table in anchors.values() for c in table.values()]
    return load_constructions(tables, compile_recording), cues


def _literal_cues(taxonomy: Taxonomy) -> list[Cue]:
    """The lexicon's phrases, the weak hints, the side cues, the roles' audience phrases and
    keywords."""
    cues = [Cue("lexicon", m, p) for m, phrases in RULE_DATA["lexicon"].items() for p in phrases]
    cues += [Cue("weak_skip", "", p) for p in RULE_DATA["weak_skip"]]
    cues += [Cue("side_cues", g, p) for g, ps in RULE_DATA["side_cues"].items() for p in ps]
    for role in taxonomy.roles:
        cues += [Cue("roles", f"{role.slug} audience", p) for p in role.audience]
    return cues


def _key(cue: Cue) -> tuple[str, str]:
    """A literal as the scans find it: without spaces (roles' terms normalised, lower-cased
    and without a prefix's "*", as the keyword table holds them)."""
    if cue.table == "roles":
        return "roles", squeeze(normalise(cue.text).lower().rstrip("*"))
    return cue.table, squeeze(cue.text)


# --------------------------------------------------------------------------- usage

# Dictionary entries ([dictionary] in data/cues.toml), by table, as written there.
DICTIONARY: frozenset[tuple[str, str]] = frozenset(
    (table, text) for table, texts in RULE_DATA.get("dictionary", {}).items() for text in texts
)


def in_dictionary(cue: Cue) -> bool:
    """Is `cue` marked as an entry of a standard dictionary?"""
    return (cue.table, cue.text) in DICTIONARY


@dataclass(frozen=True)
class Usage:
    """Every cue of the rule data and the development sets it fires on."""

    sets: dict[Cue, frozenset[str]]

    def writers(self, cue: Cue) -> frozenset[str]:
        return frozenset(map(writer_of, self.sets[cue]))

    def rare(self) -> list[Cue]:
        """Cues of the rule data (not the roles' names for their readers, nor the grammar)
        that fire on fewer than MIN_WRITERS writers' sets and are no dictionary entry."""
        return sorted(
            c
            for c in self.sets
            if c.table not in NOT_HELD
            and len(self.writers(c)) < MIN_WRITERS
            and not in_dictionary(c)
        )


def cue_usage(sets: Iterable[str] = DEV_SETS) -> Usage:
    """Where each cue of the rule data fires, over the development sets `sets`."""
    taxonomy = load_taxonomy(None)
    names = _Names()
    idioms, family_anchors, family_cues = _family_cues(names)
    fired: set[Cue] = set()
    constructions, audience_cues = _audience_constructions(names, fired)
    hints, hint_cues = _hint_cues(names)
    grammar, grammar_cues = _grammar_cues(names)
    rules = Rules(taxonomy, constructions=constructions)
    literals = _literal_cues(taxonomy)
    by_key: dict[tuple[str, str], list[Cue]] = {}
    for cue in literals:
        by_key.setdefault(_key(cue), []).append(cue)
    index_of = {id(idiom): i for i, idiom in enumerate(idioms)}
    every = [*literals, *family_cues, *audience_cues, *hint_cues, *grammar_cues]
    found: dict[Cue, set[str]] = {c: set() for c in every}
    for name in sets:
        for note in load_set(name):
            fired.clear()
            display = note.paragraph.strip()
            text, title = normalise(display).lower(), normalise(note.title).lower()
            phrases, near = scan(text)
            keys = [("lexicon", squeeze(p)) for _s, _e, p in phrases]
            keys += [("weak_skip", k) for k in weak_phrases(title, text)]
            keys += [("side_cues", squeeze(m.group())) for m in SIDE_CUE_RE.finditer(text)]
            keys += [("roles", k) for k in (*rules.terms(title), *rules.terms(text))]
            for key in keys:
                fired.update(by_key.get(key, ()))
            for idiom, m in idiom_matches(text, near, idioms):
                edged = idiom.edged and not (idiom.rating or idiom.budget)
                if edged and not edges_ok(text, *m.span()):
                    continue
                fired.update(names.fired(m))
                held = squeeze(m.group())
                anchors = family_anchors[index_of[id(idiom)]]
                fired.update(c for c in anchors if squeeze(c.text) in held)
            both = title + "\n" + text
            for hint, anchors in hints:
                for m in hint.finditer(both):
                    fired.update(names.fired(m))
                    fired.update(c for c in anchors if c.text in m.group())
            for expression in grammar:
                for m in expression.finditer(both):
                    fired.update(names.fired(m))
            rules.classify(title, display, text)
            for cue in fired:
                found[cue].add(name)
    return Usage({c: frozenset(s) for c, s in found.items()})
