"""Each reader's weekly DM, at their own day and time, exactly once.

A reader's moment comes from `bot.readers.schedule` (their own day and time, or the team's
schedule, on their own wall clock). When it is due, the reader's moment is claimed in the
ledger (`Ledger.claim_reader_dm`): the DM holds the notes the channel digest posted since
their previous DM that they were not sent yet, at most their budget of them in full, best
first, with a closing line counting the rest and a button that lists them. A reader whose
DMs are off, or who is paused, has the moment settled without a message; the first DM
after a pause adds "While you were away". Each DM is in its reader's language (their
`/prdigest lang`, else Slack's locale for them, else PRDIGEST_LANGUAGE).

Messages go out through the DM fan-out, each recorded as soon as Slack accepts it; a DM
left unfinished by a crash is taken over, first looked for in the reader's DM history,
then finished. `prdigest post` sends every reader's DM at once (`deliver_now`).
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.delivery.dm_fanout import DmFanout
from bot.delivery.languages import dm_texts
from bot.delivery.pacing import Pacing, RateController
from bot.delivery.posting import (
    DeliveryError,
    explain_unreachable,
    scan_dm,
    thread_links,
)
from bot.delivery.profiles import PROFILE_MAX_AGE, reader_profile
from bot.domain import Note, Reader, ReaderProfile, Role
from bot.i18n.texts import Texts
from bot.notes.digest import week_label
from bot.readers.dm_settings import reader_budget
from bot.readers.reading_list import ReadingPool, ReadingSection, within_budget
from bot.readers.schedule import DmSchedule, dm_schedule, reader_zone
from bot.render.digest_blocks import DmSection, dm_messages, note_ids_in
from bot.render.reader_settings import left_out_blocks, left_out_value
from bot.services import Services
from bot.store.ledger import (
    EMPTY,
    OFF,
    OPEN,
    PAUSED,
    ChannelNote,
    Ledger,
    LostClaimError,
    Part,
    PlannedPart,
    ReaderDm,
    ReaderDmPlan,
    ReaderPlanner,
    ReaderWindow,
    process_identity,
    slot_key,
)

log = logging.getLogger(__name__)

POST_SLOT = "post:"  # the slot of a DM `prdigest post` sends, whatever the reader's time
RETRY_AFTER = timedelta(minutes=10)  # a DM Slack refused is tried again by a tick after this
CLAIM_CHUNK = 50  # readers claimed, then sent to, at a time: the claims stay fresh
PROFILE_REFRESHES = 50  # users.info calls one tick makes at most
PROFILE_RETRY = timedelta(hours=1)  # a reader Slack did not answer for is asked again after this
_HISTORY_MARGIN = timedelta(minutes=5)


@dataclass
class DmResult:
    """What one delivery of readers' DMs did."""

    sent: int = 0  # DM messages Slack accepted
    readers: list[str] = field(default_factory=list)  # who got a DM (user IDs)
    settled: Counter[str] = field(default_factory=Counter)  # nothing to send: empty/off/paused
    resumed: int = 0  # unfinished DMs finished
    busy: int = 0  # readers whose unfinished DM another process holds

    def summary(self) -> str:
        """ "3 DMs to 3 readers (U1, U2, U3); nothing new for 2; DMs off for 1" """
        parts = []
        if self.readers:
            shown = ", ".join(self.readers[:10]) + (" …" if len(self.readers) > 10 else "")
            dms = "DM" if self.sent == 1 else "DMs"
            readers = "reader" if len(self.readers) == 1 else "readers"
            parts.append(f"{self.sent} {dms} to {len(self.readers)} {readers} ({shown})")
        else:
            parts.append("no DM sent")
        for status, label in (
            (EMPTY, "nothing new for"),
            (OFF, "DMs off for"),
            (PAUSED, "paused:"),
        ):
            if self.settled[status]:
                parts.append(f"{label} {self.settled[status]}")
        if self.resumed:
            parts.append(f"{self.resumed} unfinished DMs finished")
        if self.busy:
            parts.append(f"{self.busy} held by another process")
        return "; ".join(parts)


