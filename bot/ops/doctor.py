"""`prdigest doctor`: everything the bot needs, checked once, one line each with what to do.

Nothing is changed: migrations are compared with the database, not run; the digest channel
is read, not posted to. A check that depends on a failed one is skipped (one cause, one
FAIL line).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web import SlackResponse

from bot.classify.taxonomy import TaxonomyError, load_taxonomy
from bot.config import Settings, SettingsError, load_settings
from bot.notes.ingest import NoteFileError, find_note_files, parse_note_file
from bot.notes.sample_notes import NotesFolderError, sample_identities, team_notes_dir
from bot.slack.client import BOT_SCOPES, describe_unreachable
from bot.store import Store
from bot.store.engine import MIGRATIONS, describe_unavailable

OK, FAIL, SKIP = "ok", "FAIL", "skip"
SLACK_TIMEOUT = 10
DB_CONNECT_TIMEOUT = 5
FIRE_TIMES = 3
_TOKEN_REFUSED = {
    "invalid_auth",
    "not_authed",
    "token_revoked",
    "token_expired",
    "account_inactive",
}


@dataclass(frozen=True)
class Check:
    """One line of the report: `status` is ok, FAIL or skip."""

    name: str
    status: str
    detail: str

    @property
    def failed(self) -> bool:
        return self.status == FAIL


def run_checks(now: datetime) -> Iterator[Check]:
    """Every check in order; never raises (an unexpected error is that check's FAIL)."""
    try:
        settings = load_settings()
    except SettingsError as exc:
        yield Check("settings", FAIL, f"{exc}: fix it in the environment or .env")
        return
    yield _guarded("settings", lambda: check_roles(settings))
    database = _guarded("database", lambda: check_database(settings.database_url))
    yield database
    if database.failed:
        yield Check("sample notes", SKIP, "needs the database")
    else:
        yield _guarded("sample notes", lambda: check_sample_notes(settings.database_url))
    token_ok = False
    scopes: set[str] | None = None
    try:
        auth = _auth_test(settings)
    except _CheckFailed as exc:
        yield Check("slack token", FAIL, str(exc))
    except Exception as exc:
        yield Check("slack token", FAIL, f"unexpected error: {exc}")
    else:
        token_ok = True
        user, team = auth.get("user", "?"), auth.get("team", "?")
        yield Check("slack token", OK, f"auth.test passed: @{user} in {team}")
        scopes = _granted_scopes(auth)
    if token_ok:
        yield _guarded("slack scopes", lambda: check_scopes(scopes))
        yield _guarded("slack channel", lambda: check_channel(settings))
    else:
        yield Check("slack scopes", SKIP, "needs a working token")
        yield Check("slack channel", SKIP, "needs a working token")
    yield _guarded("digests", lambda: check_digests(settings.digests_dir))
    yield _guarded("schedule", lambda: check_schedule(settings, now))
    if settings.llm_url is not None:
        yield _guarded("model server", lambda: check_model_server(settings))


class _CheckFailed(Exception):
    """A check's FAIL line: the message says what is wrong and what to do."""


def _guarded(name: str, check: Callable[[], str]) -> Check:
    try:
        return Check(name, OK, check())
    except _CheckFailed as exc:
        return Check(name, FAIL, str(exc))
    except Exception as exc:
        return Check(name, FAIL, f"unexpected error: {type(exc).__name__}: {exc}")


def check_roles(settings: Settings) -> str:
    try:
        taxonomy = load_taxonomy(settings.roles_file)
    except TaxonomyError as exc:
        raise _CheckFailed(
            f"PRDIGEST_ROLES_FILE: {exc}: fix the file (its format is at the top of "
            "bot/classify/data/roles.toml) or the variable"
        ) from None
    source = settings.roles_file or "the default taxonomy"
    return f"valid; {len(taxonomy.roles)} roles from {source}"


# -- database ---------------------------------------------------------------------------


def check_database(url: str) -> str:
    """Reachable, and its schema at the migrations' head (compared, never migrated)."""
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    parsed = sa.engine.make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database
        if path and path != ":memory:" and not Path(path).parent.is_dir():
            raise _CheckFailed(
                f"{shown}: its folder {Path(path).parent} does not exist: create it "
                "or fix PRDIGEST_DATABASE_URL"
            )
        if path and path != ":memory:" and not Path(path).exists():
            raise _CheckFailed(
                f"{shown}: the file does not exist yet; `prdigest ingest` or `prdigest serve` "
                "creates it (or fix PRDIGEST_DATABASE_URL)"
            )
    engine = _engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    script = ScriptDirectory.from_config(config)
    heads = set(script.get_heads())
    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        raise _CheckFailed(describe_unavailable(exc, url)) from None
    finally:
        engine.dispose()
    head = ", ".join(sorted(heads))
    if current == heads:
        return f"{shown} reachable, schema at revision {head} (current)"
    if not current:
        raise _CheckFailed(
            f"{shown} has no prdigest schema yet: `prdigest ingest` or `prdigest serve` creates it"
        )
    at = ", ".join(sorted(current))
    known = {rev.revision for rev in script.walk_revisions()}
    if current <= known:
        raise _CheckFailed(
            f"{shown} schema at revision {at}, this version needs {head}: the next "
            "`prdigest serve` or `prdigest ingest` upgrades it (back it up first)"
        )
    raise _CheckFailed(
        f"{shown} schema at revision {at}, which this version of prdigest does not know: "
        "a newer prdigest migrated it; upgrade prdigest"
    )


def _engine(url: str) -> sa.Engine:
    """An engine that only reads (no migration), giving up on PostgreSQL after a few seconds."""
    if sa.engine.make_url(url).get_backend_name() == "sqlite":
        return sa.create_engine(url)
    return sa.create_engine(url, connect_args={"connect_timeout": DB_CONNECT_TIMEOUT})


def check_sample_notes(url: str) -> str:
    """The store holds none of the bundled sample notes (an older `prdigest preview` stored
    them in the team's database)."""
    engine = _engine(url)
    try:
        found = len(Store(engine).notes_with_identity(sample_identities()))
    except (sa.exc.SQLAlchemyError, OSError) as exc:
        raise _CheckFailed(describe_unavailable(exc, url)) from None
    finally:
        engine.dispose()
    if found:
        raise _CheckFailed(
            f"the store holds {found} of the sample notes bundled with prdigest (an older "
            "`prdigest preview` stored them): `prdigest remove-samples` removes them "
            "(`--dry-run` first shows what goes); they are never posted"
        )
    return "none of the sample notes bundled with prdigest is in the store"


# -- Slack ------------------------------------------------------------------------------


def _client(settings: Settings) -> WebClient:
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else ""
    base_url = settings.slack_api_url.rstrip("/") + "/"
    quiet = logging.getLogger("bot.ops.doctor.slack")
    quiet.setLevel(logging.CRITICAL)  # a failed request is reported once, by its check
    return WebClient(
        token=token, base_url=base_url, timeout=SLACK_TIMEOUT, retry_handlers=[], logger=quiet
    )


def _unreachable(settings: Settings, exc: Exception) -> _CheckFailed:
    return _CheckFailed(describe_unreachable(exc, settings.slack_api_url))


def _auth_test(settings: Settings) -> SlackResponse:
    if settings.slack_bot_token is None or not settings.slack_bot_token.get_secret_value():
        raise _CheckFailed(
            "SLACK_BOT_TOKEN is not set: use the app's Bot User OAuth Token (xoxb-…), "
            "see 'Slack app setup' in deploy/README.md"
        )
    try:
        return _client(settings).auth_test()
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "error")
        if error in _TOKEN_REFUSED:
            raise _CheckFailed(
                f"Slack refused SLACK_BOT_TOKEN ({error}): copy the current Bot User OAuth "
                "Token from the app's OAuth & Permissions page"
            ) from None
        raise _CheckFailed(f"auth.test answered {error}") from None
    except (SlackClientError, OSError) as exc:
        raise _unreachable(settings, exc) from None


