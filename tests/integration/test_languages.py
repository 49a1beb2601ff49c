"""Each reader in their own language, through Slack's wire: signed requests to the app served
over HTTP, the fake Slack answering `users.info` with each reader's locale, and the store on
SQLite and PostgreSQL.

The notes here are written in English only, so that for an English reader any Chinese
character outside a code span (where role aliases and commands are shown) is the bot's own
words left untranslated. A Chinese reader is checked against the English catalogue: no
phrase of four words or more from it may reach them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from babel.messages.pofile import read_po
from pydantic import SecretStr

from bot.delivery.weekly import publish_weekly_digest
from bot.i18n.catalogues import po_path
from bot.i18n.texts import Language
from bot.render.blocks import (
    FIX_OPTION,
    MORE_ACTION_ID,
    NOTE_MENU_ACTION_ID,
    SHOW_OPTION,
    SUBSCRIBE_ACTION_ID,
)
from bot.render.replies import MorePage
from bot.services import Services, ingest_paths
from bot.slack.client import build_web_client
from tests.support.delivery import FAST, NOW
from tests.support.fakeslack import FakeSlack
from tests.support.slackapp import TEAM, Harness, assert_clean, start_harness
from tests.support.slacksign import (
    block_actions_body,
    event_body,
    slash_command_body,
    view_submission_body,
)
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN

ENGLISH = "U0ENGLISH"  # Slack: en-US
CHINESE = "U0CHINESE"  # Slack: zh-CN
UNSAID = "U0UNSAID"  # Slack gives no locale

NOTES = """\
vllm-project/vllm

