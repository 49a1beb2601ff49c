"""User text is data: hostile notes, queries, role names and button values go through
every Slack surface (digest parent, threads, DMs, lookups, roles, help, App Home, button
replies) and come out escaped. The `slack` fixture checks every payload the bot sent
(`FakeSlack.sent_markup_problems`); these tests also look at what a reader would see.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.classify.taxonomy import load_taxonomy
from bot.i18n.texts import Language, texts_for
from bot.render.blocks import MORE_ACTION_ID, SUBSCRIBE_ACTION_ID, header_block
from bot.render.mrkdwn import ELLIPSIS, clip, escape, escaped, link
from bot.render.replies import roles_reply
from bot.services import Services, ingest_paths
from tests.support.delivery import CHANNEL, publish
from tests.support.fakeslack import (
    FakeSlack,
    markup_problems,
    payload_markup_problems,
    validate_blocks,
)
from tests.support.notefiles import write_team_notes
from tests.support.slackapp import TEAM, USER, Harness, start_harness

HOSTILE = "<!channel> <@U123> <https://evil.example|click> AT&T <#C999> &lt;x&gt;"
PINGS = ("<!channel>", "<@U123>", "<https://evil.example|click>", "<#C999>")
PR_URL = "https://github.com/vllm-project/vllm/pull/"

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


def hostile_roles_file(tmp_path: Path) -> Path:
    """The default roles, with hostile names and aliases on moe-quant and a new role."""
    path = tmp_path / "roles.toml"
    path.write_text(
        """
mode = "extend"

[[roles]]
slug = "moe-quant"
name_zh = "量化 <!here> & co"
name_en = "MoE <@U999> & quantization"
aliases = ["<!channel>", "a&b"]

[[roles]]
slug = "evil"
name_zh = "坏 <https://evil.example|click>"
name_en = "Evil <!everyone>"
aliases = ["<@U42>"]

