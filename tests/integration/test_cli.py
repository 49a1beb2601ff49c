"""The `prdigest` command line, run as a user would: real settings, real store, real files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli.app import app
from bot.store import Store
from tests.support.cli import json_lines, run
from tests.support.notefiles import ROLE_SLUGS, seed_files


def test_every_command_has_help() -> None:
    for command in app.registered_commands:
        assert command.callback is not None and command.callback.__doc__, command.name
        name = command.name or command.callback.__name__
        code, out, _ = run(name, "--help")
        assert code == 0 and "Usage" in out


def test_ingest_counts_then_reingest_is_unchanged(env: Path) -> None:
    code, out, _ = run("ingest")
    assert code == 0 and "32 new, 0 updated, 0 unchanged, 0 failed (4 files)" in out
    code, out, _ = run("ingest")
    assert code == 0 and "0 new, 0 updated, 32 unchanged, 0 failed" in out


def test_a_bad_file_fails_alone_with_file_and_line(env: Path, db_url: str) -> None:
    (env / "broken.txt").write_text("vllm-project/vllm\n\nA title\n\nA paragraph\n\nOrphan\n")
    (env / "empty.txt").write_bytes(b"")
    code, out, err = run("ingest")
    assert code == 1
    assert "broken.txt:7: title without a paragraph" in err
    assert "empty.txt:1: file is empty" in err
    assert "32 new" in out and "2 failed" in out
    assert "Traceback" not in out + err
    store = Store.open(db_url)
    titles = {n.title for n in store.list_notes()}
    store.close()
    assert "A title" not in titles, "a bad file lands all or nothing"
    assert len(titles) == 32


def test_changed_paragraph_is_an_update(env: Path) -> None:
    run("ingest")
    path = env / seed_files()[0].name
    text = path.read_text(encoding="utf-8")
    title = text.split("\n\n")[1]
    path.write_text(
        text.replace(text.split("\n\n")[2], "改写后的段落：可略过。", 1), encoding="utf-8"
    )
    code, out, _ = run("ingest")
    assert code == 0 and "0 new, 1 updated, 31 unchanged" in out
    notes = json_lines(run("notes", "--json")[1])
    (note,) = [n for n in notes if n["title"] == title]
    assert note["verdict"] == "skip"


def test_notes_json_has_the_documented_fields(env: Path) -> None:
    run("ingest")
    notes = json_lines(run("notes", "--json")[1])
    assert len(notes) == 32
    for note in notes:
        assert {
            "id",
            "repo",
            "title",
            "roles",
            "primary_role",
            "verdict",
            "role_verdicts",
            "pr",
            "source",
            "ingested_at",
        } <= note.keys()
        assert note["primary_role"] in note["roles"]  # type: ignore[operator]
        assert str(note["source"]).rsplit(":", 1)[1].isdigit()
    infra = json_lines(run("notes", "--json", "--role", "infra")[1])
    assert infra and all("release-infra" in n["roles"] for n in infra)  # type: ignore[operator]
    assert run("notes", "--json", "--since", "2999-01-01")[1].strip() == ""
    code, _, err = run("notes", "--role", "mooe")
    assert code == 2 and "moe-quant" in err


def test_lookup_role_alias_and_cjk_free_text(env: Path) -> None:
    run("ingest")
    moe = json_lines(run("lookup", "moe", "--json")[1])
    assert moe and all("moe-quant" in n["roles"] for n in moe)  # type: ignore[operator]
    ranks = {"deep": 0, "skim": 1, "skip": 2}
    order = [ranks[str(n["role_verdicts"].get("moe-quant", n["verdict"]))] for n in moe]  # type: ignore[attr-defined]
    assert order == sorted(order)
    for word in ("视频", "命中"):
        found = json_lines(run("lookup", word, "--json", "--limit", "50")[1])
        assert found, word
        for note in found:
            assert word in str(note["title"]) + str(note["paragraph"])
    kv = json_lines(run("lookup", "缓存", "--json", "--limit", "50")[1])
    assert kv and all("kv-cache" in n["roles"] for n in kv), "an alias lists its role"  # type: ignore[operator]
    marlin = json_lines(run("lookup", "fp8", "marlin", "--json")[1])
    assert marlin and "Marlin" in str(marlin[0]["title"])
    assert len(json_lines(run("lookup", "moe", "--json", "--limit", "2")[1])) == 2


def test_lookup_bad_input_is_a_clear_message(env: Path) -> None:
    run("ingest")
    code, _, err = run("lookup", "x" * 4000)
    assert code == 2 and "limit" in err and "Traceback" not in err
    code, out, _ = run("lookup", "zzqqxx")
    assert code == 0 and "No note matches free text `zzqqxx`." in out
    code, out, _ = run("lookup", "marlin", "zzqqxx")
    assert code == 0 and "No note has all of these words" in out, "says it fell back"
    assert "No note has all" not in run("lookup", "marlin")[1]


def test_roles_lists_the_nine_slugs(env: Path) -> None:
    _, out, _ = run("roles")
    for slug in ROLE_SLUGS:
        assert slug in out


def test_preview_ingests_an_empty_store_and_groups_by_role(env: Path) -> None:
    code, out, err = run("preview")
    assert code == 0
    assert "32 new" in err
    assert "精读推荐" in out and "MoE" in out and "deep" in out
    code, out, _ = run("preview", "--week", "2001-W01")
    assert code == 0 and "No new notes" in out
    code, _, err = run("preview", "--week", "junk")
    assert code == 2 and "--week" in err


def test_bad_setting_names_the_variable(env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRDIGEST_TIMEZONE", "Mars/Olympus")
    code, _, err = run("roles")
    assert code == 2 and "PRDIGEST_TIMEZONE" in err and "Mars/Olympus" in err
    monkeypatch.setenv("PRDIGEST_TIMEZONE", "UTC")
    monkeypatch.setenv("PRDIGEST_PORT", "not-a-port")
    code, _, err = run("roles")
    assert code == 2 and "PRDIGEST_PORT" in err
    monkeypatch.delenv("PRDIGEST_PORT")
    bad_roles = env.parent / "roles.toml"
    bad_roles.write_text("mode = 'replace'\n[[role]]\nslug = 'x'\n")
    monkeypatch.setenv("PRDIGEST_ROLES_FILE", str(bad_roles))
    code, _, err = run("roles")
    assert code == 2 and "roles.toml" in err


def test_console_script_preview_from_a_fresh_directory(tmp_path: Path) -> None:
    """The README's run command, as a subprocess in a fresh clone with the default SQLite
    URL and no settings: this week's digest of the bundled notes, and no store left behind
    (the samples never enter ./prdigest.db)."""
    work = tmp_path / "fresh"
    shutil.copytree(Path(__file__).parents[2] / "digests", work / "digests")
    script = Path(sys.executable).with_name("prdigest")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))}
    done = subprocess.run(
        [str(script), "preview"], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "精读推荐" in done.stdout and "32 notes" in done.stdout
    assert "PRDIGEST_DIGESTS_DIR (your team's notes folder) is not set" in done.stderr
    assert sorted(p.name for p in work.iterdir()) == ["digests"]


def test_post_dry_run_says_when_files_are_waiting_to_be_ingested(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRDIGEST_CHANNEL", "C123")
    code, out, err = run("post", "--dry-run")
    assert code == 0 and "nothing new" in out
    assert "32 notes" in err and "not ingested yet" in err
    run("ingest")
    code, out, err = run("post", "--dry-run")
    assert code == 0 and "精读推荐" in out and "not ingested" not in err


def test_json_shows_verdict_confidence(env: Path) -> None:
    (env / "unsure.txt").write_text(
        "vllm-project/vllm\n\n"
        "前缀缓存块复用重构 (#7001)\n\n前缀缓存的块复用逻辑被重新设计，命中率明显提升。\n\n"
        "Prefix cache eviction order (#7002)\n\nWorth a close read: eviction order changes.\n",
        encoding="utf-8",
    )
    assert run("ingest")[0] == 0
    notes = {n["title"]: n for n in json_lines(run("notes", "--json")[1])}
    assert {n["verdict_confidence"] for n in notes.values()} <= {"high", "low"}
    unsure = notes["前缀缓存块复用重构"]
    assert (unsure["verdict"], unsure["verdict_confidence"]) == ("skim", "low")
    sure = notes["Prefix cache eviction order"]
    assert (sure["verdict"], sure["verdict_confidence"]) == ("deep", "high")
    found = json_lines(run("lookup", "块复用", "--json")[1])
    assert [n["verdict_confidence"] for n in found] == ["low"]
    preview = " ".join(run("preview")[1].split())
    assert preview.count("(low confidence)") == sum(
        n["verdict_confidence"] == "low" for n in notes.values()
    )
