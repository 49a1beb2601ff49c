"""`serve`'s scheduler (the real BackgroundScheduler running the tick) sends each reader their
DM at their own 09:00, once, across a clock change and a restart.

The clock is moved with time-machine to a few seconds before each reader's 09:00; the
scheduler ticks every second here (every minute in `serve`); the same code runs either way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine
from apscheduler.schedulers.background import BackgroundScheduler

from bot.classify.taxonomy import load_taxonomy
from bot.delivery.scheduler import start_scheduler
from bot.delivery.weekly import Pacing
from bot.services import Services
from bot.slack.client import build_web_client
from bot.store import Store
from bot.store.ledger import Ledger
from tests.support.fakeslack import FakeSlack

pytestmark = pytest.mark.slow

TEAM = "T1"
ZONES = {
    "USHANGHAI": ZoneInfo("Asia/Shanghai"),
    "UBERLIN": ZoneInfo("Europe/Berlin"),
    "ULOSANGELES": ZoneInfo("America/Los_Angeles"),
}
FAST = Pacing(channel_per_second=0, dm_per_second=0)
EVERY = timedelta(seconds=1)


def write_week(services: Services, week: int) -> None:
    text = (
        f"vllm-project/vllm\n\nFP8 MoE 量化内核第 {week} 周改进 (#{week})\n\n"
        "值得精读，适合做 MoE 量化与 FP8 内核的工程师。\n"
    )
    (services.settings.digests_dir / f"week-{week}.txt").write_text(text, encoding="utf-8")


def dm_counts(slack: FakeSlack) -> dict[str, int]:
    return {user: len(slack.messages_in(FakeSlack.dm_channel(user))) for user in ZONES}


@contextmanager
def running(services: Services) -> Iterator[BackgroundScheduler]:
    """`serve`'s scheduler on a fresh store connection and Slack client (a restart)."""
    fresh = Services(
        settings=services.settings,
        store=Store.open(services.settings.database_url),
        taxonomy=load_taxonomy(None),
    )
    scheduler = start_scheduler(fresh, build_web_client(fresh.settings), pacing=FAST, every=EVERY)
    try:
        yield scheduler
    finally:
        scheduler.shutdown(wait=True)
        fresh.close()


def wait_for_dm(slack: FakeSlack, before: dict[str, int], user: str | None) -> dict[str, int]:
    """Wait until `user` got one more DM (or, with None, a few ticks pass), then a few ticks
    more: nobody else got one, and nobody two."""
    deadline = time.monotonic() + 90  # a loaded machine can take its time
    while user is not None and dm_counts(slack)[user] == before[user]:
        assert time.monotonic() < deadline, f"no DM for {user}"
        time.sleep(0.1)
    time.sleep(3 * EVERY.total_seconds())
    after = dm_counts(slack)
    expected = {u: before[u] + (1 if u == user else 0) for u in ZONES}
    assert after == expected, (user, before, after)
    return after


def test_the_scheduler_sends_each_reader_theirs_at_their_nine(
    posting: Services, slack: FakeSlack
) -> None:
    services = posting
    services.settings = services.settings.model_copy(
        update={"timezone": "Europe/Berlin", "schedule": "0 9 * * MON"}
    )
    for user, zone in ZONES.items():
        slack.set_user(user, tz=zone.key)
        services.store.subscribe(TEAM, user, ["moe-quant"])
    start = datetime(2027, 3, 7, 12, 0, tzinfo=UTC)
    with time_machine.travel(start, tick=True) as clock:
        counts = dm_counts(slack)
        # 2027-03-08 (CET, PST), then after a restart 2027-03-29 (CEST, PDT).
        for index, monday in enumerate((datetime(2027, 3, 8), datetime(2027, 3, 29))):
            with running(services) as scheduler:
                write_week(services, 10 + index)
                nines = sorted(
                    (
                        datetime.combine(monday.date(), datetime.min.time(), z)
                        + timedelta(hours=9),
                        u,
                    )
                    for u, z in ZONES.items()
                )
                for nine, user in nines:
                    clock.move_to(nine - timedelta(seconds=2))
                    scheduler.wakeup()
                    # Shanghai's 09:00 comes before the first Monday's digest: nothing yet.
                    first_shanghai = index == 0 and user == "USHANGHAI"
                    counts = wait_for_dm(slack, counts, None if first_shanghai else user)
    ledger = Ledger(services.store.engine)
    for user, zone in ZONES.items():
        local = [d.due_at.astimezone(zone) for d in ledger.reader_dms(TEAM, user)]
        assert [(t.weekday(), t.hour, t.minute) for t in local] == [(0, 9, 0)] * 2, user
    assert dm_counts(slack) == {"USHANGHAI": 1, "UBERLIN": 2, "ULOSANGELES": 2}
