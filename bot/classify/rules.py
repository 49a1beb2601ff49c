"""The rules: which readers a note is for, and how closely to read it, from its words.

Everything here is pure and deterministic. `Rules` are compiled once per `Taxonomy`: all
keywords and audience phrases of every role go into one prefix-trie regex, so a note is
scanned once rather than once per keyword. The constructions that say whom a statement
speaks to are data (data/cues.toml, [audiences.*]; bot/classify/constructions.py).

`Rules.classify` reads a note in stages, each a method of its own:

1. `_find_audiences`: whom each verdict cue speaks to (everyone, named roles, readers no
   role claims, everyone else);
2. `_named_verdicts`: what each named group is told;
3. `_deciding_statement`: the statement that decides the main verdict, and its sentence;
4. `_role_scores`: keyword evidence for each role (the verdict sentence counts more);
5. `_others_verdict`: what everyone else is told, in a cue or a plain statement;
6. `_main_verdict`: the main verdict and how sure the rules are of it;
7. `_choose_roles`: the note's roles;
8. `_audience_verdicts`: the verdict of each role the note speaks to apart.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from bot.classify.constructions import CONSTRUCTIONS, Constructions
from bot.classify.cues import (
    EVEN,
    HEDGE,
    SIDE_CUE_RE,
    SIDE_CUES,
    Cue,
    Meaning,
    find_cues,
    weak_hint,
)
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

# "image" in a sentence about builds and releases is a container image: its evidence goes
# to this role when the sentence has another word of that role's and none of multimodal's,
# or when a platform's name comes right before it ("the ROCm image").
CONTAINER_ROLE = "release-infra"
PLATFORM_ROLE = "hardware"
_IMAGE_KEYS = frozenset(("image", "images"))
_CONTAINER_KEY = "image@container"

# What may precede "其余读者", "everyone else" in its clause.
_SUBJECT_LEAD = frozenset(
    {"", "而", "但", "但是", "不过", "对", "对于", "至于", "其中"}
    | {"and", "but", "while", "for", "whereas"}
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


@dataclass(frozen=True)
class _Note:
    """A note as the stages read it: its normalised, lower-cased title and paragraph, where
    the paragraph's clauses and sentences start, and its verdict cues."""

    title_text: str
    text: str
    clause_starts: list[int]
    sentence_starts: list[int]
    cues: list[Cue]

    def sentence_of(self, offset: int) -> int:
        """The index of the sentence holding `offset`."""
        return bisect.bisect_right(self.sentence_starts, offset) - 1

    def sentence(self, index: int) -> tuple[int, int]:
        """(start, end) of sentence `index`."""
        return segment(self.sentence_starts, len(self.text), index)


@dataclass
class _Audiences:
    """Stage 1: the verdict cues by whom they speak to."""

    general: list[Cue] = field(default_factory=list)  # every reader
    unknown: list[Cue] = field(default_factory=list)  # readers no role claims
    named: list[tuple[Cue, frozenset[int]]] = field(default_factory=list)  # named roles
    others: Cue | None = None  # the first cue for everyone else
    excepted: set[int] = field(default_factory=set)  # "skip unless you own X": X's roles


@dataclass(frozen=True)
class _Told:
    """Stage 2: what each named group is told."""

    verdicts: dict[int, Verdict]  # by role index
    positive: dict[int, Verdict]  # the groups told to read it (skim or deep)
    positive_unknown: list[Cue]  # readers no role claims told to read it
    excepted: frozenset[int]  # groups a skip for everyone else leaves out


@dataclass(frozen=True)
class _Deciding:
    """Stage 3: the statement that decides the main verdict."""

    general: list[Cue]  # the cues for every reader (or for readers no role claims)
    verdict: Verdict | None  # theirs, when they decide; None when named groups do
    sentence: int  # the sentence that carries the verdict (-1: none)


def _named_verdicts(audiences: _Audiences) -> _Told:
    """Stage 2: each named group's verdict: its first cue's, except that a softened skip
    ("不必精读") followed by a skim ("快速浏览即可") is a skim."""
    verdicts: dict[int, Verdict] = {}
    softened: set[int] = set()
    for cue, who in audiences.named:
        for index in who:
            if index not in verdicts:
                verdicts[index] = cue.verdict
                if cue.soft:
                    softened.add(index)
            elif index in softened and cue.verdict is Verdict.SKIM:
                verdicts[index] = Verdict.SKIM  # "不必精读，快速浏览即可"
                softened.discard(index)
    return _Told(
        verdicts,
        {i: v for i, v in verdicts.items() if v is not Verdict.SKIP},
        [c for c in audiences.unknown if c.verdict is not Verdict.SKIP],
        frozenset(audiences.excepted),
    )


