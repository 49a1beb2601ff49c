"""`Metrics` kept with prometheus_client and rendered as Prometheus text for `GET /metrics`.

    prdigest_commands_total{kind}                    counter
    prdigest_command_seconds{kind}                   histogram: command received to reply sent
    prdigest_slack_api_calls_total{method,outcome}   counter: every Web API request, retries too
    prdigest_slack_rate_limited_total{method}        counter: HTTP 429 answers
    prdigest_digests_posted_total                    counter: digest runs delivered completely
    prdigest_dms_sent_total                          counter: subscriber DMs Slack accepted
    prdigest_notes_ingested_total{outcome}           counter: new, updated, unchanged, failed
    prdigest_llm_requests_total{outcome}             counter: requests to the model server
    prdigest_llm_request_seconds                     histogram: one request to its answer
    prdigest_notes_stored                            gauge, read at scrape
    prdigest_last_digest_timestamp_seconds           gauge, read at scrape: Unix time the
                                                     newest digest finished (0: none yet)

The two gauges are read from the database when scraped (`measure_at_scrape`), not counted
here, so they are right after a restart and agree across replicas.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.registry import Collector

from bot.metrics import INGEST_OUTCOMES
from bot.store import Store
from bot.store.ledger import Ledger

log = logging.getLogger(__name__)

CONTENT_TYPE = CONTENT_TYPE_LATEST
# Slack wants the ack within 3 s; the buckets resolve the range that matters.
COMMAND_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
# A note's reading takes from a fraction of a second to PRDIGEST_LLM_TIMEOUT (30 s).
LLM_BUCKETS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class _ScrapeTimeGauges(Collector):
    """Gauges computed when scraped; a failing reader leaves its gauge out of that scrape."""

    def __init__(self) -> None:
        self.readers: dict[str, tuple[str, Callable[[], float | None]]] = {}

    def collect(self) -> Iterable[Metric]:
        for name, (doc, read) in list(self.readers.items()):
            try:
                value = read()
            except Exception as exc:  # the database may be down; /metrics still answers
                # Not a warning: scrapes come every few seconds, and the outage is logged
                # once by whoever meets it; the missing gauge says the rest.
                log.debug("metric %s not available: %s", name, exc)
                continue
            yield GaugeMetricFamily(name, doc, value=0.0 if value is None else float(value))


class PrometheusMetrics:
    """`bot.metrics.Metrics` in a private registry (one per instance, nothing global)."""

    content_type = CONTENT_TYPE

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        reg = self.registry
        self._commands = Counter(
            "prdigest_commands", "/prdigest commands answered, by kind.", ["kind"], registry=reg
        )
        self._command_seconds = Histogram(
            "prdigest_command_seconds",
            "Time from receiving a /prdigest command to sending its reply.",
            ["kind"],
            buckets=COMMAND_BUCKETS,
            registry=reg,
        )
        self._slack_calls = Counter(
            "prdigest_slack_api_calls",
            "Slack Web API requests (each retry counts), by method and outcome.",
            ["method", "outcome"],
            registry=reg,
        )
        self._rate_limited = Counter(
            "prdigest_slack_rate_limited",
            "HTTP 429 answers from the Slack Web API, by method.",
            ["method"],
            registry=reg,
        )
        self._digests = Counter(
            "prdigest_digests_posted", "Digest runs delivered completely.", registry=reg
        )
        self._dms = Counter("prdigest_dms_sent", "Subscriber DMs Slack accepted.", registry=reg)
        self._ingested = Counter(
            "prdigest_notes_ingested", "Notes ingested, by outcome.", ["outcome"], registry=reg
        )
        for outcome in INGEST_OUTCOMES:
            self._ingested.labels(outcome)
        self._llm_requests = Counter(
            "prdigest_llm_requests",
            "Requests to the model server (PRDIGEST_LLM_URL), by outcome.",
            ["outcome"],
            registry=reg,
        )
        self._llm_seconds = Histogram(
            "prdigest_llm_request_seconds",
            "Time from sending a note to the model server to its answer.",
            buckets=LLM_BUCKETS,
            registry=reg,
        )
        self._gauges = _ScrapeTimeGauges()
        reg.register(self._gauges)

    # The Metrics interface.

    def command_handled(self, kind: str, seconds: float) -> None:
        self._commands.labels(kind).inc()
        self._command_seconds.labels(kind).observe(max(0.0, seconds))

    def slack_call(self, method: str, outcome: str) -> None:
        self._slack_calls.labels(method, outcome).inc()

    def rate_limited(self, method: str) -> None:
        self._rate_limited.labels(method).inc()

    def digest_posted(self) -> None:
        self._digests.inc()

    def dm_sent(self, count: int = 1) -> None:
        if count > 0:
            self._dms.inc(count)

    def notes_ingested(self, outcome: str, count: int) -> None:
        if count > 0:
            self._ingested.labels(outcome).inc(count)

    def llm_request(self, outcome: str, seconds: float) -> None:
        self._llm_requests.labels(outcome).inc()
        self._llm_seconds.observe(max(0.0, seconds))

    # Set-up and exposition.

    def measure_at_scrape(
        self,
        *,
        notes_stored: Callable[[], float | None],
        last_digest_timestamp: Callable[[], float | None],
    ) -> None:
        """Readers for the two gauges computed at each scrape (from the store)."""
        self._gauges.readers["prdigest_notes_stored"] = ("Notes in the store.", notes_stored)
        self._gauges.readers["prdigest_last_digest_timestamp_seconds"] = (
            "Unix time the newest digest run finished (0: none yet).",
            last_digest_timestamp,
        )

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


def measure_store(metrics: PrometheusMetrics, store: Store, channel: str | None) -> None:
    """Read the stored notes and the newest digest (to `channel`) at each scrape."""
    ledger = Ledger(store.engine)

    def last_digest() -> float | None:
        finished = ledger.last_digest_finished(channel)
        return None if finished is None else finished.timestamp()

    metrics.measure_at_scrape(notes_stored=store.count_notes, last_digest_timestamp=last_digest)
