"""Peak memory of `prdigest serve` (HTTP mode) over a store of N notes.

    .venv/bin/python -m tests.bench.bench_serve_rss --notes 100000

Writes N synthetic notes (tests/bench/corpus.py), ingests them with `prdigest ingest`, then
starts `prdigest serve` against the fake Slack Web API, sends signed `/prdigest` commands
(help, role lists, searches, subscribe, list), scrapes `/metrics`, and reads the serving
process's peak resident set (VmHWM) and current one (VmRSS) from /proc.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.corpus import write_corpus
from tests.support.fakeslack import FakeSlack
from tests.support.slacksign import signed_headers, slash_command_body

SECRET = "bench-secret"
TOKEN = "xoxb-bench"
COMMANDS = (
    "help",
    "moe",
    "kernels",
    "量化 缓存",
    "fp8 marlin",
    "speculative decoding",
    "subscribe kv moe",
    "list",
    "roles",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def memory_kib(pid: int) -> dict[str, int]:
    """VmHWM and VmRSS of `pid` in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            found[key] = int(value.split()[0])
    return found


def request(port: int, method: str, path: str, body: bytes = b"", **headers: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body, headers)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def wait_healthy(port: int, process: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"serve exited: {process.stderr.read() if process.stderr else ''}")
        try:
            if request(port, "GET", "/healthz") == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit("serve did not become healthy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5, help="times each command is sent")
    args = parser.parse_args()
    script = Path(sys.executable).with_name("prdigest")

    with tempfile.TemporaryDirectory() as tmp, FakeSlack(token=TOKEN) as slack:
        folder = Path(tmp) / "digests"
        write_corpus(folder, args.notes)
        port = free_port()
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))},
            "PRDIGEST_DATABASE_URL": f"sqlite:///{Path(tmp) / 'bench.db'}",
            "PRDIGEST_DIGESTS_DIR": str(folder),
            "PRDIGEST_SLACK_API_URL": slack.api_url,
            "PRDIGEST_PORT": str(port),
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
        }
        started = time.perf_counter()
        ingest = subprocess.run([str(script), "ingest"], env=env, capture_output=True, text=True)
        if ingest.returncode != 0:
            sys.exit(f"ingest failed: {ingest.stderr}")
        print(f"ingested {args.notes} notes in {time.perf_counter() - started:.1f} s")

        serve = subprocess.Popen(
            [str(script), "serve", "--no-scheduler", "--host", "127.0.0.1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_healthy(port, serve)
            idle = memory_kib(serve.pid)
            replies = 0
            for round_ in range(args.rounds):
                for n, text in enumerate(COMMANDS):
                    path = f"/response/{round_}-{n}"
                    body = slash_command_body(
                        text, user_id="U0001", response_url=f"http://127.0.0.1:{slack.port}{path}"
                    )
                    status = request(
                        port, "POST", "/slack/events", body, **signed_headers(SECRET, body)
                    )
                    if status != 200:
                        sys.exit(f"/prdigest {text}: HTTP {status}")
                    slack.wait_for(path, timeout=60)
                    replies += 1
            if request(port, "GET", "/metrics") != 200:
                sys.exit("/metrics failed")
            busy = memory_kib(serve.pid)
        finally:
            serve.send_signal(signal.SIGTERM)
            try:
                serve.wait(30)
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()

    print(f"{replies} /prdigest commands answered, /metrics scraped")
    print(f"serve after start: VmRSS {idle['VmRSS'] / 1024:.1f} MiB")
    print(
        f"serve after the commands: VmRSS {busy['VmRSS'] / 1024:.1f} MiB, "
        f"peak (VmHWM) {busy['VmHWM'] / 1024:.1f} MiB"
    )


if __name__ == "__main__":
    main()
