"""Prometheus metrics on an opt-in endpoint (gateway.yaml ``metrics: {enabled: true}``; off by default).

prometheus_client is imported only when metrics are enabled. Each call is counted where its ledger row is
written (``Telemetry.recording``), so tools/call, resources/read, prompts/get, hook and check calls all are:

    gateway_calls_total{kind, outcome}                       every call, by how it ended
    gateway_decisions_total{action, tier, rule}              each rule a decision named (a decision names several)
    gateway_call_duration_seconds{kind, outcome}             histogram: from the request to the ledger row
    gateway_approvals_pending                                tier-3 approvals waiting for a person (the store)
    gateway_merge_queue_depth                                merge intents approved or executing (the store)

The gauges are read from the store when scraped, so they are the same whichever replica or worker answers;
the counters and histograms are this process's (with ``serve --workers N``, scrape each replica, and read
the counters as one worker's share). More gauges join through ``Metrics.gauge`` (the seam budgets will use):

    metrics.gauge("gateway_budget_remaining", "what is left of each budget", read=lambda: budgets.remaining())

Rule and tool names come from the policy and the catalog, never from an agent's text: the label sets
stay bounded (a tool the catalog does not know is counted under kind and outcome only).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.ledger.chain import utc_now

if TYPE_CHECKING:
    from gateway.config import MetricsConfig
    from gateway.judge.call import Call
    from gateway.store import Store

__all__ = ["Metrics", "metrics_routes"]

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0)
# a gauge's reading: one number, or (labels, number) pairs for a labelled gauge
Reading = float | Iterable[tuple[dict[str, str], float]]


class Metrics:
    """This process's counters and histograms, and the gauges read at scrape time."""

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

        disable_created_metrics()  # no *_created series beside each counter: they double a scrape for nothing
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter("gateway_calls", "calls by kind and outcome", ["kind", "outcome"], registry=self.registry)
        self.decisions = Counter(
            "gateway_decisions",
            "rules named by decisions, by action and tier",
            ["action", "tier", "rule"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "gateway_call_duration_seconds",
            "time from a call's arrival to its ledger row",
            ["kind", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._gauges: dict[str, tuple[str, Callable[[], Reading]]] = {}
        self.registry.register(_Gauges(self._gauges))

    def observe(self, call: Call) -> None:
        outcome = call.outcome or ("error" if call.error is not None else "ok")
        self.calls.labels(call.kind, outcome).inc()
        self.latency.labels(call.kind, outcome).observe(max(0.0, time.perf_counter() - call.started))
        decision = call.decision
        if decision is not None:
            for rule in decision.rules or ["(none)"]:
                self.decisions.labels(decision.action, str(decision.tier), rule).inc()

    def gauge(self, name: str, help: str, read: Callable[[], Reading]) -> None:
        """A gauge read when scraped: ``read()`` answers a number, or (labels, number) pairs."""
        self._gauges[name] = (help, read)

    def exposition(self) -> tuple[bytes, str]:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _Gauges:
    """The registered gauges as a prometheus_client collector; a gauge whose read fails is left out."""

    def __init__(self, gauges: dict[str, tuple[str, Callable[[], Reading]]]) -> None:
        self.gauges = gauges

    def describe(self) -> list[Any]:
        return []  # read lazily: describing would read the store when the collector is registered

    def collect(self) -> Iterable[Any]:
        from prometheus_client.core import GaugeMetricFamily

        for name, (help, read) in list(self.gauges.items()):
            try:
                value = read()
            except Exception:  # a store that does not answer: the scrape goes on without this gauge
                continue
            if isinstance(value, int | float):
                family = GaugeMetricFamily(name, help, value=float(value))
            else:
                pairs = list(value)
                family = GaugeMetricFamily(name, help, labels=sorted({k for labels, _ in pairs for k in labels}))
                for labels, number in pairs:
                    family.add_metric([labels.get(k, "") for k in family._labelnames], float(number))
            yield family


def store_gauges(metrics: Metrics, db: Store) -> None:
    """The gauges the store answers: what waits for a person, and what waits to merge."""

    from gateway.store.repositories import metrics as gauges

    metrics.gauge(
        "gateway_approvals_pending",
        "tier-3 approvals waiting for a person, not yet expired",
        lambda: gauges.pending_approvals(db, utc_now()),
    )
    metrics.gauge(
        "gateway_merge_queue_depth",
        "merge intents approved and waiting, or executing",
        lambda: gauges.merge_queue_depth(db),
    )


def metrics_routes(config: MetricsConfig, metrics: Metrics | None, db: Store) -> list[Route]:
    """The scrape endpoint when gateway.yaml enables it (none otherwise)."""
    if not config.enabled or metrics is None:
        return []
    store_gauges(metrics, db)
    expected = f"Bearer {config.token}" if config.token else None

    async def scrape(request: Request) -> Response:
        given = request.headers.get("authorization", "")
        if expected is not None and not hmac.compare_digest(given.encode(), expected.encode()):
            return Response("a scrape needs 'Authorization: Bearer <metrics.token>'\n", 401, media_type="text/plain")
        body, content_type = metrics.exposition()
        return Response(body, 200, media_type=content_type)

    return [Route(config.path, scrape, methods=["GET"])]
