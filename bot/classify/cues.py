"""How closely to read a note: verdict cues organised by meaning, with negation and contrast.

A writer says "read this closely" in many ways; what they mean falls in a few classes.
The phrase tables below are organised by those classes and hold the synonyms a fluent
writer uses in Chinese and English (general usage, not the wording of particular notes):

- strong yes, read through                      -> deep
- skim, conclusion only                         -> skim
- not needed, ignore, not worth, nothing to read -> skip
- weak hints (routine, typo, draft)             -> only when nothing else is said

A negator just before a cue in the same clause flips it ("不值得精读", "no need for a close
read" is skip; "can't skip this" is deep); a negator inside a longer positive phrase does
not ("很有阅读必要" is deep). A contrast word ("但", "but") lets the later statement win.
Everything here is pure and deterministic.
"""

from __future__ import annotations

import bisect
import enum
import re
from collections.abc import Iterator
from dataclasses import dataclass

from bot.classify.settings import THRESHOLDS as T
from bot.classify.text import CLAUSE_STOP, SENTENCE_STOP, negator, squeeze
from bot.classify.trie import ASCII_ALNUM, trie_regex
from bot.domain import Verdict

__all__ = ["Cue", "Meaning", "find_cues", "has_contrast", "is_hedged", "weak_hint"]


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

LEXICON: dict[Meaning, tuple[str, ...]] = {
    Meaning.STRONG_YES: (
        # zh
        "必读", "必看", "必须读", "必须看", "一定要读", "一定要看", "务必阅读", "务必读", "务必看",
        "强烈推荐", "强推", "力荐", "极力推荐", "重点推荐", "首推", "强烈建议", "不容错过",
        "不可错过", "不能错过", "不要错过", "别错过", "不可不读", "不得不读", "不能不读",
        "不可不看", "非读不可", "非常值得", "十分值得", "很值得", "特别值得", "有阅读必要",
        "有必要读", "有必要看", "有必要细读", "有必要精读", "推荐阅读", "务必过一遍",
        "一定要过一遍", "务必看看", "一定要看看", "必须过一遍", "重点阅读", "值得一读",
        "值得反复读", "强烈建议阅读",
        # en
        "must read", "must-read", "must-see", "must see", "a must", "required reading",
        "essential reading", "mandatory reading", "highly recommended", "strongly recommended",
        "strongly recommend", "recommended reading", "don't miss", "do not miss",
        "not to be missed", "well worth", "definitely worth", "worth every minute", "top pick",
        "do not skip", "don't skip", "recommended", "强烈安利", "墙裂推荐", "值得收藏", "建议收藏",
        "干货满满", "值得细品", "值得品读", "一定得看", "千万别错过", "千万不要错过", "绝对值得",
        "非常推荐", "很推荐", "特别推荐", "优先阅读", "优先读", "优先看", "重点看", "重点读",
        "can't recommend it enough", "absolutely worth", "very much worth", "don't pass this up",
        "do not pass this up", "don't overlook", "do not overlook", "unmissable", "priority read",
        "read this first", "top of your list", "put it on your list", "one to read",
        "worth your while", "time well spent", "a rewarding read", "rewarding read",
    ),
    Meaning.READ_THROUGH: (
        # zh
        "精读", "细读", "细看", "深读", "研读", "通读", "详读", "细究", "读透", "吃透", "逐行读",
        "逐行看", "逐行过", "逐段读", "逐段看", "逐字读", "从头到尾读", "从头到尾看", "从头读到尾",
        "仔细阅读", "仔细读", "仔细看", "认真读", "认真阅读", "认真看", "好好读", "好好看",
        "深入阅读", "深入研究", "值得深入", "值得研究", "值得琢磨", "值得推敲", "值得花时间",
        "花时间读", "反复读", "完整读", "完整看", "全文阅读",
        # en
        "close read", "closer read", "careful read", "deep read", "in-depth read", "thorough read",
        "full read", "read closely", "read carefully", "read it closely", "read it carefully",
        "read in depth", "read in full", "read thoroughly", "read it all", "read the whole thing",
        "read every line", "line by line", "line-by-line", "read it end to end", "read end to end",
        "cover to cover", "front to back", "deep dive", "deep-dive", "worth studying", "study it",
        "should study", "worth reading", "worth a read", "worth the read", "worth your time",
        "worth the time", "worth a careful look", "worth a close look", "worth understanding",
        "go through it properly", "go through it carefully", "pore over", "scrutinize",
        "scrutinise", "set aside", "take the time", "every line", "every word", "start to finish",
        "careful reading", "close reading", "closer look", "a close look", "careful look",
        "thorough look", "detailed look", "read the thread", "read the discussion",
        "not just the diff", "block out", "read twice", "read it twice", "看两遍", "读两遍",
        "反复看", "should read", "must read it", "need to read", "needs to read", "has to read",
        "have to read", "want to read", "will want to read", "ought to read", "应该读", "应该看",
        "应当读", "需要读", "建议读", "建议阅读", "值得读", "值得阅读", "完整过一遍",
        "完整地过一遍", "仔细过一遍", "认真过一遍", "从头过一遍", "逐行过一遍", "完整读一遍",
        "完整看一遍", "从头到尾过一遍", "sit down with", "spend time with", "take your time with",
        "read in its entirety", "from start to finish", "top to bottom", "end-to-end read",
        "逐字逐句", "一字一句", "反复研读", "仔细研究", "认真研究", "深入看", "深入读", "细细读",
        "细细看", "细品", "慢慢读", "慢慢看", "读懂", "弄懂", "搞懂", "啃一遍", "啃下来",
        "完整阅读", "仔细研读", "花点时间读", "花些时间读", "花时间看", "值得细看", "dig into",
        "dive into", "into the weeds", "proper read", "proper reading", "proper look",
        "a careful pass", "a full pass", "pay close attention", "close attention",
        "read attentively", "work through it", "chew on", "study closely", "study carefully",
        "understand it fully", "好好研究", "好好看看", "don't skim", "do not skim",
        "not one to skim", "不要略读", "别略读", "不要只扫一眼", "别只扫一眼",
    ),
    Meaning.SKIM: (
        # zh
        "快速浏览", "浏览", "略读", "速览", "速读", "扫一眼", "扫一下", "扫一遍", "扫读", "粗读",
        "粗看", "泛读", "翻一翻", "翻翻", "翻一下", "过一眼", "过一遍", "快速过", "看一眼",
        "瞄一眼", "瞟一眼", "瞅一眼", "看看就行", "看看即可", "大致看看", "大概看看", "简单看看",
        "大致了解", "简单了解", "了解一下", "走马观花", "一目十行", "略看", "值得一看",
        # en
        "skim", "skims", "skimmed", "skimming", "skim through", "quick look", "quick read",
        "quick glance", "glance", "glance at", "quick scan", "scan through", "light read", "browse",
        "flip through", "leaf through", "look over", "once-over", "once over", "quick pass",
        "brief look", "cursory", "worth a look", "worth a glance", "worth a peek", "a peek",
        "take a look", "have a look", "粗略看看", "粗略浏览", "大致浏览", "大略看看", "大体看看",
        "随手翻翻", "顺手翻翻", "瞄一下", "瞄瞄", "扫扫", "粗粗看", "快速看一下", "快速看看",
        "简单过一下", "快速过一下", "skim-read", "speed-read", "a glimpse", "eyeball",
        "a light pass", "a fast pass", "thumb through", "run your eyes over", "look it over",
        "cursory read", "a peek at",
    ),
    Meaning.CONCLUSION_ONLY: (
        # zh
        "看结论", "只看结论", "了解结论", "知道结论", "记住结论", "结论即可", "看摘要", "看个大概",
        "了解大意", "知道大意", "大意即可", "只需了解大意", "知道有这回事", "知道即可", "知道就行",
        "知道就好", "了解即可", "了解就行", "了解就好", "留个印象", "有个印象", "心里有数",
        "看要点", "要点即可", "看描述", "看说明", "看标题",
        # en
        "the gist", "tl;dr", "tldr", "the takeaway", "the bottom line", "the headline",
        "good to know", "worth knowing", "for awareness", "be aware", "fyi", "the summary is",
        "the description is", "the changelog entry", "the release note", "just the outcome",
        "only the outcome", "just the conclusion", "the conclusion is", "read the description",
        "read the pr description", "read the summary", "the description tells", "will care",
        "should know", "should be aware", "needs to know", "need to know", "需要知道", "应该知道",
        "知道这件事", "just need to know", "only need to know", "just want to know", "double-check",
        "double check", "want a look", "may want to look", "short read", "easy read",
        "pleasant read", "可看可不看", "可读可不读", "随意", "随便看看", "有空再看", "有空可以看看",
        "if you have time", "when you have time", "at your leisure", "optional reading",
        "skip the details", "skip the diff", "skip the code", "略过细节", "跳过细节",
        "细节可以略过", "细节可略过", "细节不必看", "代码不用看", "至少要看懂", "至少看懂",
        "至少要了解", "至少了解", "至少要知道", "至少知道", "至少看看", "至少要看看", "至少扫一眼",
        "get by with", "make do with", "知道有这么回事", "知道有这个", "留意一下", "知悉",
        "看下结论", "看看结论", "看个结论", "只看摘要", "看看摘要", "know that it exists",
        "know it exists", "file it away", "heads-up", "heads up",
    ),
    Meaning.NOT_NEEDED: (
        # zh
        "可略过", "可以略过", "略过", "可跳过", "可以跳过", "跳过", "无需阅读", "无需看",
        "无需细看", "无需细读", "不必阅读", "不必看", "不用看", "不用读", "不必读", "不需要看",
        "不需要读", "没必要看", "没必要读", "可以不看", "可不看", "不看也罢", "不看也无妨",
        "不看也行", "不读也罢", "无需关注", "不必关注", "不用关注", "不用点开", "不必打开",
        "无需打开", "没有阅读必要", "无需细究", "不必细究",
        # en
        "skip", "skipped", "skippable", "safe to skip", "no need to read", "needn't read",
        "need not read", "don't need to read", "do not need to read", "no need to look",
        "no need to open", "no action needed", "give it a miss", "sit this one out", "pass on this",
        "you can pass", "not needed", "won't miss anything", "will not miss anything",
        "not miss anything", "lose nothing", "no reason to open", "no reason to read",
        "no reason to look", "no point reading", "no point in reading", "skipping it",
        "skipping this", "错过也无妨", "不会错过什么", "没理由看", "不用管", "不必管", "别管",
        "不用关心", "不必关心", "不必点开", "无需点开", "没必要点开", "无需理会", "不用理会",
        "无须理会", "不必跟", "不用跟", "无需跟进", "不必跟进", "不用跟进", "没必要跟",
        "give it a pass", "take a pass", "pass on it", "let it go", "let this one go",
        "let it slide", "let it pass", "not to read", "no need to follow", "不用费心", "不必费心",
        "不用花时间", "不必花时间", "无需花时间", "省点时间", "不看也没关系", "可以不读", "先放着",
        "直接划走", "不读也行", "不看也可以", "feel free to skip", "don't bother", "do not bother",
        "needn't bother", "no need to bother", "save your time", "save yourself the time",
        "spare yourself", "leave it be", "无须阅读", "无须看", "无须细看", "毋须阅读",
        "pass over it", "pass over this",
    ),
    Meaning.IGNORE: (
        # zh
        "可忽略", "可以忽略", "直接忽略", "忽略即可", "忽略它", "无视", "不用理", "不必理会",
        "不用在意", "无关紧要", "无足轻重",
        # en
        "ignore", "ignored", "can be ignored", "disregard", "nothing to see", "move along",
        "not for you", "is noise", "just noise", "it's noise", "nothing for anyone",
        "nothing for you", "not for anyone", "nothing new for", "a changelog line", "a footnote",
        "与你无关", "和你无关", "跟你无关", "不必在意", "置之不理", "可无视", "tune out",
        "doesn't concern you", "does not concern you", "not your concern", "of no concern",
        "pay no attention", "doesn't affect you", "does not affect you",
    ),
    Meaning.NOT_WORTH: (
        # zh
        "不值得", "不值一读", "不值一看", "没有价值", "没什么价值", "没啥价值", "价值不大",
        "意义不大", "没有阅读价值", "无阅读价值", "阅读价值不大", "浪费时间",
        # en
        "not worth", "isn't worth", "is not worth", "waste of time", "low value", "little value",
        "得不偿失", "不划算", "性价比不高", "性价比低", "浪费精力", "白费时间", "不值当",
        "不值一提", "没营养", "没有营养", "a waste of", "not a good use of", "poor use of",
        "low payoff", "low-value",
    ),
    Meaning.NOTHING_TO_READ: (
        # zh
        "没什么可读", "没有什么可读", "没啥可读", "没什么看头", "没啥看头", "没有看头", "乏善可陈",
        "平淡无奇", "平平无奇", "没什么好看", "没什么可看", "没啥可看", "没有什么可看",
        "there is nothing here", "there's nothing here", "nothing here for", "没什么需要细看",
        "没有什么需要细看",
        # en
        "nothing to read", "not much to read", "little to read", "nothing much to see",
        "nothing worth reading", "nothing of interest", "nothing interesting", "not much here",
        "nothing here to read", "nothing here to see", "nothing here worth", "nothing to read here",
        "nothing to look at", "is all there is", "that's all there is", "that is all there is",
        "没什么可看的", "没有可看的", "没什么内容", "没啥内容", "没什么干货", "没有干货",
        "没啥干货", "没什么新意", "毫无新意", "没啥好说的", "没什么好说的", "无甚可看",
        "没什么亮点", "没有亮点", "nothing to it", "not much to it", "nothing noteworthy",
        "nothing notable", "nothing remarkable", "unremarkable", "nothing of note", "没啥可说的",
        "没什么可说的", "nothing actionable",
    ),
}  # fmt: skip

