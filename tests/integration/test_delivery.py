"""The weekly digest job against the fake Slack Web API, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from bot.delivery.weekly import (
    EVENT_TYPE,
    DeliveryError,
    Pacing,
    RunResult,
    publish_weekly_digest,
)
from bot.domain import Note
from bot.notes.digest import section_role
from bot.render.blocks import SUBSCRIBE_ACTION_ID
from bot.services import Services, preview_digest
from bot.slack.client import build_web_client
from bot.store.ledger import Ledger, LostClaimError
from bot.store.schema import delivered_messages, digest_runs, dm_deliveries
from tests.support.cli import cli_env
from tests.support.delivery import (
    CHANNEL,
    NOW,
    add_seed_notes,
    channel_messages,
    note_ids,
    publish,
    reader_dm_parts,
    thread_note_ids,
)
from tests.support.fakeslack import FakeSlack, validate_blocks


def write_notes(
    services: Services, name: str, titles: list[str], verdict: str = "值得精读"
) -> None:
    blocks = ["vllm-project/vllm"]
    for title in titles:
        blocks += [title, f"{verdict}，适合做 MoE 量化与 FP8 内核的工程师。"]
    (services.settings.digests_dir / name).write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def part_of(message: dict[str, Any]) -> str:
    return str(message["metadata"]["event_payload"]["part"])


def assert_valid_and_unique(slack: FakeSlack) -> None:
    """Every posted message passes Block Kit checks and no part was posted twice."""
    for calls in (slack.accepted("chat.postMessage"),):
        parts = Counter(
            (
                c.params["metadata"]["event_payload"]["run_id"],
                c.params["metadata"]["event_payload"]["part"],
            )
            for c in calls
        )
        assert all(n == 1 for n in parts.values()), parts
        for call in calls:
            assert validate_blocks(call.params["blocks"]) == []


def test_parent_and_role_threads_hold_every_note_once(posting: Services, slack: FakeSlack) -> None:
    add_seed_notes(posting)
    result = publish(posting)
    assert result.status == "posted" and result.notes == 32 and not result.addition

    messages = channel_messages(slack)
    parent = messages[0]
    assert (part_of(parent) == "parent" and "thread_ts" not in parent) or parent[
        "thread_ts"
    ] == parent["ts"]
    header = parent["blocks"][0]["text"]["text"]
    assert header == "vLLM 精读推荐 · 2026-W48"
    replies = messages[1:]
    assert all(m["thread_ts"] == parent["ts"] for m in replies)
    assert all(m["metadata"]["event_type"] == EVENT_TYPE for m in messages)

    notes = {n.id: n for n in posting.store.list_notes()}
    ids = thread_note_ids(slack)
    assert sorted(ids) == sorted(notes), "every note exactly once"

    summary = parent["blocks"][1]["text"]["text"]
    by_role: dict[str, list[Note]] = {}
    for message in replies:
        role = part_of(message).split(":")[1]
        members = [notes[i] for i in note_ids(message)]
        assert all(section_role(n, posting.taxonomy) == role for n in members)
        by_role.setdefault(role, []).extend(members)
    for role, members in by_role.items():
        ranks = [n.verdict_for(role).rank for n in members]
        assert ranks == sorted(ranks), f"{role}: deep before skim before skip"
        label = posting.taxonomy.get(role).label.replace("&", "&amp;")
        assert f"*{label}*: {len(members)} " in summary
    # The last reply of every role thread carries its subscribe button.
    last: dict[str, dict[str, Any]] = {}
    for message in replies:
        last[part_of(message).split(":")[1]] = message
    for role, message in last.items():
        actions = message["blocks"][-1]
        assert actions["type"] == "actions"
        element = actions["elements"][0]
        assert (element["action_id"], element["value"]) == (SUBSCRIBE_ACTION_ID, role)
    assert_valid_and_unique(slack)
    runs = Ledger(posting.store.engine).runs(CHANNEL)
    assert [r.status for r in runs] == ["done"]


def test_second_run_posts_nothing_and_follow_up_is_an_addition(
    posting: Services, slack: FakeSlack
) -> None:
    add_seed_notes(posting)
    publish(posting)
    posted = slack.count("chat.postMessage")

    again = publish(posting, NOW + timedelta(hours=1))
    assert again.status == "nothing_new"
    assert slack.count("chat.postMessage") == posted

    write_notes(
        posting, "late.txt", ["新增 FP8 MoE 内核 A (#90001)", "新增 FP8 MoE 内核 B (#90002)"]
    )
    follow = publish(posting, NOW + timedelta(days=2))
    assert follow.status == "posted" and follow.addition and follow.notes == 2
    new = channel_messages(slack)[posted:]
    assert "补充 / addition" in new[0]["blocks"][0]["text"]["text"]
    titles = {n.id: n.title for n in posting.store.list_notes()}
    assert sorted(titles[i] for m in new for i in note_ids(m)) == [
        "新增 FP8 MoE 内核 A",
        "新增 FP8 MoE 内核 B",
    ]
    assert_valid_and_unique(slack)

    # The next week is a regular digest again.
    write_notes(posting, "next.txt", ["下周的 FP8 MoE 内核 (#90003)"])
    publish(posting, NOW + timedelta(days=7))
    assert channel_messages(slack)[-2]["blocks"][0]["text"]["text"] == "vLLM 精读推荐 · 2026-W49"


def test_dms_carry_only_subscribed_roles_and_never_repeat(
    posting: Services, slack: FakeSlack
) -> None:
    add_seed_notes(posting)
    # Which notes, not how many: every note in full (the budget has tests of its own).
    posting.settings = posting.settings.model_copy(update={"dm_budget": 0})
    posting.store.subscribe("T1", "U1", ["moe-quant"])
    posting.store.subscribe("T1", "U2", ["kernels", "kv-cache"])
    publish(posting)
    notes = {n.id: n for n in posting.store.list_notes()}
    for user, roles in (("U1", {"moe-quant"}), ("U2", {"kernels", "kv-cache"})):
        dms = slack.messages_in(FakeSlack.dm_channel(user))
        assert dms, user
        ids = [i for m in dms for i in note_ids(m)]
        assert len(ids) == len(set(ids))
        expected = {i for i, n in notes.items() if roles & set(n.roles)}
        assert set(ids) == expected
        assert all("slack.com/archives/" in str(m["blocks"]) for m in dms), "links the thread"
    dm_calls = [
        c for c in slack.accepted("chat.postMessage") if c.params["channel"].startswith("U")
    ]
    assert {c.params["channel"] for c in dm_calls} == {"U1", "U2"}

    before = slack.count("chat.postMessage")
    publish(posting, NOW + timedelta(hours=2))
    assert slack.count("chat.postMessage") == before

    write_notes(posting, "late.txt", ["新增 FP8 MoE 量化内核 (#90010)"])
    publish(posting, NOW + timedelta(days=1))
    late = next(n for n in posting.store.list_notes() if n.pr == 90010)
    u1 = slack.messages_in(FakeSlack.dm_channel("U1"))
    assert note_ids(u1[-1]) == [late.id]
    assert_valid_and_unique(slack)


def test_rate_limited_posts_are_retried_without_duplicates(
    posting: Services, slack: FakeSlack
) -> None:
    add_seed_notes(posting)
    posting.store.subscribe("T1", "U1", ["moe-quant"])
    slack.rate_limit("chat.postMessage", times=2, retry_after=1)
    result = publish(posting)
    assert result.status == "posted"
    statuses = [c.status for c in slack.calls_for("chat.postMessage")]
    assert statuses.count(429) == 2
    ledger = Ledger(posting.store.engine)
    parts = ledger.parts(result.runs[0]) + reader_dm_parts(ledger)
    assert {p.channel for p in parts if p.kind == "dm"} == {"U1"}
    assert all(p.ts for p in parts)
    assert len(slack.accepted("chat.postMessage")) == len(parts)
    assert_valid_and_unique(slack)


def test_dms_are_paced(posting: Services, slack: FakeSlack) -> None:
    write_notes(posting, "a.txt", ["FP8 MoE 内核 (#91000)"])
    for n in range(6):
        posting.store.subscribe("T1", f"U{n}", ["moe-quant"])
    started = datetime.now(UTC)
    publish(posting, pacing=Pacing(channel_per_second=0, dm_per_second=20))
    dm_times = [
        c.at for c in slack.accepted("chat.postMessage") if c.params["channel"].startswith("U")
    ]
    assert len(dm_times) == 6
    # Paced at 20/s: about 0.25 s from first to last; unpaced they would be milliseconds apart.
    assert dm_times[-1] - dm_times[0] >= 5 / 20 * 0.6
    assert datetime.now(UTC) - started < timedelta(seconds=10)


@pytest.mark.slow  # about 7 s a database: the whole week through Slack's wire
def test_a_300_note_week_is_split_within_block_kit_limits(
    posting: Services, slack: FakeSlack
) -> None:
    titles = [f"MoE 量化内核改进第 {i} 号 (#{100000 + i})" for i in range(300)]
    write_notes(posting, "big.txt", titles)
    posting.store.subscribe("T1", "U1", ["moe-quant"])
    posting.store.readers.update_settings("T1", "U1", budget=0)  # `budget all`: a 300-note DM
    result = publish(posting)
    assert result.notes == 300
    ids = thread_note_ids(slack)
    assert len(ids) == 300 and len(set(ids)) == 300
    assert len(channel_messages(slack)) > 3, "split over several replies"
    dm_ids = [i for m in slack.messages_in(FakeSlack.dm_channel("U1")) for i in note_ids(m)]
    assert sorted(dm_ids) == sorted(ids)
    assert_valid_and_unique(slack)


def test_empty_week_posts_nothing_unless_asked(posting: Services, slack: FakeSlack) -> None:
    assert publish(posting).status == "nothing_new"
    assert slack.count("chat.postMessage") == 0
    posting.settings = posting.settings.model_copy(update={"post_empty": True})
    assert publish(posting).status == "posted"
    assert slack.count("chat.postMessage") == 1
    assert "No new notes" in str(channel_messages(slack)[0]["blocks"])
    assert publish(posting).status == "nothing_new", "an empty week is posted once"


def test_a_bad_note_file_does_not_block_the_digest(posting: Services, slack: FakeSlack) -> None:
    write_notes(posting, "good.txt", ["FP8 MoE 内核 (#92000)"])
    (posting.settings.digests_dir / "bad.txt").write_bytes(b"\x00\x01\x02binary")
    result = publish(posting)
    assert result.status == "posted" and result.notes == 1 and result.ingest_errors


@pytest.mark.parametrize(
    ("setup", "cause"),
    [
        (lambda s: s.channels_not_joined.add(CHANNEL), "invite the bot"),
        (lambda s: s.unknown_channels.add(CHANNEL), "not found"),
        (lambda s: s.fail("chat.postMessage", "invalid_auth"), "SLACK_BOT_TOKEN"),
        (lambda s: s.fail("chat.postMessage", "msg_blocks_too_long"), "too long"),
    ],
)
def test_slack_errors_leave_the_run_unfinished_and_a_later_run_completes_it(
    posting: Services, slack: FakeSlack, setup: Any, cause: str, caplog: pytest.LogCaptureFixture
) -> None:
    add_seed_notes(posting)
    setup(slack)
    with pytest.raises(DeliveryError, match=cause):
        publish(posting)
    assert cause in caplog.text
    ledger = Ledger(posting.store.engine)
    [run] = ledger.runs(CHANNEL)
    assert run.status == "open" and run.claimed_by is None
    assert not any(p.ts for p in ledger.parts(run.id)), "nothing marked sent that was not"

    slack.channels_not_joined.clear()
    slack.unknown_channels.clear()
    slack.clear_faults()
    result = publish(posting, NOW + timedelta(minutes=5))
    assert result.status == "posted" and result.runs == [run.id]
    assert sorted(thread_note_ids(slack)) == sorted(n.id for n in posting.store.list_notes())
    assert [r.status for r in ledger.runs(CHANNEL)] == ["done"]
    assert_valid_and_unique(slack)


def test_error_mid_run_resumes_from_the_missing_part(posting: Services, slack: FakeSlack) -> None:
    add_seed_notes(posting)
    original = FakeSlack._chat_post_message
    seen = {"n": 0}

    def third_fails(fake: FakeSlack, params: dict[str, Any]) -> dict[str, Any]:
        seen["n"] += 1
        if seen["n"] == 3:
            return {"ok": False, "error": "not_in_channel"}
        return original(fake, params)

    slack.register("chat.postMessage", third_fails)
    with pytest.raises(DeliveryError):
        publish(posting)
    assert len(channel_messages(slack)) == 2
    slack.register("chat.postMessage", original)
    publish(posting)
    parts = Counter(part_of(m) for m in channel_messages(slack))
    assert all(n == 1 for n in parts.values())
    assert sorted(thread_note_ids(slack)) == sorted(n.id for n in posting.store.list_notes())


def test_a_message_slack_has_but_the_ledger_missed_is_not_posted_again(
    posting: Services, slack: FakeSlack
) -> None:
    """Slack keeps the third message but its answer never arrives (the process died, or the
    connection dropped): the ledger has no ts for it, and the rerun finds it via metadata."""
    add_seed_notes(posting)
    original = FakeSlack._chat_post_message
    seen = {"n": 0}

    def third_kept_answer_lost(fake: FakeSlack, params: dict[str, Any]) -> dict[str, Any]:
        seen["n"] += 1
        reply = original(fake, params)
        return {"ok": False, "error": "request_timeout"} if seen["n"] == 3 else reply

    slack.register("chat.postMessage", third_kept_answer_lost)
    with pytest.raises(DeliveryError):
        publish(posting)
    slack.register("chat.postMessage", original)
    assert len(channel_messages(slack)) == 3
    # The claimant "died" long ago: its heartbeat is stale.
    with posting.store.engine.begin() as conn:
        conn.execute(
            digest_runs.update().values(
                heartbeat=datetime.now(UTC) - timedelta(hours=1), claimed_by="elsewhere:1:x"
            )
        )
    result = publish(posting, NOW + timedelta(minutes=10))
    assert result.found == 1
    parts = Counter(part_of(m) for m in channel_messages(slack))
    assert all(n == 1 for n in parts.values()), parts
    assert sorted(thread_note_ids(slack)) == sorted(n.id for n in posting.store.list_notes())
    assert slack.count("conversations.history") >= 1
    assert all(
        c.params.get("include_all_metadata") for c in slack.calls_for("conversations.history")
    )


def test_a_message_slack_kept_before_a_server_error_is_posted_once(
    posting: Services, slack: FakeSlack
) -> None:
    """Slack keeps the parent and answers HTTP 500. Retrying the call would post it twice; the
    run stops instead, and the next one finds the parent in Slack and posts the rest."""
    add_seed_notes(posting)
    slack.server_error("chat.postMessage", times=1, status=500, handled=True)
    with pytest.raises(DeliveryError):
        publish(posting)
    assert slack.count("chat.postMessage") == 1 and len(channel_messages(slack)) == 1
    result = publish(posting, NOW + timedelta(minutes=5))
    assert result.status == "posted" and result.found == 1
    parts = Counter(part_of(m) for m in channel_messages(slack))
    assert parts["parent"] == 1 and all(n == 1 for n in parts.values()), parts
    assert sorted(thread_note_ids(slack)) == sorted(n.id for n in posting.store.list_notes())


def test_a_live_claim_is_not_taken_over(posting: Services, slack: FakeSlack) -> None:
    add_seed_notes(posting)
    slack.channels_not_joined.add(CHANNEL)
    with pytest.raises(DeliveryError):
        publish(posting)
    with posting.store.engine.begin() as conn:
        conn.execute(
            digest_runs.update().values(heartbeat=datetime.now(UTC), claimed_by="otherhost:1:x")
        )
    slack.channels_not_joined.clear()
    result = publish(posting)
    assert result.status == "busy" and "another process" in result.message
    assert slack.count("chat.postMessage") == 1  # the refused first attempt only


def test_concurrent_runs_make_one_digest(posting: Services, slack: FakeSlack) -> None:
    add_seed_notes(posting)
    posting.store.subscribe("T1", "U1", ["moe-quant"])
    results: list[RunResult] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(3)

    def run() -> None:
        try:
            barrier.wait()
            results.append(publish(posting, pacing=Pacing(channel_per_second=50, dm_per_second=50)))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    statuses = sorted(r.status for r in results)
    assert statuses.count("posted") == 1, statuses
    assert set(statuses) <= {"posted", "busy", "nothing_new"}
    parents = [m for m in channel_messages(slack) if part_of(m) == "parent"]
    assert len(parents) == 1
    assert sorted(thread_note_ids(slack)) == sorted(n.id for n in posting.store.list_notes())
    assert_valid_and_unique(slack)


def test_dry_run_posts_nothing_and_changes_nothing(posting: Services, slack: FakeSlack) -> None:
    write_notes(posting, "a.txt", ["FP8 MoE 内核 (#93000)"])
    publish(posting)
    write_notes(posting, "b.txt", ["另一个 FP8 MoE 内核 (#93001)"])
    from bot.services import ingest_default

    ingest_default(posting, NOW)
    posting.store.subscribe("T1", "U1", ["moe-quant"])

    def snapshot() -> list[Any]:
        with posting.store.engine.connect() as conn:
            return [
                conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
                for t in (digest_runs, delivered_messages)
            ]

    before, calls = snapshot(), len(slack.calls)
    result = publish_weekly_digest(posting, None, NOW, dry_run=True)
    assert result.status == "dry_run" and result.addition and result.notes == 1
    assert [m.part for m in result.preview][:2] == ["parent", "role:moe-quant:1"]
    assert any(m.channel == "U1" for m in result.preview)
    assert snapshot() == before and len(slack.calls) == calls


def test_preview_without_week_shows_the_unposted_selection(
    posting: Services, slack: FakeSlack
) -> None:
    write_notes(posting, "a.txt", ["FP8 MoE 内核 (#94000)"])
    publish(posting)
    write_notes(posting, "b.txt", ["另一个 FP8 MoE 内核 (#94001)"])
    from bot.services import ingest_default

    ingest_default(posting, NOW + timedelta(hours=1))
    now = preview_digest(posting, None, NOW + timedelta(hours=2))
    assert [n.pr for n in now.notes] == [94001] and now.addition
    week = preview_digest(posting, "2026-W48", NOW)
    assert sorted(n.pr or 0 for n in week.notes) == [94000, 94001]


def test_channel_is_required(services: Services) -> None:
    with pytest.raises(DeliveryError, match="PRDIGEST_CHANNEL"):
        publish_weekly_digest(services, None, NOW)


def test_post_command_exit_codes(
    posting: Services, slack: FakeSlack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from bot.cli.app import app

    runner = CliRunner()
    write_notes(posting, "a.txt", ["FP8 MoE 内核 (#95000)"])
    cli_env(monkeypatch, posting, token=False)
    dry = runner.invoke(app, ["post", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert slack.count("chat.postMessage") == 0
    cli_env(monkeypatch, posting)
    slack.channels_not_joined.add(CHANNEL)
    failed = runner.invoke(app, ["post", "--channel-rate", "0"])
    assert failed.exit_code == 1 and "invite the bot" in failed.output
    slack.channels_not_joined.clear()
    done = runner.invoke(app, ["post", "--channel-rate", "0"])
    assert done.exit_code == 0 and "posted" in done.output
    again = runner.invoke(app, ["post"])
    assert again.exit_code == 0 and "nothing new" in again.output
    assert len([m for m in channel_messages(slack) if part_of(m) == "parent"]) == 1


def test_a_run_taken_over_mid_way_posts_nothing_more(posting: Services, slack: FakeSlack) -> None:
    add_seed_notes(posting)

    def take_over() -> None:
        # Once the first message is recorded as sent, another replica takes the run over.
        recorded = sa.select(sa.func.count()).where(delivered_messages.c.ts.is_not(None))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with posting.store.engine.begin() as conn:
                if conn.execute(recorded).scalar_one():
                    conn.execute(digest_runs.update().values(claimed_by="another-replica"))
                    return
            time.sleep(0.01)

    thief = threading.Thread(target=take_over)
    thief.start()
    with pytest.raises(LostClaimError):
        publish(posting, pacing=Pacing(channel_per_second=2, dm_per_second=0))
    thief.join()
    assert slack.count("chat.postMessage") == 1, "stopped before its next message"


def test_pacing_comes_from_settings_when_not_given(posting: Services, slack: FakeSlack) -> None:
    write_notes(posting, "a.txt", ["FP8 MoE 内核 (#91001)"])
    for n in range(4):
        posting.store.subscribe("T1", f"U{n}", ["moe-quant"])
    posting.settings = posting.settings.model_copy(update={"channel_rate": 0, "dm_rate": 10})
    publish_weekly_digest(posting, build_web_client(posting.settings), NOW)
    dm_times = [
        c.at for c in slack.accepted("chat.postMessage") if c.params["channel"].startswith("U")
    ]
    assert len(dm_times) == 4
    # Paced at 10/s: about 0.3 s from first to last; unpaced they would be milliseconds apart.
    assert dm_times[-1] - dm_times[0] >= 3 / 10 * 0.6


def test_a_run_holding_dms_planned_inside_it_is_finished_with_them(
    posting: Services, slack: FakeSlack
) -> None:
    """A run left unfinished before readers had their own DM times held its DMs among its
    messages: resumed, it sends them, and the readers' DMs do not repeat their notes."""
    write_notes(posting, "a.txt", ["FP8 MoE 内核 (#96000)"])
    posting.store.subscribe("T1", "U1", ["moe-quant"])
    slack.channels_not_joined.add(CHANNEL)
    with pytest.raises(DeliveryError):
        publish(posting)
    ledger = Ledger(posting.store.engine)
    [run] = ledger.runs(CHANNEL)
    [note] = posting.store.list_notes()
    payload = {"text": "vLLM 精读推荐: 1 notes for you", "blocks": [{"type": "divider"}]}
    payload["blocks"].append(
        {"type": "section", "block_id": f"note-{note.id}", "text": {"type": "mrkdwn", "text": "x"}}
    )
    with posting.store.engine.begin() as conn:
        conn.execute(
            delivered_messages.insert().values(
                run_id=run.id, part="dm:T1:U1:1", seq=99, kind="dm", channel="U1", payload=payload
            )
        )
        conn.execute(
            dm_deliveries.insert().values(
                team_id="T1", user_id="U1", note_id=note.id, run_id=run.id, part="dm:T1:U1:1"
            )
        )
        conn.execute(digest_runs.update().values(dm_planned=True))
    slack.channels_not_joined.clear()
    result = publish(posting)
    assert result.status == "posted" and result.runs == [run.id]
    [dm] = slack.messages_in(FakeSlack.dm_channel("U1"))
    assert part_of(dm) == "dm:T1:U1:1" and note_ids(dm) == [note.id]
    assert all(p.ts for p in ledger.parts(run.id))
    assert [d.status for d in ledger.reader_dms("T1", "U1")] == ["empty"], "not sent twice"
