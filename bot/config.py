"""Settings, read once at start-up from the environment and `.env`."""

from __future__ import annotations

import importlib.util
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, quote_plus, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AliasChoices,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

ENV_PREFIX = "PRDIGEST_"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,20}$")


class SettingsError(ValueError):
    """A setting has a bad value; the message names the variable."""


_DATABASE_DRIVERS = {
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite+pysqlite",
    "postgresql": "postgresql+psycopg",  # psycopg 3 is the driver installed
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}


def masked_url(url: str) -> str:
    """A database URL fit to show: the password replaced by ***."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "(an unreadable URL)"


def hide_password(text: str, url: str) -> str:
    """`text` with every occurrence of `url`'s password masked (driver messages may quote it)."""
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError):
        password = None
    text = text.replace(url, masked_url(url))
    if password:
        for form in {str(password), quote(str(password), safe=""), quote_plus(str(password))}:
            text = text.replace(form, "***")
    return text


def check_database_url(value: str) -> str:
    """The one validator of database URLs (PRDIGEST_DATABASE_URL and `copy-db`'s target).

    Returns the URL with its driver made explicit; raises ValueError with a message
    that never contains the password.
    """
    try:
        url = make_url(value.strip())
    except (ArgumentError, ValueError):
        raise ValueError(
            "not a database URL; expected sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"
        ) from None
    driver = _DATABASE_DRIVERS.get(url.drivername)
    if driver is None:
        raise ValueError(
            f"unsupported database {url.drivername!r}; only sqlite:///PATH and "
            "postgresql+psycopg://USER@HOST/DB URLs are supported"
        )
    if driver.startswith("postgresql") and not url.database:
        raise ValueError("the PostgreSQL URL names no database (…/DBNAME at the end)")
    if driver == url.drivername:
        return value.strip()
    return url.set(drivername=driver).render_as_string(hide_password=False)


