"""The Slack Web API client, built from settings with retries for 429, 5xx and dropped links.

Every request is reported to `Metrics` by `CallMetrics`, a retry handler that never retries:
slack_sdk shows each attempt's answer (or error) to every retry handler, and Bolt copies the
handlers into the client it makes for each request, so listeners' calls are counted too.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import RetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

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
)


class CallMetrics(RetryHandler):
    """Counts every Web API request by method and outcome, and every 429; retries nothing."""

    def __init__(self, metrics: Metrics) -> None:
        super().__init__(max_retry_count=0)
        self.metrics = metrics

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
    return WebClient(token=token, base_url=base_url, timeout=30, retry_handlers=handlers)
