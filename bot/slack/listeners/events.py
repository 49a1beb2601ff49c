"""Events API: the App Home tab is rendered each time a user opens it."""

from __future__ import annotations

from typing import Any

from slack_sdk import WebClient

from bot.delivery.languages import reader_texts
from bot.notes.digest import now_utc
from bot.services import Services
from bot.slack.listeners.acking import AckFirst
from bot.slack.prdigest import app_home


def register(listeners: AckFirst, services: Services) -> None:
    @listeners.event("app_home_opened")
    def publish_home(event: dict[str, Any], body: dict[str, Any], client: WebClient) -> None:
        """Runs after the event is acknowledged: views.publish may take its time."""
        if event.get("tab", "home") != "home":
            return
        user_id = event.get("user")
        team_id = body.get("team_id") or (body.get("authorizations") or [{}])[0].get("team_id")
        if not user_id or not team_id:
            return
        now = now_utc()
        t = reader_texts(services, client, str(team_id), str(user_id), now)
        view = app_home(services, str(team_id), str(user_id), now, t)
        client.views_publish(user_id=str(user_id), view=view)
