"""Forged and malformed Slack payloads, sent signed to the real app over HTTP (and Socket
Mode): a 400 or a polite refusal, never a 5xx or a traceback, and nothing stored changes.

The property test takes payloads shaped as Slack sends them for every listener (slash
command, buttons in a message and in App Home, the note menu, the fix modal, App Home
opened) and puts random JSON values into each field in turn.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck as Health
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from slack_bolt import App

from bot.domain import MAX_NOTE_ID, Verdict
from bot.i18n.texts import Language, texts_for
from bot.render.blocks import (
    FIX_OPTION,
    MORE_ACTION_ID,
    NOTE_MENU_ACTION_ID,
    RESUME_ACTION_ID,
    SHOW_OPTION,
    SUBSCRIBE_ACTION_ID,
    UNWATCH_ACTION_ID,
)
from bot.render.fix_modal import fix_modal
from bot.render.replies import MorePage, role_action_id
from bot.services import Services, ingest_paths
from bot.slack.app import ReplyPool, build_app
from bot.slack.client import build_web_client
from bot.slack.listeners.payloads import (
    FOREIGN_COMMAND,
    NO_USER_COMMAND,
    read_payload,
    whole_number,
)
from bot.slack.server import (
    HealthCheck,
    RunningServer,
    SocketModeConnection,
    make_wsgi_app,
    serve_in_thread,
)
from bot.slack.slack_link import OK, SlackLink
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import FIXTURES, seed_files, team_note_files
from tests.support.process import local_request
from tests.support.slacksign import (
    block_actions_body,
    event_body,
    signed_headers,
    slash_command_body,
    view_submission_body,
)
from tests.support.socketslack import SocketSlack
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN

SECRET = "test-signing-secret"
TEAM = "T0001"  # the fake Slack's workspace: what auth.test answers
OTHER_TEAM = "T0OTHER"
USER = "U123"
EDITOR = "U0EDITOR"
_urls = itertools.count(1)
_triggers = itertools.count(1)

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


@dataclass
class Bot:
    """The app as `serve` wires it in HTTP mode, its Slack link having met the fake."""

    slack: FakeSlack
    services: Services
    app: App
    server: RunningServer

    def post(self, body: str | bytes, content_type: str | None = None) -> tuple[int, bytes]:
        raw = body.encode() if isinstance(body, str) else body
        headers = signed_headers(SECRET, raw)
        if content_type:
            headers["Content-Type"] = content_type
        return local_request(self.server.port, "POST", "/slack/events", raw, headers)

    def sent(self) -> list[str]:
        """The Web API methods and response_urls the bot called (its start-up auth.test aside)."""
        return [c.method for c in self.slack.calls if c.method != "auth.test"]

    def response_url(self) -> str:
        return f"http://127.0.0.1:{self.slack.port}/response/p{next(_urls)}"

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until the work of every request so far has finished: once all the reply
        pool's threads run one of these at the same time, none is running anything else."""
        executor = self.app.listener_runner.listener_executor
        assert isinstance(executor, ReplyPool)
        barrier = threading.Barrier(executor.workers + 1, timeout=timeout)
        for _ in range(executor.workers):
            executor.submit(barrier.wait)
        barrier.wait()

    def stored(self) -> dict[str, list[str]]:
        """Every row of every table, as text: what "nothing changed" compares. Not the cache
        of what Slack says of a user (reader_profiles): answering anyone in their language
        may fill it, and it holds nothing a request asked for."""
        engine = self.services.store.engine
        out = {}
        with engine.connect() as conn:
            for table in sorted(sa.inspect(engine).get_table_names()):
                if table == "reader_profiles":
                    continue
                rows = conn.execute(sa.text(f'SELECT * FROM "{table}"')).all()
                out[table] = sorted(repr(tuple(row)) for row in rows)
        return out


