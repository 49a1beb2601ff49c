"""The shapes of what Slack sends, checked before any listener sees them.

A signed request is still only as good as its body: a forged or broken payload can be any
JSON. `PayloadCheck` runs as a Bolt middleware right after the signature check and before
authorization, so no listener (and no matcher of Bolt's) ever reads a payload that failed
these models. A slash command that fails gets a polite ephemeral answer; anything else an
HTTP 400. Only one workspace is served: a request for another one is refused the same way,
and logged once per workspace.

`bolt_can_read` guards the step before: Bolt parses the body and reads its ids while it
builds the request, before any middleware runs (`payload=[]` breaks it there).

Every refusal is logged as one line (`refusal`): the reason, where the request came in, and
the team and user it names when they have the shape of Slack's ids; never its content (the
user's text, the response_url, anything else it carries).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StringConstraints,
    Tag,
    TypeAdapter,
    ValidationError,
)
from slack_bolt import BoltRequest, BoltResponse
from slack_bolt.middleware import Middleware

from bot.domain import MAX_NOTE_ID

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"  # HTTP mode's one way into Bolt (`bot.slack.server`)
# Slack's ids (users, teams, channels, enterprises) are upper-case letters and digits.
SLACK_ID = r"^[A-Z0-9]{1,40}$"
SlackId = Annotated[str, StringConstraints(pattern=SLACK_ID)]
# A payload's or an envelope's type as Slack names them: safe to repeat in a log line.
_KIND = re.compile(r"^[a-z_]{1,40}$")
# Slack answers to an https URL; tests and proxies use http. Nothing else is followed.
ResponseUrl = Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+$", max_length=2000)]
ShortText = Annotated[str, StringConstraints(max_length=255)]
# Slack's own limits: a button value or option value 2000 characters, private_metadata 3000.
ValueText = Annotated[str, StringConstraints(max_length=2000)]
MetadataText = Annotated[str, StringConstraints(max_length=3000)]
MAX_ACTIONS = 25  # Slack sends one action per click; an actions block holds at most 25
MAX_REMEMBERED_TEAMS = 100  # foreign workspaces logged by name; past this, silently refused

UNREADABLE_COMMAND = "This request could not be read; nothing was done."
NO_USER_COMMAND = "This request names no team or user; nothing was done."
FOREIGN_COMMAND = "prdigest serves another Slack workspace; nothing was done."


class _Shape(BaseModel):
    """Strict: no coercion ("1" is no number, 1 is no text), no Infinity or NaN. Fields we
    do not read are kept as Slack sent them (Slack adds fields over time)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True, allow_inf_nan=False)


class Team(_Shape):
    id: SlackId


class User(_Shape):
    id: SlackId
    team_id: SlackId | None = None


class Channel(_Shape):
    id: SlackId


class Container(_Shape):
    type: ShortText
    channel_id: SlackId | None = None
    view_id: ShortText | None = None
    message_ts: ShortText | None = None


class Option(_Shape):
    value: ValueText


class Action(_Shape):
    type: ShortText
    action_id: ShortText
    block_id: ShortText | None = None
    value: ValueText | None = None
    selected_option: Option | None = None


class View(_Shape):
    """A view as Slack sends it back. `state` is left to whoever reads the form: the fix
    flow answers "only editors" before it looks at what was typed."""

    type: ShortText
    id: ShortText | None = None
    callback_id: ShortText = ""
    private_metadata: MetadataText = ""
    team_id: SlackId | None = None
    app_installed_team_id: SlackId | None = None
    state: Any = None


class ResponseUrlEntry(_Shape):
    response_url: ResponseUrl


class _Interaction(_Shape):
    team: Team | None = None
    enterprise: Team | None = None
    user: User
    trigger_id: ShortText | None = None

    def teams(self) -> set[str]:
        """The workspaces the request acts for: the one listeners store under (`team`, else
        the user's) and the one Bolt authorizes (the view's installing team first)."""
        found = {self.team.id if self.team else self.user.team_id}
        view = getattr(self, "view", None)
        if isinstance(view, View):
            found.add(view.app_installed_team_id)
        return {t for t in found if t}


class BlockActions(_Interaction):
    type: Literal["block_actions"]
    actions: list[Action] = Field(min_length=1, max_length=MAX_ACTIONS)
    container: Container | None = None
    channel: Channel | None = None
    view: View | None = None
    message: dict[str, Any] | None = None
    response_url: ResponseUrl | None = None


