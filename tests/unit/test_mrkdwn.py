"""mrkdwn read back as a person sees it in Slack (`prdigest post --dry-run`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.render.mrkdwn import escaped, link, plain, readable


@given(st.text(alphabet=st.characters(blacklist_characters="*_~`", codec="utf-8")))
def test_escaped_user_text_reads_as_written(text: str) -> None:
    """What the bot escapes for Slack, a reader sees as the note's author wrote it."""
    assert plain(escaped(text)) == text


def test_links_show_their_label_and_where_they_go() -> None:
    made = link("https://github.com/o/r/pull/7?a=1&b=2", "Fix <x> & y", 100)
    assert plain(made) == "Fix <x> & y (https://github.com/o/r/pull/7?a=1&b=2)"
    assert plain("<https://example.com>") == "https://example.com"


def test_mentions_read_as_names() -> None:
    text = "<@U123> <@U9|ana> in <#C1|general> or <#C2>: <!here> <!channel> <!date^1|Jan 1>"
    assert plain(text) == "@U123 @ana in #general or #C2: @here @channel Jan 1"


def test_emphasis_markers_become_styles_and_code_stays_as_written() -> None:
    text = "*MoE &amp; quantization*: 2 · _italic_ ~gone~ `a_b_c *x*` 2 * 3 * 4 snake_case_name"
    assert readable(text) == [
        ("MoE & quantization", "bold"),
        (": 2 · ", ""),
        ("italic", "italic"),
        (" ", ""),
        ("gone", "strike"),
        (" ", ""),
        ("`a_b_c *x*`", "code"),
        (" 2 * 3 * 4 snake_case_name", ""),
    ]
    assert plain("*two\nlines*") == "*two\nlines*", "emphasis stays on one line"
