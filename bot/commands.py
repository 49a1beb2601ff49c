"""The `/prdigest` grammar: one parser, and the help text generated from the same table.

Parsing is pure: text in, a `Command` out. Running a command is the listeners' job.
"""

from __future__ import annotations

import difflib
import enum
import html
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.render import replies
from bot.render.replies import Message
from bot.search import MAX_QUERY_CHARS, QueryError
from bot.services import Services, latest_digest, lookup, preview_digest
from bot.taxonomy import Taxonomy

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
    INVALID = "invalid"  # cannot be run; `error` says why


@dataclass(frozen=True)
class Command:
    """A parsed `/prdigest` invocation.

    `roles` holds resolved role slugs; `unknown` the words that named no role (subscribe
    and unsubscribe are all or nothing, so a non-empty `unknown` means nothing changes);
    `text` is the cleaned query for a lookup.
    """

    kind: Kind
    roles: tuple[str, ...] = ()
    text: str = ""
    unknown: tuple[str, ...] = ()
    all_roles: bool = False
    error: str = ""
    near: str = ""  # a subcommand the text looks like a typo of

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
    """Show the roles you are subscribed to."""
    return Command(Kind.LIST)


def _resolve_all(args: list[str], taxonomy: Taxonomy) -> tuple[tuple[str, ...], tuple[str, ...]]:
    slugs: list[str] = []
    unknown: list[str] = []
    for word in args:
        role = taxonomy.resolve(word)
        if role is None:
            unknown.append(word)
        elif role.slug not in slugs:
            slugs.append(role.slug)
    return tuple(slugs), tuple(unknown)


def _subscribe(args: list[str], taxonomy: Taxonomy) -> Command:
    """Get a weekly reading list for one or more roles (e.g. `subscribe moe kv`)."""
    if not args:
        return Command(
            Kind.INVALID,
            error="Name at least one role, e.g. `/prdigest subscribe moe`. "
            "`/prdigest roles` lists them.",
        )
    slugs, unknown = _resolve_all(args, taxonomy)
    return Command(Kind.SUBSCRIBE, roles=slugs, unknown=unknown)


def _unsubscribe(args: list[str], taxonomy: Taxonomy) -> Command:
    """Stop the reading list for some roles, or for `all` of them."""
    if not args:
        return Command(
            Kind.INVALID,
            error="Name a role or `all`, e.g. `/prdigest unsubscribe moe`.",
        )
    if [a.casefold() for a in args] == [ALL_WORD]:
        return Command(Kind.UNSUBSCRIBE, all_roles=True)
    slugs, unknown = _resolve_all(args, taxonomy)
    return Command(Kind.UNSUBSCRIBE, roles=slugs, unknown=unknown)


def _lookup(args: list[str], taxonomy: Taxonomy) -> Command:
    """A role's notes, best reads first (e.g. `moe`, `mm`, `infra`)."""
    return Command(Kind.LOOKUP, text=" ".join(args))


def _search(args: list[str], taxonomy: Taxonomy) -> Command:
    """Search titles and notes, Chinese or English (e.g. `量化`, `fp8 marlin`)."""
    return Command(Kind.LOOKUP, text=" ".join(args))


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand("help", "help", _help),
    Subcommand("roles", "roles", _roles),
    Subcommand("subscribe", "subscribe <role> [<role> ...]", _subscribe),
    Subcommand("unsubscribe", "unsubscribe <role>|all", _unsubscribe),
    Subcommand("list", "list", _list),
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
            error=f"That is {len(cleaned):,} characters; queries are limited to "
            f"{MAX_QUERY_CHARS}. Try a few keywords.",
        )
    words = cleaned.split()
    head = words[0].casefold()
    subcommand = _BY_NAME.get(head)
    if subcommand is not None:
        # A role or phrase that happens to start with a subcommand word still reads as one.
        if subcommand.name in ("roles", "list") and len(words) > 1:
            return _lookup_command(cleaned, taxonomy)
        return subcommand.parse(words[1:], taxonomy)
    return _lookup_command(cleaned, taxonomy)


def _lookup_command(cleaned: str, taxonomy: Taxonomy) -> Command:
    words = cleaned.split()
    parser = _lookup if taxonomy.resolve(cleaned) is not None else _search
    command = parser(words, taxonomy)
    if len(words) == 1:
        close = difflib.get_close_matches(words[0].casefold(), list(_BY_NAME), n=1, cutoff=0.75)
        if close:
            return Command(command.kind, text=command.text, near=close[0])
    return command


