"""The Slack Web API client, built from settings with retries for 429, 5xx and dropped links."""

from __future__ import annotations

from slack_sdk import WebClient
from slack_sdk.http_retry.builtin_handlers import (
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)

from bot.config import Settings


def build_web_client(settings: Settings, token: str | None = None) -> WebClient:
    """A WebClient on `PRDIGEST_SLACK_API_URL` that honours Retry-After on 429."""
    if token is None and settings.slack_bot_token is not None:
        token = settings.slack_bot_token.get_secret_value()
    base_url = (
        settings.slack_api_url
        if settings.slack_api_url.endswith("/")
        else settings.slack_api_url + "/"
    )
    return WebClient(
        token=token,
        base_url=base_url,
        timeout=30,
        retry_handlers=[
            RateLimitErrorRetryHandler(max_retry_count=5),
            ServerErrorRetryHandler(max_retry_count=3),
            ConnectionErrorRetryHandler(max_retry_count=3),
        ],
    )
