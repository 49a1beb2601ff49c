"""Fixing a note from Slack, end to end: signed block_actions and view_submission requests
into the Bolt endpoint, `views.open` and `chat.update` against the fake Slack, SQLite and
PostgreSQL. The posted thread message changes in place; nothing is posted or DMed again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot.delivery.weekly import Pacing, publish_weekly_digest
from bot.domain import Verdict
from bot.i18n.texts import Language, texts_for
from bot.render.blocks import MORE_ACTION_ID, NOTE_MENU_ACTION_ID, revised_mark
from bot.render.fix_modal import fix_modal
from bot.render.mrkdwn import escape
from bot.services import Services, ingest_paths
from bot.slack.app import build_app
from bot.slack.client import build_web_client
from bot.slack.server import SocketModeConnection
from tests.support.fakeslack import FakeSlack, validate_blocks
from tests.support.notefiles import seed_files, write_team_notes
from tests.support.slackapp import TEAM, TOKEN, Harness, start_harness
from tests.support.slacksign import block_actions_body, view_submission_body
from tests.support.socketslack import SocketSlack
from tests.support.testenv import DIGEST_CHANNEL

EDITOR = "U0EDITOR"
READER = "U0READER"
MONDAY = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings
REVISED_MARK_BOTH = revised_mark(BOTH)


@pytest.fixture
def bot(services: Services, slack: FakeSlack, tmp_path: Path) -> Iterator[Harness]:
    assert services.settings.digests_dir is not None
    write_team_notes(services.settings.digests_dir)
    services.settings = services.settings.model_copy(
        update={
            "channel": DIGEST_CHANNEL,
            "slack_api_url": slack.api_url,
            "slack_bot_token": SecretStr(TOKEN),
            "editors": EDITOR,
        }
    )
    harness = start_harness(services, slack, ingest=False)
    try:
        yield harness
    finally:
        harness.server.stop()


def publish(bot: Harness) -> str:
    client = build_web_client(bot.services.settings, token=TOKEN)
    return publish_weekly_digest(bot.services, client, MONDAY, pacing=Pacing(0, 0)).message


def posted_note(bot: Harness, note_id: int) -> dict[str, Any]:
    """The channel message (as Slack now has it) holding a note."""
    for message in bot.slack.messages_in(DIGEST_CHANNEL):
        if any(b.get("block_id") == f"note-{note_id}" for b in message.get("blocks", [])):
            return message
    raise AssertionError(f"note {note_id} is in no channel message")


def note_block_of(message: dict[str, Any], note_id: int) -> dict[str, Any]:
    return next(b for b in message["blocks"] if b.get("block_id") == f"note-{note_id}")


def menu_click(bot: Harness, note_id: int, option: str, user: str, trigger: str) -> dict[str, Any]:
    """Choose `option` in a note's "…" menu in the channel; returns the response_url reply
    (or {} when there was none)."""
    url = bot.response_url()
    body = block_actions_body(
        f"{NOTE_MENU_ACTION_ID}:{note_id}",
        "",
        user_id=user,
        channel_id=DIGEST_CHANNEL,
        response_url=url,
        trigger_id=trigger,
        action_type="overflow",
        selected_option={
            "text": {"type": "plain_text", "text": "x"},
            "value": f"{option}:{note_id}",
        },
    )
    status, _ = bot.post(body)
    assert status == 200
    if option == "fix" and user == EDITOR:
        return {}
    return bot.reply(url)


def chosen(value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": value}, "value": value}


def form(roles: list[str], primary: str | None, verdict: str) -> dict[str, Any]:
    return {
        "roles": {"roles": {"type": "checkboxes", "selected_options": [chosen(r) for r in roles]}},
        "primary": {
            "primary": {
                "type": "static_select",
                "selected_option": chosen(primary) if primary else None,
            }
        },
        "verdict": {"verdict": {"type": "static_select", "selected_option": chosen(verdict)}},
    }


def submit(bot: Harness, view: dict[str, Any], values: dict[str, Any], user: str) -> dict[str, Any]:
    """Submit the modal; the ack's JSON body ({} when it closes)."""
    status, body = bot.post(view_submission_body(view, values, user_id=user))
    assert status == 200
    return json.loads(body) if body.strip() else {}


