"""`prdigest serve`: the long-running process (Slack, HTTP server, scheduler)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from bot.classify.taxonomy import TaxonomyError
from bot.cli.runtime import (
    CliError,
    log,
    reclassify_on_start,
    require_notes_folder,
    say,
    settings_or_exit,
)
from bot.config import Settings
from bot.metrics import Metrics
from bot.services import Services
from bot.store import StoreError

if TYPE_CHECKING:
    from apscheduler.schedulers.background import BackgroundScheduler
    from slack_bolt import App
    from slack_sdk import WebClient

    from bot.ops.prometheus import PrometheusMetrics
    from bot.slack.server import (
        RunningServer,
        ShutdownSignal,
        SocketModeConnection,
        WsgiApp,
    )
    from bot.slack.slack_link import SlackLink


def serve(
    no_scheduler: Annotated[
        bool,
        typer.Option(
            "--no-scheduler",
            help="Neither post the digest nor send readers' DMs from here (`prdigest tick`).",
        ),
    ] = False,
    host: Annotated[
        str, typer.Option("--host", metavar="ADDRESS", help="HTTP mode: address to bind.")
    ] = "0.0.0.0",
) -> None:
    """Run the Slack bot: Socket Mode when SLACK_APP_TOKEN is set, else HTTP on PRDIGEST_PORT.

    With the schedule it needs the team's notes folder PRDIGEST_DIGESTS_DIR (the weekly
    digest ingests it first; the bundled sample notes are refused).

    HTTP mode serves POST /slack/events, GET /healthz and GET /metrics; PRDIGEST_METRICS_PORT
    serves the last two on a port of their own (in Socket Mode too). Every minute the same
    process does what is due (`prdigest tick`: the weekly digest, each reader's DM at their
    own time) unless --no-scheduler. Stops cleanly on SIGTERM or Ctrl-C.
    """
    from bot.ops.prometheus import PrometheusMetrics
    from bot.slack.server import ShutdownSignal

    settings = settings_or_exit()
    _require_slack_settings(settings)
    if not no_scheduler:
        require_notes_folder(settings)
    root = logging.getLogger()
    if root.level > logging.getLevelName(settings.log_level):
        root.setLevel(settings.log_level)
    metrics = PrometheusMetrics()
    with ShutdownSignal() as shutdown:
        services = _wait_for_store(settings, metrics, shutdown)
        if services is None:
            say("stopped", label="prdigest: ")
            return
        with _closing(services):
            if not _serve_until_shutdown(services, metrics, shutdown, host, no_scheduler):
                return
    say("stopped", label="prdigest: ")


def _require_slack_settings(settings: Settings) -> None:
    from bot.slack.server import missing_slack_settings

    missing = missing_slack_settings(settings)
    if missing:
        raise CliError(
            f"serve needs {' and '.join(missing)} (SLACK_APP_TOKEN instead of "
            "SLACK_SIGNING_SECRET for Socket Mode); see 'Slack app setup' in deploy/README.md. "
            "To try the bot without Slack, run `prdigest preview`."
        )


def _serve_until_shutdown(
    services: Services,
    metrics: PrometheusMetrics,
    shutdown: ShutdownSignal,
    host: str,
    no_scheduler: bool,
) -> bool:
    """Build the Slack side on the open store, answer Slack until SIGTERM or Ctrl-C; False
    when the first Socket Mode connection never came (the reason is already said)."""
    from bot.ops.prometheus import measure_store
    from bot.slack.app import build_app
    from bot.slack.client import build_web_client
    from bot.slack.server import HealthCheck, make_ops_app, make_wsgi_app
    from bot.slack.slack_link import SlackLink

    settings = services.settings
    reclassify_on_start(services)
    measure_store(metrics, services.store, settings.channel)
    client = build_web_client(settings, metrics=metrics)
    link = SlackLink(client)
    health = HealthCheck(services.store, client, link)
    app_token, secret = settings.slack_app_token, settings.slack_signing_secret
    signing_secret = secret.get_secret_value() if secret else ""
    # HTTP mode without a signing secret stops here (`_require_slack_settings` said so first).
    bolt = build_app(
        services,
        client,
        signing_secret=signing_secret,
        socket_mode=app_token is not None,
        link=link,
    )
    ops = None
    if settings.metrics_port is not None:
        ops = _listen(make_ops_app(health, metrics), host, settings.metrics_port)
        say(f"metrics on http://{host}:{ops.port}/metrics", label="prdigest: ")
    scheduler = None if no_scheduler else _start_schedule(services, client, link)
    link.start(shutdown.event)
    try:
        if app_token is not None:
            return _answer_socket_mode(bolt, app_token.get_secret_value(), client, link, shutdown)
        # /metrics stays off the public port when it has one of its own.
        metrics_here = None if ops else metrics
        wsgi = make_wsgi_app(bolt, health, metrics_here, signing_secret=signing_secret)
        _answer_http(wsgi, host, settings.port, shutdown)
        return True
    finally:
        if scheduler is not None:
            scheduler.shutdown(wait=False)
        if ops is not None:
            ops.stop()


def _start_schedule(services: Services, client: WebClient, link: SlackLink) -> BackgroundScheduler:
    """The weekly job, and a catch-up run when Slack comes back after an outage."""
    from bot.delivery.scheduler import resume_after_outage, start_scheduler

    scheduler = start_scheduler(services, client)
    link.on_recovery(lambda: resume_after_outage(services, client))
    return scheduler


def _answer_socket_mode(
    bolt: App, app_token: str, client: WebClient, link: SlackLink, shutdown: ShutdownSignal
) -> bool:
    from bot.slack.server import SocketModeConnection

    handler = SocketModeConnection(bolt, app_token, client)
    if not _connect_socket_mode(handler, link, shutdown):
        return False
    say("connected to Slack (Socket Mode)", label="prdigest: ")
    shutdown.wait()
    handler.close()
    return True


def _answer_http(wsgi: WsgiApp, host: str, port: int, shutdown: ShutdownSignal) -> None:
    running = _listen(wsgi, host, port)
    say(f"listening on http://{host}:{running.port}/slack/events", label="prdigest: ")
    shutdown.wait()
    running.stop()


@contextmanager
def _closing(services: Services) -> Iterator[Services]:
    try:
        yield services
    finally:
        services.close()


def _wait_for_store(
    settings: Settings, metrics: Metrics, shutdown: ShutdownSignal
) -> Services | None:
    """Open the store, retrying with back-off while the database is unreachable (said once);
    None when a signal arrives first."""
    from bot.slack.slack_link import Backoff

    backoff = Backoff()
    down_since: float | None = None
    while True:
        try:
            services = Services.build(settings, metrics)
        except StoreError as exc:
            if down_since is None:
                down_since = time.monotonic()
                say(f"{exc}; retrying with back-off", logging.ERROR, "[red]prdigest:[/red] ")
            else:
                log.debug("database still unavailable: %s", exc)
        except TaxonomyError as exc:
            raise CliError(str(exc)) from None
        else:
            if down_since is not None:
                waited = time.monotonic() - down_since
                say(f"the database answers (after {waited:.0f} s)", label="prdigest: ")
            return services
        if shutdown.sleep(backoff.delay()):
            return None


def _connect_socket_mode(
    handler: SocketModeConnection, link: SlackLink, shutdown: ShutdownSignal
) -> bool:
    """Open the Socket Mode connection, retrying with back-off while Slack is unreachable
    (said once, unless `link` already said that Slack is unreachable); False when a signal
    arrives first. A refused app token stops `serve`."""
    from slack_sdk.errors import SlackApiError

    from bot.slack.client import describe_unreachable, is_unreachable
    from bot.slack.slack_link import UNREACHABLE, Backoff

    backoff = Backoff()
    said = link.check() == UNREACHABLE
    while True:
        try:
            handler.connect()
            return True
        except SlackApiError as exc:
            error = exc.response.get("error")
            raise CliError(
                f"Slack refused the Socket Mode connection ({error}): check SLACK_APP_TOKEN "
                "(an xapp-… token with connections:write)"
            ) from None
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            if not said:
                line = describe_unreachable(exc, handler.base_url)
                say(f"{line}; retrying with back-off", logging.ERROR, "[red]prdigest:[/red] ")
                said = True
        if shutdown.sleep(backoff.delay()):
            return False


def _listen(wsgi: WsgiApp, host: str, port: int) -> RunningServer:
    from bot.slack.server import serve_in_thread

    try:
        return serve_in_thread(wsgi, host, port)
    except OSError as exc:
        raise CliError(f"cannot listen on {host}:{port}: {exc}") from None