# Weak hints, used only when a note says nothing else about reading it.
WEAK_SKIP = (
    "routine", "housekeeping", "trivial", "cosmetic", "typo", "chore", "boilerplate",
    "one-liner", "one line", "rename only", "纯文档", "纯格式", "例行", "琐碎", "错别字",
    "拼写", "一行改动", "只改了一行", "that's it", "that is all", "the usual", "version bump",
    "typo fix", "nothing more", "nothing else", "dead code", "unused", "仅此而已", "就这些",
    "没别的", "没有别的",
)  # fmt: skip
CLOSED_HINT = re.compile(
    r"已关闭|未合并|已撤回|被关闭|最终关闭|\((?:closed|reverted|withdrawn)\)"
    r"|\bwithdrawn\b|\bwas closed\b|\bclosed rather than merged\b|\bnever merged\b"
    r"|\bclosed without merging\b"
)
OPEN_HINT = re.compile(
    r"草案|草稿|未完成|仍在评审|还在评审|尚未合并|\[draft\]|\[wip\]|\((?:open|draft|wip)\)"
    r"|\bstill open\b|\bstill a draft\b|\bwork in progress\b|\bnot merged yet\b"
)
_CLOSED_ANCHORS = ("关闭", "合并", "撤回", "closed", "reverted", "withdrawn", "merged")
_OPEN_ANCHORS = ("草", "未完成", "评审", "合并", "draft", "wip", "open", "progress", "merged")
# "Even X ...", "就连 X 也...": the most concerned readers stand for everyone.
EVEN = re.compile(r"\s*(?:even\b|即便是?|即使是?|就连|哪怕是?|甚至连?)")
HEDGE = re.compile(
    r"可能|也许|或许|说不定|不确定|视情况|\b(?:maybe|perhaps|probably|possibly|might|arguably"
    r"|hard to say|not sure|depends)\b"
)
# Contrast words: the statement after one of them wins. "而" only before a clause-like
# continuation ("而…必读"), never inside "而非"/"而已".
CONTRAST = re.compile(
    r"但是|但|不过|然而|可是|反而|倒是|相反|却|而(?![非已且])"
    r"|\b(?:but|however|though|although|yet|whereas|instead|except|unless)\b"
)

_SUFFICIENT = re.compile(
    r"即可|就够|就行|就好|足够|足矣|只需|只要|只看|只用|\b(?:enough|all you need|suffices?"
    r"|just|only)\b"
)
_NEEDS_SUFFICIENCY = frozenset(
    {
        "看描述", "看说明", "看标题", "看摘要", "看要点", "看结论", "the headline", "the gist",
        "the release note", "the changelog entry", "the takeaway", "the bottom line",
        "the summary is", "the description is", "the conclusion is",
    }
)  # fmt: skip
# Verbs that also narrate what code does ("the scheduler skips empty batches", "忽略了窗口"):
# a cue only when addressed to the reader.
_NARRATIVE = frozenset(
    {"skip", "skipped", "ignore", "ignored", "not needed", "skipping it", "skipping this"}
    | {"跳过", "略过", "浏览"}
)
_TO_READER_EN = re.compile(
    r"(?:^|\b(?:can|may|should|could|might|will|just|safely|probably|please|to|and|or|you|then"
    r"|don't|do not|never|can't|cannot|shouldn't|should not|mustn't"
    r"|simply|feel free to|be|been|by|consider|recommend|suggest|i'd|i would|we'd)\s+)$"
)


# "the summary is all you need": found from its rare tail, then the noun before it.
_ENOUGH_TAIL_EN = re.compile(r"\b(?:is|are)\s+(?:enough|all\s+you\s+need|sufficient|plenty)\b")
_ENOUGH_HEAD_EN = re.compile(
    r"\b(?:the\s+)?(?:summary|description|title|gist|takeaway|conclusion|headline|changelog"
    r"|release\s+notes?|pr\s+description|commit\s+message|outcome|result)\b[^.;]{0,40}$"
)
_ENOUGH_ANCHORS_EN = ("enough", "all you need", "sufficient", "plenty")

# ---- constructions: grammar rather than fixed phrases, by what they mean
#
# Each construction is a family of patterns; every match of a pattern contains one of its
# anchors, so a pattern runs only near its anchors (see `_idiom_matches`). English patterns
# are checked for word edges after the match: a leading \b would slow the scan several times.
_Alt = tuple[str, tuple[str, ...]]

