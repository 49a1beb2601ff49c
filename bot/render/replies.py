"""Block Kit for `/prdigest` replies and the App Home view.

Every builder is a pure function returning a message dict (`text` fallback plus `blocks`)
or a view dict; the listeners send them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar
from zoneinfo import ZoneInfo

from bot.classify.taxonomy import Taxonomy
from bot.domain import Note, Pause, Reader, Role, Verdict, count_text
from bot.i18n.texts import N_, Texts
from bot.render.blocks import (
    MAX_HOME_BLOCKS,
    MAX_MESSAGE_BLOCKS,
    MAX_MESSAGE_TEXT_CHARS,
    MORE_ACTION_ID,
    RESUME_ACTION_ID,
    SUBSCRIBE_ACTION_ID,
    UNSUBSCRIBE_ACTION_ID,
    UNWATCH_ACTION_ID,
    Block,
    block_text_size,
    button,
    clip,
    context_block,
    escape,
    escaped,
    header_block,
    menu_note_block,
    note_block,
    note_plain_text,
    section_block,
)

Message = dict[str, Any]

MAX_BUTTON_VALUE = 2000
HOME_NOTES = 12
HOME_ROLES = 40
MAX_HOME_WATCH_BUTTONS = 20  # with the resume button, within an actions block's 25
MAX_FALLBACK_CHARS = 3000
MAX_PAGE_OFFSET = 100_000  # a More button further on than this is not one of ours


def message(text: str, blocks: list[Block] | None = None) -> Message:
    """A message payload: `text` is the notification / screen-reader fallback."""
    return {"text": clip(text, MAX_FALLBACK_CHARS), "blocks": blocks or [section_block(text)]}


def role_action_id(base: str, slug: str) -> str:
    """A per-role action id (`prdigest_subscribe:moe-quant`): Slack wants action ids unique
    within a view, and the listeners match the base id with or without the suffix."""
    return f"{base}:{slug}"


LEVEL_LABELS = {
    None: N_("every note"),
    Verdict.SKIM: N_("deep and skim reads"),
    Verdict.DEEP: N_("deep reads only"),
}


def level_label(level: Verdict | None, t: Texts) -> str:
    """What a subscription's verdict filter lets through."""
    return t.gettext(LEVEL_LABELS[level])


def _role_names(
    slugs: Sequence[str],
    taxonomy: Taxonomy,
    t: Texts,
    levels: Mapping[str, Verdict | None] | None = None,
) -> list[str]:
    """`moe-quant` (MoE 与量化), with the filter when one is set: "deep reads only"."""
    names = []
    for slug in slugs:
        try:
            role = taxonomy.get(slug)
        except KeyError:
            name = f"`{escape(slug)}`"
        else:
            name = f"`{role.slug}` ({escaped(t.role_name(role, both='{zh}'), 100)})"
        level = (levels or {}).get(slug)
        names.append(f"{name}, {level_label(level, t)}" if level is not None else name)
    return names


def _join(names: Sequence[str], t: Texts) -> str:
    return t.pgettext("list separator", ", ").join(names)


def sentences(parts: Sequence[str], t: Texts) -> str:
    """Sentences one after the other: with a space in English, none after a Chinese "。"."""
    out = ""
    for part in parts:
        out = t.pgettext("two sentences", "{first} {then}", first=out, then=part) if out else part
    return out


def alias_codes(aliases: Sequence[str], limit: int) -> str:
    """What a reader may type for a role, as code: the one place a reader sees words of the
    other language, since an alias works whatever language the reader reads."""
    return ", ".join(f"`{escaped(a.replace('`', ' '), 60)}`" for a in aliases[:limit])


# --------------------------------------------------------------------------- simple replies


