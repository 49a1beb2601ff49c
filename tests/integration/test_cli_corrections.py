"""`prdigest fix` and `prdigest reclassify`, run as a user would."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.app import app
from bot.services import FINGERPRINT_KEY, Services
from bot.store import Store
from bot.store.ledger import Ledger
from tests.support.cli import cli_env, json_lines, run, runner
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import write_team_notes
from tests.support.notes import replacing_roles


def test_fix_validates_roles_and_stores_who(env: Path, db_url: str) -> None:
    assert run("ingest")[0] == 0
    first = json_lines(run("notes", "--json")[1])[0]
    code, _, err = run("fix", str(first["id"]), "--roles", "moe,nope")
    assert code == 2 and "not a role: nope" in err
    code, _, err = run("fix", str(first["id"]), "--roles", "moe", "--verdict", "maybe")
    assert code == 2 and "--verdict" in err
    assert json_lines(run("notes", "--json")[1])[0] == first

    code, out, _ = run(
        "fix", str(first["id"]), "--roles", "moe, kv", "--primary", "kv", "--verdict", "skip"
    )
    assert code == 0 and "→ kv-cache/moe-quant skip (primary kv-cache)" in out
    fixed = json_lines(run("notes", "--json")[1])[0]
    assert fixed["roles"] == ["kv-cache", "moe-quant"] and fixed["verdict"] == "skip"
    store = Store.open(db_url)
    try:
        fix = store.get_fix(int(str(first["id"])))
    finally:
        store.close()
    assert fix is not None and fix.fixed_by.startswith("cli:")


def test_reclassify_prints_changes_and_post_reclassifies_on_start(
    env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    assert run("ingest")[0] == 0
    code, out, _ = run("reclassify", "--dry-run")
    assert code == 0 and out.strip() == "0 notes would change"

    monkeypatch.setenv("PRDIGEST_ROLES_FILE", str(replacing_roles(tmp_path)))
    code, out, _ = run("reclassify", "--dry-run")
    lines = out.strip().splitlines()
    assert code == 0 and lines[-1].endswith("notes would change") and len(lines) > 1
    assert " → " in lines[0] and lines[0].startswith("#")
    before = json_lines(run("notes", "--json")[1])
    assert not any("serving" in n["roles"] for n in before)  # type: ignore[operator]

    monkeypatch.setenv("PRDIGEST_CHANNEL", "C0DIGEST")
    code, _, err = run("post", "--dry-run")
    assert code == 0 and "re-classified" not in err, "a dry run changes nothing"
    code, _, err = run("preview")
    assert code == 0 and "re-classified the stored notes" in err
    after = json_lines(run("notes", "--json")[1])
    assert any("serving" in n["roles"] for n in after)  # type: ignore[operator]
    assert run("reclassify")[1].strip() == "0 notes changed"
    store = Store.open(db_url)
    try:
        assert store.get_meta(FINGERPRINT_KEY) is not None
    finally:
        store.close()


def test_post_reclassifies_on_start_keeps_posted_notes_in_place_and_updates_a_fix(
    posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert posting.settings.digests_dir is not None
    write_team_notes(posting.settings.digests_dir)
    cli_env(monkeypatch, posting)
    first = runner.invoke(app, ["post", "--channel-rate", "0", "--dm-rate", "0"])
    assert first.exit_code == 0 and "posted" in first.output
    posts = slack.count("chat.postMessage")
    threads = Ledger(posting.store.engine).run_notes(1)

    monkeypatch.setenv("PRDIGEST_ROLES_FILE", str(replacing_roles(tmp_path)))
    second = runner.invoke(app, ["post", "--channel-rate", "0"])
    assert second.exit_code == 0, second.output
    assert "re-classified the stored notes" in second.output and "nothing new" in second.output
    notes = posting.store.list_notes()
    assert all(set(n.roles) <= {"kernels", "serving", "zz-last"} for n in notes)
    assert Ledger(posting.store.engine).run_notes(1) == threads, "posted notes keep their place"
    assert slack.count("chat.postMessage") == posts and slack.count("chat.update") == 0

    note = notes[0]
    fixed = runner.invoke(app, ["fix", str(note.id), "--roles", "serving", "--verdict", "skim"])
    assert fixed.exit_code == 0, fixed.output
    third = runner.invoke(app, ["post", "--channel-rate", "0"])
    assert third.exit_code == 0 and "1 posted messages updated in place" in third.output
    assert slack.count("chat.postMessage") == posts and slack.count("chat.update") == 1
    assert slack.sent_markup_problems() == []
