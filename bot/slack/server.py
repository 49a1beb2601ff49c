"""HTTP mode: a small WSGI app in front of Bolt, served by waitress, plus `/healthz` and
`/metrics`.

`POST /slack/events` carries slash commands, interactivity and events (one Request URL for
all three), each acknowledged before its work runs (`bot.slack.app`); a request whose
signature does not hold or whose body is unreadable is refused before Bolt sees it, with one
line in the log; `GET /healthz`
answers 200 once the store answers and the bot token passed `auth.test`, else 503 with the
failing check named; `GET /metrics` is the Prometheus text exposition (`bot.ops.prometheus`).
In Socket Mode the last two are served alone (`make_ops_app`) on `PRDIGEST_METRICS_PORT`.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import waitress
from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from bot.config import Settings
from bot.slack.listeners.payloads import (
    EVENTS_PATH,
    bolt_can_read,
    refusal,
    safe_kind,
    unverified_body,
)
from bot.slack.slack_link import SlackLink
from bot.store import Store

if TYPE_CHECKING:
    from bot.ops.prometheus import PrometheusMetrics

log = logging.getLogger(__name__)

HEALTH_PATH = "/healthz"
METRICS_PATH = "/metrics"
MAX_REQUEST_BYTES = 1_000_000  # Slack's payloads are a few kB; refuse anything huge
SERVER_THREADS = 8
SIGNATURE_WINDOW_SECONDS = 300  # Slack's: a request signed longer ago (or ahead) is refused

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


class TaskDispatcher(Protocol):
    def shutdown(self, cancel_pending: bool = True, timeout: float = 5) -> bool: ...


class WaitressServer(Protocol):
    """The part of waitress' server object we use."""

    effective_port: int
    task_dispatcher: TaskDispatcher

    def run(self) -> None: ...

    def close(self) -> None: ...


def missing_slack_settings(settings: Settings) -> list[str]:
    """Environment variables `serve` still needs: the bot token, and the signing secret
    unless Socket Mode's app token is set."""
    missing = []
    if settings.slack_bot_token is None or not settings.slack_bot_token.get_secret_value():
        missing.append("SLACK_BOT_TOKEN")
    socket_mode = settings.slack_app_token is not None
    if not socket_mode and (
        settings.slack_signing_secret is None
        or not settings.slack_signing_secret.get_secret_value()
    ):
        missing.append("SLACK_SIGNING_SECRET")
    return missing


@dataclass
class HealthCheck:
    """Store ping plus the Slack link's status (`slack_link.SlackLink`): a good token stays
    good, so it is asked once; a failure is asked again with back-off."""

    store: Store
    client: WebClient
    link: SlackLink | None = None

    def __post_init__(self) -> None:
        if self.link is None:
            self.link = SlackLink(self.client)

    def run(self) -> tuple[bool, dict[str, str]]:
        assert self.link is not None
        checks = {
            "store": "ok" if self.store.ping() else "unreachable",
            "slack_auth": self.link.current(),
        }
        return all(v == "ok" for v in checks.values()), checks


def make_ops_app(health: HealthCheck, metrics: PrometheusMetrics | None = None) -> WsgiApp:
    """`GET /healthz` and `GET /metrics` (404 without metrics); 404 for anything else."""

    def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            healthy, checks = health.run()
            status = "200 OK" if healthy else "503 Service Unavailable"
            return _json(start_response, status, {"ok": healthy, "checks": checks})
        if path == METRICS_PATH and metrics is not None and method in ("GET", "HEAD"):
            payload = metrics.render()
            start_response(
                "200 OK",
                [("Content-Type", metrics.content_type), ("Content-Length", str(len(payload)))],
            )
            return [payload]
        return _json(start_response, "404 Not Found", {"error": "not found"})

    return application


