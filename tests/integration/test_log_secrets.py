"""A real `prdigest serve` keeps secrets in its log, over HTTP and Socket Mode, at INFO and
at DEBUG.

Every field of every request carries a marker unique to the test (the user's text, names,
the response_url, the trigger id, token-looking strings), and so do the signing secret, the
bot token and the app token. Refused requests come in every way one can be refused; the
whole log the process wrote (stdout and stderr) is read after it stops: the marker is
nowhere, and each refused request left one line of prdigest's own naming the reason, where
it came in, and the team and user where they have the shape of Slack's ids.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.support.fakeslack import FakeSlack
from tests.support.process import ServeProcess
from tests.support.slacksign import signed_headers
from tests.support.socketslack import SocketSlack, slash_envelope

TEAM = "T0001"  # the workspace the fake's bot token belongs to
USER = "U0REFUSED"
REFUSED = "refused a Slack request"


def marker() -> str:
    return f"mk{uuid.uuid4().hex[:12]}"


def command_form(mark: str, response_url: str, **fields: str) -> dict[str, str]:
    """A slash command's fields, each holding `mark`, but the ids and the command."""
    return {
        "token": f"xoxp-{mark}-verification",
        "team_id": TEAM,
        "team_domain": f"{mark}-domain",
        "channel_id": "C0MARKED",
        "channel_name": f"{mark}-channel",
        "user_id": USER,
        "user_name": f"{mark}-user-name",
        "command": "/prdigest",
        "text": f"subscribe {mark} my private words",
        "api_app_id": "A0001",
        "response_url": response_url,
        "trigger_id": f"1.2.{mark}-trigger",
        "app_secret": f"xapp-1-{mark}-app-token-looking",
        **fields,
    }


def hook_url(mark: str) -> str:
    """A response_url as Slack makes them: whoever holds it may answer as the app."""
    return f"https://hooks.slack.com/commands/{TEAM}/1/{mark}-response-url"


def refusals(serve: ServeProcess) -> list[str]:
    return serve.lines(REFUSED)


def wait_for_refusals(serve: ServeProcess, count: int) -> list[str]:
    serve.wait_until(lambda: len(refusals(serve)) >= count, timeout=15)
    return refusals(serve)


def assert_kept_secret(log: str, mark: str) -> None:
    assert mark not in log, [line for line in log.splitlines() if mark in line]
    assert "Traceback" not in log, log
    assert "body:" not in log and "Invalid request signature" not in log, log


@contextmanager
def serving(
    tmp_path: Path, slack: FakeSlack, level: str, log_format: str, **env: str
) -> Iterator[ServeProcess]:
    serve = ServeProcess(
        tmp_path,
        {
            "PRDIGEST_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
            "PRDIGEST_SLACK_API_URL": slack.api_url,
            "PRDIGEST_LOG_LEVEL": level,
            "PRDIGEST_LOG_FORMAT": log_format,
            "SLACK_BOT_TOKEN": slack.token,
            **env,
        },
        "--no-scheduler",
    )
    try:
        yield serve
    finally:
        assert serve.stop() == 0, serve.stderr


# ---------------------------------------------------------------- HTTP


