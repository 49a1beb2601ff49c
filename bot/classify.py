"""Rule-based note classifier: which readers a note is for, and how closely to read it.

Everything here is pure and deterministic. A `Classifier` is compiled once per
`Taxonomy`: all keywords and audience phrases of every role go into one
prefix-trie regex, so a note is scanned once rather than once per keyword.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

from bot.domain import Classification, Verdict
from bot.taxonomy import Taxonomy

__all__ = ["Classifier", "build_classifier", "classifier_fingerprint", "classify"]

# --------------------------------------------------------------------------- tuning

TITLE_WEIGHT = 2.5  # a keyword in the title counts this many times a paragraph hit
AUDIENCE_WEIGHT = 5.0  # an audience phrase ("发布工程负责人") is strong evidence
VERDICT_SENTENCE_BONUS = 1.5  # hits in the sentence that carries the verdict
REPEAT_BONUS = 0.3  # each repeat of a term adds this fraction (up to 3 repeats)
MIN_SCORE = 3.0  # a role needs at least this much evidence
RELATIVE_MIN = 0.35  # ...and at least this fraction of the best role's score
SPAN_MIN = 2.0  # evidence needed to count a role as named in an audience span
FALLBACK_ROLE = "models"
EXCERPT_MAX = 160
EXCERPT_MIN = 24  # a shorter verdict sentence ("值得精读。") gets the next one too

# --------------------------------------------------------------------------- text helpers

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")

# Sentence and clause boundaries (applied to NFKC text, so "，" is already ","). A "." only
# ends a sentence before whitespace, so "v0.6.1" and "torch.compile" stay whole.
_SENTENCE_END = re.compile(r"[。!?.\n]")
_CLAUSE_END = re.compile(r"[。!?.\n,;:]|——| — ")


# The usual full-width punctuation, mapped as NFKC would; replacing these first keeps the
# (slow) full normalisation for the rare text that needs more.
_FULLWIDTH = tuple((chr(cp), chr(cp - 0xFEE0)) for cp in map(ord, "，：；（）！？"))


def _normalise(text: str) -> str:
    """NFKC-normalise `text` (with a fast path for the usual full-width punctuation)."""
    if text.isascii():
        return text
    for wide, narrow in _FULLWIDTH:
        if wide in text:
            text = text.replace(wide, narrow)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text


def _bounds(pattern: re.Pattern[str], text: str) -> list[int]:
    """Start offsets of the segments `pattern` cuts `text` into (always starts with 0)."""
    starts = [0]
    size = len(text)
    for m in pattern.finditer(text):
        end = m.end()
        if end >= size or end == starts[-1]:
            continue
        if text[m.start()] == "." and not text[end].isspace():
            continue
        starts.append(end)
    return starts


def _segment(starts: list[int], text_len: int, index: int) -> tuple[int, int]:
    end = starts[index + 1] if index + 1 < len(starts) else text_len
    return starts[index], end


def _trie_regex(terms: Iterable[str], skip_words: bool = False) -> str:
    """A regex matching any of `terms`, factored as a prefix trie (longest match wins).

    With `skip_words`, an ASCII word that does not start with a term is consumed whole,
    so the scan never restarts in the middle of a word (terms must start at a word edge
    anyway); callers drop those filler matches.
    """
    trie: dict[str, object] = {}
    for term in terms:
        node: dict[str, object] = trie
        for ch in term:
            child = node.setdefault(ch, {})
            assert isinstance(child, dict)
            node = child
        node[""] = {}

    def emit(node: dict[str, object]) -> str:
        alts: list[str] = []
        for ch in sorted(k for k in node if k):
            child = node[ch]
            assert isinstance(child, dict)
            piece = r"\s*" if ch == " " else re.escape(ch)
            alts.append(piece + emit(child))
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if "" in node:
            return "(?:" + body + ")?"
        return body

    if not skip_words:
        return emit(trie)
    alts = []
    for ch in sorted(set(trie) | _ASCII_ALNUM):
        child = trie.get(ch)
        if ch not in _ASCII_ALNUM:
            assert isinstance(child, dict)
            alts.append(re.escape(ch) + emit(child))
        elif child is None:
            alts.append(ch + "[a-z0-9]*")
        else:
            assert isinstance(child, dict)
            rest = emit(child)
            alts.append(f"{ch}(?:{rest}|[a-z0-9]*)" if rest else f"{ch}[a-z0-9]*")
    return "(?:" + "|".join(alts) + ")"


def _key(term: str) -> str:
    return "".join(term.split())


# --------------------------------------------------------------------------- verdict cues

# Verdict cues are literals (one trie regex, scanned once); a "deep" cue preceded by a
# negator in the same clause ("不值得精读", "not worth a close read") reads as skip.
_VERDICT_CUES: dict[str, str] = {
    **dict.fromkeys(
        [
            "精读",
            "细读",
            "细看",
            "深读",
            "必读",
            "值得一读",
            "值得深入",
            "推荐阅读",
            "强烈推荐",
            "close read",
            "careful read",
            "closer read",
            "deep read",
            "in-depth read",
            "must read",
            "must-read",
            "recommended reading",
            "required reading",
            "essential reading",
            "worth reading",
            "worth a read",
            "worth studying",
            "read closely",
            "read carefully",
            "read it closely",
            "read it carefully",
            "read in depth",
            "worth a careful look",
            "worth a close look",
            "仔细阅读",
            "仔细读",
            "认真读",
            "认真阅读",
            "逐行读",
            "重点阅读",
            "deep dive",
            "deep-dive",
            "read in full",
            "highly recommended",
            "recommended for",
            "worth your time",
        ],
        "deep",
    ),
    **dict.fromkeys(
        [
            "快速浏览",
            "浏览",
            "略读",
            "速览",
            "扫一眼",
            "粗读",
            "泛读",
            "即可读完",
            "几分钟",
            "分钟即可",
            "skim",
            "skimmed",
            "skimming",
            "quick look",
            "quick read",
            "quick glance",
            "glance",
            "few minutes",
            "看一眼",
            "瞄一眼",
            "过一眼",
            "粗看",
            "大致看看",
            "quick scan",
            "skim through",
            "light read",
            "worth a look",
            "browse",
        ],
        "skim",
    ),
    **dict.fromkeys(
        [
            "可略过",
            "可以略过",
            "略过",
            "可跳过",
            "可以跳过",
            "跳过",
            "不值得读",
            "不值得一读",
            "不值得阅读",
            "无需阅读",
            "不必阅读",
            "没有阅读价值",
            "没有阅读必要",
            "无阅读价值",
            "阅读必要",
            "不必打开",
            "不必看",
            "无需看",
            "skip",
            "skipped",
            "skippable",
            "not worth reading",
            "not worth your time",
            "no need to read",
            "can be ignored",
            "不用看",
            "不需要看",
            "不用读",
            "不必读",
            "不需要读",
            "不值得看",
            "价值不大",
            "nothing worth reading",
            "no need to look",
            "no need to open",
        ],
        "skip",
    ),
    # Says there is nothing to read; like a negated deep cue, a later skim cue in the same
    # sentence wins ("没什么可读的，看一眼修复点就行").
    **dict.fromkeys(
        [
            "没什么可读",
            "没有什么可读",
            "没啥可读",
            "乏善可陈",
            "nothing to read",
            "not much to read",
            "little to read",
            "nothing much to see",
        ],
        "neg",
    ),
}
_VERDICT_RE = re.compile(_trie_regex(_VERDICT_CUES))
_NEGATOR_ZH = re.compile(
    r"(?:不值得|不太值得|未必值得|不必|无需|无须|不用|用不着|不需要|没必要|而非|并非|不是|算不上|谈不上"
    r"|不建议)[^,。;]{0,4}$"
)
_NEGATOR_EN = re.compile(
    r"\b(?:not|no need to|no need for|don't|do not|doesn't|does not|isn't|is not|needn't"
    r"|without|rather than|never|hardly|won't|nor)\b[^,;.]{0,16}$"
)


def _verdict_cues(text: str, start: int = 0, end: int | None = None) -> Iterator[tuple[int, str]]:
    """(offset, kind) of each verdict cue: deep, skim, skip or neg (negated deep, "没什么可读")."""
    size = len(text)
    for m in _VERDICT_RE.finditer(text, start, size if end is None else end):
        s, e = m.span()
        cue = m.group()
        if cue[0] in _ASCII_ALNUM:
            if s > 0 and text[s - 1] in _ASCII_ALNUM:
                continue
            if e < size and text[e] in _ASCII_ALNUM and text[e] != "s":
                continue
        kind = _VERDICT_CUES.get(cue) or _VERDICT_CUES[" ".join(cue.split())]
        if kind == "deep":
            window = text[max(0, s - 24) : s]
            negator = _NEGATOR_EN if cue[0] in _ASCII_ALNUM else _NEGATOR_ZH
            if negator.search(window):
                kind = "neg"
        yield s, kind


_CLOSED_RE = re.compile(
    r"已关闭|未合并|已撤回|被关闭|最终关闭|草案|\((?:closed|open|draft|reverted|withdrawn)\)"
    r"|\bwithdrawn\b|\bwas closed\b|\bclosed rather than merged\b|\bnever merged\b"
)

# Audience spans: "值得<X>精读", "对<X>来说", "for <X>".
_SPAN_ZH = re.compile(
    r"(?:值得|建议|推荐|适合|对于|对)([^,。;]{1,40}?)(?:精读|细读|快速浏览|浏览|略读|阅读|来说|而言)"
)
_SPAN_EN = re.compile(
    r"\bfor\s+([^;.]{1,120})"
    r"|\bif\s+you\s+(?:own|maintain|work\s+on|touch|care\s+about|are\s+working\s+on|run)"
    r"\s+([^;.,]{1,80})"
    r"|\b(?:anyone|people|engineers)\s+(?:touching|working\s+on|maintaining|owning)\s+([^;.,]{1,80})"
)

# Negative and side cues, all literals, found in one pass. Kinds:
#   before - readers/topics named before it in its clause need not read it
#            ("FP8 的工程师可略过", "与视觉编码器无关"): those roles are dropped
#   after  - the same for topics named after it ("not relevant to kernel authors")
#   others - may close an audience split ("其余读者可略过", "everyone else can skip it")
#   defer  - the clause describes work left to later PRs; its words are not evidence
_AUX_CUES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        [
            "可略过",
            "可以略过",
            "可跳过",
            "可以跳过",
            "无需阅读",
            "不必阅读",
            "无需关注",
            "不必关注",
            "不用读",
            "不必读",
            "无需精读",
            "不必精读",
            "不必细读",
            "无需细读",
            "无需细看",
            "不必细看",
            "不用细看",
            "不用看",
            "不必看",
            "无需看",
            "不需要看",
            "不需要读",
            "可以忽略",
            "可忽略",
            "毫无关系",
            "没有关系",
            "无关",
            "不相关",
            "can skip",
            "can safely skip",
            "can ignore",
            "can safely ignore",
            "may skip",
            "should skip",
            "need not read",
            "needn't read",
            "don't need to read",
            "do not need to read",
        ],
        ("before", "others"),
    ),
    **dict.fromkeys(["略过即可", "跳过即可", "skip", "ignore"], ("others",)),
    # The subject is part of the cue: "nobody else needs to read this".
    **dict.fromkeys(["nobody else", "no one else", "no-one else"], ("others", "self")),
    **dict.fromkeys(
        [
            "not relevant to",
            "not relevant for",
            "isn't relevant to",
            "is not relevant to",
            "not useful for",
            "not interesting for",
            "irrelevant to",
            "irrelevant for",
            "nothing to do with",
            "unrelated to",
            "no relevance to",
            "no relevance for",
        ],
        ("after",),
    ),
    **dict.fromkeys(
        [
            "留给后续",
            "留待后续",
            "留到后续",
            "留给之后",
            "后续单独",
            "left to a follow-up",
            "left to a follow up",
            "left to follow-ups",
            "left to later",
            "left for later",
            "left for a follow-up",
            "for later",
        ],
        ("defer",),
    ),
}
_AUX_RE = re.compile(_trie_regex(_AUX_CUES))
# The subject just before an "others" cue: "其余读者", "普通模型工程师", "everyone else".
_OTHERS_SUBJECT = re.compile(
    r"(?:其余|其他|其它|别的|剩下的|普通|一般|大多数|大部分|多数|非[^,。;]{1,12}?的"
    r"|不(?:做|负责|维护|关注|关心|从事)[^,。;]{1,12}?的)[^,。;]{0,20}$"
    r"|\b(?:everyone|everybody|anyone)\s+else\b[^.;]{0,20}$"
    r"|\b(?:most|non-[a-z0-9]+)\s+(?:readers|people|engineers|users|folks)\b[^.;]{0,20}$"
    r"|\b(?:anyone|everyone|those)\s+(?:not|who\s+(?:doesn't|does\s+not|don't|do\s+not))\b"
    r"[^.;]{0,40}$"
    r"|\b(?:other\s+(?:readers|engineers|folks|people|teams)|others"
    r"|the\s+rest(?:\s+of\s+(?:you|us|the\s+team))?)"
    r"(?:\s+(?:can|may|should|could)(?:\s+(?:just|safely|probably))?)?\s*$"
)
# "Everyone but X" as the subject of a skip cue: X is not being told to skip.
_EXCEPT_SUBJECT = re.compile(
    r"(?:非|不(?:做|负责|维护|关注|关心|从事))[^,。;]{1,12}?的[^,。;]{0,20}$"
    r"|\bnon-[a-z0-9]+\s+(?:readers|people|engineers|users|folks)\b[^.;]{0,20}$"
    r"|\b(?:anyone|everyone|those)\s+(?:not|who\s+(?:doesn't|does\s+not|don't|do\s+not))\b"
    r"[^.;]{0,40}$"
)
# Cheap pre-check for an _OTHERS_SUBJECT before scanning every verdict cue of a note.
_OTHERS_HINT = re.compile(
    r"其余|其他|其它|别的|剩下|普通|一般|多数|大部分|不做|不负责|不维护|不关|非|else|other|rest|most|non-"
)
# A subject that names people ("其余读者", "others"), not other parts of the PR ("其余改动").
_READER_NOUN = re.compile(
    r"读者|人|同学|工程师|开发者|用户|团队|方向|else|others|rest|readers|people"
)


# A title that adds a model ("新增 X 模型", "为 X 模型添加支持", "Add X model"), and one that
# adds support for a named model ("新增 GLM-9 支持", "Add support for Foo-7B").
_MODEL_TITLE_RE = re.compile(
    r"(?:新增|增加|添加|支持|引入|接入|实现)\s*[a-z0-9][^,:;]{0,24}?模型(?!运行器|加载器)"
    r"|模型(?:支持|实现|接入)|为[^,:;]{1,30}模型[^,:;]{0,12}支持"
    r"|\b(?:add|adds|adding|support|supports|implement|enable)\b[^,:;]{0,30}\bmodel\b"
    r"(?!\s+(?:runner|loader|executor))"
)
_NAME = r"[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+|[a-z]+\d[a-z0-9.]*"
_NAMED_MODEL_RE = re.compile(
    rf"(?:新增|增加|添加|支持)\s*({_NAME})(?:\s*/\s*(?:{_NAME}))*\s*[\u4e00-\u9fff]{{0,4}}(?:支持|模型)"
    rf"|为\s*({_NAME})(?:\s*/\s*(?:{_NAME}))*\s*[^,:;]{{0,12}}?(?:增加|添加|新增)[^,:;]{{0,12}}?支持"
    rf"|\b(?:add|adds|adding)\s+(?:support\s+for\s+)?(?:the\s+)?({_NAME})\b"
    rf"|\bsupport\s+(?:for\s+)?(?:the\s+)?({_NAME})\b"
)


_Info = tuple[tuple[tuple[int, float], ...], bool, bool]
_Hit = tuple[int, str, tuple[tuple[int, float], ...]]


class Classifier:
    """A taxonomy compiled for fast classification; build with `build_classifier`."""

    def __init__(self, taxonomy: Taxonomy) -> None:
        self.taxonomy = taxonomy
        self.slugs = taxonomy.slugs
        self._fallback = FALLBACK_ROLE if FALLBACK_ROLE in self.slugs else self.slugs[0]
        # term key -> ((role index, weight), ...), plus per-key boundary rules
        table: dict[str, dict[int, float]] = {}
        prefix_keys: set[str] = set()
        terms: set[str] = set()

        def add(raw: str, index: int, weight: float) -> None:
            term = _normalise(raw).lower().strip()
            is_prefix = term.endswith("*")
            term = term.rstrip("*").strip()
            if not term:
                return
            key = _key(term)
            if is_prefix:
                prefix_keys.add(key)
            terms.add(" ".join(term.split()))
            slot = table.setdefault(key, {})
            slot[index] = max(slot.get(index, 0.0), weight)

        for index, role in enumerate(taxonomy.roles):
            for term, weight in role.keywords.items():
                add(term, index, weight)
            for phrase in role.audience:
                add(phrase, index, AUDIENCE_WEIGHT)
        self._table: dict[str, tuple[tuple[int, float], ...]] = {
            k: tuple(sorted(v.items())) for k, v in table.items()
        }
        # matched text -> (weights, needs a left word edge, needs a right word edge)
        self._info: dict[str, _Info] = {
            k: (v, k[0] in _ASCII_ALNUM, k[-1] in _ASCII_ALNUM and k not in prefix_keys)
            for k, v in self._table.items()
        }
        pattern = _trie_regex(sorted(terms), skip_words=True)
        self._matcher = re.compile(pattern)

    # ----------------------------------------------------------------- matching

    def _hits(self, text: str, start: int = 0, end: int | None = None) -> list[_Hit]:
        """(offset, term key, weights) of every keyword/audience hit in text[start:end]."""
        size = len(text)
        info_of = self._info
        out: list[_Hit] = []
        for m in self._matcher.finditer(text, start, size if end is None else end):
            key = m.group()
            info = info_of.get(key)
            if info is None:
                if key.isalnum():  # a word skipped whole, not a term
                    continue
                key = _key(key)
                info = info_of.get(key)
                if info is None:
                    continue
            weights, left, right = info
            if left:
                s = m.start()
                if s and text[s - 1] in _ASCII_ALNUM:
                    continue
            if right:
                e = m.end()
                # a word edge must follow (a plural "s" is allowed)
                if (
                    e < size
                    and text[e] in _ASCII_ALNUM
                    and (text[e] != "s" or (e + 1 < size and text[e + 1] in _ASCII_ALNUM))
                ):
                    continue
            out.append((m.start(), key, weights))
        return out

    def _adds_model(self, title: str) -> bool:
        """Does the title announce a new model (rather than a feature for one)?"""
        if _MODEL_TITLE_RE.search(title):
            return True
        for m in _NAMED_MODEL_RE.finditer(title):
            name = next(g for g in m.groups() if g)
            if _key(name) not in self._table:  # "fp8", "eagle3" are vocabulary, not names
                return True
        return False

    def _span_roles(self, text: str) -> dict[int, float]:
        scores: dict[int, float] = {}
        for _offset, _term, weights in self._hits(text):
            for index, weight in weights:
                scores[index] = scores.get(index, 0.0) + weight
        return scores

    # ----------------------------------------------------------------- classify

    def classify(self, title: str, paragraph: str) -> Classification:
        display = paragraph.strip()
        text = _normalise(display).lower()
        title_text = _normalise(title).lower()
        n_roles = len(self.slugs)

        sentence_starts = _bounds(_SENTENCE_END, text)
        clause_cache: list[list[int]] = []

        def clauses() -> list[int]:
            if not clause_cache:
                clause_cache.append(_bounds(_CLAUSE_END, text))
            return clause_cache[0]

        # ---- verdict: the first sentence that carries a cue decides
        verdict: Verdict | None = None
        verdict_sentence = -1
        cue_iter = _verdict_cues(text)
        first_cue = next(cue_iter, None)
        if first_cue is not None:
            offset, first = first_cue
            verdict_sentence = bisect.bisect_right(sentence_starts, offset) - 1
            if first == "neg":
                # "不必精读，快速浏览即可" / "没什么可读的，看一眼就行": a later skim cue decides
                s_end = _segment(sentence_starts, len(text), verdict_sentence)[1]
                later = {kind for _, kind in _verdict_cues(text, offset + 1, s_end)}
                verdict = Verdict.SKIM if "skim" in later else Verdict.SKIP
            elif first == "deep":
                verdict = Verdict.DEEP
            elif first == "skim":
                verdict = Verdict.SKIM
            else:
                verdict = Verdict.SKIP
        if verdict is None:
            closed = _CLOSED_RE.search(title_text) or _CLOSED_RE.search(text)
            verdict = Verdict.SKIP if closed else Verdict.DEEP

        # ---- role evidence
        scores = [0.0] * n_roles
        title_counts: dict[str, int] = {}
        for _, key, _weights in self._hits(title_text):
            title_counts[key] = title_counts.get(key, 0) + 1
        table = self._table
        for key, count in title_counts.items():
            factor = TITLE_WEIGHT * (1.0 + REPEAT_BONUS * (min(count, 4) - 1))
            for index, weight in table[key]:
                scores[index] += weight * factor

        para_hits = all_hits = self._hits(text)
        aux = [
            (m.start(), m.end(), _AUX_CUES[" ".join(m.group().split())])
            for m in _AUX_RE.finditer(text)
        ]
        deferred = [
            _segment(clauses(), len(text), bisect.bisect_right(clauses(), start) - 1)
            for start, _end, kinds in aux
            if "defer" in kinds
        ]
        if deferred:
            para_hits = [h for h in para_hits if not any(a <= h[0] < b for a, b in deferred)]
        if verdict_sentence >= 0:
            vs_start, vs_end = _segment(sentence_starts, len(text), verdict_sentence)
        else:
            vs_start = vs_end = -1
        para_counts: dict[str, tuple[int, float]] = {}
        for offset, key, _weights in para_hits:
            bonus = VERDICT_SENTENCE_BONUS if vs_start <= offset < vs_end else 1.0
            seen = para_counts.get(key)
            if seen is None:
                para_counts[key] = (1, bonus)
            else:
                para_counts[key] = (seen[0] + 1, bonus if bonus > seen[1] else seen[1])
        for key, (count, top) in para_counts.items():
            factor = top + REPEAT_BONUS * (min(count, 4) - 1)
            for index, weight in table[key]:
                scores[index] += weight * factor

        forced: set[int] = set()
        if FALLBACK_ROLE in self.slugs and self._adds_model(title_text):
            forced.add(self.slugs.index(FALLBACK_ROLE))

        # ---- negative evidence: "X 工程师可略过", "与 X 无关", "not relevant to X"
        suppressed: set[int] = set()
        for start, end, kinds in aux:
            before = "before" in kinds
            if not before and "after" not in kinds:
                continue
            ci = bisect.bisect_right(clauses(), start) - 1
            c_start, c_end = _segment(clauses(), len(text), ci)
            lo, hi = (c_start, start) if before else (end, c_end)
            if before and _EXCEPT_SUBJECT.search(text, lo, hi):
                continue  # "非量化方向的读者可略过": the roles named are the exception
            for offset, _term, weights in all_hits:
                if lo <= offset < hi:
                    suppressed.update(index for index, _weight in weights)

        # ---- audience split: "值得 X 精读……其余读者可略过"
        named: dict[int, float] = {}
        role_verdicts: dict[str, Verdict] = {}
        others = -1  # where the "其余读者可略过" clause starts
        others_verdict = Verdict.SKIP
        if verdict is not Verdict.SKIP:
            for start, _end, kinds in aux:
                if "others" in kinds and "self" in kinds:
                    others = start
                    break
                if "others" in kinds:
                    m = _OTHERS_SUBJECT.search(text, max(0, start - 40), start)
                    if m is not None:
                        others = m.start()
                        break
        if others < 0 and verdict is Verdict.DEEP and _OTHERS_HINT.search(text):
            # "值得 X 精读，普通读者快速浏览即可": everyone else gets a skim
            for offset, kind in cue_iter:  # the cues after the first
                if kind != "skim":
                    continue
                m = _OTHERS_SUBJECT.search(text, max(0, offset - 40), offset)
                if m is not None and _READER_NOUN.search(m.group()):
                    others = m.start()
                    others_verdict = Verdict.SKIM
                    break
        if others >= 0 and vs_start >= 0:
            sentence = text[vs_start:vs_end]
            spans = [m.group(1) for m in _SPAN_ZH.finditer(sentence)]
            spans += [next(g for g in m.groups() if g) for m in _SPAN_EN.finditer(sentence)]
            # "维护 API 的工程师可以看看……，其余读者可略过": the readers named just before
            o_start = sentence_starts[bisect.bisect_right(sentence_starts, others) - 1]
            if o_start != vs_start:
                spans.append(text[o_start:others])
            for span in spans:
                for index, value in self._span_roles(span).items():
                    named[index] = named.get(index, 0.0) + value
            named = {i: v for i, v in named.items() if v >= SPAN_MIN and i not in suppressed}
            if named:
                for index, slug in enumerate(self.slugs):
                    role_verdicts[slug] = verdict if index in named else others_verdict

        # ---- role selection
        if named:
            order = sorted(named, key=lambda i: (-scores[i] - named[i], i))
            roles = [self.slugs[i] for i in order]
        else:
            live = [(scores[i], i) for i in range(n_roles) if i not in suppressed]
            best = max((s for s, _ in live), default=0.0)
            threshold = max(MIN_SCORE, RELATIVE_MIN * best)
            chosen = sorted(
                (i for s, i in live if s >= threshold or (i in forced and s >= MIN_SCORE / 2)),
                key=lambda i: (-scores[i], i),
            )
            if not chosen:
                if best > 0:
                    chosen = [max(live, key=lambda item: (item[0], -item[1]))[1]]
                else:
                    chosen = [self.slugs.index(self._fallback)]
            # A note that announces a new model is first of all a models note.
            chosen.sort(key=lambda i: i not in forced)
            roles = [self.slugs[i] for i in chosen]

        excerpt = _excerpt(display, text, sentence_starts, verdict_sentence)
        return Classification(
            roles=tuple(roles),
            primary_role=roles[0],
            verdict=verdict,
            role_verdicts=role_verdicts,
            excerpt=excerpt,
        )

    def scores(self, title: str, paragraph: str) -> dict[str, float]:
        """Raw per-role evidence (title and paragraph hits only), for debugging."""
        out = dict.fromkeys(self.slugs, 0.0)
        for text, factor in ((title, TITLE_WEIGHT), (paragraph, 1.0)):
            for index, value in self._span_roles(_normalise(text).lower()).items():
                out[self.slugs[index]] += value * factor
        return out


def _excerpt(display: str, text: str, starts: list[int], index: int) -> str:
    """The verdict sentence (plus the next one when it is very short), one line."""
    if not display:
        return ""
    if len(display) != len(text):  # normalisation changed offsets: use the first sentence
        display = text = _normalise(display)
    start, end = _segment(starts, len(text), max(index, 0))
    nxt = max(index, 0) + 1
    while end - start < EXCERPT_MIN and nxt < len(starts):
        end = _segment(starts, len(text), nxt)[1]
        nxt += 1
    snippet = " ".join(display[start:end].replace("**", "").split())
    if len(snippet) > EXCERPT_MAX:
        snippet = snippet[: EXCERPT_MAX - 1].rstrip() + "…"
    return snippet


# --------------------------------------------------------------------------- cache

_CACHE: dict[int, tuple[Taxonomy, Classifier]] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 8


def build_classifier(taxonomy: Taxonomy) -> Classifier:
    """The compiled classifier for `taxonomy` (built once per taxonomy object)."""
    entry = _CACHE.get(id(taxonomy))
    if entry is not None and entry[0] is taxonomy:
        return entry[1]
    classifier = Classifier(taxonomy)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[id(taxonomy)] = (taxonomy, classifier)
    return classifier


def classify(title: str, paragraph: str, taxonomy: Taxonomy) -> Classification:
    """Classify one note: its reader roles, primary role, verdict(s) and excerpt."""
    return build_classifier(taxonomy).classify(title, paragraph)


def classifier_fingerprint(taxonomy: Taxonomy) -> str:
    """A hash of the roles (names, aliases, keywords, audience) and of these rules: when it
    changes, stored notes were classified differently and are re-classified."""
    digest = hashlib.sha256(repr(taxonomy.roles).encode("utf-8"))
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:32]
