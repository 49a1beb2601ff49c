"""The schedule: one tick a minute does everything due at that moment.

`run_due(services, client, now)` is the tick: the channel digest when its slot
(`PRDIGEST_SCHEDULE` in `PRDIGEST_TIMEZONE`) is due and not yet run, then every reader's DM
whose own moment is due and not yet sent (`bot.delivery.reader_dms`). `serve`'s scheduler
calls it every minute with the clock's time; `prdigest tick --now` calls it with a chosen
moment. Which slots and moments were handled is kept in the delivery ledger (not in
APScheduler's job store), so replicas, `prdigest post` and restarts agree: each is handled
once, and one missed while no process ran is caught up once within
`PRDIGEST_MISFIRE_GRACE`.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from slack_sdk import WebClient

from bot.config import Settings
from bot.delivery.reader_dms import RETRY_AFTER, DmResult, ReaderDelivery, deliver_due
from bot.delivery.weekly import (
    DeliveryError,
    Pacing,
    RunResult,
    publish_weekly_digest,
    resume_unfinished_runs,
)
from bot.notes.digest import now_utc
from bot.services import Services
from bot.store import describe_unavailable, is_unavailable
from bot.store.ledger import Ledger, LostClaimError, slot_key

log = logging.getLogger(__name__)

JOB_ID = "prdigest-tick"
TICK = timedelta(minutes=1)
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


@dataclass
class TickResult:
    """What one tick did: the channel digest (or why none), the readers' DMs, errors."""

    now: datetime
    channel: RunResult | None = None
    channel_note: str = ""  # why the tick made no channel digest
    dms: DmResult | None = None
    dm_note: str = ""  # why the tick sent no DMs
    errors: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """What the tick did, one line per part, as `prdigest tick` prints it."""
        moment = self.now.isoformat(timespec="seconds")
        out = [f"tick at {moment}"]
        out.append(f"channel: {self.channel.message if self.channel else self.channel_note}")
        if self.dms is not None:
            out.append(f"DMs: {self.dms.summary()}")
        elif self.dm_note:
            out.append(f"DMs: {self.dm_note}")
        out.extend(f"error: {error}" for error in self.errors)
        return out


def _next_slot_text(settings: Settings, now: datetime) -> str:
    fire = digest_trigger(settings).get_next_fire_time(None, now.astimezone(settings.zone))
    return f"{fire:%Y-%m-%d %H:%M} {settings.timezone}" if fire is not None else "never"


def run_due(
    services: Services,
    client: WebClient | None,
    now: datetime,
    *,
    pacing: Pacing | None = None,
    on_start: bool = False,
) -> TickResult:
    """Everything due at `now`: the channel digest if its slot is due and not yet run, then
    every reader's DM that is due and not yet sent. `on_start` also finishes what a crash
    or a Slack error left unfinished, at once. Slack's refusals are in `errors` (and
    logged), one line each; nothing is lost, the next tick or start tries again."""
    settings = services.settings
    result = TickResult(now)
    if not settings.channel:
        result.channel_note = "PRDIGEST_CHANNEL is not set: no digest and no DMs"
        return result
    if client is None:
        result.channel_note = "not posted"
        result.errors.append("a Slack client is needed to post; set SLACK_BOT_TOKEN")
        return result
    ledger = Ledger(services.store.engine)
    try:
        if on_start:
            resumed = resume_unfinished_runs(services, client, pacing=pacing)
            result.channel = resumed if resumed.runs else None
        slot = latest_slot(digest_trigger(settings), now, settings.misfire_grace)
        if slot is None:
            result.channel_note = f"not due (next {_next_slot_text(settings, now)})"
        elif ledger.slot_run(settings.channel, slot_key(slot)) is not None:
            result.channel_note = f"the digest of slot {slot_key(slot)} was already handled"
        else:
            result.channel = publish_weekly_digest(
                services, client, now, slot=slot, pacing=pacing, dms=False
            )
    except (DeliveryError, LostClaimError) as exc:
        result.errors.append(str(exc))  # logged where it happened
        result.channel_note = "not posted"
    if result.channel is not None and result.channel.status == "busy":
        result.dm_note = "they wait for the channel digest another process is posting"
        return result
    retry_after = timedelta(0) if on_start else RETRY_AFTER
    try:
        result.dms = deliver_due(services, client, now, pacing, retry_after=retry_after)
    except (DeliveryError, LostClaimError) as exc:
        log.error("readers' DMs not all sent (they are tried again): %s", exc)
        result.errors.append(str(exc))
        result.dm_note = "not all sent"
    if result.channel is not None or (result.dms is not None and result.dms.sent):
        log.info("tick at %s: %s", now.isoformat(timespec="seconds"), "; ".join(result.lines()[1:]))
    return result


