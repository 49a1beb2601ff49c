"""Acknowledge first: the request's own thread only acknowledges; the work runs afterwards.

Slack wants every request acknowledged within 3 s. A listener registered with `ack_first`
is one of Bolt's lazy listeners: `acknowledge` answers in the thread that received the
request, and the function itself runs afterwards on the reply pool (`bot.slack.app`), so a
reply that hangs never delays anyone's acknowledgement. The function may still call
`ack()`; by then it is a no-op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from slack_bolt import Ack

Listener = TypeVar("Listener", bound=Callable[..., None])


def acknowledge(ack: Ack) -> None:
    """An empty acknowledgement, before any work."""
    ack()


def ack_first(register: Callable[..., Any]) -> Callable[[Listener], Listener]:
    """`@ack_first(app.action(...))`: acknowledge at once, run the function afterwards."""

    def decorate(function: Listener) -> Listener:
        register(ack=acknowledge, lazy=[function])
        return function

    return decorate