Fused MoE kernel gains FP8 block quantization (#41001)

Worth a close read for anyone who owns quantization or MoE layers: the fused MoE kernel
now takes block-wise FP8 scales, and the weight loader checks their shapes at start-up.

KV cache blocks can be offloaded to CPU memory (#41002)

Worth a skim for KV cache engineers: evicted blocks go to pinned CPU memory and come back
on a prefix hit. Others can skip it.

Speculative decoding drafts share the target's KV cache (#41003)

Worth a close read for speculative decoding engineers: the draft model now reads the
target model's KV cache blocks instead of keeping its own copy.
"""

_CJK = re.compile(r"[\u2e80-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_CODE = re.compile(r"`[^`]*`")
_menus = iter(range(1, 1_000_000))


def shown_texts(payload: Any) -> list[str]:
    """Every text a person reads in a payload: fallback texts, mrkdwn and plain_text
    objects (titles, buttons, labels, options, placeholders) and a modal's field errors."""
    out: list[str] = []
    if isinstance(payload, dict):
        for key, value in payload.items():
            if key in ("text", "errors") and isinstance(value, str):
                out.append(value)
            elif key == "errors" and isinstance(value, dict):
                out.extend(str(v) for v in value.values())
            else:
                out.extend(shown_texts(value))
    elif isinstance(payload, list):
        for item in payload:
            out.extend(shown_texts(item))
    return out


def chinese_outside_code(payload: Any) -> list[str]:
    """The texts that hold a Chinese character outside a code span."""
    return [t for t in shown_texts(payload) if _CJK.search(_CODE.sub("", t))]


def _phrases(language: Language) -> set[str]:
    """Every phrase of four words or more of a catalogue, between its placeholders and code
    spans (commands and aliases read the same in every language)."""
    with po_path(language).open("rb") as source:
        catalog = read_po(source)
    phrases = set()
    for message in catalog:
        if not message.id:
            continue
        strings = message.string if isinstance(message.string, list | tuple) else [message.string]
        for string in strings:
            for part in re.split(r"\{[^{}]*\}|`[^`]*`|\n", string):
                phrase = part.strip(" .,;:!?()“”—·…")
                if len(re.findall(r"[A-Za-z]+", phrase)) >= 4:
                    phrases.add(phrase)
    return phrases


def english_phrases() -> set[str]:
    """The English catalogue's phrases that the Chinese one does not share (a usage line
    such as `lang [zh|en|auto]` reads the same in both)."""
    return _phrases(Language.EN) - _phrases(Language.ZH)


def english_in(payload: Any, phrases: set[str]) -> list[str]:
    texts = shown_texts(payload)
    return sorted({p for p in phrases for t in texts if p in t})


@pytest.fixture
def bot(services: Services, slack: FakeSlack, tmp_path: Path) -> Iterator[Harness]:
    """The app over HTTP with three English notes, its digest channel on the fake Slack,
    every member an editor, and three readers: English, Chinese, and one Slack says
    nothing of."""
    notes = tmp_path / "english.txt"
    notes.write_text(NOTES, encoding="utf-8")
    ingest_paths(services, [notes])
    services.settings = services.settings.model_copy(
        update={
            "channel": DIGEST_CHANNEL,
            "slack_api_url": slack.api_url,
            "slack_bot_token": SecretStr(SLACK_TOKEN),
        }
    )
    slack.set_user(ENGLISH, tz="America/Los_Angeles", locale="en-US")
    slack.set_user(CHINESE, tz="Asia/Shanghai", locale="zh-CN")
    slack.set_user(UNSAID, tz="Europe/Berlin")
    harness = start_harness(services, slack, ingest=False)
    try:
        yield harness
    finally:
        harness.server.stop()


def reply_to(bot: Harness, body_for_url: Any) -> dict[str, Any]:
    """Post a request built for a fresh response_url; the payload sent to it."""
    url = bot.response_url()
    assert bot.post(body_for_url(url))[0] == 200
    return bot.reply(url)


def menu(bot: Harness, user: str, option: str, url: str) -> str:
    note_id = bot.services.store.list_notes()[0].id
    return block_actions_body(
        f"{NOTE_MENU_ACTION_ID}:{note_id}",
        "",
        user_id=user,
        channel_id="C123",
        response_url=url,
        trigger_id=f"trigger-lang-{next(_menus)}",
        action_type="overflow",
        selected_option={
            "value": f"{option}:{note_id}",
            "text": {"type": "plain_text", "text": "x"},
        },
    )


def ephemeral_after(bot: Harness, send: Callable[[], object]) -> dict[str, Any]:
    """The ephemeral message (chat.postEphemeral) that follows a request."""
    before = len(bot.slack.ephemerals)
    send()
    deadline = time.monotonic() + 10
    while len(bot.slack.ephemerals) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    return bot.slack.ephemerals[-1]


def every_surface(bot: Harness, user: str) -> dict[str, Any]:
    """What `user` reads: replies to commands, buttons and menus, App Home, the fix modal,
    its field errors and its confirmation, and their weekly DM."""
    slack = bot.slack
    seen: dict[str, Any] = {}
    for name, text in (
        ("help", "help"),
        ("roles", "roles"),
        ("lookup", "moe"),
        ("search", "pinned cpu memory"),
        ("subscribe", "subscribe moe kv spec"),
        ("unsubscribe", "unsubscribe spec"),
        ("list", "list"),
        ("watch", "watch offloaded"),
        ("unknown role", "subscribe nope"),
        ("bad pause", "pause someday"),
        ("too long", "x" * 600),
        ("language", "lang"),
        ("week", "week"),
        ("budget", "budget"),
        ("budget set", "budget 1"),
        ("bad budget", "budget lots"),
        ("dm", "dm"),
        ("dm set", "dm tue 07:30"),
        ("bad dm", "dm someday"),
        ("dm off", "dm off"),
        ("dm on", "dm on"),
    ):
        status, seen[name] = bot.command(text, user=user)
        assert status == 200
    more = MorePage("kv", 0).encode()
    seen["more button"] = reply_to(
        bot,
        lambda url: block_actions_body(
            MORE_ACTION_ID, more, user_id=user, channel_id="C1", response_url=url
        ),
    )
    seen["whole note"] = reply_to(bot, lambda url: menu(bot, user, SHOW_OPTION, url))
    opened = len(slack.opened_views)
    assert bot.post(menu(bot, user, FIX_OPTION, bot.response_url()))[0] == 200
    deadline = time.monotonic() + 10
    while len(slack.opened_views) == opened and time.monotonic() < deadline:
        time.sleep(0.05)
    modal = slack.opened_views[-1]
    seen["fix modal"] = modal
    status, raw = bot.post(view_submission_body(modal, {}, user_id=user))
    assert status == 200
    seen["fix form errors"] = json.loads(raw)
    fixed = {
        "roles": {"roles": {"selected_options": [{"value": "kernels"}]}},
        "primary": {"primary": {"selected_option": {"value": "kernels"}}},
        "verdict": {"verdict": {"selected_option": {"value": "skim"}}},
    }
    seen["fix saved"] = ephemeral_after(
        bot, lambda: bot.post(view_submission_body(modal, fixed, user_id=user))
    )
    seen["subscribe button"] = ephemeral_after(
        bot,
        lambda: bot.post(
            block_actions_body(SUBSCRIBE_ACTION_ID, "multimodal", user_id=user, channel_id="C1")
        ),
    )
    published = slack.count("views.publish")
    bot.post(event_body({"type": "app_home_opened", "user": user, "tab": "home"}))
    slack.wait_for("views.publish", n=published + 1)
    seen["App Home"] = slack.home_views[user]
    client = build_web_client(bot.services.settings)
    publish_weekly_digest(bot.services, client, NOW, pacing=FAST)
    seen["DM"] = slack.messages_in(FakeSlack.dm_channel(user))
    assert seen["DM"], "the reader's DM was sent"
    closing = left_out_button(seen["DM"])  # a budget of 1: the rest are counted
    seen["left-out page"] = reply_to(
        bot,
        lambda url: block_actions_body(
            MORE_ACTION_ID, closing["value"], user_id=user, channel_id="C1", response_url=url
        ),
    )
    return seen


def left_out_button(dm: list[dict[str, Any]]) -> dict[str, Any]:
    """The button of a DM's closing line (the notes left out over the reader's budget)."""
    buttons = [
        element
        for message in dm
        for block in message["blocks"]
        if block.get("block_id") == "left-out"
        for element in block["elements"]
    ]
    assert len(buttons) == 1, "one closing line, at the end of the DM"
    return buttons[0]


def home_text(seen: dict[str, Any]) -> str:
    return json.dumps(seen["App Home"], ensure_ascii=False)


def test_an_english_reader_sees_no_chinese_outside_code(bot: Harness) -> None:
    seen = every_surface(bot, ENGLISH)
    for name, payload in seen.items():
        assert chinese_outside_code(payload) == [], name
    assert "Subscribed to `moe-quant` (MoE &amp; quantization)" in seen["subscribe"]["text"]
    assert "`量化`" in json.dumps(seen["roles"], ensure_ascii=False)  # aliases, as code
    assert "*deep*" in json.dumps(seen["DM"], ensure_ascii=False)
    assert seen["fix saved"]["text"].startswith("Fixed “")
    assert seen["subscribe button"]["text"].startswith("Subscribed to `multimodal`")
    assert_clean(seen["help"])
    assert "up to 1 note in full" in seen["budget set"]["text"]
    assert "`lots` is not a budget" in seen["bad budget"]["text"]
    assert "goes out on Tuesdays at 07:30 (America/Los_Angeles" in seen["dm set"]["text"]
    assert "is not a day and time" in seen["bad dm"]["text"]
    assert "Weekly DMs stopped" in seen["dm off"]["text"]
    assert "DMs are on again" in seen["dm on"]["text"]
    assert "on Tuesdays at 07:30" in home_text(seen) and "up to 1 note in full" in home_text(seen)
    closing = json.dumps(seen["DM"][-1]["blocks"][-2:], ensure_ascii=False)
    assert "*1 more note for you this week*" in closing and "budget of 1" in closing
    assert left_out_button(seen["DM"])["text"]["text"] == "Show it"
    assert seen["left-out page"]["text"].startswith("Also for you")


def test_a_chinese_reader_sees_none_of_the_english_ui(bot: Harness) -> None:
    seen = every_surface(bot, CHINESE)
    phrases = english_phrases()
    assert len(phrases) > 50  # the check has something to look for
    for name, payload in seen.items():
        assert english_in(payload, phrases) == [], name
        assert any(_CJK.search(t) for t in shown_texts(payload)), name
    assert "已订阅 `moe-quant` (MoE 与量化)" in seen["subscribe"]["text"]
    assert "精读" in json.dumps(seen["DM"], ensure_ascii=False)
    assert seen["fix saved"]["text"].startswith("已修正“")
    assert seen["subscribe button"]["text"].startswith("已订阅 `multimodal`")
    modal = seen["fix modal"]
    assert modal["title"]["text"] == "修正角色" and modal["submit"]["text"] == "保存"
    assert "最多完整显示 1 条笔记" in seen["budget set"]["text"]
    assert "`lots` 不是有效的阅读额度" in seen["bad budget"]["text"]
    assert "每周二 07:30" in seen["dm set"]["text"] and "Asia/Shanghai" in seen["dm set"]["text"]
    assert "`someday` 不是有效的星期和时间" in seen["bad dm"]["text"]
    assert "每周私信已停止" in seen["dm off"]["text"]
    assert "私信已重新开启" in seen["dm on"]["text"]
    assert "每周二 07:30" in home_text(seen) and "最多完整显示 1 条笔记" in home_text(seen)
    closing = json.dumps(seen["DM"][-1]["blocks"][-2:], ensure_ascii=False)
    assert "*本周另有 1 篇给你*" in closing and "阅读额度" in closing
    assert left_out_button(seen["DM"])["text"]["text"] == "查看这一篇"
    assert seen["left-out page"]["text"].startswith("另外给你的 · ")


def test_lang_wins_over_slack_and_auto_gives_slack_back(bot: Harness) -> None:
    store = bot.services.store
    _, chosen = bot.command("lang en", user=CHINESE)
    assert "Done: prdigest now writes to you in English." in chosen["text"]
    assert store.readers.settings(TEAM, CHINESE).language == "en"
    _, helped = bot.command("help", user=CHINESE)
    assert chinese_outside_code(helped) == []
    _, shown = bot.command("lang", user=CHINESE)
    assert "You read prdigest in English: you chose it." in shown["text"]
    _, back = bot.command("lang auto", user=CHINESE)
    assert "好的：prdigest 重新跟随你的 Slack 语言。" in back["text"] and "zh-CN" in back["text"]
    assert store.readers.settings(TEAM, CHINESE).language is None
    _, other = bot.command("lang 中文", user=ENGLISH)
    assert "好的：prdigest 今后用中文和你交流。" in other["text"]
    _, refused = bot.command("lang fr", user=ENGLISH)
    assert "is not a language" not in refused["text"]  # said in Chinese now
    assert "不是可选的语言" in refused["text"]
    assert store.readers.settings(TEAM, ENGLISH).language == "zh"


def test_slack_is_asked_once_a_day_whatever_the_reader_chose(bot: Harness) -> None:
    """A reader's first `lang zh` caches their Slack language, so `lang auto` later finds it;
    further commands that day ask Slack nothing."""
    bot.slack.reset_calls()
    _, chosen = bot.command("lang zh", user=ENGLISH)
    assert "好的：prdigest 今后用中文和你交流。" in chosen["text"]
    _, listed = bot.command("list", user=ENGLISH)
    assert "你没有订阅任何角色。" in listed["text"]
    _, back = bot.command("lang auto", user=ENGLISH)
    assert "the language Slack shows you (en-US)" in back["text"]
    assert bot.slack.count("users.info") == 1


def test_without_a_locale_prdigest_language_decides(bot: Harness) -> None:
    _, both = bot.command("subscribe kv", user=UNSAID)  # default: both, today's form
    assert "Subscribed to `kv-cache` (KV 缓存" in both["text"]
    bot.services.settings = bot.services.settings.model_copy(update={"language": "zh"})
    _, reply = bot.command("list", user=UNSAID)
    assert "你订阅了 `kv-cache`" in reply["text"]
    _, shown = bot.command("lang", user=UNSAID)
    assert "本工作区的默认设置" in shown["text"]
    # Slack unreachable for a reader never asked before: the same default.
    bot.slack.fail("users.info", "fatal_error", times=5)
    _, new = bot.command("list", user="U0NEWCOMER")
    assert "你没有订阅任何角色。" in new["text"]


def test_the_channel_follows_prdigest_language_and_each_dm_its_reader(bot: Harness) -> None:
    services = bot.services
    services.settings = services.settings.model_copy(update={"language": "en"})
    for user in (ENGLISH, CHINESE):
        services.store.subscribe(TEAM, user, ["moe-quant", "kv-cache"])
    client = build_web_client(services.settings)
    publish_weekly_digest(services, client, NOW, pacing=FAST)
    channel = bot.slack.messages_in(DIGEST_CHANNEL)
    assert channel and chinese_outside_code(channel) == []
    assert "vLLM reading list · 2026-W48" in channel[0]["text"]
    chinese_dm = bot.slack.messages_in(FakeSlack.dm_channel(CHINESE))
    assert chinese_dm[0]["text"].startswith("vLLM 精读推荐 · 2026-W48：给你的")
    english_dm = bot.slack.messages_in(FakeSlack.dm_channel(ENGLISH))
    assert chinese_outside_code(english_dm) == []


def test_the_ack_never_waits_for_users_info(bot: Harness) -> None:
    """Slack answers users.info slowly: the command is acknowledged at once, and the reply
    that follows is in the reader's language."""
    bot.slack.set_latency("users.info", 1.5)
    url = bot.response_url()
    started = time.monotonic()
    status, _ = bot.post(slash_command_body("help", user_id=CHINESE, response_url=url))
    acked = time.monotonic() - started
    assert status == 200 and acked < 1.0
    reply = bot.reply(url)
    assert "prdigest 命令" in reply["text"]
