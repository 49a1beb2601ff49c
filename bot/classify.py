"""Rule-based note classifier: which readers a note is for, and how closely to read it.

Everything here is pure and deterministic. A `Classifier` is compiled once per
`Taxonomy`: all keywords and audience phrases of every role go into one
prefix-trie regex, so a note is scanned once rather than once per keyword.
"""

from __future__ import annotations

import bisect
import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from bot.domain import Classification, Verdict
from bot.taxonomy import Taxonomy

__all__ = ["Classifier", "build_classifier", "classify"]

# --------------------------------------------------------------------------- tuning

TITLE_WEIGHT = 2.5  # a keyword in the title counts this many times a paragraph hit
AUDIENCE_WEIGHT = 5.0  # an audience phrase ("发布工程负责人") is strong evidence
VERDICT_SENTENCE_BONUS = 1.5  # hits in the sentence that carries the verdict
REPEAT_BONUS = 0.3  # each repeat of a term adds this fraction (up to 3 repeats)
MIN_SCORE = 3.0  # a role needs at least this much evidence
RELATIVE_MIN = 0.4  # ...and at least this fraction of the best role's score
SPAN_MIN = 2.0  # evidence needed to count a role as named in an audience span
MODEL_TITLE_BONUS = 4.0  # "新增 X 模型" / "Add X model" in the title
FALLBACK_ROLE = "models"
EXCERPT_MAX = 160

# --------------------------------------------------------------------------- text helpers

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")

# Sentence and clause boundaries (applied to NFKC text, so "，" is already ",").
_SENTENCE_END = re.compile(r"[。!?]+|\.(?=\s|$)|\n+")
_CLAUSE_END = re.compile(r"[。!?,;:]+|\.(?=\s|$)|\n+|——| — ")


def _normalise(text: str) -> str:
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    return text


def _bounds(pattern: re.Pattern[str], text: str) -> list[int]:
    """Start offsets of the segments `pattern` cuts `text` into (always starts with 0)."""
    starts = [0]
    for m in pattern.finditer(text):
        if m.end() < len(text):
            starts.append(m.end())
    return starts


def _segment(starts: list[int], text_len: int, index: int) -> tuple[int, int]:
    end = starts[index + 1] if index + 1 < len(starts) else text_len
    return starts[index], end


def _trie_regex(terms: Iterable[str]) -> str:
    """A regex matching any of `terms`, factored as a prefix trie (longest match wins)."""
    trie: dict[str, dict[str, object]] = {}
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

    return emit(trie)


def _key(term: str) -> str:
    return "".join(term.split())


# --------------------------------------------------------------------------- verdict cues

_NEG_DEEP_ZH = r"(?:不值得|不必|无需|无须|不用|不需要|没必要|而非|并非|不是|不建议)[^,。;]{0,6}?(?:精读|细读|细看|深读|深究)"
_NEG_DEEP_EN = (
    r"\b(?:not|no need to|don't|do not|doesn't|does not|isn't|is not|needn't|without|rather than)"
    r"\s+(?:\w+\s+){0,3}?"
    r"(?:(?:a\s+)?(?:close|careful|closer|deep|in-depth)\s+(?:read|look|study)"
    r"|read(?:ing)?\s+(?:it\s+)?(?:closely|carefully|in\s+depth)|worth\s+(?:reading|a\s+read))"
)
_DEEP = (
    r"精读|细读|必读|值得一读|值得细看|值得深入|推荐阅读|强烈推荐"
    r"|\b(?:close|careful|closer|deep|in-depth)\s+read\b|\bmust[- ]read\b"
    r"|\b(?:recommended|required|essential)\s+reading\b|\bworth\s+(?:reading|a\s+read|studying)\b"
    r"|\bread\s+(?:it\s+)?(?:closely|carefully|in\s+depth)\b"
)
_SKIM = (
    r"快速浏览|浏览|略读|速览|扫一眼|粗读|泛读|即可读完|几分钟|\d+\s*分钟"
    r"|\bskim(?:s|med|ming)?\b|\bquick\s+(?:look|read|glance)\b|\bglance\b|\bfew\s+minutes\b"
)
_SKIP = (
    r"可略过|可以略过|略过|可跳过|可以跳过|跳过|不值得读|不值得一读|不值得阅读|无需阅读|不必阅读"
    r"|没有阅读价值|没有阅读必要|无阅读价值|无阅读必要|阅读必要|不必打开|不必看|无需看"
    r"|\bskip(?:ped|pable)?\b|\bnot\s+worth\s+(?:reading|your\s+time)\b|\bno\s+need\s+to\s+read\b"
    r"|\bcan\s+be\s+ignored\b"
)
_VERDICT_RE = re.compile(
    f"(?P<neg>{_NEG_DEEP_ZH}|{_NEG_DEEP_EN})|(?P<deep>{_DEEP})|(?P<skim>{_SKIM})|(?P<skip>{_SKIP})"
)
_CLOSED_RE = re.compile(
    r"已关闭|未合并|已撤回|被关闭|最终关闭|草案|\((?:closed|open|draft|reverted|withdrawn)\)"
    r"|\bwithdrawn\b|\bwas closed\b|\bclosed rather than merged\b|\bnever merged\b"
)

