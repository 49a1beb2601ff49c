"""The `/prdigest` grammar: one parser, and the help text generated from the same table.

Parsing is pure: text in, a `Command` out. Running a command is the listeners' job.
"""

from __future__ import annotations

import difflib
import enum
import html
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from bot.classify.taxonomy import Taxonomy
from bot.domain import Note, Verdict
from bot.i18n.texts import N_, LazyText, Texts, lazy_text
from bot.notes.digest import now_utc, week_bounds, week_label
from bot.notes.search import MAX_QUERY_CHARS, QueryError, text_query
from bot.readers import dm_settings, preferences
from bot.readers.preferences import MAX_PAUSE_DAYS, MAX_WATCH_CHARS
from bot.render import reader_settings, replies
from bot.render.blocks import escaped
from bot.render.digest_blocks import addition_label, digest_title
from bot.render.replies import Message
from bot.services import (
    PostedThread,
    Services,
    latest_digest,
    lookup,
    preview_digest,
    week_digest,
)
from bot.store.ledger import Ledger

COMMAND_NAME = "/prdigest"
ALL_WORD = "all"


class Kind(enum.StrEnum):
    """What a `/prdigest` invocation asks for."""

    HELP = "help"
    ROLES = "roles"
    LOOKUP = "lookup"  # a role or alias, or free text
    SUBSCRIBE = "subscribe"
    UNSUBSCRIBE = "unsubscribe"
    LIST = "list"
    WATCH = "watch"
    UNWATCH = "unwatch"
    PAUSE = "pause"
    RESUME = "resume"
    WEEK = "week"
    BUDGET = "budget"
    DM = "dm"
    LANG = "lang"
    INVALID = "invalid"  # cannot be run; `error` says why


@dataclass(frozen=True)
class Command:
    """A parsed `/prdigest` invocation.

    `roles` holds resolved role slugs; `unknown` the words that named no role (subscribe
    and unsubscribe are all or nothing, so a non-empty `unknown` means nothing changes);
    `text` is the cleaned query for a lookup (for `lang`, the language chosen);
    `error` says in the reader's language why an INVALID command cannot be run.
    """

    kind: Kind
    roles: tuple[str, ...] = ()
    text: str = ""
    unknown: tuple[str, ...] = ()
    all_roles: bool = False
    error: LazyText | None = None
    near: str = ""  # a subcommand the text looks like a typo of
    level: Verdict | None = None  # subscribe: the least verdict wanted (None: every note)
    level_given: bool = False  # subscribe named a filter (`deep`, `skim`, `all`)
    days: int = 0  # pause: for this many days ...
    until: date | None = None  # ... or until this day
    budget: int | None = None  # budget: notes in full (0: all; None with `text` "": show)
    weekday: int | None = None  # dm: 0 is Monday ...
    at: time | None = None  # ... at this wall-clock time

    @property
    def ok(self) -> bool:
        return self.kind is not Kind.INVALID and not self.unknown


Parser = Callable[[list[str], Taxonomy], Command]


@dataclass(frozen=True)
class Subcommand:
    """One row of the grammar: its name, its usage line and the parser whose docstring is
    the help text."""

    name: str
    usage: str
    parse: Parser

    @property
    def summary(self) -> str:
        doc = self.parse.__doc__ or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""


def _help(args: list[str], taxonomy: Taxonomy) -> Command:
    """Show this help."""
    return Command(Kind.HELP)


def _roles(args: list[str], taxonomy: Taxonomy) -> Command:
    """List the reader roles with their names and aliases."""
    return Command(Kind.ROLES)


def _list(args: list[str], taxonomy: Taxonomy) -> Command:
    """Show your subscriptions (with filters), your watches and a pause."""
    return Command(Kind.LIST)


def _resolve_all(args: list[str], taxonomy: Taxonomy) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return taxonomy.resolve_all(args)


# Verdict filters of `subscribe`: the least verdict wanted; "all" clears the filter.
LEVEL_WORDS: dict[str, Verdict | None] = {
    "deep": Verdict.DEEP,
    "精读": Verdict.DEEP,
    "skim": Verdict.SKIM,
    "浏览": Verdict.SKIM,
    "快速浏览": Verdict.SKIM,
    ALL_WORD: None,
    "全部": None,
}
_NOT_LEVELS = ("skip", "可略过")


