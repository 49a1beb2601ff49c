"""`prdigest post` killed (SIGKILL) right after Slack accepted a message, then run again.

The worst moment to die: Slack has the message, the ledger has not recorded its ts yet.
The rerun takes the dead process's run over, finds the message through its metadata, and
posts only the parts still missing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.store import Store
from bot.store.ledger import Ledger
from tests.support.delivery import reader_dm_parts
from tests.support.fakeslack import Call, FakeSlack
from tests.support.notefiles import write_team_notes

CHANNEL = "C0DIGEST"
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

Predicate = Callable[[int, dict[str, Any]], bool]


def post_env(db_url: str, digests: Path, slack: FakeSlack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))}
    env.update(
        PRDIGEST_DATABASE_URL=db_url,
        PRDIGEST_DIGESTS_DIR=str(digests),
        PRDIGEST_CHANNEL=CHANNEL,
        PRDIGEST_SLACK_API_URL=slack.api_url,
        SLACK_BOT_TOKEN="xoxb-test",
        PYTHONPATH=str(ROOT),
    )
    return env


def run_post(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "post", "--channel-rate", "0", "--dm-rate", "0"],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def hang_after_accepting(
    slack: FakeSlack, when: Predicate
) -> tuple[threading.Event, threading.Event]:
    """Store the matching message, then hold the answer until the test lets go."""
    original = FakeSlack._chat_post_message
    accepted, release = threading.Event(), threading.Event()
    seen = {"n": 0}

    def handler(fake: FakeSlack, params: dict[str, Any]) -> dict[str, Any]:
        seen["n"] += 1
        reply = original(fake, params)
        if not accepted.is_set() and when(seen["n"], params):
            accepted.set()
            release.wait(30)
        return reply

    slack.register("chat.postMessage", handler)
    return accepted, release


def post_killed_while_held(
    slack: FakeSlack, when: Predicate, env: dict[str, str], cwd: Path
) -> subprocess.Popen[str]:
    """Run `prdigest post`, SIGKILL it while Slack holds the chosen message, then let go."""
    accepted, release = hang_after_accepting(slack, when)
    first = run_post(env, cwd)
    try:
        assert accepted.wait(60), "the run never reached the chosen message"
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        release.set()
        if first.poll() is None:
            first.kill()
            first.wait()
    return first


def all_parts(slack: FakeSlack) -> Counter[str]:
    calls = slack.accepted("chat.postMessage")
    return Counter(str(c.params["metadata"]["event_payload"]["part"]) for c in calls)


def dm_calls(slack: FakeSlack) -> list[Call]:
    return [c for c in slack.calls_for("chat.postMessage") if str(c.params["channel"])[:1] == "U"]


def _nth(n: int) -> Predicate:
    return lambda count, _params: count == n


def _first_dm(_count: int, params: dict[str, Any]) -> bool:
    return str(params.get("channel", "")).startswith("U")


@pytest.mark.parametrize(
    "when", [_nth(1), _nth(4), _first_dm], ids=["after-parent", "mid-threads", "first-dm"]
)
def test_killed_between_messages_then_rerun_posts_each_part_once(
    db_url: str, tmp_path: Path, slack: FakeSlack, when: Predicate
) -> None:
    digests = tmp_path / "digests"
    digests.mkdir(exist_ok=True)
    write_team_notes(digests)
    store = Store.open(db_url)
    store.subscribe("T1", "U1", ["moe-quant", "kernels"])
    store.subscribe("T1", "U2", ["multimodal"])
    env = post_env(db_url, digests, slack)
    # One DM sender: a held DM keeps the later ones unsent, so the rerun has parts to post.
    env["PRDIGEST_DM_CONCURRENCY"] = "1"

    first = post_killed_while_held(slack, when, env, tmp_path)
    assert first.returncode == -signal.SIGKILL
    before = sum(all_parts(slack).values())

    slack.register("chat.postMessage", FakeSlack._chat_post_message)
    second = run_post(env, tmp_path)
    out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    parts = all_parts(slack)
    assert all(n == 1 for n in parts.values()), f"duplicates: {parts}"
    assert sum(parts.values()) > before

    ledger = Ledger(store.engine)
    [run] = ledger.runs(CHANNEL)
    dms = ledger.reader_dms()
    # Every DM finished; the rerun's own moment had nothing new for anyone.
    assert run.status == "done" and all(d.status in ("done", "empty") for d in dms)
    # The run killed was taken over: the channel digest's, or (killed at a DM) a reader's.
    killed_at_a_dm = when is _first_dm
    assert run.attempts == (1 if killed_at_a_dm else 2)
    assert any(d.attempts == 2 for d in dms) == killed_at_a_dm
    planned = ledger.parts(run.id) + reader_dm_parts(ledger)
    assert {p.part for p in planned} == set(parts), "every planned part posted, once"
    assert all(p.ts for p in planned)
    replies = [m for m in slack.messages_in(CHANNEL) if m.get("thread_ts") not in (None, m["ts"])]
    ids = [
        int(b["block_id"].removeprefix("note-"))
        for m in replies
        for b in m["blocks"]
        if str(b.get("block_id", "")).startswith("note-")
    ]
    assert sorted(ids) == sorted(n.id for n in store.list_notes())

    third = run_post(env, tmp_path)
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0 and "nothing new" in out
    assert all_parts(slack) == parts
    store.close()


def test_killed_mid_fan_out_then_rerun_sends_each_dm_once(
    db_url: str, tmp_path: Path, slack: FakeSlack
) -> None:
    """Several senders in flight when the process dies: Slack has DMs the ledger has not.

    The sixth DM is held after Slack stored it; the other senders' requests wait behind it
    and are stored once it is let go, after the process died: all of them unrecorded.
    """
    digests = tmp_path / "digests"
    digests.mkdir(exist_ok=True)
    write_team_notes(digests)
    store = Store.open(db_url)
    users = [f"U{n:02}" for n in range(16)]
    for user in users:
        store.subscribe("T1", user, ["moe-quant", "kernels"])
    env = post_env(db_url, digests, slack)
    slack.set_latency("chat.postMessage", 0.05)
    dms = {"n": 0}

    def sixth_dm(_count: int, params: dict[str, Any]) -> bool:
        if str(params.get("channel", "")).startswith("U"):
            dms["n"] += 1
        return dms["n"] == 6

    post_killed_while_held(slack, sixth_dm, env, tmp_path)
    # The held DM and the requests queued behind it are recorded once the fake answers them.
    deadline = time.monotonic() + 10
    while len(dm_calls(slack)) < dms["n"] and time.monotonic() < deadline:
        time.sleep(0.02)
    unrecorded = {p.part for p in reader_dm_parts(Ledger(store.engine)) if not p.ts}
    assert set(all_parts(slack)) & unrecorded, "Slack has a DM the ledger has not recorded"

    slack.register("chat.postMessage", FakeSlack._chat_post_message)
    second = run_post(env, tmp_path)
    _out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    parts = all_parts(slack)
    assert all(n == 1 for n in parts.values()), f"duplicates: {parts}"
    ledger = Ledger(store.engine)
    [run] = ledger.runs(CHANNEL)
    planned = ledger.parts(run.id) + reader_dm_parts(ledger)
    assert {p.part for p in planned} == set(parts) and all(p.ts for p in planned)
    assert {p.channel for p in planned if p.kind == "dm"} == set(users)
    store.close()
