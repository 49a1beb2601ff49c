"""Text handling shared by the rules, the models and their training: normalising,
sentence and clause splitting, negators, and the models' word and character features.

Several splitters live here side by side because each reads its text differently (a cue's
clause starts after the space that follows a full stop, the rules' after the full stop);
they are kept apart so that every reading stays what it was. Imports nothing of the product.
"""

from __future__ import annotations

import operator
import re
import unicodedata
from collections import Counter

from bot.classify.settings import THRESHOLDS as T
from bot.classify.trie import ASCII_ALNUM, trie_regex

# Sentence and clause boundaries (applied to NFKC text, so "，" is already ","). A "." only
# ends a sentence before whitespace, so "v0.6.1" and "torch.compile" stay whole.
SENTENCE_END = re.compile(r"[。!?.\n]")
# Clause cuts (a "." only before whitespace); those after "。!?\n." also end a sentence.
CLAUSE_CUT = re.compile(r"[。!?\n,;:]|\.(?=\s)|——| — |→|->")


# The usual full-width punctuation, mapped as NFKC would; replacing these first keeps the
# (slow) full normalisation for the rare text that needs more.
_FULLWIDTH = tuple((chr(cp), chr(cp - 0xFEE0)) for cp in map(ord, "，：；（）！？"))


def normalise(text: str) -> str:
    """NFKC-normalise `text` (with a fast path for the usual full-width punctuation)."""
    if text.isascii():
        return text
    for wide, narrow in _FULLWIDTH:
        if wide in text:
            text = text.replace(wide, narrow)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text


def bounds(pattern: re.Pattern[str], text: str) -> list[int]:
    """Start offsets of the segments `pattern` cuts `text` into (always starts with 0)."""
    starts = [0]
    starts += [m.end() for m in pattern.finditer(text)]
    if len(starts) > 1 and starts[-1] >= len(text):
        starts.pop()  # a cut at the very end starts no segment
    return starts


def segment(starts: list[int], text_len: int, index: int) -> tuple[int, int]:
    """(start, end) of segment `index` of a text cut at `starts`."""
    end = starts[index + 1] if index + 1 < len(starts) else text_len
    return starts[index], end


def squeeze(term: str) -> str:
    """`term` without its whitespace, as key phrases are matched ("closeread")."""
    return "".join(term.split())


# A verdict cue's clause stops (the clause starts after the space that follows a full stop).
CLAUSE_STOP = re.compile(r"[,;:。!?\n]|\.\s|——| — |→|->")
SENTENCE_STOP = re.compile(r"[。!?\n]|\.(?:\s|$)")

# The ends of the clauses the models read a note by: punctuation in both languages (a full
# stop only before a space: "fp8.py", "3.13"), dashes, and the contrast words. Every
# alternative starts with a character or a set ("b(?<!\wb)ut" is "\bbut"), so the scan
# rejects most positions at once.
MODEL_CLAUSE_END = re.compile(
    r"[。；;！？!?，,：:\n]|\.(?:\s|$)|\s[-—–]+\s"
    r"|b(?<!\wb)ut\b|h(?<!\wh)owever\b|w(?<!\ww)hereas\b|但是?|不过"
)
_CLAUSE_PIECES = re.compile(f"({MODEL_CLAUSE_END.pattern})")  # the clauses and their ends


def read_clauses(text: str) -> tuple[list[str], list[list[str]], list[int | list[str]]]:
    """The clauses of a normalised, lower-cased paragraph (none empty), the `features` of
    each, and the paragraph's in pieces: a clause's (its index), or a stretch's between
    punctuation tokens where its clauses' joined differ (at a contrast word, a clause
    without features, or "。", a dash or a newline between two English words, which the
    paragraph pairs)."""
    parts: list[str] = []
    grams: list[list[str]] = []
    paragraph: list[int | list[str]] = []
    stretch: list[int] = []
    start = at = 0
    joined, english = True, False  # english: the stretch so far ends with an English word
    for i, piece in enumerate(_CLAUSE_PIECES.split(text)):
        if i % 2 and (piece in ",;:!?" or piece[0] == "."):  # a punctuation token
            paragraph += stretch if joined else [features(text[start:at])]
            stretch, start, joined, english = [], at + len(piece), True, False
        elif i % 2:
            joined = joined and (piece[0] == "。" or piece[0].isspace())
        elif piece.strip():
            got = features(piece)
            joined = joined and bool(got) and not (english and got[0][-1] < "\u3400")
            english = bool(got) and got[-1][-1] < "\u3400"
            stretch.append(len(grams))
            parts.append(piece)
            grams.append(got)
        at += len(piece)
    paragraph += stretch if joined else [features(text[start:])]
    return parts, grams, paragraph


# --------------------------------------------------------------------------- negators

