"""Operations metrics: the one small interface the use cases report through.

Use cases never import the metrics library. They call methods of the `Metrics` object on
`Services.metrics`; every method is cheap, thread-safe and never raises:

    metrics.command_handled(kind, seconds)  # a /prdigest command answered (kind: help, lookup…)
    metrics.slack_call(method, outcome)     # one Web API request: "ok", Slack's error code,
                                            # "ratelimited" (HTTP 429), "http_503", "unreachable"
    metrics.rate_limited(method)            # one HTTP 429 met (each retry counts)
    metrics.digest_posted()                 # one digest run delivered completely
    metrics.dm_sent(count=1)                # subscriber DMs Slack accepted
    metrics.notes_ingested(outcome, count)  # outcome: new, updated, unchanged; failed
                                            # counts note files that did not parse
    metrics.llm_request(outcome, seconds)   # one request to the model server: "ok",
                                            # "invalid" (an answer that is not a
                                            # reading), "implausible" (a reading that
                                            # cannot be the note's), "timeout",
                                            # "unreachable", "http_500", "error"
                                            # (anything else the client met)

`NullMetrics` records nothing (the default: one-shot CLI commands). `bot.ops.prometheus`
implements it with prometheus_client for `GET /metrics` (imported only by `serve`: the
library takes longer to import than a short command takes to run).
"""

from __future__ import annotations

from typing import Protocol

INGEST_OUTCOMES = ("new", "updated", "unchanged", "failed")


class Metrics(Protocol):
    """What the use cases report (see the module docstring)."""

    def command_handled(self, kind: str, seconds: float) -> None: ...

    def slack_call(self, method: str, outcome: str) -> None: ...

    def rate_limited(self, method: str) -> None: ...

    def digest_posted(self) -> None: ...

    def dm_sent(self, count: int = 1) -> None: ...

    def notes_ingested(self, outcome: str, count: int) -> None: ...

    def llm_request(self, outcome: str, seconds: float) -> None: ...


class NullMetrics:
    """Records nothing."""

    def command_handled(self, kind: str, seconds: float) -> None:
        pass

    def slack_call(self, method: str, outcome: str) -> None:
        pass

    def rate_limited(self, method: str) -> None:
        pass

    def digest_posted(self) -> None:
        pass

    def dm_sent(self, count: int = 1) -> None:
        pass

    def notes_ingested(self, outcome: str, count: int) -> None:
        pass

    def llm_request(self, outcome: str, seconds: float) -> None:
        pass
