"""`prdigest doctor` through the CLI, against the fake Slack and real SQLite / PostgreSQL."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import sqlalchemy as sa
from alembic.config import Config
from alembic.script import ScriptDirectory
from typer.testing import CliRunner

from bot.classify.taxonomy import load_taxonomy
from bot.cli.app import app as cli_app
from bot.config import load_settings
from bot.services import Services, ingest_paths
from bot.slack.client import BOT_SCOPES
from bot.store import Store
from bot.store.engine import MIGRATIONS
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import write_team_notes
from tests.support.process import ROOT, free_port
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN


def set_up(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, db_url: str, slack: FakeSlack) -> Path:
    """Everything doctor checks set up right: a migrated store, note files, the fake Slack."""
    Store.open(db_url).close()
    digests = tmp_path / "notes"
    digests.mkdir()
    write_team_notes(digests)
    for name, value in {
        "PRDIGEST_DATABASE_URL": db_url,
        "PRDIGEST_DIGESTS_DIR": str(digests),
        "PRDIGEST_CHANNEL": DIGEST_CHANNEL,
        "PRDIGEST_SLACK_API_URL": slack.api_url,
        "PRDIGEST_SCHEDULE": "30 9 * * MON",
        "PRDIGEST_TIMEZONE": "Europe/Berlin",
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
    }.items():
        monkeypatch.setenv(name, value)
    return digests


@pytest.fixture
def healthy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, slack: FakeSlack) -> Path:
    """On SQLite: the checks that do not concern the database."""
    return set_up(monkeypatch, tmp_path, f"sqlite:///{tmp_path / 'prdigest.db'}", slack)


@pytest.fixture
def healthy_db(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, db_url: str, slack: FakeSlack
) -> Path:
    """On SQLite and on PostgreSQL."""
    return set_up(monkeypatch, tmp_path, db_url, slack)


def run_doctor() -> tuple[int, str, dict[str, tuple[str, str]]]:
    """Exit code, the whole output, and check name -> (status, detail)."""
    result = CliRunner().invoke(cli_app, ["doctor"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    checks: dict[str, tuple[str, str]] = {}
    for line in result.output.splitlines():
        status, rest = line[:4].strip(), line[6:]
        name, detail = rest[:14].strip(), rest[14:]
        assert status in ("ok", "FAIL", "skip"), line
        checks[name] = (status, detail)
    return result.exit_code, result.output, checks


CHECKS = [
    "settings",
    "database",
    "sample notes",
    "slack token",
    "slack scopes",
    "slack channel",
    "digests",
    "schedule",
]


def failures(checks: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {name: detail for name, (status, detail) in checks.items() if status == "FAIL"}


def test_all_checks_pass(healthy_db: Path, slack: FakeSlack) -> None:
    code, output, checks = run_doctor()
    assert code == 0, output
    assert list(checks) == CHECKS
    assert all(status == "ok" for status, _ in checks.values()), output
    assert "@prdigest in Test Team" in checks["slack token"][1]
    assert f"can read {DIGEST_CHANNEL}" in checks["slack channel"][1]
    assert "4 files, 32 notes" in checks["digests"][1]
    # The next three Mondays 09:30 in Berlin, computed here independently.
    berlin = ZoneInfo("Europe/Berlin")
    shown = checks["schedule"][1].split("next ", 1)[1].split(", ")
    assert len(shown) == 3
    fired = [datetime.strptime(s.rsplit(" ", 1)[0], "%a %Y-%m-%d %H:%M") for s in shown]
    assert all(f.weekday() == 0 and (f.hour, f.minute) == (9, 30) for f in fired)
    assert [(b - a).days for a, b in itertools.pairwise(fired)] == [7, 7]
    assert fired[0].replace(tzinfo=berlin) > datetime.now(berlin)
    assert all(s.endswith(("CET", "CEST")) for s in shown)
    assert slack.count("auth.test") == 1
    (read,) = slack.calls_for("conversations.history")
    assert read.params["channel"] == DIGEST_CHANNEL and str(read.params["limit"]) == "1"
    assert slack.count("chat.postMessage") == 0, "doctor posts nothing"


def test_missing_scope_is_named(healthy: Path) -> None:
    narrow = FakeSlack(token=SLACK_TOKEN, scopes="commands,chat:write,channels:history")
    with narrow, pytest.MonkeyPatch.context() as mp:
        mp.setenv("PRDIGEST_SLACK_API_URL", narrow.api_url)
        code, _, checks = run_doctor()
    assert code == 1
    (detail,) = failures(checks).values()
    assert checks["slack scopes"][0] == "FAIL"
    assert "lacks im:write, groups:history, im:history, users:read" in detail
    assert "reinstall" in detail
    assert set(BOT_SCOPES) - {"commands", "chat:write", "channels:history"} == {
        "im:write",
        "groups:history",
        "im:history",
        "users:read",
    }


def test_bot_not_in_channel_says_invite_it(healthy: Path, slack: FakeSlack) -> None:
    slack.reads_need_membership = True
    slack.channels_not_joined.add(DIGEST_CHANNEL)
    code, _, checks = run_doctor()
    assert code == 1
    assert failures(checks) == {
        "slack channel": f"the bot is not in {DIGEST_CHANNEL}: invite it there (/invite @prdigest)"
    }


def test_unknown_channel_and_unset_channel(
    healthy: Path, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    slack.unknown_channels.add(DIGEST_CHANNEL)
    _, _, checks = run_doctor()
    assert "must be a channel ID" in failures(checks)["slack channel"]
    monkeypatch.delenv("PRDIGEST_CHANNEL")
    _, _, checks = run_doctor()
    assert failures(checks)["slack channel"].startswith("PRDIGEST_CHANNEL is not set")


def test_bad_note_file_is_named(healthy: Path) -> None:
    (healthy / "broken.txt").write_text("\n\n", encoding="utf-8")
    (healthy / "no-paragraph.txt").write_text("vllm-project/vllm\n\nA title\n", encoding="utf-8")
    code, _, checks = run_doctor()
    assert code == 1
    detail = failures(checks)["digests"]
    assert "2 of 6 files" in detail and "broken.txt:" in detail
    assert "and 1 more" in detail
    assert list(failures(checks)) == ["digests"]


def test_missing_digests_folder(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(healthy / "nope"))
    _, _, checks = run_doctor()
    assert "PRDIGEST_DIGESTS_DIR" in failures(checks)["digests"]


def test_the_notes_folder_must_be_set_and_not_the_samples(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PRDIGEST_DIGESTS_DIR")
    code, _, checks = run_doctor()
    assert code == 1
    assert failures(checks) == {
        "digests": "PRDIGEST_DIGESTS_DIR is not set: set it to your team's folder of note "
        "files (`prdigest preview` shows the bundled sample notes without it)"
    }
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(ROOT / "digests"))
    _, _, checks = run_doctor()
    assert "is prdigest's sample notes folder" in failures(checks)["digests"]
    copy = healthy.parent / "copied"
    shutil.copytree(ROOT / "digests", copy)
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(copy))
    _, _, checks = run_doctor()
    detail = failures(checks)["digests"]
    assert "holds prdigest's bundled sample notes (000_" in detail and "and 1 more" in detail


def test_an_empty_notes_folder_passes_and_says_so(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = healthy.parent / "empty"
    empty.mkdir()
    monkeypatch.setenv("PRDIGEST_DIGESTS_DIR", str(empty))
    code, output, checks = run_doctor()
    assert code == 0, output
    assert checks["digests"] == (
        "ok",
        f"{empty}: no note files yet (.txt or .md); "
        "`prdigest ingest` reads the team's notes from there",
    )


def test_a_store_holding_sample_notes_is_named_until_they_are_removed(
    healthy_db: Path, db_url: str
) -> None:
    """An older quick start left the samples in the team's store: one FAIL line with the
    count and the command, and doctor itself removes nothing."""
    store = Store.open(db_url)
    try:
        services = Services(
            settings=load_settings(database_url=db_url), store=store, taxonomy=load_taxonomy(None)
        )
        ingest_paths(services, [ROOT / "digests"])
        ingest_paths(services, [healthy_db])
        code, _, checks = run_doctor()
        assert code == 1
        assert failures(checks) == {
            "sample notes": "the store holds 32 of the sample notes bundled with prdigest (an "
            "older `prdigest preview` stored them): `prdigest remove-samples` removes them "
            "(`--dry-run` first shows what goes); they are never posted"
        }
        assert store.count_notes() == 64, "doctor changes nothing"
        result = CliRunner().invoke(cli_app, ["remove-samples"])
        assert result.exit_code == 0, result.output
        code, output, checks = run_doctor()
        assert code == 0, output
        assert store.count_notes() == 32
    finally:
        store.close()


def test_unreachable_slack_is_one_fail_line(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"http://127.0.0.1:{free_port()}/api/"
    monkeypatch.setenv("PRDIGEST_SLACK_API_URL", url)
    code, _, checks = run_doctor()
    assert code == 1
    assert list(failures(checks)) == ["slack token"]
    detail = checks["slack token"][1]
    assert "Slack is unreachable at 127.0.0.1:" in detail and "connection refused" in detail
    assert f"PRDIGEST_SLACK_API_URL ({url})" in detail
    assert checks["slack scopes"][0] == checks["slack channel"][0] == "skip"


def test_rejected_or_missing_token(healthy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-revoked")
    code, _, checks = run_doctor()
    assert code == 1
    assert failures(checks) == {
        "slack token": "Slack refused SLACK_BOT_TOKEN (invalid_auth): copy the current Bot "
        "User OAuth Token from the app's OAuth & Permissions page"
    }
    monkeypatch.delenv("SLACK_BOT_TOKEN")
    _, _, checks = run_doctor()
    assert failures(checks)["slack token"].startswith("SLACK_BOT_TOKEN is not set")


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://prdigest:hunter2@127.0.0.1:{port}/prdigest",
        "sqlite:///{tmp}/no/such/folder/prdigest.db",
    ],
)
def test_unreachable_database_is_one_fail_line(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, url: str
) -> None:
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", url.format(port=free_port(), tmp=tmp_path))
    code, output, checks = run_doctor()
    assert code == 1
    assert list(failures(checks)) == ["database"]
    assert "hunter2" not in output, "a password is never shown"
    detail = checks["database"][1]
    assert "is unavailable" in detail or "does not exist" in detail
    assert "PRDIGEST_DATABASE_URL" in detail
    assert not (tmp_path / "no").exists(), "doctor creates no database"


def _alembic() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config)


def _set_revision(url: str, revision: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    engine.dispose()


def test_schema_behind_or_unknown_is_not_migrated(healthy_db: Path, db_url: str) -> None:
    script = _alembic()
    head = script.get_current_head()
    assert head is not None
    previous = script.get_revision(head).down_revision
    assert isinstance(previous, str)
    try:
        _set_revision(db_url, previous)
        code, _, checks = run_doctor()
        assert code == 1
        detail = failures(checks)["database"]
        assert f"schema at revision {previous}, this version needs {head}" in detail
        engine = sa.create_engine(db_url)
        with engine.connect() as conn:
            still = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        engine.dispose()
        assert still == previous, "doctor never migrates"
        _set_revision(db_url, "9999")
        _, _, checks = run_doctor()
        assert "does not know" in failures(checks)["database"]
    finally:
        _set_revision(db_url, head)


def test_empty_database_has_no_schema(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.db"
    sa.create_engine(f"sqlite:///{empty}").connect().close()
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", f"sqlite:///{empty}")
    _, _, checks = run_doctor()
    assert "no prdigest schema yet" in failures(checks)["database"]


def test_a_sqlite_file_in_a_missing_folder_names_the_folder(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "no-such-folder"
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", f"sqlite:///{folder / 'prdigest.db'}")
    _, _, checks = run_doctor()
    detail = failures(checks)["database"]
    assert f"its folder {folder} does not exist" in detail and "creates it" not in detail


def test_a_missing_roles_file_says_what_to_fix(
    healthy: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PRDIGEST_ROLES_FILE", str(tmp_path / "roles.toml"))
    _, _, checks = run_doctor()
    detail = failures(checks)["settings"]
    assert "roles.toml: not found" in detail and "fix the file" in detail


def test_invalid_settings_stop_at_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRDIGEST_TIMEZONE", "Mars/Olympus")
    code, output, checks = run_doctor()
    assert code == 1
    assert list(checks) == ["settings"]
    assert "PRDIGEST_TIMEZONE" in checks["settings"][1]
    assert output.count("\n") == 1


def test_doctor_in_a_real_process_has_no_traceback(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack and the database both down: exit 1, two FAIL lines, nothing else on stderr."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PRDIGEST_SLACK_API_URL": f"http://127.0.0.1:{free_port()}/api/",
        "PRDIGEST_DATABASE_URL": f"postgresql+psycopg://u:secret@127.0.0.1:{free_port()}/x",
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot", "doctor"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    statuses = [line.split()[0] for line in lines]
    assert statuses == ["ok", "FAIL", "skip", "FAIL", "skip", "skip", "ok", "ok"]
    assert "secret" not in done.stdout