# Negators, scoped to the few words before a cue inside its clause, by kind.
_MORE_WORDS = (
    "不只", "不仅", "不止", "不光", "不单", "not just", "not only", "not merely", "more than",
)  # fmt: skip
_NEED_WORDS = (
    "不必", "无需", "无须", "不用", "用不着", "不需要", "没必要", "不值得", "不太值得", "犯不着",
    "no need", "no need to", "no need for", "not worth", "needn't", "need not", "don't need",
    "do not need", "isn't worth", "not even",
)  # fmt: skip
_PLAIN_WORDS = (
    "未必值得", "毋须", "没有必要", "而非", "并非", "并不", "不是", "算不上", "谈不上", "称不上",
    "不要", "不能", "不可", "不应", "不该", "未必", "不太", "不大", "何必", "没有", "没", "别",
    "不", "not", "no", "don't", "do not", "doesn't", "does not", "isn't", "is not", "never",
    "hardly", "barely", "without", "rather than", "instead of", "nor", "won't", "can't",
    "cannot", "shouldn't", "should not", "nobody", "no one", "no-one", "neither", "little to",
    "hold off on", "hold off", "hold the", "defer the", "postpone the", "save the",
    "not much to",
)  # fmt: skip
# Words that only look negative: 不仅 (not only) is in _MORE_WORDS; 不错, 不少, 不妨 (might
# as well) and 不容 (不容错过 is a cue) are not negators, nor is 别 inside 特别, 区别.
_NOT_NEGATORS = frozenset({"不错", "不少", "不妨", "不容", "不但"})
_BIE_WORDS = frozenset("特区类个告级性分识鉴辨")
_NEG_KIND = {
    **dict.fromkeys(_PLAIN_WORDS, "plain"),
    **dict.fromkeys(_NEED_WORDS, "need"),
    **dict.fromkeys(_MORE_WORDS, "more"),
}
_NEG_RE = re.compile(trie_regex([*_NEG_KIND, *_NOT_NEGATORS]))
_NEG_BY_KEY = {squeeze(w): w for w in _NEG_KIND}
_GAP_STOP = frozenset(",;:。!?\n")


def negator(window: str) -> str | None:
    """The kind ("plain", "need", "more") of a negator that governs a cue ending `window`.

    The negator must sit close before the cue: at most 6 characters (Chinese) or four
    words (English) in between, and no clause punctuation.
    """
    found = None
    for m in _NEG_RE.finditer(window):
        phrase = _NEG_BY_KEY.get(squeeze(m.group()))
        if phrase is None:
            continue  # only looks negative (_NOT_NEGATORS)
        s, e = m.span()
        gap = window[e:]
        if phrase[0] in ASCII_ALNUM:
            if (s > 0 and window[s - 1] in ASCII_ALNUM) or gap[:1] in ASCII_ALNUM:
                continue  # inside a word
            if len(gap.split()) > 4 or any(c in _GAP_STOP for c in gap):
                continue
        elif phrase == "别" and ((s > 0 and window[s - 1] in _BIE_WORDS) or gap[:1] == "的"):
            continue  # 特别, 区别; 别的 (other)
        elif len(gap.strip()) > 6 or any(c in _GAP_STOP for c in gap):
            continue
        found = _NEG_KIND[phrase]
    return found


# --------------------------------------------------------------------------- model features

_TOKEN = re.compile(r"[a-z][a-z0-9'\-]*|[\u3400-\u9fff]+|[.,;:!?()]")
# Negation: words in a negator's scope are marked ("!worth" in "not worth a close read",
# "!精读" in "不值得精读"), so that a negated phrase does not count as the phrase itself.
_NEGATORS_EN = frozenset(
    {
        "not", "no", "never", "don't", "doesn't", "isn't", "aren't", "wasn't", "won't",
        "can't", "cannot", "shouldn't", "needn't", "didn't", "nobody", "nothing", "without",
        "hardly", "barely", "neither", "nor", "none",
    }
)  # fmt: skip
_NEGATOR_ZH = re.compile(r"[不没无别非未勿毋莫]")
_SCOPE_EN = T.negation_scope_en
# Characters that only look like negators here: 不仅 (not only), 不错 (good), 非常 (very)...
_NOT_NEGATORS_ZH = frozenset(
    {"不仅", "不但", "不只", "不光", "不止", "不错", "不少", "不妨", "不过", "不断", "非常",
     "无论", "并非", "别的", "别人", "特别", "区别", "无法"}
)  # fmt: skip


def _negated_from(run: str) -> list[bool]:
    """For each character pair of a Chinese run: does a negator govern it?"""
    marks = [False] * max(len(run) - 1, 0)
    for m in _NEGATOR_ZH.finditer(run):
        i = m.start()
        if run[i : i + 2] in _NOT_NEGATORS_ZH or run[max(i - 1, 0) : i + 1] in _NOT_NEGATORS_ZH:
            continue
        for j in range(i + 1, min(i + 1 + T.negation_scope_zh, len(marks))):
            marks[j] = True
    return marks


def features(text: str) -> list[str]:
    """The model's features in a normalised, lower-cased paragraph, repeated as they occur.

    English words and adjacent word pairs ("not worth"); runs of Chinese characters as
    character pairs ("精读", "值得"); a word or pair in a negator's scope is marked with
    "!". The kinds never collide: a pair of words holds a space, Chinese features hold no
    ASCII letters.
    """
    grams: list[str] = []
    append, extend = grams.append, grams.extend
    previous = ""
    scope = 0
    negated_zh = _NEGATOR_ZH.search(text) is not None
    for token in _TOKEN.findall(text):
        if token >= "\u3400":  # a run of Chinese characters
            if negated_zh and _NEGATOR_ZH.search(token):
                marks = _negated_from(token)
                extend(
                    "!" + token[i : i + 2] if marks[i] else token[i : i + 2]
                    for i in range(len(token) - 1)
                )
            else:
                extend(map(operator.add, token, token[1:]))  # its character pairs
            previous, scope = "", 0
        elif token < "a":  # punctuation
            previous, scope = "", 0
        else:
            word = token
            if scope:
                word, scope = "!" + token, scope - 1
            if token in _NEGATORS_EN:
                scope = _SCOPE_EN
            append(word)
            if previous:
                append(f"{previous} {word}")
            previous = word
    return grams


def squared_counts(grams: list[str]) -> int:
    """The sum of each feature's squared count in `grams`: the square of the l2 norm of
    their count vector (computed once per paragraph for both models)."""
    if len(grams) < 32 and len(set(grams)) == len(grams):
        return len(grams)  # a clause without repeats: each count is one
    counts = Counter(grams).values()
    return sum(map(operator.mul, counts, counts))
