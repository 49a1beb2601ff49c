"""The DM fan-out against the fake Slack Web API: concurrent senders, one shared rate."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from pathlib import Path

import pytest

from bot.delivery.dm_fanout import DmFanout
from bot.delivery.pacing import RateController
from bot.delivery.posting import DeliveryError
from bot.store.ledger import Part
from tests.support.fakeslack import FakeSlack
from tests.support.sending import bot_client, make_part


class Recorded:
    """What the fan-out reported, as the ledger would store it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sent: list[tuple[str, str]] = []  # part, sender thread
        self.gone: list[tuple[str, str]] = []

    def on_sent(self, part: Part, ts: str, channel: str) -> None:
        assert ts and channel == FakeSlack.dm_channel(part.channel)
        with self.lock:
            self.sent.append((part.part, threading.current_thread().name))

    def on_undeliverable(self, part: Part, error: str) -> None:
        with self.lock:
            self.gone.append((part.part, error))

    def parts(self) -> list[str]:
        return sorted(p for p, _t in self.sent)


def dm_parts(users: int, extra: dict[int, int] | None = None) -> list[Part]:
    """One DM per user, plus `extra[n]` more messages for user n."""
    parts = []
    for n in range(users):
        for index in range(1 + (extra or {}).get(n, 0)):
            parts.append(make_part(f"dm:T1:U{n:03}:{index + 1}", "dm", f"U{n:03}"))
    return parts


def fanout_for(
    slack: FakeSlack,
    tmp_path: Path,
    recorded: Recorded,
    controller: RateController,
    per_channel: float = 1.0,
) -> DmFanout:
    return DmFanout(
        bot_client(slack, tmp_path),
        "run-1",
        controller,
        concurrency=4,
        per_channel=per_channel,
        on_sent=recorded.on_sent,
        on_undeliverable=recorded.on_undeliverable,
    )


def accepted_parts(slack: FakeSlack) -> Counter[str]:
    return Counter(
        str(c.params["metadata"]["event_payload"]["part"])
        for c in slack.accepted("chat.postMessage")
    )


def test_every_dm_once_from_several_senders_each_users_messages_in_order(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.set_latency("chat.postMessage", 0.25)
    parts = dm_parts(24, extra={3: 2, 7: 1})
    recorded = Recorded()
    fanout = fanout_for(slack, tmp_path, recorded, RateController(0), per_channel=10)
    fanout.send_all(parts)

    sent = accepted_parts(slack)
    assert sent == Counter(p.part for p in parts), "every DM exactly once"
    assert recorded.parts() == sorted(sent), "each recorded once"
    assert fanout.sent == len(parts)
    assert len({t for _p, t in recorded.sent}) == 4, "four senders shared the work"
    arrivals = sorted(c.at for c in slack.calls_for("chat.postMessage"))
    assert arrivals[3] - arrivals[0] < 0.2, "the first four were in flight together"
    for user in ("U003", "U007"):
        mine = [c for c in slack.calls_for("chat.postMessage") if c.params["channel"] == user]
        names = [c.params["metadata"]["event_payload"]["part"] for c in mine]
        assert names == sorted(names), "a user's messages arrive in order"
        gaps = [b.at - a.at for a, b in itertools.pairwise(mine)]
        assert all(g >= 0.09 for g in gaps), "and spaced like posts to one channel"


def test_a_429_pauses_all_senders_until_retry_after_and_loses_nothing(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.set_latency("chat.postMessage", 0.1)
    slack.rate_limit("chat.postMessage", times=3, retry_after=1)
    parts = dm_parts(12)
    recorded = Recorded()
    controller = RateController(0)
    fanout = fanout_for(slack, tmp_path, recorded, controller)
    fanout.send_all(parts)

    assert accepted_parts(slack) == Counter(p.part for p in parts)
    assert recorded.parts() == sorted(p.part for p in parts)
    assert fanout.limited == 3 and controller.limited == 3
    calls = sorted(slack.calls_for("chat.postMessage"), key=lambda c: c.at)
    first_429 = next(c.at for c in calls if c.status == 429)
    after = [c.at - first_429 for c in calls]
    # Requests already on their way when the 429 came back arrive within the latency.
    assert not [t for t in after if 0.4 <= t < 0.95], "nobody sent before Retry-After passed"
    assert [t for t in after if t >= 0.95], "sending went on after the pause"


def test_a_gone_user_is_settled_and_the_rest_are_sent(slack: FakeSlack, tmp_path: Path) -> None:
    slack.unknown_channels.add("U002")
    parts = dm_parts(5)
    recorded = Recorded()
    fanout_for(slack, tmp_path, recorded, RateController(0)).send_all(parts)
    assert recorded.gone == [("dm:T1:U002:1", "channel_not_found")]
    assert recorded.parts() == [p.part for p in parts if p.channel != "U002"]


def test_a_refusal_stops_every_sender_and_each_accepted_dm_is_recorded(
    slack: FakeSlack, tmp_path: Path
) -> None:
    slack.set_latency("chat.postMessage", 0.05)
    slack.fail("chat.postMessage", "invalid_auth", times=1)
    parts = dm_parts(40)
    recorded = Recorded()
    with pytest.raises(DeliveryError, match="SLACK_BOT_TOKEN"):
        fanout_for(slack, tmp_path, recorded, RateController(0)).send_all(parts)
    sent = accepted_parts(slack)
    assert len(sent) < len(parts) // 2, "the others stopped after their message in flight"
    assert recorded.parts() == sorted(sent), "nothing accepted goes unrecorded"


def test_settled_parts_and_channel_parts_are_not_sent(slack: FakeSlack, tmp_path: Path) -> None:
    parts = [
        make_part("dm:T1:U1:1", "dm", "U1", ts="1.000001"),
        make_part("parent", "parent", "C1"),
        make_part("dm:T1:U2:1", "dm", "U2"),
    ]
    recorded = Recorded()
    fanout_for(slack, tmp_path, recorded, RateController(0)).send_all(parts)
    assert accepted_parts(slack) == Counter({"dm:T1:U2:1": 1})


@pytest.mark.parametrize("status", [500, 503])
def test_a_dm_slack_kept_before_a_server_error_is_not_sent_again(
    slack: FakeSlack, tmp_path: Path, status: int
) -> None:
    """Slack keeps the message and answers 5xx: the bot's client would retry such a call, the
    fan-out's does not, so the DM is in Slack once and the error stops the run (to be resumed,
    which looks for it in Slack first)."""
    slack.server_error("chat.postMessage", times=1, status=status, handled=True)
    recorded = Recorded()
    with pytest.raises(DeliveryError):
        fanout_for(slack, tmp_path, recorded, RateController(0)).send_all(dm_parts(1))
    assert slack.count("chat.postMessage") == 1
    assert len(slack.messages_in(FakeSlack.dm_channel("U000"))) == 1
    assert recorded.parts() == []
