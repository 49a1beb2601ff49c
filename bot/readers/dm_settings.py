"""A reader's own DM settings from `/prdigest`: the reading budget (`budget`) and the day,
time and on/off of their weekly DM (`dm`), shown and changed, in the reader's language.

Each function does one change for one user and returns the reply; bad input never gets
here (the parser in `bot.slack.prdigest` refuses it). The reader's Slack profile (their
time zone) is the caller's to fetch: it comes from Slack.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta

from bot.config import Settings
from bot.domain import Pause, ReaderProfile, ReaderSettings
from bot.i18n.texts import Texts
from bot.readers.schedule import dm_schedule, reader_zone
from bot.render.reader_settings import DmTimes, budget_reply, dm_reply
from bot.render.replies import Message
from bot.services import Services
from bot.store.ledger import Ledger, slot_key


def reader_budget(settings: Settings, own: ReaderSettings) -> int:
    """How many notes the reader's DM shows in full (0: all): theirs, else the team's."""
    return settings.dm_budget if own.budget is None else own.budget


def budget(
    services: Services, team_id: str, user_id: str, change: str, value: int | None, t: Texts
) -> Message:
    """`budget` shows it (`change` "show"), sets it ("set", `value` 0 for all) or goes back
    to PRDIGEST_DM_BUDGET ("default")."""
    readers = services.store.readers
    if change == "show":
        own = readers.settings(team_id, user_id)
        return budget_reply(reader_budget(services.settings, own), own.budget is not None, False, t)
    updated = readers.update_settings(team_id, user_id, budget=value if change == "set" else None)
    return budget_reply(
        reader_budget(services.settings, updated), updated.budget is not None, True, t
    )


def dm_times(
    services: Services,
    team_id: str,
    user_id: str,
    own: ReaderSettings,
    profile: ReaderProfile | None,
    pause: Pause | None,
    now: datetime,
) -> DmTimes:
    """When the reader's DMs go out and the next one, as `/prdigest dm` and App Home say.

    A moment that passed less than PRDIGEST_MISFIRE_GRACE ago and was not handled yet (the
    reader just chose it, or just subscribed) is next: the next tick sends it."""
    settings = services.settings
    zone = reader_zone(settings, profile)
    from_slack = profile is not None and profile.tz == zone.key
    schedule = dm_schedule(settings, own, profile)
    paused_until = pause.until if pause is not None and pause.active(now) else None
    next_at = None
    if not own.dm_off:
        if paused_until is None:
            due = schedule.latest(now, settings.misfire_grace)
            handled = Ledger(services.store.engine).handled_moments(
                now - settings.misfire_grace - timedelta(days=1)
            )
            if due is not None and (team_id, user_id, slot_key(due)) not in handled:
                next_at = due
        if next_at is None:
            next_at = schedule.next_after(max(now, paused_until or now))
    return DmTimes(
        off=own.dm_off,
        weekday=own.dm_weekday,
        at=own.dm_time,
        zone=zone.key,
        zone_from_slack=from_slack,
        next_at=next_at.astimezone(zone) if next_at is not None else None,
        paused_until=paused_until,
        due_now=next_at is not None and next_at <= now,
    )


def dm(
    services: Services,
    team_id: str,
    user_id: str,
    now: datetime,
    profile: ReaderProfile | None,
    t: Texts,
    change: str,
    weekday: int | None = None,
    at: time | None = None,
) -> Message:
    """`dm` shows the setting (`change` "show"), sets the day and time ("set"), turns DMs
    "off" or "on", or goes back to the team's day and time ("default")."""
    readers = services.store.readers
    before = readers.settings(team_id, user_id)
    if change == "set":
        after = readers.update_settings(
            team_id, user_id, dm_weekday=weekday, dm_time=at, dm_off=False
        )
    elif change == "off":
        after = readers.update_settings(team_id, user_id, dm_off=True)
    elif change == "on":
        after = readers.update_settings(team_id, user_id, dm_off=False)
    elif change == "default":
        after = readers.update_settings(team_id, user_id, dm_weekday=None, dm_time=None)
    else:
        after = before
    pause = readers.pause_of(team_id, user_id)
    times = dm_times(services, team_id, user_id, after, profile, pause, now)
    return dm_reply(times, change, t, was_off=before.dm_off)
