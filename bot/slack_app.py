"""The Bolt app: built from services and a WebClient, with every listener registered.

Nothing here runs at import time; `prdigest serve` and the tests call `build_app`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from slack_bolt import App
from slack_bolt.context.respond import Respond
from slack_sdk import WebClient
from slack_sdk.errors import SlackClientError

from bot.listeners import actions, commands, events
from bot.render.replies import failure_reply
from bot.services import Services

log = logging.getLogger(__name__)

LISTENER_THREADS = 16
BOT_TOKEN_VARIABLE = "SLACK_BOT_TOKEN"


def build_app(
    services: Services,
    client: WebClient,
    *,
    signing_secret: str | None,
    socket_mode: bool,
) -> App:
    """A Bolt app on `client`; HTTP mode verifies every request with `signing_secret`.

    The token is not checked here (no Web API call at start-up); the health check and the
    first request do that.
    """
    if not socket_mode and not signing_secret:
        raise ValueError("HTTP mode needs a signing secret (SLACK_SIGNING_SECRET)")
    with _bot_token_left_to_client():
        app = App(
            name="prdigest",
            client=client,
            signing_secret=signing_secret or "",
            token_verification_enabled=False,
            process_before_response=False,
            listener_executor=ThreadPoolExecutor(
                max_workers=LISTENER_THREADS, thread_name_prefix="prdigest-listener"
            ),
        )
    commands.register(app, services)
    actions.register(app, services)
    events.register(app, services)
    app.error(_answer_failure)
    return app


@contextmanager
def _bot_token_left_to_client() -> Iterator[None]:
    """Bolt falls back to the SLACK_BOT_TOKEN variable when it is given no `token`, and then
    warns on every start that `client`'s token wins. `client` already carries the token
    (from settings), so Bolt is built without seeing the variable."""
    saved = os.environ.pop(BOT_TOKEN_VARIABLE, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[BOT_TOKEN_VARIABLE] = saved


def _answer_failure(
    error: Exception, body: dict[str, Any], respond: Respond | None, client: WebClient
) -> None:
    """The one error handler: log the details, tell the user briefly, never a traceback."""
    log.error("listener failed: %s", error, exc_info=error)
    reply = failure_reply()
    try:
        if respond is not None:
            respond(response_type="ephemeral", replace_original=False, **reply)
            return
        channel, user = _channel_and_user(body)
        if channel and user:
            client.chat_postEphemeral(channel=channel, user=user, **reply)
    except (SlackClientError, OSError) as exc:
        log.warning("could not tell the user about the failure: %s", exc)


def _channel_and_user(body: dict[str, Any]) -> tuple[str | None, str | None]:
    channel = body.get("channel_id") or (body.get("channel") or {}).get("id")
    user = body.get("user_id") or (body.get("user") or {}).get("id")
    return channel, user
