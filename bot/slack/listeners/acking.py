"""Acknowledge first: the request's own thread only acknowledges; the work runs afterwards.

Slack wants every request acknowledged within 3 s. Every listener is registered through
`AckFirst`, as one of Bolt's lazy listeners (`app.command(...)(ack=..., lazy=[...])`, with
the app built with `process_before_response`): the acknowledging function answers in the
thread that received the request, and the listener itself runs afterwards on the reply pool
(`bot.slack.app`), so a reply that hangs never delays anyone's acknowledgement. Listener
modules are handed an `AckFirst`, never the app, so there is no other way to register one.

What either function raises goes to the app's one error handler: an acknowledging function
that fails still acknowledges (Slack would otherwise report the request as failed), and a
lazy one's failure, which Bolt only logs, is answered like any other.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

from slack_bolt import Ack, App, Args, Respond
from slack_sdk import WebClient

Listener = TypeVar("Listener", bound=Callable[..., None])
FailureHandler = Callable[[Exception, dict[str, Any], Respond | None, WebClient], None]
Register = Callable[..., Any]

# The arguments Bolt hands a listener by name, as its `Args` documents them.
BOLT_ARGUMENTS = frozenset(inspect.get_annotations(Args))


def acknowledge(ack: Ack) -> None:
    """An empty acknowledgement, before any work."""
    ack()


class AckFirst:
    """Registers listeners on `app` the one way this app allows: `ack` (by default an empty
    acknowledgement) in the request's thread, the decorated function afterwards; failures
    of either go to `on_failure`.

        @listeners.action("prdigest_more")
        def on_more(ack, body, respond): ...
    """

    def __init__(self, app: App, on_failure: FailureHandler) -> None:
        self.app = app
        self.on_failure = on_failure

    def command(
        self, name: str, *, ack: Callable[..., None] = acknowledge
    ) -> Callable[[Listener], Listener]:
        return self._register(self.app.command(name), ack)

    def action(
        self, action_id: str | re.Pattern[str], *, ack: Callable[..., None] = acknowledge
    ) -> Callable[[Listener], Listener]:
        return self._register(self.app.action(action_id), ack)

    def view(
        self, callback_id: str, *, ack: Callable[..., None] = acknowledge
    ) -> Callable[[Listener], Listener]:
        return self._register(self.app.view(callback_id), ack)

    def event(self, event_type: str) -> Callable[[Listener], Listener]:
        return self._register(self.app.event(event_type), acknowledge)

    def _register(
        self, register: Register, ack: Callable[..., None]
    ) -> Callable[[Listener], Listener]:
        acknowledging = answering(ack, self.on_failure, acknowledges=True)

        def decorate(function: Listener) -> Listener:
            register(ack=acknowledging, lazy=[answering(function, self.on_failure)])
            return function

        return decorate


def answering(
    function: Callable[..., None], on_failure: FailureHandler, *, acknowledges: bool = False
) -> Callable[[Args], None]:
    """`function` as Bolt calls a listener, with the arguments it names taken from Bolt's
    `args`, and whatever it raises handed to `on_failure`.

    An acknowledging function that raises is acknowledged for it. A lazy one gets a fresh
    `ack`: the request's was answered already, and calling it again would race with the
    answer being sent."""
    names = list(inspect.signature(function).parameters)
    unknown = sorted(set(names) - BOLT_ARGUMENTS)
    name = getattr(function, "__name__", "listener")
    if unknown:
        raise ValueError(f"{name} asks for {', '.join(unknown)}: Bolt passes no such argument")

    def run(args: Args) -> None:
        kwargs = {n: getattr(args, n) for n in names}
        if not acknowledges and "ack" in kwargs:
            kwargs["ack"] = Ack()  # type: ignore[no-untyped-call]
        try:
            function(**kwargs)
        except Exception as error:
            if acknowledges and args.ack.response is None:
                args.ack()
            on_failure(error, args.body, args.respond, args.client)

    run.__name__ = run.__qualname__ = name
    return run
