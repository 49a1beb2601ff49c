"""Block Kit building blocks shared by `/prdigest` replies, App Home and the weekly digest.

Functions return plain dicts; nothing here talks to Slack.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.classify.taxonomy import Taxonomy
from bot.domain import Confidence, Note, Verdict
from bot.i18n.texts import Texts
from bot.render.mrkdwn import clip, escape, escaped, link

__all__ = ["clip", "escape", "escaped", "link"]  # the text rules, re-exported for builders

Block = dict[str, Any]

# Slack's documented limits, with a margin where Slack's own figure is approximate.
MAX_MESSAGE_BLOCKS = 50
MAX_HOME_BLOCKS = 100
MAX_SECTION_TEXT = 3000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_BUTTON_TEXT = 75
MAX_MESSAGE_TEXT_CHARS = 9000  # total text per message; Slack refuses around 10-12k
MAX_TITLE_CHARS = 300

SUBSCRIBE_ACTION_ID = "prdigest_subscribe"  # button value: a role slug
UNSUBSCRIBE_ACTION_ID = "prdigest_unsubscribe"
MORE_ACTION_ID = "prdigest_more"
NOTE_MENU_ACTION_ID = "prdigest_note"  # per note: "prdigest_note:<id>"; values below
FIX_OPTION = "fix"  # option value "fix:<id>": open the correction modal
SHOW_OPTION = "show"  # option value "show:<id>": the whole note, only to the clicker
RESUME_ACTION_ID = "prdigest_resume"  # App Home, while paused
UNWATCH_ACTION_ID = "prdigest_unwatch"  # App Home; button value: the watched search

VERDICT_EMOJI = {
    Verdict.DEEP: ":large_green_circle:",
    Verdict.SKIM: ":large_yellow_circle:",
    Verdict.SKIP: ":white_circle:",
}


def verdict_badge(verdict: Verdict, t: Texts) -> str:
    return f"{VERDICT_EMOJI[verdict]} *{t.verdict(verdict)}*"


def revised_mark(t: Texts) -> str:
    """The line under a note whose posted message was updated."""
    revised = t.side_by_side("revised")
    return f":pencil2: _{revised}_"


def note_mrkdwn(note: Note, role: str | None, taxonomy: Taxonomy, t: Texts) -> str:
    """Title (linked to the PR when known), verdict badge, roles and the for-whom line."""
    if note.pr_url:
        heading = f"*{link(note.pr_url, note.title, MAX_TITLE_CHARS)}*  #{note.pr}"
    else:
        heading = f"*{escaped(note.title, MAX_TITLE_CHARS)}*"
    verdict = note.verdict_for(role) if role else note.verdict
    names = []
    for slug in note.roles:
        try:
            names.append(t.role_name(taxonomy.get(slug), both="{zh}"))
        except KeyError:
            names.append(slug)
    # After the badge when the note's words said little about how closely to read it.
    unsure = (
        " _" + t.gettext("(low confidence)") + "_"
        if note.verdict_confidence is Confidence.LOW
        else ""
    )
    badge = verdict_badge(verdict, t)
    lines = [heading, f"{badge}{unsure} · {escaped(' · '.join(names), 600)}"]
    if note.excerpt:
        lines.append(f"> {escaped(note.excerpt, 400)}")
    return clip("\n".join(lines), MAX_SECTION_TEXT)


def note_block(note: Note, role: str | None, taxonomy: Taxonomy, t: Texts) -> Block:
    return {
        "type": "section",
        "block_id": f"note-{note.id}",
        "text": {"type": "mrkdwn", "text": note_mrkdwn(note, role, taxonomy, t)},
    }


def note_menu(note: Note, t: Texts) -> dict[str, Any]:
    """The "…" menu of a note in a digest thread or a lookup reply."""
    options: list[dict[str, Any]] = [
        _option(t.gettext("Fix roles…"), f"{FIX_OPTION}:{note.id}"),
        _option(t.gettext("Show the whole note"), f"{SHOW_OPTION}:{note.id}"),
    ]
    if note.pr_url and len(note.pr_url) <= 3000:
        options.append({**_option(t.gettext("Open the PR"), f"pr:{note.id}"), "url": note.pr_url})
    return {
        "type": "overflow",
        "action_id": f"{NOTE_MENU_ACTION_ID}:{note.id}",
        "options": options,
    }


def _option(text: str, value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": text}, "value": value}


def menu_note_block(
    note: Note,
    role: str | None,
    taxonomy: Taxonomy,
    t: Texts,
    *,
    revised: bool = False,
    mark: str = "",
) -> Block:
    """A note with its "…" menu, marked "revised" when its posted message was updated, or
    with another `mark` (a line of mrkdwn, already escaped)."""
    block = note_block(note, role, taxonomy, t)
    mark = revised_mark(t) if revised else mark
    if mark:
        text = clip(block["text"]["text"], MAX_SECTION_TEXT - len(mark) - 1)
        block["text"]["text"] = f"{text}\n{mark}"
    block["accessory"] = note_menu(note, t)
    return block


def note_plain_text(note: Note, role: str | None, t: Texts) -> str:
    """The notification/fallback line for a note (the fallback `text` is mrkdwn too)."""
    verdict = note.verdict_for(role) if role else note.verdict
    url = f" {escape(note.pr_url)}" if note.pr_url else ""
    return f"[{t.verdict_word(verdict)}] {escaped(note.title, MAX_TITLE_CHARS)}{url}"


def header_block(text: str) -> Block:
    return {
        "type": "header",
        "text": {"type": "plain_text", "text": clip(text, MAX_HEADER_TEXT, plain=True)},
    }


def context_block(*texts: str) -> Block:
    elements = [{"type": "mrkdwn", "text": clip(t, MAX_SECTION_TEXT)} for t in texts]
    return {"type": "context", "elements": elements[:MAX_CONTEXT_ELEMENTS]}


def section_block(text: str, block_id: str | None = None) -> Block:
    block: Block = {
        "type": "section",
        "text": {"type": "mrkdwn", "text": clip(text, MAX_SECTION_TEXT)},
    }
    if block_id:
        block["block_id"] = block_id
    return block


def button(text: str, action_id: str, value: str, style: str | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "text": {"type": "plain_text", "text": clip(text, MAX_BUTTON_TEXT, plain=True)},
        "action_id": action_id,
        "value": value,
    }
    if style:
        element["style"] = style
    return element


def block_text_size(block: Block) -> int:
    """Characters of text a block carries (what Slack's total-size check counts)."""
    size = 0
    stack: list[Any] = [block]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "text" and isinstance(value, str):
                    size += len(value)
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return size


def pack_groups(
    groups: Sequence[Sequence[Block]],
    max_blocks: int = MAX_MESSAGE_BLOCKS,
    max_chars: int = MAX_MESSAGE_TEXT_CHARS,
    reserve_blocks: int = 0,
    reserve_chars: int = 0,
) -> list[list[Block]]:
    """Split groups of blocks (one group per note) over messages within Block Kit limits.

    A group is never split; every group lands in exactly one message, in order.
    `reserve_*` keep room in each message for blocks the caller adds (header, buttons).
    """
    block_room = max_blocks - reserve_blocks
    char_room = max_chars - reserve_chars
    messages: list[list[Block]] = []
    current: list[Block] = []
    chars = 0
    for group in groups:
        size = sum(block_text_size(b) for b in group)
        if len(group) > block_room or size > char_room:
            raise ValueError("a single note does not fit in one message")
        if current and (len(current) + len(group) > block_room or chars + size > char_room):
            messages.append(current)
            current, chars = [], 0
        current.extend(group)
        chars += size
    if current:
        messages.append(current)
    return messages