class Settings(BaseSettings):
    """Every knob of the bot. Environment variables are `PRDIGEST_<NAME>` unless noted."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        populate_by_name=True,
    )

    database_url: str = Field(
        default="sqlite:///prdigest.db",
        description="SQLAlchemy URL; postgresql+psycopg://user@host/db for PostgreSQL.",
    )
    digests_dir: Path | None = Field(
        default=None,
        description="The team's folder of note files; no default (`post`, `serve` and `ingest` "
        "without a path need it; the bundled sample notes are refused).",
    )
    roles_file: Path | None = Field(
        default=None, description="TOML file that extends or replaces the role taxonomy."
    )
    channel: str | None = Field(default=None, description="Channel ID for the weekly digest.")
    schedule: str = Field(default="0 9 * * MON", description="Crontab line for the digest.")
    timezone: str = Field(default="UTC", description="IANA time zone of the schedule.")
    post_empty: bool = Field(default=False, description="Post a digest even in an empty week.")
    misfire_grace: timedelta = Field(
        default=timedelta(hours=24),
        description="How late a missed digest may still be posted on start (e.g. 24h, 90m).",
    )
    channel_rate: float = Field(
        default=1.0, ge=0, description="Digest messages per second per channel (0: unpaced)."
    )
    dm_rate: float = Field(
        default=10.0,
        ge=0,
        description="Starting DMs per second; raised while Slack accepts, cut on 429 (0: unpaced).",
    )
    dm_max_rate: float = Field(
        default=50.0, ge=0, description="Ceiling of the adaptive DM rate per second (0: none)."
    )
    dm_concurrency: int = Field(
        default=4, ge=1, le=64, description="Concurrent DM senders sharing the rate."
    )
    dm_budget: int = Field(
        default=5,
        ge=0,
        le=20,
        description="Notes a weekly DM shows in full, best first, unless a reader sets their "
        "own (`/prdigest budget`); the rest are counted and a button shows them (0: all).",
    )
    port: int = Field(default=3000, ge=1, le=65535, description="HTTP port of `serve`.")
    slack_api_url: str = Field(
        default="https://slack.com/api/", description="Base URL of the Slack Web API."
    )
    page_size: int = Field(default=5, ge=1, le=20, description="Notes per /prdigest page.")
    editors: str = Field(
        default="",
        description="Slack user IDs (comma-separated) who may fix notes; empty: every member.",
    )
    language: Literal["zh", "en", "both"] = Field(
        default="both",
        description="The channel digest's language, and a reader's when neither their "
        "`/prdigest lang` nor Slack names one: zh, en, or both side by side.",
    )
    log_level: str = Field(default="INFO", description="Python logging level.")
    log_format: Literal["text", "json"] = Field(
        default="text", description="Log lines as text, or one JSON object per line."
    )
    metrics_port: int | None = Field(
        default=None,
        ge=1,
        le=65535,
        description="Port for GET /metrics and /healthz alone (Socket Mode, or to keep "
        "/metrics off PRDIGEST_PORT in HTTP mode).",
    )
    llm_url: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible model server (e.g. http://gpu-box:8000/v1) "
        "that reads notes beside the local classifier; unset: the local classifier alone.",
    )
    llm_model: str | None = Field(
        default=None,
        validate_default=True,
        description="The model the server serves (as `GET /models` lists it).",
    )
    llm_api_key: SecretStr | None = Field(
        default=None, description="API key of the model server (a placeholder when unset)."
    )
    llm_reads: Literal["unsure", "all"] = Field(
        default="unsure",
        description="Which notes the model reads: the ones the local classifier is unsure "
        "of or that name more than one group, or all.",
    )
    llm_timeout: float = Field(
        default=30.0, gt=0, le=600, description="Seconds one reading may take."
    )
    llm_concurrency: int = Field(
        default=4, ge=1, le=64, description="Notes read by the model server at once."
    )
    slack_bot_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_BOT_TOKEN", "PRDIGEST_SLACK_BOT_TOKEN"),
        description="Bot token (xoxb-...). Env: SLACK_BOT_TOKEN.",
    )
    slack_signing_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_SIGNING_SECRET", "PRDIGEST_SLACK_SIGNING_SECRET"),
        description="Signing secret for HTTP mode. Env: SLACK_SIGNING_SECRET.",
    )
    slack_app_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("SLACK_APP_TOKEN", "PRDIGEST_SLACK_APP_TOKEN"),
        description="App-level token (xapp-...) for Socket Mode. Env: SLACK_APP_TOKEN.",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown IANA time zone {value!r}") from exc
        return value

    @field_validator("schedule")
    @classmethod
    def _valid_crontab(cls, value: str) -> str:
        from apscheduler.triggers.cron import CronTrigger

        try:
            CronTrigger.from_crontab(value, timezone="UTC")
        except ValueError as exc:
            raise ValueError(f"not a crontab line ({exc})") from exc
        return value

    @field_validator("misfire_grace", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> Any:
        if isinstance(value, str):
            match = _DURATION.match(value)
            if match:
                return timedelta(seconds=float(match[1]) * _UNIT_SECONDS[match[2].lower()])
        return value

    @field_validator("slack_api_url")
    @classmethod
    def _web_address(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("expected an http(s) URL such as https://slack.com/api/")
        return value.strip()

    @field_validator("llm_url")
    @classmethod
    def _model_server(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("expected an http(s) base URL such as http://gpu-box:8000/v1")
        if importlib.util.find_spec("openai") is None:
            raise ValueError(
                "the openai package is not installed: pip install 'prdigest[llm]' "
                "(or unset the variable)"
            )
        return value.strip().rstrip("/")

    @field_validator("llm_model")
    @classmethod
    def _model_named(cls, value: str | None, info: ValidationInfo) -> str | None:
        model = value.strip() if value else None
        if info.data.get("llm_url") and not model:
            raise ValueError(
                "name the model the server at PRDIGEST_LLM_URL serves (e.g. Qwen/Qwen3-8B)"
            )
        return model

    @field_validator("digests_dir", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("channel")
    @classmethod
    def _channel_id(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        channel = value.strip()
        if channel.startswith("#") or " " in channel:
            raise ValueError(
                "expected the channel's ID such as C0123ABCD (in Slack: the channel's "
                "details, at the bottom of About), not its name"
            )
        return channel

    @field_validator("database_url")
    @classmethod
    def _known_database(cls, value: str) -> str:
        return check_database_url(value)

    @field_validator("language", mode="before")
    @classmethod
    def _language(cls, value: Any) -> Any:
        folded = value.strip().casefold() if isinstance(value, str) else value
        if folded not in ("zh", "en", "both"):
            raise ValueError("expected zh (Chinese), en (English) or both (the two side by side)")
        return folded

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        level = value.upper()
        if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
            raise ValueError("expected DEBUG, INFO, WARNING, ERROR or CRITICAL")
        return level

    @field_validator("editors")
    @classmethod
    def _user_ids(cls, value: str) -> str:
        ids = [part.strip() for part in value.split(",") if part.strip()]
        bad = [i for i in ids if not _USER_ID.match(i)]
        if bad:
            raise ValueError(f"expected Slack user IDs such as U0123ABCD, not {', '.join(bad)}")
        return ",".join(ids)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)

    @property
    def editor_ids(self) -> frozenset[str]:
        """Who may fix notes; empty means every member of the workspace."""
        return frozenset(i for i in self.editors.split(",") if i)

    def may_edit(self, user_id: str) -> bool:
        return not self.editor_ids or user_id in self.editor_ids


def _variable_name(field: str) -> str:
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info else None
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return f"{ENV_PREFIX}{field.upper()}"


def _is_secret(field: str) -> bool:
    info = Settings.model_fields.get(field)
    return info is not None and info.annotation == SecretStr | None


def load_settings(**overrides: Any) -> Settings:
    """Read and validate settings; a bad value raises SettingsError naming the variable."""
    try:
        return Settings(**overrides)
    except (UnicodeDecodeError, OSError) as exc:
        # Only the .env file is read from disk here.
        why = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else str(exc)
        raise SettingsError(
            f"invalid setting file .env in {Path.cwd()} ({why}): save it as UTF-8 or remove it"
        ) from None
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            got = error.get("input")
            if field == "database_url" and isinstance(got, str):
                got = masked_url(got)
            elif _is_secret(field):
                got = None
            shown = f" (got {got!r})" if isinstance(got, str | int | float) else ""
            message = str(error["msg"]).removeprefix("Value error, ")
            problems.append(f"{_variable_name(field)}: {message}{shown}")
        raise SettingsError("invalid setting: " + "; ".join(problems)) from None