def help_reply(usage_rows: Sequence[tuple[str, str]], t: Texts) -> Message:
    """The grammar table (usage, summary) as Block Kit."""
    rows = [f"`{escape(usage)}`\n{escape(summary)}" for usage, summary in usage_rows]
    about = t.gettext(
        "Each note gives a verdict, {deep} (worth a close read), {skim} (worth a skim) "
        "or {skip} (can be skipped), and says for whom. Open the app's Home tab to manage "
        "subscriptions with buttons. A note's … menu shows it whole or, for editors, "
        "fixes its roles and verdict ({fix}).",
        deep=t.verdict(Verdict.DEEP),
        skim=t.verdict(Verdict.SKIM),
        skip=t.verdict(Verdict.SKIP),
        fix=t.gettext("Fix roles…"),
    )
    blocks = [
        header_block(t.gettext("prdigest: what to read this week")),
        section_block("\n".join(rows)),
        context_block(about),
    ]
    listed = "\n".join(f"{escape(u)} — {escape(s)}" for u, s in usage_rows)
    return message(t.gettext("prdigest commands:\n{commands}", commands=listed), blocks)


def roles_reply(taxonomy: Taxonomy, t: Texts, offset: int = 0) -> Message:
    """The roles with names and aliases, from `offset`: as many as one message holds,
    with a "More" button when a large taxonomy needs several pages."""
    lines = []
    for role in taxonomy.roles[offset:]:
        line = f"*{escaped(t.role_name(role), 200)}* `{role.slug}`"
        if role.aliases:
            line += f"\n{alias_codes(role.aliases, 12)}"
        lines.append(line)
    head = header_block(t.gettext("Reader roles"))
    sections, shown = _chunk_sections(
        lines,
        room=MAX_MESSAGE_BLOCKS - 3,  # header, context, actions
        chars=MAX_MESSAGE_TEXT_CHARS - block_text_size(head) - 400,
    )
    total = len(taxonomy.roles)
    first, last = offset + 1, offset + shown
    blocks: list[Block] = [head, *sections]
    hint = t.gettext("`/prdigest subscribe &lt;role&gt;` · `/prdigest &lt;role&gt;` for its notes")
    if not shown:
        return message(t.gettext("No more roles: there are {total}.", total=total))
    if first > 1 or last < total:
        hint = t.gettext(
            "Roles {first}–{last} of {total} · {hint}",
            first=first,
            last=last,
            total=total,
            hint=hint,
        )
    blocks.append(context_block(hint))
    if last < total:
        more = MorePage("roles", last, kind=MorePage.ROLES)
        blocks.append(
            {
                "type": "actions",
                "block_id": "more",
                "elements": [button(t.gettext("More roles"), MORE_ACTION_ID, more.encode())],
            }
        )
    slugs = ", ".join(r.slug for r in taxonomy.roles[offset:last])
    text = t.gettext("Reader roles: {roles}", roles=slugs)
    if last < total:
        text += " " + t.gettext("({first}–{last} of {total})", first=first, last=last, total=total)
    return message(text, blocks)


def _chunk_sections(lines: Sequence[str], room: int, chars: int) -> tuple[list[Block], int]:
    """Lines joined into as few sections as the 3,000-character limit allows, within
    `room` blocks and `chars` characters; returns the sections and how many lines fit."""
    blocks: list[Block] = []
    current: list[str] = []
    size = used = taken = 0
    for line in lines:
        line = clip(line, 2900)
        if used + len(line) + 1 > chars:
            break
        if current and size + len(line) + 1 > 2900:
            if len(blocks) + 1 >= room:
                break
            blocks.append(section_block("\n".join(current)))
            current, size = [], 0
        current.append(line)
        size += len(line) + 1
        used += len(line) + 1
        taken += 1
    if current:
        blocks.append(section_block("\n".join(current)))
    return blocks, taken


def error_reply(text: str) -> Message:
    """A problem the user can fix, said plainly."""
    return message(text, [section_block(f":warning: {text}")])


def failure_reply(t: Texts) -> Message:
    """What a user sees when something broke on our side; details stay in the log."""
    return error_reply(
        t.gettext("Sorry, something went wrong on our side. Please try again in a minute.")
    )


def store_unavailable_reply(t: Texts) -> Message:
    """The database is down or restarting: nothing was done, and it is worth another try."""
    return error_reply(
        t.gettext("The store is unavailable, try again shortly. Nothing was changed.")
    )