@dataclass(frozen=True)
class Due:
    """A reader whose moment has come: `slot` names it in the ledger."""

    reader: Reader
    slot: str
    due_at: datetime


def dm_sections(
    services: Services,
    sections: Sequence[ReadingSection],
    links: dict[str, str],
    zone: ZoneInfo,
    t: Texts,
) -> list[DmSection]:
    """A reader's chosen notes as DM headings, with links to the role threads."""
    out: list[DmSection] = []
    for section in sections:
        if section.kind == "role" and section.role is not None:
            role: Role = services.taxonomy.get(section.role)
            link = links.get(section.role) or links.get("")
            out.append(DmSection(role, section.notes, link))
        elif section.kind == "watch":
            heading = t.gettext("Watching: {query}", query=section.query)
            out.append(DmSection(None, section.notes, None, heading=heading))
        elif section.pause is not None:
            start = section.pause.started_at.astimezone(zone).date().isoformat()
            end = section.pause.until.astimezone(zone).date().isoformat()
            footer = (
                t.gettext(
                    "{count} more from those weeks: `/prdigest week` shows any week",
                    count=section.more,
                )
                if section.more
                else ""
            )
            out.append(
                DmSection(
                    None,
                    section.notes,
                    None,
                    heading=t.gettext(
                        "While you were away ({start} – {end})", start=start, end=end
                    ),
                    footer=footer,
                )
            )
    return out


