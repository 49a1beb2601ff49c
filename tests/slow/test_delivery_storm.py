"""A 429 storm during the weekly digest: nothing lost, nothing posted twice."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from bot.delivery.weekly import Pacing, publish_weekly_digest
from bot.ops.prometheus import PrometheusMetrics
from bot.services import Services
from bot.slack.client import build_web_client
from bot.store.ledger import Ledger
from tests.support.delivery import (
    NOW,
    add_seed_notes,
    note_ids,
    publish,
    reader_dm_parts,
    thread_note_ids,
)
from tests.support.fakeslack import FakeSlack
from tests.support.notefiles import ROLE_SLUGS

SUBSCRIBERS = 60

pytestmark = pytest.mark.slow  # each 429 costs a whole second of Retry-After: ~15 s per store


def test_a_429_storm_loses_and_repeats_nothing(posting: Services, slack: FakeSlack) -> None:
    add_seed_notes(posting)
    # Every note of their roles in each DM: the storm is about delivery, not the budget.
    posting.settings = posting.settings.model_copy(update={"dm_budget": 0})
    roles = {}
    for n in range(SUBSCRIBERS):
        user = f"U{n:03}"
        roles[user] = {ROLE_SLUGS[n % len(ROLE_SLUGS)], ROLE_SLUGS[(n * 7 + 3) % len(ROLE_SLUGS)]}
        posting.store.subscribe("T1", user, sorted(roles[user]))
    # Slack takes 5 messages per 0.25 s and answers the rest 429 (Retry-After: 1); the bot
    # starts far above that, and a burst of injected 429s comes on top.
    slack.set_rate("chat.postMessage", 1200, burst=5)
    slack.set_latency("chat.postMessage", 0.02)
    slack.rate_limit("chat.postMessage", times=4, retry_after=1)
    pacing = Pacing(channel_per_second=0, dm_per_second=40, dm_max_per_second=0, dm_concurrency=4)

    metrics = PrometheusMetrics()
    posting.metrics = metrics
    client = build_web_client(posting.settings, metrics=metrics)
    result = publish_weekly_digest(posting, client, NOW, pacing=pacing)

    assert result.status == "posted"
    calls = slack.calls_for("chat.postMessage")
    limited = sum(c.status == 429 for c in calls)
    assert limited >= 10, "a storm, not a shower"
    sample = metrics.registry.get_sample_value
    assert sample("prdigest_slack_rate_limited_total", {"method": "chat.postMessage"}) == limited
    accepted = Counter(
        str(c.params["metadata"]["event_payload"]["part"])
        for c in slack.accepted("chat.postMessage")
    )
    assert all(n == 1 for n in accepted.values()), "no message posted twice"
    ledger = Ledger(posting.store.engine)
    parts = ledger.parts(result.runs[0]) + reader_dm_parts(ledger)
    assert {p.part for p in parts} == set(accepted), "every planned message posted"
    assert all(p.ts for p in parts), "and recorded"

    notes = {n.id: n for n in posting.store.list_notes()}
    assert sorted(thread_note_ids(slack)) == sorted(notes), "the channel has every note once"
    dms = [p for p in parts if p.kind == "dm"]
    assert result.dms == len(dms) and len({p.channel for p in dms}) == SUBSCRIBERS
    assert sample("prdigest_dms_sent_total") == len(dms)
    for user, mine in roles.items():
        ids = [i for m in slack.messages_in(FakeSlack.dm_channel(user)) for i in note_ids(m)]
        assert sorted(ids) == sorted(i for i, n in notes.items() if mine & set(n.roles)), user

    slack.clear_faults()
    before = len(calls)
    again = publish(posting, NOW + timedelta(hours=1), pacing=pacing)
    assert again.status == "nothing_new" and slack.count("chat.postMessage") == before
