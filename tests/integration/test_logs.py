"""PRDIGEST_LOG_FORMAT=json and /metrics in a real `prdigest serve` process."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from bot.config import SettingsError, load_settings
from bot.store import Store
from tests.support.fakeslack import FakeSlack
from tests.support.metrics import parse, value
from tests.support.notefiles import write_team_notes
from tests.support.process import clean_env, free_port, http_get, running, stop, wait_until
from tests.support.slackapp import SECRET, TOKEN
from tests.support.slacksign import signed_headers, slash_command_body
from tests.support.testenv import DIGEST_CHANNEL


def test_serve_logs_one_json_object_per_line(slack: FakeSlack, tmp_path: Path) -> None:
    """A digest posted on start (a slot every minute), a slash command and a scrape, all in
    one real process: every stderr line is a JSON object, and the digest's lines carry
    its run id; a reader's DM that fails is logged with the reader's user ID."""
    digests = tmp_path / "digests"
    digests.mkdir()
    write_team_notes(digests)
    db_url = f"sqlite:///{tmp_path / 'serve.db'}"
    store = Store.open(db_url)
    store.subscribe("T0001", "U1", ["moe-quant"])
    store.subscribe("T0001", "UGONE", ["moe-quant"])  # a DM that fails: logged, skipped
    store.close()
    slack.unknown_channels.add("UGONE")
    port = free_port()
    env = clean_env(
        PRDIGEST_LOG_FORMAT="json",
        PRDIGEST_DATABASE_URL=db_url,
        PRDIGEST_DIGESTS_DIR=str(digests),
        PRDIGEST_CHANNEL=DIGEST_CHANNEL,
        PRDIGEST_SCHEDULE="* * * * *",
        PRDIGEST_MISFIRE_GRACE="1h",
        PRDIGEST_CHANNEL_RATE="0",
        PRDIGEST_DM_RATE="0",
        PRDIGEST_SLACK_API_URL=slack.api_url,
        PRDIGEST_PORT=str(port),
        SLACK_BOT_TOKEN=TOKEN,
        SLACK_SIGNING_SECRET=SECRET,
    )
    base = f"http://127.0.0.1:{port}"
    with running(tmp_path, env, "serve", "--host", "127.0.0.1") as proc:
        wait_until(lambda: http_get(f"{base}/healthz")[0] == 200, proc, "serve did not start")

        def digest_counted() -> bool:
            samples = parse(http_get(f"{base}/metrics")[1])
            return value(samples, "prdigest_digests_posted_total") == 1

        wait_until(digest_counted, proc, "the digest was not posted on start")

        def dm_counted() -> bool:  # the readers' DMs follow the channel digest
            samples = parse(http_get(f"{base}/metrics")[1])
            return value(samples, "prdigest_dms_sent_total") == 1

        wait_until(dm_counted, proc, "the reader's DM was not sent after the digest")
        body = slash_command_body("help", response_url=f"{slack.api_url[:-4]}response/1")
        request = urllib.request.Request(
            f"{base}/slack/events", body.encode(), signed_headers(SECRET, body), method="POST"
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        slack.wait_for("/response/1")

        def command_counted() -> bool:
            samples = parse(http_get(f"{base}/metrics")[1])
            return value(samples, "prdigest_commands_total", kind="help") == 1

        wait_until(command_counted, proc, "the command was not counted")
        samples = parse(http_get(f"{base}/metrics")[1])
        assert value(samples, "prdigest_dms_sent_total") == 1
        assert value(samples, "prdigest_notes_stored") == 32
        assert value(samples, "prdigest_last_digest_timestamp_seconds") > time.time() - 120
        stderr = stop(proc)
    assert proc.returncode == 0, stderr
    lines = stderr.splitlines()
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all(isinstance(r, dict) for r in records) and len(records) >= 4
    for record in records:
        assert list(record)[:4] == ["time", "level", "logger", "message"], record
        assert datetime.fromisoformat(record["time"]).utcoffset() == timedelta(0)
    messages = [r["message"] for r in records]
    assert any(m.startswith("listening on http://127.0.0.1") for m in messages)
    assert messages[-1] == "stopped"
    in_run = [r for r in records if "run_id" in r]
    assert {r["run_id"] for r in in_run} == {1}
    # Readers' DMs go out after the digest run, each reader's own: named by user.
    assert any("could not DM UGONE" in r["message"] for r in records)
    assert all(r["level"] == "INFO" for r in records if r["message"].startswith("delivering"))


def test_log_format_is_validated() -> None:
    assert load_settings(log_format="json").log_format == "json"
    with pytest.raises(SettingsError, match="PRDIGEST_LOG_FORMAT"):
        load_settings(log_format="yaml")
    with pytest.raises(SettingsError, match="PRDIGEST_METRICS_PORT"):
        load_settings(metrics_port=70000)
