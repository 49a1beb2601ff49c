"""Shared fixtures for every test folder: a fresh store on SQLite and on PostgreSQL,
settings without secrets, the fake Slack (Web API, Socket Mode) and the app served over HTTP."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from pydantic import SecretStr

from bot.classify.taxonomy import load_taxonomy
from bot.config import Settings, load_settings
from bot.services import Services
from bot.store import Store
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import write_team_notes
from tests.support.slackapp import Harness, start_harness
from tests.support.socketslack import SocketSlack, socket_slack_running
from tests.support.testenv import DIGEST_CHANNEL, PG_ADMIN_URL, SLACK_TOKEN

SLACK_ENV = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN")


@pytest.fixture(autouse=True)
def _no_real_secrets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never see real tokens or a developer's .env."""
    for name in list(os.environ):
        if (name.startswith("PRDIGEST_") and name != "PRDIGEST_TEST_PG_URL") or name in SLACK_ENV:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL database made for this test run and dropped after it."""
    name = f"prdigest_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(False)
    try:
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _truncate_all(store: Store) -> None:
    with store.engine.begin() as conn:
        names = [t for t in sa.inspect(conn).get_table_names() if t != "alembic_version"]
        if names:
            quoted = ", ".join(f'"{n}"' for n in names)
            conn.execute(sa.text(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE"))


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'prdigest.db'}"
    url: str = request.getfixturevalue("pg_url")
    store = Store.open(url)
    _truncate_all(store)
    store.close()
    return url


@pytest.fixture
def env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment of a CLI run: the store at `db_url` and a digests folder holding
    the sample note files (not yet ingested)."""
    digests = tmp_path / "digests"
    digests.mkdir()
    write_team_notes(digests)
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", db_url)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(digests))
    return digests


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database without any schema yet (the shared fixtures migrate to the head)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    name = f"prdigest_upgrade_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    try:
        yield sa.engine.make_url(PG_ADMIN_URL).set(database=name).render_as_string(False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    opened = Store.open(db_url)
    yield opened
    opened.close()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    digests = tmp_path / "digests"
    digests.mkdir(exist_ok=True)
    return load_settings(database_url=db_url, digests_dir=digests)


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    built = Services(
        settings=settings, store=Store.open(settings.database_url), taxonomy=load_taxonomy(None)
    )
    yield built
    built.close()


@pytest.fixture
def slack() -> Iterator[FakeSlack]:
    """A fake Slack Web API on an ephemeral port that accepts SLACK_TOKEN.

    Afterwards, everything the bot sent is checked for unescaped user text: any `<…>`
    the bot did not make (a mention, a link to anywhere but a PR or a thread) fails.
    """
    with FakeSlack(token=SLACK_TOKEN) as fake:
        yield fake
        problems = fake.sent_markup_problems()
    assert not problems, "unescaped text sent to Slack:\n" + "\n".join(problems)


@pytest.fixture
def posting(services: Services, slack: FakeSlack) -> Services:
    """Services set up to post the digest to DIGEST_CHANNEL on the fake Slack."""
    services.settings = services.settings.model_copy(
        update={
            "channel": DIGEST_CHANNEL,
            "slack_api_url": slack.api_url,
            "slack_bot_token": SecretStr(SLACK_TOKEN),
        }
    )
    return services


@pytest.fixture
def bot(services: Services, slack: FakeSlack) -> Iterator[Harness]:
    """The app over HTTP with the sample notes ingested, talking to the fake Slack."""
    harness = start_harness(services, slack)
    try:
        yield harness
    finally:
        harness.server.stop()


@pytest.fixture
def socket_slack() -> Iterator[SocketSlack]:
    """Slack's side of a Socket Mode connection, on a local websocket port."""
    with socket_slack_running() as fake:
        yield fake
