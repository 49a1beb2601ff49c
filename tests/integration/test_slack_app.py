"""The Slack surface end to end: signed HTTP requests -> waitress -> Bolt -> FakeSlack.

Nothing of ours is mocked: the real `WebClient` talks to the fake Web API, `respond()`
posts to a response_url served by the same fake, and the store is SQLite or PostgreSQL.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator, Mapping, MutableMapping
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from slack_sdk.signature import Clock, SignatureVerifier

from bot.delivery.weekly import Pacing, publish_weekly_digest
from bot.notes.search import MAX_QUERY_CHARS
from bot.render.blocks import MORE_ACTION_ID, SUBSCRIBE_ACTION_ID, UNSUBSCRIBE_ACTION_ID
from bot.render.replies import role_action_id
from bot.services import Services, ingest_paths
from bot.slack.app import build_app
from bot.slack.client import build_web_client
from bot.slack.server import HealthCheck, make_wsgi_app, serve_in_thread
from tests.support.fakeslack import FakeSlack, validate_blocks
from tests.support.slackapp import (
    SECRET,
    TEAM,
    TOKEN,
    USER,
    Harness,
    assert_clean,
    start_harness,
    texts,
)
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

# ---------------------------------------------------------------- commands


def test_help_and_empty_text(bot: Harness) -> None:
    status, reply = bot.command("help")
    assert status == 200
    assert reply["response_type"] == "ephemeral"
    assert_clean(reply)
    for word in ("subscribe", "unsubscribe", "roles", "list", "&lt;free text&gt;"):
        assert word in reply["text"]
    _, empty = bot.command("   ")
    assert empty["text"] == reply["text"]


def test_roles(bot: Harness) -> None:
    _, reply = bot.command("roles")
    assert_clean(reply)
    for slug in bot.services.taxonomy.slugs:
        assert slug in texts(reply)


@pytest.mark.parametrize("alias", ["moe", "mm", "infra"])
def test_role_alias_lists_that_roles_notes(bot: Harness, alias: str) -> None:
    role = bot.services.taxonomy.resolve(alias)
    assert role is not None
    _, reply = bot.command(alias)
    assert_clean(reply)
    assert role.slug in reply["text"]
    page = bot.services.store.role_notes(role.slug, limit=5)
    assert page.notes, "fixtures have notes for every tested role"
    assert page.notes[0].title[:40] in texts(reply)
    # Every note block carries a verdict badge.
    notes = [b for b in reply["blocks"] if str(b.get("block_id", "")).startswith("note-")]
    assert notes and all(
        ":large_" in b["text"]["text"] or ":white_circle:" in b["text"]["text"] for b in notes
    )


@pytest.mark.parametrize("query", ["量化", "缓存", "fp8 marlin", "cuda graph"])
def test_free_text_search(bot: Harness, query: str) -> None:
    _, reply = bot.command(query)
    assert_clean(reply)
    assert "No notes match" not in reply["text"]
    assert any(str(b.get("block_id", "")).startswith("note-") for b in reply["blocks"])


def test_pr_link_shown_when_known(bot: Harness, tmp_path: Path) -> None:
    note = tmp_path / "linked.txt"
    note.write_text(
        "vllm-project/vllm\n\nZeta speculative drafter rework (#24680)\n\n"
        "值得做推测解码的工程师精读: the drafter now shares the KV cache.\n",
        encoding="utf-8",
    )
    ingest_paths(bot.services, [note])
    _, reply = bot.command("zeta drafter")
    assert "https://github.com/vllm-project/vllm/pull/24680" in texts(reply)
    assert "24680" in reply["text"]


def test_unknown_word_suggests_roles_and_help(bot: Harness) -> None:
    _, reply = bot.command("multimodl")
    assert_clean(reply)
    assert "multimodal" in reply["text"]
    assert "help" in reply["text"]
    _, typo = bot.command("subscibe")
    assert "/prdigest subscribe" in typo["text"]
    _, nothing = bot.command("zzqqxx")
    assert "No notes match" in nothing["text"] and "/prdigest help" in nothing["text"]
    # A mistyped subscribe with a role finds that role's notes by search, and asks.
    _, found = bot.command("subscrbe moe <!channel>")
    assert_clean(found)
    assert "Did you mean `/prdigest subscribe moe &lt;!channel&gt;`?" in texts(found)
    assert bot.services.store.subscriptions_of(TEAM, USER) == []


def test_subscribe_unsubscribe_list(bot: Harness) -> None:
    store = bot.services.store
    _, reply = bot.command("subscribe kv")
    assert "Subscribed to `kv-cache`" in reply["text"]
    _, reply = bot.command("subscribe moe kv")
    assert reply["text"].startswith("Subscribed to `moe-quant`")
    assert "already subscribed to `kv-cache`" in reply["text"]
    assert store.subscriptions_of(TEAM, USER) == ["kv-cache", "moe-quant"]
    _, listed = bot.command("list")
    assert "kv-cache" in listed["text"] and "moe-quant" in listed["text"]
    # Another user's and another team's subscriptions are separate.
    bot.command("subscribe mm", user="U999")
    assert store.subscriptions_of(TEAM, "U999") == ["multimodal"]
    _, reply = bot.command("unsubscribe kv")
    assert "Unsubscribed from `kv-cache`" in reply["text"]
    _, reply = bot.command("unsubscribe all")
    assert "moe-quant" in reply["text"]
    assert store.subscriptions_of(TEAM, USER) == []
    assert store.subscriptions_of(TEAM, "U999") == ["multimodal"]
    _, listed = bot.command("list")
    assert "not subscribed" in listed["text"]


def test_subscribe_with_unknown_role_changes_nothing(bot: Harness) -> None:
    _, reply = bot.command("subscribe moe kernls")
    assert_clean(reply)
    assert "`kernls` is not a role" in reply["text"]
    assert "kernels" in reply["text"]
    assert bot.services.store.subscriptions_of(TEAM, USER) == []
    _, usage = bot.command("subscribe")
    assert "Name at least one role" in usage["text"]


# ---------------------------------------------------------------- pagination


def test_more_button_shows_next_page(bot: Harness) -> None:
    store = bot.services.store
    slug = max(bot.services.taxonomy.slugs, key=lambda s: store.role_notes(s, limit=1).total)
    total = store.role_notes(slug, limit=1).total
    size = bot.services.settings.page_size
    assert total > size, "the fixtures give some role more than one page"
    _, first = bot.command(slug)
    actions = [b for b in first["blocks"] if b["type"] == "actions"]
    assert len(actions) == 1
    more = actions[0]["elements"][0]
    assert more["action_id"] == MORE_ACTION_ID
    assert len(more["value"]) <= 2000
    assert json.loads(more["value"]) == {"q": slug, "o": size}
    url = bot.response_url()
    assert bot.click(MORE_ACTION_ID, more["value"], channel_id="C123", response_url=url) == 200
    second = bot.reply(url)
    assert_clean(second)
    first_ids = {b["block_id"] for b in first["blocks"] if "block_id" in b}
    second_ids = {b["block_id"] for b in second["blocks"] if "block_id" in b}
    notes_first = {i for i in first_ids if i.startswith("note-")}
    notes_second = {i for i in second_ids if i.startswith("note-")}
    assert notes_second and not notes_first & notes_second
    assert f"{size + 1}–" in second["text"]


def test_more_button_with_garbage_value(bot: Harness) -> None:
    url = bot.response_url()
    bot.click(MORE_ACTION_ID, "{not json", channel_id="C123", response_url=url)
    reply = bot.reply(url)
    assert "run the command again" in reply["text"]


def test_forged_numbers_in_buttons_are_refused_plainly(bot: Harness) -> None:
    """A More offset or a note id past any database integer is not ours: a plain reply."""
    from bot.render.blocks import NOTE_MENU_ACTION_ID

    huge = 10**20
    url = bot.response_url()
    value = json.dumps({"q": "moe", "o": huge})
    assert bot.click(MORE_ACTION_ID, value, channel_id="C123", response_url=url) == 200
    assert "run the command again" in bot.reply(url)["text"]
    for option in ("show", "fix"):
        url = bot.response_url()
        body = block_actions_body(
            f"{NOTE_MENU_ACTION_ID}:{huge}",
            "",
            channel_id="C123",
            response_url=url,
            action_type="overflow",
            selected_option={
                "text": {"type": "plain_text", "text": "x"},
                "value": f"{option}:{huge}",
            },
        )
        assert bot.post(body)[0] == 200
        assert "no longer there" in bot.reply(url)["text"]


def test_a_week_at_the_end_of_the_calendar_is_refused_plainly(bot: Harness) -> None:
    _, reply = bot.command("week 9999-W52")
    assert_clean(reply)
    assert "not an ISO week" in reply["text"] or "has not started" in reply["text"]


# ---------------------------------------------------------------- App Home


def test_app_home_opened_publishes_view(bot: Harness) -> None:
    bot.services.store.subscribe(TEAM, USER, ["kernels", "moe-quant"])
    status, _ = bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    assert status == 200
    call = bot.slack.wait_for("views.publish")[0]
    assert call.ok, call.response
    view = bot.slack.home_views[USER]
    assert len(view["blocks"]) <= 100
    assert validate_blocks(view["blocks"], "home") == []
    shown = json.dumps(view, ensure_ascii=False)
    assert role_action_id(UNSUBSCRIBE_ACTION_ID, "kernels") in shown
    assert role_action_id(SUBSCRIBE_ACTION_ID, "multimodal") in shown
    assert any(str(b.get("block_id", "")).startswith("note-") for b in view["blocks"])


def test_app_home_shows_the_latest_digest_for_my_roles(bot: Harness) -> None:
    services = bot.services
    services.settings = services.settings.model_copy(
        update={"channel": "C0DIGEST", "slack_api_url": bot.slack.api_url}
    )
    client = build_web_client(services.settings, token=TOKEN)
    publish_weekly_digest(
        services, client, datetime(2026, 11, 23, 9, 0, tzinfo=UTC), pacing=Pacing(0, 0)
    )
    services.store.subscribe(TEAM, USER, ["multimodal"])
    bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    bot.slack.wait_for("views.publish")
    view = bot.slack.home_views[USER]
    shown = json.dumps(view, ensure_ascii=False)
    assert "Latest digest (2026-W48) for your roles" in shown
    note_ids = [
        int(str(b["block_id"]).removeprefix("note-"))
        for b in view["blocks"]
        if str(b.get("block_id", "")).startswith("note-")
    ]
    notes = services.store.get_notes(note_ids)
    assert notes and all("multimodal" in n.roles for n in notes)


def test_messages_tab_does_not_publish(bot: Harness) -> None:
    bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "messages"}))
    bot.post(event_body({"type": "app_home_opened", "user": "U2", "tab": "home"}))
    bot.slack.wait_for("views.publish")
    time.sleep(0.2)
    assert [c.params["user_id"] for c in bot.slack.calls_for("views.publish")] == ["U2"]


def test_home_buttons_update_and_republish(bot: Harness) -> None:
    action = role_action_id(SUBSCRIBE_ACTION_ID, "multimodal")
    assert bot.click(action, "multimodal") == 200
    bot.slack.wait_for("views.publish")
    assert bot.services.store.subscriptions_of(TEAM, USER) == ["multimodal"]
    view = bot.slack.home_views[USER]
    assert role_action_id(UNSUBSCRIBE_ACTION_ID, "multimodal") in json.dumps(view)
    assert bot.click(role_action_id(UNSUBSCRIBE_ACTION_ID, "multimodal"), "multimodal") == 200
    bot.slack.wait_for("views.publish", n=2)
    assert bot.services.store.subscriptions_of(TEAM, USER) == []
    assert bot.slack.ephemerals == []


def test_digest_subscribe_button_in_channel(bot: Harness) -> None:
    assert bot.click(SUBSCRIBE_ACTION_ID, "kv-cache", channel_id="C777") == 200
    call = bot.slack.wait_for("chat.postEphemeral")[0]
    assert call.ok
    assert bot.services.store.subscriptions_of(TEAM, USER) == ["kv-cache"]
    eph = bot.slack.ephemerals[0]
    assert eph["channel"] == "C777" and eph["user"] == USER
    assert "Subscribed to `kv-cache`" in eph["text"]
    bot.click(SUBSCRIBE_ACTION_ID, "kv-cache", channel_id="C777")
    bot.slack.wait_for("chat.postEphemeral", n=2)
    assert "already subscribed" in bot.slack.ephemerals[1]["text"].lower()
    assert bot.services.store.subscriptions_of(TEAM, USER) == ["kv-cache"]


# ---------------------------------------------------------------- security


def test_forged_signature_is_401_and_changes_nothing(bot: Harness) -> None:
    url = bot.response_url()
    body = slash_command_body("subscribe moe", response_url=url)
    headers = signed_headers("not-the-secret", body)
    status, _ = bot.post(body, headers=headers)
    assert status == 401
    status, _ = bot.post(body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 401
    click = block_actions_body(SUBSCRIBE_ACTION_ID, "moe-quant", channel_id="C1")
    status, _ = bot.post(click, headers=signed_headers("wrong", click))
    assert status == 401
    time.sleep(0.3)
    assert bot.services.store.subscriptions_of(TEAM, USER) == []
    assert bot.slack.calls == []


def test_stale_timestamp_is_401(bot: Harness) -> None:
    body = slash_command_body("subscribe moe", response_url=bot.response_url())
    old = int(time.time()) - 6 * 60
    status, _ = bot.post(body, headers=signed_headers(SECRET, body, timestamp=old))
    assert status == 401
    time.sleep(0.3)
    assert bot.services.store.subscriptions_of(TEAM, USER) == []
    assert bot.slack.calls == []


def test_slack_worked_example_through_sdk_verifier() -> None:
    verifier = SignatureVerifier(SLACK_EXAMPLE_SECRET, clock=_FixedClock(1531420618 + 60))
    headers = {
        "x-slack-request-timestamp": SLACK_EXAMPLE_TS,
        "x-slack-signature": SLACK_EXAMPLE_SIG,
    }
    assert verifier.generate_signature(timestamp=SLACK_EXAMPLE_TS, body=SLACK_EXAMPLE_BODY) == (
        SLACK_EXAMPLE_SIG
    )
    assert verifier.is_valid_request(SLACK_EXAMPLE_BODY, headers)
    assert not verifier.is_valid_request(SLACK_EXAMPLE_BODY + "x", headers)
    # The real clock says the example is years old: rejected.
    assert not SignatureVerifier(SLACK_EXAMPLE_SECRET).is_valid_request(SLACK_EXAMPLE_BODY, headers)


class _FixedClock(Clock):
    def __init__(self, at: float) -> None:
        self.at = at

    def now(self) -> float:
        return self.at


def test_slack_worked_example_through_running_app(services: Services, slack: FakeSlack) -> None:
    harness = start_harness(services, slack, ingest=False)
    harness.secret = SLACK_EXAMPLE_SECRET
    try:
        # The app was built with another secret: rebuild with the example's.
        harness.server.stop()
        settings = services.settings.model_copy(update={"slack_api_url": slack.api_url})
        client = build_web_client(settings, token=TOKEN)
        app = build_app(services, client, signing_secret=SLACK_EXAMPLE_SECRET, socket_mode=False)
        harness.server = serve_in_thread(
            make_wsgi_app(
                app, HealthCheck(services.store, client), signing_secret=SLACK_EXAMPLE_SECRET
            )
        )
        old = {
            "X-Slack-Request-Timestamp": SLACK_EXAMPLE_TS,
            "X-Slack-Signature": SLACK_EXAMPLE_SIG,
            "Content-Type": "application/x-www-form-urlencoded",
        }
        status, _ = harness.post(SLACK_EXAMPLE_BODY, headers=old)
        assert status == 401
        assert slack.calls == []
        now = str(int(time.time()))
        fresh = {**old, "X-Slack-Request-Timestamp": now}
        fresh["X-Slack-Signature"] = sign(SLACK_EXAMPLE_SECRET, SLACK_EXAMPLE_BODY, now)
        status, _ = harness.post(SLACK_EXAMPLE_BODY, headers=fresh)
        # Verified, then unhandled: the example is another app's command.
        assert status == 404
    finally:
        harness.server.stop()


def test_url_verification(bot: Harness) -> None:
    status, body = bot.post(url_verification_body("chal-123"))
    assert status == 200
    assert b"chal-123" in body


# ---------------------------------------------------------------- bad input


def test_very_long_query_gets_a_clear_reply(bot: Harness) -> None:
    _, reply = bot.command("量" * 4000)
    assert_clean(reply)
    assert str(MAX_QUERY_CHARS) in reply["text"]
    _, reply = bot.command("a" * (MAX_QUERY_CHARS + 1))
    assert str(MAX_QUERY_CHARS) in reply["text"]


@pytest.mark.parametrize(
    "text",
    [
        "🚀🔥",
        "\u200bhelp\u200b",
        "\u202emoe\u202c",
        "مرحبا",
        "subscribe \u200bmoe",
        "<script>&amp;",
        "\x00\x07",
    ],
)
def test_odd_unicode(bot: Harness, text: str) -> None:
    status, reply = bot.command(text)
    assert status == 200
    assert_clean(reply)


def test_zero_width_does_not_hide_words(bot: Harness) -> None:
    _, reply = bot.command("subscribe \u200bmoe\u200d")
    assert "Subscribed to `moe-quant`" in reply["text"]
    assert bot.services.store.subscriptions_of(TEAM, USER) == ["moe-quant"]


def test_payload_without_user_is_refused(bot: Harness) -> None:
    url = bot.response_url()
    body = slash_command_body("subscribe moe", user_id="", response_url=url)
    status, raw = bot.post(body)
    assert status == 200
    assert b"names no team or user" in raw
    assert b"Traceback" not in raw
    time.sleep(0.3)
    assert bot.services.store.all_subscriptions() == {}


def test_garbage_bodies_are_4xx(bot: Harness) -> None:
    for body in ("payload=%7Bnot-json", "{]", "", "payload=" + json.dumps({"type": "x"})):
        status, raw = bot.post(body)
        assert 400 <= status < 500 or status == 200, (body, status)
        assert b"Traceback" not in raw
    assert bot.services.store.all_subscriptions() == {}
    status, _ = bot.request("GET", "/slack/events")
    assert status == 405
    status, _ = bot.request("GET", "/nope")
    assert status == 404


def test_failure_answers_briefly_without_traceback(bot: Harness) -> None:
    """A real failure (the table is gone): the user gets one calm line, the log the rest."""
    engine = bot.services.store.engine
    with engine.begin() as conn:
        conn.execute(sa.text("ALTER TABLE subscriptions RENAME TO subscriptions_away"))
    try:
        _, reply = bot.command("subscribe moe")
    finally:
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE subscriptions_away RENAME TO subscriptions"))
    assert "went wrong" in reply["text"]
    assert "subscriptions" not in texts(reply)
    assert_clean(reply)


# ---------------------------------------------------------------- the process environment


class WatchedEnviron(MutableMapping[str, str]):
    """os.environ's contents, recording every write and removal."""

    def __init__(self, start: Mapping[str, str]) -> None:
        self.data = dict(start)
        self.changes: list[str] = []

    def __getitem__(self, key: str) -> str:
        return self.data[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.changes.append(f"set {key}")
        self.data[key] = value

    def __delitem__(self, key: str) -> None:
        self.changes.append(f"removed {key}")
        del self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the Slack side is under test
def test_building_and_serving_leave_the_environment_as_found(
    services: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bolt reads SLACK_BOT_TOKEN itself: the app is built, and answers, with the variable
    set as an operator sets it, and nothing writes or removes a variable meanwhile."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SECRET)
    watched = WatchedEnviron(os.environ)
    before = dict(watched)
    monkeypatch.setattr(os, "environ", watched)
    harness = start_harness(services, slack)
    try:
        status, reply = harness.command("help")
        assert status == 200 and "/prdigest" in reply["text"]
        assert harness.click(SUBSCRIBE_ACTION_ID, "moe-quant", channel_id="C1") == 200
        slack.wait_for("chat.postEphemeral")
    finally:
        harness.server.stop()
    assert watched.changes == []
    assert dict(watched) == before
