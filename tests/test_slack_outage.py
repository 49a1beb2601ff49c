"""Slack unreachable: `prdigest post` says why in one line, and the next run loses nothing."""

from __future__ import annotations

import shutil
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr
from slack_sdk import WebClient
from typer.testing import CliRunner

from bot.cli import app
from bot.config import load_settings
from bot.delivery import DeliveryError, Pacing, publish_weekly_digest
from bot.services import Services
from bot.slack_client import describe_unreachable, is_unreachable
from bot.store.ledger import Ledger
from tests.conftest import DIGEST_CHANNEL, SLACK_TOKEN
from tests.fakeslack import FakeSlack
from tests.fixtures_util import seed_files
from tests.netlink import Link

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
SUBSCRIBER = ("T0001", "U0SUB")


@pytest.fixture
def sqlite_services(tmp_path: Path, slack: FakeSlack) -> Iterator[Services]:
    digests = tmp_path / "digests"
    digests.mkdir()
    for path in seed_files():
        shutil.copy(path, digests / path.name)
    settings = load_settings(
        database_url=f"sqlite:///{tmp_path / 'outage.db'}",
        digests_dir=digests,
        channel=DIGEST_CHANNEL,
        slack_api_url=slack.api_url,
        slack_bot_token=SecretStr(SLACK_TOKEN),
    )
    services = Services.build(settings)
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


def test_post_through_an_outage_loses_and_repeats_nothing(
    sqlite_services: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    services = sqlite_services
    services.store.subscribe(*SUBSCRIBER, ["moe-quant", "kernels"])
    with Link(slack.port) as link:
        link.cut_after(3)  # the parent and two thread replies get through
        code, stderr = _post(monkeypatch, services, link.url)
        assert code == 1
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, stderr
        assert "connection refused" in lines[0] and "PRDIGEST_SLACK_API_URL" in lines[0]
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


def test_post_with_slack_down_from_the_start_changes_nothing_sent(
    sqlite_services: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Link(slack.port) as link:
        link.cut()
        code, stderr = _post(monkeypatch, sqlite_services, link.url)
    assert code == 1 and "connection refused" in stderr and "Traceback" not in stderr
    assert slack.count("chat.postMessage") == 0
    code, stderr = _post(monkeypatch, sqlite_services, slack.api_url)
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


def test_a_timeout_while_posting_leaves_the_run_to_resume(sqlite_services: Services) -> None:
    server, done = _silent_server()
    try:
        url = f"http://127.0.0.1:{server.getsockname()[1]}/api/"
        client = WebClient(token=SLACK_TOKEN, base_url=url, timeout=0.3)
        with pytest.raises(DeliveryError, match="timed out") as raised:
            publish_weekly_digest(sqlite_services, client, NOW, pacing=Pacing(channel_per_second=0))
    finally:
        done.set()
        server.close()
    assert "PRDIGEST_SLACK_API_URL" in str(raised.value)
    assert len(Ledger(sqlite_services.store.engine).open_runs()) == 1