@pytest.fixture
def bot(services: Services, slack: FakeSlack) -> Iterator[Bot]:
    ingest_paths(services, team_note_files())
    services.settings = services.settings.model_copy(
        update={
            "channel": DIGEST_CHANNEL,
            "slack_api_url": slack.api_url,
            "slack_bot_token": SecretStr(SLACK_TOKEN),
            "editors": EDITOR,
        }
    )
    client = build_web_client(services.settings, token=SLACK_TOKEN)
    link = SlackLink(client)
    assert link.check() == OK and link.team_id == TEAM
    app = build_app(services, client, signing_secret=SECRET, socket_mode=False, link=link)
    server = serve_in_thread(
        make_wsgi_app(app, HealthCheck(services.store, client, link), signing_secret=SECRET)
    )
    try:
        yield Bot(slack, services, app, server)
    finally:
        server.stop()


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO)
    return caplog


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    """Records that carry a traceback (or would print one)."""
    return [
        f"{r.name}: {r.getMessage()[:200]}"
        for r in caplog.records
        if r.exc_info or r.exc_text or "Traceback" in r.getMessage()
    ]


def payload_of(body: str) -> dict[str, Any]:
    return dict(json.loads(dict(parse_qsl(body))["payload"]))


def as_form(payload: Any) -> str:
    return urlencode({"payload": json.dumps(payload)})


def a_note_id(bot: Bot) -> int:
    return bot.services.store.list_notes()[0].id


def menu_body(note_id: int, option: str, user: str, url: str | None = None) -> str:
    return block_actions_body(
        f"{NOTE_MENU_ACTION_ID}:{note_id}",
        "",
        user_id=user,
        channel_id="C123",
        response_url=url,
        trigger_id=f"trigger-{next(_triggers)}",
        action_type="overflow",
        selected_option={"text": {"type": "plain_text", "text": "x"}, "value": option},
    )


