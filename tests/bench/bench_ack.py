"""Time to ack and time to reply for `/prdigest` under concurrent users, over real HTTP.

    .venv/bin/python tests/bench/bench_ack.py --notes 100000 --users 8

Fills a SQLite store with N notes (the fixture notes under varied titles), serves the app
with waitress on an ephemeral port against the fake Slack Web API, and fires signed
`/prdigest` requests from concurrent threads: role lists, free-text searches and
subscribe/unsubscribe. Time to ack is the HTTP response time Slack would see (it wants
3 s at most); time to reply runs until the reply reaches the fake's response_url.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bot.config import load_settings
from bot.services import Services, ingest_paths
from bot.slack.app import build_app
from bot.slack.client import build_web_client
from bot.slack.server import HealthCheck, make_wsgi_app, serve_in_thread
from tests.bench.corpus import write_corpus
from tests.support.fakeslack import FakeSlack
from tests.support.slacksign import signed_headers, slash_command_body

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
QUERIES = (
    "moe",
    "kernels",
    "mm",
    "infra",
    "量化 缓存",
    "fp8 marlin",
    "cuda graph",
    "speculative decoding",
    "subscribe kv moe",
    "unsubscribe kv",
    "list",
)


def fill_store(services: Services, count: int) -> None:
    """`count` distinct notes (the labelled notes, varied), through the real ingest path."""
    with tempfile.TemporaryDirectory() as folder:
        report = ingest_paths(services, write_corpus(Path(folder), count))
    if report.new != count:
        sys.exit(f"could not fill the store: {report.summary()}")


def percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return f"p50 {p50 * 1000:7.1f} ms   p95 {p95 * 1000:7.1f} ms   max {ordered[-1] * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=8)
    parser.add_argument("--requests", type=int, default=25, help="requests per user")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeSlack(token=TOKEN) as slack:
        settings = load_settings(
            database_url=f"sqlite:///{Path(tmp) / 'bench.db'}",
            slack_api_url=slack.api_url,
            digests_dir=Path(tmp),
        )
        services = Services.build(settings)
        started = time.perf_counter()
        fill_store(services, args.notes)
        print(
            f"store: {services.store.count_notes()} notes in {time.perf_counter() - started:.1f} s"
        )

        client = build_web_client(settings, token=TOKEN)
        app = build_app(services, client, signing_secret=SECRET, socket_mode=False)
        server = serve_in_thread(
            make_wsgi_app(app, HealthCheck(services.store, client), signing_secret=SECRET)
        )
        acks: list[float] = []
        replies: list[float] = []
        failures: list[str] = []
        ids = itertools.count(1)
        lock = threading.Lock()

        def user(number: int) -> None:
            rng = random.Random(number)
            for _ in range(args.requests):
                text = rng.choice(QUERIES)
                path = f"/response/{next(ids)}"
                body = slash_command_body(
                    text,
                    user_id=f"U{number:04d}",
                    response_url=f"http://127.0.0.1:{slack.port}{path}",
                )
                conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
                sent_at = time.time()
                t0 = time.perf_counter()
                conn.request("POST", "/slack/events", body, signed_headers(SECRET, body))
                status = conn.getresponse().status
                ack = time.perf_counter() - t0
                conn.close()
                try:
                    call = slack.wait_for(path, timeout=30)[-1]
                except TimeoutError:
                    with lock:
                        failures.append(f"{text!r}: no reply")
                    continue
                with lock:
                    if status != 200:
                        failures.append(f"{text!r}: HTTP {status}")
                    acks.append(ack)
                    replies.append(call.at - sent_at)

        threads = [threading.Thread(target=user, args=(n,)) for n in range(args.users)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - started
        server.stop()
        services.close()

    total = args.users * args.requests
    print(f"{total} requests from {args.users} users in {elapsed:.1f} s")
    if acks:
        print(f"time to ack:   {percentiles(acks)}")
        print(f"time to reply: {percentiles(replies)}")
    if failures:
        print(f"{len(failures)} failures, e.g. {failures[:3]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