class ReaderDelivery:
    """Plans, claims and sends readers' DMs for one moment `now` (a tick, or a post)."""

    def __init__(
        self,
        services: Services,
        client: WebClient | None,
        now: datetime,
        pacing: Pacing | None = None,
    ) -> None:
        self.services = services
        self.client = client
        self.now = now
        self.pacing = pacing or Pacing.from_settings(services.settings)
        self.ledger = Ledger(services.store.engine)
        self.owner = process_identity()
        self.pool = ReadingPool(services.store, services.taxonomy)
        self.controller = RateController(self.pacing.dm_per_second, self.pacing.dm_max_per_second)
        self.result = DmResult()
        self._links: dict[int, dict[str, str]] = {}
        self._keys: dict[int, str] = {}
        self._counting = threading.Lock()  # the fan-out's senders share what follows
        self._open: dict[int, ReaderDm] = {}  # claimed, not finished
        self._sent_runs: set[int] = set()  # DMs of which a message went out

    @property
    def channel(self) -> str:
        return self.services.settings.channel or ""

    # -- planning one reader's DM ---------------------------------------------------------

    def planner(
        self, reader: Reader, run_key: str, extra: Sequence[ChannelNote] = ()
    ) -> ReaderPlanner:
        """What `claim_reader_dm` runs inside the claim; `extra`: notes a dry run adds as
        if the channel had posted them."""

        def plan(window: ReaderWindow) -> ReaderDmPlan:
            if reader.settings.dm_off:
                return ReaderDmPlan(OFF)
            if reader.pause is not None and reader.pause.active(self.now):
                return ReaderDmPlan(PAUSED)
            return self._plan(reader, run_key, window, extra)

        return plan

    def _plan(
        self,
        reader: Reader,
        run_key: str,
        window: ReaderWindow,
        extra: Sequence[ChannelNote],
    ) -> ReaderDmPlan:
        posted = {p.note_id: p for p in [*window.posted, *extra]}
        missed, missed_runs = self._away(reader, window)
        # What the channel posted during a pause goes under "While you were away".
        notes = self.pool.notes(i for i in posted if i not in missed_runs)
        sections = self.pool.sections(reader, notes, window.sent, missed)
        budget = reader_budget(self.services.settings, reader.settings)
        fitted = within_budget(reader, sections, budget)
        if not fitted.sections:
            return ReaderDmPlan(EMPTY)
        run_of = {i: p.run_id for i, p in posted.items()} | missed_runs
        zone = reader_zone(self.services.settings, reader.profile)
        shown_runs = [posted[n.id] for s in fitted.sections for n in s.notes if n.id in posted]
        newest = max(shown_runs, key=lambda p: p.run_id, default=None)
        week = newest.week if newest is not None else week_label(self.now, zone)
        links = self._section_links(fitted.sections, run_of)
        left = [(n.id, role or "") for n, role in fitted.left_out]
        t = dm_texts(self.services, reader)  # the reader's language
        closing = left_out_blocks(len(left), budget, left_out_value(run_key), t) if left else []
        team_id, user_id = reader.key
        parts: list[PlannedPart] = []
        shown: list[tuple[int, int, str]] = []
        messages = dm_messages(
            week,
            False,
            dm_sections(self.services, fitted.sections, links, zone, t),
            self.services.taxonomy,
            t,
            closing=closing,
        )
        for index, message in enumerate(messages, start=1):
            part = f"dm:{team_id}:{user_id}:{index}"
            parts.append(PlannedPart(part, "dm", user_id, message))
            shown.extend((i, run_of.get(i, 0), part) for i in note_ids_in(message))
        return ReaderDmPlan(OPEN, parts, shown, left, week)

    def _away(self, reader: Reader, window: ReaderWindow) -> tuple[list[Note], dict[int, int]]:
        """The notes of a pause that ended, for the reader's first DM after it."""
        pause = reader.pause
        if pause is None or pause.until > self.now or not self.channel:
            return [], {}
        if window.previous_due is not None:
            if window.previous_due >= pause.until:
                return [], {}  # a DM after the pause carried them
        else:
            first = self.ledger.first_run_since(self.channel, pause.until)
            if first is not None and self.ledger.get_run(first).dm_planned:
                return [], {}  # that run's DMs, planned inside it, carried them
        ids = self.ledger.notes_posted_between(self.channel, pause.started_at, pause.until)
        runs = self.ledger.posted_runs_of(self.channel, ids)
        return self.pool.notes(i for i in ids if i in runs), runs

    def _section_links(
        self, sections: Sequence[ReadingSection], run_of: dict[int, int]
    ) -> dict[str, str]:
        """Role slug -> its thread in the newest run that posted one of the section's notes
        ("" -> that run's parent message)."""
        links: dict[str, str] = {}
        for section in sections:
            if section.kind != "role" or section.role is None:
                continue
            runs = [run_of[n.id] for n in section.notes if run_of.get(n.id)]
            if runs:
                found = self._links.get(max(runs), {})
                link = found.get(section.role) or found.get("")
                if link:
                    links[section.role] = link
        return links

    def _fetch_links(self, reader: Reader) -> None:
        """Thread links of the channel runs the reader's DM may cover, asked of Slack before
        the claim (never while a claim holds the database); each run's once."""
        if self.client is None or not self.channel:
            return
        window = self.ledger.reader_window(self.channel, *reader.key, self.now)
        for run_id in sorted({p.run_id for p in window.posted} - set(self._links)):
            parts = self.ledger.parts(run_id)
            try:
                self._links[run_id] = thread_links(self.client, self.channel, parts)
            except (SlackApiError, SlackClientError, OSError):
                self._links[run_id] = {}

    # -- delivering ------------------------------------------------------------------------

    def deliver(self, due: Sequence[Due]) -> DmResult:
        """Claim each reader's moment and send the DMs: each reader is claimed just before
        the senders reach them, while the DMs claimed before go out."""
        self._stream(self._claimed(due))
        return self.result

    def _claimed(self, due: Sequence[Due]) -> Iterator[list[Part]]:
        for item in due:
            if not item.reader.settings.dm_off:
                self._fetch_links(item.reader)
            run = self._claim(item)
            if run is not None:
                yield self._parts_of(run)

    def _claim(self, due: Due) -> ReaderDm | None:
        team_id, user_id = due.reader.key
        run_key = uuid.uuid4().hex
        claim = self.ledger.claim_reader_dm(
            team_id=team_id,
            user_id=user_id,
            slot=due.slot,
            due_at=due.due_at,
            channel=self.channel,
            owner=self.owner,
            plan=self.planner(due.reader, run_key),
            run_key=run_key,
        )
        if claim.outcome == "settled":
            self.result.settled[claim.status] += 1
        elif claim.outcome == "busy":
            self.result.busy += 1
        return claim.run if claim.outcome == "new" else None

    def resume_open(self, retry_after: timedelta = RETRY_AFTER) -> None:
        """Finish the DMs a crashed process left unfinished, and those Slack refused at
        least `retry_after` ago."""
        taken = []
        for run in self.ledger.open_reader_dms():
            mine = self.ledger.take_over_reader_dm(run, self.owner, retry_after=retry_after)
            if mine is not None:
                log.info("resuming the DM %s of %s", mine.id, mine.user_id)
                taken.append(mine)
        if not taken:
            return
        self._recover(taken)
        self._stream(self._parts_of(run) for run in taken)
        self.result.resumed += len(taken)

    def _recover(self, runs: list[ReaderDm]) -> None:
        """Record what Slack already has of DMs a crashed process was sending."""
        if self.client is None:
            return
        for run in runs:
            oldest = f"{(run.created_at - _HISTORY_MARGIN).timestamp():.6f}"
            parts = [p for p in self.ledger.reader_dm_parts(run.id) if not p.settled]
            if not parts:
                continue
            try:
                found = scan_dm(self.client, run.user_id, run.run_key, oldest)
            except (SlackClientError, OSError) as exc:
                why = explain_unreachable(self.client, exc)
                self._release(runs, why)
                raise DeliveryError(why) from None
            for part in parts:
                if found and part.part in found:
                    ts, _thread, channel = found[part.part]
                    self.ledger.record_reader_dm_sent(
                        run.id, part.part, self.owner, ts=ts, posted_channel=channel
                    )
                    self._sent_runs.add(run.id)
                    log.info("DM %s: %s was already in Slack (ts %s)", run.id, part.part, ts)

    def _parts_of(self, run: ReaderDm) -> list[Part]:
        """A claimed DM's messages, handed to the senders (the DM is ours until finished)."""
        with self._counting:
            self._keys[run.id] = run.run_key
            self._open[run.id] = run
        return self.ledger.reader_dm_parts(run.id)

    def _stream(self, groups: Iterable[list[Part]]) -> None:
        """Send the claimed DMs `groups` yields, each finished once its messages are out; on
        an error the unfinished ones are let go, to be resumed."""
        if self.client is None:  # before `groups` claims anything
            raise DeliveryError("a Slack client is needed to send DMs; set SLACK_BOT_TOKEN")
        fanout = DmFanout(
            self.client,
            lambda part: self._keys[part.run_id],
            self.controller,
            concurrency=self.pacing.dm_concurrency,
            before_send=lambda part: self.ledger.reader_dm_heartbeat(part.run_id, self.owner),
            on_sent=self._record_sent,
            on_undeliverable=lambda part, error: self.ledger.record_reader_dm_undeliverable(
                part.run_id, part.part, error
            ),
        )
        try:
            fanout.send_stream(groups, on_done=self._finish)
        except (DeliveryError, LostClaimError) as exc:
            self._release(self._unfinished(), str(exc))
            raise
        except (SlackClientError, OSError) as exc:
            self._release(self._unfinished(), str(exc))
            raise DeliveryError(explain_unreachable(self.client, exc)) from None
        except Exception as exc:
            self._release(self._unfinished(), f"{type(exc).__name__}: {exc}")
            raise

    def _finish(self, group: Sequence[Part]) -> None:
        """A DM's messages are all out (or settled): it is done."""
        run_id = group[0].run_id
        self.ledger.finish_reader_dm(run_id, self.owner)
        with self._counting:
            run = self._open.pop(run_id)
            if run_id in self._sent_runs:
                self.result.readers.append(run.user_id)

    def _unfinished(self) -> list[ReaderDm]:
        with self._counting:
            runs, self._open = list(self._open.values()), {}
        return runs

    def _record_sent(self, part: Part, ts: str, channel: str) -> None:
        self.ledger.record_reader_dm_sent(
            part.run_id, part.part, self.owner, ts=ts, posted_channel=channel
        )
        with self._counting:
            self.result.sent += 1
            self._sent_runs.add(part.run_id)
        self.services.metrics.dm_sent()

    def _release(self, runs: Iterable[ReaderDm], error: str) -> None:
        for run in runs:
            self.ledger.release_reader_dm(run.id, self.owner, error)