def chosen(value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": value}, "value": value}


def fix_values(roles: list[str], primary: str, verdict: str) -> dict[str, Any]:
    return {
        "roles": {"roles": {"type": "checkboxes", "selected_options": [chosen(r) for r in roles]}},
        "primary": {"primary": {"type": "static_select", "selected_option": chosen(primary)}},
        "verdict": {"verdict": {"type": "static_select", "selected_option": chosen(verdict)}},
    }


def fix_submission(bot: Bot, user: str, view: dict[str, Any] | None = None) -> dict[str, Any]:
    """A fix that changes the note (its verdict flips), as the modal submits it."""
    note = bot.services.store.get_notes([a_note_id(bot)])[0]
    view = view or {**fix_modal(note, None, bot.services.taxonomy, "C123", BOTH), "id": "V0FIX"}
    verdict = Verdict.SKIP if note.verdict is not Verdict.SKIP else Verdict.DEEP
    values = fix_values(list(note.roles), note.primary_role, verdict.value)
    return payload_of(view_submission_body(view, values, user_id=user))


def ack_of(raw: bytes) -> dict[str, Any]:
    return dict(json.loads(raw)) if raw.strip() else {}


# ------------------------------------------------------------- the reported crashes


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the transport is under test
def test_bodies_bolt_cannot_parse_are_400_without_a_traceback(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    before = bot.stored()
    click = payload_of(block_actions_body(SUBSCRIBE_ACTION_ID, "moe-quant", channel_id="C1"))
    bodies: list[tuple[str, str | None]] = [
        ("payload=" + json.dumps([]), None),
        ("payload=" + json.dumps("x"), None),
        ("payload=5", None),
        ("[]", "application/json"),
        ('"x"', "application/json"),
        ("null", "application/json"),
        ("payload=%7Bnot-json", None),
        (as_form({**click, "team": 5}), None),
        (as_form({**click, "enterprise": [1]}), None),
        (as_form({**click, "authorizations": [1]}), None),
        ("\udcff", None),
    ]
    for body, content_type in bodies:
        raw = body.encode("utf-8", "surrogateescape")
        status, answer = bot.post(raw, content_type)
        assert status == 400, (body, status, answer)
        assert b"Traceback" not in answer
    bot.settle()
    assert tracebacks(logged) == []
    assert bot.stored() == before
    assert bot.sent() == []


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_payloads_of_the_wrong_shape_are_400_before_any_listener(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    before = bot.stored()
    click = payload_of(block_actions_body(SUBSCRIBE_ACTION_ID, "moe-quant", channel_id="C1"))
    submission = fix_submission(bot, EDITOR)
    forged = [
        {**click, "actions": "prdigest_subscribe"},
        {**click, "actions": []},
        {**click, "actions": [{"action_id": 5, "type": "button"}]},
        {**click, "user": "U123"},
        {**click, "user": {"id": "<!channel>"}},
        {**click, "view": "x"},
        {**click, "response_url": 5},
        {**click, "type": "interactive_message", "callback_id": SUBSCRIBE_ACTION_ID},
        {**submission, "view": "x"},
        {**submission, "view": {**submission["view"], "callback_id": None}},
        {**submission, "user": "U0EDITOR"},
        {"type": "view_closed", "user": {"id": USER}, "view": submission["view"]},
    ]
    for payload in forged:
        status, answer = bot.post(as_form(payload))
        assert status == 400, (payload, status, answer)
    event = json.loads(event_body({"type": "app_home_opened", "user": USER, "tab": "home"}))
    for broken in ({**event, "event": "x"}, {**event, "event": {"type": "app_home_opened"}}):
        assert bot.post(json.dumps(broken))[0] == 400
    bot.settle()
    assert tracebacks(logged) == []
    assert bot.stored() == before
    assert bot.sent() == []
    assert sum("refused a Slack request" in r.getMessage() for r in logged.records) >= len(forged)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_broken_slash_command_gets_a_polite_ephemeral_answer(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    before = bot.stored()
    command = dict(parse_qsl(slash_command_body("subscribe moe", response_url=bot.response_url())))
    cases = [
        ({**command, "user_id": ""}, NO_USER_COMMAND),
        ({**command, "team_id": "<!here>"}, "could not be read"),
        ({**command, "type": "block_actions"}, "could not be read"),
    ]
    for form, expected in cases:
        status, answer = bot.post(urlencode(form))
        assert status == 200
        reply = ack_of(answer)
        assert reply["response_type"] == "ephemeral" and expected in reply["text"], form
    as_json = {**command, "text": ["subscribe", "moe"], "user_id": 5}
    status, answer = bot.post(json.dumps(as_json))
    assert status == 200 and "nothing was done" in ack_of(answer)["text"]
    bot.settle()
    assert tracebacks(logged) == []
    assert bot.stored() == before


def test_the_fix_flow_asks_for_an_editor_before_anything_else(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    before = bot.stored()
    submission = fix_submission(bot, USER)
    view = submission["view"]
    broken_views = [
        {**view, "private_metadata": '{"note": Infinity}'},
        {**view, "private_metadata": '{"note": NaN, "channel": 5}'},
        {**view, "private_metadata": '{"note": 1e999}'},
        {**view, "private_metadata": '{"note": "²"}'},
        {**view, "state": "x"},
        {**view, "state": {"values": []}},
        {**view, "state": {"values": {"roles": {"roles": {"selected_options": "kernels"}}}}},
    ]
    for broken in [view, *broken_views]:
        status, answer = bot.post(as_form({**submission, "view": broken}))
        assert status == 200
        assert "Only editors" in ack_of(answer)["errors"]["roles"], broken
    for broken in broken_views:  # an editor is told the form is not one of ours
        status, answer = bot.post(as_form({**fix_submission(bot, EDITOR), "view": broken}))
        assert status == 200
        assert "out of date" in ack_of(answer)["errors"]["roles"], broken
    for value in (f"{FIX_OPTION}:²", f"{FIX_OPTION}:٣", f"{FIX_OPTION}:{a_note_id(bot)}"):
        url = bot.response_url()
        assert bot.post(menu_body(a_note_id(bot), value, USER, url))[0] == 200
        reply = bot.slack.wait_for(url.split(str(bot.slack.port), 1)[1])[-1].params
        assert "Only editors" in reply["text"], value
    for value in (f"{FIX_OPTION}:²", f"{SHOW_OPTION}:²", f"{SHOW_OPTION}:1_0", f"{SHOW_OPTION}:"):
        url = bot.response_url()
        assert bot.post(menu_body(a_note_id(bot), value, EDITOR, url))[0] == 200
        reply = bot.slack.wait_for(url.split(str(bot.slack.port), 1)[1])[-1].params
        assert "no longer there" in reply["text"], value
    bot.settle()
    assert tracebacks(logged) == []
    assert bot.stored() == before
    assert bot.slack.count("views.open") == 0


def test_another_workspace_is_refused_and_logged_once(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    before = bot.stored()
    for _ in range(3):
        url = bot.response_url()
        status, answer = bot.post(
            slash_command_body("subscribe moe", team_id=OTHER_TEAM, response_url=url)
        )
        assert status == 200 and ack_of(answer)["text"] == FOREIGN_COMMAND
    click = block_actions_body(
        SUBSCRIBE_ACTION_ID, "moe-quant", team_id=OTHER_TEAM, channel_id="C1"
    )
    assert bot.post(click)[0] == 400
    home = payload_of(block_actions_body(SUBSCRIBE_ACTION_ID, "moe-quant"))
    home["view"] = {**home["view"], "app_installed_team_id": OTHER_TEAM}
    assert bot.post(as_form(home))[0] == 400
    submission = fix_submission(bot, EDITOR)
    assert bot.post(as_form({**submission, "team": {"id": OTHER_TEAM}}))[0] == 400
    event = event_body({"type": "app_home_opened", "user": USER, "tab": "home"}, OTHER_TEAM)
    assert bot.post(event)[0] == 200  # acknowledged, so Slack does not retry; nothing done
    bot.settle()
    assert bot.stored() == before
    assert bot.sent() == []
    lines = [r.getMessage() for r in logged.records if OTHER_TEAM in r.getMessage()]
    assert len(lines) == 1 and TEAM in lines[0], lines
    # The installed workspace is still served.
    assert bot.post(slash_command_body("subscribe moe", response_url=bot.response_url()))[0] == 200
    bot.settle()
    assert bot.services.store.subscriptions_of(TEAM, USER) == ["moe-quant"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_slack_refusal_inside_a_listener_is_one_line(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    """A trigger used twice (a double click, or a forged one): Slack refuses views.open;
    the editor hears that something went wrong and the log has one line, no traceback."""
    note_id = a_note_id(bot)
    body = menu_body(note_id, f"{FIX_OPTION}:{note_id}", EDITOR)
    assert bot.post(body)[0] == 200
    # the modal opens after the ack: the second click must come after the first one's
    # views.open, or the first one is the one Slack refuses
    bot.slack.wait_for("views.open")
    url = bot.response_url()
    again = payload_of(body)
    assert bot.post(as_form({**again, "response_url": url}))[0] == 200
    reply = bot.slack.wait_for(url.split(str(bot.slack.port), 1)[1])[-1].params
    assert "went wrong" in reply["text"]
    bot.settle()
    assert [c.ok for c in bot.slack.calls_for("views.open")] == [True, False]
    assert tracebacks(logged) == []
    lines = [r.getMessage() for r in logged.records if "expired_trigger_id" in r.getMessage()]
    assert lines == ["Slack answered expired_trigger_id to views.open"]


def test_whole_numbers_are_ascii_digits_and_bounded() -> None:
    assert whole_number("0") == 0 and whole_number("42") == 42
    assert whole_number(str(MAX_NOTE_ID)) == MAX_NOTE_ID
    for text in ("", "²", "٣", "1_0", " 1", "+1", "-1", "1.0", "Infinity", str(MAX_NOTE_ID + 1)):
        assert whole_number(text) is None, text
    assert whole_number("9" * 5000) is None
    assert whole_number("7", maximum=5) is None


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_socket_mode_envelopes_bolt_cannot_read_are_dropped(
    services: Services, socket_slack: SocketSlack, logged: pytest.LogCaptureFixture
) -> None:
    ingest_paths(services, seed_files())
    with FakeSlack(token=SLACK_TOKEN, app_token="xapp-test") as slack:
        slack.socket_url = socket_slack.url
        settings_ = services.settings.model_copy(update={"slack_api_url": slack.api_url})
        client = build_web_client(settings_, token=SLACK_TOKEN)
        app = build_app(services, client, signing_secret=None, socket_mode=True)
        connection = SocketModeConnection(app, "xapp-test", client)
        connection.connect()
        try:
            url = f"http://127.0.0.1:{slack.port}/response/socket"
            command = dict(parse_qsl(slash_command_body("roles", response_url=url)))
            envelopes: list[tuple[str, Any]] = [
                ("list", []),
                ("number", 5),
                ("team", {**command, "team": 5}),
                ("shape", {**command, "user_id": ["U1"]}),
                ("good", command),
            ]
            for name, payload in envelopes:
                socket_slack.outgoing.put(
                    {
                        "envelope_id": name,
                        "type": "slash_commands",
                        "payload": payload,
                        "accepts_response_payload": True,
                    }
                )
            acks = {}
            for _ in range(2):
                ack = socket_slack.received.get(timeout=10)
                acks[ack["envelope_id"]] = ack.get("payload") or {}
            time.sleep(0.3)
            assert socket_slack.received.empty()  # the unreadable ones went unacknowledged
            assert set(acks) == {"shape", "good"}
            assert "nothing was done" in acks["shape"]["text"]
            assert "nothing was done" not in json.dumps(acks["good"])
            assert "roles" in slack.wait_for("/response/socket")[-1].params["text"].lower()
        finally:
            connection.close()
    assert tracebacks(logged) == []
    assert sum("refused" in r.getMessage() for r in logged.records) >= 3


# ------------------------------------------------------------- payloads as Slack sends them

RECORDED: dict[str, Any] = json.loads((FIXTURES / "slack_payloads.json").read_text())
RECORDED_NAMES = [name for name in RECORDED if name != "about"]


def recorded(bot: Bot, name: str) -> dict[str, Any]:
    """A recorded payload, its response_url pointed at the fake Slack (tests never reach
    the real one) and its fix at a note that exists."""
    payload = json.loads(json.dumps(RECORDED[name]))
    if "response_url" in payload:
        payload["response_url"] = bot.response_url()
    if name == "view_submission":
        meta = json.loads(payload["view"]["private_metadata"])
        payload["view"]["private_metadata"] = json.dumps({**meta, "note": a_note_id(bot)})
    return dict(payload)


@pytest.mark.parametrize("name", RECORDED_NAMES)
def test_payloads_as_slack_sends_them_pass_the_models(name: str) -> None:
    """The models are strict, not narrower than Slack: every field Slack sends is kept."""
    payload = read_payload(RECORDED[name])
    kept = payload.model_fields_set | set(payload.model_extra or {})
    assert kept == set(RECORDED[name])


def test_payloads_as_slack_sends_them_are_served(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    store = bot.services.store
    command = recorded(bot, "slash_command")
    assert bot.post(urlencode(command))[0] == 200
    reply = bot.slack.wait_for(command["response_url"].split(str(bot.slack.port), 1)[1])
    assert "moe-quant" in reply[-1].params["text"]
    click = recorded(bot, "block_actions_message")
    assert bot.post(as_form(click))[0] == 200
    bot.slack.wait_for("chat.postEphemeral")  # in a channel: to the clicker only
    assert bot.post(as_form(recorded(bot, "block_actions_home")))[0] == 200
    bot.settle()
    assert store.subscriptions_of(TEAM, "W0READER") == ["moe-quant", "kernels"]
    status, answer = bot.post(as_form(recorded(bot, "view_submission")))
    assert (status, ack_of(answer)) == (200, {})
    fixed = store.get_fix(a_note_id(bot))
    assert fixed is not None and fixed.fixed_by == EDITOR
    assert bot.post(json.dumps(recorded(bot, "app_home_opened")))[0] == 200
    status, answer = bot.post(json.dumps(RECORDED["url_verification"]))
    assert status == 200 and RECORDED["url_verification"]["challenge"] in answer.decode()
    bot.settle()
    homes = [c for c in bot.slack.calls_for("views.publish") if c.params["user_id"] == "W0READER"]
    assert len(homes) == 2  # the Home tab's button and the tab opened
    assert tracebacks(logged) == []


# ------------------------------------------------------------- the property test


class Embedded:
    """JSON carried inside a string (private_metadata, a More button's value): its own
    fields are mutated too, then it is written back as a string."""

    def __init__(self, value: Any) -> None:
        self.value = value


def embed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: embed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [embed(v) for v in value]
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return Embedded(embed(json.loads(value)))
        except ValueError:
            return value
    return value


def unembed(value: Any) -> Any:
    if isinstance(value, Embedded):
        return json.dumps(unembed(value.value))
    if isinstance(value, dict):
        return {k: unembed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unembed(v) for v in value]
    return value


Path = tuple[str | int | None, ...]  # None: step into an Embedded


def paths(value: Any, prefix: Path = ()) -> list[Path]:
    found = [prefix]
    if isinstance(value, Embedded):
        found += paths(value.value, (*prefix, None))
    elif isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*prefix, index))
    return found


def mutated(value: Any, path: Path, new: Any, delete: bool) -> Any:
    """A copy of `value` with the thing at `path` replaced by `new` (or removed)."""
    if not path:
        return new
    step, rest = path[0], path[1:]
    if step is None:
        assert isinstance(value, Embedded)
        return Embedded(mutated(value.value, rest, new, delete))
    if isinstance(value, dict):
        copy = dict(value)
        if delete and not rest:
            del copy[step]
        else:
            copy[step] = mutated(value[step], rest, new, delete)
        return copy
    copy_list = list(value)
    assert isinstance(step, int)
    if delete and not rest:
        del copy_list[step]
    else:
        copy_list[step] = mutated(value[step], rest, new, delete)
    return copy_list


TRICKY = [
    "²",
    "٣",
    f"{FIX_OPTION}:²",
    f"{SHOW_OPTION}:٣",
    OTHER_TEAM,
    EDITOR,
    USER,
    "",
    "<!channel>",
    "Infinity",
    "9" * 40,
    "https://example.invalid/x",
    10**30,
    -1,
    2**63,
    float("inf"),
    float("nan"),
]
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(TRICKY),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@dataclass
class Case:
    """A payload as Slack sends it to one listener, and how it travels."""

    name: str
    build: Callable[[Bot], Any]
    form: str = "payload"  # "payload": payload=<json>; "command": a plain form; "json"
    reset: Callable[[Bot], None] = field(default=lambda bot: None)


def _unsubscribe_all(bot: Bot) -> None:
    for (team, user), _roles in bot.services.store.all_subscriptions().items():
        bot.services.store.unsubscribe(team, user, None)


def _home_click(action_id: str, value: str) -> Callable[[Bot], Any]:
    return lambda bot: payload_of(block_actions_body(action_id, value))


def _message_click(action_id: str, value: str) -> Callable[[Bot], Any]:
    return lambda bot: payload_of(
        block_actions_body(action_id, value, channel_id="C123", response_url=bot.response_url())
    )


CASES = [
    Case(
        "command",
        lambda bot: dict(
            parse_qsl(slash_command_body("subscribe moe", response_url=bot.response_url()))
        ),
        form="command",
        reset=_unsubscribe_all,
    ),
    Case(
        "command as JSON",
        lambda bot: dict(
            parse_qsl(slash_command_body("unsubscribe moe", response_url=bot.response_url()))
        ),
        form="json",
    ),
    Case(
        "subscribe in a message",
        _message_click(SUBSCRIBE_ACTION_ID, "moe-quant"),
        reset=_unsubscribe_all,
    ),
    Case(
        "subscribe in App Home",
        _home_click(role_action_id(SUBSCRIBE_ACTION_ID, "kernels"), "kernels"),
        reset=_unsubscribe_all,
    ),
    Case("resume", _home_click(RESUME_ACTION_ID, "")),
    Case("unwatch", _message_click(UNWATCH_ACTION_ID, "moe")),
    Case("more", _message_click(MORE_ACTION_ID, MorePage("moe", 5).encode())),
    Case(
        "note menu",
        lambda bot: payload_of(
            menu_body(a_note_id(bot), f"{SHOW_OPTION}:{a_note_id(bot)}", USER, bot.response_url())
        ),
    ),
    Case(
        "fix menu",
        lambda bot: payload_of(
            menu_body(a_note_id(bot), f"{FIX_OPTION}:{a_note_id(bot)}", EDITOR, bot.response_url())
        ),
    ),
    Case("fix submission", lambda bot: fix_submission(bot, EDITOR)),
    Case("recorded command", lambda bot: recorded(bot, "slash_command"), form="command"),
    Case("recorded message click", lambda bot: recorded(bot, "block_actions_message")),
    Case("recorded App Home click", lambda bot: recorded(bot, "block_actions_home")),
    Case("recorded fix", lambda bot: recorded(bot, "view_submission")),
    Case("recorded App Home opened", lambda bot: recorded(bot, "app_home_opened"), form="json"),
    Case(
        "App Home opened",
        lambda bot: json.loads(
            event_body({"type": "app_home_opened", "user": USER, "tab": "home"})
        ),
        form="json",
    ),
]


def encoded(case: Case, payload: Any) -> str:
    if case.form == "json":
        return json.dumps(payload)
    if case.form == "command" and isinstance(payload, dict):
        return urlencode(
            {k: v if isinstance(v, str) else json.dumps(v) for k, v in payload.items()}
        )
    return as_form(payload)


def refused(status: int, answer: bytes) -> bool:
    """A 4xx, or an answer that says nothing was done."""
    if 400 <= status < 500:
        return True
    try:
        ack = json.loads(answer) if answer.strip() else {}
    except ValueError:
        return False
    return isinstance(ack, dict) and (
        ack.get("response_action") == "errors" or "nothing was done" in str(ack.get("text"))
    )


def check_forged_payloads(bot: Bot, logged: pytest.LogCaptureFixture, per_case: int) -> None:
    """For each case in turn, `per_case` payloads with one field replaced by a random JSON
    value (or removed) go to the running app."""
    refusals: dict[str, int] = {}

    def forge(case: Case) -> None:
        @settings(
            max_examples=per_case,
            deadline=None,
            derandomize=per_case <= 20,  # the default suite sees the same payloads each run
            database=None,
            suppress_health_check=[Health.function_scoped_fixture, Health.too_slow],
        )
        @given(st.integers(0, 10**6), json_values, st.booleans())
        def run(pick: int, new: Any, delete: bool) -> None:
            case.reset(bot)
            bot.settle()
            base = embed(case.build(bot))
            where = paths(base)
            path = where[pick % len(where)]
            removable = delete and bool(path) and path[-1] is not None
            payload = unembed(mutated(base, path, new, removable))
            logged.clear()
            before = bot.stored()
            status, answer = bot.post(encoded(case, payload))
            bot.settle()
            assert status < 500, (case.name, path, status, answer[:300])
            assert b"Traceback" not in answer
            assert tracebacks(logged) == [], (case.name, path)
            if refused(status, answer):
                assert bot.stored() == before, (case.name, path, new)
                refusals[case.name] = refusals.get(case.name, 0) + 1

        run()

    for case in CASES:
        forge(case)
    assert sum(refusals.values()) >= len(CASES), refusals  # the forging does reach the checks


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_unmutated_payloads_do_change_the_store(bot: Bot) -> None:
    """The property test's refusals mean something: the payloads it starts from are
    accepted and change what is stored."""
    for case in CASES:
        case.reset(bot)
        bot.settle()
        before = bot.stored()
        status, answer = bot.post(encoded(case, case.build(bot)))
        bot.settle()
        assert status == 200 and not refused(status, answer), (case.name, answer)
        if case.name in ("command", "subscribe in a message", "subscribe in App Home"):
            assert bot.stored() != before, case.name
        if case.name == "fix submission":
            assert bot.stored() != before
            assert bot.services.store.get_fix(a_note_id(bot)) is not None


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # both: the slow run below
def test_forged_payloads_never_crash_a_listener(bot: Bot, logged: pytest.LogCaptureFixture) -> None:
    check_forged_payloads(bot, logged, per_case=5)


@pytest.mark.slow
def test_many_forged_payloads_never_crash_a_listener(
    bot: Bot, logged: pytest.LogCaptureFixture
) -> None:
    check_forged_payloads(bot, logged, per_case=60)
