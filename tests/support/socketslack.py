"""Slack's side of a Socket Mode connection, as a local websocket server.

`apps.connections.open` on the fake Web API hands out `SocketSlack.url`; the server says
hello, pushes the envelopes queued on `outgoing` as soon as they are queued, and records
every answer on `received` with the time each envelope went out and its ack came back. A
`str` or `bytes` on `outgoing` goes out as it is, as a text or a binary frame.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import Server, ServerConnection, serve

APP_TOKEN = "xapp-test"


class SocketSlack:
    """Sends `hello`, then queued envelopes; records what comes back and when."""

    def __init__(self) -> None:
        self.outgoing: queue.Queue[dict[str, Any] | str | bytes] = queue.Queue()
        self.received: queue.Queue[dict[str, Any]] = queue.Queue()
        self.sent_at: dict[str, float] = {}
        self.acked_at: dict[str, float] = {}
        self._lock = threading.Lock()
        self.server: Server = serve(self._handle, "127.0.0.1", 0)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        port = self.server.socket.getsockname()[1]
        return f"ws://127.0.0.1:{port}/link/?ticket=fake"

    def ack_seconds(self, envelope_id: str) -> float | None:
        """From the envelope leaving here to its ack arriving; None while unacknowledged."""
        with self._lock:
            sent, acked = self.sent_at.get(envelope_id), self.acked_at.get(envelope_id)
        return None if sent is None or acked is None else acked - sent

    def _handle(self, ws: ServerConnection) -> None:
        ws.send(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {}}))
        while True:
            while True:
                try:
                    envelope = self.outgoing.get_nowait()
                except queue.Empty:
                    break
                if not isinstance(envelope, dict):
                    ws.send(envelope)
                    continue
                with self._lock:
                    self.sent_at[str(envelope.get("envelope_id"))] = time.monotonic()
                ws.send(json.dumps(envelope))
            try:
                raw = ws.recv(timeout=0.01)
            except TimeoutError:
                continue
            except ConnectionClosed:
                return
            answer = json.loads(raw)
            with self._lock:
                self.acked_at[str(answer.get("envelope_id"))] = time.monotonic()
            self.received.put(answer)


@contextmanager
def socket_slack_running() -> Iterator[SocketSlack]:
    fake = SocketSlack()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.thread.join(5)


def slash_envelope(envelope_id: str, form: dict[str, str]) -> dict[str, Any]:
    """A slash command (its form fields, as `slash_command_body` encodes them) in an
    envelope."""
    return {
        "envelope_id": envelope_id,
        "type": "slash_commands",
        "payload": form,
        "accepts_response_payload": True,
    }


def event_envelope(envelope_id: str, callback: dict[str, Any]) -> dict[str, Any]:
    """An Events API callback (as `event_body` encodes it, decoded) in an envelope."""
    return {
        "envelope_id": envelope_id,
        "type": "events_api",
        "payload": callback,
        "accepts_response_payload": False,
        "retry_attempt": 0,
        "retry_reason": "",
    }
