"""Publishing the weekly digest to the fake Slack at a fixed time, and reading back which
notes went where."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.config import load_settings
from bot.delivery.weekly import Pacing, RunResult, publish_weekly_digest
from bot.services import Services
from bot.slack.client import build_web_client
from bot.store.ledger import Ledger, Part
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import write_team_notes
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN

CHANNEL = DIGEST_CHANNEL
NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # Monday of 2026-W48
FAST = Pacing(channel_per_second=0, dm_per_second=0)


def add_seed_notes(services: Services) -> None:
    """The seed notes, as the team's own files, into the team's notes folder."""
    assert services.settings.digests_dir is not None
    write_team_notes(services.settings.digests_dir)


def publish(services: Services, now: datetime = NOW, **kwargs: Any) -> RunResult:
    client = build_web_client(services.settings)
    kwargs.setdefault("pacing", FAST)
    return publish_weekly_digest(services, client, now, **kwargs)


def channel_messages(slack: FakeSlack) -> list[dict[str, Any]]:
    return slack.messages_in(CHANNEL)


def note_ids(message: dict[str, Any]) -> list[int]:
    return [
        int(b["block_id"].removeprefix("note-"))
        for b in message.get("blocks", [])
        if str(b.get("block_id", "")).startswith("note-")
    ]


def thread_note_ids(slack: FakeSlack) -> list[int]:
    return [
        i for m in channel_messages(slack) if m.get("thread_ts") != m["ts"] for i in note_ids(m)
    ]


def sqlite_services(tmp_path: Path, slack: FakeSlack) -> Services:
    """A second installation on SQLite, posting to `slack`, with the sample notes waiting."""
    digests = tmp_path / "source-digests"
    digests.mkdir()
    write_team_notes(digests)
    settings = load_settings(
        database_url=f"sqlite:///{tmp_path / 'source.db'}",
        digests_dir=digests,
        channel="C0DIGEST",
        slack_api_url=slack.api_url,
        slack_bot_token=SecretStr(SLACK_TOKEN),
    )
    return Services.build(settings)


def reader_dm_parts(ledger: Ledger) -> list[Part]:
    """Every message of every reader's DM the ledger holds, DM by DM."""
    return [p for dm in ledger.reader_dms() for p in ledger.reader_dm_parts(dm.id)]
