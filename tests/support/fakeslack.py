"""A local fake of the Slack Web API for tests.

``FakeSlack`` runs a small HTTP server on ``127.0.0.1`` (ephemeral port) that
answers the Web API methods prdigest uses, the way Slack answers them: errors
are ``HTTP 200`` with ``{"ok": false, "error": ...}``, rate limits are
``HTTP 429`` with a ``Retry-After`` header, Block Kit payloads are checked
against Slack's documented limits.  Every call is recorded so tests can assert
on what the bot sent::

    with FakeSlack(token="xoxb-test") as slack:
        client = WebClient(token="xoxb-test", base_url=slack.api_url)
        client.chat_postMessage(channel="C1", text="hi")
        assert slack.count("chat.postMessage") == 1

``validate_blocks`` is a pure function exposing the same Block Kit checks so
rendered blocks can be checked without a server.

``markup_problems`` walks what the bot sent (messages, ephemerals, updates, views,
response_url payloads) for markup it did not make itself: any ``<…>`` other than a
link to a PR or a Slack permalink, and any bare ``&``, ``<`` or ``>``.  User text that
reached mrkdwn or a fallback ``text`` unescaped shows up there.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "ACTIONS_ELEMENTS_LIMIT",
    "ACTION_ID_LIMIT",
    "BLOCK_ID_LIMIT",
    "BUTTON_TEXT_LIMIT",
    "BUTTON_VALUE_LIMIT",
    "CONTEXT_ELEMENTS_LIMIT",
    "HEADER_TEXT_LIMIT",
    "HOME_BLOCKS_LIMIT",
    "MESSAGE_BLOCKS_LIMIT",
    "MESSAGE_TEXT_LIMIT",
    "SECTION_FIELDS_LIMIT",
    "SECTION_FIELD_TEXT_LIMIT",
    "SECTION_TEXT_LIMIT",
    "TOTAL_TEXT_LIMIT",
    "Call",
    "FakeSlack",
    "markup_problems",
    "payload_markup_problems",
    "validate_blocks",
]

# --------------------------------------------------------------------------
# Limits (Slack's documented Block Kit / message limits)
# --------------------------------------------------------------------------

MESSAGE_BLOCKS_LIMIT = 50
"""At most 50 blocks in one message."""
HOME_BLOCKS_LIMIT = 100
"""At most 100 blocks in a Home tab (or modal) view."""
SECTION_TEXT_LIMIT = 3000
"""A section block's ``text`` is at most 3000 characters."""
SECTION_FIELDS_LIMIT = 10
"""A section block has at most 10 ``fields``."""
SECTION_FIELD_TEXT_LIMIT = 2000
"""Each section field is at most 2000 characters."""
HEADER_TEXT_LIMIT = 150
"""A header block's plain_text is at most 150 characters."""
CONTEXT_ELEMENTS_LIMIT = 10
"""A context block has at most 10 elements."""
ACTIONS_ELEMENTS_LIMIT = 25
"""An actions block has at most 25 elements."""
BUTTON_TEXT_LIMIT = 75
"""A button's text is at most 75 characters."""
BUTTON_VALUE_LIMIT = 2000
"""A button's ``value`` is at most 2000 characters."""
BUTTON_URL_LIMIT = 3000
"""A button's ``url`` is at most 3000 characters."""
ACTION_ID_LIMIT = 255
"""An ``action_id`` is at most 255 characters."""
BLOCK_ID_LIMIT = 255
"""A ``block_id`` is at most 255 characters."""
OPTION_TEXT_LIMIT = 75
"""An option's text (selects, overflow) is at most 75 characters."""
OPTION_VALUE_LIMIT = 150
"""An option's value (selects, overflow) is at most 150 characters."""
IMAGE_ALT_TEXT_LIMIT = 2000
"""An image's ``alt_text`` is at most 2000 characters."""
IMAGE_URL_LIMIT = 3000
"""An image's ``image_url`` is at most 3000 characters."""
TOTAL_TEXT_LIMIT = 12000
"""Slack rejects a message whose blocks carry too much text in total with
``msg_blocks_too_long``.  The threshold is not documented precisely; it is
about 10,000-12,000 characters.  The fake rejects totals above 12,000."""
MESSAGE_TEXT_LIMIT = 40000
"""A message's top-level ``text`` over 40,000 characters is ``msg_too_long``."""
CHECKBOX_OPTIONS_LIMIT = 10
"""A ``checkboxes`` element offers at most 10 options."""
INPUT_LABEL_LIMIT = 2000
"""An input block's ``label`` and ``hint`` are at most 2000 characters."""
VIEW_TITLE_LIMIT = 24
"""A modal's ``title``, ``submit`` and ``close`` texts are at most 24 characters."""
PRIVATE_METADATA_LIMIT = 3000
"""A view's ``private_metadata`` is at most 3000 characters."""
CALLBACK_ID_LIMIT = 255
"""A view's ``callback_id`` is at most 255 characters."""
INPUT_ELEMENT_TYPES = frozenset(
    {
        "checkboxes",
        "radio_buttons",
        "static_select",
        "multi_static_select",
        "external_select",
        "multi_external_select",
        "users_select",
        "multi_users_select",
        "conversations_select",
        "multi_conversations_select",
        "channels_select",
        "multi_channels_select",
        "plain_text_input",
        "datepicker",
        "timepicker",
        "datetimepicker",
    }
)
"""Elements an ``input`` block may hold."""

BLOCK_TYPES = frozenset(
    {"section", "header", "context", "divider", "actions", "rich_text", "image", "input"}
)
"""Block types the fake accepts; anything else is ``invalid_blocks``."""
TEXT_OBJECT_TYPES = frozenset({"plain_text", "mrkdwn"})
INTERACTIVE_ELEMENT_TYPES = frozenset(
    {
        "button",
        "static_select",
        "external_select",
        "users_select",
        "conversations_select",
        "channels_select",
        "multi_static_select",
        "multi_external_select",
        "multi_users_select",
        "multi_conversations_select",
        "multi_channels_select",
        "overflow",
        "datepicker",
        "timepicker",
        "datetimepicker",
        "checkboxes",
        "radio_buttons",
        "plain_text_input",
    }
)

JSON_PARAMS = ("blocks", "metadata", "view", "attachments")
"""Parameters a form-encoded request carries as JSON strings."""

DEFAULT_SCOPES = (
    "chat:write,commands,im:write,channels:history,groups:history,im:history,users:read"
)


# --------------------------------------------------------------------------
# Block Kit validation
# --------------------------------------------------------------------------


def _ptr(path: str) -> str:
    return f" [json-pointer:{path}]"


