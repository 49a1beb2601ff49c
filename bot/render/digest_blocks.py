"""Block Kit messages of the weekly digest: the channel parent, role threads and DMs.

Each function returns message payloads (`{"text": ..., "blocks": [...]}`); nothing here
talks to Slack. Long lists are split with `pack_groups`, which never cuts a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bot.classify.taxonomy import Taxonomy
from bot.domain import Digest, Note, Role, RoleSection, Verdict
from bot.i18n.texts import Texts
from bot.render.blocks import (
    SUBSCRIBE_ACTION_ID,
    Block,
    block_text_size,
    button,
    context_block,
    escape,
    escaped,
    header_block,
    link,
    menu_note_block,
    note_block,
    pack_groups,
    section_block,
)

Message = dict[str, Any]

TOP_DEEP_READS = 5
# Room kept in every reply for its heading and the subscribe button.
_RESERVE_BLOCKS = 2
_RESERVE_CHARS = 600


def addition_label(t: Texts) -> str:
    """What marks a follow-up to a digest already posted: "补充 / addition" in `BOTH`."""
    return t.side_by_side("addition")


def digest_title(week: str, addition: bool, t: Texts) -> str:
    """ "vLLM 精读推荐 · 2026-W48", with "· 补充 / addition" for a follow-up."""
    name = t.side_by_side("vLLM reading list", both="{zh}")
    title = f"{name} · {week}"
    return f"{title} · {addition_label(t)}" if addition else title


def note_count(count: int, t: Texts) -> str:
    return t.ngettext("{count} note", "{count} notes", count, count=count)


def _tally(section: RoleSection, t: Texts) -> str:
    counts = section.counts()
    return " · ".join(f"{t.verdict(v)} {counts[v]}" for v in Verdict if counts[v])


def _note_link(note: Note) -> str:
    return link(note.pr_url, note.title, 150) if note.pr_url else escaped(note.title, 150)


def parent_message(digest: Digest, t: Texts) -> Message:
    """Header, notes per role with verdict counts, and the week's top deep reads."""
    title = digest_title(digest.week, digest.addition, t)
    blocks: list[Block] = [header_block(title)]
    if digest.is_empty:
        blocks.append(section_block(t.side_by_side("No new notes this week.")))
        return {"text": t.gettext("{title}: no new notes", title=title), "blocks": blocks}
    intro = (
        t.side_by_side("Notes that arrived after this week's digest")
        if digest.addition
        else t.side_by_side("This week's PR reading list")
    )
    count = len(digest.notes)
    lines = [f"*{intro}* — {note_count(count, t)}"]
    for section in digest.sections:
        name = escape(t.role_name(section.role))
        lines.append(f"• *{name}*: {len(section.notes)}  ({_tally(section, t)})")
    blocks.append(section_block("\n".join(lines)))
    top = digest.top_deep_reads(TOP_DEEP_READS)
    if top:
        reads = [f"{i}. {_note_link(n)}" for i, n in enumerate(top, start=1)]
        heading = t.side_by_side("Top deep reads")
        blocks.append(section_block(f"*{heading}*\n" + "\n".join(reads)))
    blocks.append(context_block(t.side_by_side("One thread reply per role below.")))
    return {"text": f"{title}: {note_count(count, t)}", "blocks": blocks}


def subscribe_block(role: Role, t: Texts) -> Block:
    label = t.gettext("Subscribe me to {role}", role=t.role_name(role, both="{en}"))
    return {
        "type": "actions",
        "block_id": f"subscribe-{role.slug}",
        "elements": [button(label, SUBSCRIBE_ACTION_ID, role.slug, style="primary")],
    }


def role_heading(section: RoleSection, addition: bool, t: Texts, part: str = "") -> Block:
    """The first block of a role's thread reply: the role, its note count and verdicts."""
    label = f" · {addition_label(t)}" if addition else ""
    return section_block(
        f"*{escape(t.role_name(section.role))}*{part} — {note_count(len(section.notes), t)} · "
        f"{_tally(section, t)}{label}"
    )


