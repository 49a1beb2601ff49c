"""Revisions in place: a note revised or fixed after it was posted is updated where it is.

The ledger knows which channel message holds each note and what the note looked like
when it went out (its content hash and fix revision). A later run re-renders every such
message with the notes as they are now, marks the changed ones "已更新 / revised" and
replaces it with `chat.update`: the note keeps its place in its thread, nothing is posted
again and no DM is re-sent.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.delivery.languages import channel_texts
from bot.delivery.pacing import ChannelPacer
from bot.delivery.posting import EVENT_TYPE, DeliveryError, explain_slack_error, explain_unreachable
from bot.domain import Role, RoleSection
from bot.render.blocks import menu_note_block
from bot.render.digest_blocks import Message, role_heading
from bot.services import Services
from bot.store.ledger import Ledger, StaleMessage

log = logging.getLogger(__name__)

# The message is gone or no longer ours: give up on it (and do not try again each run).
_GONE = frozenset({"message_not_found", "cant_update_message", "channel_not_found", "is_archived"})


@dataclass
class UpdateResult:
    """What one pass of in-place updates did."""

    updated: int = 0
    skipped: list[str] = field(default_factory=list)  # messages given up on, with why


def revised_payload(services: Services, message: StaleMessage) -> Message:
    """The message as it would be rendered now: same blocks, current notes, marks."""
    taxonomy = services.taxonomy
    t = channel_texts(services.settings)  # thread messages are the channel's
    try:
        role = taxonomy.get(message.role)
    except KeyError:  # the role left the taxonomy since: keep its slug as its name
        role = Role(slug=message.role, name_zh=message.role, name_en=message.role)
    notes = {n.id: n for n in services.store.get_notes(message.role_note_ids)}
    index = message.part.rsplit(":", 1)[-1]
    label = f" ({index}/{message.role_parts})" if message.role_parts > 1 else ""
    blocks: list[dict[str, Any]] = []
    for position, block in enumerate(message.payload.get("blocks") or []):
        block_id = str(block.get("block_id") or "")
        note_id = (
            int(block_id[5:]) if block_id.startswith("note-") and block_id[5:].isdigit() else 0
        )
        if note_id in notes:
            revised = note_id in message.revised
            blocks.append(menu_note_block(notes[note_id], role.slug, taxonomy, t, revised=revised))
        elif position == 0 and block.get("type") == "section" and notes:
            section = RoleSection(role=role, notes=tuple(notes.values()))
            blocks.append(role_heading(section, message.addition, t, label))
        else:
            blocks.append(block)
    return {**message.payload, "blocks": blocks}


def update_revised_messages(
    services: Services,
    client: WebClient,
    channel: str,
    *,
    note_ids: Iterable[int] | None = None,
    per_second: float | None = None,
) -> UpdateResult:
    """Update every posted thread message whose notes were revised or fixed since.

    `note_ids` limits the pass to the messages holding those notes (after a fix from
    Slack). Raises DeliveryError when Slack refuses the token or cannot be reached.
    """
    ledger = Ledger(services.store.engine)
    rate = services.settings.channel_rate if per_second is None else per_second
    pacer = ChannelPacer(rate)
    result = UpdateResult()
    for message in ledger.stale_messages(channel, note_ids):
        payload = revised_payload(services, message)
        pacer.wait(message.channel)
        try:
            client.chat_update(
                channel=message.channel,
                ts=message.ts,
                text=str(payload.get("text", "")),
                blocks=payload.get("blocks"),
                metadata={
                    "event_type": EVENT_TYPE,
                    "event_payload": {"run_id": message.run_key, "part": message.part},
                },
            )
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "unknown_error")
            if error not in _GONE:
                raise DeliveryError(
                    explain_slack_error(error, message.channel, message.part)
                ) from None
            log.warning(
                "digest message %s (%s) cannot be updated (%s); left as posted",
                message.part,
                message.ts,
                error,
            )
            result.skipped.append(f"{message.part}: {error}")
        except (SlackClientError, OSError) as exc:
            raise DeliveryError(explain_unreachable(client, exc)) from None
        else:
            result.updated += 1
            log.info("updated digest message %s in place (%s)", message.part, message.ts)
        ledger.record_update(message, payload)
    return result
