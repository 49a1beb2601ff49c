"""The rules: which readers a note is for, and how closely to read it, from its words.

Everything here is pure and deterministic. `Rules` are compiled once per `Taxonomy`: all
keywords and audience phrases of every role go into one prefix-trie regex, so a note is
scanned once rather than once per keyword.
"""

from __future__ import annotations

import bisect
import re

from bot.classify.cues import EVEN, HEDGE, SIDE_CUES, Cue, Meaning, find_cues, weak_hint
from bot.classify.settings import THRESHOLDS as T
from bot.classify.taxonomy import Taxonomy
from bot.classify.text import (
    CLAUSE_CUT,
    SENTENCE_END,
    bounds,
    normalise,
    segment,
    squeeze,
)
from bot.classify.trie import ASCII_ALNUM as _ASCII_ALNUM
from bot.classify.trie import trie_regex
from bot.domain import Classification, Confidence, Verdict

__all__ = ["Rules"]

# --------------------------------------------------------------------------- tuning

FALLBACK_ROLE = "models"
# "image" in a sentence about builds and releases is a container image: its evidence goes
# to this role when the sentence has another word of that role's and none of multimodal's,
# or when a platform's name comes right before it ("the ROCm image").
CONTAINER_ROLE = "release-infra"
PLATFORM_ROLE = "hardware"
_IMAGE_KEYS = frozenset(("image", "images"))
_CONTAINER_KEY = "image@container"

# --------------------------------------------------------------------------- audiences


def _words(words: str, tail: str = "") -> str:
    """`\\b(?:words)tail` as alternatives that each start with a letter ("f(?<!\\wf)olks"), so
    that a search skips ahead by first letters instead of trying every position."""
    return "|".join(rf"{w[0]}(?<!\w{w[0]}){w[1:]}{tail}" for w in words.split("|"))


# A group of readers named by what they do: "做量化的同学", "KV 缓存方向的工程师",
# "whoever owns the Dockerfile", "kernel authors", "if you maintain chat templates".
# A people noun, and the few words before it that say what those people work on.
_PEOPLE = re.compile(
    r"同学|同事|工程师|开发者|开发人员|维护者|负责人|读者|用户|团队|小组|人员|作者|朋友|的人|一方"
    r"|那边|这边|侧|值班|轮值|组(?<![这那一两二三几每各分同本该此哪整]组)"
    r"(?=[^\u4e00-\u9fff]|[的需要应该得请建可只看读浏扫了知不无也都和与就先重]|$)"
    r"|方向(?<![这那个该此哪新大]方向)(?:的)?(?=[^\u4e00-\u9fff]|[需要应该得请建可只看读]|$)"
    r"|"
    + _words("folks|people|maintainers?|owners?|authors?|developers?|devs|engineers?|users?", r"\b")
    + "|"
    + _words("teams?|crowd|reviewers?|contributors?|side|readers|camp|crew|squad|folk", r"\b")
    + "|"
    + _words("porters?|rotation|on-call", r"\b")
    + r"|g(?<!\wg)roups?(?=\s*(?:[,:]|(?:should|can|could|may|might|must|need|needs|only|will|would"
    r"|just|is|are|gets?|has|have)\b))"
)
# A group named only by its work, the noun left out: "写 kernel 的看一眼", "管镜像的不用看".
# It is the subject of its clause, so it opens it.
_WORKERS_ZH = re.compile(
    r"\s*(?:而|但|但是|则|那|至于|对于?|给)?\s*"
    r"(?:(?:做|写|管|搞|接|跑|负责|维护|碰|改|弄|玩|从事|研究|盯)(?![者人])[^,。;:!?的]{1,16}的"
    r"(?![\u4e00-\u9fff]{0,2}(?:改动|代码|部分|逻辑|地方|问题|话|时候|文件|实现|东西|内容|事|结果|数据"
    r"|方式|思路|版本|工作|测试))"
    r"\s*(?:和|与|以及|及|、|跟|或|还有)?\s*)+"
)
# Any relative clause or participle: "those who bring up new architectures", "people wiring
# image inputs", "whoever babysits the Docker build" (readers only when it names a role's work).
_WORKERS_EN = re.compile(
    r"\b(?:whoever|(?:anyone|anybody|everyone|those|people|someone|folks|readers)\s+(?:who|that)\b"
    r"|(?:anyone|anybody|those|people|someone|folks|readers)\s+(?=[a-z]+ing\b))\s*[^;:,.]{1,60}"
)
_PEOPLE_LEAD_EN = re.compile(r"(?:[\w./+-]+\s+){0,4}$")  # words
_AUDIENCE_ANCHORS = (
    ("对", "给"),
    ("for",),
    ("whoever", "anyone", "anybody", "everyone", "those", "people", "someone", "folks", "readers"),
    ("you",),
)
_AUDIENCE = tuple(
    zip(
        _AUDIENCE_ANCHORS,
        (
            re.compile(p)
            for p in (
                r"(?:对于|对|给)[^,;:。!?]{1,30}?(?:来说|而言)",
                r"\bfor\s+[^;:,.()]{1,60}",
                r"\b(?:whoever|anyone|anybody|everyone|those|people|someone|folks|readers)\s+(?:who\s+)?"
                r"(?:\w+\s+){0,2}?(?:owns?|maintains?|maintaining|works?\s+on|working\s+on"
                r"|touch(?:es|ing)?|runs?|running|cares?\s+about|deploys?|deploying|uses?|using|ships?"
                r"|shipping|writes?|writing|adds?|adding|debug(?:s|ging)?|tracks?|tracking|publish(?:es|ing)?"
                r"|packag(?:es?|ing)|builds?|building|operates?|operating|brings?\s+up|bringing\s+up"
                r"|wir(?:es?|ing)|keeps?|keeping|pins?|pinning|expos(?:es?|ing)|handles?|handling|ports?"
                r"|porting|tunes?|tuning|cuts?|cutting)\s+[^;:,.]{1,60}",
                r"\b(?:if|unless)\s+you\s+(?:\w+\s+){0,2}?(?:own|maintain|work\s+on|touch|care\s+about"
                r"|run|deploy|use|ship|write|add|debug|track|integrate|publish|package|build|operate)"
                r"\s+[^;:,.]{1,60}",
            )
        ),
        strict=True,
    )
)

