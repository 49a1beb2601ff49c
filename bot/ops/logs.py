"""Log set-up: text lines (the default) or one JSON object per line.

`PRDIGEST_LOG_FORMAT=json` gives objects with `time` (ISO 8601, UTC), `level`, `logger`,
`message`, `run_id` while a digest run is being delivered (`run_context`), and `exc_info`
for a logged exception. Python warnings are logged too, so every line is one object.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, TextIO

TEXT_FORMAT = "%(levelname)s %(name)s: %(message)s"

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


def configure_logging(level: int | str, log_format: str = "text") -> None:
    """Log to stderr at `level`: text lines, or JSON objects when `log_format` is "json"."""
    root = logging.getLogger()
    as_json = log_format == "json"
    for handler in [h for h in root.handlers if isinstance(h, _JsonLines)]:
        root.removeHandler(handler)
    if as_json:
        root.addHandler(_JsonLines())
    else:
        logging.basicConfig(format=TEXT_FORMAT)
    root.setLevel(level)
    # Alembic announces each of its plugins at INFO whenever the schema is checked: noise.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    logging.captureWarnings(as_json)


def json_logging() -> bool:
    """True when log lines are JSON (so the CLI logs its own notices instead of printing).

    Read from the root logger's handlers, the one record of how logging was configured."""
    return any(isinstance(h, _JsonLines) for h in logging.getLogger().handlers)