def test_an_editor_fixes_a_posted_note_and_its_thread_message_changes_in_place(
    bot: Harness,
) -> None:
    store = bot.services.store
    store.subscribe(TEAM, READER, [r for r in bot.services.taxonomy.slugs])
    assert "posted the 2026-W48 digest" in publish(bot)
    posts = bot.slack.count("chat.postMessage")
    dms = len(bot.slack.messages_in(FakeSlack.dm_channel(READER)))
    note = store.list_notes()[0]
    message = posted_note(bot, note.id)
    menu = note_block_of(message, note.id)["accessory"]
    assert menu["type"] == "overflow" and menu["action_id"] == f"{NOTE_MENU_ACTION_ID}:{note.id}"
    assert [o["value"] for o in menu["options"]][:2] == [f"fix:{note.id}", f"show:{note.id}"]

    # A reader who is not an editor is refused, and no modal opens.
    refusal = menu_click(bot, note.id, "fix", READER, "trigger-1")
    assert (
        "Only editors can fix notes" in refusal["text"] and refusal["response_type"] == "ephemeral"
    )
    assert EDITOR in refusal["text"] and bot.slack.count("views.open") == 0

    # The editor gets the modal with the note's current roles ticked.
    menu_click(bot, note.id, "fix", EDITOR, "trigger-2")
    bot.slack.wait_for("views.open")
    assert bot.slack.accepted("views.open"), bot.slack.calls_for("views.open")[0].response
    view = bot.slack.opened_views[-1]
    roles = view["blocks"][1]["element"]
    assert roles["type"] == "checkboxes" and len(roles["options"]) == 9
    assert [o["value"] for o in roles["initial_options"]] == [
        s for s in bot.services.taxonomy.slugs if s in note.roles
    ]
    assert view["blocks"][2]["element"]["initial_option"]["value"] == note.primary_role
    assert view["blocks"][3]["element"]["initial_option"]["value"] == note.verdict.value
    assert validate_blocks(view["blocks"], "modal") == []

    # Bad submissions are answered next to the inputs and change nothing.
    answer = submit(bot, view, form(["kv-cache"], "moe-quant", "skim"), EDITOR)
    assert answer["response_action"] == "errors" and "primary" in answer["errors"]
    answer = submit(bot, view, form([], "moe-quant", "skim"), EDITOR)
    assert "roles" in answer["errors"]
    answer = submit(bot, view, form(["kv-cache"], "kv-cache", "skim"), READER)
    assert "Only editors" in answer["errors"]["roles"]
    assert store.get_fix(note.id) is None and bot.slack.count("chat.update") == 0

    # A good one closes the modal, stores the fix and updates the thread message.
    assert submit(bot, view, form(["kv-cache", "multimodal"], "multimodal", "skip"), EDITOR) == {}
    bot.slack.wait_for("chat.update")
    confirmation = bot.slack.wait_for("chat.postEphemeral")[-1].params
    assert confirmation["user"] == EDITOR and "Updated 1 digest message" in confirmation["text"]
    fix = store.get_fix(note.id)
    assert fix is not None and fix.fixed_by == EDITOR and fix.verdict is Verdict.SKIP
    after = store.get_notes([note.id])[0]
    assert (after.roles, after.primary_role) == (("multimodal", "kv-cache"), "multimodal")
    updated = posted_note(bot, note.id)
    assert updated["ts"] == message["ts"] and "edited" in updated
    block = note_block_of(updated, note.id)["text"]["text"]
    assert REVISED_MARK_BOTH in block and "可略过 skip" in block and "多模态" in block
    others = [b for b in updated["blocks"] if str(b.get("block_id", "")).startswith("note-")]
    assert sum(REVISED_MARK_BOTH in b["text"]["text"] for b in others) == 1
    assert bot.slack.count("chat.postMessage") == posts
    assert bot.slack.sent_markup_problems() == []

    # The next run posts nothing new, re-sends no DM and updates nothing more.
    publish(bot)
    assert bot.slack.count("chat.postMessage") == posts
    assert len(bot.slack.messages_in(FakeSlack.dm_channel(READER))) == dms
    assert bot.slack.count("chat.update") == 1


