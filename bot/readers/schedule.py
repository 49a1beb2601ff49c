"""When a reader's weekly DM goes out: their own day and time (`/prdigest dm mon 09:00`), or
the team's schedule (`PRDIGEST_SCHEDULE`), on the reader's own wall clock: the time zone
Slack reports for them, else `PRDIGEST_TIMEZONE`.

Times are wall-clock times: a time a clock change skips goes out at the next minute that
exists (02:30 on the night clocks jump from 02:00 to 03:00 goes out at 03:00), and a time
that happens twice (the hour clocks fall back) goes out the first time only.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger

from bot.config import Settings
from bot.domain import ReaderProfile, ReaderSettings

_LONGEST_SKIP = timedelta(days=1)  # the longest clock change (Samoa, 2011) skipped a day
# Wall-clock times read from this long before a moment: a skipped time moves forward by the
# clock change, an hour or two in the zones in use today.
_SKIP_MARGIN = timedelta(hours=3)
_LOOK_BACK = (timedelta(hours=1), timedelta(days=1), timedelta(days=8))


def reader_zone(settings: Settings, profile: ReaderProfile | None) -> ZoneInfo:
    """The reader's time zone as Slack reports it, else PRDIGEST_TIMEZONE."""
    if profile is not None and profile.tz:
        try:
            return ZoneInfo(profile.tz)
        except (ZoneInfoNotFoundError, ValueError):
            pass  # a zone this system does not know: the team's
    return settings.zone


def on_wall_clock(wall: datetime, zone: ZoneInfo) -> datetime:
    """The moment (in UTC) a wall-clock time (naive) names in `zone`: the first of two when
    the hour repeats, the next minute that exists when a clock change skips it.

    In UTC, because Python compares an ambiguous local time with another zone's as
    unequal, whatever its instant."""
    minute = timedelta(minutes=1)
    limit = int(_LONGEST_SKIP / minute)
    for step in range(limit + 1):
        candidate = (wall + step * minute).replace(tzinfo=zone, fold=0)
        if candidate.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == (
            candidate.replace(tzinfo=None)
        ):
            return candidate.astimezone(UTC)
    raise ValueError(f"{wall.isoformat()} does not exist in {zone.key}")  # pragma: no cover


@functools.lru_cache(maxsize=256)
def _crontab(line: str) -> CronTrigger:
    # The fields read on a clock without changes; `on_wall_clock` places them in a zone.
    return CronTrigger.from_crontab(line, timezone=UTC)


@functools.lru_cache(maxsize=256)
def _weekly(weekday: int, hour: int, minute: int) -> CronTrigger:
    return CronTrigger(day_of_week=weekday, hour=hour, minute=minute, timezone=UTC)


@dataclass(frozen=True)
class DmSchedule:
    """A reader's DM moments: `weekday` and `at` when they chose them (else the team's
    schedule, `crontab`), on the wall clock of `zone`."""

    zone: ZoneInfo
    crontab: str
    weekday: int | None = None  # 0 is Monday
    at: time | None = None

    @property
    def own(self) -> bool:
        return self.weekday is not None and self.at is not None

    def _trigger(self) -> CronTrigger:
        if self.weekday is not None and self.at is not None:
            return _weekly(self.weekday, self.at.hour, self.at.minute)
        return _crontab(self.crontab)

    def moments(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Every DM moment in [start, end], oldest first, each once (in UTC)."""
        trigger = self._trigger()
        wall = (start.astimezone(self.zone) - _SKIP_MARGIN).replace(tzinfo=None)
        fire = trigger.get_next_fire_time(None, wall.replace(tzinfo=UTC))
        last: datetime | None = None
        while fire is not None:
            moment = on_wall_clock(fire.replace(tzinfo=None), self.zone)
            if moment > end:
                return
            if moment >= start and moment != last:
                yield moment
                last = moment
            fire = trigger.get_next_fire_time(fire, fire)

    def latest(self, now: datetime, window: timedelta) -> datetime | None:
        """The most recent moment in (now - window, now], or None."""
        for span in (*_LOOK_BACK, window):
            start = now - min(span, window)
            found = list(self.moments(start, now))
            found = [m for m in found if m > now - window]
            if found:
                return found[-1]
            if span >= window:
                break
        return None

    def next_after(self, now: datetime) -> datetime | None:
        """The first moment after `now` (None for a schedule that never fires again)."""
        for span in (*_LOOK_BACK[1:], timedelta(days=400)):
            for moment in self.moments(now + timedelta(microseconds=1), now + span):
                return moment
        return None


def dm_schedule(
    settings: Settings, own: ReaderSettings, profile: ReaderProfile | None
) -> DmSchedule:
    """The reader's DM moments: their own day and time, else PRDIGEST_SCHEDULE, in their
    time zone."""
    return DmSchedule(
        reader_zone(settings, profile), settings.schedule, own.dm_weekday, own.dm_time
    )
