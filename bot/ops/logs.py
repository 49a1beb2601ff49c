"""Log set-up: text lines (the default) or one JSON object per line, keeping secrets.

`PRDIGEST_LOG_FORMAT=json` gives objects with `time` (ISO 8601, UTC), `level`, `logger`,
`message`, `run_id` while a digest run is being delivered (`run_context`), and `exc_info`
for a logged exception. Python warnings are logged too, so every line is one object.

Logs are for operators, and whoever reads them must not be able to act as the app: Slack's
libraries (Bolt and slack_sdk) write request bodies, response_urls and Socket Mode envelopes
at INFO and DEBUG, so they are heard at WARNING and above whatever the level (`KeepSecrets`
holds every handler to that, whichever logger the line came through), in one line each, a
dump of a body or a payload in one of their lines cut; and every line is cleared of Slack
tokens, Slack's hook URLs (a response_url lets anyone answer as the app) and the values of
the secret settings. A refused request is logged by prdigest itself, in one line without its
content.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

from pydantic import SecretStr

from bot.config import Settings

TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"

# Slack's libraries and the lowest level at which their lines are kept.
SLACK_LIBRARIES = ("slack_bolt", "slack_sdk")
SLACK_LIBRARY_LEVEL = logging.WARNING
REDACTED = "(redacted)"
MIN_SECRET_LENGTH = 8  # shorter setting values are too common a word to blank out
# Slack tokens (bot, user, app-level, workflow), Slack's hook URLs (response_url and
# incoming webhooks) and websocket URLs (Socket Mode's carry a ticket): the prefix or the
# host stays, so a line still says which kind it was.
_SECRET_SHAPES = re.compile(
    r"\b(?P<token>xox[a-z]|xapp|xwfp)-[0-9A-Za-z-]+"
    r"|(?P<url>https?://hooks\.slack(?:-gov)?\.com|wss?://[^\s/?\"']+)[^\s\"'<>]*"
)
# A library line that dumps what it received: "…, body: {…})", "(…, payload: b'…')".
_DUMP = re.compile(r"\b(body|payload): .*", re.DOTALL)

_run_id: ContextVar[int | None] = ContextVar("prdigest_run_id", default=None)


@contextmanager
def run_context(run_id: int) -> Iterator[None]:
    """Every line logged inside (in this thread or task) carries `run_id`."""
    token = _run_id.set(run_id)
    try:
        yield
    finally:
        _run_id.reset(token)


class _RunId(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        run_id = _run_id.get()
        if run_id is not None and not hasattr(record, "run_id"):
            record.run_id = run_id
        return True


class _JsonLines(logging.StreamHandler):  # type: ignore[type-arg]
    """One JSON object per record on the current `sys.stderr` (looked up at each line)."""

    def __init__(self) -> None:
        super().__init__()
        self.addFilter(_RunId())
        self.setFormatter(_json_formatter())

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def _json_formatter() -> logging.Formatter:
    from pythonjsonlogger.json import JsonFormatter

    class Formatter(JsonFormatter):
        def add_fields(
            self,
            log_data: dict[str, Any],
            record: logging.LogRecord,
            message_dict: dict[str, Any],
        ) -> None:
            log_data["time"] = datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds"
            )
            super().add_fields(log_data, record, message_dict)

    return Formatter(
        "%(levelname)s %(name)s %(message)s",
        rename_fields={"levelname": "level", "name": "logger"},
    )


def configure_logging(
    level: int | str, log_format: str = "text", secrets: Iterable[str] = ()
) -> None:
    """Log to stderr at `level`: text lines, or JSON objects when `log_format` is "json".

    Every handler of the root logger keeps secrets (`KeepSecrets`), `secrets` among them;
    Slack's libraries log at WARNING and above, or at `level` when it is higher."""
    root = logging.getLogger()
    as_json = log_format == "json"
    for json_lines in [h for h in root.handlers if isinstance(h, _JsonLines)]:
        root.removeHandler(json_lines)
    if as_json:
        root.addHandler(_JsonLines())
    else:
        logging.basicConfig(format=TEXT_FORMAT)
    root.setLevel(level)
    keep = KeepSecrets(secrets)
    for handler in root.handlers:
        for old in [f for f in handler.filters if isinstance(f, KeepSecrets)]:
            handler.removeFilter(old)
        handler.addFilter(keep)
    numeric = level if isinstance(level, int) else logging.getLevelNamesMapping()[level.upper()]
    for name in SLACK_LIBRARIES:
        logging.getLogger(name).setLevel(max(numeric, SLACK_LIBRARY_LEVEL))
    # Alembic announces each of its plugins at INFO whenever the schema is checked: noise.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    logging.captureWarnings(as_json)


def secret_values(settings: Settings) -> list[str]:
    """The values of the settings that are secrets (tokens, the signing secret, API keys)."""
    values = (getattr(settings, name) for name in type(settings).model_fields)
    return [v.get_secret_value() for v in values if isinstance(v, SecretStr)]


class KeepSecrets(logging.Filter):
    """A handler's filter: what reaches the log holds no token, hook URL or secret value, and
    Slack's libraries are heard only at WARNING and above, without the bodies they dump, in
    one line each (with their tracebacks only while the root logger is at DEBUG).

    On the handler, not on a logger: Bolt makes loggers of its own (one per class and per
    listener, some of them set to the root's level), and a handler sees every line that
    propagates to it, whichever logger it came through."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_LENGTH}, key=len, reverse=True
        )
        self.library_dirs = tuple(_package_dir(name) for name in SLACK_LIBRARIES)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        kept = message
        if self.from_slack_library(record):
            if record.levelno < SLACK_LIBRARY_LEVEL:
                return False
            kept = _DUMP.sub(r"\1: (not logged)", message)
            if not logging.getLogger().isEnabledFor(logging.DEBUG):
                # One line, as every line of ours: the first holds what happened (with the
                # error's text), the rest is advice to Bolt's developers or a traceback.
                kept = kept.split("\n", 1)[0]
                record.exc_info = record.exc_text = None
        kept = self.redact(kept)
        if kept != message:
            record.msg, record.args = kept, None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_info, record.exc_text = None, self.redact(text)
        elif record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True

    def from_slack_library(self, record: logging.LogRecord) -> bool:
        """Logged by Bolt's or slack_sdk's code, whatever the logger's name."""
        if record.name.split(".", 1)[0] in SLACK_LIBRARIES:
            return True
        return any(d is not None and record.pathname.startswith(d) for d in self.library_dirs)

    def redact(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return _SECRET_SHAPES.sub(_redacted_shape, text)


def _redacted_shape(match: re.Match[str]) -> str:
    if match.group("token"):
        return f"{match.group('token')}-{REDACTED}"
    return f"{match.group('url')}/{REDACTED}"


def _package_dir(name: str) -> str | None:
    """Where an installed package's files are (as its code objects name them), without
    importing it."""
    spec = importlib.util.find_spec(name)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return os.path.join(locations[0], "") if locations else None


def json_logging() -> bool:
    """True when log lines are JSON (so the CLI logs its own notices instead of printing).

    Read from the root logger's handlers, the one record of how logging was configured."""
    return any(isinstance(h, _JsonLines) for h in logging.getLogger().handlers)
