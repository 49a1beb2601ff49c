"""The weekly digest job: post every unposted note once to the channel (then, for `prdigest
post`, every reader's DM now, through `bot.delivery.reader_dms`).

`publish_weekly_digest` is a plain function (the scheduler's tick, `prdigest post` and the
tests call it). Exactly-once rests on the ledger in `bot.store.ledger`: a run is claimed
atomically with its note set and rendered messages; each message's `ts` is recorded as soon
as Slack accepts it; each message carries Slack metadata (`prdigest_digest`, run key,
part), so a run resumed after a crash first looks in the channel (and threads) for what
Slack already has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.delivery.dm_fanout import DmFanout
from bot.delivery.languages import channel_texts
from bot.delivery.pacing import Pacing, RateController
from bot.delivery.posting import (
    EVENT_TYPE,
    ChannelPoster,
    DeliveryError,
    Found,
    explain_slack_error,
    explain_unreachable,
    scan_dm,
    scan_run_messages,
)
from bot.delivery.reader_dms import DmResult, deliver_now, preview_dms
from bot.delivery.revisions import revised_payload, update_revised_messages
from bot.notes.digest import build_digest, week_label
from bot.notes.sample_notes import NotesFolderError
from bot.ops.logs import run_context
from bot.render.digest_blocks import Message, note_ids_in, parent_message, role_messages
from bot.services import Services, ingest_default, sample_note_ids
from bot.store.ledger import (
    ChannelNote,
    Claim,
    Ledger,
    LostClaimError,
    Part,
    Plan,
    PlannedPart,
    Planner,
    Run,
    process_identity,
    slot_key,
)

__all__ = [
    "EVENT_TYPE",
    "DeliveryError",
    "Pacing",
    "PreviewMessage",
    "RunResult",
    "explain_slack_error",
    "publish_weekly_digest",
    "resume_unfinished_runs",
]

log = logging.getLogger(__name__)

_HISTORY_MARGIN = timedelta(minutes=5)
_MAX_CLAIMS = 4  # resume at most a few crashed runs before the new one


@dataclass(frozen=True)
class PreviewMessage:
    """A message `--dry-run` would post."""

    part: str
    channel: str
    payload: Message


@dataclass
class RunResult:
    """What one call of the job did."""

    status: str  # "posted", "nothing_new", "busy", "slot_done", "dry_run"
    message: str
    runs: list[int] = field(default_factory=list)
    notes: int = 0
    posted: int = 0  # channel messages posted by this call
    found: int = 0  # messages Slack already had (recovered after a crash)
    dms: int = 0
    updated: int = 0  # posted messages updated in place (revised or fixed notes)
    addition: bool = False
    ingest_errors: list[str] = field(default_factory=list)
    preview: list[PreviewMessage] = field(default_factory=list)
    dm: DmResult | None = None  # the readers' DMs sent after the channel digest


PLACEHOLDER_CHANNEL = "#digest-channel"
"""What a dry run shows as the channel when PRDIGEST_CHANNEL is not set."""


def require_channel(services: Services) -> str:
    channel = services.settings.channel
    if not channel:
        raise DeliveryError(
            "PRDIGEST_CHANNEL is not set: set it to the channel ID (C…) of the weekly digest"
        )
    return channel


# -- planning -------------------------------------------------------------------------


def _channel_planner(
    services: Services, channel: str, week: str, held: frozenset[int] = frozenset()
) -> Planner:
    """Renders a run's messages from the unposted notes, leaving out the `held` ones (the
    bundled sample notes: they stay unposted)."""

    def plan(note_ids: list[int], addition: bool) -> Plan | None:
        notes = services.store.get_notes([i for i in note_ids if i not in held])
        digest = build_digest(notes, services.taxonomy, week, addition)
        if digest.is_empty and (addition or not services.settings.post_empty):
            return None
        t = channel_texts(services.settings)
        parts = [PlannedPart("parent", "parent", channel, parent_message(digest, t))]
        note_roles: dict[int, str] = {}
        note_parts: dict[int, str] = {}
        for section in digest.sections:
            slug = section.role.slug
            for index, message in enumerate(
                role_messages(section, digest, services.taxonomy, t), start=1
            ):
                name = f"role:{slug}:{index}"
                parts.append(PlannedPart(name, "thread", channel, message))
                note_parts.update((note_id, name) for note_id in note_ids_in(message))
            note_roles.update((n.id, slug) for n in section.notes)
        return Plan(note_roles=note_roles, parts=parts, note_parts=note_parts)

    return plan


# -- Slack ----------------------------------------------------------------------------


class _RunDelivery:
    """Delivers one claimed run: recovery after a crash, the channel digest, then the DMs.

    Every message is recorded in the ledger as soon as Slack accepts it.
    """

    def __init__(
        self,
        services: Services,
        client: WebClient,
        ledger: Ledger,
        run: Run,
        owner: str,
        pacing: Pacing,
    ) -> None:
        self.services = services
        self.client = client
        self.ledger = ledger
        self.run = run
        self.owner = owner
        self.pacing = pacing
        self.posted = 0
        self.found = 0
        self.dms = 0

    # Recovery: what Slack already has of this run.

    def _scan(self, method: str, **kwargs: Any) -> Found:
        return scan_run_messages(self.client, self.run.run_key, method, **kwargs)

    def _oldest(self) -> str:
        return f"{(self.run.created_at - _HISTORY_MARGIN).timestamp():.6f}"

    def recover_channel(self, parts: list[Part]) -> None:
        missing = [p for p in parts if p.kind != "dm" and not p.settled]
        if not missing:
            return
        channel = self.run.channel
        found = self._scan("conversations_history", channel=channel, oldest=self._oldest())
        parent = self._record_found(parts, found, "parent")
        if parent is None:
            return
        found.update(self._scan("conversations_replies", channel=channel, ts=parent))
        for part in missing:
            if part.part != "parent":
                self._record_found(parts, found, part.part)

    def recover_dms(self, parts: list[Part]) -> None:
        users = {p.channel for p in parts if p.kind == "dm" and not p.settled}
        for user in sorted(users):
            found = scan_dm(self.client, user, self.run.run_key, self._oldest())
            if found is None:
                continue
            for part in parts:
                if part.kind == "dm" and part.channel == user and not part.settled:
                    self._record_found(parts, found, part.part)

    def _record_found(self, parts: list[Part], found: Found, name: str) -> str | None:
        part = next((p for p in parts if p.part == name), None)
        if part is None:
            return None
        if part.ts is not None:
            return part.ts
        if name not in found:
            return None
        ts, thread_ts, channel = found[name]
        self.ledger.record_sent(
            self.run.id, name, self.owner, ts=ts, thread_ts=thread_ts, posted_channel=channel
        )
        self.found += 1
        log.info("digest run %s: %s was already in Slack (ts %s)", self.run.id, name, ts)
        return ts

    # Posting.

    def _still_ours(self) -> None:
        # A process that stalled past the takeover window stops here instead of posting a
        # part its successor may already have posted.
        self.ledger.heartbeat(self.run.id, self.owner)

    def _record_channel(self, part: Part, ts: str, thread_ts: str | None, channel: str) -> None:
        self.ledger.record_sent(
            self.run.id, part.part, self.owner, ts=ts, thread_ts=thread_ts, posted_channel=channel
        )
        self.posted += 1

    def _record_dm(self, part: Part, ts: str, channel: str) -> None:
        self.ledger.record_sent(
            self.run.id, part.part, self.owner, ts=ts, thread_ts=None, posted_channel=channel
        )
        self.dms += 1
        self.services.metrics.dm_sent()

    def _record_undeliverable(self, part: Part, error: str) -> None:
        self.ledger.record_undeliverable(self.run.id, part.part, error)

    def post_channel(self, parts: list[Part]) -> None:
        poster = ChannelPoster(
            self.client,
            self.run.run_key,
            per_second=self.pacing.channel_per_second,
            before_send=self._still_ours,
            on_sent=self._record_channel,
        )
        parent_ts = next((p.ts for p in parts if p.part == "parent"), None)
        poster.post_all(parts, parent_ts)

    def send_dms(self, parts: list[Part]) -> None:
        controller = RateController(self.pacing.dm_per_second, self.pacing.dm_max_per_second)
        fanout = DmFanout(
            self.client,
            self.run.run_key,
            controller,
            concurrency=self.pacing.dm_concurrency,
            before_send=lambda _part: self._still_ours(),
            on_sent=self._record_dm,
            on_undeliverable=self._record_undeliverable,
        )
        try:
            fanout.send_all(parts)
        finally:
            if fanout.limited:
                log.info(
                    "digest run %s: Slack rate-limited %d DM(s); final rate %.1f/s",
                    self.run.id,
                    fanout.limited,
                    controller.rate,
                )

    def deliver(self) -> None:
        parts = self.ledger.parts(self.run.id)
        if self.run.resumed:
            self._recover(self.recover_channel, parts)
            parts = self.ledger.parts(self.run.id)
        self.post_channel(parts)
        # Readers' DMs go out at each reader's own time (`bot.delivery.reader_dms`); a run
        # left unfinished by an older version may still hold DMs planned inside it.
        parts = self.ledger.parts(self.run.id)
        if any(p.kind == "dm" and not p.settled for p in parts):
            if self.run.resumed:
                self._recover(self.recover_dms, parts)
                parts = self.ledger.parts(self.run.id)
            self.send_dms(parts)
        self.ledger.finish(self.run.id, self.owner)

    def _recover(self, step: Callable[[list[Part]], None], parts: list[Part]) -> None:
        try:
            step(parts)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "unknown_error")
            raise DeliveryError(explain_slack_error(error, self.run.channel, "history")) from None
        except (SlackClientError, OSError) as exc:
            raise DeliveryError(explain_unreachable(self.client, exc)) from None


# -- the job --------------------------------------------------------------------------


def _deliver_claimed(
    services: Services,
    client: WebClient,
    ledger: Ledger,
    run: Run,
    owner: str,
    pacing: Pacing,
    result: RunResult,
) -> None:
    poster = _RunDelivery(services, client, ledger, run, owner, pacing)
    with run_context(run.id):
        log.info("delivering digest run %s: %s notes to %s", run.id, run.note_count, run.channel)
        try:
            poster.deliver()
        except DeliveryError as exc:
            ledger.release(run.id, owner, str(exc))
            log.error("weekly digest not delivered (run %s stays unfinished): %s", run.id, exc)
            raise
        except LostClaimError:
            log.error("digest run %s was taken over by another process; stopped", run.id)
            raise
        except Exception as exc:
            ledger.release(run.id, owner, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            result.posted += poster.posted
            result.found += poster.found
            result.dms += poster.dms
    services.metrics.digest_posted()
    result.runs.append(run.id)
    result.notes += run.note_count
    result.addition = result.addition or run.addition


def resume_unfinished_runs(
    services: Services, client: WebClient, *, pacing: Pacing | None = None
) -> RunResult:
    """Finish runs a crashed or failed process left behind (nothing new is claimed)."""
    ledger = Ledger(services.store.engine)
    owner = process_identity()
    result = RunResult("nothing_new", "no unfinished digest run")
    for run in ledger.open_runs():
        if run.channel != services.settings.channel:
            continue
        taken = ledger.take_over_if_claimable(run, owner)
        if taken is None:
            continue
        log.info("resuming digest run %s (%s, %s)", taken.id, taken.channel, taken.week)
        _deliver_claimed(
            services,
            client,
            ledger,
            taken,
            owner,
            pacing or Pacing.from_settings(services.settings),
            result,
        )
    if result.runs:
        result.status = "posted"
        result.message = f"resumed digest run(s) {', '.join(map(str, result.runs))}"
    return result


def publish_weekly_digest(
    services: Services,
    client: WebClient | None,
    now: datetime,
    *,
    slot: datetime | None = None,
    dry_run: bool = False,
    pacing: Pacing | None = None,
    dms: bool = True,
) -> RunResult:
    """Ingest new note files, then post every note not yet posted to the channel, once.

    One parent message (counts per role, top deep reads) and one thread reply per role
    (split where Block Kit requires). A run left unfinished by a crash or a Slack error is
    resumed first. Then, with `dms`, every reader gets their DM now, whatever their own
    time (`bot.delivery.reader_dms.deliver_now`): the posted notes for them they were not
    sent yet, within their budget. `slot` is the scheduled time this run stands for (at
    most one run per slot). `dry_run` renders what would be posted and changes nothing.
    Raises DeliveryError (the run stays unfinished) when Slack refuses.
    """
    zone = services.settings.zone
    week = week_label(slot or now, zone)
    ledger = Ledger(services.store.engine)
    if dry_run:
        target = services.settings.channel or PLACEHOLDER_CHANNEL
        held = _held_back(services, ledger, target)
        preview = _dry_run(services, ledger, target, week, now, dms, held)
        return _preview_updates(services, ledger, target, _say_held_back(preview, held))
    channel = require_channel(services)
    if client is None:
        raise DeliveryError("a Slack client is needed to post; set SLACK_BOT_TOKEN")
    pacing = pacing or Pacing.from_settings(services.settings)
    result = RunResult("nothing_new", "nothing new to post", ingest_errors=_ingest(services, now))
    held = _held_back(services, ledger, channel)
    key = slot_key(slot) if slot is not None else None
    _claim_and_deliver(services, client, ledger, channel, week, key, pacing, result, held)
    if result.status in ("posted", "nothing_new"):
        _update_revised(services, client, channel, pacing, result)
    if dms and result.status in ("posted", "nothing_new"):
        result.dm = deliver_now(services, client, now, pacing)
        result.dms += result.dm.sent
    if result.runs:
        _say_posted(result, channel, week)
    elif result.dm is not None and result.dm.sent:
        result.message += f"; {result.dm.summary()}"
    if result.updated:
        result.message += f"; {result.updated} posted messages updated in place (revised)"
    _say_held_back(result, held)
    log.info("weekly digest: %s", result.message)
    return result


def _held_back(services: Services, ledger: Ledger, channel: str) -> frozenset[int]:
    """The bundled sample notes in the store not yet posted to `channel`: a run never
    posts them (they are what an older `prdigest preview` stored)."""
    samples = sample_note_ids(services)
    if not samples:
        return frozenset()
    return frozenset(samples) & frozenset(ledger.unposted_note_ids(channel))


def _say_held_back(result: RunResult, held: frozenset[int]) -> RunResult:
    if held:
        result.message += (
            f"; {len(held)} bundled sample notes in the store were left out "
            "(`prdigest remove-samples` removes them)"
        )
    return result


def _ingest(services: Services, now: datetime) -> list[str]:
    """New note files first, so the run posts them; the files that failed, one line each.

    An unset notes folder, or one holding the bundled samples, ends the run before anything
    is posted (DeliveryError)."""
    try:
        report = ingest_default(services, now)
    except NotesFolderError as exc:
        log.error("weekly digest not posted: %s", exc)
        raise DeliveryError(str(exc)) from None
    errors = [str(e) for e in report.errors]
    for error in errors:
        log.warning("note file skipped: %s", error)
    return errors


def _claim_and_deliver(
    services: Services,
    client: WebClient,
    ledger: Ledger,
    channel: str,
    week: str,
    key: str | None,
    pacing: Pacing,
    result: RunResult,
    held: frozenset[int],
) -> None:
    """Claim the channel's run for this week (or slot) and deliver it; an unfinished run
    found first is resumed, then a new claim takes what it left out (but the `held` notes)."""
    owner = process_identity()
    planner = _channel_planner(services, channel, week, held)
    for _ in range(_MAX_CLAIMS):
        claim: Claim = ledger.claim_run(
            channel=channel, week=week, slot=key, owner=owner, plan=planner
        )
        if claim.run is not None and claim.outcome in ("new", "resume"):
            if claim.outcome == "resume":
                log.info("resuming unfinished digest run %s", claim.run.id)
            _deliver_claimed(services, client, ledger, claim.run, owner, pacing, result)
            if claim.outcome == "resume":
                continue
            break
        if not result.runs:
            _say_refused(result, claim, channel, key)
        break


def _say_refused(result: RunResult, claim: Claim, channel: str, key: str | None) -> None:
    """Why nothing was posted: another process holds the run, or the slot was handled."""
    if claim.outcome == "busy":
        result.status = "busy"
        result.message = (
            f"another process is posting the digest to {channel} "
            f"({claim.holder or 'starting'}); nothing posted"
        )
    elif claim.outcome == "slot_done":
        result.status = "slot_done"
        result.message = f"the digest of slot {key} was already handled"


def _say_posted(result: RunResult, channel: str, week: str) -> None:
    result.status = "posted"
    label = "addition to " if result.addition else ""
    result.message = (
        f"posted the {label}{week} digest to {channel}: {result.notes} notes, "
        f"{result.posted} channel messages ({result.found} found already posted), "
        f"{result.dms} DMs"
    )


def _update_revised(
    services: Services, client: WebClient, channel: str, pacing: Pacing, result: RunResult
) -> None:
    """Notes revised or fixed since they were posted: their messages change in place."""
    updates = update_revised_messages(
        services, client, channel, per_second=pacing.channel_per_second
    )
    result.updated = updates.updated


def _preview_updates(
    services: Services, ledger: Ledger, channel: str, result: RunResult
) -> RunResult:
    """Add to a dry run the posted messages the run would update in place."""
    stale = ledger.stale_messages(channel)
    for message in stale:
        payload = revised_payload(services, message)
        result.preview.append(PreviewMessage(f"update:{message.part}", message.channel, payload))
    if stale:
        result.message += f"; would update {len(stale)} posted messages in place (revised)"
    return result


def _dry_run(
    services: Services,
    ledger: Ledger,
    channel: str,
    week: str,
    now: datetime,
    dms: bool,
    held: frozenset[int],
) -> RunResult:
    ids = ledger.unposted_note_ids(channel)
    addition = ledger.week_posted(channel, week)
    plan = _channel_planner(services, channel, week, held)(ids, addition)
    result = RunResult("dry_run", "", addition=addition)
    unset = (
        f" ({PLACEHOLDER_CHANNEL} stands for the channel: PRDIGEST_CHANNEL is not set, "
        "and posting needs it)"
        if channel == PLACEHOLDER_CHANNEL
        else ""
    )
    new = plan.note_roles if plan is not None else {}
    result.notes = len(new)
    if plan is not None:
        result.preview = [PreviewMessage(p.part, p.channel, p.payload) for p in plan.parts]
    if dms:
        extra = [ChannelNote(note_id, 0, week) for note_id in new]
        parts = preview_dms(services, now, extra)
        result.preview.extend(PreviewMessage(p.part, p.channel, p.payload) for p in parts)
    if plan is None:
        result.message = f"nothing new to post to {channel} (dry run){unset}"
        if result.preview:
            result.message += f"; would send {len(result.preview)} DM messages"
        return result
    label = "an addition to " if addition else ""
    result.message = (
        f"dry run: would post {label}the {week} digest to {channel}: {result.notes} notes, "
        f"{len(result.preview)} messages{unset}"
    )
    return result
