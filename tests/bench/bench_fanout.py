"""DM fan-out: the weekly digest to N subscribers against a rate-limited fake Slack.

The fake Web API admits `--limit` chat.postMessage calls per second (a sliding one-second
window; over it: HTTP 429 with Retry-After) and answers every call `--latency` late. The
job runs as `prdigest post` does, with the default pacing settings (or the ones given),
on a fresh SQLite store. The floor is N / limit seconds; the fan-out time runs from the
first DM request to the last DM answer. Every DM is checked against the fake's records:
each subscriber got exactly one, and the ledger recorded each once.

.venv/bin/python -m tests.bench.bench_fanout --dms 1000 --limit 20 --latency 0.08
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pydantic import SecretStr

from bot.config import load_settings
from bot.delivery.weekly import Pacing, publish_weekly_digest
from bot.services import Services
from bot.slack.client import build_web_client
from bot.store.ledger import Ledger
from tests.support.fakeslack import FakeSlack

TOKEN = "xoxb-bench"
CHANNEL = "C0BENCH"
NOTES = """vllm-project/vllm

FP8 MoE 量化内核提速 (#95001)

值得精读，适合做 MoE 量化与 FP8 内核的工程师。

Fused MoE Marlin 内核修复 (#95002)

值得精读，适合做 MoE 量化与 FP8 内核的工程师。
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dms", type=int, default=1000, help="subscribers, one DM each")
    parser.add_argument("--limit", type=float, default=20.0, help="chat.postMessage per second")
    parser.add_argument("--latency", type=float, default=0.08, help="seconds per Web API call")
    parser.add_argument("--dm-rate", type=float, default=None, help="PRDIGEST_DM_RATE")
    parser.add_argument("--dm-concurrency", type=int, default=None)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeSlack(token=TOKEN) as slack:
        digests = Path(tmp) / "digests"
        digests.mkdir()
        (digests / "bench.txt").write_text(NOTES, encoding="utf-8")
        settings = load_settings(
            database_url=f"sqlite:///{Path(tmp) / 'bench.db'}",
            digests_dir=digests,
            channel=CHANNEL,
            slack_api_url=slack.api_url,
            slack_bot_token=SecretStr(TOKEN),
        )
        pacing = Pacing.from_settings(settings)
        if args.dm_rate is not None:
            pacing = replace(pacing, dm_per_second=args.dm_rate)
        if args.dm_concurrency is not None:
            pacing = replace(pacing, dm_concurrency=args.dm_concurrency)
        services = Services.build(settings)
        users = [f"U{n:05}" for n in range(args.dms)]
        for user in users:
            services.store.subscribe("T1", user, ["moe-quant"])
        per_minute = args.limit * 60
        slack.set_rate("chat.postMessage", per_minute, burst=max(1, round(args.limit)))
        for method in ("chat.postMessage", "chat.getPermalink", "conversations.open"):
            slack.set_latency(method, args.latency)

        client = build_web_client(settings)
        started = time.perf_counter()
        result = publish_weekly_digest(services, client, datetime.now(UTC), pacing=pacing)
        total = time.perf_counter() - started

        calls = slack.calls_for("chat.postMessage")
        dm_calls = [c for c in calls if str(c.params.get("channel", "")).startswith("U")]
        accepted = [c for c in dm_calls if c.ok]
        per_user = Counter(str(c.params["channel"]) for c in accepted)
        ledger = Ledger(services.store.engine)
        dm_parts = [p for dm in ledger.reader_dms() for p in ledger.reader_dm_parts(dm.id)]
        problems = []
        if set(per_user) != set(users) or any(n != 1 for n in per_user.values()):
            twice = sum(1 for n in per_user.values() if n > 1)
            problems.append(f"{len(per_user)} users got a DM, {twice} more than once")
        if len(dm_parts) != args.dms or not all(p.ts for p in dm_parts):
            problems.append("the ledger did not record every DM once")
        fanout = max(c.at for c in accepted) + args.latency - min(c.at for c in dm_calls)
        services.close()

    floor = args.dms / args.limit
    limited = sum(1 for c in dm_calls if c.status == 429)
    print(
        f"pacing: start {pacing.dm_per_second:g}/s, max {pacing.dm_max_per_second:g}/s, "
        f"{pacing.dm_concurrency} senders; fake: {args.limit:g}/s, {args.latency * 1000:g} ms"
    )
    print(f"DMs accepted: {len(accepted)} of {args.dms}; 429s met: {limited}")
    print(f"fan-out: {fanout:.1f} s (floor {floor:.1f} s) = {fanout / floor:.3f}x the floor")
    print(f"whole job (ingest, {result.posted} channel messages at 1/s, DMs): {total:.1f} s")
    if problems:
        sys.exit("FAILED: " + "; ".join(problems))
    print("every DM exactly once" + ("" if fanout / floor <= 1.2 else "; SLOWER than 1.2x"))


if __name__ == "__main__":
    main()
