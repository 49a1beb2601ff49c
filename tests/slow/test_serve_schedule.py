"""`prdigest serve` posts the weekly digest by itself: catch-up on start, then on its cron."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.notes.ingest import parse_note_file
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import seed_files, write_team_notes
from tests.support.process import clean_env, free_port, start

pytestmark = pytest.mark.slow
TOKEN = "xoxb-schedule-test"
CHANNEL = "C0DIGEST"


def _wait(condition: Callable[[], bool], timeout: float, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if proc.poll() is not None:
            pytest.fail(f"serve exited early: {proc.communicate()[1]}")
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"timed out; serve said: {proc.communicate()[1][-3000:]}")


def _is_parent(message: dict[str, Any]) -> bool:
    return message.get("thread_ts") in (None, message["ts"])


def _titles(messages: list[dict[str, Any]]) -> list[str]:
    """Note titles in thread replies (the parent repeats only the top deep reads)."""
    text = []
    for message in messages:
        if not _is_parent(message):
            for block in message.get("blocks") or []:
                if block.get("type") == "section" and str(block.get("block_id", "")).startswith(
                    "note-"
                ):
                    text.append(block["text"]["text"])
    return text


def test_serve_catches_up_then_posts_on_its_cron(tmp_path: Path) -> None:
    digests = tmp_path / "digests"
    digests.mkdir()
    write_team_notes(digests)
    titles = [n.title for p in seed_files() for n in parse_note_file(p)]
    with FakeSlack(token=TOKEN) as slack:
        env = clean_env(
            PRDIGEST_DATABASE_URL=f"sqlite:///{tmp_path / 'serve.db'}",
            PRDIGEST_DIGESTS_DIR=str(digests),
            PRDIGEST_SLACK_API_URL=slack.api_url,
            PRDIGEST_PORT=str(free_port()),
            PRDIGEST_CHANNEL=CHANNEL,
            PRDIGEST_SCHEDULE="* * * * *",
            PRDIGEST_TIMEZONE="Europe/Berlin",
            PRDIGEST_MISFIRE_GRACE="5m",
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET="s3cret",
        )
        proc = start(tmp_path, env, "serve", "--host", "127.0.0.1")
        try:
            # The slot of the current minute has passed: the start-up catch-up posts it.
            def all_seed_notes_posted() -> bool:
                posted = _titles(slack.messages_in(CHANNEL))
                return all(any(t.replace("&", "&amp;") in p for p in posted) for t in titles)

            _wait(all_seed_notes_posted, 90, proc)
            parents = [m for m in slack.messages_in(CHANNEL) if _is_parent(m)]
            assert len(parents) == 1

            # A new note file arrives; the next minute's cron fire ingests and posts it alone.
            (digests / "late.txt").write_text(
                "vllm-project/vllm\n\n晚到的 EAGLE 推测解码修复\n\n"
                "值得推测解码方向的工程师精读。\n",
                encoding="utf-8",
            )

            def addition_posted() -> bool:
                return any("晚到的 EAGLE" in t for t in _titles(slack.messages_in(CHANNEL)))

            _wait(addition_posted, 130, proc)
            messages = slack.messages_in(CHANNEL)
            parents = [m for m in messages if _is_parent(m)]
            assert len(parents) == 2
            assert "补充" in parents[1]["text"] or "addition" in parents[1]["text"].lower()
            posted = _titles(messages)
            for title in [*titles, "晚到的 EAGLE 推测解码修复"]:
                hits = [p for p in posted if title.replace("&", "&amp;") in p]
                assert len(hits) == 1, f"{title!r} posted {len(hits)} times"
            assert slack.sent_markup_problems() == []
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
