"""Sending one digest message to Slack, and the channel poster.

`send_message` posts one planned message with its metadata and turns Slack's answer into
one of: the response (accepted), `RateLimited` (HTTP 429, with its Retry-After),
`Undeliverable` (a DM whose recipient is gone) or `DeliveryError` (a line naming the cause
and what to do). The client it is given must retry nothing itself (`for_posting`): pacing is
the caller's, and a post that failed on a 5xx or a dropped connection may be in Slack
already, so it is not sent again in the same call; the run is resumed instead, and a resumed
run first looks for its messages in Slack by their metadata.

`ChannelPoster` posts the channel digest in order, one message per second per channel,
waiting out each 429's Retry-After before trying the same message again.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bot.delivery.pacing import ChannelPacer, Clock, MonotonicClock
from bot.slack.client import describe_unreachable
from bot.store.ledger import Part

log = logging.getLogger(__name__)

EVENT_TYPE = "prdigest_digest"
MAX_ATTEMPTS = 10  # 429s in a row for one message before the run is left to resume

# Errors that concern one DM recipient only: that DM is settled (not sent), the run goes on.
RECIPIENT_ERRORS = frozenset(
    {
        "user_not_found",
        "user_not_visible",
        "user_disabled",
        "cannot_dm_bot",
        "channel_not_found",
        "is_archived",
        "messages_tab_disabled",
    }
)


class DeliveryError(RuntimeError):
    """The digest could not be delivered; the message names the cause and what to do."""


class RateLimited(Exception):
    """Slack answered HTTP 429: wait `retry_after` seconds before the next call."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited; retry after {retry_after:g}s")
        self.retry_after = retry_after


class Undeliverable(Exception):
    """A DM Slack refuses for good (the user is gone or cannot receive it)."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


def explain_slack_error(error: str, channel: str, part: str) -> str:
    """One line naming the cause and what to do about it."""
    if error == "not_in_channel":
        return (
            f"the bot is not a member of channel {channel}: invite the bot to the channel "
            f"(/invite @prdigest in <#{channel}>), then run `prdigest post` or restart"
        )
    if error == "channel_not_found":
        return (
            f"channel {channel} not found: set PRDIGEST_CHANNEL to a channel ID (C…) the bot "
            "can see, and invite the bot there"
        )
    if error in ("invalid_auth", "not_authed", "token_revoked", "account_inactive"):
        return f"Slack refused the bot token ({error}): check SLACK_BOT_TOKEN"
    if error in ("msg_blocks_too_long", "invalid_blocks", "msg_too_long"):
        return (
            f"Slack refused message {part} as too long or invalid ({error}); "
            "nothing was marked sent, the run resumes on the next start"
        )
    if error == "ratelimited":
        return "Slack kept rate-limiting chat.postMessage; the run resumes on the next start"
    if error == "missing_scope":
        return "the Slack app lacks a scope (chat:write, channels:history, im:write)"
    return f"Slack answered {error} for message {part}"


_RETRIES = (RateLimitErrorRetryHandler, ServerErrorRetryHandler, ConnectionErrorRetryHandler)


def for_posting(client: WebClient) -> WebClient:
    """A copy of `client` that retries no post itself: a 429 goes back to the caller (it
    paces), and a 5xx or a dropped connection is an error, since Slack may have kept the
    message (posting it again at once would post it twice)."""
    handlers = [h for h in client.retry_handlers if not isinstance(h, _RETRIES)]
    if len(handlers) == len(client.retry_handlers):
        return client
    bare = copy.copy(client)
    bare.retry_handlers = handlers
    return bare


def explain_unreachable(client: WebClient, exc: BaseException) -> str:
    """One line for a call that got no answer: the cause, the setting, and that the run
    resumes."""
    return (
        f"{describe_unreachable(exc, client.base_url)}; nothing unsent was marked sent, the "
        "run resumes with the next `prdigest post` or start"
    )


def retry_after_of(exc: SlackApiError) -> float:
    """Seconds from a 429's Retry-After header (1 when missing or unreadable)."""
    headers = exc.response.headers or {}
    for key, value in headers.items():
        if key.lower() == "retry-after":
            raw = value[0] if isinstance(value, list) else value
            try:
                return max(0.0, float(raw))
            except (TypeError, ValueError):
                break
    return 1.0


def send_message(
    client: WebClient, part: Part, run_key: str, thread_ts: str | None
) -> dict[str, Any]:
    """Post `part` once; raises RateLimited, Undeliverable or DeliveryError."""
    metadata = {"event_type": EVENT_TYPE, "event_payload": {"run_id": run_key, "part": part.part}}
    try:
        response = client.chat_postMessage(
            channel=part.channel,
            text=str(part.payload.get("text", "")),
            blocks=part.payload.get("blocks"),
            thread_ts=thread_ts,
            metadata=metadata,
            unfurl_links=False,
            unfurl_media=False,
        )
    except SlackApiError as exc:
        if exc.response.status_code == 429:
            raise RateLimited(retry_after_of(exc)) from None
        error = str(exc.response.get("error") or "unknown_error")
        if part.kind == "dm" and error in RECIPIENT_ERRORS:
            raise Undeliverable(error) from None
        raise DeliveryError(explain_slack_error(error, part.channel, part.part)) from None
    except (SlackClientError, OSError) as exc:
        raise DeliveryError(explain_unreachable(client, exc)) from None
    return dict(response.data) if isinstance(response.data, dict) else {}