def unknown_roles_reply(
    subscribing: bool,
    unknown: Sequence[str],
    suggestions: Mapping[str, Sequence[Role]],
    t: Texts,
) -> Message:
    """Subscribe/unsubscribe named a word that is not a role: nothing changed."""
    parts = []
    for word in unknown:
        hint = suggestions.get(word) or ()
        shown = escaped(word, 60)
        if hint:
            roles = _join([r.slug for r in hint], t)
            parts.append(
                t.gettext("`{word}` is not a role; did you mean {roles}?", word=shown, roles=roles)
            )
        else:
            parts.append(t.gettext("`{word}` is not a role.", word=shown))
    outcome = (
        t.gettext("Nothing was subscribed.")
        if subscribing
        else t.gettext("Nothing was unsubscribed.")
    )
    where = t.gettext("`/prdigest roles` lists the roles and their aliases.")
    return error_reply(sentences([*parts, outcome, where], t))


def confirm_reply(text: str) -> Message:
    """A change done (or nothing to do), said plainly."""
    return message(text, [section_block(f":white_check_mark: {text}")])


def _done_reply(parts: Sequence[str], empty: str, t: Texts) -> Message:
    """Clauses said one after the other, as one sentence with a capital."""
    clauses = t.pgettext("clause separator", "; ").join(parts or [empty])
    text = t.gettext("{clauses}.", clauses=clauses)
    return confirm_reply(text[0].upper() + text[1:])


def subscribe_reply(
    added: Sequence[str],
    changed: Sequence[str],
    already: Sequence[str],
    levels: Mapping[str, Verdict | None],
    taxonomy: Taxonomy,
    t: Texts,
) -> Message:
    """ "Subscribed to moe-quant; kv-cache now deep reads only; already subscribed to …"."""
    parts = []
    if added:
        roles = _join(_role_names(added, taxonomy, t, levels), t)
        parts.append(t.gettext("Subscribed to {roles}", roles=roles))
    for slug in changed:
        level = level_label(levels.get(slug), t)
        parts.append(t.gettext("`{role}` now sends {level}", role=escape(slug), level=level))
    if already:
        roles = _join(_role_names(already, taxonomy, t, levels), t)
        parts.append(t.gettext("already subscribed to {roles}", roles=roles))
    return _done_reply(parts, t.gettext("Nothing to change"), t)


def unsubscribe_reply(
    removed: Sequence[str], missing: Sequence[str], taxonomy: Taxonomy, t: Texts
) -> Message:
    """ "Unsubscribed from moe-quant; you were not subscribed to kv-cache." """
    parts = []
    if removed:
        roles = _join(_role_names(removed, taxonomy, t), t)
        parts.append(t.gettext("Unsubscribed from {roles}", roles=roles))
    if missing:
        roles = _join(_role_names(missing, taxonomy, t), t)
        parts.append(t.gettext("you were not subscribed to {roles}", roles=roles))
    return _done_reply(parts, t.gettext("You had no subscriptions"), t)


def pause_text(pause: Pause | None, now: datetime, zone: ZoneInfo, t: Texts) -> str:
    """ "Paused until 2026-12-14 09:00 (UTC)", or "" when not paused now."""
    if pause is None or not pause.active(now):
        return ""
    until = f"{pause.until.astimezone(zone):%Y-%m-%d %H:%M}"
    return t.gettext("Paused until {until} ({zone})", until=until, zone=zone.key)


def reader_lines(
    reader: Reader, taxonomy: Taxonomy, now: datetime, zone: ZoneInfo, t: Texts
) -> list[str]:
    """What a reader gets, as mrkdwn lines: roles with filters, saved searches, a pause."""
    levels = {s.role: s.level for s in reader.roles}
    lines = []
    if reader.roles:
        names = _join(_role_names([s.role for s in reader.roles], taxonomy, t, levels), t)
        lines.append(t.gettext("You are subscribed to {roles}.", roles=names))
    else:
        lines.append(t.gettext("You are not subscribed to any role."))
    if reader.watches:
        shown = _join([t.gettext("“{query}”", query=escaped(q, 100)) for q in reader.watches], t)
        lines.append(t.gettext("You watch {searches}.", searches=shown))
    paused = pause_text(reader.pause, now, zone, t)
    if paused:
        ends = t.gettext("{paused}; `/prdigest resume` ends it now.", paused=paused)
        lines.append(f":double_vertical_bar: {ends}")
    return lines


