"""How closely to read a note: verdict cues organised by meaning, with negation and contrast.

A writer says "read this closely" in many ways; what they mean falls in a few classes.
The phrase tables (data/cues.toml) are organised by those classes and hold the ways writers
say it in Chinese and English, each used by at least two writers of the development sets or
an entry of a standard dictionary (the file's [dictionary]; tests/unit/test_cue_usage.py):

- strong yes, read through                      -> deep
- skim, conclusion only                         -> skim
- not needed, ignore, not worth, nothing to read -> skip
- weak hints (routine, typo, draft)             -> only when nothing else is said

A negator just before a cue in the same clause flips it ("不值得精读", "no need for a close
read" is skip; "can't skip this" is deep); a negator inside a longer positive phrase does
not ("很有阅读必要" is deep). Everything here is pure and deterministic.
"""

from __future__ import annotations

import bisect
import enum
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import CLAUSE_STOP, SENTENCE_STOP, negator, squeeze
from bot.classify.trie import ASCII_ALNUM, trie_regex
from bot.domain import Verdict

__all__ = [
    "IDIOMS",
    "RULE_DATA",
    "SIDE_CUES",
    "SIDE_CUE_RE",
    "Cue",
    "Idiom",
    "Meaning",
    "edges_ok",
    "find_cues",
    "idiom_matches",
    "scan",
    "weak_hint",
    "weak_phrases",
]


class Meaning(enum.StrEnum):
    """What a verdict phrase means."""

    STRONG_YES = "strong-yes"
    READ_THROUGH = "read-through"
    SKIM = "skim"
    CONCLUSION_ONLY = "conclusion-only"
    NOT_NEEDED = "not-needed"
    IGNORE = "ignore"
    NOT_WORTH = "not-worth"
    NOTHING_TO_READ = "nothing-to-read"


VERDICT_OF: dict[Meaning, Verdict] = {
    Meaning.STRONG_YES: Verdict.DEEP,
    Meaning.READ_THROUGH: Verdict.DEEP,
    Meaning.SKIM: Verdict.SKIM,
    Meaning.CONCLUSION_ONLY: Verdict.SKIM,
    Meaning.NOT_NEEDED: Verdict.SKIP,
    Meaning.IGNORE: Verdict.SKIP,
    Meaning.NOT_WORTH: Verdict.SKIP,
    Meaning.NOTHING_TO_READ: Verdict.SKIP,
}

# --------------------------------------------------------------------------- lexicon

# The phrase tables, by meaning, and the constructions (data/cues.toml).
RULE_DATA: dict[str, Any] = tomllib.loads(
    (Path(__file__).with_name("data") / "cues.toml").read_text(encoding="utf-8")
)
LEXICON: dict[Meaning, tuple[str, ...]] = {
    Meaning(meaning): tuple(phrases) for meaning, phrases in RULE_DATA["lexicon"].items()
}
# Weak hints, used only when a note says nothing else about reading it.
WEAK_SKIP: tuple[str, ...] = tuple(RULE_DATA["weak_skip"])
# The rules' side cues: what may tell everyone else to skip a note.
_SIDE_KINDS = {
    "before_and_others": ("others",),
    "others": ("others",),
    "others_self": ("others", "self"),
}
SIDE_CUES: dict[str, tuple[str, ...]] = {
    phrase: _SIDE_KINDS[group]
    for group, phrases in RULE_DATA["side_cues"].items()
    for phrase in phrases
}
# The side cues, all literals, found in one pass (by the rules).
SIDE_CUE_RE = re.compile(trie_regex(SIDE_CUES))
# A PR's state ([hints] in the data file): closed or superseded, a skip; a draft, a skim.
_HINTS: dict[str, Any] = RULE_DATA["hints"]
CLOSED_HINT = re.compile("|".join(_HINTS["closed"]["alternatives"]))
OPEN_HINT = re.compile("|".join(_HINTS["open"]["alternatives"]))
_CLOSED_ANCHORS = tuple(_HINTS["closed"]["anchors"])
_OPEN_ANCHORS = tuple(_HINTS["open"]["anchors"])
# The grammar around a cue ([grammar] in the data file).
_GRAMMAR: dict[str, Any] = RULE_DATA["grammar"]
EVEN = re.compile(_GRAMMAR["even"])
HEDGE = re.compile(_GRAMMAR["hedge"])
CONTRAST = re.compile(_GRAMMAR["contrast"])
_SUFFICIENT = re.compile(_GRAMMAR["sufficient"])
_NEEDS_SUFFICIENCY = frozenset(
    {
        "看描述", "看说明", "看标题", "看摘要", "看要点", "看结论", "the headline", "the gist",
        "the release note", "the changelog entry", "the takeaway", "the bottom line",
        "the summary is", "the description is", "the conclusion is",
    }
)  # fmt: skip
# ---- constructions: grammar rather than fixed phrases, by what they mean (the families of
# data/cues.toml). Every match of a pattern contains one of its anchors, so a pattern runs
# only near its anchors (see `_idiom_matches`). English patterns are checked for word edges
# after the match: a leading \b would slow the scan several times.
_NUMBERS: dict[str, int] = RULE_DATA["numbers"]
_ZH_DIGITS: dict[str, int] = RULE_DATA["zh_digits"]