def _count_text(node: Any) -> int:
    """Total characters of every ``text`` string inside ``node``."""
    total = 0
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                total += len(value)
            else:
                total += _count_text(value)
    elif isinstance(node, list):
        for item in node:
            total += _count_text(item)
    return total


class _Checker:
    def __init__(self) -> None:
        self.problems: list[str] = []
        self.block_ids: set[str] = set()
        self.action_ids: set[str] = set()

    def add(self, message: str, path: str) -> None:
        self.problems.append(message + _ptr(path))

    def text_object(
        self,
        obj: Any,
        path: str,
        *,
        limit: int,
        plain_only: bool = False,
    ) -> None:
        if not isinstance(obj, dict):
            self.add("must provide an object", path)
            return
        kind = obj.get("type")
        allowed = {"plain_text"} if plain_only else TEXT_OBJECT_TYPES
        if kind not in allowed:
            self.add(f"must be one of: {', '.join(sorted(allowed))}", path + "/type")
        text = obj.get("text")
        if not isinstance(text, str):
            self.add("must provide a string", path + "/text")
            return
        if len(text) < 1:
            self.add("must be more than 0 characters", path + "/text")
        if len(text) > limit:
            self.add(f"must be less than {limit + 1} characters", path + "/text")

    def string_limit(self, value: Any, path: str, limit: int) -> None:
        if value is None:
            return
        if not isinstance(value, str):
            self.add("must provide a string", path)
        elif len(value) > limit:
            self.add(f"must be less than {limit + 1} characters", path)

    def action_id(self, element: dict[str, Any], path: str) -> None:
        action_id = element.get("action_id")
        if action_id is None:
            return
        self.string_limit(action_id, path + "/action_id", ACTION_ID_LIMIT)
        if isinstance(action_id, str):
            if action_id in self.action_ids:
                self.add(f"duplicate action_id: {action_id}", path + "/action_id")
            self.action_ids.add(action_id)

    def options(self, options: Any, path: str) -> None:
        if not isinstance(options, list):
            return
        for i, option in enumerate(options):
            opath = f"{path}/{i}"
            if not isinstance(option, dict):
                self.add("must provide an object", opath)
                continue
            self.text_object(option.get("text"), opath + "/text", limit=OPTION_TEXT_LIMIT)
            self.string_limit(option.get("value"), opath + "/value", OPTION_VALUE_LIMIT)

    def element(self, element: Any, path: str, *, allow_image: bool = False) -> None:
        if not isinstance(element, dict):
            self.add("must provide an object", path)
            return
        kind = element.get("type")
        if kind == "image" and allow_image:
            self.image_fields(element, path)
            return
        if kind not in INTERACTIVE_ELEMENT_TYPES:
            self.add(f"unsupported element type: {kind}", path + "/type")
            return
        self.action_id(element, path)
        if kind == "button":
            self.text_object(
                element.get("text"), path + "/text", limit=BUTTON_TEXT_LIMIT, plain_only=True
            )
            self.string_limit(element.get("value"), path + "/value", BUTTON_VALUE_LIMIT)
            self.string_limit(element.get("url"), path + "/url", BUTTON_URL_LIMIT)
            style = element.get("style")
            if style is not None and style not in ("primary", "danger"):
                self.add("must be one of: danger, primary", path + "/style")
        elif kind == "overflow":
            options = element.get("options")
            if not isinstance(options, list) or not 2 <= len(options) <= 5:
                self.add("must provide 2 to 5 options", path + "/options")
            self.options(options, path + "/options")
        elif kind in ("static_select", "multi_static_select"):
            options = element.get("options")
            if isinstance(options, list) and len(options) > 100:
                self.add("no more than 100 items allowed", path + "/options")
            self.options(options, path + "/options")
            self.initial_options(element, path)
        elif kind in ("checkboxes", "radio_buttons"):
            options = element.get("options")
            if not isinstance(options, list) or not 1 <= len(options) <= CHECKBOX_OPTIONS_LIMIT:
                self.add(f"must provide 1 to {CHECKBOX_OPTIONS_LIMIT} options", path + "/options")
            self.options(options, path + "/options")
            self.initial_options(element, path)

    def initial_options(self, element: dict[str, Any], path: str) -> None:
        """``initial_option(s)`` must each be exactly one of the element's options."""
        options = element.get("options")
        offered = options if isinstance(options, list) else []
        initial = element.get("initial_options")
        if "initial_option" in element:
            initial = [element["initial_option"]]
        if initial is None:
            return
        if not isinstance(initial, list):
            self.add("must provide an array", path + "/initial_options")
            return
        for i, option in enumerate(initial):
            if option not in offered:
                self.add("must be one of the provided options", f"{path}/initial_options/{i}")

    def image_fields(self, element: dict[str, Any], path: str) -> None:
        if "image_url" not in element and "slack_file" not in element:
            self.add("must provide image_url or slack_file", path)
        self.string_limit(element.get("image_url"), path + "/image_url", IMAGE_URL_LIMIT)
        alt = element.get("alt_text")
        if not isinstance(alt, str):
            self.add("must provide a string", path + "/alt_text")
        elif len(alt) > IMAGE_ALT_TEXT_LIMIT:
            self.add(f"must be less than {IMAGE_ALT_TEXT_LIMIT + 1} characters", path + "/alt_text")

    def block(self, block: Any, path: str) -> None:
        if not isinstance(block, dict):
            self.add("must provide an object", path)
            return
        kind = block.get("type")
        if kind not in BLOCK_TYPES:
            self.add(f"unsupported type: {kind}", path + "/type")
            return
        block_id = block.get("block_id")
        if block_id is not None:
            self.string_limit(block_id, path + "/block_id", BLOCK_ID_LIMIT)
            if isinstance(block_id, str):
                if block_id in self.block_ids:
                    self.add(f"duplicate block_id: {block_id}", path + "/block_id")
                self.block_ids.add(block_id)
        getattr(self, f"_block_{kind}")(block, path)

    def _block_section(self, block: dict[str, Any], path: str) -> None:
        text = block.get("text")
        fields = block.get("fields")
        if text is None and fields is None:
            self.add("must provide either text or fields", path)
        if text is not None:
            self.text_object(text, path + "/text", limit=SECTION_TEXT_LIMIT)
        if fields is not None:
            if not isinstance(fields, list):
                self.add("must provide an array", path + "/fields")
            else:
                if len(fields) > SECTION_FIELDS_LIMIT:
                    self.add(f"no more than {SECTION_FIELDS_LIMIT} items allowed", path + "/fields")
                for i, item in enumerate(fields):
                    self.text_object(item, f"{path}/fields/{i}", limit=SECTION_FIELD_TEXT_LIMIT)
        accessory = block.get("accessory")
        if accessory is not None:
            self.element(accessory, path + "/accessory", allow_image=True)

    def _block_header(self, block: dict[str, Any], path: str) -> None:
        self.text_object(
            block.get("text"), path + "/text", limit=HEADER_TEXT_LIMIT, plain_only=True
        )

    def _block_context(self, block: dict[str, Any], path: str) -> None:
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            self.add("must provide a non-empty array", path + "/elements")
            return
        if len(elements) > CONTEXT_ELEMENTS_LIMIT:
            self.add(f"no more than {CONTEXT_ELEMENTS_LIMIT} items allowed", path + "/elements")
        for i, element in enumerate(elements):
            epath = f"{path}/elements/{i}"
            if isinstance(element, dict) and element.get("type") == "image":
                self.image_fields(element, epath)
            else:
                self.text_object(element, epath, limit=SECTION_TEXT_LIMIT)

    def _block_divider(self, block: dict[str, Any], path: str) -> None:
        return None

    def _block_actions(self, block: dict[str, Any], path: str) -> None:
        elements = block.get("elements")
        if not isinstance(elements, list) or not elements:
            self.add("must provide a non-empty array", path + "/elements")
            return
        if len(elements) > ACTIONS_ELEMENTS_LIMIT:
            self.add(f"no more than {ACTIONS_ELEMENTS_LIMIT} items allowed", path + "/elements")
        for i, element in enumerate(elements):
            self.element(element, f"{path}/elements/{i}")

    def _block_input(self, block: dict[str, Any], path: str) -> None:
        self.text_object(
            block.get("label"), path + "/label", limit=INPUT_LABEL_LIMIT, plain_only=True
        )
        if block.get("hint") is not None:
            self.text_object(
                block.get("hint"), path + "/hint", limit=INPUT_LABEL_LIMIT, plain_only=True
            )
        element = block.get("element")
        if not isinstance(element, dict) or element.get("type") not in INPUT_ELEMENT_TYPES:
            self.add("must provide an input element", path + "/element")
            return
        self.element(element, path + "/element")

    def _block_rich_text(self, block: dict[str, Any], path: str) -> None:
        if not isinstance(block.get("elements"), list):
            self.add("must provide an array", path + "/elements")

    def _block_image(self, block: dict[str, Any], path: str) -> None:
        self.image_fields(block, path)
        title = block.get("title")
        if title is not None:
            self.text_object(title, path + "/title", limit=IMAGE_ALT_TEXT_LIMIT, plain_only=True)