# Restriction: the reading is limited to a part or to knowing ("只需要看那一段", "读个大概",
# "知道有这个开关就行", "only needs the test file", "may confine themselves to the design
# section", "know the template exists", "the two-minute version").
_LIMITED_ZH: tuple[_Alt, ...] = (
    (
        r"(?:只需要?|仅需要?|只用|只要|只管)(?:看|读|知道|了解|记住|扫|瞄|翻|留意|关注|对照|过)",
        ("只需", "仅需", "只用", "只要", "只管"),
    ),
    (
        r"(?:只|仅)(?:看|扫|读(?![写者模权属文副]))(?:一下|下|一眼|看)?",
        ("只看", "只扫", "只读", "仅看", "仅扫", "仅读"),
    ),
    (
        r"(?:看|读|了解|知道|扫|翻)个(?:大概|大意|结论|标题|思路|开头|要点)",
        ("个大概", "个大意", "个结论", "个标题", "个思路", "个开头", "个要点"),
    ),
    (
        r"(?:(?:看|读)(?![者来法起])|了解|知道|记住|翻一眼|翻翻|瞄一下|瞄一眼|扫一眼|扫下|留意|注意)"
        r"[^,;:。!?]{0,14}?(?:就行|即可|就够|就好|足矣|就可以|就完了|便可|便是)",
        ("就行", "即可", "就够", "就好", "足矣", "就可以", "就完了", "便可", "便是"),
    ),
    (
        r"(?:(?:看|读)(?![者来法起])|了解|知道|记住|扫一眼|看一眼)[^,;:。!?]{0,14}?就(?:算交差|完事|算数|差不多了)",
        ("交差", "完事", "算数", "差不多"),
    ),
    (
        r"(?:可以|可|先|不妨|请)(?:先)?(?:记一下|记下|留意)|(?:同学|的人|负责人|组|团队|方向)留意(?!的是|到)",
        ("留意", "记一下", "记下"),
    ),
    (r"扫(?:下|一下|两眼|几眼)", ("扫下", "扫一下", "扫两眼", "扫几眼")),
    (
        r"(?:(?:应该|可以|建议|不妨|要)|(?<=同学)|(?<=的人)|(?<=组)|(?<=们))(?:看一下|看看|看下|翻一下|翻下)",
        ("看一下", "看看", "看下", "翻一下", "翻下"),
    ),
    (r"(?:对|核|核对|确认)(?:一)?下", ("对一下", "对下", "核一下", "核下", "核对", "确认")),
)
_LIMITED_EN: tuple[_Alt, ...] = (
    (
        r"(?:only|just)\s+needs?\s+(?:to\s+)?(?:know|see|read|check|look|skim|note|the|a|that"
        r"|this)\b",
        ("only need", "just need"),
    ),
    (
        r"needs?\s+(?:only|just)\s+(?:to\s+)?(?:know|see|read|check|look|skim|note|take|the|a"
        r"|that)\b",
        ("need only", "need just", "needs only", "needs just"),
    ),
    (
        r"(?:may|can|could)\s+(?:limit|confine|restrict)\s+(?:themselves|yourself|yourselves"
        r"|itself)\s+to\b",
        ("limit", "confine", "restrict"),
    ),
    (r"(?:can|may|could)\s+(?:get\s+by|make\s+do)\s+with\b", ("get by", "make do")),
    (r"(?:should|will|would)\s+suffice\b", ("suffice",)),
    (
        r"(?:take|read|get|grab|check)\s+(?:the\s+)?(?:headline|title)\s+and\s+(?:leave|move"
        r"|stop)\b",
        ("headline", "title"),
    ),
    (
        r"know\s+(?:that\s+)?(?:there\s+is\s+|there's\s+)?[^.;,:]{0,30}?\b(?:exists?|landed"
        r"|moved|changed|is\s+there|was\s+added)\b",
        ("know",),
    ),
    (r"from\s+the\s+(?:description|summary|title|headline)\s+alone\b", ("alone",)),
    (
        r"(?:learn|get|glean|take|pick\s+up|understand)\s+[^.;,]{0,30}?from\s+the\s+(?:pr\s+)?"
        r"(?:description|summary|changelog|release\s+notes?)\b",
        ("from the",),
    ),
    (
        r"(?:can|may|could|should)\s+stop\s+(?:reading\s+)?(?:after|once|at|when)\s+(?:the|they|you"
        r"|reading)\b|(?:can|may|could|should)\s+stop\s+there\b",
        ("stop after", "stop once", "stop at", "stop when", "stop there", "stop reading"),
    ),
    (
        r"(?:take\s+note|make\s+a\s+note|note\s+it|(?:just|only|simply)\s+note"
        r"|note\s+the\s+(?:default|new|flag|name|change|rename|lesson))\b",
        ("note",),
    ),
    (r"(?:one|two|five|few)[\s-]minutes?(?:\s+version|\s+look|\s+read|\s+skim)\b", ("minute",)),
    (r"give\s+it\s+a\s+(?:moment|minute|look|glance|once-over)\b", ("give it a",)),
    (
        r"(?:should|can|may|could|might|will\s+want\s+to)\s+(?:take\s+a\s+)?look\s+at\b",
        ("look at",),
    ),
    (
        r"(?:summary|description|title)\s+tells\s+(?:you|them|[\w-]+\s+(?:people|folks))\s+(?:what|everything|all)\b",
        ("tells",),
    ),
    (
        r"page\s+through\b|(?:you'll|you\s+will|will)\s+want\s+to\s+know\b",
        ("page through", "want to know"),
    ),
    (
        r"should\s+scan\b|scan-the-diff\b|scan\s+the\s+diff\b|give\s+it\s+a\s+scan\b"
        r"|worth\s+a\s+pass\b|a\s+pass\s+over\b|awareness(?:-level|\s+only|\s+item)\b",
        ("scan", "worth a pass", "a pass over", "awareness"),
    ),
    (r"glanc(?:e|es|ed|ing)\b", ("glanc",)),
)

