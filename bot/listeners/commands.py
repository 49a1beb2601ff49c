"""`/prdigest`: ack at once, then parse, run and answer with an ephemeral reply."""

from __future__ import annotations

import time
from typing import Any

from slack_bolt import Ack, App
from slack_bolt.context.respond import Respond
from slack_sdk import WebClient

from bot.commands import COMMAND_NAME, parse_command, run_command
from bot.render.replies import error_reply
from bot.services import Services


def register(app: App, services: Services) -> None:
    @app.command(COMMAND_NAME)
    def handle_prdigest(
        ack: Ack, command: dict[str, Any], respond: Respond | None, client: WebClient
    ) -> None:
        started = time.monotonic()
        team_id, user_id = command.get("team_id"), command.get("user_id")
        if not team_id or not user_id:
            ack(**error_reply("This request names no team or user; nothing was done."))
            return
        ack()
        parsed = parse_command(str(command.get("text") or ""), services.taxonomy)
        reply = run_command(services, parsed, str(team_id), str(user_id))
        send_ephemeral(respond, client, command.get("channel_id"), str(user_id), reply)
        services.metrics.command_handled(parsed.kind.value, time.monotonic() - started)


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
