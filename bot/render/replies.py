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
    None: "every note",
    Verdict.SKIM: "deep and skim reads",
    Verdict.DEEP: "deep reads only",
}


def level_label(level: Verdict | None) -> str:
    """What a subscription's verdict filter lets through."""
    return LEVEL_LABELS[level]


def _role_names(
    slugs: Sequence[str],
    taxonomy: Taxonomy,
    levels: Mapping[str, Verdict | None] | None = None,
) -> list[str]:
    """`moe-quant` (MoE 量化), with the filter when one is set: "(deep reads only)"."""
    names = []
    for slug in slugs:
        try:
            role = taxonomy.get(slug)
        except KeyError:
            name = f"`{escape(slug)}`"
        else:
            name = f"`{role.slug}` ({escaped(role.name_zh, 100)})"
        level = (levels or {}).get(slug)
        names.append(f"{name}, {level_label(level)}" if level is not None else name)
    return names


def _join(names: Sequence[str]) -> str:
    return ", ".join(names)


# --------------------------------------------------------------------------- simple replies


def help_reply(usage_rows: Sequence[tuple[str, str]]) -> Message:
    """The grammar table (usage, summary) as Block Kit."""
    rows = [f"`{escape(usage)}`\n{escape(summary)}" for usage, summary in usage_rows]
    blocks = [
        header_block("prdigest: what to read this week"),
        section_block("\n".join(rows)),
        context_block(
            "Each note says whether a PR is worth a close read (精读), a skim (浏览) "
            "or can be skipped (可略过), and for whom. Open the app's Home tab to manage "
            "subscriptions with buttons. A note's … menu shows it whole or, for editors, "
            "fixes its roles and verdict (Fix roles…)."
        ),
    ]
    text = "prdigest commands:\n" + "\n".join(f"{escape(u)} — {escape(s)}" for u, s in usage_rows)
    return message(text, blocks)


def roles_reply(taxonomy: Taxonomy, offset: int = 0) -> Message:
    """The roles with names and aliases, from `offset`: as many as one message holds,
    with a "More" button when a large taxonomy needs several pages."""
    lines = []
    for role in taxonomy.roles[offset:]:
        aliases = ", ".join(role.aliases[:12])
        line = f"*{escaped(role.label, 200)}* `{role.slug}`"
        if aliases:
            line += f"\n{escaped(aliases, 600)}"
        lines.append(line)
    head = header_block("Reader roles")
    sections, shown = _chunk_sections(
        lines,
        room=MAX_MESSAGE_BLOCKS - 3,  # header, context, actions
        chars=MAX_MESSAGE_TEXT_CHARS - block_text_size(head) - 400,
    )
    total = len(taxonomy.roles)
    first, last = offset + 1, offset + shown
    blocks: list[Block] = [head, *sections]
    hint = "`/prdigest subscribe &lt;role&gt;` · `/prdigest &lt;role&gt;` for its notes"
    if not shown:
        return message(f"No more roles: there are {total}.")
    if first > 1 or last < total:
        hint = f"Roles {first}–{last} of {total} · {hint}"
    blocks.append(context_block(hint))
    if last < total:
        more = MorePage("roles", last, kind=MorePage.ROLES)
        blocks.append(
            {
                "type": "actions",
                "block_id": "more",
                "elements": [button("More roles", MORE_ACTION_ID, more.encode())],
            }
        )
    text = "Reader roles: " + ", ".join(r.slug for r in taxonomy.roles[offset:last])
    if last < total:
        text += f" ({first}–{last} of {total})"
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


def failure_reply() -> Message:
    """What a user sees when something broke on our side; details stay in the log."""
    return error_reply("Sorry, something went wrong on our side. Please try again in a minute.")


def store_unavailable_reply() -> Message:
    """The database is down or restarting: nothing was done, and it is worth another try."""
    return error_reply("The store is unavailable, try again shortly. Nothing was changed.")


def unknown_roles_reply(
    verb: str, unknown: Sequence[str], suggestions: Mapping[str, Sequence[Role]]
) -> Message:
    """Subscribe/unsubscribe named a word that is not a role: nothing changed."""
    parts = []
    for word in unknown:
        hint = suggestions.get(word) or ()
        shown = escaped(word, 60)
        if hint:
            parts.append(f"`{shown}` is not a role; did you mean {_join([r.slug for r in hint])}?")
        else:
            parts.append(f"`{shown}` is not a role.")
    text = (
        " ".join(parts)
        + f" Nothing was {verb}d. `/prdigest roles` lists the roles and their aliases."
    )
    return error_reply(text)


