"""Each reader's own settings and Slack profile in the store (SQLite and PostgreSQL), and the
profile's cache in front of users.info (the fake Slack at its wire)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from slack_sdk import WebClient

from bot.delivery.profiles import PROFILE_MAX_AGE, reader_profile
from bot.domain import ReaderProfile, ReaderSettings
from bot.store import Store
from tests.support.fakeslack import FakeSlack

T0 = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)


def test_settings_default_then_change_field_by_field(store: Store) -> None:
    readers = store.readers
    assert readers.settings("T1", "U1") == ReaderSettings()
    readers.update_settings("T1", "U1", budget=3)
    readers.update_settings("T1", "U1", dm_weekday=1, dm_time=time(7, 30))
    readers.update_settings("T1", "U1", language="zh")
    assert readers.settings("T1", "U1") == ReaderSettings(
        budget=3, dm_weekday=1, dm_time=time(7, 30), language="zh"
    )
    readers.update_settings("T1", "U1", dm_off=True, budget=None)
    assert readers.settings("T1", "U1") == ReaderSettings(
        dm_weekday=1, dm_time=time(7, 30), dm_off=True, language="zh"
    )
    assert readers.settings("T1", "U2") == ReaderSettings()


def test_all_readers_carry_their_settings_and_profile(store: Store) -> None:
    store.subscribe("T1", "U1", ["kv-cache"])
    store.subscribe("T1", "U2", ["kv-cache"])
    store.readers.update_settings("T1", "U1", budget=2)
    profile = ReaderProfile(tz="Europe/Berlin", locale="de-DE", fetched_at=T0)
    store.readers.save_profile("T1", "U1", profile)
    by_user = {r.user_id: r for r in store.readers.all_readers()}
    assert by_user["U1"].settings.budget == 2
    assert by_user["U1"].profile == profile
    assert by_user["U2"].settings == ReaderSettings()
    assert by_user["U2"].profile is None


def test_profile_is_asked_once_a_day_and_kept_when_slack_fails(
    store: Store, slack: FakeSlack
) -> None:
    slack.set_user("U1", tz="America/Los_Angeles", locale="en-US")
    client = WebClient(token=slack.token, base_url=slack.api_url)
    first = reader_profile(store, client, "T1", "U1", T0)
    assert first == ReaderProfile("America/Los_Angeles", "en-US", T0)
    assert slack.count("users.info") == 1
    assert slack.calls_for("users.info")[0].params.get("include_locale") in (True, "true", "1")
    # within a day: the cache answers
    assert reader_profile(store, client, "T1", "U1", T0 + timedelta(hours=23)) == first
    assert slack.count("users.info") == 1
    # a day later Slack is asked again; when it fails, the cached profile stays in use
    slack.fail("users.info", "ratelimited")
    later = T0 + PROFILE_MAX_AGE + timedelta(minutes=1)
    assert reader_profile(store, client, "T1", "U1", later) == first
    slack.set_user("U1", tz="Asia/Shanghai", locale="zh-CN")
    fresh = reader_profile(store, client, "T1", "U1", later)
    assert fresh == ReaderProfile("Asia/Shanghai", "zh-CN", later)
    assert store.readers.profile("T1", "U1") == fresh
