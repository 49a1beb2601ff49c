"""The subscribers' DMs: several senders sharing one adaptive rate.

A pool of `concurrency` threads takes subscribers one at a time (as the caller hands them
over: `send_stream` reads them while the senders work) and sends that subscriber's messages
in order (one per second to the same DM, like any channel). Every
send waits for a slot from the shared `RateController`; a 429 pauses all senders until
its Retry-After and the same message is tried again. Each accepted message is reported
through `on_sent` at once, so the ledger records it exactly once; when one sender fails
(Slack refuses, the claim is lost), the others finish the message in flight, record it,
and stop: the run resumes later with only the messages not yet recorded.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from queue import Empty, Full, Queue

from slack_sdk import WebClient

from bot.delivery.pacing import ChannelPacer, Clock, MonotonicClock, RateController
from bot.delivery.posting import (
    MAX_ATTEMPTS,
    DeliveryError,
    RateLimited,
    Undeliverable,
    explain_slack_error,
    for_posting,
    send_message,
)
from bot.store.ledger import Part

log = logging.getLogger(__name__)


class DmFanout:
    """Sends DM parts concurrently under one `RateController`.

    `run_key` is the key each message's metadata names: one run's, or a function of the
    part (DMs of several readers, each its own claim). `before_send(part)` runs before
    every attempt (the claim is still ours);
    `on_sent(part, ts, channel)` records an accepted DM; `on_undeliverable(part, error)`
    settles a DM whose recipient cannot receive it.
    """

    def __init__(
        self,
        client: WebClient,
        run_key: str | Callable[[Part], str],
        controller: RateController,
        *,
        concurrency: int = 4,
        per_channel: float = 1.0,
        clock: Clock | None = None,
        before_send: Callable[[Part], None] = lambda _p: None,
        on_sent: Callable[[Part, str, str], None],
        on_undeliverable: Callable[[Part, str], None] = lambda _p, _e: None,
        max_attempts: int = MAX_ATTEMPTS,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.client = for_posting(client)
        self.run_key = run_key
        self.controller = controller
        self.concurrency = concurrency
        self.channel_pacer = ChannelPacer(per_channel, clock or MonotonicClock())
        self.before_send = before_send
        self.on_sent = on_sent
        self.on_undeliverable = on_undeliverable
        self.max_attempts = max_attempts
        self.sent = 0
        self.limited = 0
        self.undeliverable = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._errors: list[BaseException] = []

    def send_all(self, parts: list[Part]) -> None:
        """Send every unsettled DM part of `parts`; raises the first sender's error."""
        by_user: dict[str, list[Part]] = {}
        for part in parts:
            if part.kind == "dm" and not part.settled:
                by_user.setdefault(part.channel, []).append(part)
        if by_user:
            self.send_stream(by_user.values())

    def send_stream(
        self,
        groups: Iterable[Sequence[Part]],
        on_done: Callable[[Sequence[Part]], None] = lambda _group: None,
    ) -> None:
        """Send the groups `groups` yields, each one recipient's messages in order, its
        unsettled parts only; `on_done(group)` follows a group's last message.

        `groups` is read in the calling thread while the senders work, never more than a
        few groups ahead of them (what it does per group, such as claiming it, stays
        fresh). Raises the first error, of a sender or of `groups`."""
        work: Queue[Sequence[Part] | None] = Queue(maxsize=2 * self.concurrency)
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="prdigest-dm") as pool:
            for _ in range(self.concurrency):
                # Each sender logs with the caller's context (the digest run id).
                pool.submit(contextvars.copy_context().run, self._worker, work, on_done)
            try:
                for group in groups:
                    if self._stop.is_set() or not self._put(work, group):
                        break
            except BaseException as exc:  # handed to the caller below
                self._failed(exc)
            finally:
                for _ in range(self.concurrency):
                    self._put(work, None)
        if self._errors:
            raise self._errors[0]

    def _put(self, work: Queue[Sequence[Part] | None], item: Sequence[Part] | None) -> bool:
        """Queue `item` for the senders; False once they stopped (the queue may stay full)."""
        while not self._stop.is_set():
            try:
                work.put(item, timeout=0.1)
                return True
            except Full:
                continue
        return False

    def _failed(self, exc: BaseException) -> None:
        with self._lock:
            self._errors.append(exc)
        self._stop.set()

    def _worker(
        self,
        work: Queue[Sequence[Part] | None],
        on_done: Callable[[Sequence[Part]], None],
    ) -> None:
        try:
            while not self._stop.is_set():
                try:
                    group = work.get(timeout=0.1)
                except Empty:
                    continue
                if group is None:
                    return
                for part in group:
                    if self._stop.is_set():
                        return
                    if part.kind == "dm" and not part.settled:
                        self._send(part)
                if self._stop.is_set():
                    return  # its last message may not have gone out
                on_done(group)
        except BaseException as exc:  # handed to send_stream's caller
            self._failed(exc)

    def _send(self, part: Part) -> None:
        for _attempt in range(self.max_attempts):
            self.channel_pacer.wait(part.channel)
            ticket = self.controller.acquire()
            if self._stop.is_set():
                return
            self.before_send(part)
            key = self.run_key if isinstance(self.run_key, str) else self.run_key(part)
            try:
                response = send_message(self.client, part, key, None)
            except RateLimited as limited:
                self.controller.rate_limited(ticket, limited.retry_after)
                with self._lock:
                    self.limited += 1
                continue
            except Undeliverable as gone:
                log.warning("could not DM %s (%s); skipped", part.channel, gone.error)
                self.on_undeliverable(part, gone.error)
                with self._lock:
                    self.undeliverable += 1
                return
            self.controller.accepted(ticket)
            self.on_sent(part, str(response["ts"]), str(response.get("channel") or part.channel))
            with self._lock:
                self.sent += 1
            return
        raise DeliveryError(explain_slack_error("ratelimited", part.channel, part.part))