def _amount(word: str) -> float:
    """A small number written in digits, English words or Chinese numerals."""
    word = " ".join(word.replace("-", " ").split())
    if word.isdigit():
        return float(word)
    if word.startswith("half"):
        return 0.5
    if "quarter" in word:
        return 0.25
    if word in _NUMBERS or word.split()[0] in _NUMBERS:
        return float(sum(_NUMBERS.get(w, 0) for w in word.split()))
    if word == "半":
        return 0.5
    if word == "几":  # "a few"
        return 3.0
    if word == "整":
        return 1.0
    tens, _, ones = word.partition("十")
    if "十" in word:
        return float(_ZH_DIGITS.get(tens, 1) * 10 + _ZH_DIGITS.get(ones, 0))
    return float(_ZH_DIGITS.get(word, 1))


def _budget_marker(m: re.Match[str]) -> str:
    """Skip for no time, skim for under half an hour, deep for more."""
    amount, unit = _amount(m.group(1)), m.group(2)
    minutes = amount if unit.startswith(("min", "分")) else amount * 60
    if unit.startswith(("sitting", "evening", "afternoon", "晚", "下午", "上午")):
        minutes = 120  # a sitting, an evening: a long read whatever the number
    if minutes <= 0:
        return _SKIP_MARK
    return _DEEP_MARK if minutes >= T.deep_budget_minutes else ""


def _rating_marker(m: re.Match[str]) -> str:
    """A rating's verdict: a score out of ten or a row of stars out of five."""
    text = next(g for g in m.groups() if g)
    if text.isdigit():
        score = int(text)
        if score <= T.rating_skip_max:
            return _SKIP_MARK
        return "" if score <= T.rating_skim_max else _DEEP_MARK
    if text[0] == "★":
        if len(text) <= T.stars_skip_max:
            return _SKIP_MARK
        return "" if len(text) <= T.stars_skim_max else _DEEP_MARK
    if text == "低" and m.group().startswith("必读"):
        return _SKIP_MARK  # "必读指数：低": not a must-read at all
    return _RATING_MARK[_RATING_MEANING[text]]


_RATING_MEANING: dict[str, str] = RULE_DATA["rating_meaning"]
# A bare "pass", "不看" that is the whole of its clause, or after "otherwise", "can".
_BARE_LEAD = re.compile(
    r"(?:\b(?:otherwise|else|can|may|could|just|safely)\s+|(?:[.;:!?,。]|→|->)\s*)$"
)

# Idiom matches carry a marker instead of a phrase; the marker says what they mean.
_SKIP_MARK = "\t"
_DEEP_MARK = " "
_MARKED: dict[str, Meaning] = {
    "": Meaning.CONCLUSION_ONLY,
    _DEEP_MARK: Meaning.READ_THROUGH,
    _SKIP_MARK: Meaning.NOT_NEEDED,
}
_RATING_MARK = {"deep": _DEEP_MARK, "skim": "", "skip": _SKIP_MARK}
# A rating or a time budget is weaker than a directive: it speaks only in a note that says
# nothing else ("3/10, the title says it all" is a skip). Its markers start with "\x01".
_WEAK = "\x01"
_MARKED.update({_WEAK + k: v for k, v in _MARKED.items()})
_SCORED = frozenset(_WEAK + k for k in ("", _DEEP_MARK, _SKIP_MARK))
_VISIT = "\x02"  # the writer's own visit: weak too, but not a score
_BUDGET_MARK = "\x03"  # a time budget for the reader
_MARKED.update(
    {m + k: _MARKED[k] for k in ("", _DEEP_MARK, _SKIP_MARK) for m in (_VISIT, _BUDGET_MARK)}
)


