"""The correction modal and its replies: Block Kit limits, escaping, reading a submission."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.classify.taxonomy import Taxonomy, load_taxonomy
from bot.config import SettingsError, load_settings
from bot.domain import Note, NoteFix, Role, Verdict
from bot.i18n.texts import Language, texts_for
from bot.render.blocks import menu_note_block, revised_mark
from bot.render.fix_modal import (
    FixForm,
    fix_modal,
    fix_saved_reply,
    form_errors,
    not_editor_reply,
    note_detail_reply,
    read_fix_form,
)
from tests.support.fakeslack import payload_markup_problems, validate_blocks

T0 = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
HOSTILE = "<!channel> & <https://evil.example|click> 修复 <@U0BOSS>"

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


def note(**changes: object) -> Note:
    base = {
        "id": 7,
        "repo": "vllm-project/vllm",
        "title": HOSTILE,
        "paragraph": f"值得精读。{HOSTILE}",
        "pr": 12,
        "pr_url": "https://github.com/vllm-project/vllm/pull/12",
        "roles": ("kernels", "moe-quant"),
        "primary_role": "kernels",
        "verdict": Verdict.DEEP,
        "role_verdicts": {},
        "excerpt": HOSTILE,
        "source": "digests/a.txt:3",
        "ingested_at": T0,
        "updated_at": T0,
    }
    base.update(changes)
    return Note(**base)  # type: ignore[arg-type]


def big_taxonomy(count: int) -> Taxonomy:
    return Taxonomy(tuple(Role(f"role-{i}", f"角色{i}", f"Role {i}") for i in range(count)))


def test_modal_is_valid_escaped_and_starts_from_the_current_values() -> None:
    taxonomy = load_taxonomy(None)
    fix = NoteFix(7, ("kernels",), "kernels", None, "<@U0X>", T0)
    view = fix_modal(note(), fix, taxonomy, "C1", BOTH)
    assert validate_blocks(view["blocks"], "modal") == []
    assert payload_markup_problems(view, "views.open") == []
    assert len(view["title"]["text"]) <= 24
    roles = view["blocks"][1]["element"]
    assert roles["type"] == "checkboxes"
    assert [o["value"] for o in roles["initial_options"]] == ["moe-quant", "kernels"]
    assert all(o in roles["options"] for o in roles["initial_options"])


@pytest.mark.parametrize("count", [10, 11, 150])
def test_past_ten_roles_the_modal_uses_a_multi_select_within_limits(count: int) -> None:
    taxonomy = big_taxonomy(count)
    last = f"role-{count - 1}"
    view = fix_modal(note(roles=(last,), primary_role=last), None, taxonomy, None, BOTH)
    element = view["blocks"][1]["element"]
    assert element["type"] == ("checkboxes" if count <= 10 else "multi_static_select")
    assert len(element["options"]) == min(count, 100)
    assert [o["value"] for o in element["initial_options"]] == [last]
    assert validate_blocks(view["blocks"], "modal") == []


def test_reading_and_checking_a_submission() -> None:
    taxonomy = load_taxonomy(None)
    view = fix_modal(note(), None, taxonomy, "C1", BOTH)

    def submitted(roles: list[str], primary: str | None, verdict: str | None) -> FixForm:
        def opt(v: str) -> dict[str, object]:
            return {"value": v}

        values = {
            "roles": {"roles": {"selected_options": [opt(r) for r in roles]}},
            "primary": {"primary": {"selected_option": opt(primary) if primary else None}},
            "verdict": {"verdict": {"selected_option": opt(verdict) if verdict else None}},
        }
        found = read_fix_form({**view, "state": {"values": values}})
        assert found is not None
        return found

    good = submitted(["kv-cache", "kernels"], "kernels", "skim")
    assert good == FixForm(7, "C1", ("kv-cache", "kernels"), "kernels", Verdict.SKIM)
    assert form_errors(good, taxonomy, BOTH) == {}
    assert set(form_errors(submitted([], None, None), taxonomy, BOTH)) == {
        "roles",
        "primary",
        "verdict",
    }
    assert set(form_errors(submitted(["kv-cache"], "kernels", "deep"), taxonomy, BOTH)) == {
        "primary"
    }
    assert (
        "No longer a role"
        in form_errors(submitted(["gone"], "gone", "deep"), taxonomy, BOTH)["roles"]
    )
    assert read_fix_form({"private_metadata": "not json"}) is None


def test_replies_and_the_revised_mark_are_escaped_and_valid() -> None:
    taxonomy = load_taxonomy(None)
    for reply in (
        not_editor_reply(["U0A", "U0B"], BOTH),
        fix_saved_reply(note(), 2, taxonomy, BOTH),
        note_detail_reply(
            note(), NoteFix(7, ("kernels",), "kernels", None, "cli:<x>", T0), taxonomy, BOTH
        ),
    ):
        assert validate_blocks(reply["blocks"]) == []
        assert payload_markup_problems(reply, "reply") == []
    block = menu_note_block(note(), "kernels", taxonomy, BOTH, revised=True)
    assert block["text"]["text"].endswith(revised_mark(BOTH))
    assert validate_blocks([block]) == []


def test_editors_setting_names_a_bad_id() -> None:
    assert load_settings(editors=" U0A, W0B ,").editor_ids == {"U0A", "W0B"}
    assert load_settings().may_edit("U0ANYONE")
    assert not load_settings(editors="U0A").may_edit("U0B")
    with pytest.raises(SettingsError, match=r"PRDIGEST_EDITORS.*bob"):
        load_settings(editors="U0A,bob")
