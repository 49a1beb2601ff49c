"""Slack unreachable: `prdigest post` says why in one line, and the next run loses nothing."""

from __future__ import annotations

import itertools
import json
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from slack_sdk import WebClient
from typer.testing import CliRunner

from bot.cli.app import app
from bot.delivery.scheduler import resume_after_outage, run_due
from bot.delivery.weekly import DeliveryError, Pacing, publish_weekly_digest
from bot.services import Services
from bot.slack.app import build_app
from bot.slack.client import describe_unreachable, is_unreachable
from bot.slack.server import HealthCheck, make_wsgi_app, serve_in_thread
from bot.slack.slack_link import Backoff, SlackLink
from bot.store.ledger import Ledger
from tests.support.delivery import sqlite_services
from tests.support.fakeslack import FakeSlack
from tests.support.netlink import Link
from tests.support.process import ServeProcess
from tests.support.slackapp import SECRET, Harness
from tests.support.socketslack import SocketSlack
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SUBSCRIBER = ("T0001", "U0SUB")


@pytest.fixture
def seeded(tmp_path: Path, slack: FakeSlack) -> Iterator[Services]:
    """SQLite with the sample notes, posting to DIGEST_CHANNEL on the fake Slack."""
    services = sqlite_services(tmp_path, slack)
    yield services
    services.close()


def _post(monkeypatch: pytest.MonkeyPatch, services: Services, api_url: str) -> tuple[int, str]:
    settings = services.settings
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(settings.digests_dir))
    monkeypatch.setenv("PRDIGEST_CHANNEL", DIGEST_CHANNEL)
    monkeypatch.setenv("PRDIGEST_SLACK_API_URL", api_url)
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    result = CliRunner().invoke(app, ["post", "--channel-rate", "0", "--dm-rate", "0"])
    return result.exit_code, result.stderr


def _note_blocks(messages: list[dict[str, object]]) -> Counter[str]:
    found: Counter[str] = Counter()
    for message in messages:
        for block in message.get("blocks") or []:  # type: ignore[attr-defined]
            block_id = str(block.get("block_id", ""))
            if block_id.startswith("note-") and message.get("thread_ts") != message["ts"]:
                found[block_id] += 1
    return found


def cut_mid_run(line: str) -> bool:
    """The cause a link cut during a run gives: the next connection is refused, or one the
    link had not yet taken in is reset (a post is not retried, so either is the one line)."""
    return "connection refused" in line or "connection reset" in line