def test_a_revised_paragraph_updates_its_posted_message_on_the_next_run(bot: Harness) -> None:
    publish(bot)
    posts = bot.slack.count("chat.postMessage")
    path = sorted(bot.services.settings.digests_dir.iterdir())[0]
    text = path.read_text(encoding="utf-8")
    note = next(n for n in bot.services.store.list_notes() if n.source.startswith(str(path)))
    revised = text.replace(note.paragraph, note.paragraph + " 补充：已在 H100 上复测。", 1)
    assert revised != text
    path.write_text(revised, encoding="utf-8")
    ingest_paths(bot.services, [path])
    dry = publish_weekly_digest(bot.services, None, MONDAY, dry_run=True)
    assert "would update 1 posted messages in place" in dry.message
    [update] = [p for p in dry.preview if p.part.startswith("update:role:")]
    assert REVISED_MARK_BOTH in json.dumps(update.payload, ensure_ascii=False)
    assert bot.slack.count("chat.update") == 0
    result = publish(bot)
    assert "1 posted messages updated in place" in result
    assert bot.slack.count("chat.postMessage") == posts
    block = note_block_of(posted_note(bot, note.id), note.id)["text"]["text"]
    assert REVISED_MARK_BOTH in block
    publish(bot)
    assert bot.slack.count("chat.update") == 1, "an update happens once"


def test_show_and_lookup_menus(bot: Harness) -> None:
    ingest_paths(bot.services, seed_files())
    status, reply = bot.command("moe")
    assert status == 200
    notes = [b for b in reply["blocks"] if str(b.get("block_id", "")).startswith("note-")]
    assert notes and all(b["accessory"]["type"] == "overflow" for b in notes)
    note_id = int(notes[0]["block_id"].removeprefix("note-"))
    shown = menu_click(bot, note_id, "show", READER, "trigger-9")
    note = bot.services.store.get_notes([note_id])[0]
    assert note.paragraph[:20] in shown["text"] and shown["response_type"] == "ephemeral"
    assert validate_blocks(shown["blocks"]) == []


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the transport is under test
def test_fix_over_socket_mode(services: Services, socket_slack: SocketSlack) -> None:
    """The modal's submission arrives as a Socket Mode envelope; errors go back in the ack."""
    from urllib.parse import parse_qsl

    ingest_paths(services, seed_files())
    note = services.store.list_notes()[0]
    view = fix_modal(note, None, services.taxonomy, None, BOTH)
    with FakeSlack(token=TOKEN, app_token="xapp-test") as slack:
        slack.socket_url = socket_slack.url
        settings = services.settings.model_copy(update={"slack_api_url": slack.api_url})
        client = build_web_client(settings, token=TOKEN)
        app = build_app(services, client, signing_secret=None, socket_mode=True)
        connection = SocketModeConnection(app, "xapp-test", client)
        connection.connect()
        try:
            for number, values in enumerate(
                [form(["kv-cache"], "kernels", "deep"), form(["kernels"], "kernels", "deep")]
            ):
                payload = json.loads(dict(parse_qsl(view_submission_body(view, values)))["payload"])
                socket_slack.outgoing.put(
                    {
                        "envelope_id": f"env-{number}",
                        "type": "interactive",
                        "payload": payload,
                        "accepts_response_payload": True,
                    }
                )
                ack = socket_slack.received.get(timeout=10)
                assert ack["envelope_id"] == f"env-{number}"
                if number == 0:
                    assert ack["payload"]["response_action"] == "errors"
                    assert services.store.get_fix(note.id) is None
            fixed = services.store.get_notes([note.id])[0]
            assert fixed.roles == ("kernels",) and fixed.verdict is Verdict.DEEP
            stored = services.store.get_fix(note.id)
            assert stored is not None and stored.fixed_by == "U123"
        finally:
            connection.close()