# Negated need or relevance, for one reader or for everybody ("谁都不需要", "和谁都没关系",
# "不必回头翻", "不读也无妨", "nobody needs it", "don't spend time on it", "ancient history").
_UNNEEDED_ZH: tuple[_Alt, ...] = (
    (
        r"(?:不用|不必|无需|无须|用不着|不需要|没必要|犯不着|大可不必|毋须|没理由|没有理由)"
        r"(?:再|去|专门|特意|特地|回头|多|在此|在这上面)?"
        r"(?:看|读|翻|打开|点开|点进|点|展开|关心|管|理会|关注|花|费|跟)",
        (
            "不用",
            "不必",
            "无需",
            "无须",
            "用不着",
            "不需要",
            "没必要",
            "犯不着",
            "毋须",
            "没理由",
            "没有理由",
        ),
    ),
    (
        r"(?:谁|任何人|大家|所有人)都(?:不需要|不用|不必|无需|没必要|用不着)"
        r"|(?:无需|不必|不需要|不用)(?:安排|投入|花费?)[^,;:。!?]{0,6}?时间|不占用[^,;:。!?]{0,4}阅读时间"
        r"|归档即可|本条忽略|此条忽略",
        (
            "谁都",
            "任何人都",
            "大家都",
            "所有人都",
            "时间",
            "归档",
            "忽略",
        ),
    ),
    (
        r"(?:和|与|跟)(?:谁|任何人|大家)都?(?:没有?|无)(?:多大|什么|啥)?关",
        ("和谁", "与谁", "跟谁", "和任何人", "与任何人", "跟任何人", "和大家", "与大家", "跟大家"),
    ),
    (
        r"(?:看|读|扫|瞄)(?:完|一眼|一下|个|下|到|了)?标题(?:也就|就|即|便|我就|也)?(?:够|行|可|足矣|知道|明白|懂|可以走|可以关"
        r"|心里有数)"
        r"|标题(?:已经?|就|已)?(?:把[^,;:。!?]{0,6})?(?:说明|说清|讲清|交代|讲完|说完)",
        ("标题",),
    ),
    (
        r"(?:读|看)\s*#\s*\d+\s*(?=[。.;,]|$)|(?:直接)?读(?:后者|take\s*2)|(?:直接|改|去)?(?:看|读)\s*(?:那个|另一个"
        r"|后一个|后者|正本|原\s*pr|#\s*\d+|\d{3,6})\s*(?:就好|就完了|就行|即可|就够了?"
        r"|更划算|吧)|读那个[,，]?\s*这个略",
        (
            "另一个",
            "后一个",
            "后者",
            "正本",
            "#",
            "take",
            "就好",
            "就完了",
            "就行",
            "即可",
            "更划算",
            "这个略",
        ),
    ),
    (
        r"留给[^,;:。!?]{0,12}?(?:自己)?(?:去)?(?:翻|看|查)|不(?:读|看)(?:也|亦)?(?:错过不了|不会错过)",
        ("留给", "错过不了", "不会错过"),
    ),
    (
        r"(?:亦|也|都)可(?:以)?不(?:读|看|点开|打开)",
        ("可不读", "可不看", "可以不", "可不点", "可不打"),
    ),
    (
        r"低优先级(?!的?(?:请求|任务|队列|序列))|(?:放进|丢进|放到|加入)稍后读|稍后再读|backlog(?=\s*(?:[。.,;]|$))",
        ("低优先级", "稍后", "backlog"),
    ),
    (
        r"(?:已读|标已读|点个已读|标为已读|勾掉|清掉|划掉|下一条|嫌多余)(?![完过懂])",
        ("已读", "勾掉", "清掉", "划掉", "下一条", "嫌多余"),
    ),
    (r"无脑\s*approve|跳过无妨|(?:可以|可|直接)?跳过(?:也)?无妨", ("无脑", "无妨")),
    (r"(?:往下)?一滑就过|(?:把页面)?关(?:掉|了)(?:就好|即可|就行)", ("一滑", "关掉", "关了")),
    (
        r"(?:就|可以)?当(?:作)?没(?:看见|看到|这回事)|吃瓜|看个热闹|吃灰|散场|划走|(?:可以)?直接退了"
        r"|(?:点开|打开)的必要都没有|没有(?:点开|打开)的必要",
        ("没看见", "没看到", "没这回事", "吃瓜", "热闹", "吃灰", "散场", "划走", "退了", "必要"),
    ),
    (
        r"(?:(?:要|值得|需要)(?:看|读|点开)吗)\s*\?\s*(?:不用|不必|没必要|不需要|不)"
        r"|(?:谁会|难不成|难道|何必|哪有人|谁还)[^?。!]{0,30}?(?:读|看|审|花时间|点开)[^?。!]{0,20}\?",
        ("?",),
    ),
    (
        r"(?:用到|需要|真要[^,;:。!?]{0,12}?)(?:的时候|那天|时)再(?:来)?(?:翻|看|读|查)",
        ("再翻", "再看", "再读", "再查", "再来"),
    ),
    (
        r"不(?:读|看|点开|打开)(?:也|亦)?(?:罢|无妨|行|可以|没关系|没事|不要紧|可|不会少块肉|不亏|没损失"
        r"|不吃亏)",
        ("不读", "不看", "不点开", "不打开"),
    ),
    (
        r"(?:大可|可以|可|尽可)(?:直接)?(?:绕开|绕过|搁置|划过去|划过|滑过去|划走|放一边|放一放)",
        ("绕开", "绕过", "搁置", "划过", "滑过", "划走", "放一边", "放一放"),
    ),
    (
        r"(?:直接)?划过去|别点(?:开)?|此处不赘|(?:正文|其余|其他)从略",
        ("划过去", "别点", "不赘", "从略"),
    ),
)
_UNNEEDED_EN: tuple[_Alt, ...] = (
    (
        r"(?:nobody|no\s+one|no-one)\s+(?:really\s+|actually\s+)?(?:needs?|has\s+to|must"
        r"|should)\b",
        ("nobody", "no one", "no-one"),
    ),
    (
        r"(?:don't|do\s+not|no\s+need\s+to|needn't|never)\s+spend\s+(?:any\s+|much\s+|your\s+"
        r"|more\s+|a\s+|even\s+a\s+)?(?:time|effort|energy|cycles|minute|second|moment)\b",
        ("spend",),
    ),
    (r"(?:ancient|old)\s+history\b|old\s+news\b", ("history", "old news")),
    (
        r"(?:don't|do\s+not|doesn't|does\s+not)\s+need\s+to\s+(?:open|read|look\s+at)\b"
        r"|(?:little|no)\s+reason\s+to\s+(?:go\s+past|open|read|look\s+at)\b"
        r"|(?:i'd\s+not|wouldn't|would\s+not)\s+bother\b"
        r"|(?:nobody|no\s+one|no-one)\s+(?:is\s+going\s+to|will|would)\s+(?:learn|miss|need|notice)\b",
        ("need to", "reason to", "bother", "nobody", "no one", "no-one"),
    ),
    (
        r"(?:read|see|check)\s+the\s+title\s+and\s+(?:you're|you\s+are|you've)\s+(?:done|read)\b"
        r"|title\s+(?:alone\s+)?(?:says|tells\s+you|conveys|covers)\s+(?:it|everything|all|what)\b"
        r"|(?:guess|know|see)\w*\s+[^.;]{0,20}?from\s+the\s+title\b"
        r"|read\s+the\s+title\s+and\s+(?:moved|move|that\s+was|nodded)",
        ("title",),
    ),
    (
        r"(?:low(?:est)?[\s-]priority(?![\s-](?:request|queue|seq|task|job|traffic|user|tenant))"
        r"|backlog\s+it|not\s+homework)\b|backlog(?=\s*(?:[.;:,\u2014-]|$))",
        ("low priority", "lowest priority", "backlog", "homework"),
    ),
    (
        r"no\s+reading\s+(?:required|needed|necessary)\b|nothing\s+(?:here\s+)?(?:calls\s+for"
        r"|requires|warrants|merits|needs)\s+(?:a\s+)?(?:careful\s+|close\s+|full\s+|proper\s+)?"
        r"(?:reading|read|review|attention)\b"
        r"|nothing\s+(?:here\s+)?(?:for\s+the\s+reading\s+list|to\s+assign|to\s+open"
        r"|to\s+review|to\s+learn|to\s+adopt)\b",
        ("reading required", "reading needed", "reading necessary", "nothing"),
    ),
    (
        r"(?:lose|loses|miss|misses)\s+(?:precisely\s+|absolutely\s+|exactly\s+|really\s+)?"
        r"(?:nothing|anything)\s+by\s+(?:not|leaving|skipping)\b"
        r"|without\s+opening\s+it\b|(?:leave|keep)\s+(?:it|this(?:\s+one)?)\s+(?:unopened|unread"
        r"|closed)\b|(?:file|archive)\s+it\s+(?:away\s+)?unread\b",
        ("by not", "by leaving", "by skipping", "without opening", "unopened", "unread", "closed"),
    ),
    (
        r"(?:dismiss(?=\s*(?:[.;!]|$|\s+it|\s+this))|(?:can|may|could|should|just)\s+archive"
        r"|archive\s+(?:it|this)|swipe\s+(?:it\s+)?(?:away|left)|keep\s+scrolling|mark\s+(?:it|this)"
        r"\s+(?:as\s+)?read|clear\s+it\s+(?:out|away)|let\s+it\s+(?:scroll\s+past|fall\s+off"
        r"|drop|slide))\b",
        (
            "dismiss",
            "archive",
            "swipe",
            "keep scrolling",
            "as read",
            "it read",
            "clear it",
            "scroll past",
            "fall off",
            "let it drop",
            "let it slide",
        ),
    ),
    (r"(?:zero|0)\s+(?:minutes|stars|action\s+items)\b", ("zero", "0 minutes", "0 stars")),
    (
        r"no\s+(?:action\s+items?|follow-up|follow\s+up|action)\s+(?:needed|required|for\s+anyone)\b"
        r"|deprioriti[sz]e\b|low\s+roi\b|no-read\b|not\s+a\s+read\s+(?:i'd|i\s+would|to|worth)\b"
        r"|(?:doesn't|does\s+not|don't|won't)\s+(?:merit|warrant|deserve|need)\s+(?:anyone's\s+|your\s+"
        r"|any\s+)?(?:review|attention|time|bandwidth|reading|a\s+read)\b"
        r"|nothing\s+(?:new\s+)?(?:here\s+)?(?:you\s+need\s+)?to\s+(?:read|study)\b",
        (
            "action",
            "follow",
            "deprioriti",
            "roi",
            "no-read",
            "not a read",
            "merit",
            "warrant",
            "deserve",
            "need",
            "nothing",
        ),
    ),
    # pointed elsewhere: "read the newer one instead", "look at the original PR instead"
    (
        r"(?:don't|do\s+not|no\s+need\s+to|never)\s+(?:read|open|review)\s+(?:it|this|the\s+diff)\b"
        r"|not\s+a\s+read\b|no\s+read\s+needed\b|rubber[\s-]stamp\b|\bn/a\b",
        (
            "don't",
            "do not",
            "no need to",
            "never",
            "not a read",
            "read needed",
            "rubber",
            "n/a",
        ),
    ),
    (
        r"(?:read|look\s+at|see|check|go\s+to|follow)\s+(?:the\s+|those\s+|these\s+)?(?:newer|later|other|original"
        r"|follow-up|successors"
        r"|merged|successor|earlier|first|second|replacement|real|actual|#\s*\d+|pr\s+#?\d+)"
        r"[^.;]{0,40}?\binstead\b",
        ("instead",),
    ),
    # a question answered no ("Worth opening? No."), or one that expects no answer
    (
        r"(?:read|open|worth\s+(?:opening|reading|it|a\s+look|a\s+read))[^?.!;]{0,20}\?\s*"
        r"(?:no|nope|not\s+really|no\s+need|hardly|not\s+unless)\b"
        r"|(?:who\s+(?:would|reads)|why\s+would\s+(?:anyone|you))[^?.!]{0,40}?\?",
        ("?",),
    ),
    (
        r"pretend\s+(?:this|it)\s+never\s+happened\b|take\s+it\s+on\s+trust\b|(?:bin|trash)\s+it\b"
        r"|(?:closed|archived|filed|left)\s+unread\b|close\s+this(?:\s+one)?\b|(?:isn't|is\s+not|not|none\s+of)\s+your\s+business\b"
        r"|(?:one|something)\s+for\s+when\s+you(?:'re|\s+are)?\b|when\s+you\s+(?:actually|really)"
        r"\s+need\s+it\b",
        (
            "pretend",
            "close this",
            "on trust",
            "bin it",
            "trash it",
            "unread",
            "business",
            "for when",
            "need it",
        ),
    ),
    (r"scroll(?:ing)?\s+(?:past|by|on)\b", ("scroll",)),
    (r"let\s+(?:it|this|this\s+one)\s+go\s+by\b", ("go by",)),
    (r"pass\s+(?:it|this|this\s+one)\s+by\b", ("pass it", "pass this")),
    (r"can\s+wait\s+until\b", ("wait until",)),
    (r"move\s+on\b", ("move on",)),
    (r"leave\s+it\s+alone\b|leave\s+it\b(?=\s*[.;!]|\s*$)", ("leave it",)),
    (
        r"nothing\s+(?:here\s+)?for\s+(?:you|them|anyone)\b|have\s+nothing\s+to\s+take\b"
        r"|will\s+find\s+nothing\b|nothing\s+to\s+take\s+from\b|nothingburger\b",
        ("nothing",),
    ),
)