def test_post_through_an_outage_loses_and_repeats_nothing(
    seeded: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = seeded
    services.store.subscribe(*SUBSCRIBER, ["moe-quant", "kernels"])
    with Link(slack.port) as link:
        link.cut_after(3)  # the parent and two thread replies get through
        code, stderr = _post(monkeypatch, services, link.url)
        assert code == 1
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, stderr
        assert cut_mid_run(lines[0]) and "PRDIGEST_SLACK_API_URL" in lines[0]
        assert link.url in lines[0] and "Traceback" not in stderr
        sent_before = len(slack.accepted("chat.postMessage"))
        assert sent_before == 3
        (run,) = Ledger(services.store.engine).open_runs()
        assert run.channel == DIGEST_CHANNEL, "the run is left unfinished, to resume"

        link.restore()
        code, stderr = _post(monkeypatch, services, link.url)
        assert code == 0, stderr
        assert "Traceback" not in stderr
    assert Ledger(services.store.engine).open_runs() == []
    channel = slack.messages_in(DIGEST_CHANNEL)
    parents = [m for m in channel if m.get("thread_ts") in (None, m["ts"])]
    assert len(parents) == 1
    posted = _note_blocks(channel)
    assert set(posted) == {f"note-{n.id}" for n in services.store.list_notes()}
    assert max(posted.values()) == 1, "no note posted twice"
    dm = _note_blocks(slack.messages_in(FakeSlack.dm_channel(SUBSCRIBER[1])))
    assert dm and max(dm.values()) == 1, "the subscriber got each note once"


def test_an_outage_during_the_dms_sends_each_dm_once(
    seeded: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    users = [f"U0SUB{i}" for i in range(6)]
    for user in users:
        seeded.store.subscribe("T0001", user, ["moe-quant", "kernels"])
    dms = itertools.count(1)
    with Link(slack.port) as link:

        def post_message(fake: FakeSlack, params: dict[str, Any]) -> dict[str, Any]:
            answer = FakeSlack._chat_post_message(fake, params)
            if str(params.get("channel", "")).startswith("U") and next(dms) == 2:
                link.refuse()  # the DMs in flight are answered, the next ones refused
            return answer

        slack.register("chat.postMessage", post_message)
        code, stderr = _post(monkeypatch, seeded, link.url)
        assert code == 1 and cut_mid_run(stderr) and "Traceback" not in stderr
        assert len(stderr.strip().splitlines()) == 1, stderr
        sent = sum(len(slack.messages_in(FakeSlack.dm_channel(u))) for u in users)
        assert 2 <= sent < len(users)
        link.restore()
        code, stderr = _post(monkeypatch, seeded, link.url)
        assert code == 0, stderr
    assert Ledger(seeded.store.engine).open_runs() == []
    parts = []
    for user in users:
        messages = slack.messages_in(FakeSlack.dm_channel(user))
        mine = [m["metadata"]["event_payload"]["part"] for m in messages]
        assert mine and len(mine) == len(set(mine)), f"{user} got a DM twice"
        parts.append(sorted(p.rsplit(":", 1)[1] for p in mine))
    assert all(p == parts[0] for p in parts), "every subscriber got their whole DM"


def test_post_with_slack_down_from_the_start_changes_nothing_sent(
    seeded: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Link(slack.port) as link:
        link.cut()
        code, stderr = _post(monkeypatch, seeded, link.url)
    assert code == 1 and "connection refused" in stderr and "Traceback" not in stderr
    assert slack.count("chat.postMessage") == 0
    code, stderr = _post(monkeypatch, seeded, slack.api_url)
    assert code == 0, stderr
    assert len(slack.accepted("chat.postMessage")) == len(slack.messages_in(DIGEST_CHANNEL))


def _silent_server() -> tuple[socket.socket, threading.Event]:
    """Accepts connections and never answers: a Slack that times out."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    done = threading.Event()
    held: list[socket.socket] = []

    def hold() -> None:
        server.settimeout(0.1)
        while not done.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue
        for sock in held:
            sock.close()

    threading.Thread(target=hold, daemon=True).start()
    return server, done


def test_causes_are_named() -> None:
    dns = WebClient(token="xoxb-x", base_url="http://no-such-host.invalid/api/", timeout=5)
    with pytest.raises(Exception) as raised:
        dns.auth_test()
    assert is_unreachable(raised.value)
    line = describe_unreachable(raised.value, dns.base_url)
    assert "DNS lookup failed" in line and "PRDIGEST_SLACK_API_URL" in line

    server, done = _silent_server()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/api/"
        slow = WebClient(token="xoxb-x", base_url=url, timeout=0.3)
        with pytest.raises(Exception) as raised:
            slow.auth_test()
    finally:
        done.set()
        server.close()
    assert is_unreachable(raised.value)
    assert "timed out" in describe_unreachable(raised.value, url)


def test_a_timeout_while_posting_leaves_the_run_to_resume(seeded: Services) -> None:
    server, done = _silent_server()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/api/"
        client = WebClient(token=SLACK_TOKEN, base_url=url, timeout=0.3)
        with pytest.raises(DeliveryError, match="timed out") as raised:
            publish_weekly_digest(seeded, client, NOW, pacing=Pacing(channel_per_second=0))
    finally:
        done.set()
        server.close()
    assert "PRDIGEST_SLACK_API_URL" in str(raised.value)
    assert len(Ledger(seeded.store.engine).open_runs()) == 1


# ---------------------------------------------------------------- serve


def _wait(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)


def _quick_link(client: WebClient) -> SlackLink:
    return SlackLink(client, healthy_interval=0.2, backoff=Backoff(first=0.05, cap=0.2))


def test_serve_logs_an_outage_once_answers_503_and_recovers(
    seeded: Services, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    services = seeded
    stop = threading.Event()
    with Link(slack.port) as link:
        client = WebClient(token=SLACK_TOKEN, base_url=link.url)
        watcher = _quick_link(client)
        recovered = threading.Event()
        watcher.on_recovery(recovered.set)
        app = build_app(services, client, signing_secret=SECRET, socket_mode=False, link=watcher)
        wsgi = make_wsgi_app(
            app, HealthCheck(services.store, client, watcher), signing_secret=SECRET
        )
        bot = Harness(slack, services, serve_in_thread(wsgi))
        watcher.start(stop)
        try:
            _wait(lambda: watcher.status == "ok")
            assert bot.request("GET", "/healthz")[0] == 200
            link.cut()
            _wait(lambda: watcher.status == "unreachable")
            time.sleep(0.6)  # several more tries with back-off, all refused
            status, body = bot.request("GET", "/healthz")
            assert status == 503
            assert json.loads(body)["checks"]["slack_auth"] == "unreachable"
            # Commands are still acknowledged and answered through their response_url.
            started = time.monotonic()
            status, reply = bot.command("help")
            assert status == 200 and time.monotonic() - started < 3
            assert "/prdigest" in reply["text"]
            link.restore()
            assert recovered.wait(5), "the watching thread found Slack again by itself"
            assert bot.request("GET", "/healthz")[0] == 200
        finally:
            stop.set()
            bot.server.stop()
    said = [r for r in caplog.records if r.name == "bot.slack.slack_link"]
    outage = [r for r in said if "unreachable" in r.getMessage()]
    assert len(outage) == 1, [r.getMessage() for r in said]
    assert outage[0].levelno == logging.ERROR
    assert "PRDIGEST_SLACK_API_URL" in outage[0].getMessage()
    assert len([r for r in said if "answers again" in r.getMessage()]) == 1
    assert not [r for r in caplog.records if r.exc_info], "no traceback"


def test_a_digest_cut_by_an_outage_is_finished_when_slack_answers(
    seeded: Services, slack: FakeSlack
) -> None:
    services = seeded
    services.store.subscribe(*SUBSCRIBER, ["moe-quant"])
    fast = Pacing(channel_per_second=0, dm_per_second=0)
    stop = threading.Event()
    with Link(slack.port) as link:
        client = WebClient(token=SLACK_TOKEN, base_url=link.url)
        link.cut_after(2)
        with pytest.raises(DeliveryError, match="PRDIGEST_SLACK_API_URL"):
            publish_weekly_digest(services, client, NOW, pacing=fast)
        ledger = Ledger(services.store.engine)
        assert len(ledger.open_runs()) == 1
        watcher = _quick_link(client)
        watcher.on_recovery(lambda: resume_after_outage(services, client, fast))
        watcher.start(stop)
        try:
            _wait(lambda: watcher.status == "unreachable")
            link.restore()
            _wait(lambda: ledger.open_runs() == [], timeout=30)
        finally:
            stop.set()
    channel = slack.messages_in(DIGEST_CHANNEL)
    posted = _note_blocks(channel)
    assert set(posted) == {f"note-{n.id}" for n in services.store.list_notes()}
    assert max(posted.values()) == 1
    # The reader's DM goes out at their own time (Monday 09:00, here NOW): the next tick.
    run_due(services, WebClient(token=SLACK_TOKEN, base_url=slack.api_url), NOW, pacing=fast)
    dm = _note_blocks(slack.messages_in(FakeSlack.dm_channel(SUBSCRIBER[1])))
    assert dm and max(dm.values()) == 1


def test_serve_names_a_token_slack_refuses(tmp_path: Path) -> None:
    with FakeSlack(token="xoxb-the-installed-one") as slack:
        serve = ServeProcess(
            tmp_path,
            {
                "PRDIGEST_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
                "PRDIGEST_SLACK_API_URL": slack.api_url,
                "SLACK_BOT_TOKEN": "xoxb-revoked-long-ago",
            },
            "--no-scheduler",
        )
        try:
            line = serve.wait_for_line("SLACK_BOT_TOKEN")
            assert "ERROR" in line and "invalid_auth" in line
            serve.wait_until(lambda: serve.health() != 0)
            status, body = serve.get("/healthz")
            assert status == 503
            assert json.loads(body)["checks"]["slack_auth"] == "invalid_auth"
        finally:
            code = serve.stop()
    assert code == 0
    assert len(serve.lines("SLACK_BOT_TOKEN")) == 1, serve.stderr
    assert "Traceback" not in serve.stderr
    assert "xoxb-revoked-long-ago" not in serve.stderr


@pytest.mark.slow
def test_socket_mode_waits_for_slack_then_connects(tmp_path: Path, slack: FakeSlack) -> None:
    socket_slack = SocketSlack()
    socket_slack.thread.start()
    slack.socket_url = socket_slack.url
    try:
        with Link(slack.port) as link:
            link.cut()
            serve = ServeProcess(
                tmp_path,
                {
                    "PRDIGEST_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
                    "PRDIGEST_SLACK_API_URL": link.url,
                    "SLACK_BOT_TOKEN": SLACK_TOKEN,
                    "SLACK_APP_TOKEN": slack.app_token,
                },
                "--no-scheduler",
            )
            try:
                line = serve.wait_for_line("unreachable")
                assert "connection refused" in line and "PRDIGEST_SLACK_API_URL" in line
                link.restore()
                serve.wait_for_line("connected to Slack (Socket Mode)", timeout=60)
                serve.wait_for_line("answers again", timeout=30)
            finally:
                code = serve.stop()
    finally:
        socket_slack.server.shutdown()
        socket_slack.thread.join(5)
    assert code == 0, serve.stderr
    assert len(serve.lines("unreachable")) == 1, serve.stderr
    assert "Traceback" not in serve.stderr
