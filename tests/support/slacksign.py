"""Build signed Slack requests for tests.

Slack signs every request it sends to an app: ``X-Slack-Signature`` is
``v0=`` + hex HMAC-SHA256 of ``"v0:{timestamp}:{body}"`` keyed with the
signing secret, and ``X-Slack-Request-Timestamp`` carries the timestamp.
The ``*_body`` helpers produce bodies shaped like the ones Slack sends for
slash commands, interactivity (block actions), the Events API and URL
verification.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import time
from typing import Any
from urllib.parse import urlencode

__all__ = [
    "block_actions_body",
    "event_body",
    "sign",
    "signed_headers",
    "slash_command_body",
    "url_verification_body",
]

VERIFICATION_TOKEN = "verification-token"
API_APP_ID = "A0001"
TEAM_DOMAIN = "test"
BOT_USER_ID = "UBOT"

_event_ids = itertools.count(1)


def sign(secret: str, body: bytes | str, timestamp: int | str) -> str:
    """``v0=<hex hmac-sha256 of "v0:{timestamp}:{body}">``."""
    raw = body if isinstance(body, bytes) else body.encode("utf-8")
    base = f"v0:{timestamp}:".encode() + raw
    digest = hmac.new(secret.encode("utf-8"), base, hashlib.sha256).hexdigest()
    return f"v0={digest}"


def signed_headers(
    secret: str, body: bytes | str, timestamp: int | str | None = None
) -> dict[str, str]:
    """Headers Slack would send with ``body``; ``timestamp`` defaults to now.

    ``Content-Type`` is JSON when the body starts with ``{``, form-encoded
    otherwise.
    """
    ts = str(int(time.time()) if timestamp is None else timestamp)
    head = body.lstrip()[:1]
    is_json = head in (b"{", "{")
    return {
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(secret, body, ts),
        "Content-Type": "application/json" if is_json else "application/x-www-form-urlencoded",
    }


def slash_command_body(
    text: str,
    user_id: str = "U123",
    team_id: str = "T0001",
    command: str = "/prdigest",
    channel_id: str = "C123",
    response_url: str | None = None,
    trigger_id: str = "t1",
    *,
    user_name: str = "tester",
    channel_name: str = "general",
    api_app_id: str = API_APP_ID,
) -> str:
    """A form-encoded slash command invocation, as Slack POSTs it."""
    if response_url is None:
        response_url = f"https://hooks.slack.com/commands/{team_id}/1/fake"
    return urlencode(
        {
            "token": VERIFICATION_TOKEN,
            "team_id": team_id,
            "team_domain": TEAM_DOMAIN,
            "channel_id": channel_id,
            "channel_name": channel_name,
            "user_id": user_id,
            "user_name": user_name,
            "command": command,
            "text": text,
            "api_app_id": api_app_id,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": trigger_id,
        }
    )


def block_actions_body(
    action_id: str,
    value: str,
    user_id: str = "U123",
    team_id: str = "T0001",
    *,
    block_id: str = "b1",
    channel_id: str | None = None,
    message_ts: str | None = None,
    view: dict[str, Any] | None = None,
    response_url: str | None = None,
    trigger_id: str = "t1",
    action_type: str = "button",
    api_app_id: str = API_APP_ID,
    selected_option: dict[str, Any] | None = None,
) -> str:
    """A form-encoded ``payload=<json>`` block_actions interaction.

    With ``channel_id`` the click comes from a message (``message_ts``
    defaults to ``"1700000000.000100"``); otherwise from the Home tab
    (``view`` defaults to a minimal home view).
    """
    now = time.time()
    action: dict[str, Any] = {
        "type": action_type,
        "action_id": action_id,
        "block_id": block_id,
        "value": value,
        "action_ts": f"{now:.6f}",
    }
    if action_type == "button":
        action["text"] = {"type": "plain_text", "text": value[:75] or "button", "emoji": True}
    if selected_option is not None:  # an overflow menu or a select: no `value` of its own
        del action["value"]
        action["selected_option"] = selected_option
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user_id, "username": "tester", "name": "tester", "team_id": team_id},
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "trigger_id": trigger_id,
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "enterprise": None,
        "is_enterprise_install": False,
        "actions": [action],
    }
    if channel_id is not None:
        ts = message_ts or "1700000000.000100"
        payload["container"] = {
            "type": "message",
            "message_ts": ts,
            "channel_id": channel_id,
            "is_ephemeral": False,
        }
        payload["channel"] = {"id": channel_id, "name": "general"}
        payload["message"] = {"type": "message", "ts": ts, "user": BOT_USER_ID, "text": ""}
        payload["response_url"] = (
            response_url or f"https://hooks.slack.com/actions/{team_id}/1/fake"
        )
    else:
        home = view or {"id": "V00000001", "type": "home", "blocks": [], "team_id": team_id}
        payload["container"] = {"type": "view", "view_id": home.get("id", "V00000001")}
        payload["view"] = home
        if response_url is not None:
            payload["response_url"] = response_url
    return urlencode({"payload": json.dumps(payload)})


def view_submission_body(
    view: dict[str, Any],
    values: dict[str, dict[str, dict[str, Any]]],
    user_id: str = "U123",
    team_id: str = "T0001",
    *,
    api_app_id: str = API_APP_ID,
) -> str:
    """A form-encoded ``view_submission`` of ``view`` (as ``views.open`` returned it) with
    ``values`` as its ``state.values`` (block id -> action id -> element state)."""
    payload = {
        "type": "view_submission",
        "team": {"id": team_id, "domain": TEAM_DOMAIN},
        "user": {"id": user_id, "username": "tester", "name": "tester", "team_id": team_id},
        "api_app_id": api_app_id,
        "token": VERIFICATION_TOKEN,
        "trigger_id": f"{int(time.time())}.1.view",
        "view": {**view, "state": {"values": values}},
        "response_urls": [],
        "is_enterprise_install": False,
        "enterprise": None,
    }
    return urlencode({"payload": json.dumps(payload)})


def event_body(event: dict[str, Any], team_id: str = "T0001") -> str:
    """A JSON ``event_callback`` envelope around ``event``."""
    now = int(time.time())
    return json.dumps(
        {
            "token": VERIFICATION_TOKEN,
            "team_id": team_id,
            "api_app_id": API_APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": f"Ev{next(_event_ids):010d}",
            "event_time": now,
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": team_id,
                    "user_id": BOT_USER_ID,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
        }
    )


def url_verification_body(challenge: str) -> str:
    """The JSON body of Slack's Events API URL verification handshake."""
    return json.dumps(
        {"token": VERIFICATION_TOKEN, "challenge": challenge, "type": "url_verification"}
    )


# Slack's documented worked example of request signing.
SLACK_EXAMPLE_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
SLACK_EXAMPLE_TS = "1531420618"
SLACK_EXAMPLE_BODY = (
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow"
    "&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner"
    "&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands"
    "%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    "&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
SLACK_EXAMPLE_SIG = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
