"""A real `prdigest` process for tests: a clean environment, a free port, waiting on it.

`start`/`running` give a bare `python -m bot ARGS` child; `ServeProcess` is `prdigest serve`
as an operator runs it, in HTTP mode, its stderr collected line by line while it runs and
reachable with plain and signed requests (`local_request`)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.slacksign import signed_headers, slash_command_body

ROOT = Path(__file__).resolve().parents[2]
SECRET = "serve-signing-secret"


def free_port() -> int:
    """A port nothing listens on (also what an unreachable service looks like)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**settings: str) -> dict[str, str]:
    """This environment without any PRDIGEST_ or SLACK_ variable, the package importable,
    plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRDIGEST_", "SLACK_"))}
    return {**env, "PYTHONPATH": str(ROOT), **settings}


def start(cwd: Path, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    """`python -m bot ARGS` with stdout and stderr captured as text."""
    return subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@contextmanager
def running(cwd: Path, env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """`start`, and kill the process on the way out if it is still running."""
    proc = start(cwd, env, *args)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM, wait for the exit, return what it wrote on stderr."""
    proc.send_signal(signal.SIGTERM)
    return proc.communicate(timeout=15)[1]


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


def http_get(url: str) -> tuple[int, bytes]:
    """Status and body; an HTTP error status is an answer too."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_until(
    condition: Callable[[], bool], proc: subprocess.Popen[str], what: str, timeout: float = 60
) -> None:
    """Poll `condition` (a refused connection counts as not yet); fail with the process's
    stderr if it exits or the time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    pytest.fail(f"{what}; the process said: {proc.communicate()[1][-3000:]}")


class ServeProcess:
    """`python -m bot serve` with `env` on top of a clean environment (no PRDIGEST_ or
    SLACK_ variables of the caller's). What it writes on stdout and stderr is collected, line
    by line as it comes, in one log (`stderr`: stdout carries nothing else in serve)."""

    def __init__(self, cwd: Path, env: dict[str, str], *args: str) -> None:
        self.port = free_port()
        self.secret = env.get("SLACK_SIGNING_SECRET", SECRET)
        full = clean_env(**{"PRDIGEST_PORT": str(self.port), "SLACK_SIGNING_SECRET": SECRET, **env})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "serve", "--host", "127.0.0.1", *args],
            cwd=cwd,
            env=full,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self._lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
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

    def post(self, body: str, headers: dict[str, str]) -> int:
        """POST `body` to /slack/events with `headers` as given; the HTTP status."""
        return local_request(self.port, "POST", "/slack/events", body.encode(), headers)[0]

    def command(self, text: str, response_url: str) -> tuple[int, float]:
        """Send `/prdigest text` signed; returns the HTTP status and seconds to the ack."""
        body = slash_command_body(text, response_url=response_url)
        started = time.monotonic()
        headers = signed_headers(self.secret, body)
        status, _ = local_request(self.port, "POST", "/slack/events", body.encode(), headers)
        return status, time.monotonic() - started

    def stop(self, timeout: float = 20.0) -> int:
        """SIGTERM, then the exit status; by then `stderr` holds everything it wrote."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise
        self._reader.join(timeout)
        return code
