"""Readers in control, end to end: verdict filters, saved searches, pauses and `week`.

Commands arrive as signed HTTP requests through the real Bolt app; the weekly DMs are
read back from the fake Slack Web API's recorded calls. SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.delivery.weekly import Pacing, RunResult, publish_weekly_digest
from bot.domain import Note, Verdict
from bot.notes.search import text_query
from bot.render.blocks import MORE_ACTION_ID, SUBSCRIBE_ACTION_ID
from bot.render.replies import role_action_id
from bot.services import ingest_default
from bot.slack.client import build_web_client
from tests.support.fakeslack import FakeSlack
from tests.support.slackapp import TEAM, TOKEN, USER, Harness, assert_clean
from tests.support.slacksign import event_body
from tests.support.testenv import DIGEST_CHANNEL

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)  # Monday of 2026-W48


def publish(harness: Harness, now: datetime = NOW) -> RunResult:
    """`prdigest post` at `now`: the channel digest, then every reader's DM. These tests
    are about which notes a DM holds, not how many: every note is shown in full."""
    services = harness.services
    services.settings = services.settings.model_copy(
        update={"channel": DIGEST_CHANNEL, "slack_api_url": harness.slack.api_url, "dm_budget": 0}
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


def dm_sections(slack: FakeSlack, user: str) -> dict[str, list[int]]:
    """A reader's DMs as heading text -> note ids under it, in order."""
    sections: dict[str, list[int]] = {}
    current = ""
    for message in slack.messages_in(FakeSlack.dm_channel(user)):
        for block in message.get("blocks", []):
            block_id = str(block.get("block_id", ""))
            if block_id.startswith("note-"):
                sections.setdefault(current, []).append(int(block_id.removeprefix("note-")))
            elif block["type"] == "section":
                current = str(block["text"]["text"]).split(" — ")[0].strip("*")
    return sections


# ---------------------------------------------------------------- watches


def test_watch_unwatch_and_bad_input(bot: Harness) -> None:
    readers = bot.services.store.readers
    text = reply_text(bot, "watch fp8 marlin")
    assert "Watching “fp8 marlin”" in text and "(1 stored note matches now;" in text
    assert "already watch" in reply_text(bot, "watch  FP8 Marlin")
    hostile = reply_text(bot, "watch <!channel> cuda")
    assert "&lt;!channel&gt;" in hostile
    assert readers.watches_of(TEAM, USER) == ["fp8 marlin", "<!channel> cuda"]
    assert "You watch “fp8 marlin”, “&lt;!channel&gt; cuda”." in reply_text(bot, "list")
    bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    bot.slack.wait_for("views.publish")
    assert "“fp8 marlin”" in json.dumps(bot.slack.home_views[USER], ensure_ascii=False)

    for bad, says in (
        ("watch", "Name what to watch"),
        ("watch " + "x" * 101, "limited to 100"),
        ("watch 🚀 !!", "no words to search"),
        ("unwatch", "Name the search"),
        ("unwatch nothing like it", "You do not watch"),
    ):
        assert says in reply_text(bot, bad), bad
    assert readers.watches_of(TEAM, USER) == ["fp8 marlin", "<!channel> cuda"]

    assert "Stopped watching “fp8 marlin”" in reply_text(bot, "unwatch FP8 marlin")
    assert "Stopped watching “&lt;!channel&gt; cuda”" in reply_text(bot, "unwatch all")
    assert readers.watches_of(TEAM, USER) == []
    assert "You watch no searches" in reply_text(bot, "unwatch all")


