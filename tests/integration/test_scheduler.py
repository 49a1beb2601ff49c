"""The weekly schedule: cron trigger across DST, slots, catch-up once, start-up."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from bot.config import load_settings
from bot.delivery.scheduler import (
    JOB_ID,
    build_scheduler,
    catch_up,
    digest_trigger,
    latest_slot,
    run_due,
    run_scheduled_tick,
    start_scheduler,
    tick_trigger,
)
from bot.delivery.weekly import Pacing
from bot.services import Services
from bot.slack.client import build_web_client
from bot.store.ledger import Ledger
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import write_team_notes
from tests.support.testenv import DIGEST_CHANNEL

BERLIN = ZoneInfo("Europe/Berlin")
CHANNEL = DIGEST_CHANNEL
FAST = Pacing(channel_per_second=0, dm_per_second=0)


@pytest.fixture
def posting(posting: Services) -> Services:
    """The shared posting services, on Berlin time, with the sample notes to post."""
    services = posting
    services.settings = services.settings.model_copy(update={"timezone": "Europe/Berlin"})
    assert services.settings.digests_dir is not None
    write_team_notes(services.settings.digests_dir)
    return services


def parents(slack: FakeSlack) -> list[str]:
    return [
        m["blocks"][0]["text"]["text"]
        for m in slack.messages_in(CHANNEL)
        if m["metadata"]["event_payload"]["part"] == "parent"
    ]


@pytest.mark.parametrize(
    ("start", "weeks"),
    [
        (datetime(2026, 3, 9, tzinfo=BERLIN), 6),  # across 2026-03-29 (CET -> CEST)
        (datetime(2026, 10, 12, tzinfo=BERLIN), 6),  # across 2026-10-25 (CEST -> CET)
    ],
)
def test_weekly_trigger_fires_once_a_week_at_local_nine_across_dst(
    start: datetime, weeks: int
) -> None:
    settings = load_settings(timezone="Europe/Berlin")
    trigger = digest_trigger(settings)
    fires: list[datetime] = []
    fire = trigger.get_next_fire_time(None, start)
    while fire is not None and fire < start + timedelta(weeks=weeks):
        fires.append(fire)
        fire = trigger.get_next_fire_time(fire, fire)
    local = [f.astimezone(BERLIN) for f in fires]
    assert len(fires) == weeks, "exactly one per week"
    assert all((t.weekday(), t.hour, t.minute) == (0, 9, 0) for t in local)
    assert len({t.isocalendar()[:2] for t in local}) == weeks
    gaps = {b.astimezone(UTC) - a.astimezone(UTC) for a, b in pairwise(fires)}
    assert timedelta(days=7) in gaps
    assert gaps & {timedelta(days=7, hours=-1), timedelta(days=7, hours=1)}, "a DST week"


def test_latest_slot_is_the_most_recent_fire_within_the_window() -> None:
    trigger = digest_trigger(load_settings(timezone="Europe/Berlin"))
    monday_nine = datetime(2026, 11, 23, 9, 0, tzinfo=BERLIN)
    assert latest_slot(trigger, monday_nine + timedelta(hours=3), timedelta(hours=24)) == (
        monday_nine
    )
    assert latest_slot(trigger, monday_nine, timedelta(hours=24)) == monday_nine
    assert latest_slot(trigger, monday_nine + timedelta(hours=25), timedelta(hours=24)) is None
    assert latest_slot(trigger, monday_nine - timedelta(minutes=1), timedelta(days=8)) == (
        monday_nine - timedelta(days=7)
    )


def test_a_missed_slot_is_caught_up_exactly_once(posting: Services, slack: FakeSlack) -> None:
    client = build_web_client(posting.settings)
    slot = datetime(2026, 11, 23, 9, 0, tzinfo=BERLIN)
    result = catch_up(posting, client, slot + timedelta(hours=5), pacing=FAST)
    assert result is not None and result.status == "posted"
    assert parents(slack) == ["vLLM 精读推荐 · 2026-W48"]
    run = Ledger(posting.store.engine).runs(CHANNEL)[0]
    assert run.slot == "2026-11-23T08:00:00+00:00"

    assert catch_up(posting, client, slot + timedelta(hours=6), pacing=FAST) is None
    # A tick later in the grace does not post it again either.
    again = run_due(posting, client, slot + timedelta(hours=7), pacing=FAST)
    assert again.channel is None and "already handled" in again.channel_note
    assert len(parents(slack)) == 1


def test_no_catch_up_outside_the_grace(posting: Services, slack: FakeSlack) -> None:
    client = build_web_client(posting.settings)
    slot = datetime(2026, 11, 23, 9, 0, tzinfo=BERLIN)
    assert catch_up(posting, client, slot + timedelta(hours=25), pacing=FAST) is None
    posting.settings = posting.settings.model_copy(update={"misfire_grace": timedelta(hours=48)})
    result = catch_up(posting, client, slot + timedelta(hours=25), pacing=FAST)
    assert result is not None and result.status == "posted"
    assert slack.count("chat.postMessage") > 0


def test_an_empty_slot_is_remembered(posting: Services, slack: FakeSlack) -> None:
    for path in posting.settings.digests_dir.iterdir():
        path.unlink()
    client = build_web_client(posting.settings)
    slot = datetime(2026, 11, 23, 9, 0, tzinfo=BERLIN)
    result = catch_up(posting, client, slot + timedelta(hours=1), pacing=FAST)
    assert result is not None and result.status == "nothing_new"
    [run] = Ledger(posting.store.engine).runs(CHANNEL)
    assert run.status == "empty"
    assert catch_up(posting, client, slot + timedelta(hours=2), pacing=FAST) is None
    assert slack.count("chat.postMessage") == 0


def test_build_scheduler_has_the_minute_tick_and_is_not_started(posting: Services) -> None:
    client = build_web_client(posting.settings)
    scheduler = build_scheduler(posting, client)
    assert isinstance(scheduler, BackgroundScheduler) and not scheduler.running
    job = scheduler.get_job(JOB_ID)
    assert job is not None and job.func is run_scheduled_tick
    assert str(job.trigger) == str(tick_trigger())
    start = datetime(2027, 1, 4, 1, 0, 30, tzinfo=UTC)
    fires = [job.trigger.get_next_fire_time(None, start)]
    fires.append(job.trigger.get_next_fire_time(fires[0], fires[0]))
    assert fires == [start.replace(minute=1, second=0), start.replace(minute=2, second=0)]


def test_without_a_channel_the_scheduler_has_no_job(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = build_scheduler(services, build_web_client(services.settings))
    assert scheduler.get_jobs() == []
    assert "PRDIGEST_CHANNEL" in caplog.text


def test_start_scheduler_runs_the_catch_up_in_the_background(
    posting: Services, slack: FakeSlack
) -> None:
    # A schedule that fired a minute ago whatever the day: the catch-up posts it.
    fired = datetime.now(BERLIN) - timedelta(minutes=1)
    posting.settings = posting.settings.model_copy(
        update={"schedule": f"{fired.minute} {fired.hour} * * *"}
    )
    client = build_web_client(posting.settings)
    scheduler = start_scheduler(posting, client, pacing=FAST)
    try:
        assert scheduler.running and scheduler.get_job(JOB_ID) is not None
        slack.wait_for("chat.postMessage", n=2, timeout=30)
        deadline = datetime.now(UTC) + timedelta(seconds=30)
        ledger = Ledger(posting.store.engine)
        while datetime.now(UTC) < deadline:
            runs = ledger.runs(CHANNEL)
            if runs and runs[0].status == "done":
                break
            time.sleep(0.05)
        assert [r.status for r in ledger.runs(CHANNEL)] == ["done"]
    finally:
        scheduler.shutdown(wait=True)
    assert len(parents(slack)) == 1
