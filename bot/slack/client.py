"""The Slack Web API client, built from settings with retries for 429, 5xx and dropped links
(the digest's posts go without them: `bot.delivery.posting.for_posting`).

Every request is reported to `Metrics` by `CallMetrics`, a retry handler that never retries:
slack_sdk shows each attempt's answer (or error) to every retry handler, and Bolt copies the
handlers into the client it makes for each request, so listeners' calls are counted too.
"""

from __future__ import annotations

import logging
import socket
from http.client import HTTPException
from urllib.error import URLError
from urllib.parse import urlsplit

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry import (
    ConnectionErrorRetryHandler,
    HttpRequest,
    HttpResponse,
    RateLimitErrorRetryHandler,
    RetryHandler,
    RetryState,
)
from slack_sdk.http_retry.builtin_handlers import ServerErrorRetryHandler

from bot.config import Settings
from bot.metrics import Metrics

# The bot token scopes the code uses: deploy/slack-app-manifest.yaml asks for exactly these
# (a test checks) and `prdigest doctor` checks the token has them.
BOT_SCOPES = (
    "commands",  # /prdigest
    "chat:write",  # digest posts, thread replies, ephemeral answers, DMs
    "im:write",  # conversations.open for the subscribers' DMs
    "channels:history",  # conversations.history: resume an interrupted digest
    "groups:history",  # the same in a private digest channel
    "im:history",  # the same in the subscribers' DMs
    "users:read",  # users.info: each reader's time zone and locale
)

API_URL_SETTING = "PRDIGEST_SLACK_API_URL"
# slack_sdk's own: the log set-up (`bot.ops.logs`) holds it to WARNING, since at DEBUG the
# SDK writes what it sends and receives (message text, response_urls, Socket Mode URLs).
SDK_LOGGER = "slack_sdk"


_ATTEMPT_MESSAGES = ("Failed to send", "A retry handler found", "Going to retry")


class _AttemptsAtDebug(logging.Filter):
    """The SDK logs every failed attempt (at ERROR) and every retry (at INFO); whoever made
    the call reports the final failure once, so these are demoted to DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.DEBUG and record.getMessage().startswith(_ATTEMPT_MESSAGES):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def sdk_logger() -> logging.Logger:
    """The logger to give every WebClient: one line per call, not per attempt."""
    logger = logging.getLogger(SDK_LOGGER)
    if not any(isinstance(f, _AttemptsAtDebug) for f in logger.filters):
        logger.addFilter(_AttemptsAtDebug())
    return logger


class CallMetrics(RetryHandler):
    """Counts every Web API request by method and outcome, and every 429; retries nothing."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(max_retry_count=0)
        self.metrics = metrics

    def __deepcopy__(self, memo: dict[int, object]) -> CallMetrics:
        """Bolt deep-copies each request, client included, for its lazy listeners: the
        copy counts into the same metrics."""
        return self

    def can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        method = urlsplit(request.url).path.rsplit("/", 1)[-1] or "unknown"
        if response is None:
            outcome = "unreachable"
        elif response.status_code == 429:
            outcome = "ratelimited"
            self.metrics.rate_limited(method)
        elif response.status_code != 200:
            outcome = f"http_{response.status_code}"
        elif response.body and response.body.get("ok"):
            outcome = "ok"
        else:
            outcome = str((response.body or {}).get("error") or "unknown_error")
        self.metrics.slack_call(method, outcome)
        return False


def build_web_client(
    settings: Settings, token: str | None = None, metrics: Metrics | None = None
) -> WebClient:
    """A WebClient on `PRDIGEST_SLACK_API_URL` that honours Retry-After on 429."""
    if token is None and settings.slack_bot_token is not None:
        token = settings.slack_bot_token.get_secret_value()
    base_url = (
        settings.slack_api_url
        if settings.slack_api_url.endswith("/")
        else settings.slack_api_url + "/"
    )
    handlers: list[RetryHandler] = [] if metrics is None else [CallMetrics(metrics)]
    handlers += [
        RateLimitErrorRetryHandler(max_retry_count=5),
        ServerErrorRetryHandler(max_retry_count=3),
        ConnectionErrorRetryHandler(max_retry_count=3),
    ]
    return WebClient(
        token=token,
        base_url=base_url,
        timeout=30,
        logger=sdk_logger(),
        retry_handlers=handlers,
    )


def is_unreachable(exc: BaseException) -> bool:
    """Whether a Web API call failed because Slack could not be reached (no answer at all:
    connection refused, DNS failure, timeout, connection reset) rather than a Slack error."""
    if isinstance(exc, SlackApiError):
        return False
    return isinstance(exc, OSError | HTTPException | SlackClientError)


def unreachable_reason(exc: BaseException) -> str:
    """A short cause: "connection refused", "DNS lookup failed", "timed out", ..."""
    reason: object = exc.reason if isinstance(exc, URLError) else exc
    if isinstance(reason, ConnectionRefusedError):
        return "connection refused"
    if isinstance(reason, socket.gaierror):
        return "DNS lookup failed"
    if isinstance(reason, TimeoutError):
        return "timed out"
    if isinstance(reason, ConnectionResetError):
        return "connection reset"
    text = str(reason).strip() or type(reason).__name__
    return text.splitlines()[0]


def describe_unreachable(exc: BaseException, base_url: str) -> str:
    """One line naming the cause and the setting to check."""
    host = urlsplit(base_url).netloc or base_url
    return (
        f"Slack is unreachable at {host} ({unreachable_reason(exc)}): check "
        f"{API_URL_SETTING} ({base_url}) and the network"
    )


def describe_reply_failure(cause: str, response_url: str) -> str:
    """One line for a reply that a response_url did not take. Only the host is named (the
    URL itself lets anyone answer in the user's name); the Web API is a different way in,
    so its health is not in question."""
    host = urlsplit(response_url).netloc or "the response_url"
    return (
        f"a reply to Slack's response_url at {host} failed ({cause}); the user got no answer. "
        "This is not the Web API: /healthz and the Slack link are unaffected"
    )
