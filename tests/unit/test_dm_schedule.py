"""When a reader's DM goes out: their own day and time or the team's schedule, on their own
wall clock, across clock changes (a skipped time at the next minute, a repeated one once)."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config import load_settings
from bot.domain import ReaderProfile, ReaderSettings
from bot.readers.schedule import DmSchedule, dm_schedule, on_wall_clock, reader_zone

BERLIN = ZoneInfo("Europe/Berlin")
LA = ZoneInfo("America/Los_Angeles")
SHANGHAI = ZoneInfo("Asia/Shanghai")
T0 = datetime(2027, 1, 1, tzinfo=UTC)


def test_a_skipped_time_goes_at_the_next_minute_that_exists() -> None:
    # 2027-03-28: Berlin's clocks go from 02:00 to 03:00.
    assert on_wall_clock(datetime(2027, 3, 28, 2, 30), BERLIN) == datetime(
        2027, 3, 28, 1, 0, tzinfo=UTC
    )
    assert on_wall_clock(datetime(2027, 3, 28, 1, 59), BERLIN) == datetime(
        2027, 3, 28, 0, 59, tzinfo=UTC
    )


def test_a_repeated_time_is_its_first_moment() -> None:
    # 2027-10-31: Berlin's clocks go back from 03:00 to 02:00; 02:30 happens twice.
    first = on_wall_clock(datetime(2027, 10, 31, 2, 30), BERLIN)
    assert first == datetime(2027, 10, 31, 0, 30, tzinfo=UTC)


def test_own_day_and_time_across_both_clock_changes_once_a_week() -> None:
    sunday_half_two = DmSchedule(BERLIN, "0 9 * * MON", weekday=6, at=time(2, 30))
    spring = list(
        sunday_half_two.moments(datetime(2027, 3, 20, tzinfo=UTC), datetime(2027, 4, 5, tzinfo=UTC))
    )
    assert [m.astimezone(UTC) for m in spring] == [
        datetime(2027, 3, 21, 1, 30, tzinfo=UTC),
        datetime(2027, 3, 28, 1, 0, tzinfo=UTC),  # 03:00 CEST, the first minute after the gap
        datetime(2027, 4, 4, 0, 30, tzinfo=UTC),
    ]
    autumn = list(
        sunday_half_two.moments(
            datetime(2027, 10, 24, tzinfo=UTC), datetime(2027, 11, 1, tzinfo=UTC)
        )
    )
    assert [m.astimezone(UTC) for m in autumn] == [
        datetime(2027, 10, 24, 0, 30, tzinfo=UTC),
        datetime(2027, 10, 31, 0, 30, tzinfo=UTC),  # once, the first 02:30
    ]


def test_the_team_schedule_read_on_each_readers_clock() -> None:
    settings = load_settings(schedule="0 9 * * MON", timezone="Europe/Berlin")
    now = datetime(2027, 3, 15, 12, 0, tzinfo=UTC)  # Monday; the US is on PDT since 03-14
    expected = {
        "Asia/Shanghai": datetime(2027, 3, 15, 1, 0, tzinfo=UTC),
        "Europe/Berlin": datetime(2027, 3, 15, 8, 0, tzinfo=UTC),
        "America/Los_Angeles": datetime(2027, 3, 15, 16, 0, tzinfo=UTC),
    }
    for tz, moment in expected.items():
        profile = ReaderProfile(tz=tz, locale=None, fetched_at=now)
        schedule = dm_schedule(settings, ReaderSettings(), profile)
        found = schedule.next_after(now - timedelta(days=1))
        assert found is not None and found == moment, tz
        assert (found.astimezone(ZoneInfo(tz)).hour, found.weekday()) == (9, 0)


def test_latest_and_next_moment() -> None:
    schedule = DmSchedule(SHANGHAI, "0 9 * * MON", weekday=1, at=time(7, 30))
    tuesday = datetime(2027, 1, 5, 7, 30, tzinfo=SHANGHAI)
    assert schedule.latest(tuesday, timedelta(hours=24)) == tuesday
    assert schedule.latest(tuesday - timedelta(minutes=1), timedelta(hours=24)) is None
    assert schedule.latest(tuesday + timedelta(hours=3), timedelta(hours=24)) == tuesday
    assert schedule.latest(tuesday + timedelta(hours=25), timedelta(hours=24)) is None
    assert schedule.next_after(tuesday) == tuesday + timedelta(days=7)
    assert schedule.next_after(tuesday - timedelta(seconds=1)) == tuesday


def test_the_zone_is_slacks_else_the_teams() -> None:
    settings = load_settings(timezone="Europe/Berlin")
    assert reader_zone(settings, None) == BERLIN
    assert reader_zone(settings, ReaderProfile("Asia/Shanghai", None, T0)) == SHANGHAI
    assert reader_zone(settings, ReaderProfile(None, "en-US", T0)) == BERLIN
    assert reader_zone(settings, ReaderProfile("Mars/Olympus_Mons", None, T0)) == BERLIN


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/Los_Angeles", "Australia/Lord_Howe"])
@given(
    start=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2028, 12, 1)),
    weekday=st.integers(0, 6),
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
)
def test_exactly_one_moment_in_every_local_week(
    zone: str, start: datetime, weekday: int, hour: int, minute: int
) -> None:
    """Whatever the day and time, each local week has one moment, on that day, at that
    time or (skipped by a clock change) at most an hour later."""
    tz = ZoneInfo(zone)
    schedule = DmSchedule(tz, "0 9 * * MON", weekday=weekday, at=time(hour, minute))
    begin = datetime.combine(start.date(), time(), tz)
    moments = list(schedule.moments(begin, begin + timedelta(days=28)))
    weeks = [m.astimezone(tz).isocalendar()[:2] for m in moments]
    assert len(weeks) == len(set(weeks)) and 3 <= len(moments) <= 5
    for moment in moments:
        local = moment.astimezone(tz)
        assert local.weekday() == weekday
        wall = datetime.combine(local.date(), time(hour, minute))
        assert timedelta(0) <= local.replace(tzinfo=None) - wall <= timedelta(hours=1)
