"""Block Kit of corrections: the "Fix roles…" modal, reading its submission, and replies.

Pure functions: a view or message dict out, nothing sent. Option texts are plain_text
(nothing in them is markup); everything in mrkdwn is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.classify.taxonomy import Taxonomy
from bot.domain import MAX_NOTE_ID, Note, NoteFix, Role, Verdict
from bot.i18n.texts import N_, Texts
from bot.render.blocks import Block, context_block, section_block, verdict_badge
from bot.render.mrkdwn import clip, escape, escaped, link
from bot.render.replies import Message, error_reply, message

FIX_CALLBACK_ID = "prdigest_fix"
ROLES_BLOCK = "roles"
PRIMARY_BLOCK = "primary"
VERDICT_BLOCK = "verdict"
MAX_CHECKBOXES = 10  # Slack's limit; larger taxonomies get a multi-select
MAX_SELECT_OPTIONS = 100
MAX_OPTION_TEXT = 75
MAX_OPTION_VALUE = 150  # Slack's limit on an option's value
_VERDICTS = frozenset(v.value for v in Verdict)
_VERDICT_TEXT = {
    Verdict.DEEP: N_("{verdict}: worth a close read"),
    Verdict.SKIM: N_("{verdict}: worth a skim"),
    Verdict.SKIP: N_("{verdict}: can be skipped"),
}


def _option(text: str, value: str) -> dict[str, Any]:
    return {
        "text": {"type": "plain_text", "text": clip(text, MAX_OPTION_TEXT, plain=True)},
        "value": value,
    }


def _role_option(role: Role, t: Texts) -> dict[str, Any]:
    return _option(f"{t.role_name(role)} ({role.slug})", role.slug)


def _offered_roles(taxonomy: Taxonomy, current: Sequence[str]) -> list[Role]:
    """Every role, or (past Slack's 100 options) the note's roles first, then the others."""
    roles = list(taxonomy.roles)
    if len(roles) <= MAX_SELECT_OPTIONS:
        return roles
    mine = [r for r in roles if r.slug in current]
    return mine + [r for r in roles if r.slug not in current][: MAX_SELECT_OPTIONS - len(mine)]


def fix_modal(
    note: Note, fix: NoteFix | None, taxonomy: Taxonomy, channel: str | None, t: Texts
) -> dict[str, Any]:
    """The modal: the note's roles as checkboxes (a multi-select past ten roles), the
    primary role and the verdict as selects, each set to the note's current values."""
    offered = _offered_roles(taxonomy, note.roles)
    current = [r for r in offered if r.slug in note.roles]
    options = [_role_option(r, t) for r in offered]
    initial = [_role_option(r, t) for r in current]
    roles_element: dict[str, Any] = {
        "type": "checkboxes" if len(options) <= MAX_CHECKBOXES else "multi_static_select",
        "action_id": ROLES_BLOCK,
        "options": options,
    }
    if roles_element["type"] == "multi_static_select":
        roles_element["placeholder"] = {"type": "plain_text", "text": t.gettext("Pick roles")}
    if initial:
        roles_element["initial_options"] = initial
    primary_element: dict[str, Any] = {
        "type": "static_select",
        "action_id": PRIMARY_BLOCK,
        "placeholder": {"type": "plain_text", "text": t.gettext("Pick the primary role")},
        "options": options,
    }
    primary = next((r for r in offered if r.slug == note.primary_role), None)
    if primary is not None:
        primary_element["initial_option"] = _role_option(primary, t)
    verdicts = [
        _option(t.gettext(_VERDICT_TEXT[v], verdict=t.verdict(v)), v.value) for v in Verdict
    ]
    verdict_element = {
        "type": "static_select",
        "action_id": VERDICT_BLOCK,
        "options": verdicts,
        "initial_option": verdicts[list(Verdict).index(note.verdict)],
    }
    title = link(note.pr_url, note.title, 300) if note.pr_url else escaped(note.title, 300)
    badge = verdict_badge(note.verdict, t)
    blocks: list[Block] = [
        section_block(f"*{title}*\n{badge} · " + t.gettext("note #{id}", id=note.id)),
        _input(ROLES_BLOCK, t.gettext("Roles: who should read it"), roles_element),
        _input(PRIMARY_BLOCK, t.gettext("Primary role: the thread it belongs in"), primary_element),
        _input(VERDICT_BLOCK, t.gettext("Verdict"), verdict_element),
        context_block(_fix_line(fix, t)),
    ]
    metadata = json.dumps({"note": note.id, "channel": channel or ""})
    return {
        "type": "modal",
        "callback_id": FIX_CALLBACK_ID,
        "private_metadata": metadata,
        "title": {"type": "plain_text", "text": clip(t.gettext("Fix roles"), 24, plain=True)},
        "submit": {"type": "plain_text", "text": t.gettext("Save")},
        "close": {"type": "plain_text", "text": t.gettext("Cancel")},
        "blocks": blocks,
    }


def _input(block_id: str, label: str, element: dict[str, Any]) -> Block:
    return {
        "type": "input",
        "block_id": block_id,
        "label": {"type": "plain_text", "text": label},
        "element": element,
    }


def _fix_line(fix: NoteFix | None, t: Texts) -> str:
    if fix is None:
        return t.gettext("Set by the classifier. A fix wins over it from now on, for everyone.")
    when = fix.fixed_at.strftime("%Y-%m-%d %H:%M UTC")
    return t.gettext(
        "Last fixed by {editor} on {when}. Saving replaces that fix.",
        editor=escape(fix.fixed_by),
        when=when,
    )


@dataclass(frozen=True)
class FixForm:
    """What an editor submitted: the note, its roles, the primary role and the verdict."""

    note_id: int
    channel: str | None
    roles: tuple[str, ...]
    primary: str | None
    verdict: Verdict | None


class _Submitted(BaseModel):
    """Strict shapes of what the modal sends back: no coercion, no Infinity or NaN."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, allow_inf_nan=False)


class _Metadata(_Submitted):
    note: int = Field(ge=1, le=MAX_NOTE_ID)
    channel: str = Field(default="", pattern=r"^[A-Z0-9]{0,40}$")


class _Chosen(_Submitted):
    value: str = Field(max_length=MAX_OPTION_VALUE)


class _Element(_Submitted):
    selected_options: list[_Chosen] | None = None
    selected_option: _Chosen | None = None


class _State(_Submitted):
    values: dict[str, dict[str, _Element]] = {}


def read_fix_form(view: Mapping[str, Any]) -> FixForm | None:
    """The submitted values; None when the view is not one of ours (metadata or state of
    another shape). A choice left empty is None, for `form_errors` to name."""
    try:
        meta = _Metadata.model_validate_json(_text(view.get("private_metadata")))
        state = _State.model_validate(view.get("state") or {})
    except ValidationError:
        return None

    def element(block: str) -> _Element:
        return state.values.get(block, {}).get(block) or _Element()

    roles = tuple(o.value for o in element(ROLES_BLOCK).selected_options or ())
    primary = element(PRIMARY_BLOCK).selected_option
    chosen = element(VERDICT_BLOCK).selected_option
    verdict = Verdict(chosen.value) if chosen and chosen.value in _VERDICTS else None
    return FixForm(
        meta.note, meta.channel or None, roles, primary.value if primary else None, verdict
    )


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def form_errors(form: FixForm, taxonomy: Taxonomy, t: Texts) -> dict[str, str]:
    """Problems to show next to the modal's inputs (empty: the form is fine)."""
    errors: dict[str, str] = {}
    unknown = [r for r in form.roles if r not in taxonomy.slugs]
    if not form.roles:
        errors[ROLES_BLOCK] = t.gettext("Pick at least one role.")
    elif unknown:
        errors[ROLES_BLOCK] = t.gettext(
            "No longer a role: {roles}. Reopen the menu.", roles=", ".join(unknown)[:100]
        )
    if form.primary is None:
        errors[PRIMARY_BLOCK] = t.gettext("Pick the primary role.")
    elif form.roles and form.primary not in form.roles:
        errors[PRIMARY_BLOCK] = t.gettext("The primary role must be one of the roles ticked above.")
    if form.verdict is None:
        errors[VERDICT_BLOCK] = t.gettext("Pick a verdict.")
    return errors


def not_editor_reply(editors: Sequence[str], t: Texts) -> Message:
    """A member outside PRDIGEST_EDITORS asked to fix a note: nothing changes."""
    shown = ", ".join(escape(e) for e in sorted(editors)[:10])
    return error_reply(
        t.gettext(
            "Only editors can fix notes, and you are not one of them; nothing was changed. "
            "Editors: {editors}. An admin adds editors with PRDIGEST_EDITORS.",
            editors=shown,
        )
    )


def fix_saved_reply(note: Note, updated: int, taxonomy: Taxonomy, t: Texts) -> Message:
    """Confirmation to the editor after a fix."""
    names = ", ".join(_names(note.roles, taxonomy, t))
    where = (
        " "
        + t.ngettext(
            "Updated {count} digest message in place.",
            "Updated {count} digest messages in place.",
            updated,
            count=updated,
        )
        if updated
        else ""
    )
    text = t.gettext(
        "Fixed “{title}”: {roles} · {verdict} (primary {primary}).",
        title=escaped(note.title, 200),
        roles=escape(names),
        verdict=t.verdict(note.verdict),
        primary=escape(note.primary_role),
    )
    return message(text + where, [section_block(f":white_check_mark: {text}{where}")])


def _names(slugs: Sequence[str], taxonomy: Taxonomy, t: Texts) -> list[str]:
    out = []
    for slug in slugs:
        try:
            out.append(t.role_name(taxonomy.get(slug), both="{en}"))
        except KeyError:
            out.append(slug)
    return out


def note_detail_reply(note: Note, fix: NoteFix | None, taxonomy: Taxonomy, t: Texts) -> Message:
    """The whole note, for the one reader who asked from its menu."""
    title = link(note.pr_url, note.title, 300) if note.pr_url else escaped(note.title, 300)
    roles = escape(" · ".join(_names(note.roles, taxonomy, t)))
    number = t.gettext("note #{id}", id=note.id)
    blocks: list[Block] = [
        section_block(f"*{title}*\n{verdict_badge(note.verdict, t)} · {roles}"),
        section_block(escaped(note.paragraph, 2900)),
        context_block(f"{number} · {escape(note.source)} · {_fix_line(fix, t)}"),
    ]
    return message(f"{escaped(note.title, 300)}: {escaped(note.paragraph, 2000)}", blocks)