@dataclass(frozen=True)
class Idiom:
    family: str
    pattern: re.Pattern[str]
    marker: str
    anchors: tuple[str, ...]
    edged: bool  # must start and end at a word edge
    rating: bool
    budget: bool
    bare: bool


# What a family's matches mean, by its `verdict` in the data file.
_FAMILY_MARK = {
    "skim": "",
    "skip": _SKIP_MARK,
    "deep": _DEEP_MARK,
    "visit-skip": _VISIT + _SKIP_MARK,
}
# Families in order: a later family wins where matches overlap ("别只看标题" over "只看").
IDIOMS = tuple(
    Idiom(
        family["name"],
        re.compile(pattern["regex"]),
        _FAMILY_MARK[family["verdict"]],
        tuple(pattern["anchors"]),
        family["edged"],
        family.get("kind") == "rating",
        family.get("kind") == "budget",
        family.get("kind") == "bare",
    )
    for family in RULE_DATA["families"]
    for pattern in family["patterns"]
)


def _anchor_table() -> dict[str, frozenset[int]]:
    """Anchor (without spaces) -> the idioms whose matches may contain it."""
    own: dict[str, set[int]] = {}
    for index, idiom in enumerate(IDIOMS):
        for anchor in idiom.anchors:
            own.setdefault(squeeze(anchor), set()).add(index)
    return {
        key: frozenset(i for other, idioms in own.items() if other in key for i in idioms)
        for key in own
    }


_ANCHORS = _anchor_table()


def idiom_matches(
    text: str, near: dict[int, list[tuple[int, int]]], idioms: tuple[Idiom, ...] = ()
) -> Iterator[tuple[Idiom, re.Match[str]]]:
    """(idiom, match) of every idiom, idiom by idiom, scanning only `near` its anchors.

    `near` holds, per idiom, the text windows around its anchors in order (`scan`): running a
    pattern only there is much cheaper than running every pattern over the whole note.
    `idioms` replaces IDIOMS (the same families compiled another way, for evaluation).
    """
    stop = len(text)
    for index in sorted(near):
        idiom = (idioms or IDIOMS)[index]
        windows = near[index]
        lo, hi = windows[0]
        last = lo
        for a, b in [*windows[1:], (stop + 1, stop + 1)]:
            if a <= hi:
                hi = max(hi, b)
                continue
            for m in idiom.pattern.finditer(text, max(lo, last), hi):
                last = m.end()
                yield idiom, m
            lo, hi = a, b


def _terms() -> dict[str, Meaning]:
    out: dict[str, Meaning] = {}
    for meaning, phrases in LEXICON.items():
        for phrase in phrases:
            out.setdefault(phrase, meaning)
    return out


TERMS = _terms()
_ASCII = ASCII_ALNUM


# Phrases by their spelling without spaces: the trie lets "close read" match "closeread".
_BY_KEY = {squeeze(p): p for p in TERMS}
# What one scan finds: key -> (the phrase it is, or None; the idioms anchored in it). Idiom
# anchors share the phrase scan (no anchor starts with a shorter phrase, so none hides one).
# A match can still hide an anchor that starts inside it and ends after it ("认真读" in
# "认真读透"): `scan` looks for one at each place inside a match.
_HITS: dict[str, tuple[str | None, frozenset[int]]] = {
    key: (_BY_KEY.get(key), frozenset().union(*(i for a, i in _ANCHORS.items() if a in key)))
    for key in {*_BY_KEY, *_ANCHORS}
}
_WEAK_KEYS = frozenset(squeeze(p) for p in WEAK_SKIP)


def edges_ok(text: str, s: int, e: int) -> bool:
    """An ASCII phrase starts and ends at word edges ("skim" is not inside "skimmable")."""
    if text[s] in _ASCII and s > 0 and text[s - 1] in _ASCII:
        return False
    return not (text[e - 1] in _ASCII and e < len(text) and text[e] in _ASCII)