def _level_error(word: str) -> LazyText:
    return lazy_text(
        "`{word}` is not a verdict filter. Add `deep` (deep reads only), `skim` (deep and "
        "skim reads) or `all` (every note) after the roles, e.g. `/prdigest subscribe moe "
        "deep`. Nothing was changed.",
        word=escaped(word, 60),
    )


def _subscribe(args: list[str], taxonomy: Taxonomy) -> Command:
    """Weekly reading list for roles; `deep` or `skim` keeps only those (`subscribe moe deep`).

    `all` clears a filter; without a filter word an existing filter is kept."""
    levels = [w for w in args if w.casefold() in LEVEL_WORDS and taxonomy.resolve(w) is None]
    words = [w for w in args if w not in levels]
    if len(levels) > 1:
        return Command(
            Kind.INVALID,
            error=lazy_text("Name one verdict filter (`deep`, `skim` or `all`), not several."),
        )
    for word in words:
        if taxonomy.resolve(word) is not None:
            continue
        folded = word.casefold()
        if folded in _NOT_LEVELS or difflib.get_close_matches(folded, LEVEL_WORDS, cutoff=0.75):
            return Command(Kind.INVALID, error=_level_error(word))
    if not words:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "Name at least one role, e.g. `/prdigest subscribe moe`. "
                "`/prdigest roles` lists them."
            ),
        )
    slugs, unknown = _resolve_all(words, taxonomy)
    level = LEVEL_WORDS[levels[0].casefold()] if levels else None
    return Command(
        Kind.SUBSCRIBE, roles=slugs, unknown=unknown, level=level, level_given=bool(levels)
    )


def _unsubscribe(args: list[str], taxonomy: Taxonomy) -> Command:
    """Stop the reading list for some roles, or for `all` of them."""
    if not args:
        return Command(
            Kind.INVALID,
            error=lazy_text("Name a role or `all`, e.g. `/prdigest unsubscribe moe`."),
        )
    if [a.casefold() for a in args] == [ALL_WORD]:
        return Command(Kind.UNSUBSCRIBE, all_roles=True)
    slugs, unknown = _resolve_all(args, taxonomy)
    return Command(Kind.UNSUBSCRIBE, roles=slugs, unknown=unknown)


def _watch(args: list[str], taxonomy: Taxonomy) -> Command:
    """Add the new notes with all these words to your weekly DM (e.g. `watch fp8 marlin`)."""
    text = " ".join(args)
    if not text:
        return Command(
            Kind.INVALID,
            error=lazy_text("Name what to watch, e.g. `/prdigest watch fp8 marlin`."),
        )
    if len(text) > MAX_WATCH_CHARS:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "That search is {count:,} characters; a watch is limited to {limit}. "
                "Try a few keywords. Nothing was changed.",
                count=len(text),
                limit=MAX_WATCH_CHARS,
            ),
        )
    if taxonomy.resolve(text) is None and not text_query(text).terms:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "“{text}” has no words to search for (letters, digits or Chinese "
                "characters). Nothing was changed.",
                text=escaped(text, 60),
            ),
        )
    return Command(Kind.WATCH, text=text)


def _unwatch(args: list[str], taxonomy: Taxonomy) -> Command:
    """Stop watching a search, or `all` of them."""
    if not args:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "Name the search to stop watching, or `all`, e.g. "
                "`/prdigest unwatch fp8 marlin`. `/prdigest list` shows your watches."
            ),
        )
    if [a.casefold() for a in args] == [ALL_WORD]:
        return Command(Kind.UNWATCH, all_roles=True)
    return Command(Kind.UNWATCH, text=" ".join(args)[: MAX_WATCH_CHARS * 2])


