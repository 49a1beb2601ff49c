"""The channel poster against the fake Slack Web API, with a hand-set clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.delivery.posting import EVENT_TYPE, ChannelPoster, DeliveryError
from bot.store.ledger import Part
from tests.support.fakeslack import FakeSlack
from tests.support.sending import ManualClock, bot_client, make_part
from tests.support.testenv import DIGEST_CHANNEL


def part(name: str, kind: str, ts: str | None = None) -> Part:
    return make_part(name, kind, DIGEST_CHANNEL, ts)


PARTS = [part("parent", "parent"), part("role:a:1", "thread"), part("role:b:1", "thread")]


class Recorder:
    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self.sent: list[tuple[str, str, str | None, float]] = []

    def __call__(self, p: Part, ts: str, thread_ts: str | None, channel: str) -> None:
        assert channel == DIGEST_CHANNEL
        self.sent.append((p.part, ts, thread_ts, self.clock.now()))


def poster_for(
    slack: FakeSlack, tmp_path: Path, clock: ManualClock, record: Recorder
) -> ChannelPoster:
    client = bot_client(slack, tmp_path)
    return ChannelPoster(client, "run-1", per_second=1.0, clock=clock, on_sent=record)


def test_posts_in_order_one_per_second_replies_in_the_parents_thread(
    slack: FakeSlack, tmp_path: Path
) -> None:
    clock = ManualClock()
    record = Recorder(clock)
    poster = poster_for(slack, tmp_path, clock, record)
    start = clock.now()
    poster.post_all(PARTS, None)
    assert [s[0] for s in record.sent] == ["parent", "role:a:1", "role:b:1"]
    parent_ts = record.sent[0][1]
    assert [s[2] for s in record.sent] == [None, parent_ts, parent_ts]
    assert [s[3] - start for s in record.sent] == pytest.approx([0.0, 1.0, 2.0])
    posted = slack.messages_in(DIGEST_CHANNEL)
    assert [m["metadata"]["event_payload"]["part"] for m in posted] == [s[0] for s in record.sent]
    assert all(m["metadata"]["event_type"] == EVENT_TYPE for m in posted)
    assert poster.posted == 3


def test_settled_parts_are_skipped_and_replies_use_the_known_parent(
    slack: FakeSlack, tmp_path: Path
) -> None:
    clock = ManualClock()
    record = Recorder(clock)
    poster = poster_for(slack, tmp_path, clock, record)
    parts = [part("parent", "parent", ts="1.000100"), *PARTS[1:]]
    poster.post_all(parts, "1.000100")
    assert [(s[0], s[2]) for s in record.sent] == [
        ("role:a:1", "1.000100"),
        ("role:b:1", "1.000100"),
    ]


def test_a_429_waits_its_retry_after_then_posts_the_message_once(
    slack: FakeSlack, tmp_path: Path
) -> None:
    clock = ManualClock()
    record = Recorder(clock)
    poster = poster_for(slack, tmp_path, clock, record)
    slack.rate_limit("chat.postMessage", times=2, retry_after=3)
    start = clock.now()
    poster.post_all(PARTS[:2], None)
    statuses = [c.status for c in slack.calls_for("chat.postMessage")]
    assert statuses == [429, 429, 200, 200]
    assert [s[0] for s in record.sent] == ["parent", "role:a:1"]
    assert record.sent[0][3] - start == pytest.approx(6.0), "two Retry-After waits"
    assert record.sent[1][3] - record.sent[0][3] == pytest.approx(1.0)
    assert poster.limited == 2


def test_endless_429s_give_up_with_a_clear_line_and_nothing_recorded(
    slack: FakeSlack, tmp_path: Path
) -> None:
    clock = ManualClock()
    record = Recorder(clock)
    poster = poster_for(slack, tmp_path, clock, record)
    slack.rate_limit("chat.postMessage", times=50, retry_after=1)
    with pytest.raises(DeliveryError, match="kept rate-limiting"):
        poster.post_all(PARTS, None)
    assert record.sent == []
    assert slack.count("chat.postMessage") == poster.max_attempts


def test_before_send_runs_before_every_attempt_and_can_stop_the_poster(
    slack: FakeSlack, tmp_path: Path
) -> None:
    clock = ManualClock()
    record = Recorder(clock)
    checks: list[int] = []

    def still_ours() -> None:
        checks.append(len(record.sent))
        if len(record.sent) == 1:
            raise RuntimeError("taken over")

    client = bot_client(slack, tmp_path)
    poster = ChannelPoster(client, "run-1", clock=clock, before_send=still_ours, on_sent=record)
    with pytest.raises(RuntimeError):
        poster.post_all(PARTS, None)
    assert checks == [0, 1]
    assert slack.count("chat.postMessage") == 1
