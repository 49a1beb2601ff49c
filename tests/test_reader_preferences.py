"""Readers in control, end to end: verdict filters, saved searches, pauses and `week`.

Commands arrive as signed HTTP requests through the real Bolt app; the weekly DMs are
read back from the fake Slack Web API's recorded calls. SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.delivery import Pacing, RunResult, publish_weekly_digest
from bot.domain import Note, Verdict
from bot.render.blocks import SUBSCRIBE_ACTION_ID
from bot.render.replies import role_action_id
from bot.slack_client import build_web_client
from tests.conftest import DIGEST_CHANNEL
from tests.fakeslack import FakeSlack
from tests.slacksign import event_body
from tests.test_slack_app import TEAM, TOKEN, USER, Harness, assert_clean
from tests.test_slack_app import bot as bot  # the app over HTTP, as a fixture

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # Monday of 2026-W48


def publish(harness: Harness, now: datetime = NOW) -> RunResult:
    services = harness.services
    services.settings = services.settings.model_copy(
        update={"channel": DIGEST_CHANNEL, "slack_api_url": harness.slack.api_url}
    )
    client = build_web_client(services.settings, token=TOKEN)
    return publish_weekly_digest(services, client, now, pacing=Pacing(0, 0))


def dm_note_ids(slack: FakeSlack, user: str) -> list[int]:
    return [
        int(str(b["block_id"]).removeprefix("note-"))
        for m in slack.messages_in(FakeSlack.dm_channel(user))
        for b in m.get("blocks", [])
        if str(b.get("block_id", "")).startswith("note-")
    ]


def dm_texts(slack: FakeSlack, user: str) -> str:
    return json.dumps(slack.messages_in(FakeSlack.dm_channel(user)), ensure_ascii=False)


def levels(harness: Harness, user: str = USER) -> dict[str, Verdict | None]:
    return {s.role: s.level for s in harness.services.store.readers.role_subscriptions(TEAM, user)}


def reply_text(harness: Harness, text: str, **extra: Any) -> str:
    _, reply = harness.command(text, **extra)
    assert_clean(reply)
    return str(reply["text"])


# ---------------------------------------------------------------- filtered subscriptions


def test_verdict_filters_are_set_shown_and_kept(bot: Harness) -> None:
    text = reply_text(bot, "subscribe moe deep")
    assert "Subscribed to `moe-quant`" in text and "deep reads only" in text
    assert "Subscribed to `kv-cache`" in reply_text(bot, "subscribe kv 浏览")
    assert levels(bot) == {"moe-quant": Verdict.DEEP, "kv-cache": Verdict.SKIM}

    # Re-subscribing without a filter (command or buttons) keeps the filter.
    assert (
        reply_text(bot, "subscribe moe")
        == "Already subscribed to `moe-quant` (MoE 与量化), deep reads only."
    )
    bot.click(SUBSCRIBE_ACTION_ID, "moe-quant", channel_id="C777")
    eph = bot.slack.wait_for("chat.postEphemeral")[0].params
    assert "Already subscribed" in eph["text"] and "deep reads only" in eph["text"]
    bot.click(role_action_id(SUBSCRIBE_ACTION_ID, "kernels"), "kernels")
    bot.slack.wait_for("views.publish")
    assert levels(bot) == {
        "moe-quant": Verdict.DEEP,
        "kv-cache": Verdict.SKIM,
        "kernels": None,
    }
    home = json.dumps(bot.slack.home_views[USER], ensure_ascii=False)
    assert "deep reads only" in home and "deep and skim reads" in home

    listed = reply_text(bot, "list")
    assert "`moe-quant` (MoE 与量化), deep reads only" in listed
    assert "`kv-cache` (KV 缓存), deep and skim reads" in listed

    # Bad filter words change nothing.
    for bad in ("subscribe moe deeep", "subscribe kernels skip", "subscribe moe deep skim"):
        assert "verdict filter" in reply_text(bot, bad)
    assert levels(bot)["moe-quant"] is Verdict.DEEP and levels(bot)["kernels"] is None

    assert "`moe-quant` now sends every note" in reply_text(bot, "subscribe moe all")
    assert levels(bot)["moe-quant"] is None
    assert "`moe-quant` now sends deep reads only" in reply_text(bot, "subscribe moe deep")


def _expected(notes: list[Note], wanted: dict[str, int]) -> set[int]:
    return {
        n.id
        for n in notes
        if any(r in n.roles and n.verdict_for(r).rank <= rank for r, rank in wanted.items())
    }


def write_notes(harness: Harness, name: str, notes: list[tuple[str, str]]) -> None:
    """A note file in the digests folder: (title, paragraph) pairs."""
    blocks = ["vllm-project/vllm"] + [f"{t}\n\n{p}" for t, p in notes]
    folder = harness.services.settings.digests_dir
    (folder / name).write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


MOE_NOTES = [
    ("MoE FP8 量化内核重写 (#95001)", "值得精读，适合做 MoE 量化与 FP8 内核的工程师。"),
    ("MoE 量化配置清理 (#95002)", "值得快速浏览而非精读，做 MoE 量化的工程师了解即可。"),
    ("MoE 量化日志措辞 (#95003)", "可略过，只是 MoE 量化模块的日志措辞调整。"),
]


def test_weekly_dm_respects_verdict_filters(bot: Harness) -> None:
    write_notes(bot, "moe.txt", MOE_NOTES)
    bot.command("subscribe moe deep")
    bot.command("subscribe moe skim", user="U2")
    bot.command("subscribe moe", user="U3")
    publish(bot)
    notes = bot.services.store.list_notes()
    verdicts = {n.verdict_for("moe-quant") for n in notes if "moe-quant" in n.roles}
    assert verdicts == set(Verdict), "the notes cover every verdict"
    for user, rank in ((USER, 0), ("U2", 1), ("U3", 2)):
        got = dm_note_ids(bot.slack, user)
        assert len(got) == len(set(got)), "each note once"
        assert set(got) == _expected(notes, {"moe-quant": rank}), user
    expected = _expected(notes, {"moe-quant": 0})
    # App Home lists only what the filters let through.
    bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    bot.slack.wait_for("views.publish")
    shown = [
        int(str(b["block_id"]).removeprefix("note-"))
        for b in bot.slack.home_views[USER]["blocks"]
        if str(b.get("block_id", "")).startswith("note-")
    ]
    assert shown and set(shown) <= expected