def test_weekly_dm_adds_watched_notes_once(bot: Harness) -> None:
    bot.command("subscribe kernels")
    bot.command("watch nvfp4")
    bot.command("watch marlin")
    bot.command("watch fp8", user="U2")  # a watch alone; `fp8` is a role word (moe-quant)
    # beside the sample notes on NVFP4 checkpoints, one that is plainly a kernels note
    write_notes(
        bot,
        "kernel.txt",
        [("NVFP4 GEMM kernel tiles (#95001)", "Kernel authors: read the CUDA kernel closely.")],
    )
    publish(bot)
    store = bot.services.store
    notes = store.list_notes()
    ids = [n.id for n in notes]
    kernels = {n.id for n in notes if "kernels" in n.roles}
    nvfp4 = store.matching(text_query("nvfp4"), ids)
    marlin = store.matching(text_query("marlin"), ids)
    assert nvfp4 & kernels and nvfp4 - kernels, "some nvfp4 notes are kernels notes, some not"
    assert marlin and marlin <= kernels | nvfp4, "every marlin note is taken before"

    sections = dm_sections(bot.slack, USER)
    got = [i for members in sections.values() for i in members]
    assert len(got) == len(set(got)), "each note once per reader"
    role_heading = next(h for h in sections if "Kernels" in h)
    assert set(sections[role_heading]) == kernels
    assert set(sections["Watching: nvfp4"]) == nvfp4 - kernels
    assert "Watching: marlin" not in sections
    moe = {n.id for n in notes if "moe-quant" in n.roles}
    assert set(dm_sections(bot.slack, "U2")["Watching: fp8"]) == moe

    # The next digest: only the new note, once.
    write_notes(bot, "more.txt", [("NVFP4 GEMM 调度改进 (#96001)", "值得精读，做 FP8 的工程师。")])
    publish(bot, NOW.replace(day=24))
    new = next(n for n in store.list_notes() if n.pr == 96001)
    assert dm_note_ids(bot.slack, USER).count(new.id) == 1
    assert dm_note_ids(bot.slack, USER)[-1] == new.id


WATCH_NOTES = [
    ("Marlin AWQ MoE 内核 (#97001)", "AWQ 量化走 Marlin 内核，值得精读，做量化内核的工程师。"),
    ("MarlinMoE 的 AWQ 权重布局 (#97002)", "值得快速浏览，做 MoE 量化的工程师了解即可。"),
    ("Marlin FP8 调度器清理 (#97003)", "可略过，只是调度器的日志调整。"),
    ("AWQ 校准脚本 (#97004)", "值得快速浏览，做量化的工程师。"),
    ("请求调度优化 (#97005)", "值得精读，做调度的工程师。"),
    ("调度器重写 (#97006)", "值得精读，做 serving 的工程师。"),
    ("Weekly Marlin benchmark (#97007)", "可略过，CI 的例行基准。"),
]
_WATCH_REPLY = re.compile(r"\((\d+) stored notes? match(?:es)? now; `(/prdigest [^`]+)` lists")


def lookup_ids(harness: Harness, command: str) -> tuple[list[int], str]:
    """Every note a `/prdigest` lookup lists, over all its pages, and its first page."""
    _, reply = harness.command(command.removeprefix("/prdigest "))
    assert_clean(reply)
    first = json.dumps(reply, ensure_ascii=False)
    seen: list[int] = []
    while True:
        seen += page_note_ids(reply)
        value = more_value(reply)
        if value is None:
            return seen, first
        url = harness.response_url()
        harness.click(MORE_ACTION_ID, value, channel_id="C123", response_url=url)
        reply = harness.reply(url)
        assert_clean(reply)


def test_a_watch_counts_lists_and_delivers_the_same_notes(bot: Harness) -> None:
    """One rule everywhere: the watch's reply counts, its lookup lists and the weekly DM
    brings the notes with every word; one word, several words, a CJK word."""
    write_notes(bot, "watch.txt", WATCH_NOTES)
    ingest_default(bot.services)
    by_pr = {n.pr: n.id for n in bot.services.store.list_notes() if n.pr}
    expected = {
        "marlin": {by_pr[97001], by_pr[97002], by_pr[97003], by_pr[97007]},
        "marlin awq": {by_pr[97001], by_pr[97002]},  # MarlinMoE: a longer word
        "调度器": {by_pr[97003], by_pr[97006]},  # not 请求调度优化: 调度 without 度器
    }
    readers = {"marlin": "U21", "marlin awq": "U22", "调度器": "U23"}
    listed: dict[str, set[int]] = {}
    for query, user in readers.items():
        text = reply_text(bot, f"watch {query}", user=user)
        found = _WATCH_REPLY.search(text)
        assert found, text
        ids, _ = lookup_ids(bot, found.group(2))
        assert len(ids) == len(set(ids)) == int(found.group(1)), query
        listed[query] = set(ids)
        assert expected[query] <= listed[query], query
    assert "have all of its words" in reply_text(bot, "watch marlin awq extra", user="U24")
    # What the lookup falls back to is not what a watch brings: it says so, the watch none.
    none = reply_text(bot, "watch marlin zzqx", user="U25")
    assert "No stored note has them all yet." in none and "lists them" not in none
    anyword, first_page = lookup_ids(bot, "/prdigest marlin zzqx")
    assert anyword and "No note has all of these words" in first_page
    # Words that read as a subcommand get no lookup to try.
    week = reply_text(bot, "watch week marlin", user="U26")
    assert "(1 stored note matches now)." in week and "/prdigest week" not in week

    publish(bot)
    for query, user in readers.items():
        sections = dm_sections(bot.slack, user)
        assert set(sections[f"Watching: {query}"]) == listed[query], query
    assert dm_note_ids(bot.slack, "U24") == [] and dm_note_ids(bot.slack, "U25") == []


