"""PostgreSQL down at start and restarted under a running `serve`: one clear line, commands
still acknowledged at once with "try again shortly", and back to normal without a restart."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from bot.render.blocks import SUBSCRIBE_ACTION_ID
from bot.services import Services
from tests.support.fakeslack import FakeSlack
from tests.support.pgcluster import Cluster
from tests.support.process import ServeProcess
from tests.support.slackapp import start_harness
from tests.support.testenv import SLACK_TOKEN

PASSWORD = "hunter2-not-to-be-shown"
_replies = itertools.count(1)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    made = Cluster()
    made.init()
    try:
        yield made
    finally:
        made.remove()


def _command(serve: ServeProcess, slack: FakeSlack, text: str) -> tuple[int, float, str]:
    """Send `/prdigest text`; the ack's status and seconds, and the reply's text."""
    path = f"/response/{next(_replies)}"
    status, seconds = serve.command(text, f"http://127.0.0.1:{slack.port}{path}")
    reply: dict[str, Any] = slack.wait_for(path, timeout=15)[-1].params
    return status, seconds, json.dumps(reply, ensure_ascii=False)


def test_a_store_outage_is_acknowledged_and_answered_try_again(
    services: Services, slack: FakeSlack, tmp_path: Path
) -> None:
    bot = start_harness(services, slack, ingest=False)
    working = services.store.engine
    if services.store.dialect == "sqlite":
        down = sa.create_engine(f"sqlite:///{tmp_path}/no/such/folder/prdigest.db")
    else:
        down = sa.create_engine(working.url.set(port=1))
    try:
        services.store.engine = down
        started = time.monotonic()
        status, reply = bot.command("subscribe moe")
        assert status == 200 and time.monotonic() - started < 3
        assert "The store is unavailable, try again shortly" in reply["text"]
        url = bot.response_url()
        clicked = bot.click(SUBSCRIBE_ACTION_ID, "moe-quant", channel_id="C0", response_url=url)
        assert clicked == 200
        assert "The store is unavailable" in bot.reply(url)["text"]
        services.store.engine = working
        assert services.store.subscriptions_of("T0001", "U123") == []
        status, reply = bot.command("subscribe moe")
        assert status == 200 and "unavailable" not in reply["text"]
        assert list(services.store.subscriptions_of("T0001", "U123")) == ["moe-quant"]
    finally:
        services.store.engine = working
        down.dispose()
        bot.server.stop()


@pytest.mark.slow
def test_postgresql_down_at_start_and_restarted_under_serve(
    cluster: Cluster, tmp_path: Path
) -> None:
    with FakeSlack(token=SLACK_TOKEN) as slack:
        serve = ServeProcess(
            tmp_path,
            {
                "PRDIGEST_DATABASE_URL": cluster.url(PASSWORD),
                "PRDIGEST_SLACK_API_URL": slack.api_url,
                "SLACK_BOT_TOKEN": SLACK_TOKEN,
            },
            "--no-scheduler",
        )
        try:
            # Down at start: one line naming the variable, and serve keeps trying.
            line = serve.wait_for_line("PRDIGEST_DATABASE_URL")
            assert "postgres:***@" in line and "retrying" in line
            assert serve.proc.poll() is None
            cluster.start()
            serve.wait_until(lambda: serve.health() == 200, timeout=60)
            assert len(serve.lines("PRDIGEST_DATABASE_URL")) == 1, serve.stderr

            status, seconds, reply = _command(serve, slack, "subscribe moe")
            assert status == 200 and seconds < 3
            assert "moe-quant" in reply

            # Restarted while serving: acknowledged at once, told to try again shortly.
            cluster.stop()
            status, seconds, reply = _command(serve, slack, "list")
            assert status == 200 and seconds < 3, serve.stderr
            assert "The store is unavailable, try again shortly" in reply
            assert json.loads(serve.get("/healthz")[1])["checks"]["store"] == ("unreachable")

            cluster.start()
            status, seconds, reply = _command(serve, slack, "list")
            assert status == 200 and seconds < 3
            assert "moe-quant" in reply and "unavailable" not in reply
            assert serve.health() == 200
        finally:
            code = serve.stop()
    assert code == 0, serve.stderr
    assert "Traceback" not in serve.stderr
    assert PASSWORD not in serve.stderr
