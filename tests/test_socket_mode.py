"""Socket Mode end to end: a local websocket server plays Slack's side of the connection.

`apps.connections.open` on the fake Web API hands out the local `ws://` URL; the server
says hello, pushes a slash command envelope and expects the ack envelope back, and the
reply reaches the response_url on the fake.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

from bot.domain import Verdict
from bot.server import SocketModeConnection
from bot.services import Services, ingest_paths
from bot.slack_app import build_app
from bot.slack_client import build_web_client
from tests.fakeslack import FakeSlack
from tests.fixtures_util import seed_files
from tests.slacksign import slash_command_body

TOKEN = "xoxb-test"
APP_TOKEN = "xapp-test"


class SocketSlack:
    """Slack's Socket Mode side: sends `hello`, then queued envelopes; records what comes back."""

    def __init__(self) -> None:
        self.outgoing: queue.Queue[dict[str, Any]] = queue.Queue()
        self.received: queue.Queue[dict[str, Any]] = queue.Queue()
        self.server: Server = serve(self._handle, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        port = self.server.socket.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link/?ticket=fake"

    def _handle(self, ws: ServerConnection) -> None:
        ws.send(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {}}))
        while True:
            try:
                envelope = self.outgoing.get(timeout=0.05)
            except queue.Empty:
                envelope = None
            if envelope is not None:
                ws.send(json.dumps(envelope))
            try:
                raw = ws.recv(timeout=0.05)
            except TimeoutError:
                continue
            except ConnectionClosed:
                return
            self.received.put(json.loads(raw))


@pytest.fixture
def socket_slack() -> Iterator[SocketSlack]:
    fake = SocketSlack()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.thread.join(5)


@contextmanager
def socket_mode_app(services: Services, socket_slack: SocketSlack) -> Iterator[SocketBot]:
    """The Bolt app connected over Socket Mode to `socket_slack`, with a fake Web API."""
    with FakeSlack(token=TOKEN, app_token=APP_TOKEN) as slack:
        slack.socket_url = socket_slack.url
        settings = services.settings.model_copy(update={"slack_api_url": slack.api_url})
        client = build_web_client(settings, token=TOKEN)
        app = build_app(services, client, signing_secret=None, socket_mode=True)
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
        self.socket_slack.outgoing.put(
            {
                "envelope_id": envelope,
                "type": "slash_commands",
                "payload": form,
                "accepts_response_payload": True,
            }
        )
        ack = self.socket_slack.received.get(timeout=10)
        assert ack["envelope_id"] == envelope
        return self.slack.wait_for(path, timeout=10)[-1].params


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the transport is under test
def test_slash_command_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    ingest_paths(services, seed_files())
    with socket_mode_app(services, socket_slack) as bot:
        reply = bot.command("subscribe moe")
        assert "Subscribed to `moe-quant`" in reply["text"]
        assert services.store.subscriptions_of("T0001", "U123") == ["moe-quant"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_reader_commands_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    ingest_paths(services, seed_files())
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
