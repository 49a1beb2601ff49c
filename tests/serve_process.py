"""A real `prdigest` process for tests: a clean environment, a free port, waiting on it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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