# Intensity: a reading verb done thoroughly ("好好过一遍", "逐个文件读一遍", "要看明白",
# "必修课", "take this one slowly", "read it once, carefully", "learn the harness properly",
# "clear your afternoon", "keep it open in a second tab").
_DEPTH_ZH: tuple[_Alt, ...] = (
    (
        r"(?:好好|仔细|认真|完整|细细|踏踏实实|老老实实|从头到尾|一字不落)地?"
        r"(?:过一遍|过一下|读|看|研究|琢磨|啃|对待|核对|推敲|梳理)",
        ("好好", "仔细", "认真", "完整", "细细", "踏踏实实", "老老实实", "从头到尾", "一字不落"),
    ),
    (
        r"逐(?:个|一|条|项|段|行|句|字|页|处|块|个文件|份文件)[^,;:。!?]{0,6}?"
        r"(?:读|看|过|审|核对|推敲|检查|对照)",
        ("逐",),
    ),
    (r"(?:看|读|弄|搞|想)(?:明白|清楚|透彻)", ("明白", "清楚", "透彻")),
    (
        r"(?:应该|应当|建议|要|得|必须|务必|最好|都)[^,;:。!?]{0,12}?(?:读|看)(?:完|透)",
        ("读完", "看完", "读透", "看透"),
    ),
    (r"不(?:读|看)[^。!?]{0,20}?后悔", ("后悔",)),
    (
        r"没有不(?:读|看)的理由|不(?:好好)?(?:读|看)[^,;:。!?]{0,6}说不过去|(?:要是|如果)(?:不|没)(?:细读|精读|好好读|读|看)",
        ("理由", "说不过去", "要是不", "要是没", "如果不", "如果没"),
    ),
    (
        r"(?:不(?:看|读)(?:就|会|可就)?|可就|那可就)(?:血亏|亏大了|亏大发了|吃大亏)|血亏|亏大了"
        r"|(?:逐行|慢慢|好好|认真|必须)啃|啃透|划重点",
        ("血亏", "亏大", "吃大亏", "啃", "划重点"),
    ),
    (
        r"(?:别|不要|不能|不宜|不该|不应|不可)(?:只|光|仅)(?:看|读|扫)",
        ("只看", "只读", "只扫", "光看", "光读", "光扫", "仅看", "仅读", "仅扫"),
    ),
    (
        r"必修|(?:必备)(?:课|篇|材料|清单)|本周(?:重点|必读|必看)|(?:绕|跳|躲)不(?:过去|开)",
        ("必修", "必备", "本周", "不过去", "不开"),
    ),
    (
        r"(?:认真|仔细|好好|逐行)\s*review|(?:细|值得|慢慢|逐行|去|要|必|用)抠|抠细节|排在(?:最)?前面"
        r"|千万别跳|别跳过|(?:只读|只看)一(?:个|篇)[^,;:。!?]{0,12}?[,，]?\s*(?:我选它|就(?:读|看)这(?:个|篇)|就是它)",
        ("review", "抠", "排在", "别跳", "只读一", "只看一"),
    ),
    (
        r"(?:专题|完整|深入)?走读|深入(?:评审|审阅|研读)|重点学习|组内分享",
        ("走读", "深入", "重点学习", "组内分享"),
    ),
    (
        r"(?:一行一行|一段一段|一个一个|挨个(?:文件)?|逐一)(?:地)?(?:读|看|过|对|核对|检查)"
        r"|从[^,;:。!?]{1,20}?读到[^,;:。!?]{1,20}"
        r"|从头看到尾|坐下来(?:看|读)?|留出(?:整块|大块|一整块)?时间",
        ("一行一行", "一段一段", "一个一个", "挨个", "逐一", "从", "坐下来", "留出"),
    ),
    (
        r"(?:配着|开着|对照着|对着|拿着)[^,;:。!?]{0,16}?(?:代码|diff|实现|源码|测试|文档|笔记|参考|论文|yaml"
        r"|文件|\.py|kernel|内核)[^,;:。!?]{0,8}?(?:读|看|过|琢磨|推敲)"
        r"|(?:开在一边|放在手边|拉到一个窗口|单独开|一起打开)[^,;:。!?]{0,12}?(?:对照|对着|琢磨|推敲|读|看)"
        r"|反复(?:琢磨|对照|推敲|咀嚼|比对|品)|推演|手推|推一遍|画(?:时序图|流程图)|整理成笔记"
        r"|抄(?:到)?(?:草稿纸|纸|笔记本)上|抄下来(?:推|算|推演)|跟着[^,;:。!?]{1,10}?跑一遍|在本地\s*checkout",
        (
            "配着",
            "开着",
            "对照着",
            "对着",
            "拿着",
            "打开",
            "开在一边",
            "放在手边",
            "拉到",
            "反复",
            "推演",
            "手推",
            "推一遍",
            "时序图",
            "流程图",
            "笔记",
            "抄",
            "跑一遍",
            "checkout",
        ),
    ),
    (
        r"花(?:一|半|整|个)?(?:个)?(?:下午|上午|晚上|半天|一天|整天)",
        ("下午", "上午", "晚上", "半天", "一天", "整天"),
    ),
)
_DEPTH_EN: tuple[_Alt, ...] = (
    # "go through the fix carefully", "read the new scheduler closely"
    (
        r"(?:go|read|walk|work)\s+(?:through\s+)?[^.;,:]{0,25}?\b(?:carefully|closely|properly"
        r"|thoroughly|in\s+detail|line\s+by\s+line|in\s+full|end\s+to\s+end|cover\s+to\s+cover)\b",
        (
            "carefully",
            "closely",
            "properly",
            "thoroughly",
            "in detail",
            "line by line",
            "in full",
            "end to end",
            "cover to cover",
        ),
    ),
    (
        r"(?:go|read|walk|work|study|learn|review|trace|step|take|follow|understand|examine)\s+"
        r"(?:through\s+)?[^.;:]{0,40}?,?\s*(?:slowly|attentively|with\s+care|in\s+depth"
        r"|in\s+detail|by\s+hand|in\s+full)\b",
        ("slowly", "attentively", "with care", "in depth", "in detail", "by hand", "in full"),
    ),
    (
        r"(?:read|study|learn|review)\s+(?:it|this|them|these|the\s+\w+(?:\s+\w+)?)\s+"
        r"(?:once|twice),?\s+(?:carefully|closely|properly|thoroughly)\b",
        ("once", "twice"),
    ),
    (
        r"(?:study|learn|understand|master|follow|trace|examine|inspect)\s+[^.;,:]{0,25}?"
        r"\b(?:properly|carefully|closely"
        r"|thoroughly)\b",
        ("properly", "carefully", "closely", "thoroughly"),
    ),
    (
        r"(?:should|must|need\s+to|needs\s+to|have\s+to|has\s+to|ought\s+to|will\s+want\s+to"
        r"|would\s+do\s+well\s+to|had\s+better|'d\s+better)\s+(?:still\s+|really\s+|actually\s+"
        r"|definitely\s+|also\s+|absolutely\s+)?(?:read|study|go\s+through|work\s+through"
        r"|dig\s+into|pore\s+over)\b",
        (
            "should",
            "must",
            "need to",
            "needs to",
            "have to",
            "has to",
            "ought",
            "want to",
            "do well",
            "better",
        ),
    ),
    (r"(?:the\s+whole|an|your|a\s+full|the)\s+afternoon\b", ("afternoon",)),
    (r"clear\s+your\s+(?:afternoon|calendar|schedule|morning|evening)\b", ("clear your",)),
    (
        r"block\s+(?:out\s+)?(?:an\s+hour|time|an\s+afternoon)\b",
        ("block out", "block an", "block time"),
    ),
    (
        r"(?:eyes|eyeballs)[\s-]on[\s-]every[\s-]line\b|every-line\b",
        ("on every", "on-every", "every-line"),
    ),
    (
        r"(?:open|opened)\s+in\s+a\s+(?:second|separate|side|spare)\s+tab\b",
        ("second tab", "separate tab", "side tab", "spare tab"),
    ),
    (
        r"(?:keep|have)\s+(?:it|this)\s+open\s+(?:next\s+to|beside|alongside)\b",
        ("open next", "open beside", "open alongside"),
    ),
    (r"the\s+one\s+to\s+(?:read|study)\b", ("the one to",)),
    (
        r"read(?:ing)?\s+all\s+of\b|plan\s+on\s+reading\b|with\s+[^.;,]{1,40}?\s+(?:next\s+to|beside"
        r"|alongside)\s+(?:it|you|them)\b|keep\s+[\w./-]+(?:\s+[\w./-]+){0,4}?\s+open\s+(?:while|as\s+you)\b",
        ("all of", "plan on", "next to", "beside", "alongside", "open while", "open as"),
    ),
    (
        r"(?:open\s+(?:beside|next\s+to|alongside|side\s+by\s+side)\b|with\s+[^.;,]{1,40}?\s+side\s+by\s+side\b|with\s+(?:the\s+|a\s+|your\s+)?"
        r"[\w./-]+(?:\s+[\w./-]+){0,3}?\s+(?<!still )(?<!left )(?<!kept )open\b"
        r"|second\s+(?:monitor|screen|window)\b)",
        ("beside", "next to", "alongside", "side by side", "open", "monitor", "screen", "window"),
    ),
    (
        r"(?:careful|close|detailed|thorough|full|undivided)\s+(?:study|attention|reading)\b|top\s+of\s+the\s+pile\b"
        r"|p0\s+(?:reading|read|for)\b|[:：]\s*p0\b|的\s*p0\b|(?:high|top)[\s-]priority\s+(?:read|reading|for)\b"
        r"|[:：]\s*(?:high|top)[\s-]priority\b|on\s+your\s+list\s+this\week\b"
        r"|(?:merits|deserves|warrants|repays|earns)\s+(?:a\s+|its\s+|the\s+)?(?:careful|close|full"
        r"|real|proper)",
        (
            "study",
            "attention",
            "reading",
            "pile",
            "p0",
            "priority",
            "this week",
            "merits",
            "deserves",
            "warrants",
            "repays",
            "earns",
        ),
    ),
    (
        r"not\s+(?:something|a\s+change|a\s+pr|one|the\s+kind\s+of\s+(?:change|pr))\s+(?:that\s+)?"
        r"(?:[\w-]+\s+){0,3}?(?:can|could|should|would\s+want\s+to)\s+(?:afford\s+to\s+"
        r"|responsibly\s+|safely\s+)?(?:skip|skim|ignore|miss|pass\s+over)",
        ("not something", "not a change", "not a pr", "not one", "not the kind"),
    ),
    (r"no\s+reason\s+not\s+to\s+read\b", ("no reason not",)),
    (r"not\s+something\s+(?:to|you\s+can)\s+(?:skim|skip)\b", ("not something",)),
    (
        r"(?:nobody|no\s+one|no-one)\s+(?:[\w-]+\s+){0,4}?(?:should|can\s+afford\s+to)\s+(?:skip|ignore|miss"
        r"|pass\s+(?:on|over))\b|no\s+excuse\s+(?:for\s+not|not\s+to)\s+read(?:ing)?|can't\s+not\s+read\b"
        r"|(?:shouldn't|should\s+not|don't|do\s+not|mustn't)\s+(?:let\s+(?:this|it)\s+slide|pass\s+(?:this|it)"
        r"\s+by|treat\s+(?:it|this)\s+as\s+(?:background|optional))|won't\s+want\s+to\s+(?:skim|skip)\b"
        r"|at\s+your\s+peril\b",
        (
            "nobody",
            "no one",
            "no-one",
            "no excuse",
            "can't not",
            "slide",
            "by",
            "treat",
            "won't want",
            "peril",
        ),
    ),
    (
        r"(?:can't|cannot|can\s+not|shouldn't|should\s+not|mustn't)\s+afford\s+to\s+(?:skim|skip|ignore)\b"
        r"|isn't\s+something\s+you\s+can\s+(?:skim|skip|ignore|breeze\s+(?:past|through)|rush)\b"
        r"|(?:you|they|one|we|people|folks|owners|maintainers|authors|engineers|crew|team|readers|crowd"
        r"|group"
        r"|reviewers|isn't\s+something\s+you)\s+(?:really\s+|simply\s+|just\s+)?(?:can't|cannot|can\s+not"
        r"|shouldn't|should\s+not|mustn't)\s+(?:really\s+|just\s+)?(?:skim|skip|ignore|breeze\s+(?:past"
        r"|through)|rush)\b"
        r"|not\s+(?:merely|just|simply|only)\s+(?:know|skim|glance|note)\b"
        r"|(?:mistake|error)\s+(?:for\s+[\w\s-]{1,30}?\s+)?to\s+(?:merely\s+|just\s+|only\s+)?skim\b"
        r"|not\s+one\s+to\s+(?:rush|breeze\s+through)\b",
        (
            "can't",
            "cannot",
            "can not",
            "shouldn't",
            "should not",
            "mustn't",
            "afford",
            "isn't something",
            "not merely",
            "not just",
            "not simply",
            "not only",
            "mistake",
            "error",
            "not one to",
        ),
    ),
    (
        r"(?:should|must|need\s+to|have\s+to|and)\s+(?:\w+\s+)?(?:check|read|walk\s+through|go\s+through"
        r"|review|trace|inspect)\s+(?:each|every)\s+|(?:each|every)\s+[\w-]+(?:\s+[\w-]+)?\s+in\s+turn\b"
        r"|(?:this\s+is|it's|it\s+is)\s+homework\b|go\s+deep\b|a\s+real\s+read\b"
        r"|bookmark-worthy\b|worth\s+bookmarking\b",
        ("each", "every", "homework", "go deep", "real read", "bookmark"),
    ),
    (
        r"(?:(?:recommend|deserves?|needs?|warrants?|merits?|worth|calls?\s+for|give\s+it|schedule"
        r"|budget|requires?|put\s+this\s+on)\s+(?:a\s+|an\s+|its\s+|their\s+)?|[:：]\s*(?:an?\s+)?)"
        r"(?:full|complete|in-depth|deep|thorough|proper|careful|detailed)[\s-](?:review|walkthrough"
        r"|walk-through|read-through|review\s+session)\b|deep-review\b",
        ("review", "walkthrough", "walk-through", "read-through"),
    ),
    (
        r"if\s+you\s+(?:only\s+)?read\s+(?:only\s+)?one\b|(?:the\s+)?(?:single\s+)?most\s+important\s+read\b"
        r"|(?:the\s+)?week's\s+top\s+item\b|top\s+item\s+(?:this|of\s+the)\s+week\b|take\s+(?:this|it)\s+(?:more\s+)?"
        r"seriously\b|(?:suggest|recommend)\s+reading\b|dig\s+in\b|(?:real|careful|full|proper)[\s-]review\b"
        r"|not\s+a\s+rubber[\s-]stamp\b|worth\s+real\s+time\b|[:→]\s*deep\b",
        (
            "read one",
            "important read",
            "top item",
            "seriously",
            "suggest reading",
            "recommend reading",
            "dig in",
            "review",
            "rubber",
            "real time",
            "deep",
        ),
    ),
    (
        r"(?:yes|definitely|absolutely|do|please),?\s+read\s+(?:it|this(?:\s+one)?)\b",
        ("read it", "read this"),
    ),
    (
        r"(?:read|worth\s+(?:it|reading|digging\s+into|a\s+read|opening))[^?.!;]{0,20}\?\s*"
        r"(?:[^.?!;]{0,30}?,\s*)?(?:yes|absolutely|definitely|very\s+much)\b",
        ("?",),
    ),
)

