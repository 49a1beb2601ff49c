"""The command line at its edges: odd arguments and read-only commands, run as a user would."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bot.cli.app import app
from tests.support.cli import COMMANDS, run, runner
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import ROLE_SLUGS, seed_files
from tests.support.testenv import DIGEST_CHANNEL, SLACK_TOKEN


def test_roles_opens_no_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("roles")
    assert code == 0 and all(slug in out for slug in ROLE_SLUGS)
    assert not (tmp_path / "prdigest.db").exists()
    # A database that is down does not stop anyone reading the taxonomy.
    monkeypatch.setenv("PRDIGEST_DATABASE_URL", "postgresql+psycopg://nobody@127.0.0.1:9/none")
    code, out, err = run("roles")
    assert code == 0 and "moe-quant" in out and not err


def test_a_file_named_twice_is_read_once(env: Path) -> None:
    one = env / seed_files()[0].name
    code, out, err = run("ingest", str(env), str(one))
    assert code == 0 and "(4 files)" in out and "read 4 files" in err
    assert err.count(one.name) == 1
    code, out, _ = run("ingest", str(one))
    assert code == 0 and "(1 file)" in out


def test_an_empty_lookup_says_what_to_give(env: Path) -> None:
    for query in ("", "   "):
        code, out, err = run("lookup", query)
        assert code == 2 and "prdigest lookup moe" in err and not out


def test_an_unknown_role_points_to_the_roles(env: Path) -> None:
    code, _, err = run("notes", "--role", "zzqq")
    assert code == 2 and "did you mean" not in err and "`prdigest roles` lists them" in err
    code, _, err = run("notes", "--role", "kernals")
    assert code == 2 and "did you mean kernels" in err


def test_help_never_splits_a_flag_or_a_week_at_its_hyphen() -> None:
    for width in range(40, 101, 3):
        for name in COMMANDS:
            text = runner.invoke(app, [name, "--help"], terminal_width=width).stdout
            broken = [line for line in text.splitlines() if re.search(r"\w-$", line)]
            assert broken == [], (name, width, text)


def test_post_json_without_dry_run_posts_nothing(
    env: Path, monkeypatch: pytest.MonkeyPatch, slack: FakeSlack
) -> None:
    for name, value in {
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
        "PRDIGEST_CHANNEL": DIGEST_CHANNEL,
        "PRDIGEST_SLACK_API_URL": slack.api_url,
    }.items():
        monkeypatch.setenv(name, value)
    run("ingest")
    code, out, err = run("post", "--json")
    assert code == 2 and "use it with --dry-run" in err and not out
    assert slack.calls == []
    code, out, _ = run("post", "--dry-run", "--json")
    assert code == 0 and '"blocks"' in out and slack.count("chat.postMessage") == 0


def test_usage_lines_name_arguments_plainly() -> None:
    for name, usage in (
        ("lookup", "prdigest lookup [OPTIONS] QUERY..."),
        ("fix", "prdigest fix [OPTIONS] NOTE_ID"),
        ("copy-db", "prdigest copy-db [OPTIONS] URL"),
        ("ingest", "prdigest ingest [OPTIONS] [PATH]..."),
    ):
        text = runner.invoke(app, [name, "--help"], prog_name="prdigest").stdout
        assert text.splitlines()[0] == f"Usage: {usage}", text


def test_operator_lines_show_user_text_as_written(env: Path) -> None:
    code, _, err = run("notes", "--role", "[/red]")
    assert code == 2 and "unknown role '[/red]'" in err
    code, _, err = run("ingest", "[bold]x.txt")
    assert code == 1 and "[bold]x.txt: not found" in err


def test_json_log_lines_hold_every_ingest_notice(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRDIGEST_LOG_FORMAT", "json")
    (env / "readme.pdf").write_bytes(b"%PDF-1.4")
    code, _, err = run("ingest", str(env), "no/such/file.txt")
    assert code == 1
    records = [json.loads(line) for line in err.splitlines()]
    messages = " | ".join(r["message"] for r in records)
    assert "read 4 files" in messages and "skipped 1 file" in messages
    assert "no/such/file.txt: not found" in messages
    assert "alembic.runtime.plugins" not in {r["logger"] for r in records}
    code, _, err = run("notes", "--json", "--limit", "1")
    assert code == 0 and "31 more" in json.loads(err)["message"]


def test_fix_of_an_id_past_any_integer_is_no_such_note(env: Path) -> None:
    run("ingest")
    code, _, err = run("fix", str(10**20), "--roles", "moe")
    assert code == 2 and f"no note with id {10**20}" in err


def test_numbers_at_the_end_of_the_range_are_refused_plainly(env: Path) -> None:
    code, _, err = run("notes", "--limit", str(10**20))
    assert code == 2 and "--limit" in err
    code, _, err = run("preview", "--week", "9999-W52")
    assert code == 2 and "not an ISO week" in err
