"""Limits and read-then-write decisions hold when requests arrive at once (SQLite and
PostgreSQL): many threads go through the real command and correction services at the
same moment, and exactly what one-at-a-time would allow is stored."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from bot.domain import Verdict
from bot.i18n.texts import Language, texts_for
from bot.readers.corrections import fix_note
from bot.render.replies import Message
from bot.services import Services, ingest_paths
from bot.slack.prdigest import parse_command, run_command
from bot.store.readers import MAX_WATCHES
from tests.support.notefiles import seed_files

TEAM, USER = "T1", "U1"
THREADS = 40
NOW = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)

T = TypeVar("T")

BOTH = texts_for(Language.BOTH)  # today's form: English, bilingual headings


def at_once(count: int, work: Callable[[int], T]) -> list[T]:
    """Run `work(0..count-1)` on `count` threads released together."""
    start = threading.Barrier(count)

    def run(i: int) -> T:
        start.wait()
        return work(i)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(run, range(count)))


def command(services: Services, text: str, user: str = USER) -> Message:
    return run_command(services, parse_command(text, services.taxonomy), TEAM, user, BOTH, now=NOW)


def test_concurrent_watches_stop_at_the_limit(services: Services) -> None:
    replies = at_once(THREADS, lambda i: command(services, f"watch topic {i}")["text"])
    added = [r for r in replies if r.startswith("Watching")]
    refused = [r for r in replies if "the most allowed" in r]
    assert (len(added), len(refused)) == (MAX_WATCHES, THREADS - MAX_WATCHES), replies
    assert len(services.store.readers.watches_of(TEAM, USER)) == MAX_WATCHES


def test_concurrent_watches_near_the_limit_take_the_last_places_once(services: Services) -> None:
    """Every request reads the same count just under the limit; only the free places go."""
    free = 3
    for n in range(MAX_WATCHES - free):
        command(services, f"watch earlier {n}")
    replies = at_once(THREADS, lambda i: command(services, f"watch topic {i}")["text"])
    added = [r for r in replies if r.startswith("Watching")]
    refused = [r for r in replies if "the most allowed" in r]
    assert (len(added), len(refused)) == (free, THREADS - free), replies
    assert refused[0] == (
        f"You watch {MAX_WATCHES} searches, the most allowed. `/prdigest unwatch …` one "
        "first. Nothing was changed."
    )
    assert len(services.store.readers.watches_of(TEAM, USER)) == MAX_WATCHES
    # Another reader's watches do not count against this one's.
    assert command(services, "watch topic 0", user="U2")["text"].startswith("Watching")


def test_one_search_watched_at_once_is_stored_once(services: Services) -> None:
    replies = at_once(THREADS, lambda i: command(services, "watch FP8 " + " " * (i % 3) + "marlin"))
    texts = Counter(r["text"].split(":")[0].split(";")[0] for r in replies)
    assert sum(1 for r in replies if r["text"].startswith("Watching")) == 1, texts
    assert sum(1 for r in replies if "already watch" in r["text"]) == THREADS - 1, texts
    assert len(services.store.readers.watches_of(TEAM, USER)) == 1


def test_concurrent_subscribes_add_each_role_once(services: Services) -> None:
    roles = ("moe-quant", "kernels")
    replies = at_once(THREADS, lambda i: command(services, f"subscribe {roles[i % 2]}")["text"])
    for role in roles:
        mine = [r for r in replies if f"`{role}`" in r or role in r]
        added = [r for r in mine if r.startswith("Subscribed to")]
        assert len(added) == 1, mine
        assert all("lready subscribed to" in r for r in mine if r not in added), mine
    assert sorted(services.store.subscriptions_of(TEAM, USER)) == sorted(roles)


def test_concurrent_filters_and_subscribes_leave_one_row_per_role(services: Services) -> None:
    levels = ("deep", "skim", "")
    at_once(THREADS, lambda i: command(services, f"subscribe moe-quant {levels[i % 3]}".strip()))
    subs = services.store.readers.role_subscriptions(TEAM, USER)
    assert [s.role for s in subs] == ["moe-quant"]
    assert subs[0].level in (Verdict.DEEP, Verdict.SKIM, None)


def test_concurrent_pauses_keep_the_first_start(services: Services) -> None:
    """Each `pause` while paused keeps the start: the whole absence is offered later."""
    starts = [NOW + timedelta(seconds=i) for i in range(THREADS)]
    readers = services.store.readers
    at_once(THREADS, lambda i: readers.pause(TEAM, USER, starts[i], starts[i] + timedelta(days=7)))
    pause = readers.pause_of(TEAM, USER)
    assert pause is not None and pause.started_at == min(starts)


def test_concurrent_fixes_of_one_note_each_get_a_revision(services: Services) -> None:
    ingest_paths(services, seed_files())
    note = services.store.list_notes()[0]
    roles = [r.slug for r in services.taxonomy.roles][:4]
    results = at_once(
        20, lambda i: fix_note(services, note.id, [roles[i % len(roles)]], None, None, f"E{i}")
    )
    assert sorted(r.fix.revision for r in results) == list(range(1, 21))
    last = max(results, key=lambda r: r.fix.revision).fix
    stored = services.store.get_fix(note.id)
    assert stored is not None
    assert (stored.revision, stored.fixed_by, stored.roles) == (20, last.fixed_by, last.roles)
    after = services.store.get_notes([note.id])[0]
    assert after.roles == last.roles and after.primary_role == last.primary_role


def test_concurrent_set_meta_leaves_one_value(services: Services) -> None:
    at_once(THREADS, lambda i: services.store.set_meta("test-key", f"v{i}"))
    value = services.store.get_meta("test-key")
    assert value in {f"v{i}" for i in range(THREADS)}
    services.store.set_meta("test-key", "last")
    assert services.store.get_meta("test-key") == "last"