# Phrases and idiom anchors, found in one scan; English words that start no phrase are
# consumed whole (dropped by the _HITS lookup), so the scan never restarts inside a word.
_CUE_RE = re.compile(
    trie_regex([*TERMS, *(a for idiom in IDIOMS for a in idiom.anchors)], skip_words=True)
)
_WEAK_RE = re.compile(trie_regex(WEAK_SKIP))
# The anchors alone, for one that starts inside a longer match of the phrase scan and ends
# after it ("认真读" then "读透", "可以不" then "不必").
_ANCHOR_RE = re.compile(trie_regex(sorted({a for idiom in IDIOMS for a in idiom.anchors})))


@dataclass(frozen=True)
class Cue:
    """One verdict statement found in a note."""

    start: int
    end: int
    meaning: Meaning
    verdict: Verdict
    negated: bool  # flipped by a negator ("不值得精读")
    soft: bool  # a negated deep cue: a later skim cue in the sentence wins
    text: str
    weak: bool = False  # a rating, a time budget or the writer's own visit
    scored: bool = False  # weak because it is a rating or a time budget
    budget: bool = False  # a time budget: "give it an hour"


def find_cues(text: str, off: frozenset[str] = frozenset()) -> list[Cue]:
    """Verdict cues in `text` (lower-cased, normalised), in order.

    Weak cues (ratings, time budgets, the writer's own visit) count only in a note that
    says nothing stronger.
    """
    cues = list(_all_cues(text, off))
    if any(c.weak for c in cues) and not all(c.weak for c in cues):
        # a rating yields to a directive in its own sentence, a time budget to none; the
        # writer's own visit yields to any directive
        return [
            c
            for c in cues
            if not c.weak or c.budget or (c.scored and not _said_beside(text, c, cues))
        ]
    if cues and all(c.weak for c in cues) and any(c.verdict is Verdict.SKIP for c in cues):
        # "I glanced at it, then closed the tab": the visit ended in a skip
        return [c for c in cues if c.verdict is Verdict.SKIP and not c.soft] or cues
    return cues


def scan(text: str) -> tuple[list[tuple[int, int, str]], dict[int, list[tuple[int, int]]]]:
    """`text` (lower-cased, normalised) scanned for the lexicon's phrases (start, end,
    phrase) and, per idiom (index in IDIOMS), the windows around its anchors, in one pass
    for phrases and anchors together."""
    found: list[tuple[int, int, str]] = []
    hits = _HITS
    near: dict[int, list[tuple[int, int]]] = {}
    for m in _CUE_RE.finditer(text):
        matched = m.group()
        hit = hits.get(matched)
        if hit is None:
            if matched.isalnum():
                continue  # an English word skipped whole
            hit = hits.get(squeeze(matched))
            if hit is None:
                continue
        phrase, idioms = hit
        s, e = m.span()
        if idioms:
            _near_anchor(text, s, e, idioms, near)
        if phrase is not None and edges_ok(text, s, e):
            found.append((s, e, phrase))
        for at in range(s + 1, e):  # an anchor that starts inside this match and ends after it
            if text[at] in _ASCII and text[at - 1] in _ASCII:
                continue  # not at a word's start
            inner = _ANCHOR_RE.match(text, at)
            if inner is not None and inner.end() > e:
                over = hits.get(inner.group()) or hits.get(squeeze(inner.group()))
                if over is not None and over[1]:
                    _near_anchor(text, at, inner.end(), over[1], near)
    return found, near


def _near_anchor(
    text: str, s: int, e: int, idioms: frozenset[int], near: dict[int, list[tuple[int, int]]]
) -> None:
    """The window around an anchor at `s:e`, for each of its idioms, in `near`."""
    reach = T.idiom_reach if text[s] in _ASCII else T.idiom_reach_zh
    around = (max(0, s - reach), min(len(text), e + reach))
    for index in idioms:
        near.setdefault(index, []).append(around)


