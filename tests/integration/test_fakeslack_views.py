"""The fake Slack's `views.open` and input-block checks (what the correction modal relies on)."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from tests.support.fakeslack import FakeSlack, validate_blocks


def options(count: int) -> list[dict[str, Any]]:
    return [
        {"text": {"type": "plain_text", "text": f"o{i}"}, "value": f"v{i}"} for i in range(count)
    ]


def modal(element: dict[str, Any], title: str = "Fix roles") -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "cb",
        "title": {"type": "plain_text", "text": title},
        "submit": {"type": "plain_text", "text": "Save"},
        "blocks": [
            {
                "type": "input",
                "block_id": "b",
                "label": {"type": "plain_text", "text": "Pick"},
                "element": element,
            }
        ],
    }


def test_views_open_accepts_a_modal_once_per_trigger() -> None:
    with FakeSlack() as slack:
        client = WebClient(token="xoxb-test", base_url=slack.api_url)
        view = modal({"type": "checkboxes", "action_id": "a", "options": options(3)})
        opened = client.views_open(trigger_id="t1", view=view)
        assert opened["view"]["id"].startswith("V") and slack.opened_views[0]["callback_id"] == "cb"
        with pytest.raises(SlackApiError) as again:
            client.views_open(trigger_id="t1", view=view)
        assert again.value.response["error"] == "expired_trigger_id"


@pytest.mark.parametrize(
    ("view", "problem"),
    [
        (modal({"type": "checkboxes", "action_id": "a", "options": options(11)}), "1 to 10"),
        (
            modal({"type": "checkboxes", "action_id": "a", "options": options(2)}, "x" * 25),
            "/title",
        ),
        (
            modal(
                {
                    "type": "static_select",
                    "action_id": "a",
                    "options": options(2),
                    "initial_option": options(3)[2],
                }
            ),
            "one of the provided options",
        ),
        (
            modal(
                {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "b"}}
            ),
            "input element",
        ),
        (
            {
                **modal({"type": "checkboxes", "action_id": "a", "options": options(2)}),
                "submit": None,
            },
            "submit",
        ),
    ],
)
def test_views_open_refuses_what_slack_refuses(view: dict[str, Any], problem: str) -> None:
    with FakeSlack() as slack:
        client = WebClient(token="xoxb-test", base_url=slack.api_url)
        with pytest.raises(SlackApiError) as refused:
            client.views_open(trigger_id="t", view=view)
        assert refused.value.response["error"] == "invalid_blocks"
        assert any(problem in p for p in refused.value.response["errors"])
        assert slack.opened_views == []


def test_multi_select_initial_options_must_be_offered() -> None:
    element = {
        "type": "multi_static_select",
        "action_id": "a",
        "options": options(120),
        "initial_options": options(1),
    }
    problems = validate_blocks(modal(element)["blocks"], "modal")
    assert problems == ["no more than 100 items allowed [json-pointer:/blocks/0/element/options]"]
