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
from typing import Any
from urllib.parse import parse_qsl

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

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


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the transport is under test
def test_slash_command_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    ingest_paths(services, seed_files())
    with FakeSlack(token=TOKEN, app_token=APP_TOKEN) as slack:
        slack.socket_url = socket_slack.url
        settings = services.settings.model_copy(update={"slack_api_url": slack.api_url})
        client = build_web_client(settings, token=TOKEN)
        app = build_app(services, client, signing_secret=None, socket_mode=True)
        connection = SocketModeConnection(app, APP_TOKEN, client)
        connection.connect()
        try:
            assert slack.accepted("apps.connections.open")
            response_url = f"http://127.0.0.1:{slack.port}/response/socket-1"
            form = dict(parse_qsl(slash_command_body("subscribe moe", response_url=response_url)))
            socket_slack.outgoing.put(
                {
                    "envelope_id": "env-1",
                    "type": "slash_commands",
                    "payload": form,
                    "accepts_response_payload": True,
                }
            )
            ack = socket_slack.received.get(timeout=10)
            assert ack["envelope_id"] == "env-1"
            reply = slack.wait_for("/response/socket-1", timeout=10)[-1].params
            assert "Subscribed to `moe-quant`" in reply["text"]
            assert services.store.subscriptions_of("T0001", "U123") == ["moe-quant"]
            assert slack.sent_markup_problems() == []
        finally:
            connection.close()