def help_lines() -> list[tuple[str, str]]:
    """(usage, summary) for every row of the grammar, as help shows them."""
    rows = [*SUBCOMMANDS, *FALLBACKS]
    return [(f"{COMMAND_NAME} {row.usage}", row.summary) for row in rows]


def help_text() -> str:
    """The plain-text help, generated from the grammar table."""
    lines = [f"`{usage}` — {summary}" for usage, summary in help_lines()]
    return "\n".join(lines)


# --------------------------------------------------------------------------- running commands
# What the Slack listeners call: a parsed command and who asked, in; a reply payload, out.


def run_command(services: Services, command: Command, team_id: str, user_id: str) -> Message:
    """Carry out a parsed command for one user and build the reply."""
    taxonomy = services.taxonomy
    if command.kind is Kind.HELP:
        return replies.help_reply(help_lines())
    if command.kind is Kind.ROLES:
        return replies.roles_reply(taxonomy)
    if command.kind is Kind.INVALID:
        return replies.error_reply(command.error)
    if command.kind is Kind.LIST:
        return replies.list_reply(services.store.subscriptions_of(team_id, user_id), taxonomy)
    if command.kind in (Kind.SUBSCRIBE, Kind.UNSUBSCRIBE):
        return change_subscriptions(
            services,
            team_id,
            user_id,
            command.roles,
            subscribe=command.kind is Kind.SUBSCRIBE,
            unknown=command.unknown,
            all_roles=command.all_roles,
        )
    return lookup_page(services, command.text, 0, near=command.near)


def lookup_page(services: Services, text: str, offset: int, near: str = "") -> Message:
    """One page of `/prdigest <role or text>`, starting at `offset`."""
    try:
        result = lookup(services, text, limit=services.settings.page_size, offset=offset)
    except QueryError as exc:
        return replies.error_reply(f"{exc}. Try a few keywords.")
    return replies.lookup_reply(
        result.query.text,
        result.role,
        result.page.notes,
        result.page.total,
        offset,
        services.taxonomy,
        suggestions=result.suggestions,
        near=near,
    )


def change_subscriptions(
    services: Services,
    team_id: str,
    user_id: str,
    roles: Sequence[str],
    *,
    subscribe: bool,
    unknown: Sequence[str] = (),
    all_roles: bool = False,
) -> Message:
    """Subscribe or unsubscribe, all or nothing: an unknown role word changes nothing."""
    taxonomy = services.taxonomy
    verb = "subscribe" if subscribe else "unsubscribe"
    if unknown:
        hints = {word: tuple(taxonomy.suggest(word)) for word in unknown}
        return replies.unknown_roles_reply(verb, unknown, hints)
    store = services.store
    if subscribe:
        added = store.subscribe(team_id, user_id, roles)
        already = [r for r in roles if r not in added]
        return replies.subscription_change_reply(added, already, taxonomy, subscribe=True)
    removed = store.unsubscribe(team_id, user_id, None if all_roles else roles)
    missing = [] if all_roles else [r for r in roles if r not in removed]
    return replies.subscription_change_reply(removed, missing, taxonomy, subscribe=False)


def app_home(services: Services, team_id: str, user_id: str, now: datetime) -> dict[str, Any]:
    """The Home tab of one user: the latest digest's notes for their roles (before the
    first digest, this week's), or else the newest notes of those roles."""
    mine = services.store.subscriptions_of(team_id, user_id)
    wanted = set(mine)
    latest = latest_digest(services)
    digest = latest or preview_digest(services, None, now)
    label = f"Latest digest ({digest.week})" if latest else f"This week ({digest.week})"
    if wanted:
        notes = [n for n in digest.notes if wanted.intersection(n.roles)]
        notes.sort(key=lambda n: min(n.verdict_for(r).rank for r in wanted & set(n.roles)))
        title = f"{label} for your roles"
        if not notes:
            title = "Newest notes for your roles"
            for slug in mine:
                notes.extend(services.store.role_notes(slug, limit=replies.HOME_NOTES).notes)
    else:
        notes = list(digest.top_deep_reads(replies.HOME_NOTES))
        title = f"{label}: top deep reads"
    return replies.home_view(services.taxonomy, mine, notes, title)
