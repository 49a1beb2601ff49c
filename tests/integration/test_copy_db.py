"""Moving to another database: notes, subscriptions and the ledger go together."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from bot.cli.app import app
from bot.config import check_database_url
from bot.delivery.weekly import Pacing, publish_weekly_digest
from bot.domain import Verdict
from bot.services import Services, lookup
from bot.slack.client import build_web_client
from bot.store import Store
from tests.support.delivery import sqlite_services
from tests.support.fakeslack import FakeSlack
from tests.support.testenv import PG_ADMIN_URL

NOW = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
FAST = Pacing(channel_per_second=0, dm_per_second=0)


def test_copy_moves_notes_subscriptions_and_ledger(
    tmp_path: Path, slack: FakeSlack, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = sqlite_services(tmp_path, slack)
    source.store.subscribe("T1", "U1", ["moe-quant"], Verdict.DEEP)
    source.store.readers.watch("T1", "U1", "marlin")
    source.store.readers.pause("T1", "U2", NOW, NOW + timedelta(days=7))
    pause_before = source.store.readers.pause_of("T1", "U2")
    client = build_web_client(source.settings)
    first = publish_weekly_digest(source, client, NOW, pacing=FAST)
    # After the digest: planning its DMs cached what Slack says of each reader.
    readers_before = source.store.readers.all_readers()
    posted = slack.count("chat.postMessage")
    assert posted > 0 and first.message
    source.close()

    monkeypatch.setenv("PRDIGEST_DATABASE_URL", source.settings.database_url)
    result = CliRunner().invoke(app, ["copy-db", db_url])
    assert result.exit_code == 0, result.output
    assert "notes 32" in result.stdout and "subscriptions 1" in result.stdout

    moved = Services(
        settings=source.settings.model_copy(update={"database_url": db_url}),
        store=Store.open(db_url),
        taxonomy=source.taxonomy,
    )
    try:
        assert moved.store.count_notes() == 32
        assert moved.store.all_subscriptions() == {("T1", "U1"): ["moe-quant"]}
        assert moved.store.readers.all_readers() == readers_before, "filters and watches"
        assert pause_before is not None
        assert moved.store.readers.pause_of("T1", "U2") == pause_before
        assert lookup(moved, "视频").page.total >= 1, "search index rebuilt"
        again = publish_weekly_digest(moved, client, NOW, pacing=FAST)
        assert slack.count("chat.postMessage") == posted, f"re-posted: {again.message}"
        moved.store.readers.watch("T1", "U3", "cuda graph")  # ids continue past the copy
        # New notes get fresh ids after the copy (sequences moved past the copied rows).
        late = moved.settings.digests_dir / "late.txt"
        late.write_text("vllm-project/vllm\n\n晚到的量化修复\n\n值得精读。\n", encoding="utf-8")
        publish_weekly_digest(moved, client, NOW, pacing=FAST)
        assert moved.store.count_notes() == 33
        assert slack.count("chat.postMessage") > posted
    finally:
        moved.close()

    result = CliRunner().invoke(app, ["copy-db", db_url])
    assert result.exit_code == 2 and "already has notes" in result.stderr


def test_copy_db_checks_its_url_like_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    bad = "postgresql+psycopg2://bob:hunter2@db.example/app"
    with pytest.raises(ValueError) as rule:
        check_database_url(bad)
    result = CliRunner().invoke(app, ["copy-db", bad])
    assert result.exit_code == 2
    assert str(rule.value) in result.stderr, "the same validator as PRDIGEST_DATABASE_URL"
    assert "hunter2" not in result.output and "Traceback" not in result.output


def test_unreachable_databases_are_one_line_without_password(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Trust authentication ignores the password, so the server answers with an error
    # about the database: the driver's message must not leak the password either.
    missing = sa.engine.make_url(PG_ADMIN_URL).set(
        password="hunter2", database="prdigest_no_such_db"
    )
    refused = missing.set(port=1)
    for url in (missing, refused):
        shown = url.render_as_string(hide_password=False)
        monkeypatch.setenv("PRDIGEST_DATABASE_URL", shown)
        result = CliRunner().invoke(app, ["notes"])
        assert result.exit_code == 1, result.output
        (line,) = result.stderr.strip().splitlines()
        assert "PRDIGEST_DATABASE_URL" in line and "***" in line
        assert "hunter2" not in result.output and "Traceback" not in result.output

    monkeypatch.setenv("PRDIGEST_DATABASE_URL", f"sqlite:///{tmp_path / 'here.db'}")
    result = CliRunner().invoke(app, ["copy-db", refused.render_as_string(hide_password=False)])
    assert result.exit_code == 1
    assert "copy-db" in result.stderr and "connection refused" in result.stderr.lower()
    assert "hunter2" not in result.output and "Traceback" not in result.output
