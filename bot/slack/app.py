"""The Bolt app: built from services and a WebClient, with every listener registered.

Nothing here runs at import time; `prdigest serve` and the tests call `build_app`. Bolt is
used through its documented API only: the app's options, middleware, lazy listeners, the
`args` a listener may ask for, and the `logger` it logs through.

Acknowledge first: each listener acknowledges in the thread that received the request (the
HTTP server's, or Socket Mode's), and everything slow (the store, replies to the
response_url, Web API calls such as views.publish) runs afterwards on the `ReplyPool`, as
Bolt's lazy listeners (`bot.slack.listeners.acking`). A reply that hangs therefore never delays
anyone's acknowledgement; it holds one pool thread for at most `REPLY_TIMEOUT_SECONDS`.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from http.client import HTTPException
from typing import Any, ParamSpec, TypeVar

import sqlalchemy as sa
from slack_bolt import App, BoltContext, Respond
from slack_bolt.authorization import AuthorizeResult
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry import ConnectionErrorRetryHandler
from slack_sdk.models.attachments import Attachment
from slack_sdk.models.blocks import Block
from slack_sdk.webhook import WebhookClient, WebhookResponse

from bot.delivery.languages import cached_texts, channel_texts
from bot.i18n.texts import Texts
from bot.render.replies import Message, failure_reply, store_unavailable_reply
from bot.services import Services
from bot.slack.client import describe_reply_failure, is_unreachable, sdk_logger, unreachable_reason
from bot.slack.listeners import actions, commands, corrections, events
from bot.slack.listeners.acking import AckFirst
from bot.slack.listeners.payloads import PayloadCheck
from bot.slack.slack_link import OK, SlackLink
from bot.store import describe_unavailable, is_unavailable

log = logging.getLogger(__name__)

REPLY_WORKERS = 16  # threads that answer after the acknowledgement
REPLY_QUEUE = 256  # jobs that may wait for one of them; more are dropped, with a warning
REPLY_TIMEOUT_SECONDS = 5  # one reply to a response_url, one Web API call for a request
BOLT_LOGGER = "slack_bolt"  # every logger Bolt makes for the app takes after this one

_P = ParamSpec("_P")
_T = TypeVar("_T")


class ReplyPool(Executor):
    """Threads for the work that follows an acknowledgement: replies, posts, publishes.

    Bounded twice: `workers` threads, and at most `queue` jobs waiting for them. A job that
    finds both full is dropped at once with a warning (once per busy spell, then a count
    when there is room again) instead of waiting: whoever hands work over, the threads
    that acknowledge above all, never blocks here.
    """

    def __init__(self, workers: int = REPLY_WORKERS, queue: int = REPLY_QUEUE) -> None:
        if workers < 1 or queue < 0:
            raise ValueError("a reply pool needs a thread and a queue of 0 or more")
        self.workers = workers
        self.queue = queue
        self._threads = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="prdigest-reply")
        self._room = threading.BoundedSemaphore(workers + queue)
        self._lock = threading.Lock()
        self._dropped = 0  # in the current busy spell
        self.dropped_total = 0

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Future[_T]:
        if not self._room.acquire(blocking=False):
            self._drop(fn)
            dropped: Future[_T] = Future()
            dropped.cancel()
            return dropped
        self._room_again()
        try:
            future = self._threads.submit(fn, *args, **kwargs)
        except BaseException:
            self._room.release()
            raise
        future.add_done_callback(lambda _: self._room.release())
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._threads.shutdown(wait, cancel_futures=cancel_futures)

    def _drop(self, fn: Callable[..., Any]) -> None:
        with self._lock:
            self._dropped += 1
            self.dropped_total += 1
            first = self._dropped == 1
        if first:
            log.warning(
                "the reply pool is full (%d running, %d waiting): dropping work that follows "
                "an acknowledgement (%s) until there is room; Slack answers slowly or "
                "requests come faster than they are answered",
                self.workers,
                self.queue,
                getattr(fn, "__name__", "a job"),
            )

    def _room_again(self) -> None:
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        if dropped:
            log.warning(
                "the reply pool has room again; %d requests were acknowledged and not answered",
                dropped,
            )


class ReplyNotDelivered(Exception):
    """A response_url did not take a reply: Slack's reply endpoint, not the Web API."""


