"""``/metrics`` for ``svc worker``: the job worker's own Prometheus endpoint (opt-in).

The API process serves its registry at ``/metrics`` (``kernel.metrics.requests``); a job worker has
no HTTP app, so ``svc worker --metrics-port N`` (or ``SVC_WORKER_METRICS_PORT``) serves one of
its own with prometheus_client's HTTP server, bound to ``SVC_WORKER_METRICS_HOST`` (127.0.0.1
by default: expose it on purpose). It holds what a worker knows:

- ``svc_job_runs_total{job, outcome}`` and ``svc_job_failures_total{job, outcome}``: runs this
  process finished, and the failed ones (as on the API process, which counts its in-process
  consumer's runs).
- ``svc_job_worker_running`` and ``svc_job_worker_slots``: jobs running in this process now,
  and how many it may run at once.
- The database figures every process sees (``kernel.metrics.stored``): queue depths by job
  and state, the oldest due job's wait, the event consumers' lag; read again on the worker's
  loop every ``SVC_METRICS_REFRESH_SECONDS`` (a scrape runs in the server's thread and only
  reads that snapshot).
- ``svc_redis_*`` (up, fallbacks, failures, outages, probes) with Redis, and the shared cache's hits.
- ``svc_node_info{node, hostname}``: the node (``SVC_NODE_ID``, or the host name).

The server answers ``GET /metrics`` (and any path, as prometheus_client does) without a token:
it has no ``SVC_METRICS_TOKEN`` check, which is why it binds to the loopback unless told.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

log = logging.getLogger("kernel.jobs")


class JobRunsCollector:
    """``svc_job_runs_total{job, outcome}``: runs finished in this process, ``succeeded``,
    ``retry`` (failed, another attempt follows), ``failed`` (no attempt left) or ``put_back``
    (met an unavailable database or Redis; back in the queue without spending an attempt)."""

    def __init__(self, runs: Counter[tuple[str, str]]) -> None:
        self.runs = runs

    def collect(self) -> Any:
        family = CounterMetricFamily("svc_job_runs", "Job runs finished in this process, by job and outcome",
                                     labels=["job", "outcome"])
        for (job, outcome), count in sorted(dict(self.runs).items()):  # a copy: the loop's thread adds to it
            family.add_metric([job, outcome], count)
        yield family


class WorkerSlotsCollector:
    """Jobs this process runs now, and its concurrency."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    def collect(self) -> Any:
        worker = getattr(self.kernel.jobs, "_worker", None)
        running = len(worker.running) if worker is not None else 0
        slots = worker.concurrency if worker is not None else 0
        yield GaugeMetricFamily("svc_job_worker_running", "Jobs running in this worker process now", value=running)
        yield GaugeMetricFamily("svc_job_worker_slots", "Jobs this worker process may run at once", value=slots)


class WorkerMetrics:
    """The registry of a job worker process and the HTTP server that exposes it."""

    def __init__(self, kernel: Any) -> None:
        from kernel.metrics.live import register_live_metrics
        from kernel.metrics.node import NodeInfoCollector, node_name
        from kernel.metrics.requests import JobFailuresCollector, SharedCacheCollector
        from kernel.metrics.stored import register_stored_metrics

        self.kernel = kernel
        self.registry = CollectorRegistry(auto_describe=True)
        self.registry.register(JobRunsCollector(kernel.state.setdefault("job_runs", Counter())))
        self.registry.register(JobFailuresCollector(kernel.state.setdefault("job_failures", Counter())))
        self.registry.register(WorkerSlotsCollector(kernel))
        self.registry.register(SharedCacheCollector(kernel.cache))
        self.registry.register(NodeInfoCollector(node_name(kernel.settings)))
        kernel.state["metrics"] = self  # what the collectors below register with
        register_live_metrics(kernel)
        self.figures = register_stored_metrics(kernel)
        self._server: Any = None
        self._thread: Any = None
        self._refresher: asyncio.Task[None] | None = None
        self.port = 0

    async def start(self, host: str, port: int) -> int:
        """Read the database figures once, then serve on ``host:port`` (0: a free port) and keep
        the figures fresh; returns the port."""
        if self.figures is not None:
            await self.figures.refresh()
            self._refresher = asyncio.get_running_loop().create_task(self._refresh_loop())
        self._server, self._thread = start_http_server(port, addr=host, registry=self.registry)
        self.port = int(self._server.server_address[1])
        log.info("job worker metrics on http://%s:%d/metrics", host, self.port)
        return self.port

    async def _refresh_loop(self) -> None:
        assert self.figures is not None
        while True:
            await asyncio.sleep(max(0.5, self.figures.max_age))
            await self.figures.refresh()  # keeps the last snapshot on a database error

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
            self._refresher = None
        if self._server is not None:
            server, self._server = self._server, None
            await asyncio.to_thread(server.shutdown)
            server.server_close()