# Numbers are ASCII digits: `\d` also takes "٣", which `int` reads as 3.
_DURATION = re.compile(r"^([0-9]{1,4})\s*(d|day|days|w|wk|week|weeks)$")
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def _pause(args: list[str], taxonomy: Taxonomy) -> Command:
    """Pause your weekly DMs (`pause 2w`, `pause 3d`, `pause until 2026-12-24`)."""
    text = " ".join(args).casefold()
    if text.startswith("until "):
        day = text.removeprefix("until ").strip()
        try:
            until = date.fromisoformat(day) if _DATE.match(day) else None
        except ValueError:
            until = None
        if until is None:
            return Command(
                Kind.INVALID,
                error=lazy_text(
                    "`{day}` is not a date such as 2026-12-24. Nothing was changed.",
                    day=escaped(day, 40),
                ),
            )
        return Command(Kind.PAUSE, until=until)
    found = _DURATION.match(text)
    if not found:
        error = (
            lazy_text(
                "`{text}` is not a duration: e.g. `/prdigest pause 2w`, `/prdigest pause 3d` "
                "or `/prdigest pause until 2026-12-24`. Nothing was changed.",
                text=escaped(text, 40),
            )
            if text
            else lazy_text(
                "Say for how long: e.g. `/prdigest pause 2w`, `/prdigest pause 3d` "
                "or `/prdigest pause until 2026-12-24`. Nothing was changed."
            )
        )
        return Command(Kind.INVALID, error=error)
    days = int(found.group(1)) * (7 if found.group(2).startswith("w") else 1)
    if not 1 <= days <= MAX_PAUSE_DAYS:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "A pause lasts from 1 to {days} days. Nothing was changed.", days=MAX_PAUSE_DAYS
            ),
        )
    return Command(Kind.PAUSE, days=days)


def _resume(args: list[str], taxonomy: Taxonomy) -> Command:
    """End a pause now; the next weekly DM brings what you missed."""
    return Command(Kind.RESUME)


_WEEK_LABEL = re.compile(r"^([0-9]{4})-?w([0-9]{1,2})$")


def _week(args: list[str], taxonomy: Taxonomy) -> Command:
    """This week's digest (`week moe` for one role, `week 2026-W47` for an earlier week)."""
    label = ""
    roles: list[str] = []
    for word in args:
        folded = word.casefold()
        found = _WEEK_LABEL.match(folded)
        if found or (folded[:4].isdigit() and taxonomy.resolve(word) is None):
            week = f"{found.group(1)}-W{int(found.group(2)):02d}" if found else ""
            try:
                date.fromisocalendar(int(week[:4]), int(week[6:]), 1)
            except ValueError:
                week = ""
            if not week or label:
                return Command(
                    Kind.INVALID,
                    error=lazy_text(
                        "`{word}` is not an ISO week such as `2026-W47`; "
                        "`/prdigest week` shows this week.",
                        word=escaped(word, 40),
                    ),
                )
            label = week
            continue
        role = taxonomy.resolve(word)
        if role is None or roles:
            error = (
                lazy_text(
                    "`{word}` is not a role: `/prdigest week moe` shows one role, "
                    "`/prdigest week 2026-W47` an earlier week. `/prdigest roles` lists the roles.",
                    word=escaped(word, 40),
                )
                if role is None
                else lazy_text(
                    "Name one role: `/prdigest week moe` shows one role, "
                    "`/prdigest week 2026-W47` an earlier week. `/prdigest roles` lists the roles."
                )
            )
            return Command(Kind.INVALID, error=error)
        roles.append(role.slug)
    return Command(Kind.WEEK, text=label, roles=tuple(roles))


def _budget(args: list[str], taxonomy: Taxonomy) -> Command:
    """How many notes your weekly DM shows in full, best first (`budget 3`, `budget all`).

    The rest are counted in the DM, with a button that lists them."""
    text = " ".join(args).casefold()
    if not text:
        return Command(Kind.BUDGET, text="show")
    if text in (ALL_WORD, "全部"):
        return Command(Kind.BUDGET, text="set", budget=0)
    if text in ("default", "默认"):
        return Command(Kind.BUDGET, text="default")
    if re.fullmatch(r"[0-9]{1,3}", text) and 1 <= int(text) <= reader_settings.MAX_BUDGET:
        return Command(Kind.BUDGET, text="set", budget=int(text))
    return Command(Kind.INVALID, error=reader_settings.budget_usage_error(" ".join(args)))