def list_reply(
    reader: Reader, taxonomy: Taxonomy, now: datetime, zone: ZoneInfo, t: Texts
) -> Message:
    lines = reader_lines(reader, taxonomy, now, zone, t)
    if not reader.roles and not reader.watches:
        lines.append(
            t.gettext("Try `/prdigest subscribe moe`, `/prdigest watch fp8` or `/prdigest roles`.")
        )
    return message("\n".join(lines))


# --------------------------------------------------------------------------- lookup pages


@dataclass(frozen=True)
class MorePage:
    """What the "More" button carries: the query and the offset of the next page, and
    what is paged (a lookup, or the role list)."""

    query: str
    offset: int
    kind: str = "lookup"

    LOOKUP: ClassVar[str] = "lookup"
    ROLES: ClassVar[str] = "roles"
    WEEK: ClassVar[str] = "week"  # query: the week label and a role slug, if any
    LEFT_OUT: ClassVar[str] = "left"  # query: the key of a DM whose left-out notes to list

    def encode(self) -> str:
        data: dict[str, object] = {"q": self.query, "o": self.offset}
        if self.kind != self.LOOKUP:
            data["k"] = self.kind
        return json.dumps(data, ensure_ascii=False)

    @classmethod
    def decode(cls, value: str) -> MorePage | None:
        """None for a value that is not one of ours."""
        try:
            data = json.loads(value)
        except (ValueError, TypeError):
            return None
        if not isinstance(data, dict):
            return None
        query, offset = data.get("q"), data.get("o")
        if not isinstance(query, str) or not isinstance(offset, int):
            return None
        if not 0 <= offset <= MAX_PAGE_OFFSET:  # past it is no page of ours
            return None
        if isinstance(offset, bool):
            return None
        kind = data.get("k", cls.LOOKUP)
        if kind not in (cls.LOOKUP, cls.ROLES, cls.WEEK, cls.LEFT_OUT):
            return None
        return cls(query, offset, kind)


ANY_WORD_NOTE = N_("No note has all of these words; these have some of them.")


def lookup_reply(
    query: str,
    role: Role | None,
    notes: Sequence[Note],
    total: int,
    offset: int,
    taxonomy: Taxonomy,
    t: Texts,
    suggestions: Sequence[Role] = (),
    near: str = "",
    capped: bool = False,
    any_word: bool = False,
) -> Message:
    """One page of a role's notes or of search results, with a "More" button when more
    notes follow. Notes that would break the message size limits wait for the next page.
    `capped`: counting stopped at `total`, so it reads "1,010+"; `any_word`: no note has
    every word, these have some (a watch of the words would bring none of them)."""
    shown_query = escaped(query, 200)
    if not notes:
        return _no_match_reply(shown_query, role, total, suggestions, near, t)
    slug = role.slug if role else None
    title = (
        f"{t.role_name(role)} ({role.slug})"
        if role
        else t.gettext("Notes matching “{query}”", query=clip(query, 100, plain=True))
    )
    items = [(note, slug) for note in notes]
    intros = [_did_you_mean(near, t)] if near and not offset else []
    if any_word:
        intros.append(t.gettext(ANY_WORD_NOTE))
    intro = sentences(intros, t)
    return note_page(
        title, items, total, offset, MorePage(query, 0), taxonomy, t, capped=capped, intro=intro
    )


def _did_you_mean(near: str, t: Texts) -> str:
    return t.gettext("Did you mean `/prdigest {command}`?", command=escaped(near, 200))


