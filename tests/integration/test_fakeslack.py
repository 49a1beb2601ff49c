"""The fake Slack Web API, exercised through the real ``slack_sdk.WebClient``."""

from __future__ import annotations

import json
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import (
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier

from tests.support import fakeslack
from tests.support.fakeslack import FakeSlack, validate_blocks
from tests.support.slacksign import (
    SLACK_EXAMPLE_BODY,
    SLACK_EXAMPLE_SECRET,
    SLACK_EXAMPLE_SIG,
    SLACK_EXAMPLE_TS,
    block_actions_body,
    event_body,
    sign,
    signed_headers,
    slash_command_body,
    url_verification_body,
)

TOKEN = "xoxb-test"


@pytest.fixture
def client(slack: FakeSlack) -> WebClient:
    client = WebClient(token=TOKEN, base_url=slack.api_url)
    client.retry_handlers = []  # no hidden retries: every call shows up once
    return client


def _error(exc: pytest.ExceptionInfo[SlackApiError]) -> Any:
    return exc.value.response["error"]


def _header(headers: Any, name: str) -> str | None:
    for key, value in dict(headers).items():
        if key.lower() == name.lower():
            return str(value[0] if isinstance(value, list) else value)
    return None


def section(text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}, **extra}


def button(text: str = "Go", value: str = "v", action_id: str = "a1") -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": text},
        "value": value,
        "action_id": action_id,
    }


# ---------------------------------------------------------------- auth


def test_auth_test_ok(client: WebClient, slack: FakeSlack) -> None:
    resp = client.auth_test()
    assert resp["ok"] is True
    assert resp["team_id"] == "T0001"
    assert resp["user_id"] == "UBOT"
    assert resp["bot_id"] == "B0001"
    assert resp["team"] == "Test Team"
    assert resp["url"].startswith("https://")
    [call] = slack.calls_for("auth.test")
    assert call.token == TOKEN
    assert _header(call.headers, "Authorization") == f"Bearer {TOKEN}"


def test_bad_token_is_invalid_auth(slack: FakeSlack) -> None:
    bad = WebClient(token="xoxb-wrong", base_url=slack.api_url)
    with pytest.raises(SlackApiError) as exc:
        bad.auth_test()
    assert _error(exc) == "invalid_auth"
    assert exc.value.response.status_code == 200
    [call] = slack.calls_for("auth.test")
    assert call.response == {"ok": False, "error": "invalid_auth"}
    assert slack.accepted("auth.test") == []