# Everyone else, as a noun phrase: "the rest of the org", "everybody else", "other AMD
# folks", "其余人", "别的组", "剩下的同学".
_OTHERS_EN = (
    r"(?:the\s+)?rest(?:\s+of\s+(?:us|you|them|(?:the|this|our)\s+(?:team|org|organi[sz]ation"
    r"|project|group|world|crowd|readership|company|channel)))?"
    r"|(?:everyone|everybody|anyone|anybody)\s+else|(?:all\s+)?others"
    r"|other\s+(?:[\w-]+\s+)?(?:readers|folks|people|teams|groups|engineers|maintainers|owners|devs)"
    r"|most\s+(?:readers|people|folks|of\s+us|of\s+you)"
    r"|(?:readers|people|folks|anyone|anybody|everyone|everybody)\s+(?:outside|beyond)\s+"
    r"(?:the\s+)?[\w-]+(?:\s+(?:folks|people|side|world|crowd))?"
)
_OTHERS_ZH = (
    r"(?:其余|其他|其它|别的|剩下的?|剩余的?|另外的?)(?:所有|的|各)?"
    r"(?:人|读者|同学|同事|组|团队|方向|朋友|工程师|开发者)"
    r"|大多数人|大部分人|多数人|旁人"
    r"|除(?:了|此)?[^,。;:]{0,16}?(?:以外|之外)的?(?:人|同学|读者|所有人|其他人)?"
)
# Everyone except a group: "除了维护 Neuron 的人以外", "与此平台无关的人", "nobody outside ROCm".
_EXCEPT = (
    r"除(?:了|此)?[^,。;:]{0,16}?(?:以外|之外)|与[^,。;:]{1,16}?(?:无关|没关系)的"
    r"|\b(?:readers|people|folks|anyone|anybody|everyone|everybody|nobody|no\s+one)\s+"
    r"(?:outside|beyond)\b"
)
_OTHERS_AFTER = re.compile(
    r"\s*(?:(?:for|to)\s+)?(?:anyone|everyone|everybody|anybody)\s+else\b|\s*(?:for|to)\s+(?:the\s+rest"
    r"|others|other\s+readers|most\s+readers|most\s+people)\b"
)
# A clause that only names everyone else, before the clause that tells them what to do:
# "Everyone else: ...", "for the rest of you, ...", "Rest → ...", "其他人呢?", "至于其余的人,".
_FRONTED_OTHERS = re.compile(
    rf"\s*(?:and\s+|but\s+|while\s+|而|但|但是|不过)?(?:(?:for|to|as\s+for)\s+)?(?:{_OTHERS_EN})"
    r"\s*(?:[,:?]|→|->)\s*"
    rf"|\s*(?:而|但|但是|不过)?(?:对于?|至于)?(?:{_OTHERS_ZH})(?:来说|而言|呢)?\s*(?:[,:?]|→|->)\s*"
    # a condition that leaves the note's readers out: "if you don't work on X,", "除非…,"
    r"|\s*(?:but\s+)?(?:if\s+you\s+(?:don't|do\s+not)|unless\s+you|outside(?:\s+of)?)\b[^.;,]{1,50}\s*,\s*"
    r"|\s*(?:如果(?:你)?不|除非|除了)[^,。;]{1,20}(?:的话|以外|之外)?\s*,\s*"
)
# A statement about everyone else that opens its clause ("the rest of the org has nothing
# to act on", "对其余人来说完全无感"): with no verdict cue it still sets them apart.
_OTHERS_OPENING = re.compile(
    rf"\s*(?:and\s+|but\s+|while\s+|而|但|但是|不过)?(?:(?:for|to|as\s+for)\s+)?(?:{_OTHERS_EN})\b"
    rf"|\s*(?:而|但|但是|不过)?(?:对于?|至于)?(?:{_OTHERS_ZH})"
)
# A short heading that names readers before the statement meant for them: "Spec-decode:",
# "Quant →", "KV 组:" (at most four words or twelve characters).
_LABEL = re.compile(
    r"\s*(?:[\w./+-]+\s+){0,3}[\w./+-]+\s*(?::|→|->)\s*|\s*[^\s,;:。!?]{1,12}\s*(?::|→|->)\s*"
)
# A part said to be enough, in a clause with no verdict cue: "看看形状限制就行", "summary
# level", "can get by with the outline".
_LIMITED = re.compile(
    r"(?:看|读|瞄|扫|了解|知道|留意|关注|关心|在意|有数|浏览|翻|明白|清楚|懂)[^,。;:!?]{0,30}?"
    r"(?<!不)(?:即可|就够|就行|就好|足矣|便可)"
    r"|"
    + _words("get", r"\s+by\s+with\b")
    + "|"
    + _words("summary", r"[\s-]level\b")
    + "|"
    + _words("headline|title|gist|summary", r"\s+only\b")
    + "|"
    + _words(
        "only|just",
        r"\s+needs?\s+(?:the\b|to\s+(?:know|see|read|look|check|skim|understand|glance"
        r"|remember|be\s+aware))",
    )
)
# What is enough for everyone else: a skim of that much.
_ENOUGH = re.compile(
    r"(?<!不)(?:就够|便足够|足够了)"
    r"|\b(?:is|are)\s+(?:enough|plenty|sufficient|all\s+(?:you|they)\s+need)\b"
)
_OTHERS_OPENER_HINT = re.compile(r"其|别|剩|另|大|多数|旁|rest|else|other|most")
_BARE_GROUP = re.compile(
    r"\s*(?:and\s+|but\s+|while\s+)?(?:the\s+)?([a-z][\w-]*(?:\s*(?:and|&|/)\s*[a-z][\w-]*)?)\s+"
    r"(?:only|just|has|have|can|could|should|must|may|might|will|needs?|gets?)\b"
)
_GROUP_WORD_SPLIT = re.compile(r"[\s/-]+")
_LABEL_SPLIT = re.compile(r"\s*(?:/|&|\+|、|和|与|\band\b)\s*")
# Named readers and everyone else addressed together: "model authors and everyone else,
# move along", "写模型的同学和其他人都不必看".
_AND_OTHERS = re.compile(
    r"\b(?:and|or|as\s+well\s+as|plus)\s+(?:everyone|everybody|anyone|anybody)\s+else\b"
    r"|\band\s+(?:the\s+rest(?:\s+of\s+(?:us|you))?|all\s+others|other\s+readers)\b"
    r"|(?:和|与|以及|及)(?:其他人|其余的人|其他读者|其余读者|其他同学|别的人|大家)"
)
# What may precede "其余读者", "everyone else" in its clause.
_SUBJECT_LEAD = frozenset(
    {"", "而", "但", "但是", "不过", "对", "对于", "至于", "其中"}
    | {"and", "but", "while", "for", "whereas"}
)
_AUDIENCE_HINT = re.compile(
    r"同学|同事|工程师|开发|维护者|负责人|读者|用户|团队|小组|人员|作者|朋友|的人|一方|那边|这边|侧"
    r"|组|方向|的"
    r"|来说|而言|f(?<!\wf)or\b|folks|people|maintainer|owner|author|develop|devs|engineer|user"
    r"|team|crowd|reviewer|contributor|expert|side|whoever|anyone|anybody|everyone|those|someone"
    r"|readers|i(?<!\wi)f you|unless you|group|camp|crew|squad|rotation|on-call|值班|轮值"
)

