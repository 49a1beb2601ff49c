"""`GET /metrics`: scraped over HTTP after real commands and a real digest post."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl

import pytest
import sqlalchemy as sa
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError

from bot.delivery.weekly import publish_weekly_digest
from bot.ops.prometheus import PrometheusMetrics, measure_store
from bot.services import Services, ingest_paths
from bot.slack.client import CallMetrics, build_web_client
from bot.slack.server import HealthCheck, make_ops_app, serve_in_thread
from bot.store import Store
from tests.support.delivery import FAST, NOW, add_seed_notes
from tests.support.fakeslack import FakeSlack
from tests.support.metrics import Samples, parse, value
from tests.support.notefiles import seed_files
from tests.support.process import clean_env, free_port, http_get, running, stop, wait_until
from tests.support.slackapp import TOKEN, Harness, start_harness
from tests.support.slacksign import slash_command_body
from tests.support.socketslack import APP_TOKEN, SocketSlack


@pytest.fixture
def bot(posting: Services, slack: FakeSlack) -> Iterator[Harness]:
    """The HTTP app with Prometheus metrics, the way `prdigest serve` wires it."""
    harness = start_harness(posting, slack, ingest=False, metrics=PrometheusMetrics())
    try:
        yield harness
    finally:
        harness.server.stop()


def scrape(bot: Harness) -> Samples:
    status, body = bot.request("GET", "/metrics")
    assert status == 200
    return parse(body)


def scrape_until(bot: Harness, name: str, expected: float, **labels: str) -> Samples:
    """A command is counted just after its reply left: wait for that moment."""
    deadline = time.monotonic() + 10
    while True:
        samples = scrape(bot)
        if value(samples, name, **labels) >= expected or time.monotonic() > deadline:
            return samples
        time.sleep(0.02)


def test_commands_are_counted_by_kind_with_latency(bot: Harness) -> None:
    ingest_paths(bot.services, seed_files())
    before = scrape(bot)
    assert value(before, "prdigest_commands_total", kind="help") == 0
    assert value(before, "prdigest_notes_stored") == bot.services.store.count_notes() > 0
    assert value(before, "prdigest_notes_ingested_total", outcome="new") > 0

    for text in ("help", "moe", "fp8 marlin"):
        status, reply = bot.command(text)
        assert status == 200 and reply
    after = scrape_until(bot, "prdigest_command_seconds_count", 2, kind="lookup")
    after = scrape_until(bot, "prdigest_command_seconds_count", 1, kind="help")
    assert value(after, "prdigest_commands_total", kind="help") == 1
    assert value(after, "prdigest_commands_total", kind="lookup") == 2
    assert value(after, "prdigest_command_seconds_count", kind="lookup") == 2
    assert value(after, "prdigest_command_seconds_sum", kind="lookup") > 0
    assert value(after, "prdigest_command_seconds_bucket", kind="help", le="+Inf") == 1


def test_digest_post_moves_the_digest_dm_and_slack_counters(bot: Harness, slack: FakeSlack) -> None:
    services = bot.services
    add_seed_notes(services)
    services.store.subscribe("T1", "U1", ["moe-quant"])
    services.store.subscribe("T1", "U2", ["kernels"])
    assert value(scrape(bot), "prdigest_last_digest_timestamp_seconds") == 0
    slack.rate_limit("chat.postMessage", times=1, retry_after=1)

    client = build_web_client(services.settings, metrics=services.metrics)
    result = publish_weekly_digest(services, client, NOW, pacing=FAST)
    assert result.status == "posted" and result.dms == 2

    samples = scrape(bot)
    assert value(samples, "prdigest_digests_posted_total") == 1
    assert value(samples, "prdigest_dms_sent_total") == 2
    accepted = len(slack.accepted("chat.postMessage"))
    assert accepted == result.posted + result.dms
    assert (
        value(samples, "prdigest_slack_api_calls_total", method="chat.postMessage", outcome="ok")
        == accepted
    )
    assert (
        value(
            samples,
            "prdigest_slack_api_calls_total",
            method="chat.postMessage",
            outcome="ratelimited",
        )
        == value(samples, "prdigest_slack_rate_limited_total", method="chat.postMessage")
        == 1
    )
    assert value(samples, "prdigest_last_digest_timestamp_seconds") > NOW.timestamp()
    stored = services.store.count_notes()
    assert value(samples, "prdigest_notes_stored") == stored > 0
    assert value(samples, "prdigest_notes_ingested_total", outcome="new") == stored


def test_slack_errors_and_unreachable_slack_are_outcomes(slack: FakeSlack) -> None:
    metrics = PrometheusMetrics()
    client = WebClient(token=TOKEN, base_url=slack.api_url, retry_handlers=[CallMetrics(metrics)])
    slack.fail("auth.test", "invalid_auth")
    with pytest.raises(SlackApiError):
        client.auth_test()
    client.auth_test()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/api/"
    gone = WebClient(token=TOKEN, base_url=closed, retry_handlers=[CallMetrics(metrics)])
    with pytest.raises((SlackClientError, OSError)):
        gone.chat_postMessage(channel="C1", text="hi")
    samples = parse(metrics.render())
    calls = "prdigest_slack_api_calls_total"
    assert value(samples, calls, method="auth.test", outcome="invalid_auth") == 1
    assert value(samples, calls, method="auth.test", outcome="ok") == 1
    assert value(samples, calls, method="chat.postMessage", outcome="unreachable") == 1


def test_ops_app_serves_metrics_and_health_alone(services: Services, slack: FakeSlack) -> None:
    """What Socket Mode serves on PRDIGEST_METRICS_PORT: no Slack endpoint there."""
    metrics = PrometheusMetrics()
    measure_store(metrics, services.store, None)
    client = build_web_client(
        services.settings.model_copy(update={"slack_api_url": slack.api_url}), TOKEN
    )
    running = serve_in_thread(make_ops_app(HealthCheck(services.store, client), metrics))
    harness = Harness(slack, services, running)
    try:
        assert value(scrape(harness), "prdigest_notes_stored") == 0
        assert harness.request("GET", "/healthz")[0] == 200
        assert harness.request("POST", "/slack/events", b"{}")[0] == 404
    finally:
        running.stop()


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_socket_mode_serves_metrics_on_their_port(
    tmp_path: Path,
    db_url: str,
    socket_slack: SocketSlack,
) -> None:
    """`prdigest serve` in Socket Mode: a command over the websocket, counted on
    PRDIGEST_METRICS_PORT (the only HTTP it serves)."""
    with FakeSlack(token=TOKEN, app_token=APP_TOKEN) as slack:
        slack.socket_url = socket_slack.url
        port = free_port()
        env = clean_env(
            PRDIGEST_DATABASE_URL=db_url,
            PRDIGEST_SLACK_API_URL=slack.api_url,
            PRDIGEST_METRICS_PORT=str(port),
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_APP_TOKEN=APP_TOKEN,
        )
        with running(tmp_path, env, "serve", "--no-scheduler", "--host", "127.0.0.1") as proc:
            metrics_url = f"http://127.0.0.1:{port}/metrics"
            wait_until(lambda: slack.count("apps.connections.open") > 0, proc, "no connection")
            wait_until(lambda: http_get(metrics_url)[0] == 200, proc, "no metrics port")
            response_url = f"http://127.0.0.1:{slack.port}/response/socket-metrics"
            form = dict(parse_qsl(slash_command_body("roles", response_url=response_url)))
            socket_slack.outgoing.put(
                {"envelope_id": "e1", "type": "slash_commands", "payload": form}
            )
            slack.wait_for("/response/socket-metrics", timeout=20)

            def counted() -> bool:
                samples = parse(http_get(metrics_url)[1])
                return value(samples, "prdigest_commands_total", kind="roles") == 1

            wait_until(counted, proc, "the command was not counted")
            samples = parse(http_get(metrics_url)[1])
            assert (
                value(
                    samples,
                    "prdigest_slack_api_calls_total",
                    method="apps.connections.open",
                    outcome="ok",
                )
                >= 1
            )
            assert http_get(f"http://127.0.0.1:{port}/healthz")[0] == 200
            stderr = stop(proc)
    assert proc.returncode == 0, stderr
    assert f"metrics on http://127.0.0.1:{port}/metrics" in stderr
    assert "connected to Slack (Socket Mode)" in stderr


def test_scrape_answers_while_the_database_is_down(tmp_path: Path) -> None:
    metrics = PrometheusMetrics()
    broken = sa.create_engine(f"sqlite:///{tmp_path}/no/such/folder/x.db")
    measure_store(metrics, Store(broken), None)
    metrics.dm_sent(3)
    samples = parse(metrics.render())
    assert value(samples, "prdigest_dms_sent_total") == 3
    names = {name for name, _ in samples}
    assert "prdigest_notes_stored" not in names
    assert "prdigest_last_digest_timestamp_seconds" not in names
