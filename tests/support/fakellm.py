"""A local fake of an OpenAI-compatible model server (what `vllm serve` exposes), for tests.

``FakeLLM`` runs a threaded HTTP server on ``127.0.0.1`` (ephemeral port) that answers
``POST /v1/chat/completions`` and ``GET /v1/models`` the way such a server does, records
every request, and counts requests in flight. What it answers is scriptable: ``answer``
is a function of the request body that returns a `Reply` (a reading, raw content, an HTTP
status, a garbage body, a delay)::

    with FakeLLM(model="m") as llm:
        llm.answer = lambda body: Reply(reading={"roles": ["kernels"], ...})
        client = OpenAI(base_url=llm.url, api_key="x")
        ...
        assert llm.count() == 1

CI has no model server: this fake is the only endpoint the tests talk to.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLM", "Reply", "note_data", "note_of"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer: `reading` (as JSON content), or `content` as is, or `status`
    with an error body, or `garbage` bytes as the whole body; after `delay` seconds.
    `finish_reason` "length" is what a server says of an answer cut off at max_tokens."""

    reading: dict[str, Any] | None = None
    content: str | None = None
    status: int = 200
    garbage: bytes | None = None
    delay: float = 0.0
    finish_reason: str = "stop"


def note_data(message: dict[str, Any]) -> dict[str, Any]:
    """The note a user turn carries (the JSON object after its first line)."""
    data: dict[str, Any] = json.loads(message["content"].partition("\n")[2])
    return data


def note_of(body: dict[str, Any]) -> tuple[str, str]:
    """The (title, paragraph) a chat request asks about (its last user turn)."""
    last = [m for m in body["messages"] if m["role"] == "user"][-1]
    data = note_data(last)
    return data["title"], data["paragraph"]


class FakeLLM:
    """See the module docstring. Use as a context manager."""

    def __init__(self, model: str = "test-model") -> None:
        self.model = model
        self.models = [model]
        self.requests: list[dict[str, Any]] = []  # chat request bodies, in arrival order
        self.model_listings = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.answer: Callable[[dict[str, Any]], Reply] = lambda _body: Reply(
            reading={
                "roles": ["models"],
                "verdict": "skim",
                "groups": {},
                "others": None,
                "reason": "a default answer",
            }
        )
        self._lock = threading.Lock()
        self._release = threading.Event()  # set on exit: delayed replies end at once
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # polled often, so that leaving the fake takes milliseconds, not half a second
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL a client is given (PRDIGEST_LLM_URL)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def _completion(self, content: str, finish_reason: str = "stop") -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def handle(self) -> None:
                # the client may hang up (it stops reading a body too long for it)
                with contextlib.suppress(ConnectionError):
                    super().handle()

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up (a timeout)

            def do_GET(self) -> None:
                if self.path.rstrip("/") != "/v1/models":
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                with fake._lock:
                    fake.model_listings += 1
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
                self._send(200, json.dumps({"object": "list", "data": data}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, b'{"error": {"message": "not found"}}')
                    return
                body = json.loads(raw)
                with fake._lock:
                    fake.requests.append(body)
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    reply = fake.answer(body)
                    if reply.delay:
                        fake._release.wait(reply.delay)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1
                if reply.garbage is not None:
                    self._send(reply.status, reply.garbage, "text/html")
                elif reply.status != 200:
                    error = {"error": {"message": "scripted failure", "type": "server_error"}}
                    self._send(reply.status, json.dumps(error).encode())
                else:
                    content = (
                        reply.content
                        if reply.content is not None
                        else json.dumps(reply.reading, ensure_ascii=False)
                    )
                    completion = fake._completion(content, reply.finish_reason)
                    self._send(200, json.dumps(completion).encode())

        return Handler