class ViewSubmission(_Interaction):
    type: Literal["view_submission"]
    view: View
    response_urls: list[ResponseUrlEntry] = []


class AppHomeOpened(_Shape):
    type: Literal["app_home_opened"]
    user: SlackId
    tab: ShortText = "home"
    channel: SlackId | None = None


class OtherEvent(_Shape):
    """An event no listener handles: Bolt answers it as unhandled."""

    type: ShortText


class Authorization(_Shape):
    team_id: SlackId | None = None
    user_id: SlackId | None = None
    enterprise_id: SlackId | None = None
    is_bot: bool | None = None


def _event_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, Mapping) else None
    return "app_home_opened" if kind == "app_home_opened" else "other"


Event = Annotated[
    Annotated[AppHomeOpened, Tag("app_home_opened")] | Annotated[OtherEvent, Tag("other")],
    Discriminator(_event_kind),
]


class EventCallback(_Shape):
    type: Literal["event_callback"]
    team_id: SlackId
    event: Event
    authorizations: list[Authorization] = Field(default=[], max_length=10)
    event_id: ShortText | None = None

    def teams(self) -> set[str]:
        first = self.authorizations[0].team_id if self.authorizations else None
        return {t for t in (self.team_id, first) if t}


class UrlVerification(_Shape):
    type: Literal["url_verification"]
    challenge: Annotated[str, StringConstraints(max_length=1000)]

    def teams(self) -> set[str]:
        return set()


class SlashCommand(_Shape):
    """A form-encoded slash command: every value is text."""

    type: None = None  # a command carries no `type`; a body with both is not Slack's
    command: ShortText
    text: str = ""
    team_id: SlackId
    user_id: SlackId
    channel_id: SlackId | None = None
    response_url: ResponseUrl | None = None
    trigger_id: ShortText | None = None

    def teams(self) -> set[str]:
        return {self.team_id}


Interactive = BlockActions | ViewSubmission | EventCallback | UrlVerification
Payload = SlashCommand | Interactive
_INTERACTIVE: TypeAdapter[Interactive] = TypeAdapter(
    Annotated[Interactive, Field(discriminator="type")]
)
HANDLED_TYPES = frozenset(
    {"block_actions", "view_submission", "event_callback", "url_verification"}
)


class Unhandled(ValueError):
    """A payload of a kind no listener here handles (view_closed, shortcut, …)."""


def read_payload(body: Mapping[str, Any]) -> Payload:
    """The payload as one of our models; `ValidationError` or `Unhandled` when it is not
    one Slack would send for this app."""
    if "command" in body:
        return SlashCommand.model_validate(body)
    kind = body.get("type")
    if not isinstance(kind, str) or kind not in HANDLED_TYPES:
        raise Unhandled(f"type {kind!r}" if safe_kind(kind) else "an unknown type")
    return _INTERACTIVE.validate_python(body)


def safe_kind(kind: object) -> str | None:
    """`kind` when it has the shape of a type Slack names (`view_closed`), else None."""
    return kind if isinstance(kind, str) and _KIND.match(kind) else None


def claimed_ids(body: object) -> tuple[str | None, str | None]:
    """The team and the user a body names, where they have the shape of Slack's ids.

    The body may be forged (its signature is not checked yet, or it failed), so nothing
    else of it is read: an id is upper-case letters and digits, and cannot carry text."""
    if not isinstance(body, Mapping):
        return None, None
    user = body.get("user")
    team = _first_id(body.get("team_id"), _inner(body.get("team"), "id"), _inner(user, "team_id"))
    event = body.get("event")
    return team, _first_id(body.get("user_id"), _inner(user, "id"), user, _inner(event, "user"))


def _inner(value: object, key: str) -> object:
    return value.get(key) if isinstance(value, Mapping) else None


def _first_id(*candidates: object) -> str | None:
    found = (c for c in candidates if isinstance(c, str) and re.match(SLACK_ID, c))
    return next(found, None)


def unverified_body(text: str) -> object:
    """`text` read as Slack sends a body (JSON, or a form whose `payload` may be JSON), for
    `claimed_ids` alone; None when it is neither."""
    try:
        if text.lstrip().startswith("{"):
            return json.loads(text)
        form = dict(parse_qsl(text, keep_blank_values=True))
        return json.loads(form["payload"]) if "payload" in form else form
    except (ValueError, RecursionError):
        return None