# Days of the week as a reader may write them: English names and abbreviations, and
# 周一 … 周日 / 星期一 … 星期日 (天 for Sunday too).
_EN_DAYS = (
    ("mon", "monday"),
    ("tue", "tues", "tuesday"),
    ("wed", "weds", "wednesday"),
    ("thu", "thur", "thurs", "thursday"),
    ("fri", "friday"),
    ("sat", "saturday"),
    ("sun", "sunday"),
)
_ZH_DAYS = ("一", "二", "三", "四", "五", "六", "日")
WEEKDAY_WORDS: dict[str, int] = {
    **{word: day for day, words in enumerate(_EN_DAYS) for word in words},
    **{f"{head}{ch}": day for day, ch in enumerate(_ZH_DAYS) for head in ("周", "星期", "礼拜")},
    **{f"{head}天": 6 for head in ("周", "星期", "礼拜")},
}
_CLOCK = re.compile(r"^([0-9]{1,2}):([0-9]{2})$")  # 24-hour clock, ASCII digits


def _dm(args: list[str], taxonomy: Taxonomy) -> Command:
    """Your weekly DM's day and time in your time zone (`dm mon 09:00`), `dm off`, `dm on`.

    `dm` alone shows the setting and when the next DM comes."""
    words = [w.casefold() for w in args]
    if not words:
        return Command(Kind.DM, text="show")
    if len(words) == 1 and words[0] in ("off", "on", "default"):
        return Command(Kind.DM, text=words[0])
    if len(words) == 1:
        words = _split_day_and_time(words[0])
    if len(words) == 2 and words[0] in WEEKDAY_WORDS:
        found = _CLOCK.match(words[1])
        if found and int(found.group(1)) < 24 and int(found.group(2)) < 60:
            at = time(int(found.group(1)), int(found.group(2)))
            return Command(Kind.DM, text="set", weekday=WEEKDAY_WORDS[words[0]], at=at)
    return Command(Kind.INVALID, error=reader_settings.dm_usage_error(" ".join(args)))


def _split_day_and_time(word: str) -> list[str]:
    """ "周一9:00" (written without a space) -> ["周一", "9:00"]."""
    for day in sorted(WEEKDAY_WORDS, key=len, reverse=True):
        if word.startswith(day) and _CLOCK.match(word[len(day) :]):
            return [day, word[len(day) :]]
    return [word]


# What `lang` takes: a catalogue's code, or `auto` (Slack's language for the reader).
LANGUAGE_WORDS = {
    "zh": "zh",
    "中文": "zh",
    "chinese": "zh",
    "en": "en",
    "english": "en",
    "英文": "en",
    "auto": preferences.AUTO_LANGUAGE,
    "自动": preferences.AUTO_LANGUAGE,
}


def _lang(args: list[str], taxonomy: Taxonomy) -> Command:
    """Your language: `lang zh` (Chinese), `lang en` (English), `lang auto` (as in Slack)."""
    if not args:
        return Command(Kind.LANG)
    choice = LANGUAGE_WORDS.get(" ".join(args).casefold())
    if choice is None:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "`{word}` is not a language: `/prdigest lang zh` (Chinese), `/prdigest lang en` "
                "(English) or `/prdigest lang auto` (the language Slack shows you). "
                "Nothing was changed.",
                word=escaped(" ".join(args), 40),
            ),
        )
    return Command(Kind.LANG, text=choice)


def _lookup(args: list[str], taxonomy: Taxonomy) -> Command:
    """A role's notes, best reads first (e.g. `moe`, `mm`, `infra`)."""
    return Command(Kind.LOOKUP, text=" ".join(args))