def _granted_scopes(response: SlackResponse) -> set[str] | None:
    for name, value in response.headers.items():
        if name.lower() == "x-oauth-scopes":
            text = value[0] if isinstance(value, list) else value
            return {s.strip() for s in str(text).split(",") if s.strip()}
    return None


def check_scopes(granted: set[str] | None) -> str:
    if granted is None:
        raise _CheckFailed(
            "Slack did not list the token's scopes (no x-oauth-scopes header); compare them "
            "with deploy/slack-app-manifest.yaml by hand"
        )
    missing = [s for s in BOT_SCOPES if s not in granted]
    if missing:
        raise _CheckFailed(
            f"the token lacks {', '.join(missing)}: add them under OAuth & Permissions → Bot "
            "Token Scopes (or update the app from deploy/slack-app-manifest.yaml), then "
            "reinstall the app and use the new token"
        )
    return f"the token has every scope the bot uses ({', '.join(BOT_SCOPES)})"


def check_channel(settings: Settings) -> str:
    channel = settings.channel
    if not channel:
        raise _CheckFailed(
            "PRDIGEST_CHANNEL is not set: set it to the digest channel's ID (C…; in Slack, "
            "the channel's details show it)"
        )
    try:
        _client(settings).conversations_history(channel=channel, limit=1)
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "error")
        if error == "not_in_channel":
            raise _CheckFailed(
                f"the bot is not in {channel}: invite it there (/invite @prdigest)"
            ) from None
        if error == "channel_not_found":
            raise _CheckFailed(
                f"channel {channel} not found: PRDIGEST_CHANNEL must be a channel ID (C…), "
                "not its name; a private channel also needs the bot invited"
            ) from None
        if error == "missing_scope":
            raise _CheckFailed(
                "cannot read the channel (missing_scope): the token needs channels:history "
                "(groups:history for a private channel)"
            ) from None
        raise _CheckFailed(f"conversations.history on {channel} answered {error}") from None
    except (SlackClientError, OSError) as exc:
        raise _unreachable(settings, exc) from None
    return f"the bot can read {channel}"