# Another PR is the one to read: "#4512 is the one to read", "the re-land gets the close read".
_ELSEWHERE: tuple[_Alt, ...] = (
    (
        r"(?:#\s*\d+|follow-up|re-land|reland|successor|later\s+one|other\s+one|take\s+2)[^.;]{0,40}?"
        r"(?:is|gets)\s+the\s+(?:one\s+to\s+read|close\s+read|careful\s+read)\b",
        ("#", "follow-up", "re-land", "reland", "successor", "later one", "other one", "take 2"),
    ),
)
# A rating instead of a directive: "必读指数：低", "priority: high".
_RATING: tuple[_Alt, ...] = (
    (
        r"(?<![\d.])(10|\d)\s*/\s*10\b(?:\s+on\s+(?:my|the|our|a)\s+[\w-]+\s+(?:scale|meter|index))?",
        ("/10", "/ 10"),
    ),
    (r"(★{1,5})☆*", ("★",)),
    (
        r"(?:必读|推荐|阅读)?(?:指数|程度|等级|优先级|强度|深度)\s*[:：]?\s*"
        r"(低|中|高|一般|极高|很高|很低|零|无)"
        r"|(?:priority|importance|read-worthiness|read(?:ing)?\s+depth|effort|review\s+value)"
        r"\s*[:=]\s*(none|nil|zero|low|medium|high|full|deep)\b",
        (
            "指数",
            "程度",
            "等级",
            "优先级",
            "强度",
            "深度",
            "priority",
            "importance",
            "worthiness",
            "depth",
            "effort",
            "value",
        ),
    ),
    (r"适合人群\s*[:：]\s*(没有|无)|verdict\s*:\s*(deep|skim|skip)\b", ("适合人群", "verdict")),
)
# Time the writer budgets for the reading: "budget 45 minutes", "worth an hour", "十分钟封顶".
_BUDGET: tuple[_Alt, ...] = (
    (
        r"(\d+|an?|one|two|three|five|ten|fifteen|twenty|thirty|forty(?:[\s-]five)?|sixty|ninety"
        r"|half\s+an?|(?:a\s+)?quarter\s+of\s+an)(?:\s+to\s+\d+)?[\s-]*(minutes?|mins?|hours?|hrs?"
        r"|sittings?|evenings?|afternoons?)\b(?=\s*(?:[.,;:!?)\u2014-]|$)|\s+(?:with|on|for|minimum"
        r"|max|tops|at\s+most|is|will|should|of\s+reading|of\s+your|not|and|reading|to\s+read"
        r"|well)\b)",
        ("minute", "min", "hour", "hrs", "sitting", "evening", "afternoon"),
    ),
    (
        r"(\d+|[一二两三四五六七八九十半几整]+)\s*(?:个)?\s*(?:半)?(分钟|小时|钟头|晚上|下午|上午)",
        ("分钟", "小时", "钟头", "晚上", "下午", "上午"),
    ),
)
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "five": 5, "ten": 10, "fifteen": 15,
    "twenty": 20, "thirty": 30, "forty": 40, "sixty": 60, "ninety": 90,
}  # fmt: skip
_ZH_DIGITS = {
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}


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
    if word == "几":
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
        minutes = 120
    if minutes <= 0:
        return _SKIP_MARK
    return _DEEP_MARK if minutes >= 30 else ""


def _rating_marker(m: re.Match[str]) -> str:
    """A rating's verdict: a score out of ten or a row of stars out of five."""
    text = next(g for g in m.groups() if g)
    if text.isdigit():
        score = int(text)
        return _SKIP_MARK if score <= 2 else ("" if score <= 6 else _DEEP_MARK)
    if text[0] == "★":
        return _SKIP_MARK if len(text) <= 1 else ("" if len(text) <= 3 else _DEEP_MARK)
    if text == "低" and m.group().startswith(("必读", "推荐")):
        return _SKIP_MARK  # "必读指数：低": not a must-read at all
    return _RATING_MARK[_RATING_MEANING[text]]


