"""Helpers for the sending tests: a hand-set clock, ledger parts, the bot's Web API client."""

from __future__ import annotations

import threading
from pathlib import Path

from slack_sdk import WebClient

from bot.config import load_settings
from bot.slack.client import build_web_client
from bot.store.ledger import Part
from tests.support.fakeslack import FakeSlack
from tests.support.testenv import SLACK_TOKEN


class ManualClock:
    """Monotonic seconds that only move when slept on or advanced (thread-safe)."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._lock = threading.Lock()
        self.slept: list[float] = []

    def now(self) -> float:
        with self._lock:
            return self._now

    def sleep(self, seconds: float) -> None:
        with self._lock:
            if seconds > 0:
                self.slept.append(seconds)
                self._now += seconds

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds


def make_part(name: str, kind: str, channel: str, ts: str | None = None) -> Part:
    """A planned message as the ledger hands it out (its text already escaped)."""
    text = f"message {name} &lt;b&gt;"
    mrkdwn = {"type": "mrkdwn", "text": text}
    return Part(
        run_id=1,
        part=name,
        seq=0,
        kind=kind,
        channel=channel,
        payload={"text": text, "blocks": [{"type": "section", "text": mrkdwn}]},
        ts=ts,
        thread_ts=None,
        posted_channel=None,
        error=None,
    )


def bot_client(slack: FakeSlack, tmp_path: Path) -> WebClient:
    """The bot's own client for `slack` (it retries 429s unless the caller strips that)."""
    settings = load_settings(
        database_url=f"sqlite:///{tmp_path / 'unused.db'}", slack_api_url=slack.api_url
    )
    return build_web_client(settings, SLACK_TOKEN)
