"""The `prdigest` command line run in-process, as the tests drive it."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from bot.cli.app import app
from bot.services import Services
from tests.support.delivery import CHANNEL

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


COMMANDS = [c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands]


def cli_env(monkeypatch: pytest.MonkeyPatch, services: Services, token: bool = True) -> None:
    """The environment a CLI run reads to reach the same store and fake Slack as `services`."""
    settings = services.settings
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(settings.digests_dir))
    monkeypatch.setenv("PRDIGEST_CHANNEL", CHANNEL)
    monkeypatch.setenv("PRDIGEST_SLACK_API_URL", settings.slack_api_url)
    if token:
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
