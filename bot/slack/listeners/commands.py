"""`/prdigest`: acknowledge at once, then parse, run and answer with an ephemeral reply."""

from __future__ import annotations

import time
from typing import Any

from slack_bolt import Ack, BoltContext, Respond
from slack_sdk import WebClient

from bot.delivery.languages import channel_texts, reader_texts
from bot.notes.digest import now_utc
from bot.render.replies import error_reply
from bot.services import Services
from bot.slack.listeners.acking import AckFirst
from bot.slack.prdigest import COMMAND_NAME, parse_command, run_command

RECEIVED = "received_at"  # in the context: when the command arrived (time.monotonic)


def register(listeners: AckFirst, services: Services) -> None:
    def acknowledge_command(ack: Ack, command: dict[str, Any], context: BoltContext) -> None:
        """In the request's thread: refuse a command without team or user in the
        acknowledgement itself, else acknowledge it empty."""
        context[RECEIVED] = time.monotonic()
        if not command.get("team_id") or not command.get("user_id"):
            t = channel_texts(services.settings)  # nobody to ask Slack about
            ack(**error_reply(t.gettext("This request names no team or user; nothing was done.")))
            return
        ack()

    def handle_prdigest(
        command: dict[str, Any], respond: Respond | None, client: WebClient, context: BoltContext
    ) -> None:
        """After the acknowledgement, on the reply pool: the reader's language (which may
        ask Slack) and the reply."""
        started = float(context.get(RECEIVED) or time.monotonic())
        team_id, user_id = command.get("team_id"), command.get("user_id")
        if not team_id or not user_id:
            return  # refused in the acknowledgement
        now = now_utc()
        t = reader_texts(services, client, str(team_id), str(user_id), now)
        parsed = parse_command(str(command.get("text") or ""), services.taxonomy)
        reply = run_command(services, parsed, str(team_id), str(user_id), t, now)
        send_ephemeral(respond, client, command.get("channel_id"), str(user_id), reply)
        services.metrics.command_handled(parsed.kind.value, time.monotonic() - started)

    listeners.command(COMMAND_NAME, ack=acknowledge_command)(handle_prdigest)


def send_ephemeral(
    respond: Respond | None,
    client: WebClient,
    channel_id: str | None,
    user_id: str,
    reply: dict[str, Any],
) -> None:
    """To the response_url when Slack gave one (works in DMs too), else chat.postEphemeral.
    Bolt hands every listener a `respond`, with or without a URL behind it."""
    if respond is not None and respond.response_url:
        respond(response_type="ephemeral", replace_original=False, **reply)
    elif channel_id:
        client.chat_postEphemeral(channel=channel_id, user=user_id, **reply)