[roles.keywords]
"evil" = 5
""",
        encoding="utf-8",
    )
    return path


def write_hostile_notes(folder: Path, count: int = 6, title_chars: int = 300) -> None:
    """Deep-read notes whose titles and paragraphs are full of markup, with PR links."""
    blocks = ["vllm-project/vllm"]
    for i in range(count):
        title = f"{i} {HOSTILE} " + "<&>" * (title_chars // 3)
        blocks += [
            f"{title} (#{1000 + i})",
            f"值得精读，适合做 MoE 量化与 FP8 内核的工程师。{HOSTILE} evil",
        ]
    (folder / "hostile.txt").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def shown(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


def assert_no_pings(payload: dict[str, Any]) -> None:
    """No mention or foreign link in any mrkdwn or fallback text (plain_text, such as a
    header or a button label, is shown as written by Slack and needs no escaping)."""
    assert payload_markup_problems(payload) == []


# ---------------------------------------------------------------- the rules themselves


def test_the_validator_catches_what_would_ping_or_link() -> None:
    for bad in (*PINGS, "a & b", "<https://github.com/a/b/pull/1|half", "x > y"):
        assert markup_problems(bad), bad
    own = link(PR_URL + "12", HOSTILE, 150) + "\n> " + escaped(HOSTILE)
    assert markup_problems(own) == []
    thread = "https://test.slack.com/archives/C1/p1700000000000100?thread_ts=1.2&cid=C1"
    assert markup_problems(link(thread, "thread", 50)) == []
    assert markup_problems(f"<{thread}|thread>")  # a bare & inside a URL is still bare


@given(st.text(alphabet="<>&a |!@:", max_size=80), st.integers(min_value=2, max_value=90))
def test_escaped_fits_shows_the_text_and_never_breaks_an_entity(text: str, limit: int) -> None:
    out = escaped(text, limit)
    assert len(out) <= limit
    assert markup_problems(out) == []
    if len(escape(text)) <= limit:
        assert html.unescape(out) == text
    else:
        assert out.endswith(ELLIPSIS)
        assert text.startswith(html.unescape(out.removesuffix(ELLIPSIS)))


@given(
    st.lists(st.sampled_from(["<&>", "title", " ", "\n", ":ok:"]), max_size=12),
    st.integers(min_value=2, max_value=400),
)
def test_clip_never_cuts_inside_a_link_or_an_entity(labels: list[str], limit: int) -> None:
    text = " ".join(link(f"{PR_URL}{i}", label or "x", 60) for i, label in enumerate(labels))
    text += " " + escape(HOSTILE)
    out = clip(text, limit)
    assert len(out) <= limit
    assert markup_problems(out) == []
    assert text.startswith(out.removesuffix(ELLIPSIS).rstrip())


def test_plain_text_fields_are_cut_at_any_character() -> None:
    """A header or button label is plain_text: nothing in it is markup, so a long `<…>`
    in a query is cut like any text there, while in mrkdwn it would stay whole or go."""
    text = "<" + "a" * 200 + ">"
    header = header_block(text)["text"]["text"]
    assert len(header) == 150 and header.startswith("<aaa") and header.endswith(ELLIPSIS)
    assert clip(text, 150) == ELLIPSIS


# ---------------------------------------------------------------- the weekly digest


def test_digest_parent_threads_and_dms_show_hostile_notes_as_written(
    posting: Services, slack: FakeSlack, tmp_path: Path
) -> None:
    posting.taxonomy = load_taxonomy(hostile_roles_file(tmp_path))
    write_hostile_notes(posting.settings.digests_dir)
    posting.store.subscribe("T1", "U1", ["moe-quant", "evil"])
    posting.store.readers.watch("T2", "U2", "<!channel> AT&T")  # a saved search's DM
    result = publish(posting)
    assert result.status == "posted" and result.dms == 2
    sent = slack.accepted("chat.postMessage")
    assert len(sent) >= 3
    for call in sent:
        assert validate_blocks(call.params["blocks"]) == []
        assert_no_pings(call.params)
    everything = "".join(shown(c.params) for c in sent)
    assert "&lt;!channel&gt; &lt;@U123&gt;" in everything
    assert "AT&amp;T" in everything and "&amp;lt;x&amp;gt;" in everything
    assert "量化 &lt;!here&gt; &amp; co" in everything
    assert "Watching: &lt;!channel&gt; AT&amp;T" in everything
    # The parent's top deep reads: five whole links, even with long, markup-heavy titles.
    parent = slack.messages_in(CHANNEL)[0]
    reads = next(
        b["text"]["text"] for b in parent["blocks"] if "Top deep reads" in str(b.get("text"))
    )
    links = re.findall(r"<(https://[^|<>]+)\|[^<>]*>", reads)
    assert len(links) == 5 and all(url.startswith(PR_URL) for url in links)


# ---------------------------------------------------------------- Slack commands and buttons


@pytest.fixture
def hostile_bot(services: Services, slack: FakeSlack, tmp_path: Path) -> Iterator[Harness]:
    services.taxonomy = load_taxonomy(hostile_roles_file(tmp_path))
    folder = tmp_path / "hostile"
    folder.mkdir()
    write_hostile_notes(folder)
    write_team_notes(folder)
    harness = start_harness(services, slack, ingest=False)
    ingest_paths(services, [folder])
    try:
        yield harness
    finally:
        harness.server.stop()


COMMANDS = (
    "help",
    "roles",
    "evil",  # a role whose notes are hostile
    escape("<!channel> AT&T"),  # free text that finds the hostile notes (Slack escapes it)
    escape("<@U123> zzzznothing"),  # no match: the query is echoed
    escape("subscribe moe <!channel>"),  # an unknown role word is echoed
    "subscribe evil moe",
    escape("subscribe evil <!channel> deep"),
    "subscribe evil skim",
    escape("watch <!channel> AT&T"),  # a saved search echoed in the reply and in list
    "list",
    escape("unwatch <@U123>"),
    escape("pause <!here>"),
    "pause 2w",
    "list",
    "resume",
    escape("unsubscribe <https://evil.example|click>"),
    escape("budget <!here>"),  # not a budget: echoed
    escape("dm <!channel> 09:00"),  # not a day: echoed
    "budget 3",
    "dm 周二 07:30",
    "dm",
    escape("<" * 600),  # too long
)


def test_commands_echo_hostile_text_escaped(hostile_bot: Harness) -> None:
    for text in COMMANDS:
        status, reply = hostile_bot.command(text)
        assert status == 200
        assert validate_blocks(reply["blocks"]) == [], text
        assert_no_pings(reply)


def test_help_shows_placeholders_as_written(hostile_bot: Harness) -> None:
    _, reply = hostile_bot.command("help")
    assert "`/prdigest subscribe &lt;role&gt; [&lt;role&gt; ...] [deep|skim|all]`" in shown(reply)
    assert "/prdigest &lt;free text&gt;" in reply["text"]


def test_hostile_lookup_pages_and_more_button(hostile_bot: Harness) -> None:
    _, first = hostile_bot.command(escape("<!channel>"))
    assert "&lt;!channel&gt;" in first["text"]
    actions = [b for b in first["blocks"] if b["type"] == "actions"]
    if actions:
        url = hostile_bot.response_url()
        value = actions[0]["elements"][0]["value"]
        hostile_bot.click(MORE_ACTION_ID, value, channel_id="C123", response_url=url)
        assert_no_pings(hostile_bot.reply(url))
    # A forged "More" value carrying markup is answered, escaped.
    forged = json.dumps({"q": HOSTILE, "o": 0})
    url = hostile_bot.response_url()
    hostile_bot.click(MORE_ACTION_ID, forged, channel_id="C123", response_url=url)
    assert_no_pings(hostile_bot.reply(url))


def test_buttons_and_home_escape_role_names_and_values(hostile_bot: Harness) -> None:
    slack = hostile_bot.slack
    hostile_bot.click(SUBSCRIBE_ACTION_ID, "evil", channel_id="C777")
    slack.wait_for("chat.postEphemeral")
    hostile_bot.click(SUBSCRIBE_ACTION_ID, HOSTILE, channel_id="C777")
    slack.wait_for("chat.postEphemeral", n=2)
    confirmation, refusal = slack.ephemerals
    assert "坏 &lt;https://evil.example|click&gt;" in confirmation["text"]
    assert "&lt;!channel&gt;" in refusal["text"] and "no longer a role" in refusal["text"]
    hostile_bot.services.store.subscribe(TEAM, USER, ["moe-quant"])
    hostile_bot.click(f"{SUBSCRIBE_ACTION_ID}:evil", "evil")  # from the Home tab
    slack.wait_for("views.publish")
    view = slack.home_views[USER]
    assert validate_blocks(view["blocks"], "home") == []
    assert_no_pings(view)
    assert "MoE &lt;@U999&gt; &amp; quantization" in shown(view)


# ---------------------------------------------------------------- large taxonomies


def big_roles_file(tmp_path: Path, count: int = 200) -> Path:
    rows = ['mode = "replace"']
    for i in range(count):
        aliases = ", ".join(f'"r{i}-alias-{j}-<&>"' for j in range(12))
        rows.append(
            f'[[roles]]\nslug = "role-{i}"\nname_zh = "角色 {i} <!here>"\n'
            f'name_en = "Role {i} with a longer English name"\naliases = [{aliases}]\n'
        )
    path = tmp_path / "big.toml"
    path.write_text("\n".join(rows), encoding="utf-8")
    return path


def test_roles_of_a_large_taxonomy_are_paged_within_the_message_limits(
    services: Services, slack: FakeSlack, tmp_path: Path
) -> None:
    services.taxonomy = load_taxonomy(big_roles_file(tmp_path))
    harness = start_harness(services, slack, ingest=False)
    try:
        status, reply = harness.command("roles")
        seen: list[str] = []
        pages = 0
        while True:
            pages += 1
            assert validate_blocks(reply["blocks"]) == []
            assert_no_pings(reply)
            seen += re.findall(r"`(role-\d+)`", shown(reply))
            actions = [b for b in reply["blocks"] if b["type"] == "actions"]
            if not actions:
                break
            url = harness.response_url()
            value = actions[0]["elements"][0]["value"]
            harness.click(MORE_ACTION_ID, value, channel_id="C123", response_url=url)
            reply = harness.reply(url)
        assert status == 200 and pages > 1
        answers = [c for c in harness.slack.calls if c.method.startswith("/response/")]
        assert len(answers) == pages
        assert all(c.status == 200 for c in answers), [c.response for c in answers]
        assert seen == [f"role-{i}" for i in range(200)]
        assert "of 200" in shown(reply)
    finally:
        harness.server.stop()


def test_roles_page_past_the_end() -> None:
    taxonomy = load_taxonomy(None)
    reply = roles_reply(taxonomy, BOTH, offset=len(taxonomy.roles))
    assert "No more roles" in reply["text"]
