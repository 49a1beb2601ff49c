"""The Bolt app: built from services and a WebClient, with every listener registered.

Nothing here runs at import time; `prdigest serve` and the tests call `build_app`.
"""

from __future__ import annotations

import copy
import functools
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

from slack_bolt import App
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.context.respond import Respond
from slack_bolt.listener.custom_listener import CustomListener
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.listeners import actions, commands, corrections, events
from bot.listeners.payloads import PayloadCheck
from bot.render.replies import failure_reply, store_unavailable_reply
from bot.services import Services
from bot.slack_client import is_unreachable
from bot.store import describe_unavailable, is_unavailable
from bot.watch import SlackLink

log = logging.getLogger(__name__)

LISTENER_THREADS = 16
BOT_TOKEN_VARIABLE = "SLACK_BOT_TOKEN"


def build_app(
    services: Services,
    client: WebClient,
    *,
    signing_secret: str | None,
    socket_mode: bool,
    link: SlackLink | None = None,
) -> App:
    """A Bolt app on `client`; HTTP mode verifies every request with `signing_secret`.

    Requests are authorized from what `link` learnt from `auth.test` (serve's watching
    thread asks it), never by a Web API call in the request's path: a slash command is
    acknowledged at once even while Slack's Web API is unreachable.
    """
    if not socket_mode and not signing_secret:
        raise ValueError("HTTP mode needs a signing secret (SLACK_SIGNING_SECRET)")
    link = link or SlackLink(client)
    # Bolt gives every request a client made like this one, with the authorized token.
    template = copy.copy(client)
    template.token = None

    def authorize(
        enterprise_id: str | None, team_id: str | None, user_id: str | None
    ) -> AuthorizeResult:
        # A plain function: Bolt passes arguments by parameter name.
        return link.authorize(enterprise_id, team_id, user_id)

    with _bot_token_left_to_client():
        app = App(
            name="prdigest",
            client=template,
            signing_secret=signing_secret or "",
            authorize=authorize,
            before_authorize=PayloadCheck(lambda: link.team_id),
            process_before_response=False,
            listener_executor=ThreadPoolExecutor(
                max_workers=LISTENER_THREADS, thread_name_prefix="prdigest-listener"
            ),
        )
    commands.register(app, services)
    actions.register(app, services)
    corrections.register(app, services)
    events.register(app, services)
    answer_failure = _failure_handler(services, link)
    app.error(answer_failure)
    _answer_failures_inside(app, answer_failure)
    return app


def _answer_failures_inside(app: App, answer_failure: Callable[..., None]) -> None:
    """Run the error handler inside every listener that acknowledges by itself.

    Bolt's threaded runner loses the acknowledgement when such a listener raises soon after
    `ack()` (it resets the recorded ack before the request thread has read it, and Slack
    then reports the command as failed): a database that refuses connections does exactly
    that. The one error handler stays the only place that decides what to answer.
    """
    for listener in app._listeners:  # no public way to reach the registered functions
        if isinstance(listener, CustomListener) and not listener.auto_acknowledgement:
            listener.ack_function = _answering(listener.ack_function, answer_failure)


def _answering(function: Callable[..., Any], answer_failure: Callable[..., None]) -> Any:
    @functools.wraps(function)
    def run(**kwargs: Any) -> Any:
        try:
            return function(**kwargs)
        except Exception as error:
            ack = kwargs.get("ack")
            if ack is not None and ack.response is None:
                ack()
            body = kwargs.get("body") or kwargs.get("command") or {}
            answer_failure(error, body, kwargs.get("respond"), kwargs.get("client"))
            return None

    return run


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


def _failure_handler(services: Services, link: SlackLink) -> Callable[..., None]:
    def answer_failure(
        error: Exception, body: dict[str, Any], respond: Respond | None, client: WebClient
    ) -> None:
        """The one error handler: tell the user briefly, never a traceback. A database or
        Slack outage is one line (the Slack link logs its outage once); anything else is
        logged with its details."""
        reply = failure_reply()
        if is_unavailable(error):
            log.warning(
                "a request found the store unavailable: %s",
                describe_unavailable(error, services.settings.database_url),
            )
            reply = store_unavailable_reply()
        elif is_unreachable(error):
            link.report(error)
        elif isinstance(error, SlackApiError):
            method = str(error.response.api_url).rsplit("/", 1)[-1]
            log.warning("Slack answered %s to %s", error.response.get("error"), method)
        else:
            log.error("listener failed: %s", error, exc_info=error)
        try:
            if respond is not None and respond.response_url:
                respond(response_type="ephemeral", replace_original=False, **reply)
                return
            channel, user = _channel_and_user(body)
            if channel and user:
                client.chat_postEphemeral(channel=channel, user=user, **reply)
        except (SlackClientError, OSError) as exc:
            if is_unreachable(exc):
                link.report(exc)
            else:
                log.warning("could not tell the user about the failure: %s", exc)

    return answer_failure


def _channel_and_user(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where to tell the user; None for anything that is not plain text where Slack puts
    it (the error handler also sees requests that failed before being checked)."""

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    def inner_id(value: Any) -> str | None:
        return text(value.get("id")) if isinstance(value, dict) else None

    channel = text(body.get("channel_id")) or inner_id(body.get("channel"))
    user = text(body.get("user_id")) or inner_id(body.get("user"))
    return channel, user