def refusal(reason: str, where: str, body: object = None) -> str:
    """The one log line for a refused request: why, where it came in (`POST /slack/events`,
    `Socket Mode`) and who it names (`claimed_ids`), nothing of its content."""
    team, user = claimed_ids(body)
    named = ", ".join(
        f"{label} {value}" for label, value in (("team", team), ("user", user)) if value
    )
    return f"refused a Slack request ({where}): {reason}" + (f"; {named}" if named else "")


def bolt_can_read(body: str | dict[str, Any], headers: Mapping[str, str]) -> bool:
    """Whether Bolt can build a request from this body: a JSON object (or a form whose
    `payload` is one) whose ids it can read. Bolt's own parsing decides, so the guard
    and Bolt never disagree."""
    try:
        request = BoltRequest(
            body=body,
            headers=dict(headers),
            mode="http" if isinstance(body, str) else "socket_mode",
        )
    except Exception:  # whatever Bolt trips on: the body is not a Slack payload
        return False
    return isinstance(request.body, dict)


def whole_number(text: str, maximum: int = MAX_NOTE_ID) -> int | None:
    """`text` as a number when it is ASCII digits only and at most `maximum`, else None.

    `str.isdigit` accepts "²" (and `int` then fails) and `int` accepts "٣" or "1_0"; a
    number in an action's value is one we wrote, so anything else is not ours."""
    if not text.isascii() or not text.isdigit() or len(text) > len(str(maximum)):
        return None
    number = int(text)
    return number if number <= maximum else None


def _problem(error: ValidationError | Unhandled) -> str:
    """One short line: where the payload went wrong, never its content."""
    if isinstance(error, Unhandled):
        return f"not a request prdigest handles ({error})"
    first = error.errors(include_input=False, include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"malformed payload ({where}: {first['msg']})"[:200]


def _ephemeral(text: str) -> BoltResponse:
    return BoltResponse(
        status=200,
        body=json.dumps({"response_type": "ephemeral", "text": text}),
        headers={"content-type": "application/json;charset=utf-8"},
    )


def _bad_request(error: str) -> BoltResponse:
    return BoltResponse(
        status=400,
        body=json.dumps({"error": error}),
        headers={"content-type": "application/json;charset=utf-8"},
    )


class PayloadCheck(Middleware):
    """Refuse a payload that fails the models, or that speaks for another workspace than
    the installed one (`installed_team`, None while not yet known: then any is served)."""

    def __init__(self, installed_team: Callable[[], str | None]) -> None:
        self.installed_team = installed_team
        self._foreign: set[str] = set()
        self._lock = threading.Lock()

    def process(
        self,
        *,
        req: BoltRequest,
        resp: BoltResponse,
        next: Callable[[], BoltResponse],  # Bolt's name for it
    ) -> BoltResponse | None:
        command = "command" in req.body
        try:
            payload = read_payload(req.body)
        except (ValidationError, Unhandled) as error:
            where = "Socket Mode" if req.mode == "socket_mode" else f"POST {EVENTS_PATH}"
            log.warning("%s", refusal(_problem(error), where, req.body))
            if not command:
                return _bad_request("unreadable payload")
            missing = not _has_ids(req.body)
            return _ephemeral(NO_USER_COMMAND if missing else UNREADABLE_COMMAND)
        installed = self.installed_team()
        foreign = sorted(t for t in payload.teams() if installed and t != installed)
        if foreign:
            self._log_foreign(foreign[0], installed or "")
            if command:
                return _ephemeral(FOREIGN_COMMAND)
            if isinstance(payload, EventCallback):
                return BoltResponse(status=200, body="")  # acknowledged, so Slack stops
            return _bad_request("another workspace")
        return next()

    def _log_foreign(self, team: str, installed: str) -> None:
        with self._lock:
            if team in self._foreign or len(self._foreign) >= MAX_REMEMBERED_TEAMS:
                return
            self._foreign.add(team)
        log.warning(
            "refused requests from Slack workspace %s: prdigest serves only %s "
            "(the workspace its SLACK_BOT_TOKEN belongs to)",
            team,
            installed,
        )


def _has_ids(body: Mapping[str, Any]) -> bool:
    return all(isinstance(body.get(k), str) and body.get(k) for k in ("team_id", "user_id"))
