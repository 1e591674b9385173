"""Per-site request counts on ``/metrics`` for the busiest sites only: a space-saving counter.

A label per site would grow the number of series with the number of sites a process ever
served. ``TopSites`` keeps at most ``capacity`` sites (``SVC_METRICS_TOP_SITES``), chosen by the
space-saving algorithm (Metwally, Agrawal and El Abbadi, 2005): a site already kept counts up;
a new site takes a free slot, or else the slot of the kept site with the smallest estimate,
inheriting that estimate as its error. Any site whose real share of requests is above
``1 / capacity`` is certain to be kept, and an estimate is never below the true count by
construction (``estimate - error <= true <= estimate``).

What is exposed is the exact part: the hits a kept site received since it took its slot. The
hits of sites never kept, or since evicted, are ``svc_site_requests_total{site="_other"}``, so
the series always add up to every request with a site, and every series only grows while it
exists (an evicted site's series ends; if it comes back it starts again from its new hits,
which Prometheus reads as a counter reset). ``_other`` cannot be a site id (ids start with a
letter or digit).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily

OTHER = "_other"


class TopSites:
    """Request counts for at most ``capacity`` sites; ``0`` keeps none (everything is ``_other``).

    ``record`` is O(1) for a kept site and O(capacity) when a new site evicts one, so
    ``capacity`` is bounded (1 to 1,000) by the setting.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity!r}")
        self.capacity = capacity
        self.total = 0
        # site -> [estimate, error]; the exact hits since the slot was taken = estimate - error.
        self._slots: dict[str, list[int]] = {}

    def record(self, site_id: str) -> None:
        """Count one request of ``site_id``."""
        self.total += 1
        slot = self._slots.get(site_id)
        if slot is not None:
            slot[0] += 1
            return
        if self.capacity == 0:
            return
        if len(self._slots) < self.capacity:
            self._slots[site_id] = [1, 0]
            return
        victim = min(self._slots, key=lambda s: self._slots[s][0])
        floor = self._slots.pop(victim)[0]
        self._slots[site_id] = [floor + 1, floor]

    def estimate(self, site_id: str) -> tuple[int, int] | None:
        """``(estimate, error)`` of a kept site, None for one not kept."""
        slot = self._slots.get(site_id)
        return None if slot is None else (slot[0], slot[1])

    def counts(self) -> dict[str, int]:
        """The exposed counts: each kept site's hits since it took its slot, and ``_other``."""
        out = {site: est - err for site, (est, err) in self._slots.items()}
        out[OTHER] = self.total - sum(out.values())
        return out


class TopSitesCollector:
    """``svc_site_requests_total{site}`` read at scrape time from a ``TopSites``."""

    def __init__(self, top: TopSites) -> None:
        self.top = top

    def collect(self) -> Iterator[Any]:
        family = CounterMetricFamily(
            "svc_site_requests", "Requests answered for a site: the busiest sites by name, the rest as _other",
            labels=["site"])
        for site, count in sorted(self.top.counts().items()):
            family.add_metric([site], count)
        yield family