# Negative and side cues (data/cues.toml, [side_cues]), all literals, found in one pass.
_AUX_RE = re.compile(trie_regex(SIDE_CUES))
# The subject just before an "others" cue: "其余读者", "普通模型工程师", "everyone else".
_OTHERS_SUBJECT = re.compile(
    r"(?:其余|其他|其它|别的|剩下的|普通|一般|大多数|大部分|多数|再往外|非[^,。;]{1,12}?的"
    r"|不(?:做|负责|维护|关注|关心|从事|用|碰|写|管|搞|跑)[^,。;]{1,12}?的)[^,。;]{0,20}$"
    r"|\b(?:everyone|everybody|anyone|nobody|no\s+one|no-one)\s+else\b[^.;]{0,20}$"
    rf"|{_EXCEPT}[^.;]{{0,30}}$"
    r"|(?:\botherwise\b|否则)[^.;]{0,20}$"
    r"|\b(?:most|non-[a-z0-9]+)\s+(?:readers|people|engineers|users|folks)\b[^.;]{0,20}$"
    r"|\b(?:anyone|everyone|those)\s+(?:not|who\s+(?:doesn't|does\s+not|don't|do\s+not))\b"
    r"[^.;]{0,40}$"
    r"|\b(?:other\s+(?:[\w-]+\s+)?(?:readers|engineers|folks|people|teams|groups|devs"
    r"|maintainers|owners)|others"
    r"|the\s+rest(?:\s+of\s+(?:you|us|them|the\s+(?:team|org|project|group|world|company)))?)"
    r"(?:\s+(?:can|may|should|could)(?:\s+(?:just|safely|probably))?"
    r"|,?\s+(?:it's|it\s+is|this\s+is|that's|that\s+is)|(?:\s+[\w']+){1,3}?)?\s*$"
)
# "Everyone but X" as the subject of a skip cue: X is not being told to skip.
_EXCEPT_SUBJECT = re.compile(
    r"(?:非|不(?:做|负责|维护|关注|关心|从事))[^,。;]{1,12}?的[^,。;]{0,20}$"
    r"|\bnon-[a-z0-9]+\s+(?:readers|people|engineers|users|folks)\b[^.;]{0,20}$"
    r"|\b(?:anyone|everyone|those)\s+(?:not|who\s+(?:doesn't|does\s+not|don't|do\s+not))\b"
    r"[^.;]{0,40}$"
    rf"|{_EXCEPT}[^.;]{{0,30}}$"
)
# Cheap pre-check for an _OTHERS_SUBJECT before scanning every verdict cue of a note.
_OTHERS_HINT = re.compile(
    r"其余|其他|其它|别的|剩下|普通|一般|多数|大部分|不做|不负责|不维护|不关|不从事|非|否则|再往外"
    r"|else|other|rest|most|non-|anyone|everyone|those|otherwise|除|与|outside|beyond"
)
# A subject that names people ("其余读者", "others"), not other parts of the PR ("其余改动").
_READER_NOUN = re.compile(
    r"^(?:非|不|除|与)|outside|beyond|otherwise|否则|读者|人|同学|工程师|开发者|用户|团队|方向|组|else|others|rest"
    r"|readers|people"
    r"|folks|teams|groups|devs|maintainers|owners"
)


