"""A reader's own settings end to end: `/prdigest budget` and `/prdigest dm` through the real
Bolt app over HTTP, the DM that holds at most the budget in full with the rest counted and
listed by its button, and App Home. SQLite and PostgreSQL; Slack is the fake at its wire."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.delivery.weekly import Pacing, publish_weekly_digest
from bot.domain import Confidence, Note
from bot.render.blocks import MORE_ACTION_ID
from bot.services import Services, ingest_default
from bot.slack.client import build_web_client
from bot.store.ledger import Ledger
from tests.support.fakeslack import FakeSlack
from tests.support.slackapp import TEAM, TOKEN, USER, Harness, assert_clean, start_harness
from tests.support.slacksign import event_body
from tests.support.testenv import DIGEST_CHANNEL

# Nine MoE notes: three deep, five skim (one of them unsure), one to skip.
NINE = [
    ("FP8 MoE 量化内核改进 (#98001)", "值得精读，适合做 MoE 量化与 FP8 内核的工程师。"),
    ("MoE 量化配置小修 (#98002)", "快速浏览即可，做 MoE 量化的工程师了解一下。"),
    ("MoE 量化文档错字 (#98003)", "可以略过，只是 MoE 量化文档里的错字。"),
    ("MoE 量化 (#98004)", "MoE 量化。"),
    ("MoE 量化日志调整 (#98005)", "浏览一下即可，MoE 量化相关的日志输出调整。"),
    ("FP8 MoE 路由内核重写 (#98006)", "值得精读，适合做 MoE 量化与 FP8 内核的工程师。"),
    ("MoE 量化测试补充 (#98007)", "快速浏览即可，做 MoE 量化的工程师了解一下。"),
    ("MoE FP8 量化精度修复 (#98008)", "值得精读，做 MoE 量化与 FP8 内核的工程师都该看。"),
    ("MoE 量化参数重命名 (#98009)", "浏览一下即可，MoE 量化相关的参数改名。"),
]


@pytest.fixture
def app(services: Services, slack: FakeSlack) -> Iterator[Harness]:
    """The app over HTTP with the nine notes waiting to be posted (no other notes)."""
    services.settings = services.settings.model_copy(
        update={"channel": DIGEST_CHANNEL, "slack_api_url": slack.api_url}
    )
    blocks = ["vllm-project/vllm"]
    for title, paragraph in NINE:
        blocks += [title, paragraph]
    (services.settings.digests_dir / "nine.txt").write_text(
        "\n\n".join(blocks) + "\n", encoding="utf-8"
    )
    harness = start_harness(services, slack, ingest=False)
    try:
        yield harness
    finally:
        harness.server.stop()


def post(harness: Harness) -> None:
    client = build_web_client(harness.services.settings, token=TOKEN)
    now = datetime.now(UTC)
    publish_weekly_digest(harness.services, client, now, pacing=Pacing(0, 0))


def say(harness: Harness, text: str, user: str = USER) -> str:
    _, reply = harness.command(text, user=user)
    assert_clean(reply)
    return str(reply["text"])


def note_ids(message: dict[str, Any]) -> list[int]:
    return [
        int(str(b["block_id"]).removeprefix("note-"))
        for b in message.get("blocks", [])
        if str(b.get("block_id", "")).startswith("note-")
    ]


def best_first(note: Note) -> tuple[int, int, float, int]:
    """The order the issue asks for, written out: the reader's verdict (MoE), confidence,
    newest, then the higher id."""
    unsure = 1 if note.verdict_confidence is Confidence.LOW else 0
    return (note.verdict_for("moe-quant").rank, unsure, -note.ingested_at.timestamp(), -note.id)


def test_a_dm_shows_the_budget_in_full_and_counts_the_rest(app: Harness) -> None:
    for user in (USER, "UALL", "UTHREE"):
        say(app, "subscribe moe", user=user)
    assert "every note in full" in say(app, "budget all", user="UALL")
    assert "up to 3 notes in full" in say(app, "budget 3", user="UTHREE")
    ingest_default(app.services)
    notes = [n for n in app.services.store.list_notes() if "moe-quant" in n.roles]
    assert len(notes) == 9
    verdicts = {n.verdict_for("moe-quant").value for n in notes}
    assert verdicts == {"deep", "skim", "skip"}
    assert any(n.verdict_confidence is Confidence.LOW for n in notes)
    ranked = [n.id for n in sorted(notes, key=best_first)]
    post(app)

    [dm] = app.slack.messages_in(FakeSlack.dm_channel(USER))
    assert note_ids(dm) == ranked[:5], "the five best, best first"
    closing = json.dumps(dm["blocks"][-2:], ensure_ascii=False)
    assert "4 more notes for you this week" in closing and "budget of 5" in closing
    [button] = dm["blocks"][-1]["elements"]
    assert button["action_id"] == MORE_ACTION_ID and button["text"]["text"] == "Show the 4 more"
    url = app.response_url()
    app.click(MORE_ACTION_ID, button["value"], channel_id="DU123", response_url=url)
    listed = app.reply(url)
    assert_clean(listed)
    assert note_ids(listed) == ranked[5:], "the button lists the four left out, best first"
    assert "Also for you" in listed["text"]

    [everything] = app.slack.messages_in(FakeSlack.dm_channel("UALL"))
    assert note_ids(everything) == ranked and "more notes for you" not in json.dumps(everything)
    [three] = app.slack.messages_in(FakeSlack.dm_channel("UTHREE"))
    assert note_ids(three) == ranked[:3]
    assert "6 more notes for you this week" in json.dumps(three, ensure_ascii=False)
    # Sent once: a second post has nothing new for anyone.
    post(app)
    assert len(app.slack.messages_in(FakeSlack.dm_channel(USER))) == 1
    # A button of a DM that no longer exists says so.
    url = app.response_url()
    gone = '{"q": "0123456789abcdef", "o": 0, "k": "left"}'
    app.click(MORE_ACTION_ID, gone, channel_id="DU123", response_url=url)
    assert "no longer works" in app.reply(url)["text"]


def test_budget_is_shown_set_and_bad_values_change_nothing(app: Harness) -> None:
    readers = app.services.store.readers
    shown = say(app, "budget")
    assert "up to 5 notes in full" in shown and "team's default" in shown
    assert "up to 3 notes in full" in say(app, "budget 3")
    assert readers.settings(TEAM, USER).budget == 3
    for bad, says in (
        ("budget 0", "`0` is not a budget"),
        ("budget 21", "`21` is not a budget"),
        ("budget lots", "`lots` is not a budget"),
        ("budget <!here>", "`&lt;!here&gt;` is not a budget"),
        ("budget 3 4", "`3 4` is not a budget"),
    ):
        text = say(app, bad)
        assert says in text and "Nothing was changed" in text, bad
    assert readers.settings(TEAM, USER).budget == 3
    assert "every note in full" in say(app, "budget all")
    assert readers.settings(TEAM, USER).budget == 0
    assert "team's default" in say(app, "budget default")
    assert readers.settings(TEAM, USER).budget is None


def test_dm_day_and_time_are_shown_set_and_bad_values_change_nothing(app: Harness) -> None:
    app.slack.set_user(USER, tz="America/Los_Angeles", locale="en-US")
    readers = app.services.store.readers
    say(app, "subscribe moe")
    shown = say(app, "dm")
    assert "follows the team's schedule on your own clock" in shown
    assert "(America/Los_Angeles, your Slack time zone)" in shown and "Next: Mon " in shown
    assert app.slack.count("users.info") == 1
    said = say(app, "dm 周二 7:30")
    assert "goes out on Tuesdays at 07:30 (America/Los_Angeles" in said and "Next: Tue " in said
    assert "07:30" in said.split("Next: ")[1]
    own = readers.settings(TEAM, USER)
    assert (own.dm_weekday, own.dm_time.isoformat() if own.dm_time else None) == (1, "07:30:00")
    for bad in ("dm tue 25:00", "dm someday 09:00", "dm tue", "dm 09:00", "dm tue 7:5"):
        text = say(app, bad)
        assert "is not a day and time" in text and "Nothing was changed" in text, bad
    assert readers.settings(TEAM, USER) == own
    assert "Weekly DMs stopped" in say(app, "dm off")
    assert "already off" in say(app, "dm off")
    assert "are off" in say(app, "dm") and readers.settings(TEAM, USER).dm_off
    back = say(app, "dm on")
    assert "DMs are on again" in back and "Tuesdays at 07:30" in back
    assert "follows the team's schedule" in say(app, "dm default")
    assert app.slack.count("users.info") == 1, "Slack's answer is kept for a day"


def test_app_home_shows_when_dms_come_and_how_many_notes(app: Harness) -> None:
    app.slack.set_user(USER, tz="Asia/Shanghai")
    say(app, "subscribe moe")
    say(app, "budget 3")
    say(app, "dm fri 18:00")
    app.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    app.slack.wait_for("views.publish")
    home = json.dumps(app.slack.home_views[USER], ensure_ascii=False)
    assert "Fridays at 18:00 (Asia/Shanghai" in home and "up to 3 notes in full" in home
    say(app, "dm off")
    app.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    app.slack.wait_for("views.publish", n=2)
    assert "Your weekly DMs are off" in json.dumps(app.slack.home_views[USER], ensure_ascii=False)


def test_dm_off_stops_the_dms_of_post_and_keeps_subscriptions(app: Harness) -> None:
    say(app, "subscribe moe")
    say(app, "watch fp8")
    say(app, "dm off")
    post(app)
    assert app.slack.messages_in(FakeSlack.dm_channel(USER)) == []
    reader = app.services.store.readers.reader(TEAM, USER)
    assert [s.role for s in reader.roles] == ["moe-quant"] and reader.watches == ("fp8",)
    assert Ledger(app.services.store.engine).reader_dms(TEAM, USER) == []