def make_wsgi_app(
    bolt_app: App,
    health: HealthCheck,
    metrics: PrometheusMetrics | None = None,
    *,
    signing_secret: str,
) -> WsgiApp:
    """Route Slack's requests to Bolt, the rest to `make_ops_app`.

    A request to `EVENTS_PATH` reaches Bolt only once its signature is checked with
    `signing_secret` and its body is one Bolt can read; any other is refused here with one
    line in the log (`refusal`), so nothing of it reaches Bolt or its logs."""
    slack = SlackRequestHandler(bolt_app, path=EVENTS_PATH)
    verifier = SignatureVerifier(signing_secret)
    ops = make_ops_app(health, metrics)

    def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path != EVENTS_PATH:
            return ops(environ, start_response)
        if method != "POST":
            return _json(start_response, "405 Method Not Allowed", {"error": "use POST"})
        where = f"POST {EVENTS_PATH}"
        text = _read_body(environ)
        if text is None:
            log.warning("%s", refusal("unreadable body (not UTF-8)", where))
            return _json(start_response, "400 Bad Request", {"error": "unreadable payload"})
        problem = signature_problem(verifier, text, environ, time.time())
        if problem is not None:
            log.warning("%s", refusal(problem, where, unverified_body(text)))
            return _json(start_response, "401 Unauthorized", {"error": "invalid request"})
        headers = {"content-type": str(environ.get("CONTENT_TYPE") or "")}
        if not bolt_can_read(text, headers):
            log.warning("%s", refusal("unreadable body", where, unverified_body(text)))
            return _json(start_response, "400 Bad Request", {"error": "unreadable payload"})
        try:
            return slack(environ, start_response)  # type: ignore[arg-type]
        except (ValueError, KeyError, TypeError) as exc:
            # A signed body that is not a Slack payload (Bolt parses it before answering).
            reason = f"unreadable body ({exc.__class__.__name__})"
            log.warning("%s", refusal(reason, where, unverified_body(text)))
            return _json(start_response, "400 Bad Request", {"error": "unreadable payload"})

    return application


def signature_problem(
    verifier: SignatureVerifier, body: str, environ: Mapping[str, Any], now: float
) -> str | None:
    """Why a request's signature does not hold (its reason for the log), or None when it does.

    Slack signs `v0:<timestamp>:<body>` with the signing secret and allows five minutes
    either way; the staleness is told apart from a wrong signature, since a clock that is
    off refuses every request while a wrong secret or a forgery does."""
    signature = str(environ.get("HTTP_X_SLACK_SIGNATURE") or "")
    timestamp = str(environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP") or "")
    if not signature or not timestamp:
        return "not signed (no X-Slack-Signature or X-Slack-Request-Timestamp header)"
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        return "malformed timestamp"
    age = now - int(timestamp)
    if age > SIGNATURE_WINDOW_SECONDS:
        return (
            f"stale timestamp (signed {age:.0f} s ago, {SIGNATURE_WINDOW_SECONDS} s allowed; "
            "if every request says so, check this machine's clock)"
        )
    if -age > SIGNATURE_WINDOW_SECONDS:
        return f"timestamp {-age:.0f} s in the future (check this machine's clock)"
    if not signature.isascii() or not verifier.is_valid(body, timestamp, signature):
        return "bad signature (check SLACK_SIGNING_SECRET if every request says so)"
    return None


def _read_body(environ: dict[str, Any]) -> str | None:
    """The request's body as text (None when it is not UTF-8), leaving a copy for Bolt."""
    try:
        raw: bytes = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    except (KeyError, ValueError):
        raw = b""
    environ["wsgi.input"] = io.BytesIO(raw)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _json(start_response: StartResponse, status: str, body: dict[str, Any]) -> list[bytes]:
    payload = json.dumps(body).encode()
    start_response(
        status,
        [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))],
    )
    return [payload]