class Rules:
    """A taxonomy's rules, compiled once: keyword evidence, audiences, verdict statements."""

    def __init__(
        self,
        taxonomy: Taxonomy,
        off: frozenset[str] = frozenset(),
        constructions: Constructions = CONSTRUCTIONS,
    ) -> None:
        """`off`: rule families left out (FAMILIES; for the ablation bench);
        `constructions`: the audience constructions (the data file's, compiled)."""
        self.slugs = taxonomy.slugs
        self._off = off
        self._c = c = constructions
        # readers named with a preposition or a condition, each tried near its anchors
        self._addressed = (
            (c.addressed_zh_anchors, c.addressed_zh),
            (c.addressed_for_anchors, c.addressed_for),
            (c.addressed_who_anchors, c.addressed_who),
            (c.addressed_if_you_anchors, c.addressed_if_you),
        )
        # a role's names ("spec-decode", "quant", "前端"): a heading of these names readers
        self._group_names: dict[str, int] = {}
        for index, role in enumerate(taxonomy.roles):
            for name in (role.slug, role.name_en, role.name_zh, *role.aliases):
                self._group_names.setdefault(squeeze(normalise(name).lower()), index)
        zh_names = sorted((n for n in self._group_names if not n.isascii()), key=len, reverse=True)
        self._zh_group_name = re.compile(f"(?:{'|'.join(map(re.escape, zh_names))})$")
        table, prefix_keys, terms = _keyword_table(taxonomy, "audience-phrases" not in off)
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
        bare = self._c.bare_group.match(span) if span.isascii() else None
        found: dict[int, float] = (
            dict.fromkeys(self._label_roles(bare.group("group")), T.span_min) if bare else {}
        )
        if not self._c.reader_words.search(span):
            return frozenset(found), bool(found)
        named = [
            m.group()
            for anchors, pattern in self._addressed
            if anchors.search(span)
            for m in pattern.finditer(span)
        ]
        for m in self._c.people.finditer(span):
            s = m.start()
            if m.group()[0] in _ASCII_ALNUM:
                lead = self._c.people_lead_en.search(span, max(0, s - T.people_lead_en), s)
                named.append(span[lead.start() if lead else s : m.end()])
                tail = span[max(0, s - T.group_name_lookback) : s].split()
                before = self._c.group_word_split.split(tail[-1]) if tail else []
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
        workers = self._c.workers_zh.match(span)
        if workers is not None:
            named.append(workers.group())
        named.extend(m.group() for m in self._c.workers_en.finditer(span))
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
        if "everyone-else" not in off and self._for_everyone_else(text, cue, starts, ci):
            return "others"
        if "named-groups" in off:
            return None
        clause = text[c_start:c_end]
        if not self._c.people.search(clause):
            # a heading names the readers of a statement with no people of its own, whatever
            # topic it mentions ("Model folks: skim the loading part for the MTP layers")
            heading = self._heading(text, starts, ci)
            named = self._heading_roles(text[heading[0] : heading[1]]) if heading else None
            if named:
                return named
        roles, readers = self._audience_roles(clause)
        if not roles and readers:
            # readers named in words no role claims, unless a heading names them
            heading = self._heading(text, starts, ci)
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
                if not roles and self._c.label.fullmatch(text, p_start, p_end):
                    # "Spec-decode: read it", "Quant → skim": a heading names the readers
                    roles = self._label_roles(text[p_start:p_end])
        if not roles:
            # a heading speaks for its whole sentence: "API folks: nothing for you, skip"
            heading = self._heading(text, starts, ci)
            if heading is not None:
                if "everyone-else" not in off and self._c.fronted_others.fullmatch(text, *heading):
                    return "others"
                roles = self._heading_roles(text[heading[0] : heading[1]])
        return roles or None

    def _for_everyone_else(self, text: str, cue: Cue, starts: list[int], ci: int) -> bool:
        """Does a cue in clause `ci` speak to everyone else: its subject is them ("其余读者
        可略过"), or the clause before names only them ("for the rest of us, there is nothing
        here", "对其他人来说，没什么可看")?"""
        c = self._c
        c_start = starts[ci]
        lo = max(c_start, cue.start - T.subject_lookback)
        subject = (
            c.others_subject.search(text, lo, cue.start)
            if c.others_subject_anchors.search(text, lo, cue.start)
            else None
        )
        if (
            subject is not None
            and c.reader_noun.search(subject.group())
            and text[c_start : subject.start()].strip(" ,") in _SUBJECT_LEAD
        ):
            return True
        return ci > 0 and bool(
            c.fronted_others.fullmatch(text, segment(starts, len(text), ci - 1)[0], c_start)
        )

    def _heading(self, text: str, starts: list[int], index: int) -> tuple[int, int] | None:
        """The span of the nearest heading ("Kernel people:", "Rest →") before clause `index`
        in its sentence, if there is one."""
        j = index
        while j > 0 and not SENTENCE_END.search(text, starts[j] - 1, starts[j]):
            j -= 1  # the nearest heading before clause `index` in its sentence
            span = segment(starts, len(text), j)
            if self._c.label.fullmatch(text, *span):
                return span
        return None

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
        words = self._c.label_split.split(label.strip(" :→->"))
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
        for m in self._c.limited.finditer(text):
            ci = bisect.bisect_right(starts, m.start()) - 1
            c_start, c_end = segment(starts, len(text), ci)
            if any(c_start <= c.start < c_end for c in cues):
                continue
            roles = self._audience_roles(text[c_start:c_end])[0]
            heading = self._heading(text, starts, ci) if not roles else None
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
        # every sentence cut is a clause cut: the sentences start after those that end one
        clause_starts = bounds(CLAUSE_CUT, text)
        note = _Note(
            title_text,
            text,
            clause_starts,
            [s for s in clause_starts if not s or text[s - 1] in _SENTENCE_CUTS],
            list(find_cues(text, self._off)),
        )
        audiences = self._find_audiences(note)
        told = _named_verdicts(audiences)
        deciding = self._deciding_statement(note, audiences, told)
        scores = self._role_scores(note, deciding.sentence)
        others_verdict = self._others_verdict(note, audiences, told, deciding)
        verdict, confidence = self._main_verdict(note, deciding, told, others_verdict)
        # a group told to skip a note others read, by the evidence outside the sentences that
        # tell it so (counted only for such a note)
        skipped = (
            frozenset(
                note.sentence_of(cue.start)
                for cue, _who in audiences.named
                if cue.verdict is Verdict.SKIP
            )
            if verdict is not Verdict.SKIP
            else frozenset()
        )
        own = self._role_scores(note, deciding.sentence, skipped) if skipped else scores
        roles, verdict, confidence = self._choose_roles(
            scores, own, told, others_verdict, deciding, verdict, confidence
        )
        return Classification(
            roles=tuple(roles),
            primary_role=roles[0] if roles else "",
            verdict=verdict,
            role_verdicts=self._audience_verdicts(roles, told, others_verdict),
            excerpt=_excerpt(display, text, note.sentence_starts, deciding.sentence),
            verdict_confidence=confidence,
        )

    def _find_audiences(self, note: _Note) -> _Audiences:
        """Stage 1: whom each verdict cue speaks to: every reader, named roles ("做量化的同学不必
        看", "kernel authors should read it closely"), readers no role claims, everyone else."""
        text, cues, off = note.text, note.cues, self._off
        found = _Audiences()
        for cue in cues:
            who = self._cue_audience(text, cue, cues, note.clause_starts)
            if who is None and cue.verdict is Verdict.SKIM and found.named:
                # "做量化的同学不必精读，快速浏览即可": the skim goes on speaking to the group
                # a softened skip named in its sentence
                said, group = found.named[-1]
                if said.soft and note.sentence_of(said.start) == note.sentence_of(cue.start):
                    who = group
            if cue.verdict is Verdict.SKIP and "everyone-else" not in off:
                # "skip unless you own X": said to everyone but X, whoever else it names
                excepted = self._excepted(note, cue)
                if excepted and (
                    who is None
                    or who == "others"
                    or (isinstance(who, frozenset) and who <= excepted)
                ):
                    found.excepted |= excepted
                    who = "others"
            if who is None:
                found.general.append(cue)
            elif who == "others":
                if found.others is None:
                    found.others = cue
            elif isinstance(who, frozenset):
                found.named.append((cue, who))
                sentence = note.sentence_starts[note.sentence_of(cue.start)]
                lead = text[max(sentence, cue.start - T.cue_lookback) : cue.start]
                if (
                    found.others is None
                    and "everyone-else" not in off
                    and self._c.and_others.search(lead)
                ):
                    found.others = cue  # "model authors and everyone else, move along"
            else:
                found.unknown.append(cue)
        if (found.named or found.others is not None) and "limited" not in off:
            found.named += self._limited_statements(text, cues, note.clause_starts)
        return found

    def _excepted(self, note: _Note, cue: Cue) -> frozenset[int]:
        """The roles of a group the cue's sentence excepts: "skip unless you own the release
        pipeline", "除非你负责发布流水线，否则可略过", "MoE 内核的负责人除外，其余可略过"."""
        c = self._c
        start, end = note.sentence(note.sentence_of(cue.start))
        if not c.excepted_anchors.search(note.text, start, end):
            return frozenset()
        m = c.excepted.search(note.text, start, end)
        who = next((g for g in m.groups() if g), "") if m is not None else ""
        named = self._span_roles(who)
        return frozenset(i for i, v in named.items() if v >= T.span_min) or self._label_roles(who)

    def _deciding_statement(self, note: _Note, audiences: _Audiences, told: _Told) -> _Deciding:
        """Stage 3: the first sentence that speaks decides: a general cue there, or else what
        the readers it names are told ("Worth a skim for model maintainers. Nothing novel.").
        Readers named in words no role claims ("whoever maintains LoRA") are the note's own
        audience when told to read it; told to skip, they say nothing of the rest."""
        general = audiences.general
        if not general and not told.positive and not told.positive_unknown:
            general = audiences.unknown
        first_named = min(
            [c.start for c, who in audiences.named if any(i in told.positive for i in who)]
            + [c.start for c in told.positive_unknown],
            default=None,
        )
        sentence_of = note.sentence_of
        if general and (
            first_named is None or sentence_of(general[0].start) <= sentence_of(first_named)
        ):
            deciding, verdict = _resolve(note.text, general, note.sentence_starts)
            if not (
                deciding.soft
                and first_named is not None
                and sentence_of(first_named) == sentence_of(deciding.start)
            ):
                return _Deciding(general, verdict, sentence_of(deciding.start))
            # "X should be aware; no one needs to study it": the named readers decide
        if first_named is not None:
            return _Deciding(general, None, sentence_of(first_named))
        if audiences.named:
            return _Deciding(general, None, sentence_of(audiences.named[0][0].start))  # skip
        return _Deciding(general, None, -1)

    def _role_scores(
        self, note: _Note, verdict_sentence: int, apart: frozenset[int] = frozenset()
    ) -> list[float]:
        """Stage 4: each role's keyword evidence: title hits count more, and hits in the
        sentence that carries the verdict more than others; repeats add a little. Hits in
        the sentences `apart` are not counted."""
        off, table = self._off, self._table
        scores = [0.0] * len(self.slugs)
        title_counts: dict[str, int] = {}
        if "keywords" not in off:
            for _, key, _weights in self._senses(note.title_text, self._hits(note.title_text)):
                title_counts[key] = title_counts.get(key, 0) + 1
        for key, count in title_counts.items():
            factor = T.title_weight * (1.0 + T.repeat_bonus * (min(count, T.repeat_cap) - 1))
            for index, weight in table[key]:
                scores[index] += weight * factor
        vs_start, vs_end = note.sentence(verdict_sentence) if verdict_sentence >= 0 else (-1, -1)
        if "verdict-sentence" in off:
            vs_start = vs_end = -1
        para_counts: dict[str, tuple[int, float]] = {}
        hits = () if "keywords" in off else self._senses(note.text, self._hits(note.text))
        for offset, key, _weights in hits:
            if apart and note.sentence_of(offset) in apart:
                continue
            bonus = T.verdict_sentence_bonus if vs_start <= offset < vs_end else 1.0
            seen = para_counts.get(key)
            if seen is None:
                para_counts[key] = (1, bonus)
            else:
                para_counts[key] = (seen[0] + 1, bonus if bonus > seen[1] else seen[1])
        for key, (count, top) in para_counts.items():
            factor = top + T.repeat_bonus * (min(count, T.repeat_cap) - 1)
            for index, weight in table[key]:
                scores[index] += weight * factor
        return scores

    def _others_verdict(
        self, note: _Note, audiences: _Audiences, told: _Told, deciding: _Deciding
    ) -> Verdict | None:
        """Stage 5: what everyone else is told: a cue for them, a side cue whose subject they
        are ("其余读者可略过", "nobody else needs to read this"), or a clause about them with
        no cue ("the rest of the org has nothing to act on": a skip; "其他人知道 X 就够了",
        "Everyone else: the release-note line is enough": a skim)."""
        if audiences.others is not None:
            return audiences.others.verdict
        if "everyone-else" in self._off:
            return None
        text, c = note.text, self._c
        for m in SIDE_CUE_RE.finditer(text):
            kinds = SIDE_CUES[" ".join(m.group().split())]
            if "others" not in kinds:
                continue
            start = m.start()
            lo = max(0, start - T.subject_lookback)
            if "self" in kinds or (
                c.others_subject_anchors.search(text, lo, start)
                and c.others_subject.search(text, lo, start)
            ):
                return Verdict.SKIP
        if not (told.verdicts or deciding.verdict is not None):
            return None
        if not c.others_opening_anchors.search(text):
            return None
        for c_start in note.clause_starts:
            if not c.others_opening.match(text, c_start):
                continue
            s_end = note.sentence(note.sentence_of(c_start))[1]
            if not any(c_start <= cue.start < s_end for cue in note.cues):
                enough = c.enough.search(text, c_start, s_end) or c.limited.search(
                    text, c_start, s_end
                )
                return Verdict.SKIM if enough else Verdict.SKIP
        return None

    def _main_verdict(
        self, note: _Note, deciding: _Deciding, told: _Told, others_verdict: Verdict | None
    ) -> tuple[Verdict, Confidence]:
        """Stage 6: the main verdict, never deep without a cue that says so, and whether the
        rules are sure of it (a hedge, a contradiction or no cue at all makes it low)."""
        if deciding.verdict is not None:
            verdict, confidence = deciding.verdict, Confidence.HIGH
            s_start, s_end = note.sentence(deciding.sentence)
            if "hedge" not in self._off and HEDGE.search(note.text, s_start, s_end):
                confidence = Confidence.LOW
            if verdict is Verdict.DEEP and any(
                c.verdict is Verdict.SKIP and not c.soft and c.start >= s_end
                for c in deciding.general
            ):
                confidence = Confidence.LOW  # the note also says to skip it
            return verdict, confidence
        if told.positive or told.positive_unknown:
            said = [*told.positive.values(), *(c.verdict for c in told.positive_unknown)]
            return min(said, key=lambda v: v.rank), Confidence.HIGH
        if others_verdict is Verdict.SKIP:
            # "only relevant if you debug X; everyone else can skip it": no group is told
            # to read it, so the note's reader is everyone else
            return Verdict.SKIP, Confidence.LOW
        if told.verdicts and all(v is Verdict.SKIP for v in told.verdicts.values()):
            # "做 ROCm 的同学也犯不着点开": the readers it names are told to skip it
            return Verdict.SKIP, Confidence.LOW
        if told.verdicts or others_verdict is not None:
            return Verdict.SKIM, Confidence.LOW
        # a note that states no verdict: closed, draft or trivial, else a skim
        hint = None if "weak-hint" in self._off else weak_hint(note.title_text, note.text)
        return (hint[0] if hint is not None else Verdict.SKIM), Confidence.LOW

    def _choose_roles(
        self,
        scores: list[float],
        own: list[float],
        told: _Told,
        others_verdict: Verdict | None,
        deciding: _Deciding,
        verdict: Verdict,
        confidence: Confidence,
    ) -> tuple[list[str], Verdict, Confidence]:
        """Stage 7: the note's roles, best evidence first: enough evidence, or the groups told
        to read it. A group told to skip a note others read is one of its roles only with
        enough evidence outside the sentences that tell it so (`own`: the note is about its
        area), and comes last. A note with no evidence of any role and no group named gets
        none."""
        n_roles = len(self.slugs)
        positive, named = told.positive, told.verdicts
        suppressed = (
            {i for i, v in named.items() if v is Verdict.SKIP}
            if verdict is not Verdict.SKIP
            else set()
        )
        if positive and others_verdict is not None:
            order = sorted(positive, key=lambda i: (-scores[i], i))
            # a role with more evidence than every named group is the note's own topic
            # (its readers were named in words given to another role)
            top = max(scores[i] for i in positive)
            order += [
                i
                for i in range(n_roles)
                if i not in named and i not in suppressed and scores[i] > top
            ]
            order += [i for i in sorted(told.excepted) if i not in order]
            return [self.slugs[i] for i in order], verdict, confidence
        live = [(scores[i], i) for i in range(n_roles) if i not in suppressed]
        best = max((s for s, _ in live), default=0.0)
        threshold = max(T.min_score, T.relative_min * best)
        chosen = sorted((i for s, i in live if s >= threshold), key=lambda i: (-scores[i], i))
        chosen += [i for i in positive if i not in chosen]
        chosen += [i for i in sorted(told.excepted) if i not in chosen]  # "unless you own X"
        if not chosen:
            if best > 0:
                chosen = [max(live, key=lambda item: (item[0], -item[1]))[1]]
            elif named:
                # every reader the note names is told to skip it
                chosen = sorted(named, key=lambda i: (-scores[i], i))
                verdict, confidence = Verdict.SKIP, Confidence.HIGH
            # else no role fits: the rules name none (the classifier takes the role model's
            # closest, at low confidence)
        # a group told to skip is still among the roles, after the readers, when the note is
        # about its area (release engineers told to skip a note on the wheels they publish)
        if chosen:
            kept = sorted(
                (i for i in suppressed if own[i] >= threshold), key=lambda i: (-own[i], i)
            )
            chosen += [i for i in kept if i not in chosen]
        if deciding.verdict is None and positive:
            chosen.sort(key=lambda i: positive.get(i) is not verdict)
        return [self.slugs[i] for i in chosen], verdict, confidence

    def _audience_verdicts(
        self, roles: list[str], told: _Told, others_verdict: Verdict | None
    ) -> dict[str, Verdict]:
        """Stage 8: what named groups are told stays theirs whatever main verdict the model
        gives; everyone else (every role the note neither names nor is about) gets theirs."""
        role_verdicts = {self.slugs[i]: v for i, v in told.verdicts.items()}
        if others_verdict is not None:
            # the note's own readers (told in general, named in words no role claims, or
            # told in words no cue holds) are not everyone else; everyone else keeps what
            # they were told even when it is the main verdict, so that a different main
            # verdict from the model leaves it alone
            addressed = set(told.verdicts) | {self.slugs.index(r) for r in roles}
            for index, slug in enumerate(self.slugs):
                if index not in addressed:
                    role_verdicts[slug] = others_verdict
        if others_verdict is Verdict.SKIP:
            # "skip unless you own X": X is not to skip it; how closely is not said, and a
            # read is never deep without a cue that says so
            for index in told.excepted - set(told.verdicts):
                role_verdicts[self.slugs[index]] = Verdict.SKIM
        return role_verdicts

    def terms(self, text: str) -> list[str]:
        """The keywords and audience phrases in a normalised, lower-cased `text`, as term keys
        (without spaces), in order (for evaluation)."""
        return [key for _offset, key, _weights in self._hits(text)]

    def scores(self, title: str, paragraph: str) -> dict[str, float]:
        """Raw per-role evidence (title and paragraph hits only), for debugging."""
        out = dict.fromkeys(self.slugs, 0.0)
        for text, factor in ((title, T.title_weight), (paragraph, 1.0)):
            for index, value in self._span_roles(normalise(text).lower()).items():
                out[self.slugs[index]] += value * factor
        return out


def _keyword_table(
    taxonomy: Taxonomy, audience: bool
) -> tuple[dict[str, dict[int, float]], set[str], set[str]]:
    """Every role's keywords (and audience phrases, when `audience`): term key (without
    spaces) -> {role index: weight}, the keys that match as prefixes ("gfx*"), the terms."""
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

    for index, role in enumerate(taxonomy.roles):
        for term, weight in role.keywords.items():
            add(term, index, weight)
        for phrase in role.audience if audience else ():
            add(phrase, index, T.audience_weight)
    return table, prefix_keys, terms


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