def confirm_reply(text: str) -> Message:
    """A change done (or nothing to do), said plainly."""
    return message(text, [section_block(f":white_check_mark: {text}")])


def _done_reply(parts: Sequence[str], empty: str) -> Message:
    text = "; ".join(parts or [empty]) + "."
    return confirm_reply(text[0].upper() + text[1:])


def subscribe_reply(
    added: Sequence[str],
    changed: Sequence[str],
    already: Sequence[str],
    levels: Mapping[str, Verdict | None],
    taxonomy: Taxonomy,
) -> Message:
    """ "Subscribed to moe-quant; kv-cache now deep reads only; already subscribed to …"."""
    parts = []
    if added:
        parts.append("Subscribed to " + _join(_role_names(added, taxonomy, levels)))
    for slug in changed:
        parts.append(f"`{escape(slug)}` now sends {level_label(levels.get(slug))}")
    if already:
        parts.append("already subscribed to " + _join(_role_names(already, taxonomy, levels)))
    return _done_reply(parts, "Nothing to change")


def unsubscribe_reply(
    removed: Sequence[str], missing: Sequence[str], taxonomy: Taxonomy
) -> Message:
    """ "Unsubscribed from moe-quant; you were not subscribed to kv-cache." """
    parts = []
    if removed:
        parts.append("Unsubscribed from " + _join(_role_names(removed, taxonomy)))
    if missing:
        parts.append("you were not subscribed to " + _join(_role_names(missing, taxonomy)))
    return _done_reply(parts, "You had no subscriptions")


def pause_text(pause: Pause | None, now: datetime, zone: ZoneInfo) -> str:
    """ "Paused until 2026-12-14 09:00 (UTC)", or "" when not paused now."""
    if pause is None or not pause.active(now):
        return ""
    return f"Paused until {pause.until.astimezone(zone):%Y-%m-%d %H:%M} ({zone.key})"


def reader_lines(reader: Reader, taxonomy: Taxonomy, now: datetime, zone: ZoneInfo) -> list[str]:
    """What a reader gets, as mrkdwn lines: roles with filters, saved searches, a pause."""
    levels = {s.role: s.level for s in reader.roles}
    lines = []
    if reader.roles:
        names = _role_names([s.role for s in reader.roles], taxonomy, levels)
        lines.append("You are subscribed to " + _join(names) + ".")
    else:
        lines.append("You are not subscribed to any role.")
    if reader.watches:
        shown = [f"“{escaped(q, 100)}”" for q in reader.watches]
        lines.append("You watch " + _join(shown) + ".")
    paused = pause_text(reader.pause, now, zone)
    if paused:
        lines.append(f":double_vertical_bar: {paused}; `/prdigest resume` ends it now.")
    return lines


def list_reply(reader: Reader, taxonomy: Taxonomy, now: datetime, zone: ZoneInfo) -> Message:
    lines = reader_lines(reader, taxonomy, now, zone)
    if not reader.roles and not reader.watches:
        lines.append("Try `/prdigest subscribe moe`, `/prdigest watch fp8` or `/prdigest roles`.")
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


ANY_WORD_NOTE = "No note has all of these words; these have some of them."


