"""Buttons: subscribe / unsubscribe (App Home or a digest message) and "More" pages."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, Respond
from slack_sdk import WebClient

from bot.delivery.languages import channel_texts, reader_texts
from bot.i18n.texts import Texts
from bot.notes.digest import now_utc
from bot.readers import preferences
from bot.render.blocks import (
    MORE_ACTION_ID,
    RESUME_ACTION_ID,
    SUBSCRIBE_ACTION_ID,
    UNSUBSCRIBE_ACTION_ID,
    UNWATCH_ACTION_ID,
    escaped,
)
from bot.render.replies import Message, MorePage, error_reply, roles_reply
from bot.services import Services
from bot.slack.listeners.acking import AckFirst
from bot.slack.listeners.commands import send_ephemeral
from bot.slack.prdigest import (
    app_home,
    change_subscriptions,
    left_out_page,
    lookup_page,
    week_page,
)

log = logging.getLogger(__name__)


def _action_pattern(base: str) -> re.Pattern[str]:
    """The plain action id (digest messages) or its per-role form (App Home)."""
    return re.compile(rf"^{re.escape(base)}(:[a-z0-9-]+)?$")


def who_asks(body: dict[str, Any]) -> tuple[str | None, str | None]:
    user = body.get("user") or {}
    team = (body.get("team") or {}).get("id") or user.get("team_id")
    return team, user.get("id")


def channel_of(body: dict[str, Any]) -> str | None:
    container = body.get("container") or {}
    return container.get("channel_id") or (body.get("channel") or {}).get("id")


def clicker_texts(services: Services, client: WebClient, body: dict[str, Any]) -> Texts:
    """The language of whoever clicked (after the acknowledgement: it may ask Slack)."""
    team_id, user_id = who_asks(body)
    if not team_id or not user_id:
        return channel_texts(services.settings)
    return reader_texts(services, client, team_id, user_id, now_utc())


Listener = Callable[..., None]


def register(listeners: AckFirst, services: Services) -> None:
    """One listener per button; each hands Bolt's arguments to a function below."""
    listeners.action(_action_pattern(SUBSCRIBE_ACTION_ID))(
        subscription_button(services, subscribe=True)
    )
    listeners.action(_action_pattern(UNSUBSCRIBE_ACTION_ID))(
        subscription_button(services, subscribe=False)
    )
    listeners.action(RESUME_ACTION_ID)(resume_button(services))
    listeners.action(_action_pattern(UNWATCH_ACTION_ID))(unwatch_button(services))
    listeners.action(MORE_ACTION_ID)(more_button(services))


# Bolt passes arguments by parameter name, so each button gets a function with exactly the
# names it needs, bound to the services it works with.


def subscription_button(services: Services, subscribe: bool) -> Listener:
    def on_subscription_click(
        ack: Ack,
        body: dict[str, Any],
        action: dict[str, Any],
        respond: Respond | None,
        client: WebClient,
    ) -> None:
        ack()
        change_subscription(services, body, action, respond, client, subscribe=subscribe)

    return on_subscription_click


def resume_button(services: Services) -> Listener:
    def on_resume(
        ack: Ack, body: dict[str, Any], respond: Respond | None, client: WebClient
    ) -> None:
        ack()
        team_id, user_id = who_asks(body)
        if team_id and user_id:
            t = clicker_texts(services, client, body)
            reply = preferences.resume(services, team_id, user_id, now_utc(), t)
            answer(services, body, respond, client, team_id, user_id, reply, t)

    return on_resume


def unwatch_button(services: Services) -> Listener:
    def on_unwatch(
        ack: Ack,
        body: dict[str, Any],
        action: dict[str, Any],
        respond: Respond | None,
        client: WebClient,
    ) -> None:
        ack()
        team_id, user_id = who_asks(body)
        query = str(action.get("value") or "")
        if team_id and user_id and query:
            t = clicker_texts(services, client, body)
            reply = preferences.unwatch(services, team_id, user_id, query, t)
            answer(services, body, respond, client, team_id, user_id, reply, t)

    return on_unwatch


def more_button(services: Services) -> Listener:
    def on_more(
        ack: Ack,
        body: dict[str, Any],
        action: dict[str, Any],
        respond: Respond | None,
        client: WebClient,
    ) -> None:
        ack()
        _team, user_id = who_asks(body)
        t = clicker_texts(services, client, body)
        reply = more_page(services, str(action.get("value") or ""), t)
        if user_id:
            send_ephemeral(respond, client, channel_of(body), user_id, reply)

    return on_more


def change_subscription(
    services: Services,
    body: dict[str, Any],
    action: dict[str, Any],
    respond: Respond | None,
    client: WebClient,
    subscribe: bool,
) -> None:
    """Subscribe to or leave the button's role; App Home is published again, a message
    gets an ephemeral reply."""
    team_id, user_id = who_asks(body)
    slug = str(action.get("value") or "")
    if not team_id or not user_id:
        log.warning("button click without team or user ignored")
        return
    role = services.taxonomy.resolve(slug)
    in_home = (body.get("container") or {}).get("type") == "view"
    t = clicker_texts(services, client, body)
    if role is None:
        reply = error_reply(
            t.gettext("`{role}` is no longer a role; nothing was changed.", role=escaped(slug, 60))
        )
    else:
        reply = change_subscriptions(
            services, team_id, user_id, [role.slug], t, subscribe=subscribe
        )
    if in_home:
        view = app_home(services, team_id, user_id, now_utc(), t)
        client.views_publish(user_id=user_id, view=view)
        return
    channel = channel_of(body)
    if channel:
        client.chat_postEphemeral(channel=channel, user=user_id, **reply)
    else:
        send_ephemeral(respond, client, None, user_id, reply)


def more_page(services: Services, value: str, t: Texts) -> Message:
    """The next page a "More" button asks for, or why the button no longer works."""
    page = MorePage.decode(value)
    if page is None:
        return error_reply(t.gettext("That button no longer works; run the command again."))
    if page.kind == MorePage.ROLES:
        return roles_reply(services.taxonomy, t, page.offset)
    if page.kind == MorePage.WEEK:
        return week_page(services, page.query, page.offset, t)
    if page.kind == MorePage.LEFT_OUT:
        return left_out_page(services, page.query, page.offset, t)
    return lookup_page(services, page.query, page.offset, t)


def answer(
    services: Services,
    body: dict[str, Any],
    respond: Respond | None,
    client: WebClient,
    team_id: str,
    user_id: str,
    reply: dict[str, Any],
    t: Texts,
) -> None:
    """From App Home: publish the view again; from a message: reply to the user."""
    if (body.get("container") or {}).get("type") == "view":
        view = app_home(services, team_id, user_id, now_utc(), t)
        client.views_publish(user_id=user_id, view=view)
    else:
        send_ephemeral(respond, client, channel_of(body), user_id, reply)