def _all_cues(text: str, off: frozenset[str]) -> Iterator[Cue]:
    """Every verdict cue in `text`, weak ones included."""
    start, stop = 0, len(text)
    previous_end = start
    found, near = scan(text)
    if "phrases" in off:
        found = []
    for idiom, m in idiom_matches(text, near):
        if idiom.family in off:
            continue
        a, b = m.span()
        marker = idiom.marker
        if idiom.rating:
            marker = _rating_marker(m)
            if m.group()[:1].isdigit() or m.group()[:1] == "★":
                marker = _WEAK + marker
        elif idiom.budget:
            # the writer's own time ("我看了十分钟", "I read it in half an hour") is a visit
            own = _SELF.search(text, _clause_start(text, start, a), a) is not None
            marker = (_VISIT if own else _BUDGET_MARK) + _budget_marker(m)
        elif idiom.edged and not edges_ok(text, a, b):
            continue
        if idiom.bare and not (
            not text[start:a].strip()
            or _BARE_LEAD.search(text, max(start, a - T.bare_lead_window), a)
        ):
            continue
        # the idiom wins over a literal or a weaker idiom inside it ("知道有这回事就行")
        found = [f for f in found if not (f[0] < b and a < f[1])]
        found.append((a, b, marker))
    if "?" in text and "answers" not in off:
        for a, b, marker in _answers(text, start, stop):
            found = [f for f in found if not (f[0] < b and a < f[1])]
            found.append((a, b, marker))
    found.sort()
    matches = found
    stops = [m.end() for m in CLAUSE_STOP.finditer(text, start, stop)] if found else []
    has_question = "?" in text
    for i, (s, e, phrase) in enumerate(matches):
        meaning = _MARKED.get(phrase) or TERMS[phrase]
        at = bisect.bisect_right(stops, s) - 1
        clause = stops[at] if at >= 0 else start
        # A "not worth"/"不值得" right before another cue is that cue's negator.
        if meaning is Meaning.NOT_WORTH and i + 1 < len(matches):
            nxt = matches[i + 1][0]
            if nxt - e <= T.not_worth_gap and not CLAUSE_STOP.search(text, e, nxt):
                continue
        if phrase in _NEEDS_SUFFICIENCY and "sufficiency" not in off:
            c_end = CLAUSE_STOP.search(text, e, stop)
            clause_text = text[clause : c_end.start() if c_end else stop]
            if not _SUFFICIENT.search(clause_text):
                continue
        if phrase[:1] in "不没" and s > 0 and e - s > 1 and text[s - 1] == text[s + 1]:
            continue  # "值不值得", "要不要看": a question, not a negation
        asked = SENTENCE_STOP.search(text, e, stop) if has_question else None
        if asked is not None and asked.group() == "?" and "question" not in off:
            continue  # "要细看吗?", "worth a close read?": asked, not said
        if meaning is Meaning.NOT_WORTH and text.endswith(_NOT_THAT, start, s):
            continue  # "不是不值得看": a double negative, the rest of the note decides
        verdict = VERDICT_OF[meaning]
        if verdict is Verdict.DEEP and "later" not in off and _later(text, clause, s, e, stop):
            meaning, verdict = Meaning.SKIM, Verdict.SKIM  # "等定稿再细读", "read it once it lands"
        window = text[max(clause, previous_end, s - T.negator_window) : s]
        cut = None
        for cm in CONTRAST.finditer(window):
            cut = cm.end()
        if cut is not None:
            window = window[cut:]
        negated = soft = False
        kind = negator(window) if window and "negation" not in off else None
        if meaning not in (Meaning.NOT_NEEDED, Meaning.NOT_WORTH, Meaning.NOTHING_TO_READ):
            lo = max(clause, s - T.cue_lookback)
            if kind == "more" and _CAPPED.search(text, lo, s) is None:
                verdict, negated = Verdict.DEEP, True
            elif kind == "more":
                pass  # "no one needs more than the headline": the cue itself is the cap
            elif kind is not None:
                negated = True
                if verdict is Verdict.DEEP:
                    verdict, soft = Verdict.SKIP, True
                elif verdict is Verdict.SKIM:
                    if kind != "need":
                        previous_end = e
                        continue  # "not a skim" alone says little
                    verdict = Verdict.SKIP
                else:
                    verdict = Verdict.DEEP  # "don't ignore this"
        elif (
            meaning is Meaning.NOT_NEEDED
            and kind is not None
            and phrase[:1] not in "不无没"
            and phrase.strip(_WEAK + _VISIT + _BUDGET_MARK) != _SKIP_MARK
        ):
            verdict, negated = Verdict.DEEP, True  # "can't skip this", "不能跳过"
        soft = soft or meaning is Meaning.NOTHING_TO_READ
        previous_end = e
        weak = phrase[:1] in (_WEAK, _VISIT, _BUDGET_MARK)
        scored = phrase in _SCORED or phrase[:1] == _BUDGET_MARK
        budget = phrase[:1] == _BUDGET_MARK
        yield Cue(s, e, meaning, verdict, negated, soft, text[s:e], weak, scored, budget)


