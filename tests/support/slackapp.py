"""The app served over HTTP on an ephemeral port, wired as `prdigest serve` wires it in HTTP
mode, talking to a FakeSlack; and the checks every reply a user reads must pass."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from bot.ops.prometheus import PrometheusMetrics, measure_store
from bot.services import Services, ingest_paths
from bot.slack.app import build_app
from bot.slack.client import build_web_client
from bot.slack.server import HealthCheck, RunningServer, make_wsgi_app, serve_in_thread
from tests.support.fakeslack import FakeSlack, validate_blocks
from tests.support.notefiles import team_note_files
from tests.support.process import local_request
from tests.support.slacksign import block_actions_body, signed_headers, slash_command_body

TOKEN = "xoxb-test"
SECRET = "test-signing-secret"
TEAM = "T0001"
USER = "U123"
_response_ids = itertools.count(1)


@dataclass
class Harness:
    """The app served over HTTP on an ephemeral port, talking to a FakeSlack."""

    slack: FakeSlack
    services: Services
    server: RunningServer
    secret: str = SECRET

    def post(
        self,
        body: str,
        *,
        headers: dict[str, str] | None = None,
        path: str = "/slack/events",
    ) -> tuple[int, bytes]:
        sent = headers if headers is not None else signed_headers(self.secret, body)
        return self.request("POST", path, body.encode(), sent)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes]:
        return local_request(self.server.port, method, path, body, headers)

    def response_url(self) -> str:
        return f"http://127.0.0.1:{self.slack.port}/response/{next(_response_ids)}"

    def command(self, text: str, user: str = USER, **extra: Any) -> tuple[int, dict[str, Any]]:
        """Run `/prdigest text`; returns the ack status and the payload sent to response_url."""
        url = self.response_url()
        status, _ = self.post(slash_command_body(text, user_id=user, response_url=url, **extra))
        return status, self.reply(url)

    def reply(self, url: str, timeout: float = 10.0) -> dict[str, Any]:
        path = url.split(str(self.slack.port), 1)[1]
        calls = self.slack.wait_for(path, timeout=timeout)
        return calls[-1].params

    def click(self, action_id: str, value: str, **extra: Any) -> int:
        status, _ = self.post(block_actions_body(action_id, value, **extra))
        return status


def start_harness(
    services: Services,
    slack: FakeSlack,
    *,
    ingest: bool = True,
    metrics: PrometheusMetrics | None = None,
) -> Harness:
    """The app as `prdigest serve` wires it in HTTP mode (with `/metrics` given metrics)."""
    if ingest:
        ingest_paths(services, team_note_files())
    settings = services.settings.model_copy(update={"slack_api_url": slack.api_url})
    client = build_web_client(settings, token=TOKEN, metrics=metrics)
    if metrics is not None:
        services.metrics = metrics
        measure_store(metrics, services.store, settings.channel)
    app = build_app(services, client, signing_secret=SECRET, socket_mode=False)
    wsgi = make_wsgi_app(app, HealthCheck(services.store, client), metrics, signing_secret=SECRET)
    return Harness(slack, services, serve_in_thread(wsgi))


def texts(payload: dict[str, Any]) -> str:
    """Every string in a reply, to check what a user could read."""
    return json.dumps(payload, ensure_ascii=False)


def assert_clean(payload: dict[str, Any], surface: str = "message") -> None:
    assert payload.get("text"), "a plain-text fallback is required"
    assert validate_blocks(payload.get("blocks", []), surface) == []
    shown = texts(payload)
    assert "Traceback" not in shown
    assert "Error(" not in shown and "Exception" not in shown