def _search(args: list[str], taxonomy: Taxonomy) -> Command:
    """Search titles and notes, Chinese or English (e.g. `量化`, `fp8 marlin`)."""
    return Command(Kind.LOOKUP, text=" ".join(args))


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("help", "help", _help),
    Subcommand("roles", "roles", _roles),
    Subcommand("subscribe", "subscribe <role> [<role> ...] [deep|skim|all]", _subscribe),
    Subcommand("unsubscribe", "unsubscribe <role>|all", _unsubscribe),
    Subcommand("list", "list", _list),
    Subcommand("watch", "watch <words>", _watch),
    Subcommand("unwatch", "unwatch <words>|all", _unwatch),
    Subcommand("pause", "pause <2w|3d|until YYYY-MM-DD>", _pause),
    Subcommand("resume", "resume", _resume),
    Subcommand("week", "week [<role>] [YYYY-Www]", _week),
    Subcommand("budget", "budget [<1-20>|all|default]", _budget),
    Subcommand("dm", "dm [<day> <HH:MM>|off|on|default]", _dm),
    Subcommand("lang", "lang [zh|en|auto]", _lang),
)
"""Named subcommands, in the order help shows them."""

FALLBACKS: tuple[Subcommand, ...] = (
    Subcommand("", "<role or alias>", _lookup),
    Subcommand("", "<free text>", _search),
)
"""What any other text means; shown in help after the named subcommands."""

_BY_NAME = {s.name: s for s in SUBCOMMANDS}


def clean_text(text: str) -> str:
    """Undo Slack's entity escaping, drop invisible format characters (zero-width, bidi
    marks), fold compatibility forms, collapse whitespace."""
    unescaped = html.unescape(text) if "&" in text else text
    visible = "".join(
        " " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else ch
        for ch in unescaped
        if unicodedata.category(ch) != "Cf"
    )
    return " ".join(unicodedata.normalize("NFKC", visible).split())


def parse_command(text: str, taxonomy: Taxonomy) -> Command:
    """Turn the text after `/prdigest` into a Command. Never raises."""
    cleaned = clean_text(text)
    if not cleaned:
        return Command(Kind.HELP)
    if len(cleaned) > MAX_QUERY_CHARS:
        return Command(
            Kind.INVALID,
            error=lazy_text(
                "That is {count:,} characters; queries are limited to {limit}. Try a few keywords.",
                count=len(cleaned),
                limit=MAX_QUERY_CHARS,
            ),
        )
    words = cleaned.split()
    head = words[0].casefold()
    subcommand = _BY_NAME.get(head)
    if subcommand is not None:
        # A role or phrase that happens to start with a subcommand word still reads as one.
        if subcommand.name in ("roles", "list", "resume") and len(words) > 1:
            return _lookup_command(cleaned, taxonomy)
        return subcommand.parse(words[1:], taxonomy)
    return _lookup_command(cleaned, taxonomy)


# Subcommands that take words after them: a typo of one (`subscrbe moe`) is still
# searched, and the reply asks whether the subcommand was meant.
_TAKES_WORDS = (
    "subscribe",
    "unsubscribe",
    "watch",
    "unwatch",
    "pause",
    "week",
    "budget",
    "lang",
)


def _lookup_command(cleaned: str, taxonomy: Taxonomy) -> Command:
    words = cleaned.split()
    parser = _lookup if taxonomy.resolve(cleaned) is not None else _search
    command = parser(words, taxonomy)
    head = words[0].casefold()
    if len(words) == 1:
        close = difflib.get_close_matches(head, list(_BY_NAME), n=1, cutoff=0.75)
        if close:
            return Command(command.kind, text=command.text, near=close[0])
    elif head not in _BY_NAME and taxonomy.resolve(words[0]) is None:
        close = difflib.get_close_matches(head, _TAKES_WORDS, n=1, cutoff=0.8)
        if close:
            near = " ".join([close[0], *words[1:]])
            return Command(command.kind, text=command.text, near=near)
    return command


def help_lines(t: Texts) -> list[tuple[str, str]]:
    """(usage, summary) for every row of the grammar, as help shows them: the catalogues
    hold each usage line and summary (`bot.i18n.catalogues` extracts them from the table)."""
    rows = [*SUBCOMMANDS, *FALLBACKS]
    return [(f"{COMMAND_NAME} {t.gettext(row.usage)}", t.gettext(row.summary)) for row in rows]