# ---------------------------------------------------------------- pause and resume


def test_pause_bad_input_changes_nothing(bot: Harness) -> None:
    for bad, says in (
        ("pause", "Say for how long"),
        ("pause soon", "is not a duration"),
        ("pause 0d", "from 1 to 365 days"),
        ("pause 60w", "from 1 to 365 days"),
        ("pause until 2020-01-01", "is not in the future"),
        ("pause until 2026-13-40", "is not a date"),
        ("pause until <!here>", "&lt;!here&gt;"),
    ):
        assert says in reply_text(bot, bad), bad
    assert bot.services.store.readers.pause_of(TEAM, USER) is None
    assert "You are not paused" in reply_text(bot, "resume")


def test_pause_stops_dms_and_resume_brings_what_was_missed(bot: Harness) -> None:
    readers = bot.services.store.readers
    for user in (USER, "U2", "U3"):
        bot.command("subscribe moe", user=user)
    text = reply_text(bot, "pause 2w")
    assert "Paused until" in text and "`/prdigest resume`" in text
    assert "Paused until" in reply_text(bot, "list")
    bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    bot.slack.wait_for("views.publish")
    assert "Paused until" in json.dumps(bot.slack.home_views[USER], ensure_ascii=False)
    # U3's pause runs out by itself after the first digest (its end is moved to the past).
    started = datetime.now(UTC)
    readers.pause(TEAM, "U3", started, started + timedelta(days=3))

    # Pauses are read at the moment the DMs go out: the clock's, as the pauses were set.
    first = publish(bot, datetime.now(UTC))
    moe = {n.id for n in bot.services.store.list_notes() if "moe-quant" in n.roles}
    assert dm_note_ids(bot.slack, USER) == [] and dm_note_ids(bot.slack, "U3") == []
    assert set(dm_note_ids(bot.slack, "U2")) == moe, "readers who are not paused get theirs"
    assert first.dms >= 1

    assert "Welcome back" in reply_text(bot, "resume")
    assert "You are not paused" in reply_text(bot, "resume")
    readers.pause(TEAM, "U3", started, datetime.now(UTC))
    write_notes(bot, "next.txt", [("MoE FP8 路由改进 (#97001)", "值得精读，做 MoE 量化的工程师。")])
    ingest_default(bot.services)
    preview = publish_weekly_digest(bot.services, None, datetime.now(UTC), dry_run=True)
    shown = {p.part: json.dumps(p.payload, ensure_ascii=False) for p in preview.preview}
    assert "While you were away" in shown[f"dm:{TEAM}:{USER}:1"], "the dry run shows it too"
    assert "While you were away" not in shown["dm:T0001:U2:1"]
    publish(bot, datetime.now(UTC))
    new = next(n for n in bot.services.store.list_notes() if n.pr == 97001)
    for user in (USER, "U3"):
        sections = dm_sections(bot.slack, user)
        away = next(h for h in sections if h.startswith("While you were away"))
        assert set(sections[away]) == moe, user
        assert new.id in {i for h, ids in sections.items() if h != away for i in ids}
    assert dm_note_ids(bot.slack, "U2")[-1:] == [new.id], "U2 missed nothing"

    # Only once: the digest after that has no "while you were away".
    write_notes(
        bot, "later.txt", [("MoE 量化第二次改进 (#97002)", "值得精读，做 MoE 量化的工程师。")]
    )
    publish(bot, datetime.now(UTC))
    later = next(n for n in bot.services.store.list_notes() if n.pr == 97002)
    last = bot.slack.messages_in(FakeSlack.dm_channel(USER))[-1]
    assert "While you were away" not in json.dumps(last, ensure_ascii=False)
    assert dm_note_ids(bot.slack, USER)[-1] == later.id


