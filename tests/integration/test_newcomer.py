"""What a newcomer meets first: help texts, listing many notes, missing paths, folders
with other files, a dry run before the channel is set, counts past the search cap, and
a quiet `serve` start."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.cli.app import app
from bot.services import Services, ingest_paths
from tests.support.cli import COMMANDS, json_lines, run, runner
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import seed_files
from tests.support.slackapp import start_harness

SCRIPT = Path(sys.executable).with_name("prdigest")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))}
    env.update(extra)
    return env


def test_help_texts_wrap_to_the_terminal_and_show_no_type_labels() -> None:
    width = 60
    for name in ["", *COMMANDS]:
        result = runner.invoke(app, [*([name] if name else []), "--help"], terminal_width=width)
        assert result.exit_code == 0, result.output
        text = result.stdout
        labels = re.findall(r"<[a-z][^<>]*>", text)  # <bool>, <str>, <list[Path]>, …
        assert labels == [], text
        lines = text.splitlines()
        assert all(len(line) <= width for line in lines), text
        # The description is re-wrapped: within a paragraph only the last line is short.
        description = text.split("\n\n")[1:]
        for paragraph in description:
            if paragraph.startswith(("Options", "Arguments", "Commands")):
                break
            body = [line.strip() for line in paragraph.splitlines()]
            assert all(len(line) >= width * 0.6 for line in body[:-1]), paragraph


def test_notes_shows_a_limited_list_and_says_how_many_more(env: Path) -> None:
    run("ingest")
    code, out, _ = run("notes", "--limit", "5")
    assert code == 0
    assert "5 of 32 notes; 27 more: --limit 0 shows all" in out
    code, out, err = run("notes", "--json", "--limit", "5")
    assert code == 0 and len(json_lines(out)) == 5 and "27 more" in err
    code, out, err = run("notes", "--json", "--limit", "0")
    assert len(json_lines(out)) == 32 and "more" not in err
    code, out, _ = run("notes", "--role", "kernels", "--limit", "2")
    assert "2 of" in out and "more" in out
    code, out, _ = run("notes")  # the default limit (100) is more than 32
    assert "32 notes" in out and "more" not in out


def test_a_missing_path_is_reported_as_not_found(env: Path) -> None:
    code, out, err = run("ingest", str(env), "no/such/folder")
    assert code == 1
    assert "no/such/folder: not found" in err and "no/such/folder:0" not in err
    assert "32 new" in out


def test_folder_ingest_names_the_files_it_read_and_skipped(env: Path) -> None:
    (env / "readme.pdf").write_bytes(b"%PDF-1.4")
    (env / "notes.docx").write_bytes(b"PK")
    (env / ".hidden.txt").write_text("ignored")
    code, out, err = run("ingest", str(env))
    assert code == 0 and "32 new" in out
    assert "read 4 files: " in err
    for path in seed_files():
        assert path.name in err
    assert "skipped 2 files (note files end in .txt or .md): " in err
    assert "readme.pdf" in err and "notes.docx" in err and ".hidden" not in err


def test_post_dry_run_without_a_channel_renders_for_a_placeholder(
    env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run("ingest")
    code, out, err = run("post", "--dry-run")
    assert code == 0, err
    assert "精读推荐" in out
    assert "#digest-channel" in out and "PRDIGEST_CHANNEL is not set" in out
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    code, _, err = run("post")
    assert code == 1 and "PRDIGEST_CHANNEL is not set" in err


# ---------------------------------------------------------------- counts past the cap

MANY = 1100


def write_many_notes(folder: Path) -> None:
    blocks = ["vllm-project/vllm"]
    for i in range(MANY):
        blocks += [f"Marlin fp8 kernel change {i}", "值得精读，适合做 FP8 内核的工程师。"]
    (folder / "many.txt").write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def test_search_totals_past_the_cap_say_so_in_the_cli(env: Path) -> None:
    write_many_notes(env)
    assert run("ingest")[0] == 0
    code, out, _ = run("lookup", "marlin", "--limit", "10")
    assert code == 0
    assert "10 of 1,010+ notes" in out
    code, out, _ = run("lookup", "kernels", "--limit", "10")  # a role's count is exact
    assert "+" not in out.splitlines()[-1] and "of 1," in out.splitlines()[-1]


def test_search_totals_past_the_cap_say_so_in_slack(
    services: Services, slack: FakeSlack, tmp_path: Path
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    write_many_notes(folder)
    ingest_paths(services, [folder])
    harness = start_harness(services, slack, ingest=False)
    try:
        _, reply = harness.command("marlin fp8")
        size = services.settings.page_size
        assert f"of {size + 1000:,}+" in reply["text"]
        context = [b for b in reply["blocks"] if b["type"] == "context"]
        assert f"1–{size} of {size + 1000:,}+ notes" in context[0]["elements"][0]["text"]
    finally:
        harness.server.stop()


# ---------------------------------------------------------------- serve


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_starts_without_the_unused_token_warning(tmp_path: Path) -> None:
    """HTTP mode calls no Slack method at start, so no fake Slack is needed here."""
    env = clean_env(
        SLACK_BOT_TOKEN="xoxb-test",
        SLACK_SIGNING_SECRET="secret",
        PRDIGEST_SLACK_API_URL=f"http://127.0.0.1:{_free_port()}/api/",
        PRDIGEST_PORT=str(_free_port()),
        PRDIGEST_DATABASE_URL=f"sqlite:///{tmp_path / 'serve.db'}",
        PRDIGEST_DIGESTS_DIR=str(tmp_path),
    )
    proc = subprocess.Popen(
        [str(SCRIPT), "serve", "--no-scheduler", "--host", "127.0.0.1"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        said = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            said.append(line)
            if "listening on" in line or not line:
                break
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=30)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    output = "".join(said) + rest
    assert "listening on" in output, output
    assert "will be unused" not in output, output
