"""`prdigest serve` as an operator runs it: a child process in HTTP mode whose stderr is
collected line by line while it runs, reachable with plain and signed HTTP requests."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.slacksign import signed_headers, slash_command_body

ROOT = Path(__file__).resolve().parents[1]
SECRET = "serve-signing-secret"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def local_request(
    port: int,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
) -> tuple[int, bytes]:
    """One HTTP request to 127.0.0.1:`port`: the status and the body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


class ServeProcess:
    """`python -m bot serve` with `env` on top of a clean environment (no PRDIGEST_ or
    SLACK_ variables of the caller's)."""

    def __init__(self, cwd: Path, env: dict[str, str], *args: str) -> None:
        self.port = free_port()
        clean = {k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))}
        full = {
            **clean,
            "PYTHONPATH": str(ROOT),
            "PRDIGEST_PORT": str(self.port),
            "SLACK_SIGNING_SECRET": SECRET,
            **env,
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve", "--host", "127.0.0.1", *args],
            cwd=cwd,
            env=full,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: list[str] = []
        self._changed = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._changed:
                self._lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    @property
    def stderr(self) -> str:
        with self._changed:
            return "\n".join(self._lines)

    def lines(self, containing: str) -> list[str]:
        with self._changed:
            return [line for line in self._lines if containing in line]

    def wait_for_line(self, containing: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = [line for line in self._lines if containing in line]
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"no line with {containing!r}; serve said:\n{self.stderr}")
                self._changed.wait(min(left, 0.5))

    def get(self, path: str) -> tuple[int, bytes]:
        return local_request(self.port, "GET", path, timeout=10)

    def health(self) -> int:
        try:
            return self.get("/healthz")[0]
        except OSError:
            return 0

    def wait_until(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited early:\n{self.stderr}")
            time.sleep(0.1)
        raise AssertionError(f"timed out; serve said:\n{self.stderr}")

    def command(self, text: str, response_url: str) -> tuple[int, float]:
        """Send `/prdigest text` signed; returns the HTTP status and seconds to the ack."""
        body = slash_command_body(text, response_url=response_url)
        started = time.monotonic()
        headers = signed_headers(SECRET, body)
        status, _ = local_request(self.port, "POST", "/slack/events", body.encode(), headers)
        return status, time.monotonic() - started

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