# ---------------------------------------------------------------- week


def page_note_ids(reply: dict[str, Any]) -> list[int]:
    return [
        int(str(b["block_id"]).removeprefix("note-"))
        for b in reply["blocks"]
        if str(b.get("block_id", "")).startswith("note-")
    ]


def more_value(reply: dict[str, Any]) -> str | None:
    for block in reply["blocks"]:
        if block["type"] == "actions":
            return str(block["elements"][0]["value"])
    return None


def test_week_pages_posted_upcoming_and_earlier_digests(bot: Harness) -> None:
    store = bot.services.store
    size = bot.services.settings.page_size
    _, upcoming = bot.command("week")
    assert_clean(upcoming)
    assert "Not posted yet" in json.dumps(upcoming, ensure_ascii=False)
    assert len(page_note_ids(upcoming)) == size

    publish(bot)  # the 2026-W48 digest
    notes = {n.id: n for n in store.list_notes()}
    seen: list[int] = []
    _, reply = bot.command("week 2026-w48")
    assert_clean(reply)
    assert "vLLM 精读推荐 · 2026-W48" in json.dumps(reply, ensure_ascii=False)
    assert "The digest as posted" in json.dumps(reply, ensure_ascii=False)
    while True:
        seen += page_note_ids(reply)
        value = more_value(reply)
        if value is None:
            break
        assert json.loads(value)["k"] == "week"
        url = bot.response_url()
        bot.click(MORE_ACTION_ID, value, channel_id="C123", response_url=url)
        reply = bot.reply(url)
        assert_clean(reply)
    assert sorted(seen) == sorted(notes), "every note of the digest once, over the pages"

    _, moe = bot.command("week moe 2026-W48")
    assert_clean(moe)
    ids = page_note_ids(moe)
    wanted = [n for n in notes.values() if "moe-quant" in n.roles]
    assert ids and set(ids) <= {n.id for n in wanted}
    ranks = [notes[i].verdict_for("moe-quant").rank for i in ids]
    assert ranks == sorted(ranks), "deep before skim before skip"

    # This week (real clock) has nothing new yet; an earlier week without a digest.
    assert "No notes" in reply_text(bot, "week")
    empty = reply_text(bot, "week 2026-W40")
    assert "No notes: no digest was posted that week, and no note ingested then." in empty
    assert "the notes ingested then" not in empty  # no heading of a list that is not there

    for bad, says in (
        ("week 2026-W60", "not an ISO week"),
        ("week 2026-47", "not an ISO week"),
        ("week 2099-W01", "has not started"),
        ("week moe kv", "Name one role"),
        ("week <!channel>", "&lt;!channel&gt;` is not a role"),
    ):
        assert says in reply_text(bot, bad), bad


def home_actions(harness: Harness) -> list[dict[str, Any]]:
    return [
        element
        for block in harness.slack.home_views[USER]["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def test_home_buttons_resume_and_unwatch(bot: Harness) -> None:
    readers = bot.services.store.readers
    bot.command("watch marlin")
    bot.command("watch <b>cuda</b> graph")
    bot.command("pause 1w")
    bot.post(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    bot.slack.wait_for("views.publish")
    labels = {e["text"]["text"]: e for e in home_actions(bot)}
    assert set(labels) == {"Resume now", "Unwatch “marlin”", "Unwatch “<b>cuda</b> graph”"}

    resume = labels["Resume now"]
    assert bot.click(resume["action_id"], resume["value"]) == 200
    bot.slack.wait_for("views.publish", n=2)
    pause = readers.pause_of(TEAM, USER)
    assert pause is not None and not pause.active(datetime.now(UTC))
    assert "Resume now" not in {e["text"]["text"] for e in home_actions(bot)}

    unwatch = labels["Unwatch “<b>cuda</b> graph”"]
    assert bot.click(unwatch["action_id"], unwatch["value"]) == 200
    bot.slack.wait_for("views.publish", n=3)
    assert readers.watches_of(TEAM, USER) == ["marlin"]
    assert [e["text"]["text"] for e in home_actions(bot)] == ["Unwatch “marlin”"]
