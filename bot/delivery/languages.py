"""The language each reader reads, for every surface that writes to one reader.

A reader's own choice (`/prdigest lang zh|en`) wins; else Slack's locale for them
(`users.info`, cached a day by `reader_profile`); else PRDIGEST_LANGUAGE, which the channel
digest always follows. Slack is asked only after a request was acknowledged (the reply
pool, the DM planner); `cached_texts` answers from the store alone, where nothing may wait.
"""

from __future__ import annotations

from datetime import datetime

from slack_sdk import WebClient

from bot.config import Settings
from bot.delivery.profiles import reader_profile
from bot.domain import Reader
from bot.i18n.texts import Language, Texts, reader_language, texts_for
from bot.services import Services


def default_language(settings: Settings) -> Language:
    """PRDIGEST_LANGUAGE: the channel digest's language and every reader's fallback."""
    return Language(settings.language)


def channel_texts(settings: Settings) -> Texts:
    return texts_for(default_language(settings))


def reader_texts(
    services: Services, client: WebClient | None, team_id: str, user_id: str, now: datetime
) -> Texts:
    """The reader's language, asking Slack for their locale when the cached one is a day
    old (Slack unreachable: the stale cache, or PRDIGEST_LANGUAGE). Asked even of a reader
    who chose a language, so that `lang auto` and their time zone find it fresh."""
    own = services.store.readers.settings(team_id, user_id)
    profile = reader_profile(services.store, client, team_id, user_id, now)
    return texts_for(reader_language(own, profile, default_language(services.settings)))


def cached_texts(services: Services, team_id: str, user_id: str) -> Texts:
    """The reader's language from the store alone (no Slack call)."""
    readers = services.store.readers
    profile = readers.profile(team_id, user_id)
    own = readers.settings(team_id, user_id)
    return texts_for(reader_language(own, profile, default_language(services.settings)))


def dm_texts(services: Services, reader: Reader) -> Texts:
    """A DM's language, from what `all_readers` (and `reader_dms.refresh_profiles`) carry."""
    language = reader_language(reader.settings, reader.profile, default_language(services.settings))
    return texts_for(language)
