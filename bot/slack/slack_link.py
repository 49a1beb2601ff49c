"""What `serve` knows about its dependencies, and how it waits for them to come back.

`SlackLink` asks Slack `auth.test` at start and then now and again. An outage or a refused
token is logged once, when it begins, and once when it ends; meanwhile it asks again with
back-off, `/healthz` answers 503, and the callbacks given to `on_recovery` run when Slack
answers again (the scheduler resumes an interrupted digest there). Listeners whose Web API
call got no answer report it here (`report`), which asks `auth.test` before calling it an
outage. A response_url that does not answer is Slack's reply endpoint, not the Web API: it
is logged where it happens (`bot.slack.app`) and changes nothing here.

`Backoff` is the one retry schedule: 1 s, doubling, at most 60 s.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.slack.client import describe_unreachable, is_unreachable, sdk_logger

log = logging.getLogger(__name__)

UNKNOWN = "unknown"
OK = "ok"
UNREACHABLE = "unreachable"
TOKEN_ERRORS = frozenset({"invalid_auth", "not_authed", "token_revoked", "account_inactive"})
PROBE_TIMEOUT_SECONDS = 5
RECHECK_SECONDS = 5.0  # a failed call asks auth.test again at most this often


@dataclass
class Backoff:
    """Delays between attempts: `first`, doubling, at most `cap` seconds; `reset()` after a
    success."""

    first: float = 1.0
    cap: float = 60.0
    _next: float = 0.0

    def delay(self) -> float:
        current = self._next or self.first
        self._next = min(self.cap, current * 2)
        return current

    def reset(self) -> None:
        self._next = 0.0


def token_rejected_line(error: str) -> str:
    return (
        f"Slack refused SLACK_BOT_TOKEN ({error}): set SLACK_BOT_TOKEN to the app's Bot User "
        "OAuth Token (xoxb-…, Settings → Install App) and restart"
    )


class SlackLink:
    """The state of the connection to Slack: "ok", "unreachable", a refused token's error
    code, or "unknown" before the first answer."""

    def __init__(
        self,
        client: WebClient,
        *,
        healthy_interval: float = 60.0,
        recheck_interval: float = RECHECK_SECONDS,
        backoff: Backoff | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # The probe never retries by itself: the back-off here is the retry.
        self._probe = WebClient(
            token=client.token,
            base_url=client.base_url,
            timeout=PROBE_TIMEOUT_SECONDS,
            logger=sdk_logger(),
            retry_handlers=[],
        )
        self._checking = threading.Lock()
        self.healthy_interval = healthy_interval
        self.recheck_interval = recheck_interval
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._status = UNKNOWN
        self._since = clock()
        self._checked_at: float | None = None
        self._retry_at = 0.0
        self._rechecking = False
        self._recovery: list[Callable[[], None]] = []
        self.identity: dict[str, Any] = {}

    @property
    def status(self) -> str:
        return self._status

    @property
    def team_id(self) -> str | None:
        """The workspace the bot token belongs to; None until `auth.test` answered."""
        team = self.identity.get("team_id")
        return team if isinstance(team, str) and team else None

    def on_recovery(self, callback: Callable[[], None]) -> None:
        """Run `callback` (in the watching thread) each time Slack answers after an outage."""
        self._recovery.append(callback)

    def current(self) -> str:
        """The status for a health check: asks Slack only before the first answer, or when a
        failure is due for another try and no watching thread asked in the meantime."""
        with self._lock:
            status, due = self._status, self._clock() >= self._retry_at
        if status == OK or (status != UNKNOWN and not due):
            return status
        return self.check(wait=False)

    def check(self, wait: bool = True) -> str:
        """Ask `auth.test` now and record (and log, on a change) the answer. With
        `wait=False`, a check already under way elsewhere is not repeated: the status
        known so far is returned."""
        if not self._checking.acquire(blocking=wait):
            return self._status
        try:
            try:
                answer = self._probe.auth_test()
            except SlackApiError as exc:
                return self._set(str(exc.response.get("error") or "error"))
            except Exception as exc:
                if not is_unreachable(exc):
                    raise
                return self._set(UNREACHABLE, exc)
            self.identity = dict(answer.data) if isinstance(answer.data, dict) else {}
            return self._set(OK)
        finally:
            self._checking.release()

    def report(self, exc: BaseException) -> None:
        """A Web API call elsewhere got no answer from Slack. One method that hangs is not
        an outage, so `auth.test` is asked at once (on a thread of its own, at most once
        every `recheck_interval` seconds): Slack counts as unreachable, logged once, only
        when that gets no answer either. Replies to a response_url are not the Web API and
        never come here."""
        if not is_unreachable(exc) or self._status not in (OK, UNKNOWN):
            return
        with self._lock:
            now = self._clock()
            recent = self._checked_at is not None and now - self._checked_at < self.recheck_interval
            if self._rechecking or (recent and self._status == OK):
                return
            self._rechecking = True
        threading.Thread(target=self._recheck, name="prdigest-slack-recheck", daemon=True).start()

    def _recheck(self) -> None:
        try:
            self.check()
        except Exception as exc:  # not a missing answer: nothing to say about the link
            log.warning("asking Slack auth.test after a failed call failed: %s", exc)
        finally:
            with self._lock:
                self._rechecking = False
            self._wake.set()

    def _set(self, status: str, exc: BaseException | None = None) -> str:
        recovered: list[Callable[[], None]] = []
        with self._lock:
            now = self._clock()
            before, self._status = self._status, status
            self._checked_at = now
            if status == OK:
                self.backoff.reset()
                self._retry_at = now + self.healthy_interval
            else:
                self._retry_at = now + self.backoff.delay()
            changed = before != status
            outage = now - self._since
            if changed:
                self._since = now
        if not changed:
            return status
        if status == OK:
            if before == UNKNOWN:
                log.info(
                    "Slack accepted the bot token (team %s, bot %s)",
                    self.identity.get("team", "?"),
                    self.identity.get("user", "?"),
                )
            else:
                log.warning("Slack answers again (after %.0f s)", outage)
                recovered = list(self._recovery)
        elif status == UNREACHABLE:
            assert exc is not None
            log.error(
                "%s; retrying with back-off, /healthz answers 503 until Slack answers",
                describe_unreachable(exc, self._probe.base_url),
            )
        elif status in TOKEN_ERRORS:
            log.error(token_rejected_line(status))
        else:
            log.warning("Slack auth.test answered %s; asking again with back-off", status)
        if recovered:
            threading.Thread(
                target=_run_all, args=(recovered,), name="prdigest-recovery", daemon=True
            ).start()
        return status

    def watch(self, stop: threading.Event) -> None:
        """Ask Slack now and then until `stop` is set: every `healthy_interval` while it
        answers, with back-off while it does not."""
        while not stop.is_set():
            self.check()
            with self._lock:
                due = self._retry_at
            while not stop.is_set() and self._clock() < due:
                if self._wake.wait(min(1.0, max(0.0, due - self._clock()))):
                    self._wake.clear()
                    break

    def start(self, stop: threading.Event) -> threading.Thread:
        thread = threading.Thread(
            target=self.watch, args=(stop,), name="prdigest-slack-link", daemon=True
        )
        thread.start()
        return thread

    def authorize(
        self, enterprise_id: str | None, team_id: str | None, user_id: str | None
    ) -> AuthorizeResult:
        """Bolt's authorization for a single workspace, from what `auth.test` answered: it
        never calls Slack itself, so a request is acknowledged at once even while Slack's
        Web API is unreachable."""
        identity = self.identity
        return AuthorizeResult(
            enterprise_id=enterprise_id or identity.get("enterprise_id"),
            team_id=team_id or identity.get("team_id"),
            bot_token=self._probe.token,
            bot_id=identity.get("bot_id"),
            bot_user_id=identity.get("user_id"),
            user_id=user_id,
        )


def _run_all(callbacks: list[Callable[[], None]]) -> None:
    for callback in callbacks:
        try:
            callback()
        except Exception:
            log.exception("recovery after the Slack outage failed")