class TimedRespond(Respond):
    """Bolt's `respond()` with a short timeout and no retries. A reply that fails raises
    `ReplyNotDelivered` with one line to log; nobody tries it again."""

    def __init__(self, *, response_url: str | None, timeout: int, **kwargs: Any) -> None:
        super().__init__(response_url=response_url, **kwargs)
        self.timeout = timeout

    def __call__(
        self,
        text: str | dict[str, Any] = "",
        blocks: Sequence[dict[str, Any] | Block] | None = None,
        attachments: Sequence[dict[str, Any] | Attachment] | None = None,
        response_type: str | None = None,
        replace_original: bool | None = None,
        delete_original: bool | None = None,
        unfurl_links: bool | None = None,
        unfurl_media: bool | None = None,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> WebhookResponse:
        if self.response_url is None:
            raise ValueError("respond is unsupported here as there is no response_url")
        if isinstance(text, dict):
            message = dict(text)
        else:
            message = {
                "text": text,
                "blocks": _as_dicts(blocks),
                "attachments": _as_dicts(attachments),
                "response_type": response_type,
                "replace_original": replace_original,
                "delete_original": delete_original,
                "unfurl_links": unfurl_links,
                "unfurl_media": unfurl_media,
                "thread_ts": thread_ts,
                "metadata": metadata,
            }
        client = WebhookClient(
            url=self.response_url,
            timeout=self.timeout,
            proxy=self.proxy,
            ssl=self.ssl,
            logger=sdk_logger(),
            retry_handlers=[],
        )
        try:
            answer = client.send_dict({k: v for k, v in message.items() if v is not None})
        except (OSError, HTTPException, SlackClientError) as exc:
            cause = unreachable_reason(exc)
            if cause == "timed out":
                cause = f"timed out after {self.timeout} s"
            raise ReplyNotDelivered(describe_reply_failure(cause, self.response_url)) from None
        if answer.status_code != 200:
            cause = f"HTTP {answer.status_code} {answer.body[:100]}".strip()
            raise ReplyNotDelivered(describe_reply_failure(cause, self.response_url))
        return answer


def _as_dicts(items: Sequence[dict[str, Any] | Block | Attachment] | None) -> Any:
    """Blocks or attachments as the JSON a response_url takes."""
    if items is None:
        return None
    return [item if isinstance(item, dict) else item.to_dict() for item in items]


class _ClientTokenNotice(logging.Filter):
    """Bolt reads SLACK_BOT_TOKEN itself when it is given no `token`, and then says at each
    start that `client`'s token is used instead. `client` carries that same token (from the
    settings, which read the same variable): there is nothing to tell an operator."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "`token` will be unused" not in record.getMessage()


def bolt_logger() -> logging.Logger:
    """The logger the app is built with: Bolt gives every logger it makes for the app
    (per class, per listener, Socket Mode's client) this one's level and filters. Its level
    comes from the log set-up (`bot.ops.logs`), which holds Slack's libraries to WARNING."""
    logger = logging.getLogger(BOLT_LOGGER)
    if not any(isinstance(f, _ClientTokenNotice) for f in logger.filters):
        logger.addFilter(_ClientTokenNotice())
    return logger


def build_app(
    services: Services,
    client: WebClient,
    *,
    signing_secret: str | None,
    socket_mode: bool,
    link: SlackLink | None = None,
    pool: ReplyPool | None = None,
    reply_timeout: int = REPLY_TIMEOUT_SECONDS,
) -> App:
    """A Bolt app on `client`; HTTP mode verifies every request with `signing_secret`.

    Requests are authorized from what `link` learnt from `auth.test` (serve's watching
    thread asks it), never by a Web API call in the request's path, and each listener
    only acknowledges there: a slash command is acknowledged at once even while Slack's
    Web API or a response_url hangs. The work runs on `pool`; each reply and each Web API
    call for a request gives up after `reply_timeout` seconds.
    """
    if not socket_mode and not signing_secret:
        raise ValueError("HTTP mode needs a signing secret (SLACK_SIGNING_SECRET)")
    link = link or SlackLink(client)
    pool = pool or ReplyPool()
    # Bolt gives every request a client made like this one, with the authorized token: a
    # short timeout, and no second attempt after a call that got no answer.
    template = copy.copy(client)
    template.token = None
    template.timeout = reply_timeout
    template.retry_handlers = [
        h for h in client.retry_handlers if not isinstance(h, ConnectionErrorRetryHandler)
    ]

    def authorize(
        enterprise_id: str | None, team_id: str | None, user_id: str | None
    ) -> AuthorizeResult:
        # A plain function: Bolt passes arguments by parameter name.
        return link.authorize(enterprise_id, team_id, user_id)

    app = App(
        name="prdigest",
        logger=bolt_logger(),
        client=template,
        signing_secret=signing_secret or "",
        authorize=authorize,
        before_authorize=PayloadCheck(lambda: link.team_id),
        # Listeners acknowledge in the request's thread; their lazy work goes to `pool`.
        process_before_response=True,
        listener_executor=pool,
    )

    def short_replies(context: BoltContext, next: Callable[[], None]) -> None:
        if context.response_url:
            context["respond"] = TimedRespond(
                response_url=context.response_url, timeout=reply_timeout
            )
        next()

    app.use(short_replies)
    answer_failure = _failure_handler(services, link, pool)
    app.error(answer_failure)
    listeners = AckFirst(app, answer_failure)
    commands.register(listeners, services)
    actions.register(listeners, services)
    corrections.register(listeners, services)
    events.register(listeners, services)
    return app


def _failure_handler(services: Services, link: SlackLink, pool: ReplyPool) -> Callable[..., None]:
    def answer_failure(
        error: Exception, body: dict[str, Any], respond: Respond | None, client: WebClient
    ) -> None:
        """The one error handler: one line in the log, a brief answer to the user, never a
        traceback and never a second try at a reply that failed.

        A response_url that did not take the reply is logged and left alone: it says
        nothing about the Web API. A Web API call that got no answer goes to the Slack
        link, which asks auth.test before it calls Slack unreachable. The answer itself
        is sent on the pool, so this returns at once wherever it runs.
        """
        if isinstance(error, ReplyNotDelivered):
            log.warning("%s", error)
            return
        if is_unavailable(error):
            log.warning(
                "a request found the store unavailable: %s",
                describe_unavailable(error, services.settings.database_url),
            )
            reply: Callable[[Texts], Message] = store_unavailable_reply
        elif is_unreachable(error):
            # Nobody to tell: the user's answer would take the same way.
            level = logging.WARNING if link.status == OK else logging.DEBUG
            log.log(
                level,
                "a Slack Web API call for a request got no answer (%s); the user got no "
                "reply; asking auth.test whether Slack is reachable",
                unreachable_reason(error),
            )
            link.report(error)
            return
        elif isinstance(error, SlackApiError):
            method = str(error.response.api_url).rsplit("/", 1)[-1]
            log.warning("Slack answered %s to %s", error.response.get("error"), method)
            reply = failure_reply
        else:
            log.error("listener failed: %s", error, exc_info=error)
            reply = failure_reply
        pool.submit(tell, reply, reply is failure_reply, body, respond, client)

    def language(body: dict[str, Any], ask_store: bool) -> Texts:
        """The user's language as the store knows it; PRDIGEST_LANGUAGE when the store is
        what failed, or cannot say."""
        _channel, user = _channel_and_user(body)
        team = body.get("team_id") or (body.get("team") or {}).get("id")
        if ask_store and isinstance(team, str) and team and user:
            try:
                return cached_texts(services, team, user)
            except sa.exc.SQLAlchemyError as exc:
                log.debug("no language for the failure reply: %s", exc)
        return channel_texts(services.settings)

    def tell(
        reply_in: Callable[[Texts], Message],
        ask_store: bool,
        body: dict[str, Any],
        respond: Respond | None,
        client: WebClient,
    ) -> None:
        reply = reply_in(language(body, ask_store))
        try:
            if respond is not None and respond.response_url:
                respond(response_type="ephemeral", replace_original=False, **reply)
                return
            channel, user = _channel_and_user(body)
            if channel and user:
                client.chat_postEphemeral(channel=channel, user=user, **reply)
        except ReplyNotDelivered as exc:
            log.warning("%s", exc)
        except (SlackClientError, OSError, HTTPException) as exc:
            if is_unreachable(exc):
                link.report(exc)
            else:
                log.warning("could not tell the user about the failure: %s", exc)

    return answer_failure


def _channel_and_user(body: dict[str, Any]) -> tuple[str | None, str | None]:
    """Where to tell the user; None for anything that is not plain text where Slack puts
    it (the error handler also sees requests that failed before being checked)."""

    def text(value: Any) -> str | None:
        return value if isinstance(value, str) and value else None

    def inner_id(value: Any) -> str | None:
        return text(value.get("id")) if isinstance(value, dict) else None

    channel = text(body.get("channel_id")) or inner_id(body.get("channel"))
    user = text(body.get("user_id")) or inner_id(body.get("user"))
    return channel, user