# -- whose moment has come -------------------------------------------------------------------


def refresh_profiles(
    services: Services, client: WebClient | None, readers: list[Reader], now: datetime
) -> list[Reader]:
    """The readers with their Slack profile (time zone) asked again once a day, at most
    PROFILE_REFRESHES of them per call. When Slack does not answer, the cached profile
    stays (none: PRDIGEST_TIMEZONE), that reader is asked again in PROFILE_RETRY, and no
    more are asked this time."""
    if client is None:
        return readers
    out: list[Reader] = []
    asked = 0
    stop = False
    for reader in readers:
        stale = reader.profile is None or now - reader.profile.fetched_at >= PROFILE_MAX_AGE
        if stale and not stop and not reader.settings.dm_off and asked < PROFILE_REFRESHES:
            asked += 1
            fresh = reader_profile(services.store, client, *reader.key, now)
            if fresh is not None and fresh.fetched_at == now:
                reader = replace(reader, profile=fresh)
            else:
                stop = True  # Slack did not answer: the rest wait for the next tick
                kept = reader.profile or ReaderProfile(tz=None, locale=None, fetched_at=now)
                retry = replace(kept, fetched_at=now - PROFILE_MAX_AGE + PROFILE_RETRY)
                services.store.readers.save_profile(*reader.key, retry)
        out.append(reader)
    return out