class ChannelPoster:
    """Posts the channel's messages in order, one per second per channel, each once.

    `before_send()` runs before every attempt (the ledger checks the claim is still ours);
    `on_sent(part, ts, thread_ts, channel)` records each message as soon as Slack accepts
    it. A parent's `ts` becomes the `thread_ts` of the replies that follow it.
    """

    def __init__(
        self,
        client: WebClient,
        run_key: str,
        *,
        per_second: float = 1.0,
        clock: Clock | None = None,
        before_send: Callable[[], None] = lambda: None,
        on_sent: Callable[[Part, str, str | None, str], None],
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        self.client = for_posting(client)
        self.run_key = run_key
        self.clock = clock or MonotonicClock()
        self.pacer = ChannelPacer(per_second, self.clock)
        self.before_send = before_send
        self.on_sent = on_sent
        self.max_attempts = max_attempts
        self.posted = 0
        self.limited = 0

    def post_all(self, parts: list[Part], parent_ts: str | None) -> None:
        """Post the unsettled channel parts of `parts`, the parent first."""
        for part in parts:
            if part.kind == "dm" or part.settled:
                continue
            thread_ts = None if part.kind == "parent" else parent_ts
            ts = self.post(part, thread_ts)
            if part.kind == "parent":
                parent_ts = ts

    def post(self, part: Part, thread_ts: str | None) -> str:
        """Post one message, waiting out 429s; returns its ts."""
        for _attempt in range(self.max_attempts):
            self.pacer.wait(part.channel)
            self.before_send()
            try:
                response = send_message(self.client, part, self.run_key, thread_ts)
            except RateLimited as limited:
                self.limited += 1
                log.info("Slack asked to wait %gs before %s", limited.retry_after, part.part)
                self.pacer.hold(part.channel, limited.retry_after)
                continue
            ts = str(response["ts"])
            self.on_sent(part, ts, thread_ts, str(response.get("channel") or part.channel))
            self.posted += 1
            return ts
        raise DeliveryError(explain_slack_error("ratelimited", part.channel, part.part))


# -- what Slack already has of a run (recovery after a crash) ------------------------------

Found = dict[str, tuple[str, str | None, str]]
"""part -> (ts, thread_ts, channel) of the messages Slack holds for one run."""


def _part_of(message: dict[str, Any], run_key: str) -> str | None:
    metadata = message.get("metadata") or {}
    if metadata.get("event_type") != EVENT_TYPE:
        return None
    payload = metadata.get("event_payload") or {}
    if payload.get("run_id") != run_key:
        return None
    part = payload.get("part")
    return str(part) if part else None


def scan_run_messages(client: WebClient, run_key: str, method: str, **kwargs: Any) -> Found:
    """The messages of run `run_key` that `method` (conversations.history or .replies,
    called with `kwargs`) lists, page by page, found by their metadata."""
    found: Found = {}
    cursor: str | None = None
    channel = str(kwargs["channel"])
    while True:
        call = getattr(client, method)
        response = call(include_all_metadata=True, limit=200, cursor=cursor, **kwargs)
        for message in response.get("messages") or []:
            part = _part_of(message, run_key)
            if part:
                found[part] = (str(message["ts"]), message.get("thread_ts"), channel)
        cursor = (response.get("response_metadata") or {}).get("next_cursor") or None
        if not cursor:
            return found


def scan_dm(client: WebClient, user: str, run_key: str, oldest: str) -> Found | None:
    """The messages of run `run_key` in the DM with `user` since `oldest`; None (logged)
    when Slack does not let the DM be read."""
    try:
        opened = client.conversations_open(users=user)
        channel = str(opened["channel"]["id"])
        return scan_run_messages(
            client, run_key, "conversations_history", channel=channel, oldest=oldest
        )
    except SlackApiError as exc:
        log.warning("could not read the DMs of %s to resume: %s", user, exc.response.get("error"))
        return None


def thread_links(client: WebClient, channel: str, parts: list[Part]) -> dict[str, str]:
    """Role slug -> link to its thread in a posted channel run; "" -> link to the parent."""
    links: dict[str, str] = {}
    parent = next((p.ts for p in parts if p.part == "parent"), None)
    for part in parts:
        if part.ts is None or part.kind == "dm":
            continue
        if part.part == "parent":
            key = ""
        elif part.part.endswith(":1"):
            key = part.part.split(":")[1]
        else:
            continue
        try:
            links[key] = str(
                client.chat_getPermalink(channel=channel, message_ts=part.ts)["permalink"]
            )
        except (SlackClientError, OSError):
            suffix = f"?thread_ts={parent}&cid={channel}" if key and parent else ""
            links[key] = f"https://slack.com/archives/{channel}/p{part.ts.replace('.', '')}{suffix}"
    return links