def help_text(t: Texts) -> str:
    """The plain-text help, generated from the grammar table."""
    lines = [f"`{usage}` — {summary}" for usage, summary in help_lines(t)]
    return "\n".join(lines)


# --------------------------------------------------------------------------- running commands
# What the Slack listeners call: a parsed command and who asked, in; a reply payload, out.


def run_command(
    services: Services,
    command: Command,
    team_id: str,
    user_id: str,
    t: Texts,
    now: datetime | None = None,
) -> Message:
    """Carry out a parsed command for one user and build the reply in their language `t`.

    The reader's time zone is their cached Slack profile: the listener's `reader_texts`
    has just asked Slack for it when it was a day old."""
    taxonomy = services.taxonomy
    now = now or now_utc()
    if command.kind is Kind.HELP:
        return replies.help_reply(help_lines(t), t)
    if command.kind is Kind.ROLES:
        return replies.roles_reply(taxonomy, t)
    if command.kind is Kind.INVALID:
        return replies.error_reply(t.say(command.error or lazy_text("That command is not valid.")))
    if command.kind is Kind.LIST:
        reader = services.store.readers.reader(team_id, user_id)
        return replies.list_reply(reader, taxonomy, now, services.settings.zone, t)
    if command.kind is Kind.WATCH:
        return preferences.watch(
            services, team_id, user_id, command.text, _lookup_of(command.text, taxonomy), t
        )
    if command.kind is Kind.UNWATCH:
        query = None if command.all_roles else command.text
        return preferences.unwatch(services, team_id, user_id, query, t)
    if command.kind is Kind.PAUSE:
        return preferences.pause(services, team_id, user_id, now, command.days, command.until, t)
    if command.kind is Kind.RESUME:
        return preferences.resume(services, team_id, user_id, now, t)
    if command.kind is Kind.LANG:
        return preferences.language(services, team_id, user_id, command.text or None, t)
    if command.kind is Kind.BUDGET:
        return dm_settings.budget(services, team_id, user_id, command.text, command.budget, t)
    if command.kind is Kind.DM:
        profile = services.store.readers.profile(team_id, user_id)
        return dm_settings.dm(
            services, team_id, user_id, now, profile, t, command.text, command.weekday, command.at
        )
    if command.kind is Kind.WEEK:
        week = command.text or week_label(now, services.settings.zone)
        return week_page(services, " ".join([week, *command.roles]), 0, t, now)
    if command.kind in (Kind.SUBSCRIBE, Kind.UNSUBSCRIBE):
        return change_subscriptions(
            services,
            team_id,
            user_id,
            command.roles,
            t,
            subscribe=command.kind is Kind.SUBSCRIBE,
            unknown=command.unknown,
            all_roles=command.all_roles,
            level=command.level if command.level_given else KEEP_LEVEL,
        )
    return lookup_page(services, command.text, 0, t, near=command.near)


def _lookup_of(text: str, taxonomy: Taxonomy) -> str | None:
    """The `/prdigest` command that looks `text` up, or None when it would read as another
    subcommand (`week moe`, `pause now`)."""
    parsed = parse_command(text, taxonomy)
    if parsed.kind is not Kind.LOOKUP or parsed.text != text:
        return None
    return f"{COMMAND_NAME} {text}"


_WEEK_INTROS = {
    "posted": N_("The digest as posted, thread by thread, with its additions."),
    "upcoming": N_("Not posted yet: the notes the next digest will hold."),
    "ingested": N_("No digest was posted that week: the notes ingested then."),
}
_WEEK_EMPTY = {
    "posted": N_("the digest posted that week holds none"),
    "upcoming": N_("nothing new for the next digest yet"),
    "ingested": N_("no digest was posted that week, and no note ingested then"),
}