def due_readers(services: Services, readers: Sequence[Reader], now: datetime) -> list[Due]:
    """The readers whose latest moment is within PRDIGEST_MISFIRE_GRACE of `now` and was
    not claimed yet."""
    settings = services.settings
    grace = settings.misfire_grace
    handled = Ledger(services.store.engine).handled_moments(now - grace - timedelta(days=1))
    latest: dict[DmSchedule, datetime | None] = {}  # readers share zones and times
    out: list[Due] = []
    for reader in readers:
        schedule = dm_schedule(settings, reader.settings, reader.profile)
        if schedule not in latest:
            latest[schedule] = schedule.latest(now, grace)
        moment = latest[schedule]
        if moment is None:
            continue
        slot = slot_key(moment)
        if (*reader.key, slot) not in handled:
            out.append(Due(reader, slot, moment))
    return out


def deliver_due(
    services: Services,
    client: WebClient | None,
    now: datetime,
    pacing: Pacing | None = None,
    *,
    retry_after: timedelta = RETRY_AFTER,
) -> DmResult:
    """Every reader's DM whose moment has come and was not sent: what a tick does."""
    delivery = ReaderDelivery(services, client, now, pacing)
    delivery.resume_open(retry_after)
    readers = refresh_profiles(services, client, services.store.readers.all_readers(), now)
    return delivery.deliver(due_readers(services, readers, now))


def deliver_now(
    services: Services, client: WebClient | None, now: datetime, pacing: Pacing | None = None
) -> DmResult:
    """Every reader's DM now, whatever their time (`prdigest post`): readers whose DMs
    are off or who are paused are left alone. Profiles a day old are asked again first
    (each DM is in its reader's language, dated on their clock)."""
    delivery = ReaderDelivery(services, client, now, pacing)
    delivery.resume_open(timedelta(0))
    slot = f"{POST_SLOT}{uuid.uuid4().hex}"
    readers = refresh_profiles(services, client, services.store.readers.all_readers(), now)
    due = [
        Due(r, slot, now)
        for r in readers
        if not r.settings.dm_off and not (r.pause is not None and r.pause.active(now))
    ]
    return delivery.deliver(due)


def preview_dms(
    services: Services, now: datetime, extra: Sequence[ChannelNote]
) -> list[PlannedPart]:
    """What `prdigest post` would DM now, with `extra` as if the channel had posted them
    (a dry run: nothing is claimed or sent)."""
    delivery = ReaderDelivery(services, None, now)
    parts: list[PlannedPart] = []
    for reader in services.store.readers.all_readers():
        if reader.settings.dm_off or (reader.pause is not None and reader.pause.active(now)):
            continue
        window = delivery.ledger.reader_window(delivery.channel, *reader.key, now)
        planned = delivery.planner(reader, "dry-run", extra)(window)
        parts.extend(planned.parts)
    return parts
