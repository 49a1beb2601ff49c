"""Socket Mode end to end: a local websocket server plays Slack's side of the connection.

`apps.connections.open` on the fake Web API hands out the local `ws://` URL; the server
says hello, pushes a slash command envelope and expects the ack envelope back, and the
reply reaches the response_url on the fake.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import time as clock_time
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl

import pytest

from bot.domain import Verdict
from bot.services import Services, ingest_paths
from bot.slack.app import ReplyPool, build_app
from bot.slack.client import build_web_client
from bot.slack.server import SocketModeConnection
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import team_note_files
from tests.support.slacksign import event_body, slash_command_body
from tests.support.socketslack import (
    APP_TOKEN,
    SocketSlack,
    event_envelope,
    slash_envelope,
)

TOKEN = "xoxb-test"


@contextmanager
def socket_mode_app(
    services: Services, socket_slack: SocketSlack, **options: Any
) -> Iterator[SocketBot]:
    """The Bolt app connected over Socket Mode to `socket_slack`, with a fake Web API;
    `options` go to `build_app`."""
    with FakeSlack(token=TOKEN, app_token=APP_TOKEN) as slack:
        slack.socket_url = socket_slack.url
        settings = services.settings.model_copy(update={"slack_api_url": slack.api_url})
        client = build_web_client(settings, token=TOKEN)
        app = build_app(services, client, signing_secret=None, socket_mode=True, **options)
        connection = SocketModeConnection(app, APP_TOKEN, client)
        connection.connect()
        try:
            assert slack.accepted("apps.connections.open")
            yield SocketBot(slack, socket_slack)
            assert slack.sent_markup_problems() == []
        finally:
            connection.close()


class SocketBot:
    """Sends slash commands as Socket Mode envelopes; returns the response_url payload."""

    def __init__(self, slack: FakeSlack, socket_slack: SocketSlack) -> None:
        self.slack = slack
        self.socket_slack = socket_slack
        self.sent = 0

    def command(self, text: str) -> dict[str, Any]:
        self.sent += 1
        path = f"/response/socket-{self.sent}"
        url = f"http://127.0.0.1:{self.slack.port}{path}"
        form = dict(parse_qsl(slash_command_body(text, response_url=url)))
        envelope = f"env-{self.sent}"
        self.socket_slack.outgoing.put(slash_envelope(envelope, form))
        ack = self.socket_slack.received.get(timeout=10)
        assert ack["envelope_id"] == envelope
        return self.slack.wait_for(path, timeout=10)[-1].params


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the transport is under test
def test_slash_command_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    ingest_paths(services, team_note_files())
    with socket_mode_app(services, socket_slack) as bot:
        reply = bot.command("subscribe moe")
        assert "Subscribed to `moe-quant`" in reply["text"]
        assert services.store.subscriptions_of("T0001", "U123") == ["moe-quant"]


def test_a_command_over_socket_mode_answers_in_the_readers_language(
    services: Services, socket_slack: SocketSlack
) -> None:
    """users.info is asked on the reply pool, after the envelope was acknowledged: a reader
    whose Slack is in Chinese gets Chinese, and `lang en` turns it to English."""
    ingest_paths(services, team_note_files())
    with socket_mode_app(services, socket_slack) as bot:
        bot.slack.set_user("U123", tz="Asia/Shanghai", locale="zh-CN")
        assert bot.command("subscribe moe")["text"].startswith("已订阅 `moe-quant` (MoE 与量化)")
        assert bot.slack.count("users.info") == 1
        assert "Done: prdigest now writes to you in English." in bot.command("lang en")["text"]
        assert bot.command("list")["text"].startswith("You are subscribed to `moe-quant`")


def test_budget_and_dm_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    """A reader's budget and DM time set over Socket Mode are stored and shown in their own
    time zone; a bad value changes nothing."""
    ingest_paths(services, team_note_files())
    readers = services.store.readers
    with socket_mode_app(services, socket_slack) as bot:
        bot.slack.set_user("U123", tz="Europe/Berlin", locale="en-US")
        assert "now shows" in bot.command("budget 3")["text"]
        assert "is not a budget" in bot.command("budget 99")["text"]
        assert readers.settings("T0001", "U123").budget == 3
        answer = bot.command("dm tue 07:30")["text"]
        assert "Tuesdays at 07:30" in answer and "Europe/Berlin" in answer
        assert "is not a day and time" in bot.command("dm someday")["text"]
        assert "Weekly DMs stopped" in bot.command("dm off")["text"]
    own = readers.settings("T0001", "U123")
    assert (own.budget, own.dm_weekday, own.dm_time, own.dm_off) == (3, 1, clock_time(7, 30), True)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_reader_commands_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    ingest_paths(services, team_note_files())
    readers = services.store.readers
    with socket_mode_app(services, socket_slack) as bot:
        assert "deep reads only" in bot.command("subscribe moe deep")["text"]
        assert "Watching “marlin”" in bot.command("watch marlin")["text"]
        assert "Paused until" in bot.command("pause 3d")["text"]
        listed = bot.command("list")["text"]
        assert "deep reads only" in listed and "“marlin”" in listed and "Paused" in listed
        week = bot.command("week moe")
        assert "Not posted yet" in json.dumps(week, ensure_ascii=False)
        assert "Welcome back" in bot.command("resume")["text"]
        assert "verdict filter" in bot.command("subscribe moe deeep")["text"]
    assert [(s.role, s.level) for s in readers.role_subscriptions("T0001", "U123")] == [
        ("moe-quant", Verdict.DEEP)
    ]
    assert readers.watches_of("T0001", "U123") == ["marlin"]
    pause = readers.pause_of("T0001", "U123")
    assert pause is not None and pause.until - pause.started_at < timedelta(minutes=1)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_envelopes_are_acked_while_the_web_api_and_a_reply_hang(
    services: Services, socket_slack: SocketSlack
) -> None:
    """One reply thread, held by a views.publish that hangs and then by a response_url that
    hangs: every envelope is still acknowledged at once, and the answers follow."""
    pool = ReplyPool(workers=1, queue=8)
    with socket_mode_app(services, socket_slack, pool=pool, reply_timeout=1) as bot:
        slack = bot.slack
        slack.stall("views.publish", 30)
        slack.stall("/response/slow", 30)
        base = f"http://127.0.0.1:{slack.port}"
        home = {"type": "app_home_opened", "user": "U0HOME", "channel": "D1", "tab": "home"}
        socket_slack.outgoing.put(event_envelope("home", json.loads(event_body(home))))
        slack.wait_for("views.publish", timeout=5)
        slow = slash_command_body("help", response_url=f"{base}/response/slow")
        socket_slack.outgoing.put(slash_envelope("slow", dict(parse_qsl(slow))))
        quick = slash_command_body("help", user_id="U456", response_url=f"{base}/response/quick")
        socket_slack.outgoing.put(slash_envelope("quick", dict(parse_qsl(quick))))
        acks = [socket_slack.received.get(timeout=5)["envelope_id"] for _ in range(3)]
        assert sorted(acks) == ["home", "quick", "slow"]
        for envelope in acks:
            seconds = socket_slack.ack_seconds(envelope)
            assert seconds is not None and seconds < 1, (envelope, seconds)
        assert not slack.calls_for("/response/quick"), "acked before the reply thread was free"
        reply = slack.wait_for("/response/quick", timeout=10)[-1].params
        assert "/prdigest" in reply["text"]
        # The slow reply went out (and gave up) before the quick one; on a busy machine the
        # fake's thread may record it after the quick one, so wait for it, then count.
        slack.wait_stalled("/response/slow", timeout=5)
        time.sleep(0.5)  # time enough for a second try, which must not come
        assert len(slack.stalled("/response/slow")) == 1
        assert len(slack.stalled("views.publish")) == 1
    pool.shutdown()