def week_page(
    services: Services, query: str, offset: int, t: Texts, now: datetime | None = None
) -> Message:
    """One page of `/prdigest week`: `query` is the week label and a role slug, if any
    (what the More button carries)."""
    now = now or now_utc()
    label, *rest = query.split() or [""]
    role = services.taxonomy.resolve(rest[0]) if rest else None
    try:
        start, _end = week_bounds(label, services.settings.zone)
    except ValueError:
        return replies.error_reply(t.gettext("That week is not an ISO week such as `2026-W47`."))
    if start > now:
        return replies.error_reply(
            t.gettext("{week} has not started yet; `/prdigest week` shows this week.", week=label)
        )
    found = week_digest(services, label, now)
    digest = found.digest
    headings: list[str] | None = None
    if role is None and found.threads:
        # As the channel shows it: a note fixed since stays in the thread it was posted in.
        threads = found.threads
        items = [(n, thread.role.slug) for thread in threads for n in thread.notes]
        headings = [_thread_heading(thread, t) for thread in threads for _ in thread.notes]
    elif role is None:
        items = [(n, s.role.slug) for s in digest.sections for n in s.notes]
        headings = [t.role_name(s.role) for s in digest.sections for _ in s.notes]
    else:
        posted_in = {
            n.id for thread in found.threads if thread.role.slug == role.slug for n in thread.notes
        }
        members = [n for n in digest.notes if role.slug in n.roles or n.id in posted_in]
        members.sort(key=lambda n: (n.verdict_for(role.slug).rank, -n.ingested_at.timestamp()))
        items = [(n, role.slug) for n in members]
    marks = {
        n.id: t.gettext(
            "fixed since posting: now {role}/{verdict}",
            role=n.primary_role,
            verdict=t.verdict_word(n.verdict),
        )
        for n in digest.notes
        if n.id in found.fixed_since
    }
    scope = f" · {t.role_name(role)}" if role else ""
    title = digest_title(label, False, t) + scope
    intro = t.gettext(_WEEK_INTROS[found.source])
    if not items[offset:]:
        shown = escaped(title, 200)
        if offset:
            return replies.message(
                t.gettext(
                    "{title}: No more notes for {role}. {intro}",
                    title=shown,
                    role=role.slug,
                    intro=intro,
                )
                if role
                else t.gettext("{title}: No more notes. {intro}", title=shown, intro=intro)
            )
        why = t.gettext(_WEEK_EMPTY[found.source])
        return replies.message(
            t.gettext("{title}: No notes for {role}: {why}.", title=shown, role=role.slug, why=why)
            if role
            else t.gettext("{title}: No notes: {why}.", title=shown, why=why)
        )
    more = replies.MorePage(query, 0, replies.MorePage.WEEK)
    end = offset + services.settings.page_size
    return replies.note_page(
        title,
        items[offset:end],
        len(items),
        offset,
        more,
        services.taxonomy,
        t,
        headings=headings[offset:end] if headings is not None else None,
        marks=marks,
        intro=intro,
    )


def left_out_page(services: Services, run_key: str, offset: int, t: Texts) -> Message:
    """One page of the notes a reader's DM left out over their budget (what its closing
    button carries is the DM's key), best first."""
    dm = Ledger(services.store.engine).reader_dm_by_key(run_key)
    if dm is None or not dm.left_out:
        return reader_settings.left_out_gone(t)
    found = {n.id: n for n in services.store.get_notes([i for i, _ in dm.left_out])}
    items = [(found[i], role or None) for i, role in dm.left_out if i in found]
    if not items[offset:]:
        return reader_settings.left_out_gone(t)
    end = offset + services.settings.page_size
    return replies.note_page(
        reader_settings.left_out_title(dm.week, t),
        items[offset:end],
        len(items),
        offset,
        replies.MorePage(run_key, 0, replies.MorePage.LEFT_OUT),
        services.taxonomy,
        t,
    )


def _thread_heading(thread: PostedThread, t: Texts) -> str:
    name = t.role_name(thread.role)
    return f"{name} · {addition_label(t)}" if thread.addition else name