def note_page(
    title: str,
    items: Sequence[tuple[Note, str | None]],
    total: int,
    offset: int,
    more: MorePage,
    taxonomy: Taxonomy,
    t: Texts,
    *,
    capped: bool = False,
    headings: Sequence[str] | None = None,
    marks: Mapping[int, str] | None = None,
    intro: str = "",
) -> Message:
    """One page of notes, each shown with the verdict for its role, and a "More" button
    (`more` with the next offset) when more follow. Notes that would break the message
    size limits wait for the next page. `headings` (plain text, one per item) puts a
    heading before each run of items that share one; `marks` (note id -> plain text)
    adds a line under a note; `intro` (mrkdwn) goes under the title."""
    reserve_blocks = 3  # header, context, actions
    head = header_block(title)
    blocks: list[Block] = [head]
    if intro:
        blocks.append(context_block(intro))
    budget_chars = MAX_MESSAGE_TEXT_CHARS - sum(block_text_size(b) for b in blocks) - 400
    used = 0
    page: list[tuple[Note, str | None]] = []
    current: str | None = None
    marks = marks or {}
    for index, (note, slug) in enumerate(items):
        new: list[Block] = []
        heading = headings[index] if headings is not None else None
        if heading is not None and heading != current:
            new.append(context_block(f"*{escaped(heading, 200)}*"))
        mark = marks.get(note.id, "")
        shown = f":pencil2: _{escaped(mark, 200)}_" if mark else ""
        new.append(menu_note_block(note, slug, taxonomy, t, mark=shown))
        size = sum(block_text_size(b) for b in new)
        if page and (
            used + size > budget_chars
            or len(blocks) + len(new) > MAX_MESSAGE_BLOCKS - reserve_blocks + 1
        ):
            break
        blocks.extend(new)
        page.append((note, slug))
        current = heading
        used += size
    first, last = offset + 1, offset + len(page)
    of = count_text(total, capped)
    blocks.append(
        context_block(
            t.ngettext(
                "{first}–{last} of {total} note",
                "{first}–{last} of {total} notes",
                total,
                first=first,
                last=last,
                total=of,
            )
        )
    )
    following = replace(more, offset=last)
    if last < total and len(following.encode()) <= MAX_BUTTON_VALUE:
        blocks.append(
            {
                "type": "actions",
                "block_id": "more",
                "elements": [button(t.gettext("More"), MORE_ACTION_ID, following.encode())],
            }
        )
    lines = [
        note_plain_text(n, slug, t) + (f" ({escaped(marks[n.id], 200)})" if n.id in marks else "")
        for n, slug in page
    ]
    counted = t.gettext(
        "{title}: {first}–{last} of {total}",
        title=escaped(title, 150),
        first=first,
        last=last,
        total=of,
    )
    return message(counted + "\n" + "\n".join(lines), blocks)


def _no_match_reply(
    shown_query: str,
    role: Role | None,
    total: int,
    suggestions: Sequence[Role],
    near: str,
    t: Texts,
) -> Message:
    if role is not None:
        return message(
            t.gettext("No more notes for {role}.", role=role.slug)
            if total
            else t.gettext("No notes for {role} yet.", role=role.slug)
        )
    if total:
        return message(t.gettext("No more notes match “{query}”.", query=shown_query))
    parts = [t.gettext("No notes match “{query}”.", query=shown_query)]
    if near:
        parts.append(_did_you_mean(near, t))
    if suggestions:
        roles = _join([f"`{r.slug}`" for r in suggestions], t)
        parts.append(t.gettext("Roles with a similar name: {roles}.", roles=roles))
    parts.append(
        t.gettext("`/prdigest help` shows what I understand; `/prdigest roles` lists the roles.")
    )
    return message(sentences(parts, t))


# --------------------------------------------------------------------------- App Home