_NOT_THAT = ("不是", "并非", "并不是")
_CAPPED = re.compile(_GRAMMAR["capped"])
_SELF = re.compile(_GRAMMAR["self"])
_LATER_AFTER = re.compile(_GRAMMAR["later_after"])
_LATER_BEFORE = re.compile(f"(?:{_GRAMMAR['later_before']})$")


def _later(text: str, clause: int, s: int, e: int, stop: int) -> bool:
    """Is the reading the cue asks for put off until later?"""
    if _LATER_AFTER.match(text, e, stop) is not None:
        return True
    if "再" not in text[max(clause, s - T.later_window) : s]:
        return False
    return _LATER_BEFORE.search(text, clause, s) is not None


# A question about reading and the answer right after it: "Should kernel people read this?
# Absolutely.", "要不要细看？要。", "Can you skip it? You really can't.", "Worth opening? No."
# What a question asks about, by the words in it.
_ASKS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern) for name, pattern in _GRAMMAR["asks"].items()
}
_A_NO = re.compile(_GRAMMAR["answer_no"])
_A_YES = re.compile(_GRAMMAR["answer_yes"])
_ANSWER_END = re.compile(r"[。!?\n;]|\.(?:\s|$)")


def _answers(text: str, start: int, stop: int) -> Iterator[tuple[int, int, str]]:
    """(start, end, marker) of each answer to a question about reading the PR."""
    for q in re.finditer(r"\?", text[start:stop]):
        at = start + q.start()
        begin = max((m.end() for m in SENTENCE_STOP.finditer(text, start, at)), default=start)
        question = text[begin:at]
        if not _ASKS["read"].search(question):
            continue
        end_at = _ANSWER_END.search(text, at + 1, stop)
        end = end_at.start() if end_at else stop
        if end <= at + 1 or CONTRAST.search(text, at + 1, end):
            continue  # "要看，但不用逐行": the rest of the answer decides
        no = _A_NO.match(text, at + 1, end)
        yes = None if no else _A_YES.match(text, at + 1, end)
        verdict: Verdict | None
        if _ASKS["rhetorical"].search(question):
            verdict = Verdict.SKIP  # "谁会逐行看一个版本号变更呢?"
        elif _ASKS["who"].match(question):
            verdict = None if no else Verdict.DEEP  # "Who needs it? CPU maintainers."
        elif _ASKS["skip"].search(question) and not _ASKS["cost"].search(question):
            verdict = Verdict.DEEP if no else (Verdict.SKIP if yes else None)
        elif yes:
            verdict = Verdict.DEEP
        elif no and not _ASKS["depth"].search(question):
            verdict = Verdict.SKIP
        else:
            verdict = None
        if verdict is not None:
            yield at + 1, end, _DEEP_MARK if verdict is Verdict.DEEP else _SKIP_MARK


def _clause_start(text: str, start: int, at: int) -> int:
    """Where the clause holding `text[at]` starts."""
    return max(
        (m.end() for m in CLAUSE_STOP.finditer(text, max(start, at - T.clause_lookback), at)),
        default=max(start, at - T.clause_lookback),
    )


def _said_beside(text: str, weak: Cue, cues: list[Cue]) -> bool:
    """Does a stronger statement share the sentence of a rating or time budget?"""
    begin = max((m.end() for m in SENTENCE_STOP.finditer(text, 0, weak.start)), default=0)
    end_at = SENTENCE_STOP.search(text, weak.end)
    end = end_at.start() if end_at else len(text)
    return any(begin <= c.start < end and not c.weak for c in cues)


def weak_phrases(title: str, text: str) -> Iterator[str]:
    """The weak hints ([weak_skip]) in a normalised, lower-cased title and paragraph."""
    for t in (title, text):
        for m in _WEAK_RE.finditer(t):
            key = squeeze(m.group())
            if key in _WEAK_KEYS and edges_ok(t, m.start(), m.end()):
                yield key


def weak_hint(title: str, text: str) -> tuple[Verdict, bool] | None:
    """The verdict hinted by a note that states none: (verdict, found), or None."""
    both = title + "\n" + text
    if any(a in both for a in _CLOSED_ANCHORS) and CLOSED_HINT.search(both):
        return Verdict.SKIP, True
    if any(weak_phrases(title, text)):
        return Verdict.SKIP, True
    if any(a in both for a in _OPEN_ANCHORS) and OPEN_HINT.search(both):
        return Verdict.SKIM, True
    return None