def week_view(bot: Harness, text: str) -> list[tuple[str, int, str]]:
    """`/prdigest <text>` over all its pages: (heading, note id, note text) in order."""
    _, reply = bot.command(text, user=READER)
    shown: list[tuple[str, int, str]] = []
    while True:
        assert reply.get("text") and validate_blocks(reply["blocks"], "message") == []
        heading = ""
        for block in reply["blocks"]:
            block_id = str(block.get("block_id", ""))
            if block["type"] == "context" and block["elements"][0]["text"].startswith("*"):
                heading = block["elements"][0]["text"].strip("*")
            elif block_id.startswith("note-"):
                shown.append((heading, int(block_id[5:]), block["text"]["text"]))
        more = next((b for b in reply["blocks"] if b["type"] == "actions"), None)
        if more is None:
            return shown
        url = bot.response_url()
        value = more["elements"][0]["value"]
        bot.post(block_actions_body(MORE_ACTION_ID, value, channel_id="C123", response_url=url))
        reply = bot.reply(url)


def test_week_shows_a_posted_week_as_posted_with_later_fixes_marked(bot: Harness) -> None:
    store = bot.services.store
    taxonomy = bot.services.taxonomy
    publish(bot)
    # A note posted in a thread with others; the editor moves it to another role.
    note = next(
        n
        for n in store.list_notes()
        if sum(m.primary_role == n.primary_role for m in store.list_notes()) > 1
    )
    posted_role = note.primary_role
    moved_to = next(s for s in taxonomy.slugs if s not in note.roles)
    menu_click(bot, note.id, "fix", EDITOR, "trigger-w")
    bot.slack.wait_for("views.open")
    view = bot.slack.opened_views[-1]
    assert submit(bot, view, form([moved_to], moved_to, "skip"), EDITOR) == {}
    bot.slack.wait_for("chat.update")
    # A follow-up of the same week: its own threads, after the digest's.
    (bot.services.settings.digests_dir / "later.txt").write_text(
        "vllm-project/vllm\n\nMoE <b>路由</b> 改进 (#98001)\n\n值得精读，做 MoE 量化的工程师。\n",
        encoding="utf-8",
    )
    assert "addition" in publish(bot)
    late = next(n for n in store.list_notes() if n.pr == 98001)

    shown = week_view(bot, "week 2026-W48")
    channel = [
        int(str(b["block_id"])[5:])
        for m in bot.slack.messages_in(DIGEST_CHANNEL)
        if m.get("thread_ts")
        for b in m.get("blocks", [])
        if str(b.get("block_id", "")).startswith("note-")
    ]
    assert [i for _, i, _ in shown] == channel, "the notes in the order the channel shows them"
    heading, _, text = next(s for s in shown if s[1] == note.id)
    assert heading == escape(taxonomy.get(posted_role).label), "still in its posted thread"
    assert f"fixed since posting: now {moved_to}/skip" in text
    assert sum("fixed since posting" in t for _, _, t in shown) == 1
    late_heading = next(h for h, i, _ in shown if i == late.id)
    assert late_heading.endswith("补充 / addition")
    assert bot.slack.sent_markup_problems() == []

    # One role: the notes of its threads as posted, and the notes that have it now.
    in_role = {i for _, i, _ in week_view(bot, f"week {posted_role} 2026-W48")}
    assert note.id in in_role
    assert {n.id for n in store.list_notes() if posted_role in n.roles} <= in_role
    moved = week_view(bot, f"week {moved_to} 2026-W48")
    assert any(i == note.id and "fixed since posting" in t for _, i, t in moved)