@pytest.mark.parametrize(("level", "log_format"), [("INFO", "text"), ("DEBUG", "json")])
def test_refused_http_requests_leave_one_line_and_no_secret(
    tmp_path: Path, level: str, log_format: str
) -> None:
    mark = marker()
    secret = f"{mark}-signing-secret"
    with (
        FakeSlack(token=f"xoxb-{mark}-bot-token") as slack,
        serving(tmp_path, slack, level, log_format, SLACK_SIGNING_SECRET=secret) as serve,
    ):
        serve.wait_until(lambda: serve.health() == 200)
        form = urlencode(command_form(mark, hook_url(mark)))
        now = int(time.time())
        event = {
            "type": "event_callback",
            "team_id": TEAM,
            "token": f"xoxb-{mark}-in-an-event",
            "event": {"type": "message", "user": USER, "text": f"{mark} said in a channel"},
        }
        foreign = urlencode(command_form(mark, hook_url(mark), team_id=f"T{mark}"))
        click = {
            "type": "block_actions",
            "team": {"id": TEAM},
            "user": {"id": USER, "name": f"{mark}-name"},
            "actions": [{"type": "button", "action_id": f"{mark}-action", "value": mark}],
            "response_url": hook_url(mark),
            "token": f"xoxb-{mark}-click",
        }
        both = f"team {TEAM}, user {USER}"
        # (body, headers, its status, the reason the line gives, the ids it names)
        refused: list[tuple[str, dict[str, str], int, str, str]] = [
            (form, signed_headers(f"{mark}-wrong", form), 401, "bad signature", both),
            (form, signed_headers(secret, form, now - 600), 401, "stale timestamp", both),
            (form, signed_headers(secret, form, now + 900), 401, "in the future", both),
            (form, {"Content-Type": "application/x-www-form-urlencoded"}, 401, "not signed", both),
            (
                form,
                {**signed_headers(secret, form), "X-Slack-Request-Timestamp": mark},
                401,
                "malformed timestamp",
                both,
            ),
            (
                json.dumps(event),
                signed_headers(mark, json.dumps(event)),
                401,
                "bad signature",
                both,
            ),
            (
                foreign,
                signed_headers(f"{mark}-wrong", foreign),
                401,
                "bad signature",
                f"user {USER}",
            ),
        ]
        unreadable = f"payload=%7B%22{mark}%22%3A+%22not+JSON"
        refused.append((unreadable, signed_headers(secret, unreadable), 400, "unreadable", ""))
        shaped = urlencode({"payload": json.dumps({**click, "user": {"id": f"{mark}-user"}})})
        refused.append(
            (shaped, signed_headers(secret, shaped), 400, "malformed payload", f"team {TEAM}")
        )
        typed = urlencode(command_form(mark, hook_url(mark), type=f"{mark}-type"))
        refused.append((typed, signed_headers(secret, typed), 200, "malformed payload", both))

        for n, (body, headers, status, reason, named) in enumerate(refused, start=1):
            assert serve.post(body, headers) == status, (reason, serve.stderr)
            line = wait_for_refusals(serve, n)[-1]
            assert reason in line and "(POST /slack/events)" in line, line
            if n == 1 and log_format == "text":
                assert line == (
                    f"WARNING bot.slack.server: {REFUSED} (POST /slack/events): bad signature "
                    f"(check SLACK_SIGNING_SECRET if every request says so); {both}"
                )
            if named:
                assert line.endswith(f"; {named}") or f'; {named}"' in line, line
            else:
                assert "; team" not in line and "; user" not in line, line
        # An accepted command, its response_url and text marked too: answered, not logged.
        url = f"http://127.0.0.1:{slack.port}/response/{mark}"
        accepted = urlencode(command_form(mark, url, text=f"help {mark}"))
        assert serve.post(accepted, signed_headers(secret, accepted)) == 200
        slack.wait_for(f"/response/{mark}", timeout=10)
    log = serve.stderr
    assert_kept_secret(log, mark)
    assert len(refusals(serve)) == len(refused), log
    if log_format == "json":
        assert all(json.loads(line)["level"] for line in log.splitlines()), log
    if level == "DEBUG":
        assert "DEBUG" in log, "the level took effect"


# ---------------------------------------------------------------- Socket Mode


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_refused_socket_mode_envelopes_leave_one_line_and_no_secret(
    tmp_path: Path, socket_slack: SocketSlack, level: str
) -> None:
    mark = marker()
    with FakeSlack(token=f"xoxb-{mark}-bot", app_token=f"xapp-{mark}-app") as slack:
        slack.socket_url = socket_slack.url
        with serving(tmp_path, slack, level, "text", SLACK_APP_TOKEN=slack.app_token) as serve:
            serve.wait_for_line("connected to Slack (Socket Mode)", timeout=60)
            form = command_form(mark, hook_url(mark))
            not_a_payload = [form, f"{mark} in a list"]
            socket_slack.outgoing.put(slash_envelope(f"{mark}-list", not_a_payload))  # type: ignore[arg-type]
            line = wait_for_refusals(serve, 1)[-1]
            assert "unreadable payload" in line and "(Socket Mode, slash_commands)" in line, line
            socket_slack.outgoing.put(slash_envelope("e2", {**form, "user_id": [f"{mark}"]}))
            ack = socket_slack.received.get(timeout=10)
            assert ack["envelope_id"] == "e2" and "nothing was done" in json.dumps(ack)
            line = wait_for_refusals(serve, 2)[-1]
            assert "malformed payload (user_id" in line and "(Socket Mode)" in line, line
            assert f"team {TEAM}" in line and "user " not in line, line
            # Frames Slack would never send: broken JSON, a binary frame.
            socket_slack.outgoing.put(f'{{"envelope_id": "{mark}", "payload": {{"text": "{mark}')
            socket_slack.outgoing.put(json.dumps({"envelope_id": mark, "text": mark}).encode())
            # An event no listener takes, marked everywhere: Bolt names its type, no more.
            event: dict[str, Any] = {
                "type": "event_callback",
                "team_id": TEAM,
                "token": f"xoxb-{mark}-event",
                "event": {"type": "message", "user": USER, "text": f"{mark} in a channel"},
            }
            socket_slack.outgoing.put({"envelope_id": "e5", "type": "events_api", "payload": event})
            assert "event_callback" in serve.wait_for_line("Unhandled request")
            # An accepted command, marked everywhere it can be: answered, not logged.
            url = f"http://127.0.0.1:{slack.port}/response/{mark}"
            socket_slack.outgoing.put(slash_envelope("e6", command_form(mark, url, text="help")))
            slack.wait_for(f"/response/{mark}", timeout=10)
    log = serve.stderr
    assert mark not in log, [line for line in log.splitlines() if mark in line]
    assert "body:" not in log and "on_message invoked" not in log, log
    assert len(refusals(serve)) == 2, log
    if level == "DEBUG":
        assert "DEBUG" in log, "the level took effect"
    else:
        # Slack's libraries speak in one line each too: no traceback, no advice to developers.
        assert "Traceback" not in log and "Suggestion" not in log, log
        assert len([line for line in log.splitlines() if "slack_bolt" in line]) == 3, log
