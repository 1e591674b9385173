"""Prometheus metrics: requests by route template and status, a latency histogram, in-flight,
requests of the busiest sites (``kernel.metrics.site_counts``), the per-site caches' hits, misses,
evictions, invalidations and sizes, the shared cache's hits and misses, job failures, and the
room left on the volumes svc writes files to.

Each app has its own ``CollectorRegistry`` (no global state). Under ``svc serve --workers N``
the registry adds up every worker of the node (``kernel.metrics.node``).
"""

from __future__ import annotations

import time
from collections import Counter as Counter_
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from kernel.metrics.node import NodeInfoCollector, ProcessFigures, node_name
from kernel.metrics.site_counts import TopSites, TopSitesCollector
from kernel.storage.local import volume_room

if TYPE_CHECKING:
    from kernel.core.context import Kernel

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class SiteCacheCollector:
    """Reads the site caches' plain counters at scrape time, so a cache hit costs an integer
    increment, not a Prometheus counter call."""

    COUNTERS = (("hits", "Lookups answered from the cache"), ("misses", "Lookups that had to load"),
                ("evictions", "Entries dropped to stay within the bound"),
                ("invalidations", "Entries dropped because their site changed"))

    def __init__(self, caches: Any) -> None:
        self.caches = caches

    def collect(self) -> Any:
        caches = list(self.caches)
        for attr, doc in self.COUNTERS:
            family = CounterMetricFamily(f"svc_site_cache_{attr}", doc, labels=["cache"])
            for cache in caches:
                family.add_metric([cache.name], getattr(cache, attr))
            yield family
        entries = GaugeMetricFamily("svc_site_cache_entries", "Entries held now", labels=["cache"])
        bound = GaugeMetricFamily("svc_site_cache_max_entries", "The bound (SVC_SITE_CACHE_SIZES)",
                                  labels=["cache"])
        for cache in caches:
            entries.add_metric([cache.name], len(cache))
            bound.add_metric([cache.name], cache.max_entries)
        yield entries
        yield bound


class SharedCacheCollector:
    """Hits and misses of the shared cache (``kernel.cache``: in-process or Redis), counted by
    the backend as plain integers."""

    def __init__(self, cache: Any) -> None:
        self.cache = cache

    def collect(self) -> Any:
        for attr, doc in (("hits", "Shared-cache reads that found a value"),
                          ("misses", "Shared-cache reads that found nothing")):
            family = CounterMetricFamily(f"svc_cache_{attr}", doc, labels=["cache"])
            family.add_metric(["shared"], getattr(self.cache, attr, 0))
            yield family


class JobFailuresCollector:
    """``svc_job_failures_total{job, outcome}``: runs of a job that raised or timed out in this
    process, ``retry`` when another attempt follows, ``failed`` when none does."""

    def __init__(self, failures: Counter_) -> None:
        self.failures = failures

    def collect(self) -> Any:
        family = CounterMetricFamily("svc_job_failures", "Job runs that failed in this process, by job and outcome",
                                     labels=["job", "outcome"])
        for (job, outcome), count in sorted(self.failures.items()):
            family.add_metric([job, outcome], count)
        yield family


class StorageRoomCollector:
    """``svc_storage_free_bytes`` and ``svc_storage_size_bytes`` at scrape time, per volume:
    ``files`` (local file storage; none on S3) and ``data`` (the data dir: upload staging, and
    the SQLite database when there is no ``SVC_DATABASE_URL``). A full volume refuses uploads
    with 507 ``INSUFFICIENT_STORAGE`` (docs/operations.md)."""

    def __init__(self, volumes: dict[str, Any]) -> None:
        self.volumes = volumes  # name -> a callable answering (free, total) or None

    def collect(self) -> Any:
        free = GaugeMetricFamily("svc_storage_free_bytes", "Bytes an unprivileged writer may still write",
                                 labels=["volume"])
        size = GaugeMetricFamily("svc_storage_size_bytes", "Size of the volume", labels=["volume"])
        for name, read in self.volumes.items():
            room = read()
            if room is not None:
                free.add_metric([name], room[0])
                size.add_metric([name], room[1])
        yield free
        yield size


