"""`KeepSecrets`, the filter on every log handler: no token, hook URL or secret value in a
line, and Slack's libraries heard at WARNING and above, one line each, without the bodies
they dump; whichever logger a line comes through."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

import pytest
import slack_bolt

from bot.ops.logs import KeepSecrets

BOLT_DIR = os.path.dirname(slack_bolt.__file__)


class Kept(logging.Handler):
    """The lines a handler with `KeepSecrets` writes."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.addFilter(KeepSecrets(secrets))
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def root_at_info() -> Iterator[logging.Logger]:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    try:
        yield root
    finally:
        root.setLevel(level)


def record(name: str, level: int, message: str, pathname: str = __file__) -> logging.LogRecord:
    return logging.LogRecord(name, level, pathname, 1, message, None, None)


def test_tokens_hook_urls_and_secret_values_are_blanked_in_every_line() -> None:
    kept = Kept(secrets=("a-long-signing-secret", "short"))
    kept.handle(
        record(
            "bot.slack.app",
            logging.WARNING,
            "xoxb-1-2-abc xoxp-9 xapp-1-A0-zz https://hooks.slack.com/commands/T1/2/x "
            "wss://wss-primary.slack.com/link/?ticket=t a-long-signing-secret short",
        )
    )
    assert kept.lines == [
        "WARNING bot.slack.app: xoxb-(redacted) xoxp-(redacted) xapp-(redacted) "
        "https://hooks.slack.com/(redacted) wss://wss-primary.slack.com/(redacted) (redacted) "
        "short"
    ]


def test_slack_libraries_below_warning_are_dropped_whatever_their_loggers_level(
    root_at_info: logging.Logger,
) -> None:
    """Bolt sets its loggers' levels itself (to the root's, or its base logger's)."""
    kept = Kept()
    logger = logging.getLogger("slack_bolt.RequestVerificationForTest")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    logger.addHandler(kept)
    try:
        logger.info("Invalid request signature detected (body: text=private)")
        logger.debug("on_message invoked: (message: private)")
        # A listener's logger is named after the app, not the library: its file decides.
        kept.handle(record("prdigest:on_click", logging.INFO, "private", f"{BOLT_DIR}/x.py"))
        kept.handle(record("bot.slack.app", logging.INFO, "ours, at INFO"))
        logger.warning("Unhandled request ({'type': 'event_callback'})")
    finally:
        logger.removeHandler(kept)
    assert kept.lines == [
        "INFO bot.slack.app: ours, at INFO",
        "WARNING slack_bolt.RequestVerificationForTest: Unhandled request "
        "({'type': 'event_callback'})",
    ]


def test_a_library_line_is_one_line_without_the_body_it_dumps(
    root_at_info: logging.Logger,
) -> None:
    kept = Kept()
    kept.handle(
        record(
            "slack_bolt",
            logging.WARNING,
            "Received an unsupported data frame (opcode: binary, payload: b'private text')",
        )
    )
    kept.handle(record("slack_bolt", logging.WARNING, "Unhandled request (x)\n---\nadvice"))
    try:
        raise ValueError("Expecting value: line 1 column 1 (char 0)")
    except ValueError as exc:
        failed = record("slack_bolt", logging.ERROR, "Failed to process a message", BOLT_DIR)
        failed.exc_info = (type(exc), exc, exc.__traceback__)
    kept.handle(failed)
    assert kept.lines == [
        "WARNING slack_bolt: Received an unsupported data frame (opcode: binary, payload: "
        "(not logged)",
        "WARNING slack_bolt: Unhandled request (x)",
        "ERROR slack_bolt: Failed to process a message",
    ]


def test_at_debug_a_library_traceback_is_kept_with_its_tokens_blanked() -> None:
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    kept = Kept()
    try:
        try:
            raise RuntimeError("token xoxb-123-secret refused")
        except RuntimeError as exc:
            failed = record("slack_sdk", logging.ERROR, "Failed to send")
            failed.exc_info = (type(exc), exc, exc.__traceback__)
        kept.handle(failed)
        kept.handle(record("slack_sdk", logging.DEBUG, "Sending a request - body: private"))
    finally:
        root.setLevel(level)
    assert len(kept.lines) == 1
    assert kept.lines[0].startswith("ERROR slack_sdk: Failed to send\nTraceback")
    assert "RuntimeError: token xoxb-(redacted) refused" in kept.lines[0]
    assert "xoxb-123" not in kept.lines[0]