def test_missing_token_and_token_param(slack: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as exc:
        WebClient(base_url=slack.api_url).auth_test()
    assert _error(exc) == "not_authed"
    # A token passed as a form parameter is accepted too.
    req = urllib.request.Request(
        slack.api_url + "auth.test", data=f"token={TOKEN}".encode(), method="POST"
    )
    with urllib.request.urlopen(req) as resp:
        assert json.loads(resp.read())["ok"] is True


def test_unknown_method(client: WebClient, slack: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as exc:
        client.api_call("reactions.nope")
    assert _error(exc) == "unknown_method"
    assert slack.count("reactions.nope") == 1


def test_app_token_for_socket_mode(slack: FakeSlack, client: WebClient) -> None:
    slack.socket_url = "ws://127.0.0.1:9/link"
    app = WebClient(token="xapp-test", base_url=slack.api_url)
    assert app.apps_connections_open(app_token="xapp-test")["url"] == "ws://127.0.0.1:9/link"
    with pytest.raises(SlackApiError) as exc:
        client.apps_connections_open(app_token=TOKEN)
    assert _error(exc) == "not_allowed_token_type"
    with pytest.raises(SlackApiError) as exc:
        app.auth_test()
    assert _error(exc) == "not_allowed_token_type"


# ---------------------------------------------------------------- messages


def test_post_message_records_and_ts_increase(client: WebClient, slack: FakeSlack) -> None:
    seen = []
    for i in range(5):
        resp = client.chat_postMessage(channel="C1", text=f"hello {i}")
        assert resp["channel"] == "C1"
        assert resp["message"]["text"] == f"hello {i}"
        seen.append(resp["ts"])
    assert all(len(ts.split(".")[1]) == 6 for ts in seen)
    assert [float(t) for t in seen] == sorted(float(t) for t in seen)
    assert len(set(seen)) == 5
    assert slack.count("chat.postMessage") == 5
    assert slack.calls_for("chat.postMessage")[0].params["channel"] == "C1"
    assert [m["text"] for m in slack.messages_in("C1")] == [f"hello {i}" for i in range(5)]
    assert slack.messages["C1"][0]["bot_id"] == "B0001"
    slack.reset_calls()
    assert slack.calls == []


def test_post_requires_channel_and_content(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as exc:
        client.api_call("chat.postMessage", json={"channel": "C1"})
    assert _error(exc) == "no_text"
    with pytest.raises(SlackApiError) as exc:
        client.api_call("chat.postMessage", json={"text": "x"})
    assert _error(exc) == "channel_not_found"
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C1", text="x" * (fakeslack.MESSAGE_TEXT_LIMIT + 1))
    assert _error(exc) == "msg_too_long"


def test_metadata_round_trip(client: WebClient, slack: FakeSlack) -> None:
    meta = {"event_type": "prdigest_digest", "event_payload": {"week": "2024-W01", "n": 3}}
    posted = client.chat_postMessage(channel="C1", text="digest", metadata=meta)
    client.chat_postMessage(channel="C1", text="plain")
    hist = client.conversations_history(channel="C1", include_all_metadata=True)
    newest, oldest = hist["messages"]
    assert newest["text"] == "plain" and "metadata" not in newest
    assert oldest["ts"] == posted["ts"]
    assert oldest["metadata"] == meta
    plain = client.conversations_history(channel="C1")
    assert all("metadata" not in m for m in plain["messages"])


def test_form_encoded_blocks_and_metadata(client: WebClient, slack: FakeSlack) -> None:
    meta = {"event_type": "e", "event_payload": {"k": 1}}
    client.api_call(
        "chat.postMessage",
        data={
            "channel": "C1",
            "text": "t",
            "blocks": json.dumps([section("hi")]),
            "metadata": json.dumps(meta),
        },
    )
    [call] = slack.calls_for("chat.postMessage")
    assert call.params["blocks"] == [section("hi")]
    [stored] = slack.messages_in("C1")
    assert stored["metadata"] == meta
    assert stored["blocks"] == [section("hi")]


def test_invalid_metadata(client: WebClient) -> None:
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C1", text="t", metadata={"event_payload": {}})
    assert _error(exc) == "invalid_metadata_format"


def test_threads_and_replies(client: WebClient, slack: FakeSlack) -> None:
    parent = client.chat_postMessage(channel="C1", text="parent")["ts"]
    meta = {"event_type": "note", "event_payload": {"pr": 1}}
    client.chat_postMessage(channel="C1", text="r1", thread_ts=parent, metadata=meta)
    client.chat_postMessage(channel="C1", text="r2", thread_ts=parent)
    replies = client.conversations_replies(channel="C1", ts=parent, include_all_metadata=True)
    texts = [m["text"] for m in replies["messages"]]
    assert texts == ["parent", "r1", "r2"]
    assert replies["messages"][1]["metadata"] == meta
    assert replies["messages"][1]["thread_ts"] == parent
    bare = client.conversations_replies(channel="C1", ts=parent)
    assert all("metadata" not in m for m in bare["messages"])
    history = client.conversations_history(channel="C1")["messages"]
    assert [m["text"] for m in history] == ["parent"]
    assert history[0]["reply_count"] == 2
    with pytest.raises(SlackApiError) as exc:
        client.conversations_replies(channel="C1", ts="1.000001")
    assert _error(exc) == "thread_not_found"


def test_history_pagination_and_oldest(client: WebClient, slack: FakeSlack) -> None:
    ts = [client.chat_postMessage(channel="C1", text=str(i))["ts"] for i in range(5)]
    got: list[str] = []
    cursor = None
    pages = 0
    while True:
        resp = client.conversations_history(channel="C1", limit=2, cursor=cursor)
        pages += 1
        got += [m["text"] for m in resp["messages"]]
        cursor = resp["response_metadata"]["next_cursor"]
        assert bool(cursor) == resp["has_more"]
        if not cursor:
            break
    assert got == ["4", "3", "2", "1", "0"]
    assert pages == 3
    newer = client.conversations_history(channel="C1", oldest=ts[2])["messages"]
    assert [m["text"] for m in newer] == ["4", "3"]
    seeded = slack.seed_message("C1", "from a human", user="U9")
    assert client.conversations_history(channel="C1", limit=1)["messages"][0]["ts"] == seeded


def test_dm_by_user_id_and_conversations_open(client: WebClient, slack: FakeSlack) -> None:
    opened = client.conversations_open(users="U42")
    assert opened["channel"]["id"] == "DU42"
    resp = client.chat_postMessage(channel="U42", text="psst")
    assert resp["channel"] == "DU42"
    assert [m["text"] for m in slack.messages_in("DU42")] == ["psst"]
    with pytest.raises(SlackApiError) as exc:
        client.api_call("conversations.open")
    assert _error(exc) == "users_list_not_supplied"


def test_ephemeral_update_permalink(client: WebClient, slack: FakeSlack) -> None:
    eph = client.chat_postEphemeral(channel="C1", user="U1", text="only you")
    assert eph["message_ts"]
    assert slack.ephemerals[0]["user"] == "U1"
    assert slack.ephemerals[0]["text"] == "only you"
    with pytest.raises(SlackApiError):
        client.api_call("chat.postEphemeral", json={"channel": "C1", "text": "x"})

    ts = client.chat_postMessage(channel="C1", text="v1")["ts"]
    upd = client.chat_update(channel="C1", ts=ts, text="v2", blocks=[section("v2")])
    assert upd["ts"] == ts
    assert slack.messages_in("C1")[0]["text"] == "v2"
    with pytest.raises(SlackApiError) as exc:
        client.chat_update(channel="C1", ts="1.000001", text="x")
    assert _error(exc) == "message_not_found"

    link = client.chat_getPermalink(channel="C1", message_ts=ts)["permalink"]
    assert link == f"https://test.slack.com/archives/C1/p{ts.replace('.', '')}"


def test_views_publish_home(client: WebClient, slack: FakeSlack) -> None:
    view = {"type": "home", "blocks": [section("welcome")]}
    resp = client.views_publish(user_id="U1", view=view)
    assert resp["view"]["type"] == "home"
    assert slack.home_views["U1"]["blocks"] == [section("welcome")]
    with pytest.raises(SlackApiError) as exc:
        client.views_publish(user_id="U1", view={"type": "modal", "blocks": []})
    assert _error(exc) == "invalid_arguments"
    too_many = {"type": "home", "blocks": [section(f"b{i}") for i in range(101)]}
    with pytest.raises(SlackApiError) as exc:
        client.views_publish(user_id="U1", view=too_many)
    assert _error(exc) == "invalid_blocks"
    exactly = {"type": "home", "blocks": [section(f"b{i}") for i in range(100)]}
    assert client.views_publish(user_id="U1", view=exactly)["ok"]
    assert len(slack.home_views["U1"]["blocks"]) == 100


# ---------------------------------------------------------------- faults


def test_rate_limit_with_retry_handler(slack: FakeSlack) -> None:
    slack.rate_limit("chat.postMessage", times=1, retry_after=1)
    client = WebClient(
        token=TOKEN,
        base_url=slack.api_url,
        retry_handlers=[RateLimitErrorRetryHandler(max_retry_count=2)],
    )
    start = time.monotonic()
    assert client.chat_postMessage(channel="C1", text="eventually")["ok"]
    assert time.monotonic() - start >= 0.9
    calls = slack.calls_for("chat.postMessage")
    assert [c.status for c in calls] == [429, 200]
    assert len(slack.accepted("chat.postMessage")) == 1


def test_rate_limit_without_retry(client: WebClient, slack: FakeSlack) -> None:
    slack.rate_limit("chat.postMessage", times=1, retry_after=7)
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C1", text="x")
    assert exc.value.response.status_code == 429
    assert _error(exc) == "ratelimited"
    assert _header(exc.value.response.headers, "Retry-After") == "7"
    assert client.chat_postMessage(channel="C1", text="x")["ok"]


def test_set_rate_per_channel(client: WebClient, slack: FakeSlack) -> None:
    slack.set_rate("chat.postMessage", 60, per_channel=True)
    statuses = []
    retry_afters = []
    for _ in range(3):
        try:
            client.chat_postMessage(channel="C1", text="x")
            statuses.append(200)
        except SlackApiError as err:
            statuses.append(err.response.status_code)
            retry_afters.append(int(_header(err.response.headers, "Retry-After") or 0))
    assert statuses[0] == 200
    assert 429 in statuses
    assert retry_afters and all(r >= 1 for r in retry_afters)
    # Another channel has its own window.
    assert client.chat_postMessage(channel="C2", text="x")["ok"]
    slack.set_rate("chat.postMessage", None)
    assert client.chat_postMessage(channel="C1", text="x")["ok"]


def test_set_rate_global_window(client: WebClient, slack: FakeSlack) -> None:
    slack.set_rate("auth.test", 600, burst=2)  # 2 calls per 0.2 s
    client.auth_test()
    client.auth_test()
    with pytest.raises(SlackApiError) as exc:
        client.auth_test()
    assert _header(exc.value.response.headers, "Retry-After") == "1"
    time.sleep(0.25)
    assert client.auth_test()["ok"]


def test_latency_delays_each_call_and_calls_overlap(slack: FakeSlack) -> None:
    latency = 0.4
    slack.set_latency("auth.test", latency)
    clients = [WebClient(token=TOKEN, base_url=slack.api_url) for _ in range(4)]

    def timed(client: WebClient) -> float:
        started = time.monotonic()
        assert client.auth_test()["ok"]
        return time.monotonic() - started

    started = time.monotonic()
    with ThreadPoolExecutor(4) as pool:
        each = list(pool.map(timed, clients))
    elapsed = time.monotonic() - started
    assert min(each) >= latency and elapsed >= latency, "each call waits"
    # Together: every call arrived before the first one was answered. One after another,
    # the last would arrive three latencies after the first.
    arrived = [c.at for c in slack.calls_for("auth.test")]
    assert len(arrived) == 4
    assert max(arrived) - min(arrived) < latency, "concurrent calls wait together"
    slack.set_latency("auth.test", 0)
    assert timed(clients[0]) < latency


def test_fail_injection(client: WebClient, slack: FakeSlack) -> None:
    slack.fail("chat.postMessage", error="channel_not_found", times=2)
    for _ in range(2):
        with pytest.raises(SlackApiError) as exc:
            client.chat_postMessage(channel="C1", text="x")
        assert _error(exc) == "channel_not_found"
    assert client.chat_postMessage(channel="C1", text="x")["ok"]
    assert slack.count("chat.postMessage") == 3
    assert len(slack.accepted("chat.postMessage")) == 1
    assert slack.calls_for("chat.postMessage")[0].response["error"] == "channel_not_found"


def test_server_error_injection(slack: FakeSlack, client: WebClient) -> None:
    slack.server_error("chat.postMessage", times=1, status=503)
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C1", text="x")
    assert exc.value.response.status_code == 503
    slack.server_error("chat.postMessage", times=1, status=500)
    retrying = WebClient(
        token=TOKEN,
        base_url=slack.api_url,
        retry_handlers=[ServerErrorRetryHandler(max_retry_count=1)],
    )
    assert retrying.chat_postMessage(channel="C1", text="x")["ok"]
    assert [c.status for c in slack.calls_for("chat.postMessage")] == [503, 500, 200]


def test_not_joined_and_unknown_channels(client: WebClient, slack: FakeSlack) -> None:
    slack.channels_not_joined.add("C_PRIV")
    slack.unknown_channels.add("C_GONE")
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C_PRIV", text="x")
    assert _error(exc) == "not_in_channel"
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C_GONE", text="x")
    assert _error(exc) == "channel_not_found"
    assert slack.messages_in("C_PRIV") == []


def test_wait_for(client: WebClient, slack: FakeSlack) -> None:
    client.auth_test()
    assert len(slack.wait_for("auth.test", 1, timeout=1)) == 1
    with pytest.raises(TimeoutError):
        slack.wait_for("auth.test", 2, timeout=0.1)


# ---------------------------------------------------------------- Block Kit


def _post_blocks(client: WebClient, blocks: list[dict[str, Any]]) -> Any:
    return client.chat_postMessage(channel="C1", text="fallback", blocks=blocks)


def _rejected(client: WebClient, blocks: list[dict[str, Any]]) -> Any:
    with pytest.raises(SlackApiError) as exc:
        _post_blocks(client, blocks)
    return exc.value.response.data


L = fakeslack

INVALID: dict[str, list[dict[str, Any]]] = {
    "51 blocks": [{"type": "divider"}] * (L.MESSAGE_BLOCKS_LIMIT + 1),
    "section 3001": [section("x" * (L.SECTION_TEXT_LIMIT + 1))],
    "empty section text": [section("")],
    "11 fields": [
        {
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": "f"}] * (L.SECTION_FIELDS_LIMIT + 1),
        }
    ],
    "field 2001": [
        {
            "type": "section",
            "fields": [{"type": "mrkdwn", "text": "f" * (L.SECTION_FIELD_TEXT_LIMIT + 1)}],
        }
    ],
    "header 151": [
        {"type": "header", "text": {"type": "plain_text", "text": "h" * (L.HEADER_TEXT_LIMIT + 1)}}
    ],
    "header mrkdwn": [{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}],
    "11 context elements": [
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": "c"}] * (L.CONTEXT_ELEMENTS_LIMIT + 1),
        }
    ],
    "26 actions": [
        {
            "type": "actions",
            "elements": [button(action_id=f"a{i}") for i in range(L.ACTIONS_ELEMENTS_LIMIT + 1)],
        }
    ],
    "button text 76": [
        {"type": "actions", "elements": [button(text="b" * (L.BUTTON_TEXT_LIMIT + 1))]}
    ],
    "button value 2001": [
        {"type": "actions", "elements": [button(value="v" * (L.BUTTON_VALUE_LIMIT + 1))]}
    ],
    "action_id 256": [
        {"type": "actions", "elements": [button(action_id="a" * (L.ACTION_ID_LIMIT + 1))]}
    ],
    "block_id 256": [section("x", block_id="b" * (L.BLOCK_ID_LIMIT + 1))],
    "duplicate block_id": [section("x", block_id="same"), section("y", block_id="same")],
    "duplicate action_id": [
        {"type": "actions", "elements": [button(action_id="dup")]},
        section("x", accessory=button(action_id="dup")),
    ],
    "unknown block type": [{"type": "video"}],
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_block_kit_rejections(client: WebClient, slack: FakeSlack, case: str) -> None:
    data = _rejected(client, INVALID[case])
    assert data["error"] == "invalid_blocks", data
    assert data["errors"] and all("json-pointer" in e for e in data["errors"])
    assert validate_blocks(INVALID[case])
    assert slack.messages_in("C1") == []


def test_block_kit_total_text_limit(client: WebClient) -> None:
    per = L.SECTION_TEXT_LIMIT
    n = L.TOTAL_TEXT_LIMIT // per
    at_limit = [section("x" * per) for _ in range(n)]
    assert sum(len(b["text"]["text"]) for b in at_limit) == L.TOTAL_TEXT_LIMIT
    assert _post_blocks(client, at_limit)["ok"]
    over = [*at_limit, section("y")]
    assert _rejected(client, over)["error"] == "msg_blocks_too_long"
    assert validate_blocks(over)
    assert validate_blocks(over, surface="home") == []


def test_block_kit_exact_limits_accepted(client: WebClient) -> None:
    valid: list[list[dict[str, Any]]] = [
        [{"type": "divider"}] * L.MESSAGE_BLOCKS_LIMIT,
        [section("x" * L.SECTION_TEXT_LIMIT)],
        [{"type": "header", "text": {"type": "plain_text", "text": "h" * L.HEADER_TEXT_LIMIT}}],
        [
            {
                "type": "context",
                "elements": [{"type": "mrkdwn", "text": "c"}] * L.CONTEXT_ELEMENTS_LIMIT,
            }
        ],
        [
            {
                "type": "section",
                "fields": [{"type": "mrkdwn", "text": "f" * 200}] * L.SECTION_FIELDS_LIMIT,
            }
        ],
        [
            {
                "type": "actions",
                "block_id": "b" * L.BLOCK_ID_LIMIT,
                "elements": [
                    button(
                        text="b" * L.BUTTON_TEXT_LIMIT,
                        value="v" * L.BUTTON_VALUE_LIMIT,
                        action_id="a" * L.ACTION_ID_LIMIT,
                    ),
                    *(button(action_id=f"a{i}") for i in range(L.ACTIONS_ELEMENTS_LIMIT - 1)),
                ],
            }
        ],
        [
            {"type": "header", "text": {"type": "plain_text", "text": "Week 1"}},
            section("*PR*", block_id="s1", accessory=button(action_id="open")),
            {"type": "context", "elements": [{"type": "mrkdwn", "text": "ctx"}]},
            {"type": "divider"},
            {
                "type": "rich_text",
                "elements": [
                    {"type": "rich_text_section", "elements": [{"type": "text", "text": "r"}]}
                ],
            },
            {"type": "image", "image_url": "https://example.com/a.png", "alt_text": "a"},
        ],
    ]
    for blocks in valid:
        assert validate_blocks(blocks) == []
        assert _post_blocks(client, blocks)["ok"]


# ---------------------------------------------------------------- signing


def test_sign_matches_slack_worked_example() -> None:
    assert sign(SLACK_EXAMPLE_SECRET, SLACK_EXAMPLE_BODY, SLACK_EXAMPLE_TS) == SLACK_EXAMPLE_SIG
    assert sign(SLACK_EXAMPLE_SECRET, SLACK_EXAMPLE_BODY.encode(), 1531420618) == SLACK_EXAMPLE_SIG


def test_sign_agrees_with_slack_sdk_verifier() -> None:
    verifier = SignatureVerifier(SLACK_EXAMPLE_SECRET)
    assert verifier.generate_signature(timestamp=SLACK_EXAMPLE_TS, body=SLACK_EXAMPLE_BODY) == (
        SLACK_EXAMPLE_SIG
    )
    body = slash_command_body("this week")
    headers = signed_headers("s3cret", body)
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert SignatureVerifier("s3cret").is_valid_request(body, headers)
    assert not SignatureVerifier("other").is_valid_request(body, headers)
    json_body = event_body({"type": "app_home_opened", "user": "U1", "tab": "home"})
    json_headers = signed_headers("s3cret", json_body)
    assert json_headers["Content-Type"] == "application/json"
    assert SignatureVerifier("s3cret").is_valid_request(json_body, json_headers)


def test_request_bodies() -> None:
    form = {k: v[0] for k, v in parse_qs(slash_command_body("week 3", user_id="U9")).items()}
    assert form["command"] == "/prdigest"
    assert form["text"] == "week 3"
    assert form["user_id"] == "U9"
    assert form["team_id"] == "T0001"
    assert form["response_url"].startswith("https://")

    payload = json.loads(parse_qs(block_actions_body("mark_read", "pr-1"))["payload"][0])
    assert payload["type"] == "block_actions"
    assert payload["actions"][0]["action_id"] == "mark_read"
    assert payload["actions"][0]["value"] == "pr-1"
    assert payload["user"]["id"] == "U123"
    assert payload["container"]["type"] == "view"
    in_channel = json.loads(parse_qs(block_actions_body("a", "v", channel_id="C1"))["payload"][0])
    assert in_channel["channel"]["id"] == "C1"
    assert in_channel["container"]["type"] == "message"

    first = json.loads(event_body({"type": "app_home_opened", "user": "U1"}))
    second = json.loads(event_body({"type": "app_home_opened", "user": "U1"}))
    assert first["type"] == "event_callback"
    assert first["event"]["user"] == "U1"
    assert first["event_id"] != second["event_id"]
    assert isinstance(first["event_time"], int)
    assert first["api_app_id"]

    verification = json.loads(url_verification_body("abc"))
    assert verification == {**verification, "type": "url_verification", "challenge": "abc"}


def test_a_handled_server_error_keeps_the_message(slack: FakeSlack, client: WebClient) -> None:
    slack.server_error("chat.postMessage", times=1, status=500, handled=True)
    with pytest.raises(SlackApiError) as exc:
        client.chat_postMessage(channel="C1", text="kept")
    assert exc.value.response.status_code == 500
    assert [m["text"] for m in slack.messages_in("C1")] == ["kept"]
