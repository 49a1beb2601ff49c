"""Readers' own settings from `/prdigest`: saved searches (`watch`) and pauses.

Each function does one change for one user and returns the reply; bad input never gets
here (the parser in `bot.slack.prdigest` refuses it), except what needs the clock or the store.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from bot.readers.reading_list import AWAY_MAX_NOTES
from bot.render.blocks import escaped
from bot.render.replies import Message, confirm_reply, error_reply, pause_text
from bot.services import Services, lookup
from bot.store.readers import MAX_WATCHES, WatchOutcome

MAX_WATCH_CHARS = 100
MAX_PAUSE_DAYS = 365


def _shown(query: str) -> str:
    return f"“{escaped(query, 100)}”"


def watch(
    services: Services, team_id: str, user_id: str, query: str, lookup_command: str | None
) -> Message:
    """Save a search; the reply counts the stored notes it matches by the rule the weekly
    DM applies (every word, or the named role) and names `lookup_command`, a `/prdigest`
    lookup that lists exactly those notes (None when the words would read as a command)."""
    outcome = services.store.readers.watch(team_id, user_id, query)
    if outcome is WatchOutcome.EXISTS:
        return confirm_reply(f"You already watch {_shown(query)}; nothing changed.")
    if outcome is WatchOutcome.FULL:
        return error_reply(
            f"You watch {MAX_WATCHES} searches, the most allowed. `/prdigest unwatch …` one "
            "first. Nothing was changed."
        )
    found = lookup(services, query, limit=1)
    page = found.page
    # A lookup falls back to notes with any of the words; a watch never does.
    total = 0 if page.any_word else page.total
    if found.role is not None:
        rule = (
            f"it names the role `{found.role.slug}`, so each weekly DM adds that role's new "
            "notes, whatever their verdict"
        )
    elif len(found.query.terms) > 1:
        rule = "each weekly DM adds the new notes that have all of its words"
    else:
        rule = "each weekly DM adds the new notes that have this word"
    if total == 0:
        if found.role is not None:
            missing = "That role has no stored notes yet."
        else:
            missing = "No stored note has them all yet." if len(found.query.terms) > 1 else ""
            missing = missing or "No stored note has it yet."
        return confirm_reply(f"Watching {_shown(query)}: {rule}. {missing}")
    count = (
        "1 stored note matches"
        if total == 1 and not page.capped
        else f"{page.total_text} stored notes match"
    )
    where = f"; `{escaped(lookup_command, 120)}` lists them" if lookup_command else ""
    return confirm_reply(f"Watching {_shown(query)}: {rule} ({count} now{where}).")


def unwatch(services: Services, team_id: str, user_id: str, query: str | None) -> Message:
    gone = services.store.readers.unwatch(team_id, user_id, query)
    if gone:
        return confirm_reply("Stopped watching " + ", ".join(_shown(q) for q in gone) + ".")
    if query is None:
        return confirm_reply("You watch no searches; nothing changed.")
    return error_reply(
        f"You do not watch {_shown(query)}; nothing changed. `/prdigest list` shows your watches."
    )


def pause(
    services: Services,
    team_id: str,
    user_id: str,
    now: datetime,
    days: int,
    until_day: date | None,
) -> Message:
    """Pause from now for `days`, or until the start of `until_day` in PRDIGEST_TIMEZONE
    (its first moment there: midnight, or the hour a clock change begins it with).

    Pausing again while paused moves the end and keeps the start, so the notes of the
    whole absence are offered afterwards.
    """
    zone = services.settings.zone
    if until_day is not None:
        # Through UTC: a midnight a clock change skips becomes the hour the day starts at.
        until = datetime.combine(until_day, time(), zone).astimezone(UTC)
        if until <= now:
            return error_reply(
                f"{until_day.isoformat()} is not in the future; pause until a later day. "
                "Nothing was changed."
            )
        if until - now > timedelta(days=MAX_PAUSE_DAYS):
            return error_reply(f"A pause lasts at most {MAX_PAUSE_DAYS} days. Nothing was changed.")
    else:
        until = now + timedelta(days=days)
    paused = services.store.readers.pause(team_id, user_id, now, until)
    return confirm_reply(
        f"{pause_text(paused, now, zone)}: no weekly DMs until then. The first DM after it "
        f"adds what you missed (up to {AWAY_MAX_NOTES} notes); `/prdigest resume` "
        "ends the pause early."
    )


def resume(services: Services, team_id: str, user_id: str, now: datetime) -> Message:
    ended = services.store.readers.resume(team_id, user_id, now)
    if ended is None:
        return confirm_reply("You are not paused; nothing changed.")
    since = ended.started_at.astimezone(services.settings.zone).date().isoformat()
    return confirm_reply(
        f"Welcome back: weekly DMs are on again. The next one adds the notes you "
        f"missed since {since} (up to {AWAY_MAX_NOTES})."
    )
