"""What Slack reports of a reader (`users.info`: time zone and locale), cached in the store
and asked again once a day, so each reader's DM goes out at their own hour and in their own
language without one Slack call per message."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.domain import ReaderProfile
from bot.store import Store

log = logging.getLogger(__name__)

PROFILE_MAX_AGE = timedelta(days=1)  # Slack's answer is asked again after this


def fetch_profile(client: WebClient, user_id: str, now: datetime) -> ReaderProfile | None:
    """Ask Slack (`users.info` with the locale); None when Slack does not answer."""
    try:
        answer = client.users_info(user=user_id, include_locale=True)
    except (SlackApiError, SlackClientError, OSError) as exc:
        log.warning("users.info for %s failed (%s): using the cached profile", user_id, exc)
        return None
    user = answer.get("user") or {}
    tz = user.get("tz") if isinstance(user.get("tz"), str) else None
    locale = user.get("locale") if isinstance(user.get("locale"), str) else None
    return ReaderProfile(tz=tz or None, locale=locale or None, fetched_at=now)


def reader_profile(
    store: Store, client: WebClient | None, team_id: str, user_id: str, now: datetime
) -> ReaderProfile | None:
    """The reader's profile: the cached one while fresh, else Slack's answer (kept), else
    the stale cache (Slack down) or None (never asked, or no client)."""
    cached = store.readers.profile(team_id, user_id)
    if cached is not None and now - cached.fetched_at < PROFILE_MAX_AGE:
        return cached
    if client is None:
        return cached
    fresh = fetch_profile(client, user_id, now)
    if fresh is None:
        return cached
    store.readers.save_profile(team_id, user_id, fresh)
    return fresh