# -- files and schedule -----------------------------------------------------------------


def check_digests(setting: Path | None) -> str:
    """The team's notes folder: set, not the bundled samples, a folder, and every file parses.
    A folder without note files passes (the store's notes are still posted)."""
    try:
        folder = team_notes_dir(setting)
    except NotesFolderError as exc:
        raise _CheckFailed(str(exc)) from None
    if not folder.is_dir():
        raise _CheckFailed(
            f"{folder} is not a folder: create it or set PRDIGEST_DIGESTS_DIR to the folder "
            "of note files"
        )
    files = find_note_files([folder])
    errors: list[NoteFileError] = []
    notes = 0
    for path in files:
        try:
            notes += len(parse_note_file(path))
        except NoteFileError as exc:
            errors.append(exc)
    if errors:
        more = f" (and {len(errors) - 1} more; `prdigest ingest` lists them)" if errors[1:] else ""
        raise _CheckFailed(
            f"{len(errors)} of {len(files)} files in {folder} do not parse: {errors[0]}{more}; "
            "fix them or move them out"
        )
    if not files:
        return (
            f"{folder}: no note files yet (.txt or .md); `prdigest ingest` reads the team's "
            "notes from there"
        )
    return f"{folder}: {len(files)} files, {notes} notes, all parse"


def check_schedule(settings: Settings, now: datetime) -> str:
    from bot.delivery.scheduler import digest_trigger

    trigger = digest_trigger(settings)
    times: list[datetime] = []
    fire: datetime | None = trigger.get_next_fire_time(None, now.astimezone(settings.zone))
    while fire is not None and len(times) < FIRE_TIMES:
        times.append(fire)
        fire = trigger.get_next_fire_time(fire, fire)
    if not times:
        raise _CheckFailed(f"PRDIGEST_SCHEDULE {settings.schedule!r} never fires")
    shown = ", ".join(t.strftime("%a %Y-%m-%d %H:%M %Z") for t in times)
    return f"{settings.schedule!r} in {settings.timezone}: next {shown}"


# -- model server ---------------------------------------------------------------------------

MODEL_SERVER_TIMEOUT = 10


def check_model_server(settings: Settings) -> str:
    """`GET /models` on PRDIGEST_LLM_URL lists PRDIGEST_LLM_MODEL (only when it is set)."""
    import openai

    from bot.llm_reader import LlmConfig, make_client

    config = LlmConfig.from_settings(settings)
    assert config is not None  # the caller checks PRDIGEST_LLM_URL
    client = make_client(config, timeout=MODEL_SERVER_TIMEOUT)
    try:
        served = [m.id for m in client.models.list()]
    except openai.APITimeoutError:
        raise _CheckFailed(
            f"{config.url} did not answer within {MODEL_SERVER_TIMEOUT}s: is the model server "
            "running? check PRDIGEST_LLM_URL"
        ) from None
    except openai.APIConnectionError as exc:
        cause = str(exc.__cause__ or exc).splitlines()[0]
        raise _CheckFailed(
            f"{config.url} is unreachable ({cause}): start the model server (e.g. "
            "`vllm serve MODEL`) or fix PRDIGEST_LLM_URL"
        ) from None
    except openai.APIStatusError as exc:
        what = (
            "PRDIGEST_LLM_API_KEY"
            if exc.status_code in (401, 403)
            else "PRDIGEST_LLM_URL (the base URL ends in /v1)"
        )
        raise _CheckFailed(
            f"{config.url}/models answered HTTP {exc.status_code}: check {what}"
        ) from None
    except (openai.OpenAIError, ValueError, TypeError, AttributeError) as exc:
        raise _CheckFailed(
            f"{config.url}/models is not an OpenAI-compatible answer ({type(exc).__name__}): "
            "check PRDIGEST_LLM_URL (the base URL ends in /v1)"
        ) from None
    finally:
        client.close()
    if config.model not in served:
        listed = ", ".join(served[:5]) or "no model"
        raise _CheckFailed(
            f"{config.url} serves {listed}, not {config.model}: set PRDIGEST_LLM_MODEL to one "
            "of them"
        )
    return f"{config.url} serves {config.model}; reads {config.reads} notes"
