"""A note's "…" menu (fix its roles, show it whole) and the correction modal's submission."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from slack_bolt import Ack, BoltContext, Respond
from slack_sdk import WebClient

from bot.delivery.languages import cached_texts, channel_texts
from bot.delivery.posting import DeliveryError
from bot.delivery.revisions import update_revised_messages
from bot.readers.corrections import FixError, fix_note, note_and_fix
from bot.render.blocks import FIX_OPTION, NOTE_MENU_ACTION_ID, SHOW_OPTION
from bot.render.fix_modal import (
    FIX_CALLBACK_ID,
    ROLES_BLOCK,
    fix_modal,
    fix_saved_reply,
    form_errors,
    not_editor_reply,
    note_detail_reply,
    read_fix_form,
)
from bot.render.replies import error_reply
from bot.services import Services
from bot.slack.listeners.acking import AckFirst
from bot.slack.listeners.actions import channel_of, clicker_texts, who_asks
from bot.slack.listeners.commands import send_ephemeral
from bot.slack.listeners.payloads import whole_number

log = logging.getLogger(__name__)

FIXED_NOTE = "fixed_note"  # set in the context once the fix is stored
_MENU = re.compile(rf"^{re.escape(NOTE_MENU_ACTION_ID)}(:\d+)?$")


def register(listeners: AckFirst, services: Services) -> None:
    listeners.action(_MENU)(note_menu(services))
    listeners.view(FIX_CALLBACK_ID, ack=fix_submitted(services))(after_fix(services))


def note_menu(services: Services) -> Callable[..., None]:
    """A note's "…" menu: show the note whole, or open the fix form for an editor."""

    def on_note_menu(
        ack: Ack,
        body: dict[str, Any],
        action: dict[str, Any],
        respond: Respond | None,
        client: WebClient,
    ) -> None:
        ack()
        _team, user_id = who_asks(body)
        if not user_id:
            return
        channel = channel_of(body)
        value = str((action.get("selected_option") or {}).get("value") or "")
        kind, _, raw = value.partition(":")
        if kind == "pr":
            return  # a link: Slack opened it in the browser
        t = clicker_texts(services, client, body)
        if kind == FIX_OPTION and not services.settings.may_edit(user_id):
            reply = not_editor_reply(sorted(services.settings.editor_ids), t)
            send_ephemeral(respond, client, channel, user_id, reply)
            return
        note_id = whole_number(raw)
        found = note_and_fix(services, note_id) if note_id is not None else None
        if kind not in (FIX_OPTION, SHOW_OPTION) or found is None:
            reply = error_reply(t.gettext("That note is no longer there; nothing was done."))
            send_ephemeral(respond, client, channel, user_id, reply)
            return
        note, fix = found
        if kind == SHOW_OPTION:
            reply = note_detail_reply(note, fix, services.taxonomy, t)
            send_ephemeral(respond, client, channel, user_id, reply)
            return
        view = fix_modal(note, fix, services.taxonomy, channel, t)
        client.views_open(trigger_id=str(body.get("trigger_id") or ""), view=view)

    return on_note_menu


def fix_submitted(services: Services) -> Callable[..., None]:
    def on_fix_submitted(
        ack: Ack, body: dict[str, Any], view: dict[str, Any], context: BoltContext
    ) -> None:
        """In the request's thread: the fix is stored, or refused with the form's errors
        (in the editor's language as the store knows it: Slack is not asked here)."""
        # Who asks comes first: a non-editor hears so whatever else the form holds.
        team_id, user_id = who_asks(body)
        t = (
            cached_texts(services, team_id, user_id)
            if team_id and user_id
            else channel_texts(services.settings)
        )
        if not user_id or not services.settings.may_edit(user_id):
            ack(
                response_action="errors",
                errors={ROLES_BLOCK: t.gettext("Only editors can fix notes; nothing was changed.")},
            )
            return
        form = read_fix_form(view)
        if form is None:
            ack(
                response_action="errors",
                errors={
                    ROLES_BLOCK: t.gettext("This form is out of date: open it again from the note.")
                },
            )
            return
        errors = form_errors(form, services.taxonomy, t)
        if errors:
            ack(response_action="errors", errors=errors)
            return
        try:
            fix_note(services, form.note_id, form.roles, form.primary, form.verdict, user_id)
        except FixError as exc:
            log.info("a fix of note %s was refused: %s", form.note_id, exc)
            refused = t.gettext(
                "This note cannot be fixed any more (it may have been removed); nothing was "
                "changed."
            )
            ack(response_action="errors", errors={ROLES_BLOCK: refused})
            return
        ack()
        context[FIXED_NOTE] = form.note_id

    return on_fix_submitted


def after_fix(services: Services) -> Callable[..., None]:
    def update_after_fix(
        body: dict[str, Any], view: dict[str, Any], context: BoltContext, client: WebClient
    ) -> None:
        """After the acknowledgement: the digest messages, then the editor's confirmation."""
        form = read_fix_form(view)
        if form is None or context.get(FIXED_NOTE) != form.note_id:
            return  # refused in the acknowledgement
        found = note_and_fix(services, form.note_id)
        if found is None:
            return
        _team, user_id = who_asks(body)
        updated = 0
        channel = services.settings.channel
        if channel:
            try:
                updated = update_revised_messages(
                    services, client, channel, note_ids=[form.note_id]
                ).updated
            except DeliveryError as exc:
                log.warning("note %s fixed, its digest message not updated: %s", form.note_id, exc)
        if form.channel and user_id:
            t = clicker_texts(services, client, body)
            reply = fix_saved_reply(found[0], updated, services.taxonomy, t)
            client.chat_postEphemeral(channel=form.channel, user=user_id, **reply)

    return update_after_fix