# Rule families, each of which the ablation bench (tests/bench/ablation.py) leaves out in
# turn; `Rules(taxonomy, off)` runs without the families in `off`.
FAMILIES: dict[str, str] = {
    "phrases": "verdict phrases of the lexicon (data/cues.toml)",
    "negation": "a negator flips the cue after it",
    "question": "a cue in a question says nothing",
    "sufficiency": "'the headline' is a cue only with 'is enough'",
    "answers": "the answer to a question about reading",
    "later": "reading put off until later is a skim",
    **{
        name: f"constructions: {name} (data/cues.toml)"
        for name in (
            "limited-zh", "limited-en", "unneeded-zh", "unneeded-en", "depth-zh", "depth-en",
            "rating", "budget", "bare", "visit-skip",
        )
    },
    "weak-hint": "closed, draft or trivial notes with no cue",
    "hedge": "a hedged verdict is low confidence",
    "named-groups": "a cue for a group named by role words or by its work",
    "limited": "a group told a part is enough, in words no cue holds",
    "everyone-else": "a cue for everyone else",
    "keywords": "keyword evidence for roles",
    "audience-phrases": "audience phrases as role evidence",
    "verdict-sentence": "role words in the verdict sentence count more",
    "container-image": "'image' as a container image",
}  # fmt: skip

_SENTENCE_CUTS = frozenset("。!?\n.")  # a clause cut after one of these also ends a sentence
_Info = tuple[tuple[tuple[int, float], ...], bool, bool]
_Hit = tuple[int, str, tuple[tuple[int, float], ...]]


