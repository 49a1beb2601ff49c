"""Times keep their instant on SQLite and PostgreSQL, whatever zone they are given in;
`pause until DATE` ends at the start of DATE in PRDIGEST_TIMEZONE.

The pause is stored as its UTC instant, shown in the zone, and the weekly digest (the real
job against the fake Slack, its clock set with time-machine) sends nothing the evening
before and delivers at 01:00 local on the date, across zones and a clock change.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
import time_machine

from bot.delivery.weekly import Pacing, RunResult, publish_weekly_digest
from bot.i18n.texts import Language, texts_for
from bot.readers.corrections import fix_note
from bot.services import Services, ingest_paths
from bot.slack.client import build_web_client
from bot.slack.prdigest import parse_command, run_command
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import seed_files

TEAM, PAUSED, AWAKE = "T1", "U1", "U2"
HALF_HOUR = timedelta(minutes=30)

# zone, the date asked for, and the instant its day starts there
CASES = [
    ("UTC", date(2027, 1, 11), datetime(2027, 1, 11, 0, 0, tzinfo=UTC)),
    ("Asia/Shanghai", date(2027, 1, 11), datetime(2027, 1, 10, 16, 0, tzinfo=UTC)),
    # Clocks go forward at 02:00 that day: midnight is still on PST (UTC-8).
    ("America/Los_Angeles", date(2027, 3, 14), datetime(2027, 3, 14, 8, 0, tzinfo=UTC)),
    # The first day on PDT (UTC-7).
    ("America/Los_Angeles", date(2027, 3, 15), datetime(2027, 3, 15, 7, 0, tzinfo=UTC)),
]

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


def write_note(services: Services, name: str, title: str) -> None:
    text = f"vllm-project/vllm\n\n{title}\n\n值得精读，适合做 MoE 量化与 FP8 内核的工程师。\n"
    (services.settings.digests_dir / name).write_text(text, encoding="utf-8")


def publish_at(services: Services, moment: datetime) -> RunResult:
    """The weekly job as the scheduler runs it at `moment` (the clock itself moved there)."""
    with time_machine.travel(moment, tick=True):
        client = build_web_client(services.settings)
        return publish_weekly_digest(services, client, moment, pacing=Pacing(0, 0))


def dm_note_ids(slack: FakeSlack, user: str) -> list[int]:
    return [
        int(str(b["block_id"]).removeprefix("note-"))
        for m in slack.messages_in(FakeSlack.dm_channel(user))
        for b in m.get("blocks", [])
        if str(b.get("block_id", "")).startswith("note-")
    ]


def stored_until(services: Services) -> Any:
    """The pause's end as the database holds it, read without our column type."""
    with services.store.engine.connect() as conn:
        return conn.execute(sa.text("SELECT until FROM pauses")).scalar_one()


@pytest.mark.parametrize(("zone_name", "day", "start"), CASES)
def test_pause_until_a_date_ends_at_its_start_in_the_zone(
    posting: Services, slack: FakeSlack, zone_name: str, day: date, start: datetime
) -> None:
    services = posting
    services.settings = services.settings.model_copy(update={"timezone": zone_name})
    zone = ZoneInfo(zone_name)
    for user in (PAUSED, AWAKE):
        services.store.subscribe(TEAM, user, ["moe-quant"])
    asked = datetime.combine(day - timedelta(days=20), time(9), zone)
    command = parse_command(f"pause until {day.isoformat()}", services.taxonomy)
    reply = run_command(services, command, TEAM, PAUSED, BOTH, now=asked)

    assert reply["text"].startswith(f"Paused until {day.isoformat()} 00:00 ({zone_name}):")
    pause = services.store.readers.pause_of(TEAM, PAUSED)
    assert pause is not None
    assert (pause.started_at, pause.until) == (asked, start)
    assert pause.until.utcoffset() == timedelta(0), "read back aware, in UTC"
    raw = stored_until(services)
    if services.store.dialect == "sqlite":
        assert raw.startswith(start.strftime("%Y-%m-%d %H:%M:%S")), "stored as UTC text"
    else:
        assert raw == start
    listed = run_command(
        services, parse_command("list", services.taxonomy), TEAM, PAUSED, BOTH, asked
    )
    assert f"Paused until {day.isoformat()} 00:00 ({zone_name})" in listed["text"]

    # The evening before (23:00 local) the reader is still paused.
    write_note(services, "before.txt", "MoE FP8 量化内核改进 (#95001)")
    evening = datetime.combine(day - timedelta(days=1), time(23), zone)
    assert evening.astimezone(UTC) < start
    publish_at(services, evening)
    before = next(n.id for n in services.store.list_notes() if n.pr == 95001)
    assert dm_note_ids(slack, AWAKE) == [before]
    assert dm_note_ids(slack, PAUSED) == []

    # At 01:00 local on the date the pause is over: the DM brings the new note and the
    # one missed the evening before.
    write_note(services, "after.txt", "MoE 路由 FP8 第二次改进 (#95002)")
    night = datetime.combine(day, time(1), zone)
    assert night.astimezone(UTC) > start
    publish_at(services, night)
    after = next(n.id for n in services.store.list_notes() if n.pr == 95002)
    assert set(dm_note_ids(slack, PAUSED)) == {before, after}
    assert "While you were away" in str(slack.messages_in(FakeSlack.dm_channel(PAUSED)))
    assert dm_note_ids(slack, AWAKE) == [before, after]