def home_view(
    taxonomy: Taxonomy,
    reader: Reader,
    notes: Sequence[Note],
    notes_title: str,
    now: datetime,
    zone: ZoneInfo,
    t: Texts,
    dm_line: str = "",
) -> dict[str, Any]:
    """The Home tab: subscriptions, a button per role, and reading for the user's roles;
    `dm_line` (mrkdwn) says when their DMs go out and how many notes they show."""
    levels = {s.role: s.level for s in reader.roles if s.role in taxonomy.slugs}
    mine = list(levels)
    blocks: list[Block] = [header_block("prdigest")]
    if mine or reader.watches:
        blocks.append(section_block("\n".join(reader_lines(reader, taxonomy, now, zone, t))))
    else:
        blocks.append(
            section_block(
                t.gettext(
                    "You are not subscribed to any role yet. Pick roles below, or type "
                    "`/prdigest subscribe moe` in any channel."
                )
            )
        )
        paused = pause_text(reader.pause, now, zone, t)
        if paused:
            # Translators: a pause, said as a sentence ("Paused until … (UTC)").
            blocks.append(
                section_block(":double_vertical_bar: " + t.gettext("{paused}.", paused=paused))
            )
    if dm_line:
        blocks.append(context_block(dm_line))
    controls = _home_controls(reader, now, t)
    if controls is not None:
        blocks.append(controls)
    blocks.append({"type": "divider"})
    blocks.append(header_block(t.gettext("Roles")))
    roles = taxonomy.roles[:HOME_ROLES]
    for role in roles:
        blocks.append(_role_row(role, role.slug in levels, t, levels.get(role.slug)))
    if len(taxonomy.roles) > len(roles):
        more = len(taxonomy.roles) - len(roles)
        blocks.append(
            context_block(
                t.ngettext(
                    "{count} more role: use `/prdigest roles`.",
                    "{count} more roles: use `/prdigest roles`.",
                    more,
                    count=more,
                )
            )
        )
    blocks.append({"type": "divider"})
    blocks.append(header_block(notes_title))
    room = MAX_HOME_BLOCKS - len(blocks) - 1
    shown = list(_unique(notes))[: max(0, min(HOME_NOTES, room))]
    if shown:
        primary = mine[0] if len(mine) == 1 else None
        blocks.extend(note_block(n, primary, taxonomy, t) for n in shown)
    else:
        blocks.append(context_block(t.gettext("Nothing to read yet for your roles.")))
    return {"type": "home", "blocks": blocks[:MAX_HOME_BLOCKS]}


def _home_controls(reader: Reader, now: datetime, t: Texts) -> Block | None:
    """Buttons under the reader's settings: resume a pause, stop a watch."""
    elements = []
    if reader.pause is not None and reader.pause.active(now):
        elements.append(button(t.gettext("Resume now"), RESUME_ACTION_ID, "resume", "primary"))
    for index, query in enumerate(reader.watches[:MAX_HOME_WATCH_BUTTONS]):
        label = t.gettext("Unwatch “{query}”", query=clip(query, 40, plain=True))
        elements.append(button(label, role_action_id(UNWATCH_ACTION_ID, str(index)), query))
    if not elements:
        return None
    return {"type": "actions", "block_id": "reader-controls", "elements": elements}


def _role_row(role: Role, subscribed: bool, t: Texts, level: Verdict | None = None) -> Block:
    text = f"*{escaped(t.role_name(role), 200)}* `{role.slug}`"
    if subscribed and level is not None:
        text += f" · {level_label(level, t)}"
    if role.aliases:
        text += f"\n{alias_codes(role.aliases, 6)}"
    if subscribed:
        action = button(
            t.gettext("Unsubscribe"), role_action_id(UNSUBSCRIBE_ACTION_ID, role.slug), role.slug
        )
    else:
        action = button(
            t.gettext("Subscribe"),
            role_action_id(SUBSCRIBE_ACTION_ID, role.slug),
            role.slug,
            "primary",
        )
    block = section_block(text, block_id=f"role-{role.slug}")
    block["accessory"] = action
    return block


def _unique(notes: Sequence[Note]) -> list[Note]:
    seen: set[int] = set()
    out = []
    for note in notes:
        if note.id not in seen:
            seen.add(note.id)
            out.append(note)
    return out
