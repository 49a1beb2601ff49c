"""Settings: defaults, parsing, and one clear message naming a bad variable."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from bot.config import SettingsError, load_settings


def test_defaults_need_no_environment() -> None:
    settings = load_settings()
    assert settings.database_url == "sqlite:///prdigest.db"
    assert settings.schedule == "0 9 * * MON" and settings.timezone == "UTC"
    assert settings.misfire_grace == timedelta(hours=24)
    assert settings.slack_bot_token is None and settings.port == 3000


def test_the_notes_folder_has_no_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """No default could be the team's notes: unset (or empty) it is None, never digests/."""
    assert load_settings().digests_dir is None
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", "  ")
    assert load_settings().digests_dir is None
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", "/srv/notes")
    assert load_settings().digests_dir == Path("/srv/notes")


@pytest.mark.parametrize(
    ("value", "expected"),
    [("90m", timedelta(minutes=90)), ("2h", timedelta(hours=2)), ("3600", timedelta(hours=1))],
)
def test_misfire_grace_accepts_durations(
    monkeypatch: pytest.MonkeyPatch, value: str, expected: timedelta
) -> None:
    monkeypatch.setenv("PRDIGEST_MISFIRE_GRACE", value)
    assert load_settings().misfire_grace == expected


def test_tokens_come_from_slack_variables_and_stay_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret")
    settings = load_settings()
    assert settings.slack_bot_token is not None
    assert settings.slack_bot_token.get_secret_value() == "xoxb-secret"
    assert "xoxb-secret" not in repr(settings)


def test_dotenv_file_is_read(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PRDIGEST_CHANNEL=C999\nPRDIGEST_TIMEZONE=Europe/Berlin\n")
    settings = load_settings()
    assert settings.channel == "C999" and settings.zone.key == "Europe/Berlin"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PRDIGEST_SCHEDULE", "every monday"),
        ("PRDIGEST_TIMEZONE", "Nowhere/City"),
        ("PRDIGEST_PORT", "70000"),
        ("PRDIGEST_POST_EMPTY", "perhaps"),
        ("PRDIGEST_DATABASE_URL", "mysql://x"),
        ("PRDIGEST_MISFIRE_GRACE", "soon"),
        ("PRDIGEST_LOG_LEVEL", "LOUD"),
        ("PRDIGEST_DM_RATE", "-1"),
        ("PRDIGEST_DM_BUDGET", "21"),
        ("PRDIGEST_DM_BUDGET", "five"),
    ],
)
def test_bad_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert name in message and "\n" not in message


@pytest.mark.parametrize(
    "value",
    [
        "mysql://bob:hunter2@db.example/app",
        "postgresql+psycopg2://bob:hunter2@db.example/app",
        "postgresql+psycopg://bob:hunter2@db.example:notaport/app",
        "postgresql://bob:hunter2@db.example/",
    ],
)
def test_a_bad_database_url_is_named_without_its_password(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    message = str(caught.value)
    assert "PRDIGEST_DATABASE_URL" in message
    assert "hunter2" not in message


def test_plain_postgresql_urls_get_the_installed_driver(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", "postgresql://bob:p%40ss@db.example:5433/app")
    assert load_settings().database_url == "postgresql+psycopg://bob:p%40ss@db.example:5433/app"


@pytest.mark.parametrize(
    ("name", "value", "hint"),
    [
        ("PRDIGEST_SLACK_API_URL", "slack.com/api", "http(s) URL"),
        ("PRDIGEST_SLACK_API_URL", "ftp://slack.example/api/", "http(s) URL"),
        ("PRDIGEST_CHANNEL", "#general", "channel's ID"),
    ],
)
def test_slack_address_and_channel_are_checked_at_start(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, hint: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert name in str(caught.value) and hint in str(caught.value)


def test_an_empty_channel_is_no_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRDIGEST_CHANNEL", "")
    monkeypatch.setenv("PRDIGEST_SLACK_API_URL", "http://127.0.0.1:9/")
    settings = load_settings()
    assert settings.channel is None and settings.slack_api_url == "http://127.0.0.1:9/"


def test_a_dotenv_file_that_is_not_text_is_one_clear_message(tmp_path: Path) -> None:
    (tmp_path / ".env").write_bytes(b"PRDIGEST_CHANNEL=C1\n\xd0\xff\xfe binary\n")
    with pytest.raises(SettingsError) as caught:
        load_settings()
    assert ".env" in str(caught.value) and "not UTF-8" in str(caught.value)
