"""The weekly schedule: an APScheduler cron job plus a catch-up check on start.

Which slots have run is kept in the delivery ledger (not in APScheduler's job store), so
several replicas and `prdigest post` agree: each slot is posted at most once, and a slot
missed while no process was running is caught up once if it is within
`PRDIGEST_MISFIRE_GRACE`.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.cron import CronTrigger
from slack_sdk import WebClient

from bot.config import Settings
from bot.delivery.weekly import (
    DeliveryError,
    Pacing,
    RunResult,
    publish_weekly_digest,
    resume_unfinished_runs,
    slot_key,
)
from bot.notes.digest import now_utc
from bot.services import Services
from bot.store import describe_unavailable, is_unavailable
from bot.store.ledger import Ledger

log = logging.getLogger(__name__)

JOB_ID = "weekly-digest"
_MAX_SLOTS_SCANNED = 100_000


def digest_trigger(settings: Settings) -> CronTrigger:
    """`PRDIGEST_SCHEDULE` in `PRDIGEST_TIMEZONE` (wall-clock time, DST-aware)."""
    return CronTrigger.from_crontab(settings.schedule, timezone=settings.zone)


def latest_slot(trigger: CronTrigger, now: datetime, window: timedelta) -> datetime | None:
    """The most recent fire time in (now - window, now], or None."""
    start = now - window
    fire: datetime | None = trigger.get_next_fire_time(None, start)
    latest: datetime | None = None
    for _ in range(_MAX_SLOTS_SCANNED):
        if fire is None or fire > now:
            break
        if fire > start:
            latest = fire
        fire = trigger.get_next_fire_time(fire, fire)
    return latest


def run_scheduled_digest(
    services: Services, client: WebClient, pacing: Pacing | None = None
) -> RunResult | None:
    """The cron job: publish the digest for the slot that just fired; never raises."""
    now = now_utc()
    slot = latest_slot(digest_trigger(services.settings), now, services.settings.misfire_grace)
    try:
        return publish_weekly_digest(services, client, now, slot=slot, pacing=pacing)
    except DeliveryError:
        return None  # already logged with its cause; the run resumes on the next start
    except Exception as exc:
        _log_failure(services, "weekly digest", exc)
        return None


def _log_failure(services: Services, what: str, exc: Exception) -> None:
    """A database outage is one line (the run resumes later); anything else in full."""
    if is_unavailable(exc):
        reason = describe_unavailable(exc, services.settings.database_url)
        log.error("%s not done: %s; the run resumes on the next start", what, reason)
    else:
        log.exception("%s failed", what)


def resume_after_outage(
    services: Services, client: WebClient, pacing: Pacing | None = None
) -> None:
    """Slack answers again: finish a digest run the outage interrupted; never raises."""
    if not services.settings.channel:
        return
    try:
        result = resume_unfinished_runs(services, client, pacing=pacing)
    except DeliveryError:
        return  # logged with its cause
    except Exception as exc:
        _log_failure(services, "resuming the digest after the Slack outage", exc)
        return
    if result.runs:
        log.info("after the Slack outage: %s", result.message)


def catch_up(
    services: Services,
    client: WebClient,
    now: datetime | None = None,
    *,
    pacing: Pacing | None = None,
) -> RunResult | None:
    """On start: finish unfinished runs, then post the latest missed slot once (within grace).

    Returns the result of the caught-up slot, or None when no slot was due.
    """
    settings = services.settings
    if not settings.channel:
        return None
    now = now or now_utc()
    resume_unfinished_runs(services, client, pacing=pacing)
    slot = latest_slot(digest_trigger(settings), now, settings.misfire_grace)
    if slot is None:
        return None
    if Ledger(services.store.engine).slot_run(settings.channel, slot_key(slot)) is not None:
        return None
    log.info("catching up the digest of %s (missed while not running)", slot.isoformat())
    return publish_weekly_digest(services, client, now, slot=slot, pacing=pacing)


def _catch_up_quietly(services: Services, client: WebClient, pacing: Pacing | None) -> None:
    try:
        catch_up(services, client, pacing=pacing)
    except DeliveryError:
        pass  # logged with its cause
    except Exception as exc:
        _log_failure(services, "catch-up of the weekly digest", exc)


def build_scheduler(
    services: Services, client: WebClient, *, pacing: Pacing | None = None
) -> BackgroundScheduler:
    """A BackgroundScheduler (not started) with the weekly digest job.

    Without PRDIGEST_CHANNEL the scheduler has no job and a warning says why.
    """
    settings = services.settings
    scheduler = BackgroundScheduler(timezone=settings.zone)
    if not settings.channel:
        log.warning("PRDIGEST_CHANNEL is not set: the weekly digest is off")
        return scheduler
    scheduler.add_job(
        run_scheduled_digest,
        trigger=digest_trigger(settings),
        args=[services, client, pacing],
        id=JOB_ID,
        name="weekly digest",
        misfire_grace_time=max(1, int(settings.misfire_grace.total_seconds())),
        coalesce=True,
        max_instances=1,
        replace_existing=True,
    )
    return scheduler


def start_scheduler(
    services: Services, client: WebClient, *, pacing: Pacing | None = None
) -> BackgroundScheduler:
    """Start the weekly job and run the catch-up check in a background thread."""
    scheduler = build_scheduler(services, client, pacing=pacing)
    scheduler.start()
    if services.settings.channel:
        threading.Thread(
            target=_catch_up_quietly,
            args=(services, client, pacing),
            name="prdigest-catch-up",
            daemon=True,
        ).start()
    return scheduler