def role_messages(
    section: RoleSection, digest: Digest, taxonomy: Taxonomy, t: Texts
) -> list[Message]:
    """One role's thread replies: its notes best first, split where Block Kit requires.

    Every reply starts with the role heading; the last one carries the subscribe button.
    """
    role = section.role
    groups = [[menu_note_block(n, role.slug, taxonomy, t)] for n in section.notes]
    packed = pack_groups(groups, reserve_blocks=_RESERVE_BLOCKS, reserve_chars=_RESERVE_CHARS)
    out: list[Message] = []
    for index, chunk in enumerate(packed, start=1):
        part = f" ({index}/{len(packed)})" if len(packed) > 1 else ""
        blocks: list[Block] = [role_heading(section, digest.addition, t, part), *chunk]
        if index == len(packed):
            blocks.append(subscribe_block(role, t))
        out.append(
            {
                "text": f"{digest_title(digest.week, digest.addition, t)} · "
                f"{escape(t.role_name(role))}{part}",
                "blocks": blocks,
            }
        )
    return out


@dataclass(frozen=True)
class DmSection:
    """One heading of a DM: a subscribed role's new notes with a link to its channel
    thread, or (`heading` set, `role` None) a saved search or "while you were away"."""

    role: Role | None
    notes: tuple[Note, ...]
    thread_link: str | None
    heading: str = ""  # plain text, escaped here
    footer: str = ""  # mrkdwn, already escaped


def dm_messages(
    week: str,
    addition: bool,
    sections: Sequence[DmSection],
    taxonomy: Taxonomy,
    t: Texts,
    closing: Sequence[Block] = (),
) -> list[Message]:
    """A subscriber's DM: the new notes of their roles, split only when needed; `closing`
    ends the last message (what was left out over the reader's budget)."""
    title = digest_title(week, addition, t)
    groups: list[list[Block]] = []
    for section in sections:
        thread = (
            " · " + link(section.thread_link, t.side_by_side("channel thread"), 100)
            if section.thread_link
            else ""
        )
        label = section.heading or (t.role_name(section.role) if section.role else "")
        heading = section_block(f"*{escaped(label, 200)}* — {len(section.notes)}{thread}")
        slug = section.role.slug if section.role else None
        for i, note in enumerate(section.notes):
            block = note_block(note, slug, taxonomy, t)
            groups.append([heading, block] if i == 0 else [block])
        if section.footer and groups:
            groups[-1].append(context_block(section.footer))
    closing = list(closing)
    packed = pack_groups(
        groups,
        reserve_blocks=1 + len(closing),
        reserve_chars=_RESERVE_CHARS + sum(block_text_size(b) for b in closing),
    )
    total = sum(len(s.notes) for s in sections)
    out: list[Message] = []
    for index, chunk in enumerate(packed, start=1):
        part = f" ({index}/{len(packed)})" if len(packed) > 1 else ""
        top: Block = header_block(f"{title}{part}")
        text = t.ngettext(
            "{title}: {count} note for you{part}",
            "{title}: {count} notes for you{part}",
            total,
            title=title,
            count=total,
            part=part,
        )
        end = closing if index == len(packed) else []
        out.append({"text": text, "blocks": [top, *chunk, *end]})
    return out


def note_ids_in(message: Message) -> list[int]:
    """The ids of the notes a message shows, in order (their blocks are `note-<id>`)."""
    ids = []
    for block in message["blocks"]:
        block_id = str(block.get("block_id", ""))
        if block_id.startswith("note-"):
            ids.append(int(block_id.removeprefix("note-")))
    return ids


def message_text(message: Message) -> str:
    """A message's blocks as plain lines, for the terminal (`prdigest post --dry-run`)."""
    lines: list[str] = []
    for block in message.get("blocks", []):
        kind = block.get("type")
        if kind in ("header", "section"):
            lines.append(str(block["text"]["text"]))
        elif kind == "context":
            lines.append(" ".join(str(e.get("text", "")) for e in block.get("elements", [])))
        elif kind == "actions":
            labels = [str(e["text"]["text"]) for e in block.get("elements", []) if "text" in e]
            lines.append(" ".join(f"[{label}]" for label in labels))
    return "\n".join(lines) if lines else str(message.get("text", ""))