def test_a_clock_change_at_midnight_starts_the_day_at_the_first_hour(services: Services) -> None:
    """Santiago's clocks go from 00:00 to 01:00 on 2027-09-05: that day starts at 01:00."""
    services.settings = services.settings.model_copy(update={"timezone": "America/Santiago"})
    asked = datetime(2027, 9, 1, 12, 0, tzinfo=UTC)
    command = parse_command("pause until 2027-09-05", services.taxonomy)
    reply = run_command(services, command, TEAM, PAUSED, BOTH, now=asked)
    assert reply["text"].startswith("Paused until 2027-09-05 01:00 (America/Santiago):")
    pause = services.store.readers.pause_of(TEAM, PAUSED)
    assert pause is not None and pause.until == datetime(2027, 9, 5, 4, 0, tzinfo=UTC)


def test_a_time_without_a_zone_is_refused(services: Services) -> None:
    """Every stored time is an instant; a naive one is a mistake, not a guess at UTC."""
    with pytest.raises(sa.exc.StatementError, match="needs its zone"):
        services.store.readers.pause(TEAM, PAUSED, datetime(2027, 1, 1), datetime(2027, 1, 2))
    assert services.store.readers.pause_of(TEAM, PAUSED) is None


def test_local_week_bounds_select_notes_by_their_instant(services: Services) -> None:
    """A week in Shanghai starts at 16:00 UTC on Sunday: a note ingested 30 minutes after
    that is in the new week, one 30 minutes before is not, on SQLite as on PostgreSQL."""
    zone = ZoneInfo("Asia/Shanghai")
    monday = datetime(2027, 1, 11, 0, 0, tzinfo=zone)
    write_note(services, "late.txt", "MoE FP8 量化内核改进 (#95003)")
    ingest_paths(services, [services.settings.digests_dir / "late.txt"], now=monday - HALF_HOUR)
    write_note(services, "early.txt", "MoE 路由 FP8 第二次改进 (#95004)")
    ingest_paths(services, [services.settings.digests_dir / "early.txt"], now=monday + HALF_HOUR)
    store = services.store
    week = [n.pr for n in store.list_notes(since=monday, until=monday + timedelta(days=7))]
    before = [n.pr for n in store.list_notes(since=monday - timedelta(days=7), until=monday)]
    assert (week, before) == ([95004], [95003])
    assert store.count_notes(since=monday) == 1
    [note] = store.list_notes(since=monday)
    assert note.ingested_at == monday + HALF_HOUR and note.ingested_at.utcoffset() == timedelta(0)


def test_fix_times_given_in_a_zone_read_back_as_the_same_instant(services: Services) -> None:
    ingest_paths(services, [seed_files()[0]])
    note = services.store.list_notes()[0]
    moment = datetime(2027, 3, 14, 1, 30, tzinfo=ZoneInfo("America/Los_Angeles"))
    fix_note(services, note.id, [note.primary_role], None, None, "E1", now=moment)
    stored = services.store.get_fix(note.id)
    assert stored is not None and stored.fixed_at == moment
    assert stored.fixed_at.utcoffset() == timedelta(0)