def lookup_page(services: Services, text: str, offset: int, t: Texts, near: str = "") -> Message:
    """One page of `/prdigest <role or text>`, starting at `offset`."""
    try:
        result = lookup(services, text, limit=services.settings.page_size, offset=offset)
    except QueryError:
        return replies.error_reply(
            t.gettext(
                "That is {count:,} characters; queries are limited to {limit}. Try a few keywords.",
                count=len(text),
                limit=MAX_QUERY_CHARS,
            )
        )
    return replies.lookup_reply(
        result.query.text,
        result.role,
        result.page.notes,
        result.page.total,
        offset,
        services.taxonomy,
        t,
        suggestions=result.suggestions,
        near=near,
        capped=result.page.capped,
        any_word=result.page.any_word,
    )


class _KeepLevel(enum.Enum):
    KEEP = "keep"


KEEP_LEVEL = _KeepLevel.KEEP
"""Subscribe without touching the filter of existing subscriptions."""


def change_subscriptions(
    services: Services,
    team_id: str,
    user_id: str,
    roles: Sequence[str],
    t: Texts,
    *,
    subscribe: bool,
    unknown: Sequence[str] = (),
    all_roles: bool = False,
    level: Verdict | _KeepLevel | None = KEEP_LEVEL,
) -> Message:
    """Subscribe or unsubscribe, all or nothing: an unknown role word changes nothing.

    A subscription made without a filter gets every note; re-subscribing without one
    (a button, or `subscribe moe` again) keeps the filter it has.
    """
    taxonomy = services.taxonomy
    if unknown:
        hints = {word: tuple(taxonomy.suggest(word)) for word in unknown}
        return replies.unknown_roles_reply(subscribe, unknown, hints, t)
    store = services.store
    if subscribe:
        new_level = None if isinstance(level, _KeepLevel) else level
        added = store.subscribe(team_id, user_id, roles, new_level)
        existing = [r for r in roles if r not in added]
        changed: list[str] = []
        if existing and not isinstance(level, _KeepLevel):
            changed = store.readers.set_level(team_id, user_id, existing, level)
        levels = {s.role: s.level for s in store.readers.role_subscriptions(team_id, user_id)}
        already = [r for r in existing if r not in changed]
        return replies.subscribe_reply(added, changed, already, levels, taxonomy, t)
    removed = store.unsubscribe(team_id, user_id, None if all_roles else roles)
    missing = [] if all_roles else [r for r in roles if r not in removed]
    return replies.unsubscribe_reply(removed, missing, taxonomy, t)


def app_home(
    services: Services, team_id: str, user_id: str, now: datetime, t: Texts
) -> dict[str, Any]:
    """The Home tab of one user: when their DMs go out and how many notes they show, and
    the latest digest's notes for their roles (before the first digest, this week's), or
    else the newest notes of those roles. The reader's time zone is their cached Slack
    profile (the listener's `reader_texts` asks Slack once a day)."""
    reader = services.store.readers.reader(team_id, user_id)
    times = dm_settings.dm_times(
        services, team_id, user_id, reader.settings, reader.profile, reader.pause, now
    )
    budget = dm_settings.reader_budget(services.settings, reader.settings)
    reads = bool(reader.roles or reader.watches)
    dm_line = reader_settings.home_settings_line(times, budget, t) if reads else ""
    mine = [s.role for s in reader.roles]
    latest = latest_digest(services)
    digest = latest or preview_digest(services, None, now)
    if mine:

        def best(note: Note) -> int:
            return min(note.verdict_for(s.role).rank for s in reader.roles if s.accepts(note))

        notes = [n for n in digest.notes if any(s.accepts(n) for s in reader.roles)]
        notes.sort(key=best)
        title = (
            t.gettext("Latest digest ({week}) for your roles", week=digest.week)
            if latest
            else t.gettext("This week ({week}) for your roles", week=digest.week)
        )
        if not notes:
            title = t.gettext("Newest notes for your roles")
            for slug in mine:
                notes.extend(services.store.role_notes(slug, limit=replies.HOME_NOTES).notes)
    else:
        notes = list(digest.top_deep_reads(replies.HOME_NOTES))
        title = (
            t.gettext("Latest digest ({week}): top deep reads", week=digest.week)
            if latest
            else t.gettext("This week ({week}): top deep reads", week=digest.week)
        )
    return replies.home_view(
        services.taxonomy, reader, notes, title, now, services.settings.zone, t, dm_line=dm_line
    )