class Rules:
    """A taxonomy's rules, compiled once: keyword evidence, audiences, verdict statements."""

    def __init__(self, taxonomy: Taxonomy, off: frozenset[str] = frozenset()) -> None:
        """`off`: rule families left out (FAMILIES; for the ablation bench)."""
        self.slugs = taxonomy.slugs
        self._off = off
        self._fallback = FALLBACK_ROLE if FALLBACK_ROLE in self.slugs else self.slugs[0]
        # term key -> ((role index, weight), ...), plus per-key boundary rules
        table: dict[str, dict[int, float]] = {}
        prefix_keys: set[str] = set()
        terms: set[str] = set()

        def add(raw: str, index: int, weight: float) -> None:
            term = normalise(raw).lower().strip()
            is_prefix = term.endswith("*")
            term = term.rstrip("*").strip()
            if not term:
                return
            key = squeeze(term)
            if is_prefix:
                prefix_keys.add(key)
            terms.add(" ".join(term.split()))
            slot = table.setdefault(key, {})
            slot[index] = max(slot.get(index, 0.0), weight)

        # a role's names ("spec-decode", "quant", "前端"): a heading of these names readers
        self._group_names: dict[str, int] = {}
        for index, role in enumerate(taxonomy.roles):
            for name in (role.slug, role.name_en, role.name_zh, *role.aliases):
                self._group_names.setdefault(squeeze(normalise(name).lower()), index)
        zh_names = sorted((n for n in self._group_names if not n.isascii()), key=len, reverse=True)
        self._zh_group_name = re.compile(f"(?:{'|'.join(map(re.escape, zh_names))})$")
        for index, role in enumerate(taxonomy.roles):
            for term, weight in role.keywords.items():
                add(term, index, weight)
            for phrase in () if "audience-phrases" in off else role.audience:
                add(phrase, index, T.audience_weight)
        self._table: dict[str, tuple[tuple[int, float], ...]] = {
            k: tuple(sorted(v.items())) for k, v in table.items()
        }
        # matched text -> (weights, needs a left word edge, needs a right word edge)
        self._info: dict[str, _Info] = {
            k: (v, k[0] in _ASCII_ALNUM, k[-1] in _ASCII_ALNUM and k not in prefix_keys)
            for k, v in self._table.items()
        }
        self._matcher = re.compile(trie_regex(sorted(terms), skip_words=True))
        self._container: tuple[int, int, int] | None = None
        if {CONTAINER_ROLE, PLATFORM_ROLE, "multimodal"} <= set(self.slugs) and (
            "container-image" not in off
        ):
            infra, visual = self.slugs.index(CONTAINER_ROLE), self.slugs.index("multimodal")
            self._container = (infra, visual, self.slugs.index(PLATFORM_ROLE))
            self._table[_CONTAINER_KEY] = ((infra, T.container_image_weight),)

    # ----------------------------------------------------------------- matching

    def _hits(self, text: str) -> list[_Hit]:
        """(offset, term key, weights) of every keyword/audience hit in `text`."""
        size = len(text)
        info_of = self._info
        out: list[_Hit] = []
        for m in self._matcher.finditer(text):
            key = m.group()
            info = info_of.get(key)
            if info is None:
                if key.isalnum():  # a word skipped whole, not a term
                    continue
                key = squeeze(key)
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

    def _senses(self, text: str, hits: list[_Hit]) -> list[_Hit]:
        """`hits` with "image" read as a container image where its sentence speaks of builds
        and releases ("the release pipeline and image matrix", "pins and images") or a
        platform names it ("whoever maintains the ROCm image")."""
        if self._container is None or not any(h[1] in _IMAGE_KEYS for h in hits):
            return hits
        infra, visual, platform = self._container
        starts = bounds(SENTENCE_END, text)
        out = list(hits)
        for n, (offset, key, _weights) in enumerate(hits):
            if key not in _IMAGE_KEYS:
                continue
            lo, hi = segment(starts, len(text), bisect.bisect_right(starts, offset) - 1)
            near = [w for o, k, w in hits if lo <= o < hi and k not in _IMAGE_KEYS]
            if any(i == visual for w in near for i, _x in w):
                continue
            before = hits[n - 1] if n else None
            named = (
                before is not None
                and not text[before[0] + len(before[1]) : offset].strip()
                and any(i == platform for i, _x in before[2])
            )
            if named or any(
                i == infra and x >= T.container_context_min for w in near for i, x in w
            ):
                out[n] = (offset, _CONTAINER_KEY, self._table[_CONTAINER_KEY])
        return out

    def _audience_roles(self, span: str) -> tuple[frozenset[int], bool]:
        """Roles named as readers in `span` ("做量化的同学", "whoever owns the Dockerfile"),
        and whether it names readers at all."""
        # a group's bare name as the subject: "Frontend only has to note ...", "quant can skim"
        bare = _BARE_GROUP.match(span) if span.isascii() else None
        found: dict[int, float] = (
            dict.fromkeys(self._label_roles(bare.group(1)), T.span_min) if bare else {}
        )
        if not _AUDIENCE_HINT.search(span):
            return frozenset(found), bool(found)
        named = [
            m.group()
            for anchors, pattern in _AUDIENCE
            if any(map(span.__contains__, anchors))
            for m in pattern.finditer(span)
        ]
        for m in _PEOPLE.finditer(span):
            s = m.start()
            if m.group()[0] in _ASCII_ALNUM:
                lead = _PEOPLE_LEAD_EN.search(span, max(0, s - T.people_lead_en), s)
                named.append(span[lead.start() if lead else s : m.end()])
                tail = span[max(0, s - T.group_name_lookback) : s].split()
                before = _GROUP_WORD_SPLIT.split(tail[-1]) if tail else []
            else:
                named.append(span[max(0, s - T.people_lead_zh) : m.end()])
                before = [span[max(0, s - T.group_name_lookback_zh) : s].rstrip(" 的")]
            # a group's own name just before the noun: "model authors", "接模型的同学"
            for word in before:
                index = self._group_name_at_end(word)
                if index is not None:
                    found[index] = T.span_min
        readers = bool(named)
        # the work alone names readers only when it names a role's work
        workers = _WORKERS_ZH.match(span)
        if workers is not None:
            named.append(workers.group())
        named.extend(m.group() for m in _WORKERS_EN.finditer(span))
        for words in named:
            for index, value in self._span_roles(words).items():
                found[index] = max(found.get(index, 0.0), value)
        roles = frozenset(i for i, v in found.items() if v >= T.span_min)
        return roles, readers or bool(roles)

    def _cue_audience(
        self, text: str, cue: Cue, cues: list[Cue], starts: list[int]
    ) -> frozenset[int] | str | None:
        """Whom a verdict cue speaks to: named roles, "others" (everyone else) or None."""
        off = self._off
        ci = bisect.bisect_right(starts, cue.start) - 1
        c_start, c_end = segment(starts, len(text), ci)
        if EVEN.match(text, c_start, cue.start) or (
            cue.verdict is Verdict.SKIP and text[cue.start - 1 : cue.start] in ("也", "亦")
        ):
            # "even ROCm maintainers only need the takeaway", "管镜像的同学也不必点开":
            # said of the closest readers, so said to everyone (as the audience model reads it)
            return None
        lo = max(c_start, cue.start - T.subject_lookback)
        subject = (
            _OTHERS_SUBJECT.search(text, lo, cue.start)
            if "everyone-else" not in off and _OTHERS_HINT.search(text, lo, cue.start)
            else None
        )
        if (
            subject is not None
            and _READER_NOUN.search(subject.group())
            and text[c_start : subject.start()].strip(" ,") in _SUBJECT_LEAD
        ):
            return "others"
        if "everyone-else" not in off and _OTHERS_AFTER.match(text, cue.end, c_end):
            return "others"  # "nothing new for anyone else"
        if ci > 0 and "everyone-else" not in off:
            # "for the rest of us, there is nothing here", "对其他人来说，没什么可看"
            p_start = segment(starts, len(text), ci - 1)[0]
            if _FRONTED_OTHERS.fullmatch(text, p_start, c_start):
                return "others"
        if "named-groups" in off:
            return None
        clause = text[c_start:c_end]
        if not _PEOPLE.search(clause):
            # a heading names the readers of a statement with no people of its own, whatever
            # topic it mentions ("Model folks: skim the loading part for the MTP layers")
            heading = _heading(text, starts, ci)
            named = self._heading_roles(text[heading[0] : heading[1]]) if heading else None
            if named:
                return named
        roles, readers = self._audience_roles(clause)
        if not roles and readers:
            # readers named in words no role claims, unless a heading names them
            heading = _heading(text, starts, ci)
            roles = self._heading_roles(text[heading[0] : heading[1]]) if heading else roles
            return roles or "unknown"
        if not roles and ci > 0:
            # "对做量化的同学来说，不值得精读": the readers are named in the clause before
            p_start, p_end = segment(starts, len(text), ci - 1)
            if EVEN.match(text, p_start, p_end):
                return None
            # ("内核同学精读；做缓存的同学只需留意边界，看结论就行": the same verdict goes on)
            if not SENTENCE_END.search(text, p_end - 1, p_end) and all(
                c.verdict is cue.verdict for c in cues if p_start <= c.start < p_end
            ):
                roles = self._audience_roles(text[p_start:p_end])[0]
                if not roles and _LABEL.fullmatch(text, p_start, p_end):
                    # "Spec-decode: read it", "Quant → skim": a heading names the readers
                    roles = self._label_roles(text[p_start:p_end])
        if not roles:
            # a heading speaks for its whole sentence: "API folks: nothing for you, skip"
            heading = _heading(text, starts, ci)
            if heading is not None:
                if "everyone-else" not in off and _FRONTED_OTHERS.fullmatch(text, *heading):
                    return "others"
                roles = self._heading_roles(text[heading[0] : heading[1]])
        return roles or None

    def _group_name_at_end(self, word: str) -> int | None:
        """The role whose name `word` is (English) or ends with (Chinese)."""
        key = squeeze(word)
        if not key:
            return None
        if key[-1] in _ASCII_ALNUM:
            return self._group_names.get(key)
        m = self._zh_group_name.search(key)
        return self._group_names[m.group()] if m else None

    def _heading_roles(self, heading: str) -> frozenset[int]:
        return self._audience_roles(heading)[0] or self._label_roles(heading)

    def _label_roles(self, label: str) -> frozenset[int]:
        """Roles a heading names by their group names ("Spec-decode:", "Quant / MoE →")."""
        words = _LABEL_SPLIT.split(label.strip(" :→->"))
        found = [self._group_names.get(squeeze(w)) for w in words if w.strip()]
        if not found or None in found:
            return frozenset()
        return frozenset(i for i in found if i is not None)

    def _limited_statements(
        self, text: str, cues: list[Cue], starts: list[int]
    ) -> list[tuple[Cue, frozenset[int]]]:
        """Groups told that a part is enough, in words no cue holds: "写 kernel 的看看形状限制
        就行", "kernel owners: summary level" (a skim for them)."""
        out: list[tuple[Cue, frozenset[int]]] = []
        for m in _LIMITED.finditer(text):
            ci = bisect.bisect_right(starts, m.start()) - 1
            c_start, c_end = segment(starts, len(text), ci)
            if any(c_start <= c.start < c_end for c in cues):
                continue
            roles = self._audience_roles(text[c_start:c_end])[0]
            heading = _heading(text, starts, ci) if not roles else None
            if heading is not None:
                roles = self._heading_roles(text[heading[0] : heading[1]])
            if roles:
                cue = Cue(
                    m.start(), m.end(), Meaning.CONCLUSION_ONLY, Verdict.SKIM, False, False, ""
                )
                out.append((cue, roles))
        return out

    def _span_roles(self, text: str) -> dict[int, float]:
        scores: dict[int, float] = {}
        for _offset, _term, weights in self._senses(text, self._hits(text)):
            for index, weight in weights:
                scores[index] = scores.get(index, 0.0) + weight
        return scores

    # ----------------------------------------------------------------- classify

    def classify(self, title_text: str, display: str, text: str) -> Classification:
        """The classification by the rules of a normalised, lower-cased title (`title_text`)
        and of a paragraph already stripped (`display`) and normalised, lower-cased (`text`):
        the models read the same text."""
        n_roles = len(self.slugs)

        # every sentence cut is a clause cut: the sentences start after those that end one
        clause_starts = bounds(CLAUSE_CUT, text)
        sentence_starts = [s for s in clause_starts if not s or text[s - 1] in _SENTENCE_CUTS]

        def sentence_of(offset: int) -> int:
            return bisect.bisect_right(sentence_starts, offset) - 1

        # ---- verdict statements: general, for named readers, for everyone else
        off = self._off
        cues = list(find_cues(text, off))
        general: list[Cue] = []
        unknown: list[Cue] = []  # addressed to readers no role claims
        named_cues: list[tuple[Cue, frozenset[int]]] = []
        others_cue: Cue | None = None
        for cue in cues:
            who = self._cue_audience(text, cue, cues, clause_starts)
            if who is None:
                general.append(cue)
            elif who == "others":
                if others_cue is None:
                    others_cue = cue
            elif isinstance(who, frozenset):
                named_cues.append((cue, who))
                lead = text[
                    max(
                        sentence_starts[sentence_of(cue.start)], cue.start - T.cue_lookback
                    ) : cue.start
                ]
                if others_cue is None and "everyone-else" not in off and _AND_OTHERS.search(lead):
                    others_cue = cue
            else:
                unknown.append(cue)
        if (named_cues or others_cue is not None) and "limited" not in off:
            named_cues += self._limited_statements(text, cues, clause_starts)
        # ---- named readers: "做量化的同学不必看", "kernel authors should read it closely"
        named_verdicts: dict[int, Verdict] = {}
        softened: set[int] = set()
        for cue, who in named_cues:
            for index in who:
                if index not in named_verdicts:
                    named_verdicts[index] = cue.verdict
                    if cue.soft:
                        softened.add(index)
                elif index in softened and cue.verdict is Verdict.SKIM:
                    named_verdicts[index] = Verdict.SKIM  # "不必精读，快速浏览即可"
                    softened.discard(index)
        positive_named = {i: v for i, v in named_verdicts.items() if v is not Verdict.SKIP}

        # The first sentence that speaks decides: a general cue there, or else what the
        # readers it names are told ("Worth a skim for model maintainers. Nothing novel.").
        # Readers named in words no role claims ("whoever maintains LoRA") are the note's
        # own audience when told to read it; told to skip, they say nothing of the rest.
        positive_unknown = [c for c in unknown if c.verdict is not Verdict.SKIP]
        if not general and not positive_named and not positive_unknown:
            general = unknown
        first_named = min(
            [c.start for c, who in named_cues if any(i in positive_named for i in who)]
            + [c.start for c in positive_unknown],
            default=None,
        )
        use_general = bool(general) and (
            first_named is None or sentence_of(general[0].start) <= sentence_of(first_named)
        )
        verdict_sentence = -1
        if use_general:
            deciding, general_verdict = _resolve(text, general, sentence_starts)
            if (
                deciding.soft
                and first_named is not None
                and sentence_of(first_named) == sentence_of(deciding.start)
            ):
                use_general = False  # "X should be aware; no one needs to study it"
            else:
                verdict_sentence = sentence_of(deciding.start)
        if not use_general and first_named is not None:
            verdict_sentence = sentence_of(first_named)
        elif not use_general and named_cues:
            verdict_sentence = sentence_of(named_cues[0][0].start)  # told to skip it

        # ---- role evidence
        scores = [0.0] * n_roles
        title_counts: dict[str, int] = {}
        for _, key, _weights in self._senses(title_text, self._hits(title_text)):
            title_counts[key] = title_counts.get(key, 0) + 1
        table = self._table
        if "keywords" in off:
            title_counts.clear()
        for key, count in title_counts.items():
            factor = T.title_weight * (1.0 + T.repeat_bonus * (min(count, T.repeat_cap) - 1))
            for index, weight in table[key]:
                scores[index] += weight * factor

        aux = [(m.start(), SIDE_CUES[" ".join(m.group().split())]) for m in _AUX_RE.finditer(text)]
        if verdict_sentence >= 0:
            vs_start, vs_end = segment(sentence_starts, len(text), verdict_sentence)
        else:
            vs_start = vs_end = -1
        para_counts: dict[str, tuple[int, float]] = {}
        hits = () if "keywords" in off else self._senses(text, self._hits(text))
        for offset, key, _weights in hits:
            bonus = (
                T.verdict_sentence_bonus
                if vs_start <= offset < vs_end and "verdict-sentence" not in off
                else 1.0
            )
            seen = para_counts.get(key)
            if seen is None:
                para_counts[key] = (1, bonus)
            else:
                para_counts[key] = (seen[0] + 1, bonus if bonus > seen[1] else seen[1])
        for key, (count, top) in para_counts.items():
            factor = top + T.repeat_bonus * (min(count, T.repeat_cap) - 1)
            for index, weight in table[key]:
                scores[index] += weight * factor

        suppressed: set[int] = set()

        # ---- everyone else: "其余读者可略过", "nobody else needs to read this"
        others_verdict = others_cue.verdict if others_cue is not None else None
        if others_verdict is None and "everyone-else" not in off:
            for start, kinds in aux:
                if "others" not in kinds:
                    continue
                lo = max(0, start - T.subject_lookback)
                if "self" in kinds or (
                    _OTHERS_HINT.search(text, lo, start) and _OTHERS_SUBJECT.search(text, lo, start)
                ):
                    others_verdict = Verdict.SKIP
                    break
        if (
            others_verdict is None
            and (named_verdicts or use_general)
            and "everyone-else" not in off
            and _OTHERS_OPENER_HINT.search(text)
        ):
            # "the rest of the org has nothing to act on": set apart from the named groups
            starts = clause_starts
            for c_start in starts:
                if not _OTHERS_OPENING.match(text, c_start):
                    continue
                s_end = segment(sentence_starts, len(text), sentence_of(c_start))[1]
                if not any(c_start <= c.start < s_end for c in cues):
                    # "其他人知道 X 就够了", "Everyone else: the release-note line is enough"
                    enough = _ENOUGH.search(text, c_start, s_end) or _LIMITED.search(
                        text, c_start, s_end
                    )
                    others_verdict = Verdict.SKIM if enough else Verdict.SKIP
                    break

        # ---- the main verdict: never deep without a cue that says so
        confidence = Confidence.HIGH
        verdict: Verdict
        if use_general:
            verdict = general_verdict
            s_start, s_end = segment(sentence_starts, len(text), verdict_sentence)
            if "hedge" not in off and HEDGE.search(text, s_start, s_end):
                confidence = Confidence.LOW
            if verdict is Verdict.DEEP and any(
                c.verdict is Verdict.SKIP and not c.soft and c.start >= s_end for c in general
            ):
                confidence = Confidence.LOW  # the note also says to skip it
        elif positive_named or positive_unknown:
            told = [*positive_named.values(), *(c.verdict for c in positive_unknown)]
            verdict = min(told, key=lambda v: v.rank)
        elif others_verdict is Verdict.SKIP:
            # "only relevant if you debug X; everyone else can skip it": no group is told
            # to read it, so the note's reader is everyone else
            verdict, confidence = Verdict.SKIP, Confidence.LOW
        elif named_verdicts and all(v is Verdict.SKIP for v in named_verdicts.values()):
            # "做 ROCm 的同学也犯不着点开": the readers it names are told to skip it
            verdict, confidence = Verdict.SKIP, Confidence.LOW
        elif named_verdicts or others_verdict is not None:
            verdict, confidence = Verdict.SKIM, Confidence.LOW
        else:
            # a note that states no verdict: closed, draft or trivial, else a skim
            hint = None if "weak-hint" in off else weak_hint(title_text, text)
            verdict = hint[0] if hint is not None else Verdict.SKIM
            confidence = Confidence.LOW
        if verdict is not Verdict.SKIP:
            suppressed.update(i for i, v in named_verdicts.items() if v is Verdict.SKIP)

        # ---- role selection
        if positive_named and others_verdict is not None:
            order = sorted(positive_named, key=lambda i: (-scores[i], i))
            # a role with more evidence than every named group is the note's own topic
            # (its readers were named in words given to another role)
            top = max(scores[i] for i in positive_named)
            order += [
                i
                for i in range(n_roles)
                if i not in named_verdicts and i not in suppressed and scores[i] > top
            ]
            roles = [self.slugs[i] for i in order]
        else:
            live = [(scores[i], i) for i in range(n_roles) if i not in suppressed]
            best = max((s for s, _ in live), default=0.0)
            threshold = max(T.min_score, T.relative_min * best)
            chosen = sorted((i for s, i in live if s >= threshold), key=lambda i: (-scores[i], i))
            chosen += [i for i in positive_named if i not in chosen]
            if not chosen:
                if best > 0:
                    chosen = [max(live, key=lambda item: (item[0], -item[1]))[1]]
                elif named_verdicts:
                    # every reader the note names is told to skip it
                    chosen = sorted(named_verdicts, key=lambda i: (-scores[i], i))
                    verdict, confidence = Verdict.SKIP, Confidence.HIGH
                else:
                    chosen = [self.slugs.index(self._fallback)]
            if not use_general and positive_named:
                chosen.sort(key=lambda i: positive_named.get(i) is not verdict)
            roles = [self.slugs[i] for i in chosen]

        # ---- audience-specific verdicts
        # what named groups are told stays theirs whatever main verdict the model gives
        role_verdicts: dict[str, Verdict] = {self.slugs[i]: v for i, v in named_verdicts.items()}
        if others_verdict is not None:
            # the note's own readers (told in general, named in words no role claims, or
            # told in words no cue holds) are not everyone else
            addressed = set(named_verdicts) | {self.slugs.index(r) for r in roles}
            # everyone else keeps what they were told even when the main verdict is the
            # same, so that a different main verdict from the model leaves it alone
            for index, slug in enumerate(self.slugs):
                if index not in addressed:
                    role_verdicts[slug] = others_verdict

        excerpt = _excerpt(display, text, sentence_starts, verdict_sentence)
        classification = Classification(
            roles=tuple(roles),
            primary_role=roles[0],
            verdict=verdict,
            role_verdicts=role_verdicts,
            excerpt=excerpt,
            verdict_confidence=confidence,
        )
        return classification

    def scores(self, title: str, paragraph: str) -> dict[str, float]:
        """Raw per-role evidence (title and paragraph hits only), for debugging."""
        out = dict.fromkeys(self.slugs, 0.0)
        for text, factor in ((title, T.title_weight), (paragraph, 1.0)):
            for index, value in self._span_roles(normalise(text).lower()).items():
                out[self.slugs[index]] += value * factor
        return out


