"""Readers' own settings from `/prdigest`: saved searches (`watch`), pauses and language.

Each function does one change for one user and returns the reply; bad input never gets
here (the parser in `bot.slack.prdigest` refuses it), except what needs the clock or the store.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from bot.i18n.texts import N_, Language, Texts, reader_language, texts_for
from bot.readers.reading_list import AWAY_MAX_NOTES
from bot.render.blocks import escaped
from bot.render.replies import Message, confirm_reply, error_reply, pause_text, sentences
from bot.services import Services, lookup
from bot.store.readers import MAX_WATCHES, WatchOutcome

MAX_WATCH_CHARS = 100
MAX_PAUSE_DAYS = 365
AUTO_LANGUAGE = "auto"  # `lang auto`: Slack's language for the reader decides

LANGUAGE_NAMES = {
    Language.ZH: N_("Chinese"),
    Language.EN: N_("English"),
    Language.BOTH: N_("Chinese and English side by side"),
}


def _shown(query: str, t: Texts) -> str:
    return t.gettext("“{query}”", query=escaped(query, 100))


def watch(
    services: Services,
    team_id: str,
    user_id: str,
    query: str,
    lookup_command: str | None,
    t: Texts,
) -> Message:
    """Save a search; the reply counts the stored notes it matches by the rule the weekly
    DM applies (every word, or the named role) and names `lookup_command`, a `/prdigest`
    lookup that lists exactly those notes (None when the words would read as a command)."""
    outcome = services.store.readers.watch(team_id, user_id, query)
    shown = _shown(query, t)
    if outcome is WatchOutcome.EXISTS:
        return confirm_reply(t.gettext("You already watch {query}; nothing changed.", query=shown))
    if outcome is WatchOutcome.FULL:
        return error_reply(
            t.gettext(
                "You watch {count} searches, the most allowed. `/prdigest unwatch …` one "
                "first. Nothing was changed.",
                count=MAX_WATCHES,
            )
        )
    found = lookup(services, query, limit=1)
    page = found.page
    # A lookup falls back to notes with any of the words; a watch never does.
    total = 0 if page.any_word else page.total
    if found.role is not None:
        rule = t.gettext(
            "it names the role `{role}`, so each weekly DM adds that role's new "
            "notes, whatever their verdict",
            role=found.role.slug,
        )
    elif len(found.query.terms) > 1:
        rule = t.gettext("each weekly DM adds the new notes that have all of its words")
    else:
        rule = t.gettext("each weekly DM adds the new notes that have this word")
    if total == 0:
        if found.role is not None:
            missing = t.gettext("That role has no stored notes yet.")
        elif len(found.query.terms) > 1:
            missing = t.gettext("No stored note has them all yet.")
        else:
            missing = t.gettext("No stored note has it yet.")
        return confirm_reply(
            t.gettext(
                "Watching {query}: {rule}. {missing}", query=shown, rule=rule, missing=missing
            )
        )
    count = t.ngettext(
        "{count} stored note matches",
        "{count} stored notes match",
        total if not page.capped else 2,
        count=page.total_text,
    )
    if lookup_command:
        listed = t.gettext(
            "{count} now; `{command}` lists them", count=count, command=escaped(lookup_command, 120)
        )
    else:
        listed = t.gettext("{count} now", count=count)
    return confirm_reply(
        t.gettext("Watching {query}: {rule} ({listed}).", query=shown, rule=rule, listed=listed)
    )


def unwatch(services: Services, team_id: str, user_id: str, query: str | None, t: Texts) -> Message:
    gone = services.store.readers.unwatch(team_id, user_id, query)
    if gone:
        searches = ", ".join(_shown(q, t) for q in gone)
        return confirm_reply(t.gettext("Stopped watching {searches}.", searches=searches))
    if query is None:
        return confirm_reply(t.gettext("You watch no searches; nothing changed."))
    return error_reply(
        t.gettext(
            "You do not watch {query}; nothing changed. `/prdigest list` shows your watches.",
            query=_shown(query, t),
        )
    )


def pause(
    services: Services,
    team_id: str,
    user_id: str,
    now: datetime,
    days: int,
    until_day: date | None,
    t: Texts,
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
                t.gettext(
                    "{day} is not in the future; pause until a later day. Nothing was changed.",
                    day=until_day.isoformat(),
                )
            )
        if until - now > timedelta(days=MAX_PAUSE_DAYS):
            return error_reply(
                t.gettext(
                    "A pause lasts at most {days} days. Nothing was changed.", days=MAX_PAUSE_DAYS
                )
            )
    else:
        until = now + timedelta(days=days)
    paused = services.store.readers.pause(team_id, user_id, now, until)
    return confirm_reply(
        t.gettext(
            "{paused}: no weekly DMs until then. The first DM after it adds what you missed "
            "(up to {count} notes); `/prdigest resume` ends the pause early.",
            paused=pause_text(paused, now, zone, t),
            count=AWAY_MAX_NOTES,
        )
    )


def resume(services: Services, team_id: str, user_id: str, now: datetime, t: Texts) -> Message:
    ended = services.store.readers.resume(team_id, user_id, now)
    if ended is None:
        return confirm_reply(t.gettext("You are not paused; nothing changed."))
    since = ended.started_at.astimezone(services.settings.zone).date().isoformat()
    return confirm_reply(
        t.gettext(
            "Welcome back: weekly DMs are on again. The next one adds the notes you "
            "missed since {since} (up to {count}).",
            since=since,
            count=AWAY_MAX_NOTES,
        )
    )


def language(
    services: Services, team_id: str, user_id: str, choice: str | None, t: Texts
) -> Message:
    """`lang` alone: the reader's language and where it comes from. `lang zh|en` keeps that
    language whatever Slack says; `lang auto` follows Slack's language for them again.
    The reply is in the language in effect afterwards."""
    readers = services.store.readers
    if choice is None:
        own = readers.settings(team_id, user_id)
    else:
        own = readers.update_settings(
            team_id, user_id, language=None if choice == AUTO_LANGUAGE else choice
        )
    profile = readers.profile(team_id, user_id)
    now_in = reader_language(own, profile, Language(services.settings.language))
    t = texts_for(now_in)
    name = t.gettext(LANGUAGE_NAMES[now_in])
    if own.language is not None:
        said = (
            t.gettext("You read prdigest in {language}: you chose it.", language=name)
            if choice is None
            else t.gettext("Done: prdigest now writes to you in {language}.", language=name)
        )
        how = t.gettext("`/prdigest lang auto` follows the language Slack shows you instead.")
    elif profile is not None and profile.locale:
        said = t.gettext(
            "You read prdigest in {language}, the language Slack shows you ({locale}).",
            language=name,
            locale=escaped(profile.locale, 20),
        )
        how = t.gettext("`/prdigest lang zh` or `/prdigest lang en` keeps one whatever Slack says.")
    else:
        said = t.gettext(
            "You read prdigest in {language}, this workspace's default: Slack has not said "
            "which language it shows you.",
            language=name,
        )
        how = t.gettext("`/prdigest lang zh` or `/prdigest lang en` keeps one whatever Slack says.")
    if choice == AUTO_LANGUAGE:
        said = sentences([t.gettext("Done: prdigest follows your Slack language again."), said], t)
    return confirm_reply(sentences([said, how], t))
