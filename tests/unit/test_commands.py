"""The `/prdigest` grammar and the reply builders, without Slack or a database."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.domain import Reader, RoleSubscription, Verdict
from bot.i18n.texts import Language, texts_for
from bot.notes.search import MAX_QUERY_CHARS
from bot.render.blocks import MORE_ACTION_ID
from bot.render.replies import (
    MorePage,
    help_reply,
    home_view,
    lookup_reply,
    roles_reply,
    subscribe_reply,
    unknown_roles_reply,
)
from bot.slack.prdigest import (
    FALLBACKS,
    SUBCOMMANDS,
    Command,
    Kind,
    clean_text,
    help_lines,
    help_text,
    parse_command,
)
from tests.support.fakeslack import validate_blocks
from tests.support.notes import note

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return load_taxonomy(None)


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("text", ["", "   ", "help", "HELP", "help me please", "\u200b"])
def test_help(text: str, taxonomy: Taxonomy) -> None:
    assert parse_command(text, taxonomy).kind is Kind.HELP


def test_roles_and_list(taxonomy: Taxonomy) -> None:
    assert parse_command("roles", taxonomy) == Command(Kind.ROLES)
    assert parse_command("List", taxonomy) == Command(Kind.LIST)


@pytest.mark.parametrize("text", ["moe", "mm", "infra", "量化", "fp8 marlin", "cuda graph"])
def test_lookup(text: str, taxonomy: Taxonomy) -> None:
    parsed = parse_command(text, taxonomy)
    assert parsed.kind is Kind.LOOKUP
    assert parsed.text == text


@pytest.mark.parametrize(
    "text", ["pause ٣d", "pause until ٢٠٢٦-١٢-٢٤", "week ٢٠٢٦-W48", "week 2026-W٤٨"]
)
def test_numbers_in_commands_are_ascii_digits(text: str, taxonomy: Taxonomy) -> None:
    """`int` reads "٣" as 3; a command's numbers are ASCII digits (full-width ones become
    ASCII when the text is normalised) or not numbers at all."""
    parsed = parse_command(text, taxonomy)
    assert parsed.kind is Kind.INVALID, parsed
    assert parse_command(text.translate(_ASCII_DIGITS), taxonomy).kind is not Kind.INVALID


_ASCII_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩", "0123456789")


def test_subscribe_resolves_aliases_and_dedupes(taxonomy: Taxonomy) -> None:
    parsed = parse_command("subscribe moe quant KV", taxonomy)
    assert parsed == Command(Kind.SUBSCRIBE, roles=("moe-quant", "kv-cache"))
    assert parsed.ok


def test_subscribe_unknown_is_all_or_nothing(taxonomy: Taxonomy) -> None:
    parsed = parse_command("subscribe moe kernls", taxonomy)
    assert parsed.kind is Kind.SUBSCRIBE
    assert parsed.unknown == ("kernls",)
    assert not parsed.ok


def test_unsubscribe(taxonomy: Taxonomy) -> None:
    assert parse_command("unsubscribe all", taxonomy) == Command(Kind.UNSUBSCRIBE, all_roles=True)
    assert parse_command("unsubscribe mm", taxonomy).roles == ("multimodal",)
    assert parse_command("unsubscribe", taxonomy).kind is Kind.INVALID
    assert parse_command("subscribe", taxonomy).kind is Kind.INVALID


def test_too_long(taxonomy: Taxonomy) -> None:
    parsed = parse_command("x" * (MAX_QUERY_CHARS + 1), taxonomy)
    assert parsed.kind is Kind.INVALID
    assert parsed.error is not None and str(MAX_QUERY_CHARS) in BOTH.say(parsed.error)
    assert parse_command("x" * MAX_QUERY_CHARS, taxonomy).kind is Kind.LOOKUP


def test_typo_of_subcommand_is_noted(taxonomy: Taxonomy) -> None:
    parsed = parse_command("subscibe", taxonomy)
    assert parsed.kind is Kind.LOOKUP and parsed.near == "subscribe"


def test_typo_of_a_subcommand_with_words_is_noted(taxonomy: Taxonomy) -> None:
    parsed = parse_command("subscrbe moe deep", taxonomy)
    assert parsed.kind is Kind.LOOKUP and parsed.near == "subscribe moe deep"
    assert parse_command("wach fp8 marlin", taxonomy).near == "watch fp8 marlin"
    # Ordinary searches and role lookups are not taken for typos.
    for text in ("weak attention", "lists of experts", "roles moe", "moe deep", "cuda graph"):
        assert parse_command(text, taxonomy).near == "", text


def test_clean_text() -> None:
    assert clean_text("\u200bsub\u200bscribe\u202e  moe\u202c") == "subscribe moe"
    assert clean_text("&lt;b&gt; &amp;") == "<b> &"
    assert clean_text("ｆｐ８\nmarlin\t") == "fp8 marlin"


@settings(deadline=None)
@given(st.text(max_size=700))
def test_parse_never_raises(text: str) -> None:
    parsed = parse_command(text, load_taxonomy(None))
    assert isinstance(parsed.kind, Kind)
    assert len(parsed.text) <= MAX_QUERY_CHARS


def test_help_is_generated_from_the_table() -> None:
    rows = help_lines(BOTH)
    assert len(rows) == len(SUBCOMMANDS) + len(FALLBACKS)
    for sub in (*SUBCOMMANDS, *FALLBACKS):
        assert sub.summary, f"{sub.usage} needs a docstring"
        assert sub.summary in help_text(BOTH)
        assert sub.usage in help_text(BOTH)


# ---------------------------------------------------------------- replies


def test_help_and_roles_replies_are_valid(taxonomy: Taxonomy) -> None:
    for reply in (help_reply(help_lines(BOTH), BOTH), roles_reply(taxonomy, BOTH)):
        assert reply["text"]
        assert validate_blocks(reply["blocks"]) == []


def test_lookup_page_has_more_button(taxonomy: Taxonomy) -> None:
    notes = [note(i) for i in range(5)]
    reply = lookup_reply("kernels", taxonomy.get("kernels"), notes, 12, 0, taxonomy, BOTH)
    assert validate_blocks(reply["blocks"]) == []
    actions = [b for b in reply["blocks"] if b["type"] == "actions"]
    value = actions[0]["elements"][0]["value"]
    assert actions[0]["elements"][0]["action_id"] == MORE_ACTION_ID
    assert MorePage.decode(value) == MorePage("kernels", 5)
    assert "1–5 of 12" in reply["text"]
    assert "[deep] A note 0 https://github.com/vllm-project/vllm/pull/1000" in reply["text"]
    last = lookup_reply("kernels", taxonomy.get("kernels"), notes, 5, 0, taxonomy, BOTH)
    assert not [b for b in last["blocks"] if b["type"] == "actions"]


def test_lookup_page_fits_size_limits_with_huge_notes(taxonomy: Taxonomy) -> None:
    notes = [note(i, title="长" * 300, excerpt="字" * 2000) for i in range(20)]
    query = '"' * 500
    reply = lookup_reply(query, None, notes, 40, 0, taxonomy, BOTH)
    assert validate_blocks(reply["blocks"]) == []
    value = next(b for b in reply["blocks"] if b["type"] == "actions")["elements"][0]["value"]
    assert len(value) <= 2000
    shown = sum(1 for b in reply["blocks"] if b.get("block_id", "").startswith("note-"))
    assert 0 < shown < 20
    assert MorePage.decode(value) == MorePage(query, shown)


@pytest.mark.parametrize(
    "value", ["", "x", "[]", '{"q": 1, "o": 2}', '{"q": "a", "o": -1}', '{"q": "a", "o": true}']
)
def test_more_page_rejects_foreign_values(value: str) -> None:
    assert MorePage.decode(value) is None


def test_more_page_round_trip_cjk_stays_short() -> None:
    page = MorePage("量化" * 250, 15)
    assert len(page.encode()) < 2000
    assert MorePage.decode(page.encode()) == page
    assert json.loads(page.encode())["o"] == 15


def test_subscription_messages(taxonomy: Taxonomy) -> None:
    levels = {"moe-quant": None, "kv-cache": Verdict.DEEP, "kernels": Verdict.SKIM}
    reply = subscribe_reply(["moe-quant"], ["kernels"], ["kv-cache"], levels, taxonomy, BOTH)
    assert reply["text"].startswith("Subscribed to `moe-quant`")
    assert "`kernels` now sends deep and skim reads" in reply["text"]
    assert "; already subscribed to `kv-cache` (KV 缓存), deep reads only" in reply["text"]
    reply = unknown_roles_reply(True, ["kernls"], {"kernls": [taxonomy.get("kernels")]}, BOTH)
    assert "did you mean kernels" in reply["text"] and "Nothing was subscribed" in reply["text"]


def test_home_view_stays_within_100_blocks(taxonomy: Taxonomy) -> None:
    notes = [note(i) for i in range(200)] + [note(1)]
    now = datetime(2026, 11, 30, tzinfo=UTC)
    reader = Reader("T1", "U1", (RoleSubscription("kernels", Verdict.DEEP),), ("fp8",))
    view = home_view(taxonomy, reader, notes, "This week", now, ZoneInfo("UTC"), BOTH)
    assert view["type"] == "home"
    assert len(view["blocks"]) <= 100
    assert validate_blocks(view["blocks"], "home") == []
    assert "deep reads only" in json.dumps(view)
    empty = home_view(taxonomy, Reader("T1", "U1"), [], "This week", now, ZoneInfo("UTC"), BOTH)
    assert validate_blocks(empty["blocks"], "home") == []


_READER_WORDS = st.sampled_from(["subscribe", "watch", "unwatch", "pause", "resume", "week"])
_ARGS = st.lists(
    st.one_of(
        st.text(max_size=30),
        st.sampled_from(["moe", "deep", "skim", "all", "until", "2w", "3d", "2026-W47"]),
        st.from_regex(r"\d{1,5}[dw]|\d{4}-\d{2}-\d{2}|\d{4}-?[wW]\d{1,3}", fullmatch=True),
    ),
    max_size=4,
)


@settings(deadline=None)
@given(_READER_WORDS, _ARGS)
def test_reader_commands_parse_or_explain(word: str, args: list[str]) -> None:
    """Every reader command parses or says why not; nothing raises."""
    parsed = parse_command(" ".join([word, *args]), load_taxonomy(None))
    if parsed.kind is Kind.INVALID:
        assert parsed.error
    else:
        assert parsed.kind.value == word or parsed.kind in (Kind.LOOKUP, Kind.HELP)
    if parsed.kind is Kind.PAUSE:
        assert parsed.until is not None or 1 <= parsed.days <= 365
    if parsed.kind is Kind.WEEK:
        assert parsed.text == "" or len(parsed.text) == 8
