"""Acknowledge first: a request is acknowledged at once whatever other requests wait on.

The app is served over HTTP as `prdigest serve` serves it, with a reply pool of one thread
and a one-second reply timeout, so a single stalled reply would hold every later
acknowledgement if they shared that thread. The fake Slack stalls a response_url or a Web
API method; nothing of ours is mocked.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot.services import Services
from bot.slack.app import ReplyPool, build_app
from bot.slack.client import build_web_client
from bot.slack.listeners.acking import AckFirst
from bot.slack.server import HealthCheck, RunningServer, make_wsgi_app, serve_in_thread
from bot.slack.slack_link import OK, SlackLink
from tests.support.fakeslack import FakeSlack
from tests.support.netlink import Link
from tests.support.process import local_request
from tests.support.slacksign import event_body, signed_headers, slash_command_body

TOKEN = "xoxb-test"
SECRET = "ack-first-secret"
STALL = 30.0  # longer than anything here waits: the fake is released at the end
SLOW = "/response/slow-"
_ids = itertools.count(1)

on_sqlite = pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)  # the transport only


@dataclass
class Served:
    slack: FakeSlack
    server: RunningServer
    link: SlackLink
    pool: ReplyPool

    def post(self, body: str) -> tuple[int, bytes, float]:
        """POST a signed body; the status, the body and the seconds to the answer."""
        started = time.monotonic()
        status, raw = local_request(
            self.server.port, "POST", "/slack/events", body.encode(), signed_headers(SECRET, body)
        )
        return status, raw, time.monotonic() - started

    def command(self, text: str, path: str, user: str = "U123") -> tuple[int, float]:
        url = f"http://127.0.0.1:{self.slack.port}{path}"
        status, _, seconds = self.post(slash_command_body(text, user_id=user, response_url=url))
        return status, seconds

    def home_opened(self, user: str) -> tuple[int, float]:
        event = {"type": "app_home_opened", "user": user, "channel": "D1", "tab": "home"}
        status, _, seconds = self.post(event_body(event))
        return status, seconds


@contextmanager
def served(
    services: Services, slack: FakeSlack, pool: ReplyPool, api_url: str | None = None
) -> Iterator[Served]:
    """The app over HTTP, its Web API at `api_url` (default: the fake's)."""
    api_url = api_url or slack.api_url
    settings = services.settings.model_copy(update={"slack_api_url": api_url})
    client = build_web_client(settings, token=TOKEN)
    link = SlackLink(WebClient(token=TOKEN, base_url=api_url), recheck_interval=0)
    assert link.check() == OK
    app = build_app(
        services,
        client,
        signing_secret=SECRET,
        socket_mode=False,
        link=link,
        pool=pool,
        reply_timeout=1,
    )
    running = serve_in_thread(
        make_wsgi_app(app, HealthCheck(services.store, client, link), signing_secret=SECRET)
    )
    try:
        yield Served(slack, running, link, pool)
    finally:
        slack.release()
        running.stop()
        pool.shutdown()


def _said(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if text in r.getMessage()]


@on_sqlite
def test_a_command_is_acknowledged_while_another_reply_hangs(
    services: Services, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    slack.stall(SLOW, STALL)
    with served(services, slack, ReplyPool(workers=1, queue=8)) as bot:
        stalled = f"{SLOW}{next(_ids)}"
        status, seconds = bot.command("help", stalled)
        assert status == 200 and seconds < 1
        slack.wait_for(stalled, timeout=5)  # recorded on arrival, still unanswered
        # The only reply thread hangs on that response_url; the next command is acked now.
        status, seconds = bot.command("help", "/response/next", user="U456")
        assert status == 200 and seconds < 1
        assert not slack.calls_for("/response/next"), "acked before any reply was sent"
        reply = slack.wait_for("/response/next", timeout=5)[-1].params
        assert "/prdigest" in reply["text"]
        time.sleep(0.5)  # time enough for a second try, which must not come
        assert len(slack.stalled(SLOW)) == 1, "a failed reply is not sent again"
        assert bot.link.status == OK
        assert local_request(bot.server.port, "GET", "/healthz")[0] == 200
    failed = _said(caplog, "response_url")
    assert len(failed) == 1, [r.getMessage() for r in failed]
    assert failed[0].levelno == logging.WARNING
    assert "timed out after 1 s" in failed[0].getMessage()
    assert "/response/" not in failed[0].getMessage(), "the URL itself is never logged"
    assert not _said(caplog, "Slack is unreachable")
    assert not _said(caplog, "answers again")
    assert not [r for r in caplog.records if r.exc_info], "no traceback"


@on_sqlite
def test_a_hung_web_api_call_holds_no_acknowledgement_and_is_no_outage(
    services: Services, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    slack.stall("views.publish", STALL)
    with served(services, slack, ReplyPool(workers=1, queue=8)) as bot:
        status, seconds = bot.home_opened("U0HOME")
        assert status == 200 and seconds < 1
        slack.wait_for("views.publish", timeout=5)
        status, seconds = bot.command("help", "/response/after-home")
        assert status == 200 and seconds < 1
        assert "/prdigest" in slack.wait_for("/response/after-home", timeout=5)[-1].params["text"]
        # The link asked auth.test after the failed call: Slack answers, so no outage.
        deadline = time.monotonic() + 5
        while slack.count("auth.test") < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert slack.count("auth.test") == 2
        assert bot.link.status == OK
        assert local_request(bot.server.port, "GET", "/healthz")[0] == 200
    assert len(slack.stalled("views.publish")) == 1, "the publish is not tried again"
    assert len(_said(caplog, "Web API call for a request got no answer (timed out)")) == 1
    assert not _said(caplog, "Slack is unreachable")
    assert not [r for r in caplog.records if r.exc_info], "no traceback"


@on_sqlite
def test_a_web_api_call_that_finds_slack_down_marks_the_outage_once(
    services: Services, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """When auth.test gets no answer either, the failed call was an outage: said once, and
    `/healthz` answers 503; a command is still acknowledged and answered meanwhile."""
    caplog.set_level(logging.INFO)
    with (
        Link(slack.port) as cable,
        served(services, slack, ReplyPool(workers=2, queue=8), cable.url) as bot,
    ):
        cable.cut()
        for user in ("U0HOME1", "U0HOME2"):
            status, seconds = bot.home_opened(user)
            assert status == 200 and seconds < 1
        deadline = time.monotonic() + 5
        while bot.link.status == OK and time.monotonic() < deadline:
            time.sleep(0.05)
        assert bot.link.status == "unreachable"
        assert local_request(bot.server.port, "GET", "/healthz")[0] == 503
        status, seconds = bot.command("help", "/response/during-outage")
        assert status == 200 and seconds < 1
        reply = slack.wait_for("/response/during-outage", timeout=5)[-1].params
        assert "/prdigest" in reply["text"]
    outage = _said(caplog, "Slack is unreachable")
    assert len(outage) == 1 and "connection refused" in outage[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info], "no traceback"


@on_sqlite
def test_a_full_pool_drops_work_with_one_warning_and_keeps_acknowledging(
    services: Services, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    slack.stall(SLOW, STALL)
    with served(services, slack, ReplyPool(workers=1, queue=1)) as bot:
        for _ in range(4):  # one runs, one waits, two find no room
            status, seconds = bot.command("help", f"{SLOW}{next(_ids)}")
            assert status == 200 and seconds < 1
        assert bot.pool.dropped_total == 2
        assert len(_said(caplog, "reply pool is full")) == 1
        # The running and the waiting reply each time out after 1 s; then there is room.
        time.sleep(2.5)
        status, _ = bot.command("help", "/response/after-drop")
        assert status == 200
        assert "/prdigest" in slack.wait_for("/response/after-drop", timeout=5)[-1].params["text"]
    slack.wait_stalled(SLOW, n=2, timeout=5)
    assert len(slack.stalled(SLOW)) == 2, "dropped work never reached Slack"
    again = _said(caplog, "room again")
    assert len(again) == 1 and "2 requests" in again[0].getMessage()


@on_sqlite
def test_a_reply_that_slack_refuses_is_logged_once_and_not_retried(
    services: Services, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack answers a response_url that expired with an error status: said once, and the
    error handler does not answer a second time through the same URL."""
    caplog.set_level(logging.INFO)
    path = "/response/refused"
    slack.expired_response_urls.add(path)
    with served(services, slack, ReplyPool(workers=2, queue=8)) as bot:
        status, seconds = bot.command("help", path)
        assert status == 200 and seconds < 1
        slack.wait_for(path, timeout=5)
        time.sleep(0.5)
    assert slack.count(path) == 1
    failed = _said(caplog, "response_url")
    assert len(failed) == 1 and "HTTP 404" in failed[0].getMessage()
    assert not _said(caplog, "listener failed")


def test_a_listener_asking_for_what_bolt_never_passes_is_refused() -> None:
    """Bolt passes arguments by name and gives a name it does not know None: a misspelt one
    fails at registration, not on the first request."""
    app = App(signing_secret="s", token="xoxb-x", token_verification_enabled=False)
    listeners = AckFirst(app, lambda *_: None)

    def misspelt(ack: Ack, bdy: dict[str, object]) -> None:
        ack()

    with pytest.raises(ValueError, match="misspelt asks for bdy"):
        listeners.action("misspelt")(misspelt)

    def spelt(ack: Ack, body: dict[str, object], respond: object, context: object) -> None:
        ack()

    assert listeners.action("spelt")(spelt) is spelt