def _check_blocks(blocks: Any, surface: str) -> tuple[list[str], int]:
    """Structural problems and the total text length of ``blocks``."""
    checker = _Checker()
    if not isinstance(blocks, list):
        checker.add("must provide an array", "/blocks")
        return checker.problems, 0
    limit = MESSAGE_BLOCKS_LIMIT if surface == "message" else HOME_BLOCKS_LIMIT
    if len(blocks) > limit:
        checker.add(f"no more than {limit} items allowed", "/blocks")
    for i, block in enumerate(blocks):
        checker.block(block, f"/blocks/{i}")
    return checker.problems, _count_text(blocks)


def validate_blocks(blocks: Any, surface: str = "message") -> list[str]:
    """Problems Slack would report for ``blocks`` (an empty list when valid).

    ``surface`` is ``"message"`` (50 blocks, total-text limit) or ``"home"`` /
    ``"modal"`` (100 blocks).  Each problem names a JSON pointer, e.g.
    ``"must be less than 3001 characters [json-pointer:/blocks/0/text/text]"``.
    """
    if surface not in ("message", "home", "modal"):
        raise ValueError(f"unknown surface: {surface!r}")
    problems, total = _check_blocks(blocks, surface)
    if surface == "message" and total > TOTAL_TEXT_LIMIT:
        problems.append(
            f"total text of {total} characters exceeds {TOTAL_TEXT_LIMIT} (msg_blocks_too_long)"
        )
    return problems


# --------------------------------------------------------------------------
# Markup the bot did not make (unescaped user text)
# --------------------------------------------------------------------------

OWN_LINK = re.compile(
    r"https://github\.com/[\w.-]+/[\w.-]+/pull/\d+"
    r"|https://([\w-]+\.)?slack\.com/archives/[A-Z0-9]+/p\d+"
    r"(\?thread_ts=\d+\.\d+&cid=[A-Z0-9]+)?"
)
"""The links the bot makes itself: to a pull request, and to a message or thread."""
SENDING_METHODS = frozenset(
    {"chat.postMessage", "chat.postEphemeral", "chat.update", "views.publish", "views.open"}
)
RESPONSE_PREFIX = "/response/"
"""Paths the fake serves as response_url endpoints."""
_ANGLED = re.compile(r"<([^<>]*)>")
_BARE_AMP = re.compile(r"&(?!amp;|lt;|gt;)")
_QUOTE = re.compile(r"^> ", re.MULTILINE)


def markup_problems(text: str, where: str = "text") -> list[str]:
    """What in one mrkdwn string (or fallback ``text``) the bot did not make itself.

    Allowed: ``<url|label>`` where ``url`` is one of ``OWN_LINK``, the three entities,
    and ``> `` starting a quoted line.  Everything else that Slack would read as a
    mention, a link or a broken entity is a problem.
    """
    problems = []
    for match in _ANGLED.finditer(text):
        url, bar, _label = match.group(1).partition("|")
        if not bar or not OWN_LINK.fullmatch(html.unescape(url)):
            problems.append(f"{where}: markup the bot did not make: {match.group(0)[:120]!r}")
    rest = _QUOTE.sub("", _ANGLED.sub("", text))
    if "<" in rest or ">" in rest:
        problems.append(f"{where}: unescaped < or > in {text[:120]!r}")
    if _BARE_AMP.search(text):
        problems.append(f"{where}: unescaped & in {text[:120]!r}")
    return problems