def lookup_reply(
    query: str,
    role: Role | None,
    notes: Sequence[Note],
    total: int,
    offset: int,
    taxonomy: Taxonomy,
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
        return _no_match_reply(shown_query, role, total, suggestions, near)
    slug = role.slug if role else None
    title = (
        f"{role.label} ({role.slug})"
        if role
        else f"Notes matching “{clip(query, 100, plain=True)}”"
    )
    items = [(note, slug) for note in notes]
    intros = [f"Did you mean `/prdigest {escaped(near, 200)}`?"] if near and not offset else []
    if any_word:
        intros.append(ANY_WORD_NOTE)
    intro = " ".join(intros)
    return note_page(
        title, items, total, offset, MorePage(query, 0), taxonomy, capped=capped, intro=intro
    )


def note_page(
    title: str,
    items: Sequence[tuple[Note, str | None]],
    total: int,
    offset: int,
    more: MorePage,
    taxonomy: Taxonomy,
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
        new.append(menu_note_block(note, slug, taxonomy, mark=shown))
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
    blocks.append(context_block(f"{first}–{last} of {of} notes"))
    following = replace(more, offset=last)
    if last < total and len(following.encode()) <= MAX_BUTTON_VALUE:
        blocks.append(
            {
                "type": "actions",
                "block_id": "more",
                "elements": [button("More", MORE_ACTION_ID, following.encode())],
            }
        )
    lines = [
        note_plain_text(n, slug) + (f" ({escaped(marks[n.id], 200)})" if n.id in marks else "")
        for n, slug in page
    ]
    text = f"{escaped(title, 150)}: {first}–{last} of {of}\n" + "\n".join(lines)
    return message(text, blocks)


def _no_match_reply(
    shown_query: str, role: Role | None, total: int, suggestions: Sequence[Role], near: str
) -> Message:
    if role is not None:
        return message(
            f"No more notes for {role.slug}." if total else f"No notes for {role.slug} yet."
        )
    if total:
        return message(f"No more notes match “{shown_query}”.")
    parts = [f"No notes match “{shown_query}”."]
    if near:
        parts.append(f"Did you mean `/prdigest {escaped(near, 200)}`?")
    if suggestions:
        parts.append(
            "Roles with a similar name: " + _join([f"`{r.slug}`" for r in suggestions]) + "."
        )
    parts.append("`/prdigest help` shows what I understand; `/prdigest roles` lists the roles.")
    text = " ".join(parts)
    return message(text)


# --------------------------------------------------------------------------- App Home


def home_view(
    taxonomy: Taxonomy,
    reader: Reader,
    notes: Sequence[Note],
    notes_title: str,
    now: datetime,
    zone: ZoneInfo,
    dm_line: str = "",
) -> dict[str, Any]:
    """The Home tab: subscriptions, a button per role, and reading for the user's roles;
    `dm_line` (mrkdwn) says when their DMs go out and how many notes they show."""
    levels = {s.role: s.level for s in reader.roles if s.role in taxonomy.slugs}
    mine = list(levels)
    blocks: list[Block] = [header_block("prdigest")]
    if mine or reader.watches:
        blocks.append(section_block("\n".join(reader_lines(reader, taxonomy, now, zone))))
    else:
        blocks.append(
            section_block(
                "You are not subscribed to any role yet. Pick roles below, or type "
                "`/prdigest subscribe moe` in any channel."
            )
        )
        paused = pause_text(reader.pause, now, zone)
        if paused:
            blocks.append(section_block(f":double_vertical_bar: {paused}."))
    if dm_line:
        blocks.append(context_block(dm_line))
    controls = _home_controls(reader, now)
    if controls is not None:
        blocks.append(controls)
    blocks.append({"type": "divider"})
    blocks.append(header_block("Roles"))
    roles = taxonomy.roles[:HOME_ROLES]
    for role in roles:
        blocks.append(_role_row(role, role.slug in levels, levels.get(role.slug)))
    if len(taxonomy.roles) > len(roles):
        blocks.append(
            context_block(f"{len(taxonomy.roles) - len(roles)} more roles: use `/prdigest roles`.")
        )
    blocks.append({"type": "divider"})
    blocks.append(header_block(notes_title))
    room = MAX_HOME_BLOCKS - len(blocks) - 1
    shown = list(_unique(notes))[: max(0, min(HOME_NOTES, room))]
    if shown:
        primary = mine[0] if len(mine) == 1 else None
        blocks.extend(note_block(n, primary, taxonomy) for n in shown)
    else:
        blocks.append(context_block("Nothing to read yet for your roles."))
    return {"type": "home", "blocks": blocks[:MAX_HOME_BLOCKS]}


def _home_controls(reader: Reader, now: datetime) -> Block | None:
    """Buttons under the reader's settings: resume a pause, stop a watch."""
    elements = []
    if reader.pause is not None and reader.pause.active(now):
        elements.append(button("Resume now", RESUME_ACTION_ID, "resume", "primary"))
    for index, query in enumerate(reader.watches[:MAX_HOME_WATCH_BUTTONS]):
        label = f"Unwatch “{clip(query, 40, plain=True)}”"
        elements.append(button(label, role_action_id(UNWATCH_ACTION_ID, str(index)), query))
    if not elements:
        return None
    return {"type": "actions", "block_id": "reader-controls", "elements": elements}


def _role_row(role: Role, subscribed: bool, level: Verdict | None = None) -> Block:
    aliases = ", ".join(role.aliases[:6])
    text = f"*{escaped(role.label, 200)}* `{role.slug}`"
    if subscribed and level is not None:
        text += f" · {level_label(level)}"
    if aliases:
        text += f"\n{escaped(aliases, 600)}"
    if subscribed:
        action = button("Unsubscribe", role_action_id(UNSUBSCRIBE_ACTION_ID, role.slug), role.slug)
    else:
        action = button(
            "Subscribe", role_action_id(SUBSCRIBE_ACTION_ID, role.slug), role.slug, "primary"
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