# "其余读者可略过" / "everyone else can skip it": the rest of the readers may skip.
_OTHERS_RE = re.compile(
    r"(?:其余|其他|其它|别的|剩下的|普通|一般|非[^,。;]{1,12}?的)[^,。;]{0,20}?"
    r"(?:可略过|可以略过|可跳过|可以跳过|无需阅读|不必阅读|无需关注|不必关注|略过即可|跳过即可)"
    r"|\b(?:everyone|everybody|anyone)\s+else\b[^.;]{0,20}?\b(?:skip|ignore)"
    r"|\b(?:other\s+readers|others|the\s+rest(?:\s+of\s+(?:you|us|the\s+team))?|other\s+engineers)"
    r"\s+(?:can|may|should|could)\s+(?:safely\s+)?(?:skip|ignore)"
)

# Audience spans: "值得<X>精读", "对<X>来说", "for <X>".
_SPAN_ZH = re.compile(
    r"(?:值得|建议|推荐|适合|对于|对)([^,。;]{1,40}?)(?:精读|细读|快速浏览|浏览|略读|阅读|来说|而言)"
)
_SPAN_EN = re.compile(r"\bfor\s+([^;.]{1,120})")

# Clauses that say a role's readers need not read it ("做 FP8 的工程师无需阅读"), or that
# the note has nothing to do with a topic ("与视觉编码器毫无关系", "not relevant to kernel authors").
_NEG_BEFORE = re.compile(
    r"可略过|可以略过|可跳过|可以跳过|无需阅读|不必阅读|不用读|不必读|无需关注|不必关注"
    r"|无需精读|不必精读|不必细读|毫无关系|没有关系|无关|不相关"
    r"|\bcan\s+(?:safely\s+)?(?:skip|ignore)\b|\b(?:may|should)\s+skip\b"
    r"|\b(?:need\s+not|needn't|don't\s+need\s+to|do\s+not\s+need\s+to)\s+read\b"
)
_NEG_AFTER = re.compile(
    r"\b(?:not|isn't|is\s+not)\s+(?:relevant|interesting|useful)\s+(?:to|for)\b"
    r"|\birrelevant\s+(?:to|for)\b|\bnothing\s+to\s+do\s+with\b|\bunrelated\s+to\b"
    r"|\bno\s+relevance\s+(?:to|for)\b"
)

# A title that adds a model ("新增 X 模型", "为 X 模型添加支持", "Add X model").
_MODEL_TITLE_RE = re.compile(
    r"(?:新增|增加|添加|支持|引入|接入|实现)[^,:;]{0,24}模型(?!运行器|加载器)"
    r"|模型(?:支持|实现|接入)"
    r"|\b(?:add|adds|adding|support|supports|implement|enable)\b[^,:;]{0,30}\bmodel\b"
    r"(?!\s+(?:runner|loader|executor))"
)


