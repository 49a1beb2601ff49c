"""The rate controller and the per-channel pacer, driven by a hand-set clock."""

from __future__ import annotations

import itertools

import pytest

from bot.delivery.pacing import ChannelPacer, RateController
from tests.support.sending import ManualClock


def accept_for(controller: RateController, clock: ManualClock, seconds: float) -> list[float]:
    """Slack accepts every send for `seconds` of clock time; when each went out."""
    end = clock.now() + seconds
    sent: list[float] = []
    while True:
        ticket = controller.acquire()
        if ticket.at >= end:
            return sent
        controller.accepted(ticket)
        sent.append(ticket.at)


def send_for(controller: RateController, clock: ManualClock, seconds: float) -> int:
    return len(accept_for(controller, clock, seconds))


def test_slots_are_spaced_by_the_starting_rate() -> None:
    clock = ManualClock()
    controller = RateController(4, 100, clock=clock)
    tickets = [controller.reserve() for _ in range(4)]
    gaps = [b.at - a.at for a, b in itertools.pairwise(tickets)]
    assert gaps == pytest.approx([0.25, 0.25, 0.25])


def test_rate_doubles_each_second_while_slack_accepts_up_to_the_maximum() -> None:
    clock = ManualClock()
    controller = RateController(5, 40, clock=clock)
    sent = send_for(controller, clock, 1.0)
    assert 5 <= sent <= 8
    assert controller.rate == pytest.approx(5 + sent)
    send_for(controller, clock, 3.0)
    assert controller.rate == 40, "never above the maximum"


def test_a_429_pauses_every_sender_and_cuts_the_rate_once() -> None:
    clock = ManualClock()
    controller = RateController(20, 0, clock=clock)
    sent = accept_for(controller, clock, 2.0)
    before = controller.rate
    in_flight = [controller.reserve() for _ in range(3)]
    controller.rate_limited(in_flight[0], retry_after=2)
    cut = controller.rate
    # The senders were busy for the whole last second: the cut starts from what Slack
    # took in it, which is below the sending rate that grew meanwhile.
    took = len([t for t in sent if t > clock.now() - 1.0])
    assert took < before
    assert cut == pytest.approx(0.7 * took)
    controller.rate_limited(in_flight[1], retry_after=1)
    assert controller.rate == cut, "the same burst cuts once"
    assert controller.cuts == 1 and controller.limited == 2
    now = clock.now()
    nxt = controller.acquire()
    assert nxt.at >= now + 2, "nobody sends before Retry-After has passed"


def test_after_a_cut_the_rate_recovers_fast_then_grows_additively() -> None:
    clock = ManualClock()
    controller = RateController(10, 0, clock=clock, increase=0.5)
    send_for(controller, clock, 0.5)
    controller.rate_limited(controller.reserve(), retry_after=1)
    ceiling = controller.rate / 0.7
    send_for(controller, clock, 1.5)  # 1 s paused, then 0.5 s of sending
    recovered = controller.rate
    assert 0.95 * ceiling <= recovered <= 0.95 * ceiling + 0.5 * 0.5
    send_for(controller, clock, 4.0)
    assert controller.rate - recovered == pytest.approx(4 * 0.5, rel=0.15)


def test_a_429_mid_pause_extends_it() -> None:
    clock = ManualClock()
    controller = RateController(10, 0, clock=clock)
    first = controller.reserve()
    controller.rate_limited(first, retry_after=1)
    clock.advance(0.5)
    controller.rate_limited(controller.reserve(), retry_after=3)
    assert controller.paused_until == pytest.approx(clock.now() + 3)
    assert controller.acquire().at >= clock.now() - 1e-9
    assert clock.now() >= controller.paused_until


def test_never_below_the_minimum() -> None:
    clock = ManualClock()
    controller = RateController(1, 0, clock=clock, minimum=0.5)
    for _ in range(5):
        controller.rate_limited(controller.acquire(), retry_after=0)
    assert controller.rate == 0.5


def test_unpaced_sends_without_gaps_but_honours_retry_after() -> None:
    clock = ManualClock()
    controller = RateController(0, 0, clock=clock)
    tickets = [controller.acquire() for _ in range(5)]
    assert {t.at for t in tickets} == {clock.now()}
    controller.rate_limited(tickets[0], retry_after=2)
    start = clock.now()
    assert controller.acquire().at == pytest.approx(start + 2)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        RateController(-1)
    with pytest.raises(ValueError):
        RateController(1, decrease=1.5)


def test_channel_pacer_spaces_each_channel_on_its_own() -> None:
    clock = ManualClock()
    pacer = ChannelPacer(1.0, clock)
    start = clock.now()
    times = []
    for channel in ("C1", "C1", "C2", "C1"):
        pacer.wait(channel)
        times.append((channel, clock.now() - start))
    assert times == [("C1", 0.0), ("C1", 1.0), ("C2", 1.0), ("C1", 2.0)]
    pacer.hold("C2", 5.0)
    pacer.wait("C2")
    assert clock.now() - start == pytest.approx(7.0)


def test_channel_pacer_without_gap_still_holds_after_retry_after() -> None:
    clock = ManualClock()
    pacer = ChannelPacer(0, clock)
    pacer.wait("C1")
    pacer.wait("C1")
    assert clock.slept == []
    pacer.hold("C1", 2.0)
    pacer.wait("C1")
    assert clock.slept == [2.0]
