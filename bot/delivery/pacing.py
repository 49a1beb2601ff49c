"""Pacing of Slack posts: a fixed gap per channel, and an adaptive rate for the DM fan-out.

Slack allows about one message per second per channel, and a workspace-wide budget for
`chat.postMessage` that it does not publish: a call over it is answered HTTP 429 with a
`Retry-After`. `ChannelPacer` keeps the per-channel gap. `RateController` finds the
workspace budget while the fan-out runs: it starts at a chosen rate, raises it while Slack
accepts (doubling per second until the first 429, then additively), and on a 429 cuts it
multiplicatively and holds every sender until `Retry-After` has passed.

Both take a `Clock`, so tests drive them with a chosen time instead of real sleeps.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from bot.config import Settings


class Clock(Protocol):
    """Monotonic seconds and a way to wait."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class MonotonicClock:
    """The real clock: `time.monotonic` and `time.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class ChannelPacer:
    """Spaces posts to the same channel at least `1 / per_second` apart (0: no gap)."""

    def __init__(self, per_second: float, clock: Clock | None = None) -> None:
        self.interval = 1.0 / per_second if per_second > 0 else 0.0
        self.clock = clock or MonotonicClock()
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def reserve(self, channel: str) -> float:
        """Book the next free moment for `channel` and return it (no waiting)."""
        with self._lock:
            now = self.clock.now()
            at = max(now, self._next.get(channel, now))
            self._next[channel] = at + self.interval
            return at

    def hold(self, channel: str, seconds: float) -> None:
        """Nothing to `channel` for `seconds` from now (Slack said Retry-After)."""
        with self._lock:
            until = self.clock.now() + seconds
            self._next[channel] = max(self._next.get(channel, until), until)

    def wait(self, channel: str) -> None:
        """Block until a post to `channel` is due."""
        if not self.interval and channel not in self._next:
            return
        self.clock.sleep(self.reserve(channel) - self.clock.now())


@dataclass(frozen=True)
class Ticket:
    """A send slot: when it was due, and which rate regime granted it."""

    at: float
    epoch: int


class RateController:
    """An adaptive send rate shared by several concurrent senders.

    * `acquire()` blocks until the caller may send: slots are `1 / rate` apart and none
      falls inside a pause.
    * `accepted(ticket)` after Slack accepted a message: the rate grows, by one message per
      second per accepted message (doubling each second) until the first 429 and while
      under the recovery threshold, by `increase` per second after that (additive
      increase), never above `maximum`.
    * `rate_limited(ticket, retry_after)` after a 429: every sender waits until
      `retry_after` seconds from now; the rate is cut to `decrease` times the sending rate,
      or times the rate Slack accepted over the last `window` when that is lower and the
      senders were busy for all of it. One cut per 429 burst: 429s for slots granted
      before the cut only extend the pause. The rate then climbs fast back to 0.95 of the
      level that met the 429, and slowly (additively) beyond it.

    `start` 0 means unpaced: no gap between sends, but 429s still pause everyone.
    """

    def __init__(
        self,
        start: float,
        maximum: float = 0.0,
        *,
        clock: Clock | None = None,
        minimum: float = 0.5,
        decrease: float = 0.7,
        increase: float = 0.05,
        window: float = 1.0,
    ) -> None:
        if start < 0 or maximum < 0 or minimum <= 0:
            raise ValueError("rates must be >= 0 (minimum > 0)")
        if not 0 < decrease < 1:
            raise ValueError("decrease must be between 0 and 1")
        self.clock = clock or MonotonicClock()
        self.maximum = maximum
        self.minimum = minimum
        self.decrease = decrease
        self.increase = increase
        self.window = window
        self.paced = start > 0
        self._rate = min(start, maximum) if maximum and start else start
        self._threshold = float("inf")  # below it the rate doubles per second
        self._next = 0.0
        self._busy_since: float | None = None  # first slot after the last pause
        self._paused_until = 0.0
        self._epoch = 0
        self._accepted_at: deque[float] = deque()
        self._lock = threading.Lock()
        self.limited = 0  # 429s met
        self.cuts = 0  # rate cuts made

    @property
    def rate(self) -> float:
        """Current sends per second (0 when unpaced)."""
        return self._rate

    @property
    def paused_until(self) -> float:
        return self._paused_until

    def reserve(self) -> Ticket:
        """Book the next send slot without waiting; the caller waits until `ticket.at`."""
        with self._lock:
            now = self.clock.now()
            at = max(now, self._next, self._paused_until)
            if self._busy_since is None:
                self._busy_since = at
            if self.paced:
                self._next = at + 1.0 / self._rate
            return Ticket(at=at, epoch=self._epoch)

    def acquire(self) -> Ticket:
        """Block until a send is due; a pause that begins meanwhile is waited out too."""
        while True:
            ticket = self.reserve()
            self.clock.sleep(ticket.at - self.clock.now())
            if self.clock.now() >= self._paused_until:
                return ticket

    def accepted(self, ticket: Ticket) -> None:
        """Slack accepted the message sent on `ticket`."""
        with self._lock:
            now = self.clock.now()
            self._accepted_at.append(now)
            while self._accepted_at and self._accepted_at[0] <= now - self.window:
                self._accepted_at.popleft()
            if not self.paced:
                return
            if self._rate < self._threshold:
                grown = self._rate + 1.0
                if self._threshold != float("inf"):
                    grown = min(grown, self._threshold)
            else:
                grown = self._rate + self.increase / self._rate
            self._rate = min(grown, self.maximum) if self.maximum else grown

    def rate_limited(self, ticket: Ticket, retry_after: float) -> None:
        """Slack answered 429 to the message sent on `ticket`: pause, and cut the rate once."""
        with self._lock:
            now = self.clock.now()
            self.limited += 1
            self._paused_until = max(self._paused_until, now + max(retry_after, 0.0))
            if ticket.epoch != self._epoch:
                return  # this burst already cut the rate
            self._epoch += 1
            self.cuts += 1
            if not self.paced:
                return
            while self._accepted_at and self._accepted_at[0] <= now - self.window:
                self._accepted_at.popleft()
            sending = self._rate
            ceiling = sending
            busy = self._busy_since is not None and now - self._busy_since >= self.window
            if busy and self._accepted_at:
                ceiling = min(sending, len(self._accepted_at) / self.window)
            self._busy_since = None
            self._threshold = max(self.minimum, ceiling * 0.95)
            self._rate = max(self.minimum, ceiling * self.decrease)
            self._next = self._paused_until


@dataclass(frozen=True)
class Pacing:
    """How fast messages go out.

    Channel posts: `channel_per_second` per channel (0: no gap). DMs: `dm_per_second` is
    the starting rate of the adaptive fan-out (0: unpaced, only 429s slow it down), never
    above `dm_max_per_second` (0: no ceiling), with `dm_concurrency` senders.
    """

    channel_per_second: float = 1.0
    dm_per_second: float = 10.0
    dm_max_per_second: float = 50.0
    dm_concurrency: int = 4

    @classmethod
    def from_settings(cls, settings: Settings) -> Pacing:
        return cls(
            channel_per_second=settings.channel_rate,
            dm_per_second=settings.dm_rate,
            dm_max_per_second=settings.dm_max_rate,
            dm_concurrency=settings.dm_concurrency,
        )