@dataclass(frozen=True)
class _Sentence:
    start: int
    end: int


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
        self._left_edge = {k: k[0] in _ASCII_ALNUM for k in self._table}
        self._right_edge = {
            k: k[-1] in _ASCII_ALNUM and k not in prefix_keys for k in self._table
        }
        pattern = _trie_regex(sorted(terms)) if terms else r"(?!x)x"
        self._matcher = re.compile(pattern)

    # ----------------------------------------------------------------- matching

    def _hits(self, text: str, start: int = 0, end: int | None = None) -> list[tuple[int, str]]:
        """(offset, term key) of every keyword/audience hit in text[start:end]."""
        stop = len(text) if end is None else end
        out: list[tuple[int, str]] = []
        for m in self._matcher.finditer(text, start, stop):
            s, e = m.span()
            if s == e:
                continue
            key = _key(m.group())
            if key not in self._table:
                continue
            if self._left_edge[key] and s > 0 and text[s - 1] in _ASCII_ALNUM:
                continue
            if self._right_edge[key] and e < len(text) and text[e] in _ASCII_ALNUM:
                # allow a plural "s"
                if not (text[e] == "s" and (e + 1 == len(text) or text[e + 1] not in _ASCII_ALNUM)):
                    continue
            out.append((s, key))
        return out

    def _span_roles(self, text: str) -> dict[int, float]:
        scores: dict[int, float] = {}
        for _, key in self._hits(text):
            for index, weight in self._table[key]:
                scores[index] = scores.get(index, 0.0) + weight
        return scores

    # ----------------------------------------------------------------- classify

    def classify(self, title: str, paragraph: str) -> Classification:
        display = _normalise(paragraph).strip()
        text = display.lower()
        title_text = _normalise(title).lower()
        n_roles = len(self.slugs)

        sentence_starts = _bounds(_SENTENCE_END, text)
        clause_starts = _bounds(_CLAUSE_END, text)

        # ---- verdict: first sentence that carries a cue
        verdict: Verdict | None = None
        verdict_sentence = -1
        cues = list(_VERDICT_RE.finditer(text))
        if cues:
            verdict_sentence = bisect.bisect_right(sentence_starts, cues[0].start()) - 1
            s_start, s_end = _segment(sentence_starts, len(text), verdict_sentence)
            kinds = [c.lastgroup for c in cues if s_start <= c.start() < s_end]
            first = kinds[0]
            if first == "neg":
                verdict = Verdict.SKIM if "skim" in kinds[1:] else Verdict.SKIP
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
        for _, key in self._hits(title_text):
            title_counts[key] = title_counts.get(key, 0) + 1
        for key, count in title_counts.items():
            factor = TITLE_WEIGHT * (1.0 + REPEAT_BONUS * (min(count, 4) - 1))
            for index, weight in self._table[key]:
                scores[index] += weight * factor

        para_hits = self._hits(text)
        if verdict_sentence >= 0:
            vs_start, vs_end = _segment(sentence_starts, len(text), verdict_sentence)
        else:
            vs_start = vs_end = -1
        para_counts: dict[str, tuple[int, float]] = {}
        for offset, key in para_hits:
            bonus = VERDICT_SENTENCE_BONUS if vs_start <= offset < vs_end else 1.0
            n, top = para_counts.get(key, (0, 0.0))
            para_counts[key] = (n + 1, max(top, bonus))
        for key, (count, top) in para_counts.items():
            factor = top + REPEAT_BONUS * (min(count, 4) - 1)
            for index, weight in self._table[key]:
                scores[index] += weight * factor

        if _MODEL_TITLE_RE.search(title_text) and FALLBACK_ROLE in self.slugs:
            scores[self.slugs.index(FALLBACK_ROLE)] += MODEL_TITLE_BONUS

        # ---- negative evidence: "X 工程师可略过", "与 X 无关", "not relevant to X"
        suppressed: set[int] = set()
        for pattern, before in ((_NEG_BEFORE, True), (_NEG_AFTER, False)):
            for m in pattern.finditer(text):
                ci = bisect.bisect_right(clause_starts, m.start()) - 1
                c_start, c_end = _segment(clause_starts, len(text), ci)
                lo, hi = (c_start, m.start()) if before else (m.end(), c_end)
                for _, key in self._hits(text, lo, hi):
                    for index, _weight in self._table[key]:
                        suppressed.add(index)

        # ---- audience split: "值得 X 精读……其余读者可略过"
        named: dict[int, float] = {}
        role_verdicts: dict[str, Verdict] = {}
        if verdict in (Verdict.DEEP, Verdict.SKIM) and vs_start >= 0 and _OTHERS_RE.search(text):
            sentence = text[vs_start:vs_end]
            spans = [m.group(1) for m in _SPAN_ZH.finditer(sentence)]
            spans += [m.group(1) for m in _SPAN_EN.finditer(sentence)]
            for span in spans:
                for index, value in self._span_roles(span).items():
                    named[index] = named.get(index, 0.0) + value
            named = {i: v for i, v in named.items() if v >= SPAN_MIN and i not in suppressed}
            if named:
                for index, slug in enumerate(self.slugs):
                    role_verdicts[slug] = verdict if index in named else Verdict.SKIP

        # ---- role selection
        if named:
            order = sorted(named, key=lambda i: (-scores[i] - named[i], i))
            roles = [self.slugs[i] for i in order]
        else:
            live = [(scores[i], i) for i in range(n_roles) if i not in suppressed]
            best = max((s for s, _ in live), default=0.0)
            threshold = max(MIN_SCORE, RELATIVE_MIN * best)
            chosen = sorted((i for s, i in live if s >= threshold), key=lambda i: (-scores[i], i))
            if not chosen:
                if best > 0:
                    chosen = [max(live, key=lambda item: (item[0], -item[1]))[1]]
                else:
                    chosen = [self.slugs.index(self._fallback)]
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
    if not display:
        return ""
    if len(display) == len(text) and index >= 0:
        start, end = _segment(starts, len(text), index)
        snippet = display[start:end]
    else:
        snippet = _SENTENCE_END.split(display, maxsplit=1)[0]
    snippet = " ".join(snippet.replace("**", "").split())
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