_RATING_MEANING = {
    "低": "skim", "很低": "skip", "一般": "skim", "中": "skim", "高": "deep", "很高": "deep",
    "极高": "deep", "零": "skip", "无": "skip", "没有": "skip", "low": "skim", "medium": "skim",
    "high": "deep", "none": "skip", "nil": "skip", "zero": "skip", "full": "deep", "deep": "deep",
    "skim": "skim", "skip": "skip",
}  # fmt: skip

# The writer's own visit: "closed the tab after the first file", "I read the title and moved
# on", "我看了一眼就关了", "that hour was well spent". Weak: a directive to the reader wins.
_VISIT_SKIP: tuple[_Alt, ...] = (
    (
        r"(?:closed|close)\s+(?:it|the\s+tab|the\s+page)\b|(?:moved|carried)\s+on\b|skipped\s+past\b"
        r"|didn't\s+(?:even\s+)?open\b",
        ("closed", "close", "moved on", "carried on", "skipped past", "didn't"),
    ),
    (
        r"(?:就|便)把?(?:页面|标签页)?关了|把(?:页面|标签页)关了|退了出来|没点开|没展开|懒得展开|不打算点开",
        ("关了", "退了出来", "没点开", "没展开", "懒得展开", "不打算点开"),
    ),
)
_VISIT_DEEP: tuple[_Alt, ...] = (
    (r"well\s+spent\b|paid\s+off\b|但很值", ("well spent", "paid off", "很值")),
)
# A bare "pass", "不看" that is the whole of its clause, or after "otherwise", "can".
_BARE_READ: tuple[_Alt, ...] = (
    (
        r"read\s+(?:it|this(?:\s+one)?|the\s+whole\s+thing)\s*(?=[.;!]|$)",
        ("read it", "read this", "read the"),
    ),
)
_BARE: tuple[_Alt, ...] = (
    (r"pass(?:\s+(?:on\s+it|on\s+this|over(?:\s+it|\s+this)?))?\s*(?=$|[.;:!?,])", ("pass",)),
    (
        r"(?:不看|不读|略过|跳过|这个略|这篇略|此篇略|略|跳|直接过|划水(?:即可)?|关掉|nope)\s*(?=[。.!;]|$)",
        (
            "不看",
            "不读",
            "略。",
            "略.",
            "略!",
            "略;",
            "跳过",
            "跳。",
            "跳.",
            "直接过",
            "划水",
            "关掉",
            "nope",
        ),
    ),
)
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
# Families in order: a later family wins where matches overlap ("别只看标题" over "只看").
_FAMILIES: tuple[tuple[tuple[_Alt, ...], str], ...] = (
    (_LIMITED_ZH, ""),
    (_LIMITED_EN, ""),
    (_UNNEEDED_ZH, _SKIP_MARK),
    (_UNNEEDED_EN, _SKIP_MARK),
    (_DEPTH_ZH, _DEEP_MARK),
    (_DEPTH_EN, _DEEP_MARK),
    (_ELSEWHERE, _SKIP_MARK),
    (_RATING, ""),
    (_BUDGET, ""),
    (_BARE, _SKIP_MARK),
    (_BARE_READ, _DEEP_MARK),
    (_VISIT_SKIP, _VISIT + _SKIP_MARK),
    (_VISIT_DEEP, _VISIT + _DEEP_MARK),
)
_EDGED_FAMILIES = (
    _ELSEWHERE,
    _LIMITED_EN,
    _UNNEEDED_EN,
    _DEPTH_EN,
    _BARE,
    _BARE_READ,
    _VISIT_SKIP,
    _VISIT_DEEP,
)


@dataclass(frozen=True)
class _Idiom:
    pattern: re.Pattern[str]
    marker: str
    anchors: tuple[str, ...]
    edged: bool  # must start and end at a word edge
    rating: bool
    budget: bool
    bare: bool


_IDIOMS = tuple(
    _Idiom(
        re.compile(pattern),
        marker,
        anchors,
        any(family is f for f in _EDGED_FAMILIES),
        family is _RATING,
        family is _BUDGET,
        family is _BARE or family is _BARE_READ,
    )
    for family, marker in _FAMILIES
    for pattern, anchors in family
)


def _anchor_table() -> dict[str, frozenset[int]]:
    """Anchor (without spaces) -> the idioms whose matches may contain it."""
    own: dict[str, set[int]] = {}
    for index, idiom in enumerate(_IDIOMS):
        for anchor in idiom.anchors:
            own.setdefault("".join(anchor.split()), set()).add(index)
    return {
        key: frozenset(i for other, idioms in own.items() if other in key for i in idioms)
        for key in own
    }


_ANCHORS = _anchor_table()


def _idiom_matches(
    text: str, near: dict[int, list[tuple[int, int]]], stop: int
) -> Iterator[tuple[_Idiom, re.Match[str]]]:
    """(idiom, match) of every idiom, idiom by idiom, scanning only `near` its anchors.

    `near` holds, per idiom, the text windows around its anchors in order: running a
    pattern only there is much cheaper than running every pattern over the whole note.
    """
    for index in sorted(near):
        idiom = _IDIOMS[index]
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
_HITS: dict[str, tuple[str | None, frozenset[int]]] = {
    key: (_BY_KEY.get(key), frozenset().union(*(i for a, i in _ANCHORS.items() if a in key)))
    for key in {*_BY_KEY, *_ANCHORS}
}
_WEAK_KEYS = frozenset(squeeze(p) for p in WEAK_SKIP)


def _edges_ok(text: str, s: int, e: int) -> bool:
    """An ASCII phrase starts and ends at word edges ("skim" is not inside "skimmable")."""
    if text[s] in _ASCII and s > 0 and text[s - 1] in _ASCII:
        return False
    return not (text[e - 1] in _ASCII and e < len(text) and text[e] in _ASCII)


# Quoted wording and code are mentions, not statements: "the page now says 'recommended
# model'" recommends nothing. A cue that is the whole quotation ('a "must read"') still counts.
_QUOTED = re.compile(
    r"(?<![a-z0-9])'[^'\n]{1,80}'(?![a-z0-9])|\"[^\"\n]{1,80}\"|`[^`\n]{1,80}`"
    r"|\u201c[^\u201d\n]{1,80}\u201d|\u2018[^\u2019\n]{1,80}\u2019|\u300c[^\u300d\n]{1,80}\u300d"
    r"|\u300e[^\u300f\n]{1,80}\u300f"
)
_QUOTE_CHARS = ("'", '"', "`", "\u201c", "\u2018", "\u300c", "\u300e")