def payload_markup_problems(payload: Mapping[str, Any], where: str = "") -> list[str]:
    """``markup_problems`` of every mrkdwn text object and the fallback ``text`` of a
    message payload (or of a view: pass the view)."""
    problems: list[str] = []
    text = payload.get("text")
    if isinstance(text, str) and payload.get("mrkdwn") is not False:
        problems += markup_problems(text, f"{where}/text")
    stack: list[tuple[str, Any]] = [(f"{where}/blocks", payload.get("blocks"))]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
                problems += markup_problems(node["text"], path)
            stack.extend((f"{path}/{k}", v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((f"{path}/{i}", v) for i, v in enumerate(node))
    return problems


# --------------------------------------------------------------------------
# Recorded calls
# --------------------------------------------------------------------------


@dataclass
class Call:
    """One request received by the fake."""

    method: str
    params: dict[str, Any]
    headers: dict[str, str]
    at: float
    response: dict[str, Any] = field(default_factory=dict)
    status: int = 200
    token: str | None = None

    @property
    def ok(self) -> bool:
        """True when the call was answered ``HTTP 200`` with ``ok: true``."""
        return self.status == 200 and bool(self.response.get("ok"))


@dataclass
class _Reply:
    body: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


def _error(error: str, **extra: Any) -> _Reply:
    return _Reply({"ok": False, "error": error, **extra})


def _truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    return isinstance(value, str) and value.strip().lower() in ("1", "true", "yes")


def _ts_value(ts: Any) -> Decimal | None:
    try:
        return Decimal(str(ts))
    except (InvalidOperation, ValueError):
        return None


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _matches(target: str, method: str) -> bool:
    """A stall's target: a Web API method by name, a response_url path by its start."""
    return method.startswith(target) if target.startswith("/") else method == target


def _decode_cursor(cursor: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    prefix, _, number = text.partition(":")
    if prefix != "offset" or not number.isdigit():
        return None
    return int(number)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {k: v for k, v in self.headers.items()}
        reply = self.server.fake._dispatch(self.path, headers, raw)
        payload = json.dumps(reply.body).encode()
        # A client that gave up on a stalled call has closed its end by now.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeSlack


@dataclass
class _Fault:
    kind: str  # "fail" | "ratelimit" | "server"
    remaining: int
    error: str = ""
    retry_after: int = 1
    status: int = 200
    handled: bool = False  # the call is carried out before the fault's answer


@dataclass
class _Rate:
    window: float
    limit: int
    per_channel: bool
    hits: dict[str, deque[float]] = field(default_factory=dict)


Handler = Callable[["FakeSlack", dict[str, Any]], dict[str, Any]]


class FakeSlack:
    """A fake Slack Web API server for tests (see module docstring).

    State a test may inspect (read it after the calls under test returned):

    * ``calls`` / ``calls_for(method)`` / ``count(method)`` / ``accepted(method)``
    * ``messages`` — channel id -> messages in posting order (top level and
      replies), each a dict as ``conversations.history`` returns it plus
      ``metadata`` when one was sent
    * ``ephemerals`` — list of ``chat.postEphemeral`` payloads
    * ``home_views`` — user id -> last view published with ``views.publish``
    * ``opened_views`` — modals opened with ``views.open``, oldest first

    Knobs: ``fail``, ``rate_limit``, ``server_error``, ``set_rate``, ``set_latency``,
    ``stall`` (with ``release``),
    ``channels_not_joined`` (with ``reads_need_membership`` for reads too),
    ``unknown_channels``, ``expired_response_urls``, ``scopes`` (the ``X-OAuth-Scopes``
    header), ``socket_url``, ``register``.
    """

    team_id = "T0001"
    team = "Test Team"
    team_domain = "test"
    bot_user_id = "UBOT"
    bot_id = "B0001"
    app_id = "A0001"

    def __init__(
        self,
        token: str = "xoxb-test",
        *,
        app_token: str = "xapp-test",
        clock: Callable[[], float] = time.time,
        scopes: str = DEFAULT_SCOPES,
    ) -> None:
        self.token = token
        self.app_token = app_token
        self.scopes = scopes
        self.socket_url = "wss://wss-primary.slack.com/link/?ticket=fake"
        self.channels_not_joined: set[str] = set()
        # True: reading a channel (conversations.history / replies) also needs membership,
        # so channels_not_joined answer not_in_channel there too (as a public channel does).
        self.reads_need_membership = False
        self.unknown_channels: set[str] = set()
        # response_url paths Slack no longer takes (used after 30 minutes, or too often).
        self.expired_response_urls: set[str] = set()
        self.messages: dict[str, list[dict[str, Any]]] = {}
        self.ephemerals: list[dict[str, Any]] = []
        self.home_views: dict[str, dict[str, Any]] = {}
        # users.info answers: what `set_user` gave each user (time zone, locale).
        self.users: dict[str, dict[str, Any]] = {}
        self.opened_views: list[dict[str, Any]] = []
        self._used_triggers: set[str] = set()
        self._clock = clock
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._calls: list[Call] = []
        self._faults: dict[str, list[_Fault]] = {}
        self._rates: dict[str, _Rate] = {}
        self._latency: dict[str, float] = {}
        self._stalls: dict[str, float] = {}
        self._released = threading.Event()
        self._last_ts_us = 0
        self._view_counter = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._handlers: dict[str, Handler] = {
            "auth.test": FakeSlack._auth_test,
            "chat.postMessage": FakeSlack._chat_post_message,
            "chat.postEphemeral": FakeSlack._chat_post_ephemeral,
            "chat.update": FakeSlack._chat_update,
            "chat.getPermalink": FakeSlack._chat_get_permalink,
            "views.publish": FakeSlack._views_publish,
            "views.open": FakeSlack._views_open,
            "conversations.open": FakeSlack._conversations_open,
            "users.info": FakeSlack._users_info,
            "conversations.history": FakeSlack._conversations_history,
            "conversations.replies": FakeSlack._conversations_replies,
            "apps.connections.open": FakeSlack._apps_connections_open,
        }

    # ------------------------------------------------------------ lifecycle

    def start(self) -> FakeSlack:
        """Start serving on an ephemeral port (idempotent)."""
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fakeslack",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port (idempotent)."""
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        self.release()
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeSlack is not running")
        return int(self._server.server_address[1])

    @property
    def api_url(self) -> str:
        """Base URL for ``WebClient(base_url=...)``, ending in ``/api/``."""
        return f"http://127.0.0.1:{self.port}/api/"

    # ------------------------------------------------------------ recording

    @property
    def calls(self) -> list[Call]:
        """A snapshot of every call received, oldest first."""
        with self._lock:
            return list(self._calls)

    def calls_for(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if c.method == method]

    def count(self, method: str) -> int:
        return len(self.calls_for(method))

    def accepted(self, method: str) -> list[Call]:
        """Calls to ``method`` answered ``ok: true``."""
        return [c for c in self.calls_for(method) if c.ok]

    def sent_markup_problems(self) -> list[str]:
        """Unescaped user text in anything the bot sent (see ``markup_problems``)."""
        problems: list[str] = []
        for call in self.calls:
            if call.method in SENDING_METHODS:
                payload = call.params.get("view") if call.method.startswith("views.") else None
                target = payload if isinstance(payload, dict) else call.params
                problems += payload_markup_problems(target, call.method)
            elif call.method.startswith(RESPONSE_PREFIX):
                problems += payload_markup_problems(call.params, "response_url")
        return problems

    def reset_calls(self) -> None:
        with self._lock:
            self._calls.clear()

    def wait_for(self, method: str, n: int = 1, timeout: float = 5.0) -> list[Call]:
        """Block until at least ``n`` calls to ``method`` arrived; TimeoutError otherwise."""
        return self._wait(method, n, timeout, lambda c: c.method == method)

    def wait_stalled(self, target: str, n: int = 1, timeout: float = 5.0) -> list[Call]:
        """Block until at least ``n`` calls for ``target`` (as ``stalled`` names it) arrived.

        The client's side of a stalled call can end (it gave up) before the server's thread
        has read the request, so a test counts attempts after waiting here, not before.
        """
        return self._wait(target, n, timeout, lambda c: _matches(target, c.method))

    def _wait(
        self, target: str, n: int, timeout: float, wanted: Callable[[Call], bool]
    ) -> list[Call]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [c for c in self._calls if wanted(c)]
                if len(found) >= n:
                    return found
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(found)} of {n} {target} calls after {timeout}s")
                self._changed.wait(left)

    # ------------------------------------------------------------ knobs

    def fail(self, method: str, error: str = "channel_not_found", times: int = 1) -> None:
        """The next ``times`` calls to ``method`` answer ``{"ok": false, "error": error}``."""
        self._add_fault(method, _Fault("fail", times, error=error))

    def rate_limit(self, method: str, times: int = 1, retry_after: int = 1) -> None:
        """The next ``times`` calls answer HTTP 429 with ``Retry-After: retry_after``."""
        self._add_fault(method, _Fault("ratelimit", times, retry_after=retry_after))

    def server_error(
        self,
        method: str,
        times: int = 1,
        status: int = 503,
        error: str | None = None,
        *,
        handled: bool = False,
    ) -> None:
        """The next ``times`` calls answer HTTP ``status`` (5xx). With ``handled`` each is
        carried out first (a posted message is kept), as when Slack fails after doing it."""
        if error is None:
            error = "service_unavailable" if status == 503 else "internal_error"
        fault = _Fault("server", times, error=error, status=status, handled=handled)
        self._add_fault(method, fault)

    def clear_faults(self) -> None:
        """Drop pending injected faults and rate limits."""
        with self._lock:
            self._faults.clear()
            self._rates.clear()

    def set_rate(
        self,
        method: str,
        per_minute: float | None,
        *,
        per_channel: bool = False,
        burst: int = 1,
    ) -> None:
        """Limit ``method`` to ``per_minute`` calls (``None`` removes the limit).

        The limiter is a sliding window admitting ``burst`` calls per
        ``burst * 60 / per_minute`` seconds, so ``per_minute=60`` admits one
        call per second (Slack's rule for ``chat.postMessage``, keyed per
        channel with ``per_channel=True``).  A call over the limit is answered
        HTTP 429 with ``Retry-After`` = seconds until a slot frees, rounded up,
        at least 1; rejected calls do not use up the window.
        """
        with self._lock:
            if per_minute is None:
                self._rates.pop(method, None)
                return
            if per_minute <= 0 or burst < 1:
                raise ValueError("per_minute must be > 0 and burst >= 1")
            self._rates[method] = _Rate(
                window=burst * 60.0 / per_minute, limit=burst, per_channel=per_channel
            )

    def set_latency(self, method: str, seconds: float) -> None:
        """Answer every call to ``method`` ``seconds`` late (0 removes the delay).

        The delay is spent outside the fake's lock, so concurrent calls overlap the way
        they do against Slack; rate limits count a call when it arrives.
        """
        if seconds < 0:
            raise ValueError("seconds must be >= 0")
        with self._lock:
            if seconds:
                self._latency[method] = seconds
            else:
                self._latency.pop(method, None)

    def stall(self, target: str, seconds: float) -> None:
        """Hold every call to ``target`` ``seconds`` before answering, as a Slack that
        accepted the connection and went quiet does (``release`` ends every stall at once).

        ``target`` is a Web API method (``"views.publish"``) or the start of a response_url
        path (``"/response/slow-"``).  A stalled call is recorded when it arrives, so a test
        can count the attempts while they hang; its answer is filled in when it is sent.
        """
        if seconds <= 0:
            raise ValueError("seconds must be > 0")
        with self._lock:
            self._stalls[target] = seconds
            self._released.clear()

    def release(self) -> None:
        """End every stall: calls held now are answered, later ones are not held."""
        with self._lock:
            self._stalls.clear()
            self._released.set()

    def stalled(self, target: str) -> list[Call]:
        """Calls that arrived for ``target`` (a method or a path prefix), answered or not."""
        with self._lock:
            return [c for c in self._calls if _matches(target, c.method)]

    def _stall_for(self, method: str) -> float:
        with self._lock:
            return max(
                (s for target, s in self._stalls.items() if _matches(target, method)),
                default=0.0,
            )

    def register(self, method: str, handler: Handler) -> None:
        """Answer ``method`` with ``handler(fake, params) -> response dict``."""
        with self._lock:
            self._handlers[method] = handler

    def _add_fault(self, method: str, fault: _Fault) -> None:
        if fault.remaining < 1:
            return
        with self._lock:
            self._faults.setdefault(method, []).append(fault)

    # ------------------------------------------------------------ helpers

    def next_ts(self) -> str:
        """A new message ts: wall-clock based, strictly increasing, unique."""
        with self._lock:
            now_us = int(self._clock() * 1_000_000)
            us = max(now_us, self._last_ts_us + 100)
            self._last_ts_us = us
            return f"{us // 1_000_000}.{us % 1_000_000:06d}"

    def messages_in(self, channel: str) -> list[dict[str, Any]]:
        """Copies of the messages stored for ``channel`` (DM: ``"D<user>"``), oldest first."""
        with self._lock:
            return [dict(m) for m in self.messages.get(channel, [])]

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """Parent and replies of the thread rooted at ``ts``, oldest first."""
        with self._lock:
            return [
                dict(m)
                for m in self.messages.get(channel, [])
                if m["ts"] == ts or m.get("thread_ts") == ts
            ]

    def seed_message(
        self,
        channel: str,
        text: str = "",
        *,
        user: str = "U123",
        thread_ts: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        ts: str | None = None,
    ) -> str:
        """Store a message as if someone (``user``) had posted it; returns its ts."""
        with self._lock:
            message: dict[str, Any] = {
                "type": "message",
                "ts": ts or self.next_ts(),
                "user": user,
                "text": text,
                "team": self.team_id,
            }
            if blocks is not None:
                message["blocks"] = blocks
            if metadata is not None:
                message["metadata"] = metadata
            self._store(channel, message, thread_ts)
            return str(message["ts"])

    @staticmethod
    def dm_channel(user: str) -> str:
        """The DM channel id the fake uses for ``user``."""
        return f"D{user}"

    def permalink(self, channel: str, ts: str) -> str:
        return f"https://{self.team_domain}.slack.com/archives/{channel}/p{ts.replace('.', '')}"

    # ------------------------------------------------------------ dispatch

    def _parse(
        self, path: str, headers: Mapping[str, str], raw: bytes
    ) -> tuple[str | None, dict[str, Any], str | None]:
        parts = urlsplit(path)
        method = parts.path[len("/api/") :] if parts.path.startswith("/api/") else None
        params: dict[str, Any] = {
            k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()
        }
        problem: str | None = None
        ctype = ""
        for key, value in headers.items():
            if key.lower() == "content-type":
                ctype = value.lower()
        if raw:
            if "json" in ctype:
                try:
                    body = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    problem = "invalid_json"
                else:
                    if isinstance(body, dict):
                        params.update(body)
                    else:
                        problem = "invalid_json"
            else:
                text = raw.decode("utf-8", "replace")
                form = parse_qs(text, keep_blank_values=True)
                params.update({k: v[-1] for k, v in form.items()})
        for name in JSON_PARAMS:
            encoded = params.get(name)
            if isinstance(encoded, str) and encoded:
                # Left as a string when it is not JSON; the method reports it.
                with contextlib.suppress(ValueError):
                    params[name] = json.loads(encoded)
        return method, params, problem

    @staticmethod
    def _token(headers: Mapping[str, str], params: dict[str, Any]) -> str | None:
        for key, value in headers.items():
            if key.lower() == "authorization" and value.startswith("Bearer "):
                return value[len("Bearer ") :].strip()
        token = params.get("token")
        return token if isinstance(token, str) else None

    def _dispatch(self, path: str, headers: dict[str, str], raw: bytes) -> _Reply:
        method, params, problem = self._parse(path, headers, raw)
        token = self._token(headers, params)
        call = Call(
            method=method or path,
            params=params,
            headers=headers,
            at=time.time(),
            token=token,
        )
        stall = self._stall_for(call.method)
        if stall:
            with self._changed:
                self._calls.append(call)
                self._changed.notify_all()
            self._released.wait(stall)
        if method is None and path.startswith(RESPONSE_PREFIX):
            reply = self._response_url(path, params, problem)
        elif method is None:
            reply = _Reply({"ok": False, "error": "unknown_method"}, status=404)
        else:
            with self._lock:
                reply = self._answer(method, params, token, problem)
            reply.headers.setdefault("X-OAuth-Scopes", self.scopes)
        call.response = reply.body
        call.status = reply.status
        delay = self._latency.get(method or "", 0.0)
        if delay:
            time.sleep(delay)
        if not stall:
            with self._changed:
                self._calls.append(call)
                self._changed.notify_all()
        return reply

    def _response_url(self, path: str, params: dict[str, Any], problem: str | None) -> _Reply:
        """A response_url accepts a message like chat.postEphemeral; Slack answers an
        invalid one HTTP 400 with the error."""
        if problem is not None:
            return _Reply({"ok": False, "error": problem}, status=400)
        if path in self.expired_response_urls:
            return _Reply({"ok": False, "error": "expired_url"}, status=404)
        try:
            self._message_content(params)
        except _SlackError as err:
            return _Reply({"ok": False, "error": err.error, **err.extra}, status=400)
        return _Reply({"ok": True})

    def _answer(
        self, method: str, params: dict[str, Any], token: str | None, problem: str | None
    ) -> _Reply:
        handler = self._handlers.get(method)
        if handler is None:
            return _error("unknown_method")
        if problem is not None:
            return _error(problem)
        auth = self._check_token(method, token)
        if auth is not None:
            return auth
        fault = self._take_fault(method)
        if fault is not None and fault.kind != "fail" and not fault.handled:
            return self._fault_reply(fault)
        limited = self._check_rate(method, params)
        if limited is not None:
            return limited
        if fault is not None and not fault.handled:
            return self._fault_reply(fault)
        try:
            answer = _Reply(handler(self, params))
        except _SlackError as err:
            return _error(err.error, **err.extra)
        return answer if fault is None else self._fault_reply(fault)

    def _check_token(self, method: str, token: str | None) -> _Reply | None:
        if not token:
            return _error("not_authed")
        if method == "apps.connections.open":
            if token == self.app_token and token.startswith("xapp-"):
                return None
            if token == self.token:
                return _error("not_allowed_token_type")
            return _error("invalid_auth")
        if token == self.token:
            return None
        if token == self.app_token:
            return _error("not_allowed_token_type")
        return _error("invalid_auth")

    def _take_fault(self, method: str) -> _Fault | None:
        queue = self._faults.get(method)
        if not queue:
            return None
        fault = queue[0]
        fault.remaining -= 1
        if fault.remaining <= 0:
            queue.pop(0)
        return fault

    @staticmethod
    def _fault_reply(fault: _Fault) -> _Reply:
        if fault.kind == "ratelimit":
            return _Reply(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(fault.retry_after)},
            )
        if fault.kind == "server":
            return _Reply({"ok": False, "error": fault.error}, status=fault.status)
        return _error(fault.error)

    def _check_rate(self, method: str, params: dict[str, Any]) -> _Reply | None:
        rate = self._rates.get(method)
        if rate is None:
            return None
        key = ""
        if rate.per_channel:
            key = self._resolve_channel(str(params.get("channel") or params.get("user_id") or ""))
        hits = rate.hits.setdefault(key, deque())
        now = time.monotonic()
        while hits and hits[0] <= now - rate.window:
            hits.popleft()
        if len(hits) >= rate.limit:
            wait = hits[0] + rate.window - now
            retry_after = max(1, math.ceil(wait))
            return _Reply(
                {"ok": False, "error": "ratelimited"},
                status=429,
                headers={"Retry-After": str(retry_after)},
            )
        hits.append(now)
        return None

    # ------------------------------------------------------------ storage

    @staticmethod
    def _resolve_channel(channel: str) -> str:
        if channel[:1] in ("U", "W"):
            return FakeSlack.dm_channel(channel)
        return channel

    def _store(self, channel: str, message: dict[str, Any], thread_ts: str | None) -> None:
        stored = self.messages.setdefault(channel, [])
        if thread_ts:
            message["thread_ts"] = thread_ts
            parent = self._find(channel, thread_ts)
            if parent is not None:
                parent["thread_ts"] = thread_ts
                parent["reply_count"] = int(parent.get("reply_count", 0)) + 1
                parent["latest_reply"] = message["ts"]
                users = list(parent.get("reply_users", []))
                author = message.get("user")
                if author and author not in users:
                    users.append(author)
                parent["reply_users"] = users
                parent["reply_users_count"] = len(users)
        stored.append(message)

    def _find(self, channel: str, ts: str) -> dict[str, Any] | None:
        for message in self.messages.get(channel, []):
            if message["ts"] == ts:
                return message
        return None

    # ------------------------------------------------------------ validation

    @staticmethod
    def _channel(params: dict[str, Any]) -> str:
        channel = params.get("channel")
        if not isinstance(channel, str) or not channel:
            raise _SlackError("channel_not_found")
        return channel

    def _known_channel(self, channel: str) -> str:
        resolved = self._resolve_channel(channel)
        if channel in self.unknown_channels or resolved in self.unknown_channels:
            raise _SlackError("channel_not_found")
        return resolved

    def _joined_channel(self, channel: str) -> str:
        resolved = self._known_channel(channel)
        if channel in self.channels_not_joined or resolved in self.channels_not_joined:
            raise _SlackError("not_in_channel")
        return resolved

    @staticmethod
    def _message_content(params: dict[str, Any], surface: str = "message") -> dict[str, Any]:
        """Validate text/blocks/metadata of a message; the fields to store."""
        text = params.get("text")
        blocks = params.get("blocks")
        if isinstance(blocks, str) and blocks:
            raise _SlackError("invalid_blocks_format")
        has_blocks = blocks is not None and blocks != [] and blocks != ""
        has_text = isinstance(text, str) and text != ""
        if not has_text and not has_blocks and not params.get("attachments"):
            raise _SlackError("no_text")
        if isinstance(text, str) and len(text) > MESSAGE_TEXT_LIMIT:
            raise _SlackError("msg_too_long")
        content: dict[str, Any] = {"text": text if isinstance(text, str) else ""}
        if has_blocks:
            if not isinstance(blocks, list):
                raise _SlackError("invalid_blocks_format")
            problems, total = _check_blocks(blocks, surface)
            if problems:
                raise _invalid_blocks(problems)
            if total > TOTAL_TEXT_LIMIT:
                raise _SlackError("msg_blocks_too_long")
            content["blocks"] = blocks
        metadata = params.get("metadata")
        if metadata is not None and metadata != "":
            if (
                not isinstance(metadata, dict)
                or not isinstance(metadata.get("event_type"), str)
                or not metadata["event_type"]
                or not isinstance(metadata.get("event_payload", {}), dict)
            ):
                raise _SlackError("invalid_metadata_format")
            content["metadata"] = {
                "event_type": metadata["event_type"],
                "event_payload": metadata.get("event_payload", {}),
            }
        if params.get("attachments"):
            content["attachments"] = params["attachments"]
        return content

    # ------------------------------------------------------------ methods

    def _auth_test(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": f"https://{self.team_domain}.slack.com/",
            "team": self.team,
            "user": "prdigest",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _bot_message(self, ts: str, content: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "message",
            "ts": ts,
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "team": self.team_id,
            **content,
        }

    def _chat_post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._joined_channel(self._channel(params))
        content = self._message_content(params)
        thread_ts = params.get("thread_ts") or None
        if thread_ts is not None:
            thread_ts = str(thread_ts)
        message = self._bot_message(self.next_ts(), content)
        if thread_ts and _truthy(params.get("reply_broadcast")):
            message["reply_broadcast"] = True
        self._store(channel, message, thread_ts)
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": dict(message)}

    def _chat_post_ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._known_channel(self._channel(params))
        user = params.get("user")
        if not isinstance(user, str) or not user:
            raise _SlackError("user_not_in_channel")
        content = self._message_content(params)
        ts = self.next_ts()
        ephemeral: dict[str, Any] = {"channel": channel, "user": user, "message_ts": ts, **content}
        if params.get("thread_ts"):
            ephemeral["thread_ts"] = str(params["thread_ts"])
        self.ephemerals.append(ephemeral)
        return {"ok": True, "message_ts": ts}

    def _chat_update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._joined_channel(self._channel(params))
        ts = params.get("ts")
        if not isinstance(ts, str) or not ts:
            raise _SlackError("message_not_found")
        message = self._find(channel, ts)
        if message is None:
            raise _SlackError("message_not_found")
        if message.get("user") != self.bot_user_id:
            raise _SlackError("cant_update_message")
        content = self._message_content(params)
        if "blocks" not in content and params.get("blocks") == []:
            message.pop("blocks", None)
        message.update(content)
        message["edited"] = {"user": self.bot_user_id, "ts": self.next_ts()}
        return {
            "ok": True,
            "channel": channel,
            "ts": ts,
            "text": message.get("text", ""),
            "message": dict(message),
        }

    def _chat_get_permalink(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._known_channel(self._channel(params))
        ts = params.get("message_ts")
        if not isinstance(ts, str) or not ts:
            raise _SlackError("message_not_found")
        message = self._find(channel, ts)
        if message is None:
            raise _SlackError("message_not_found")
        link = self.permalink(channel, ts)
        thread_ts = message.get("thread_ts")
        if thread_ts and thread_ts != ts:
            link += f"?thread_ts={thread_ts}&cid={channel}"
        return {"ok": True, "channel": channel, "permalink": link}

    def _views_publish(self, params: dict[str, Any]) -> dict[str, Any]:
        user_id = params.get("user_id")
        if not isinstance(user_id, str) or not user_id:
            raise _SlackError("invalid_arguments")
        view = params.get("view")
        if not isinstance(view, dict) or view.get("type") != "home":
            raise _SlackError("invalid_arguments")
        previous = self.home_views.get(user_id)
        wanted_hash = params.get("hash")
        if wanted_hash and previous is not None and previous.get("hash") != wanted_hash:
            raise _SlackError("hash_conflict")
        blocks = view.get("blocks")
        if not isinstance(blocks, list):
            raise _SlackError("invalid_arguments")
        problems, _ = _check_blocks(blocks, "home")
        if problems:
            raise _invalid_blocks(problems)
        self._view_counter += 1
        digest = hashlib.sha1(json.dumps(view, sort_keys=True).encode()).hexdigest()[:16]
        stored = {
            **view,
            "id": f"V{self._view_counter:08d}",
            "team_id": self.team_id,
            "app_id": self.app_id,
            "bot_id": self.bot_id,
            "hash": f"{self._view_counter}.{digest}",
        }
        self.home_views[user_id] = stored
        return {"ok": True, "view": dict(stored)}

    def _views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        """A modal: a trigger_id works once; title/submit/close, metadata and blocks are
        checked against Slack's limits."""
        trigger = params.get("trigger_id")
        if not isinstance(trigger, str) or not trigger:
            raise _SlackError("invalid_arguments")
        if trigger in self._used_triggers:
            raise _SlackError("expired_trigger_id")
        view = params.get("view")
        if not isinstance(view, dict) or view.get("type") != "modal":
            raise _SlackError("invalid_arguments")
        checker = _Checker()
        checker.text_object(view.get("title"), "/title", limit=VIEW_TITLE_LIMIT, plain_only=True)
        for key in ("submit", "close"):
            if view.get(key) is not None:
                checker.text_object(view[key], f"/{key}", limit=VIEW_TITLE_LIMIT, plain_only=True)
        checker.string_limit(
            view.get("private_metadata"), "/private_metadata", PRIVATE_METADATA_LIMIT
        )
        checker.string_limit(view.get("callback_id"), "/callback_id", CALLBACK_ID_LIMIT)
        blocks = view.get("blocks")
        problems, _ = _check_blocks(blocks, "modal")
        problems = checker.problems + problems
        has_input = isinstance(blocks, list) and any(
            isinstance(b, dict) and b.get("type") == "input" for b in blocks
        )
        if has_input and view.get("submit") is None:
            problems.append(
                "a view with input blocks must have a submit button [json-pointer:/submit]"
            )
        if problems:
            raise _invalid_blocks(problems)
        self._used_triggers.add(trigger)
        self._view_counter += 1
        stored = {
            **view,
            "id": f"V{self._view_counter:08d}",
            "team_id": self.team_id,
            "app_id": self.app_id,
            "bot_id": self.bot_id,
            "hash": f"{self._view_counter}.modal",
            "state": {"values": {}},
        }
        self.opened_views.append(stored)
        return {"ok": True, "view": dict(stored)}

    def set_user(self, user_id: str, *, tz: str | None = None, locale: str | None = None) -> None:
        """What users.info reports of `user_id` (Slack gives the locale only when asked)."""
        profile: dict[str, Any] = {"id": user_id, "name": user_id.lower()}
        if tz is not None:
            profile["tz"] = tz
        if locale is not None:
            profile["locale"] = locale
        with self._lock:
            self.users[user_id] = profile

    def _users_info(self, params: dict[str, Any]) -> dict[str, Any]:
        user_id = params.get("user")
        if not isinstance(user_id, str) or not user_id:
            raise _SlackError("user_not_found")
        if user_id in self.unknown_channels:
            raise _SlackError("user_not_found")
        user = dict(self.users.get(user_id, {"id": user_id, "name": user_id.lower()}))
        if not _truthy(params.get("include_locale")):
            user.pop("locale", None)
        return {"ok": True, "user": user}

    def _conversations_open(self, params: dict[str, Any]) -> dict[str, Any]:
        users = params.get("users")
        if isinstance(users, list):
            users = ",".join(str(u) for u in users)
        if not isinstance(users, str) or not users.strip():
            channel = params.get("channel")
            if isinstance(channel, str) and channel:
                return {"ok": True, "channel": {"id": channel}}
            raise _SlackError("users_list_not_supplied")
        ids = [u.strip() for u in users.split(",") if u.strip()]
        if len(ids) == 1:
            channel_id = self.dm_channel(ids[0])
            if channel_id in self.unknown_channels or ids[0] in self.unknown_channels:
                raise _SlackError("user_not_found")
            return {"ok": True, "channel": {"id": channel_id, "is_im": True, "user": ids[0]}}
        return {"ok": True, "channel": {"id": "G" + "".join(sorted(ids)), "is_mpim": True}}

    @staticmethod
    def _page(
        items: list[dict[str, Any]], params: dict[str, Any], default_limit: int
    ) -> dict[str, Any]:
        try:
            limit = int(params.get("limit") or default_limit)
        except (TypeError, ValueError) as exc:
            raise _SlackError("invalid_limit") from exc
        limit = max(1, min(limit, 999))
        offset = 0
        cursor = params.get("cursor")
        if cursor:
            decoded = _decode_cursor(str(cursor))
            if decoded is None:
                raise _SlackError("invalid_cursor")
            offset = decoded
        page = items[offset : offset + limit]
        has_more = offset + limit < len(items)
        result: dict[str, Any] = {"ok": True, "messages": page, "has_more": has_more}
        result["response_metadata"] = {
            "next_cursor": _encode_cursor(offset + limit) if has_more else ""
        }
        return result

    @staticmethod
    def _visible(message: dict[str, Any], with_metadata: bool) -> dict[str, Any]:
        shown = dict(message)
        if not with_metadata:
            shown.pop("metadata", None)
        return shown

    def _ts_bounds(self, params: dict[str, Any]) -> Callable[[str], bool]:
        inclusive = _truthy(params.get("inclusive"))
        oldest = _ts_value(params["oldest"]) if params.get("oldest") else None
        latest = _ts_value(params["latest"]) if params.get("latest") else None
        if (params.get("oldest") and oldest is None) or (params.get("latest") and latest is None):
            raise _SlackError("invalid_ts_oldest" if oldest is None else "invalid_ts_latest")

        def within(ts: str) -> bool:
            value = _ts_value(ts)
            if value is None:
                return False
            if oldest is not None and (value < oldest or (value == oldest and not inclusive)):
                return False
            return not (
                latest is not None and (value > latest or (value == latest and not inclusive))
            )

        return within

    def _readable_channel(self, channel: str) -> str:
        if self.reads_need_membership:
            return self._joined_channel(channel)
        return self._known_channel(channel)

    def _conversations_history(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._readable_channel(self._channel(params))
        with_metadata = _truthy(params.get("include_all_metadata"))
        within = self._ts_bounds(params)
        top_level = [
            self._visible(m, with_metadata)
            for m in self.messages.get(channel, [])
            if (m.get("thread_ts") in (None, m["ts"]) or m.get("reply_broadcast"))
            and within(m["ts"])
        ]
        top_level.sort(key=lambda m: _ts_value(m["ts"]) or Decimal(0), reverse=True)
        return self._page(top_level, params, 100)

    def _conversations_replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = self._readable_channel(self._channel(params))
        ts = params.get("ts")
        if not isinstance(ts, str) or not ts:
            raise _SlackError("invalid_arguments")
        message = self._find(channel, ts)
        if message is None:
            raise _SlackError("thread_not_found")
        root = str(message.get("thread_ts") or ts)
        with_metadata = _truthy(params.get("include_all_metadata"))
        within = self._ts_bounds(params)
        thread = [
            self._visible(m, with_metadata)
            for m in self.messages.get(channel, [])
            if (m["ts"] == root or m.get("thread_ts") == root)
            and (m["ts"] == root or within(m["ts"]))
        ]
        thread.sort(key=lambda m: _ts_value(m["ts"]) or Decimal(0))
        return self._page(thread, params, 1000)

    def _apps_connections_open(self, params: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True, "url": self.socket_url}


class _SlackError(Exception):
    def __init__(self, error: str, **extra: Any) -> None:
        super().__init__(error)
        self.error = error
        self.extra = extra


def _invalid_blocks(problems: list[str]) -> _SlackError:
    return _SlackError(
        "invalid_blocks",
        errors=problems,
        response_metadata={"messages": [f"[ERROR] {p}" for p in problems]},
    )