def run_scheduled_tick(
    services: Services, client: WebClient, pacing: Pacing | None = None
) -> TickResult | None:
    """The every-minute job: `run_due` at the clock's time; never raises."""
    try:
        return run_due(services, client, now_utc(), pacing=pacing)
    except Exception as exc:
        _log_failure(services, "the scheduled tick", exc)
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
        dms = ReaderDelivery(services, client, now_utc(), pacing)
        dms.resume_open(timedelta(0))
    except DeliveryError:
        return  # logged with its cause
    except Exception as exc:
        _log_failure(services, "resuming the digest after the Slack outage", exc)
        return
    if result.runs:
        log.info("after the Slack outage: %s", result.message)
    if dms.result.resumed:
        log.info("after the Slack outage: %s", dms.result.summary())


def catch_up(
    services: Services,
    client: WebClient,
    now: datetime | None = None,
    *,
    pacing: Pacing | None = None,
) -> RunResult | None:
    """On start: finish what was left unfinished, then do what is due (within grace): the
    latest missed channel slot once, the readers' DMs whose moment was missed.

    Returns the channel digest's result, or None when no slot was due.
    """
    tick = run_due(services, client, now or now_utc(), pacing=pacing, on_start=True)
    return tick.channel


def _catch_up_quietly(services: Services, client: WebClient, pacing: Pacing | None) -> None:
    try:
        catch_up(services, client, pacing=pacing)
    except Exception as exc:
        _log_failure(services, "catch-up of the weekly digest", exc)


def tick_trigger(every: timedelta = TICK) -> BaseTrigger:
    """At the start of every minute (or every `every`, for tests)."""
    if every == TICK:
        return CronTrigger(second=0, timezone=UTC)
    return IntervalTrigger(seconds=every.total_seconds(), timezone=UTC)


def build_scheduler(
    services: Services,
    client: WebClient,
    *,
    pacing: Pacing | None = None,
    every: timedelta = TICK,
) -> BackgroundScheduler:
    """A BackgroundScheduler (not started) with the tick job (`run_due`, every minute).

    Without PRDIGEST_CHANNEL the scheduler has no job and a warning says why.
    """
    settings = services.settings
    scheduler = BackgroundScheduler(timezone=settings.zone)
    if not settings.channel:
        log.warning("PRDIGEST_CHANNEL is not set: the weekly digest is off")
        return scheduler
    scheduler.add_job(
        run_scheduled_tick,
        trigger=tick_trigger(every),
        args=[services, client, pacing],
        id=JOB_ID,
        name="digest and readers' DMs due",
        # A tick late by more than this is skipped: the next one does what it would have.
        misfire_grace_time=max(1, int(every.total_seconds())),
        coalesce=True,
        max_instances=1,
        replace_existing=True,
    )
    return scheduler


def start_scheduler(
    services: Services,
    client: WebClient,
    *,
    pacing: Pacing | None = None,
    every: timedelta = TICK,
) -> BackgroundScheduler:
    """Start the tick job and run the catch-up (`run_due` on start) in a background thread."""
    scheduler = build_scheduler(services, client, pacing=pacing, every=every)
    scheduler.start()
    if services.settings.channel:
        threading.Thread(
            target=_catch_up_quietly,
            args=(services, client, pacing),
            name="prdigest-catch-up",
            daemon=True,
        ).start()
    return scheduler
