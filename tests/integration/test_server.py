"""HTTP mode: `/healthz`, and `prdigest serve` as a user runs it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from typer.testing import CliRunner

from bot.cli.app import app as cli_app
from bot.services import Services
from bot.slack.client import BOT_SCOPES
from bot.slack.prdigest import SUBCOMMANDS
from tests.support.fakeslack import FakeSlack
from tests.support.process import clean_env, free_port, http_get, running, stop, wait_until
from tests.support.slackapp import TOKEN, Harness, start_harness


@pytest.fixture
def bot(services: Services, slack: FakeSlack) -> Iterator[Harness]:
    harness = start_harness(services, slack, ingest=False)
    try:
        yield harness
    finally:
        harness.server.stop()


def test_healthz_ok_when_store_and_token_are_good(bot: Harness) -> None:
    status, body = bot.request("GET", "/healthz")
    assert status == 200
    assert json.loads(body) == {"ok": True, "checks": {"store": "ok", "slack_auth": "ok"}}
    bot.request("GET", "/healthz")
    assert bot.slack.count("auth.test") == 1, "a good token is checked once"


def test_healthz_503_when_slack_refuses_the_token(bot: Harness) -> None:
    bot.slack.fail("auth.test", "invalid_auth")
    status, body = bot.request("GET", "/healthz")
    assert status == 503
    answer = json.loads(body)
    assert answer["ok"] is False
    assert answer["checks"] == {"store": "ok", "slack_auth": "invalid_auth"}


def test_healthz_503_when_store_is_gone(
    services: Services, slack: FakeSlack, tmp_path: Path
) -> None:
    harness = start_harness(services, slack, ingest=False)
    try:
        services.store.engine.dispose()
        # Point the store at a database that cannot be reached.
        if services.store.dialect == "sqlite":
            services.store.engine = sa.create_engine(f"sqlite:///{tmp_path}/no/such/dir/x.db")
        else:
            services.store.engine = sa.create_engine(services.store.engine.url.set(port=1))
        status, body = harness.request("GET", "/healthz")
        assert status == 503
        assert json.loads(body)["checks"]["store"] == "unreachable"
    finally:
        harness.server.stop()


def test_serve_without_tokens_says_what_is_missing() -> None:
    result = CliRunner().invoke(cli_app, ["serve", "--no-scheduler"])
    assert result.exit_code == 2
    output = result.output
    assert "SLACK_BOT_TOKEN" in output and "SLACK_SIGNING_SECRET" in output
    assert "prdigest preview" in output
    assert "Traceback" not in output


def test_serve_http_without_signing_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    result = CliRunner().invoke(cli_app, ["serve"])
    assert result.exit_code == 2
    assert "SLACK_SIGNING_SECRET" in result.output
    assert "SLACK_BOT_TOKEN and" not in result.output


def test_serve_runs_and_stops_on_sigterm(slack: FakeSlack, tmp_path: Path) -> None:
    port = free_port()
    env = clean_env(
        PRDIGEST_DATABASE_URL=f"sqlite:///{tmp_path / 'serve.db'}",
        PRDIGEST_SLACK_API_URL=slack.api_url,
        PRDIGEST_PORT=str(port),
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET="s3cret",
    )
    with running(tmp_path, env, "serve", "--no-scheduler", "--host", "127.0.0.1") as proc:
        healthz = f"http://127.0.0.1:{port}/healthz"
        wait_until(lambda: http_get(healthz)[0] == 200, proc, "serve did not become healthy")
        stderr = stop(proc)
        assert proc.returncode == 0, stderr
        assert "stopped" in stderr
        assert "Traceback" not in stderr


MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "slack-app-manifest.yaml"


def test_manifest_asks_only_for_what_is_used() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    scopes = manifest["oauth_config"]["scopes"]["bot"]
    # The scopes `prdigest doctor` checks the token for are exactly the manifest's.
    assert sorted(scopes) == sorted(BOT_SCOPES)
    assert len(BOT_SCOPES) == len(set(BOT_SCOPES)) == 7
    assert "user" not in manifest["oauth_config"]["scopes"]
    features = manifest["features"]
    (command,) = features["slash_commands"]
    assert command["command"] == "/prdigest"
    assert command["description"] and len(command["description"]) <= 100
    assert len(command["usage_hint"]) <= 100
    for sub in SUBCOMMANDS:  # Slack shows the hint while typing: every subcommand is in it
        assert sub.name.removeprefix("un") in command["usage_hint"], sub.name
    assert command["url"].endswith("/slack/events")
    assert features["app_home"]["home_tab_enabled"] is True
    assert features["app_home"]["messages_tab_enabled"] is True
    settings = manifest["settings"]
    assert settings["event_subscriptions"]["bot_events"] == ["app_home_opened"]
    assert settings["interactivity"]["is_enabled"] is True
    assert settings["socket_mode_enabled"] is True
