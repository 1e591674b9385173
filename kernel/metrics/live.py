"""Live-channel figures on ``/metrics``: topic subscribers and losses, WebSocket handshakes, the
live connections open now (``live_connection``: WebSockets, event streams), and whether each
Redis-backed part is on Redis or on its per-process fallback (``kernel.redisio.redis_fallback``).

Read at scrape time from ``kernel.topics.stats`` and the WebSocket gate's counters, so the
hot paths only bump plain integers.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from kernel.core.context import Kernel


LIVE_KINDS = ("websocket", "sse")


@contextlib.contextmanager
def live_connection(kernel: Any, kind: str) -> Iterator[None]:
    """Count one open live connection of ``kind`` (``websocket``, ``sse``) while the block runs:
    ``svc_live_connections{kind}``."""
    state = getattr(kernel, "state", None)
    counts: Counter[str] | None = state.setdefault("live_connections", Counter()) if state is not None else None
    if counts is not None:
        counts[kind] += 1
    try:
        yield
    finally:
        if counts is not None:
            counts[kind] -= 1


class LiveCollector:
    """A prometheus collector over the kernel's topics and WebSocket counters."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def collect(self) -> Iterator[Any]:
        topics = self.kernel.topics
        stats = topics.stats
        yield GaugeMetricFamily("svc_topic_subscribers", "Open live-topic subscriptions in this process",
                                value=topics.subscriber_count)
        for name, value, doc in (
            ("svc_topic_messages_published", stats.published, "Messages published to live topics"),
            ("svc_topic_messages_delivered", stats.delivered, "Messages queued for local subscribers"),
            ("svc_topic_messages_lagged", stats.lagged, "Messages a slow subscriber missed (reported as Lagged)"),
            ("svc_topic_subscribers_dropped", stats.dropped_subscribers, "Subscriptions ended for falling behind"),
            ("svc_topic_publish_failures", stats.publish_failures, "Messages Redis did not take"),
            ("svc_topic_redis_reconnects", stats.reconnects, "Reconnections of the Redis topic listener"),
        ):
            yield CounterMetricFamily(name, doc, value=value)
        handshakes = CounterMetricFamily("svc_websocket_outcomes", "WebSockets accepted, and closed by error (by close code)",
                                         labels=["outcome"])
        for outcome, count in sorted(self.kernel.state.get("ws_stats", {}).items()):
            handshakes.add_metric([outcome], count)
        yield handshakes
        open_now = GaugeMetricFamily("svc_live_connections", "Live connections open in this process, by kind",
                                     labels=["kind"])
        counts = self.kernel.state.get("live_connections", {})
        for kind in sorted({*LIVE_KINDS, *counts}):
            open_now.add_metric([kind], counts.get(kind, 0))
        yield open_now
        if self.kernel.settings.redis_url:
            yield from self._redis_parts()

    def _redis_parts(self) -> Iterator[Any]:
        from kernel.redisio.redis_fallback import circuits_of, outages_of

        up = GaugeMetricFamily("svc_redis_up", "1 while the part uses Redis, 0 while it falls back to this process",
                               labels=["component"])
        served = CounterMetricFamily("svc_redis_fallbacks", "Operations served by the per-process fallback "
                                     "(or fan-outs skipped) while Redis did not answer", labels=["component"])
        failed = CounterMetricFamily("svc_redis_failures", "Calls of the part that Redis did not answer "
                                     "(timed out, refused): each cost up to SVC_REDIS_TIMEOUT", labels=["component"])
        for outage in outages_of(self.kernel):
            up.add_metric([outage.component], 1 if outage.up else 0)
            served.add_metric([outage.component], outage.fallbacks)
            failed.add_metric([outage.component], outage.failures)
        # The pub/sub listeners: down means messages of other processes do not reach this one.
        up.add_metric(["bus listener"], 1 if self.kernel.bus.redis_connected else 0)
        up.add_metric(["topics listener"], 1 if self.kernel.topics.redis_connected else 0)
        yield up
        yield served
        yield failed
        # The state the parts share (kernel.redisio.redis_fallback.RedisCircuit): one per Redis server.
        circuits = circuits_of(self.kernel)
        yield CounterMetricFamily("svc_redis_outages", "Times this process found Redis unreachable "
                                  "(every part fell back at once)", value=sum(c.outages for c in circuits))
        yield CounterMetricFamily("svc_redis_probes", "Calls let through to Redis while it was unreachable "
                                  "(one per second, from whichever part came first)",
                                  value=sum(c.probes for c in circuits))


def register_live_metrics(kernel: Kernel) -> None:
    """Add the collector to the app's registry (made by the metrics middleware)."""
    metrics = kernel.state.get("metrics")
    if metrics is not None and kernel.topics is not None:
        register = getattr(metrics, "register_per_process", metrics.registry.register)
        register(LiveCollector(kernel))