def _mentions(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """Spans of quoted wording and code in `text[start:stop]`."""
    if not any(map(text.__contains__, _QUOTE_CHARS)):
        return []
    return [m.span() for m in _QUOTED.finditer(text, start, stop)]


# English words that start no phrase are consumed whole (dropped by the _BY_KEY lookup).
_CUE_RE = re.compile(
    trie_regex([*TERMS, *(a for idiom in _IDIOMS for a in idiom.anchors)], skip_words=True)
)
_WEAK_RE = re.compile(trie_regex(WEAK_SKIP))


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


def find_cues(text: str, start: int = 0, end: int | None = None) -> list[Cue]:
    """Verdict cues in `text[start:end]` (lower-cased, normalised), in order.

    Weak cues (ratings, time budgets, the writer's own visit) count only in a note that
    says nothing stronger.
    """
    cues = list(_all_cues(text, start, end))
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


def _all_cues(text: str, start: int = 0, end: int | None = None) -> Iterator[Cue]:
    """Every verdict cue in `text[start:end]`, weak ones included."""
    stop = len(text) if end is None else end
    previous_end = start
    found: list[tuple[int, int, str]] = []
    hits = _HITS
    near: dict[int, list[tuple[int, int]]] = {}
    for m in _CUE_RE.finditer(text, start, stop):
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
            reach = T.idiom_reach if text[s] in _ASCII else T.idiom_reach_zh
            around = (max(start, s - reach), min(stop, e + reach))
            for index in idioms:
                near.setdefault(index, []).append(around)
        if phrase is not None and _edges_ok(text, s, e):
            found.append((s, e, phrase))
    for idiom, m in _idiom_matches(text, near, stop):
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
        elif idiom.edged and not _edges_ok(text, a, b):
            continue
        if idiom.bare and not (
            not text[start:a].strip() or _BARE_LEAD.search(text, max(start, a - 12), a)
        ):
            continue
        # the idiom wins over a literal or a weaker idiom inside it ("知道有这回事就行")
        found = [f for f in found if not (f[0] < b and a < f[1])]
        found.append((a, b, marker))
    if any(map(text.__contains__, _ENOUGH_ANCHORS_EN)):
        for m in _ENOUGH_TAIL_EN.finditer(text, start, stop):
            head = _ENOUGH_HEAD_EN.search(text, max(start, m.start() - 60), m.start())
            if head is not None:
                a, b = head.start(), m.end()
                found = [f for f in found if not (f[0] < b and a < f[1])]
                found.append((a, b, ""))
    if "?" in text:
        for a, b, marker in _answers(text, start, stop):
            found = [f for f in found if not (f[0] < b and a < f[1])]
            found.append((a, b, marker))
    quoted = _mentions(text, start, stop) if found else []
    if quoted:
        found = [
            f
            for f in found
            if not any(
                a <= f[0]
                and f[1] <= b
                and (text[a] == "`" or text[a + 1 : b - 1].strip() != text[f[0] : f[1]])
                for a, b in quoted
            )
        ]
    found.sort()
    matches = found
    stops = [m.end() for m in CLAUSE_STOP.finditer(text, start, stop)] if found else []
    has_question = "?" in text
    has_self = "我" in text or "i " in text
    for i, (s, e, phrase) in enumerate(matches):
        meaning = _MARKED.get(phrase) or TERMS[phrase]
        at = bisect.bisect_right(stops, s) - 1
        clause = stops[at] if at >= 0 else start
        # A "not worth"/"不值得" right before another cue is that cue's negator.
        if meaning is Meaning.NOT_WORTH and i + 1 < len(matches):
            nxt = matches[i + 1][0]
            if nxt - e <= 8 and not CLAUSE_STOP.search(text, e, nxt):
                continue
        if phrase in _NEEDS_SUFFICIENCY:
            c_end = CLAUSE_STOP.search(text, e, stop)
            clause_text = text[clause : c_end.start() if c_end else stop]
            if not _SUFFICIENT.search(clause_text):
                continue
        if phrase in _NARRATIVE:
            if phrase[0] in _ASCII:
                lead = text[clause:s].strip()
                if lead and not _TO_READER_EN.search(lead + " "):
                    continue
            elif text[e : e + 1] in ("了", "器", "过"):
                continue
        if phrase[:1] in "不没" and s > 0 and e - s > 1 and text[s - 1] == text[s + 1]:
            continue  # "值不值得", "要不要看": a question, not a negation
        asked = SENTENCE_STOP.search(text, e, stop) if has_question else None
        if asked is not None and asked.group() == "?":
            continue  # "要细看吗?", "worth a close read?": asked, not said
        if meaning is Meaning.NOT_WORTH and text[max(start, s - 3) : s].endswith(_NOT_THAT):
            continue  # "不是不值得看": a double negative, the rest of the note decides
        verdict = VERDICT_OF[meaning]
        if verdict is Verdict.DEEP and _later(text, clause, s, e, stop):
            meaning, verdict = Meaning.SKIM, Verdict.SKIM  # "等定稿再细读", "read it once it lands"
        window = text[max(clause, previous_end, s - 24) : s]
        cut = None
        for cm in CONTRAST.finditer(window):
            cut = cm.end()
        if cut is not None:
            window = window[cut:]
        negated = soft = False
        kind = negator(window) if window else None
        if kind is not None and _FIRST_PERSON.search(window):
            previous_end = e
            continue  # "我没细看", "I haven't read it closely": the writer's own reading
        if meaning not in (Meaning.NOT_NEEDED, Meaning.NOT_WORTH, Meaning.NOTHING_TO_READ):
            if kind == "more" and _CAPPED.search(text, max(clause, s - 60), s) is None:
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
        if meaning is Meaning.NOTHING_TO_READ:
            soft = True
        elif verdict is Verdict.SKIP and not negated and _part_skipped(text, clause, s, e, stop):
            soft = True  # "代码不用读, 看那张表就够了": one part skipped, another read
        previous_end = e
        # the writer's own careful reading is a recommendation ("I read it carefully; build
        # owners should do the same"), their glance is not a verdict for the reader
        weak = phrase[:1] in (_WEAK, _VISIT, _BUDGET_MARK) or (
            has_self and verdict is not Verdict.DEEP and _SELF.search(text, clause, e) is not None
        )
        scored = phrase in _SCORED or phrase[:1] == _BUDGET_MARK
        budget = phrase[:1] == _BUDGET_MARK
        yield Cue(s, e, meaning, verdict, negated, soft, text[s:e], weak, scored, budget)


_NOT_THAT = ("不是", "并非", "并不是")
_CAPPED = re.compile(
    r"(?:\b(?:not|no|hardly|never|nobody|no\s+one|little|scarcely)\b|n't\b)[^.;]{0,30}more\s+than"
)
# The writer telling what they did ("I glanced at it", "我看了一眼就关了"), not advising.
_SELF = re.compile(
    r"(?<![a-z])i\s+(?:only\s+|just\s+|first\s+)?(?:read|skimmed|glanced|looked|opened|closed|spent"
    r"|went|checked|saw|scrolled|stopped|paged|gave|didn't|did\s+not|haven't|have\s+not)\b"
    r"|我(?:只|就|也|没|先|才)?(?:看了|读了|扫了|翻了|点开|瞄了|花了|过了)"
)
_FIRST_PERSON = re.compile(r"我|\bi\s|\bi'(?:ve|d)\b")
# A part of the PR, just before a skip cue: the rest of the note may still ask for a read.
_PART_BEFORE = re.compile(
    r"(?:代码|源码|细节|实现|diff|正文|评论区?|讨论|补丁|\b(?:the\s+)?(?:code|diff|details"
    r"|implementation|comments|thread|discussion))(?:部分|本身|层面)?[^,;:。!?.]{0,12}$"
)
_PART_AFTER = re.compile(
    r"\s*(?:打开|点开|看|读|翻|细看)?\s*(?:the\s+)?(?:diff|代码|源码|细节|实现|code|details|implementation"
    r"|rest\b|refactor|churn|boilerplate|剩下的|其余部分)"
)


def _part_skipped(text: str, clause: int, s: int, e: int, stop: int) -> bool:
    """Does a skip cue name one part of the PR ("代码不用读", "不值得打开 diff")?"""
    if _PART_BEFORE.search(text, clause, s) is not None:
        return True
    return _PART_AFTER.match(text, e, min(stop, e + 16)) is not None


# Reading put off until later: "等它定稿再细读", "read it properly once it lands".
_LATER_AFTER = re.compile(
    r"[^,;:。!?.]{0,24}?(?:\bonce\b|太早|为时过早|为时尚早|也不迟|不迟|too\s+early|too\s+soon"
    r"|premature|之后再|以后再|后再说)"
)
_LATER_BEFORE = re.compile(
    r"(?:(?:等|待)[^,;:。!?.]{1,16}?|(?:出来|合并|合入|定稿|稳定|成形|落地)(?:后|之后|以后)?)"
    r"再[^,;:。!?.]{0,4}$"
)


def _later(text: str, clause: int, s: int, e: int, stop: int) -> bool:
    """Is the reading the cue asks for put off until later?"""
    if _LATER_AFTER.match(text, e, stop) is not None:
        return True
    if "再" not in text[max(clause, s - 24) : s]:
        return False
    return _LATER_BEFORE.search(text, clause, s) is not None


# A question about reading and the answer right after it: "Should kernel people read this?
# Absolutely.", "要不要细看？要。", "Can you skip it? You really can't.", "Worth opening? No."
# What a question asks about, by the words in it.
_ASKS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern)
    for name, pattern in (
        ("who", r"\s*(?:who\b|谁)"),
        ("rhetorical", r"谁会|谁还|难道|难不成|何必|who'd|who\s+would|who\s+reads|why\s+would"),
        ("skip", r"skip|ignore|pass\s+on|excuse|能不|不细看|不看|不读"),
        ("cost", r"cost|lose|miss|吃亏|损失"),
        (
            "depth",
            r"细|仔细|认真|closely|\bclose\b|in\s+detail|deep|line\s+by\s+line|second\s+tab|carefully"
            r"|dig|sit\s+with|in\s+full|required\s+reading",
        ),
        (
            "read",
            r"read|open|need|look|skip|ignore|看|读|点开|跳过|worth|值|material|要不要|需不需要|该不该",
        ),
    )
}
_A_NO = re.compile(
    r"\s*(?:(?:for|if|to|对|对于)[^.?!;。,]{0,30},\s*)?(?:no\b|nope|not\s+(?:really|remotely|at\s+all|one)\b|hardly\b|none\b"
    r"|neither\b|nothing\b|you\s+(?:don't|really\s+can't|can't|cannot)\b|not\s+unless\b|only\s+(?:if|when)\b"
    r"|没有|没|不用|不必|不需要|不值得|不能|不)"
)
_A_YES = re.compile(
    r"\s*(?:(?:for|if|to|对|对于)[^.?!;。,]{0,30},\s*)?(?:yes\b|absolutely\b|definitely\b|without\s+question\b|of\s+course\b"
    r"|you\s+(?:will|do|should|must)\b|line\s+by\s+line\b|当然|要|需要|值得|必须|是的|应该|该)"
)
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
        (m.end() for m in CLAUSE_STOP.finditer(text, max(start, at - 80), at)),
        default=max(start, at - 80),
    )


def _said_beside(text: str, weak: Cue, cues: list[Cue]) -> bool:
    """Does a stronger statement share the sentence of a rating or time budget?"""
    begin = max((m.end() for m in SENTENCE_STOP.finditer(text, 0, weak.start)), default=0)
    end_at = SENTENCE_STOP.search(text, weak.end)
    end = end_at.start() if end_at else len(text)
    return any(begin <= c.start < end and not c.weak for c in cues)


def has_contrast(text: str, start: int, end: int) -> bool:
    """Is there a contrast word ("但", "but") in `text[start:end]`?"""
    return CONTRAST.search(text, start, end) is not None


def is_hedged(text: str, start: int, end: int) -> bool:
    return HEDGE.search(text, start, end) is not None


def weak_hint(title: str, text: str) -> tuple[Verdict, bool] | None:
    """The verdict hinted by a note that states none: (verdict, found), or None."""
    both = title + "\n" + text
    if any(a in both for a in _CLOSED_ANCHORS) and CLOSED_HINT.search(both):
        return Verdict.SKIP, True
    if any(
        squeeze(m.group()) in _WEAK_KEYS and _edges_ok(t, m.start(), m.end())
        for t in (title, text)
        for m in _WEAK_RE.finditer(t)
    ):
        return Verdict.SKIP, True
    if any(a in both for a in _OPEN_ANCHORS) and OPEN_HINT.search(both):
        return Verdict.SKIM, True
    return None