class Metrics:
    """The app's registry. ``multiproc_dir`` (``svc serve --workers N``): the registry reads every
    worker's metric files, and the per-process collectors are copied into them
    (``kernel.metrics.node``); ``node`` names the node in ``svc_node_info``."""

    def __init__(self, site_caches: Any = None, top_sites: int = 0,
                 volumes: dict[str, Any] | None = None, multiproc_dir: str = "", node: str = "") -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.shared: ProcessFigures | None = None
        owner: CollectorRegistry | None = self.registry
        if multiproc_dir:
            MultiProcessCollector(self.registry, path=multiproc_dir)
            self.shared = ProcessFigures()
            owner = None  # the metrics below live in this worker's files, read by the collector above
        if node:
            self.registry.register(NodeInfoCollector(node))
        self.top_sites = TopSites(top_sites)
        self.register_per_process(TopSitesCollector(self.top_sites))
        self.requests = Counter("svc_http_requests_total", "HTTP requests answered",
                                ["method", "route", "status"], registry=owner)
        self.latency = Histogram("svc_http_request_duration_seconds", "Time to answer a request",
                                 ["method", "route"], buckets=BUCKETS, registry=owner)
        self.in_flight = Gauge("svc_http_requests_in_flight", "Requests being answered",
                               registry=owner, multiprocess_mode="livesum")
        if site_caches is not None:
            self.register_per_process(SiteCacheCollector(site_caches))
        if volumes:
            self.registry.register(StorageRoomCollector(volumes))  # the node's volumes: any worker reads them
        # The labelled children per (method, route, status): ``labels()`` validates and locks on
        # every call; the labels are bounded (route templates), so the children are kept here.
        self._series: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def register_per_process(self, collector: Any) -> None:
        """A collector of this process's own figures: on the registry with one process, copied
        into this worker's metric files with several."""
        if self.shared is not None:
            self.shared.add(collector)
        else:
            self.registry.register(collector)

    def before_scrape(self) -> None:
        """Copy this worker's own figures first, so the scrape it answers has them fresh."""
        if self.shared is not None:
            self.shared.copy()

    def observe(self, method: str, route: str, status: str, seconds: float) -> None:
        """One answered request: its count and its latency."""
        series = self._series.get((method, route, status))
        if series is None:
            series = self._series[(method, route, status)] = (
                self.requests.labels(method, route, status), self.latency.labels(method, route))
        series[0].inc()
        series[1].observe(seconds)


class MetricsMiddleware:
    """Counts every request under its route template (never the raw path: bounded labels)."""

    def __init__(self, kernel: Kernel) -> None:
        storage, data = getattr(kernel, "storage", None), kernel.settings.data_path
        volumes = {"data": lambda: volume_room(data)}
        if storage is not None and storage.room() is not None:
            volumes["files"] = storage.room
        settings = kernel.settings
        self.metrics = Metrics(kernel.site_caches, int(settings.metrics_top_sites), volumes,
                               multiproc_dir=settings.get("prometheus_multiproc_dir") or "",
                               node=node_name(settings))
        self.metrics.register_per_process(SharedCacheCollector(kernel.cache))
        self.metrics.register_per_process(JobFailuresCollector(kernel.state.setdefault("job_failures", Counter_())))
        kernel.state["metrics"] = self.metrics

    async def process_request(self, req: Any, resp: Any) -> None:
        req.context.metrics_start = time.perf_counter()
        self.metrics.in_flight.inc()

    async def process_response(self, req: Any, resp: Any, resource: Any, req_succeeded: bool) -> None:
        start = getattr(req.context, "metrics_start", None)
        if start is None:
            return
        self.metrics.in_flight.dec()
        route = req.uri_template if resource is not None and req.uri_template else "unmatched"
        status = str(resp.status)[:3] if not isinstance(resp.status, int) else str(resp.status)
        self.metrics.observe(req.method, route, status, time.perf_counter() - start)
        ctx = getattr(req.context, "svc", None)
        site_id = getattr(ctx, "site_id", None)
        if site_id is not None:
            self.metrics.top_sites.record(site_id)