def _heading(text: str, starts: list[int], index: int) -> tuple[int, int] | None:
    """The span of the nearest heading ("Kernel people:", "Rest →") before clause `index`
    in its sentence, if there is one."""
    j = index
    while j > 0 and not SENTENCE_END.search(text, starts[j] - 1, starts[j]):
        j -= 1  # the nearest heading before clause `index` in its sentence
        span = segment(starts, len(text), j)
        if _LABEL.fullmatch(text, *span):
            return span
    return None


def _resolve(text: str, cues: list[Cue], starts: list[int]) -> tuple[Cue, Verdict]:
    """The verdict of the first sentence with a general cue, and the cue that decides it.

    Within that sentence the first cue leads; a negated deep cue followed by a skim cue is
    a skim ("不必精读，快速浏览即可").
    """
    first = cues[0]
    index = bisect.bisect_right(starts, first.start) - 1
    end = segment(starts, len(text), index)[1]
    same = [c for c in cues if c.start < end]
    deciding, verdict = first, first.verdict
    for cue in same[1:]:
        if deciding.soft and verdict is Verdict.SKIP and cue.verdict is Verdict.SKIM:
            deciding, verdict = cue, Verdict.SKIM
    return deciding, verdict


def _excerpt(display: str, text: str, starts: list[int], index: int) -> str:
    """The verdict sentence (plus the next one when it is very short), one line."""
    if not display:
        return ""
    if len(display) != len(text):  # normalisation changed offsets: use the first sentence
        display = text = normalise(display)
    start, end = segment(starts, len(text), max(index, 0))
    nxt = max(index, 0) + 1
    while end - start < T.excerpt_min and nxt < len(starts):
        end = segment(starts, len(text), nxt)[1]
        nxt += 1
    snippet = " ".join(display[start:end].replace("**", "").split())
    if len(snippet) > T.excerpt_max:
        snippet = snippet[: T.excerpt_max - 1].rstrip() + "…"
    return snippet