def create_server(
    wsgi_app: WsgiApp, host: str = "0.0.0.0", port: int = 3000, threads: int = SERVER_THREADS
) -> WaitressServer:
    """A waitress server bound now (port 0 picks a free port); `run()` serves, `close()` stops."""
    server: WaitressServer = waitress.create_server(
        wsgi_app,
        host=host,
        port=port,
        threads=threads,
        ident="prdigest",
        max_request_body_size=MAX_REQUEST_BYTES,
        clear_untrusted_proxy_headers=True,
    )
    return server


@dataclass
class RunningServer:
    """A waitress server serving on a background thread."""

    server: WaitressServer
    thread: threading.Thread

    @property
    def port(self) -> int:
        return int(self.server.effective_port)

    def stop(self, timeout: float = 5.0) -> None:
        """Close from the serving thread itself (woken through waitress' trigger), so the
        loop ends at once instead of at its next select timeout."""
        # Let requests in flight finish first: a task that completes after the trigger is
        # closed fails inside waitress with a traceback.
        self.server.task_dispatcher.shutdown(cancel_pending=False, timeout=timeout)
        trigger = getattr(self.server, "trigger", None)
        woken = False
        if trigger is not None and self.thread.is_alive():
            # The loop may have closed its trigger meanwhile: then close from here.
            with contextlib.suppress(OSError):
                trigger.pull_trigger(self.server.close)
                woken = True
        if not woken:
            self.server.close()
        self.thread.join(timeout)


def serve_in_thread(wsgi_app: WsgiApp, host: str = "127.0.0.1", port: int = 0) -> RunningServer:
    server = create_server(wsgi_app, host, port)
    thread = threading.Thread(target=server.run, name="prdigest-http", daemon=True)
    thread.start()
    return RunningServer(server, thread)


class ShutdownSignal:
    """SIGTERM / SIGINT handlers, installed before anything starts serving so an early
    signal still stops the process cleanly; `wait()` blocks until one arrives."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> ShutdownSignal:
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, _frame: object) -> None:
        log.info("received signal %d, stopping", signum)
        self._stop.set()

    def wait(self) -> None:
        while not self._stop.wait(0.5):
            pass

    @property
    def event(self) -> threading.Event:
        """Set once a signal arrived: for threads that should stop with the process."""
        return self._stop

    def sleep(self, seconds: float) -> bool:
        """Wait `seconds` (in short steps, so signals are handled); True once stopping."""
        deadline = time.monotonic() + seconds
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._stop.wait(min(0.5, left))
        return True


class SocketModeConnection:
    """Bolt's built-in Socket Mode client: no public URL needed, Slack pushes over a websocket.

    Its own threads (10) run each envelope's acknowledgement, as waitress' threads do in HTTP
    mode; the work after it waits on the app's reply pool, never these (`bot.slack.app`).
    """

    def __init__(self, bolt_app: App, app_token: str, client: WebClient) -> None:
        from slack_bolt.adapter.socket_mode import SocketModeHandler

        self.handler = SocketModeHandler(bolt_app, app_token=app_token, web_client=client)
        self.handler.client.message_listeners.insert(0, _drop_unreadable_envelope)
        self.base_url = client.base_url

    def connect(self) -> None:
        """Open the connection (apps.connections.open, then the websocket); returns at once."""
        self.handler.connect()  # type: ignore[no-untyped-call]

    def close(self) -> None:
        self.handler.close()  # type: ignore[no-untyped-call]


def _drop_unreadable_envelope(_client: object, message: dict[str, Any], _raw: str | None) -> None:
    """A Socket Mode envelope whose payload Bolt cannot read loses it here, before the
    client builds a request from it (which fails with a traceback for a payload that is not
    an object): with no payload, the envelope reaches no listener and is not acknowledged,
    as an HTTP request would get a 400."""
    if "payload" not in message or not message.get("envelope_id"):
        return
    payload = message["payload"]
    if not isinstance(payload, dict) or not bolt_can_read(payload, {}):
        kind = safe_kind(message.get("type"))
        where = f"Socket Mode, {kind}" if kind else "Socket Mode"
        log.warning("%s", refusal("unreadable payload", where, payload))
        del message["payload"]
