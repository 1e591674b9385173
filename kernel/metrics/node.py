"""``/metrics`` for a whole node: every worker of ``svc serve --workers N``, and which node it is.

``svc serve --workers N`` (N > 1) gives its workers prometheus_client's multiprocess mode: the
parent empties ``<data dir>/prometheus-multiproc`` at each start and passes it on as
``PROMETHEUS_MULTIPROC_DIR``; prometheus_client then keeps every ``Counter``, ``Gauge`` and
``Histogram`` of a worker in a memory-mapped file of that directory, and a scrape, answered by
any worker, reads every worker's files (``MultiProcessCollector``). A worker that dies keeps its
counters (they still happened); the parent drops its live gauges (``mark_process_dead``).

The kernel's request counter, latency histogram and in-flight gauge are such metrics, so they
are exact at every scrape. The other per-process figures are read at scrape time from plain
integers (the caches, topics, live connections, busiest sites, job failures) to keep the hot
paths cheap; ``ProcessFigures`` copies them into the metric files of their worker: on every
scrape the worker answers, and every ``SVC_METRICS_REFRESH_SECONDS`` in every worker. So a scrape
shows the answering worker's figures as they are, and the others' as of their last copy.

One process (``svc serve``, tests, ``svc worker``) keeps one registry as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import Counter, Gauge
from prometheus_client.core import InfoMetricFamily

log = logging.getLogger("svc.metrics")

MULTIPROC_DIRNAME = "prometheus-multiproc"


def prepare_multiproc_dir(data_path: Path) -> Path:
    """``<data dir>/prometheus-multiproc``, emptied: the metric files of this start's workers
    (files of an earlier start would add a dead run's counts to this one's)."""
    path = data_path / MULTIPROC_DIRNAME
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    return path


def forget_dead_worker(path: str | Path, pid: int) -> None:
    """Drop a dead worker's live gauges (in-flight requests, connections); its counters stay."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, str(path))


def node_name(settings: Any) -> str:
    """``SVC_NODE_ID``, or the host name."""
    return str(settings.get("node_id") or "") or socket.gethostname()


class NodeInfoCollector:
    """``svc_node_info{node, hostname} 1``: which node answered the scrape."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.hostname = socket.gethostname()

    def collect(self) -> Iterator[Any]:
        yield InfoMetricFamily("svc_node", "The node that answered this scrape (SVC_NODE_ID, or the host name)",
                               value={"node": self.node, "hostname": self.hostname})


def gauge_mode(name: str) -> str:
    """How the workers' values of a copied gauge add up: an ``up`` flag is 1 only if every
    worker's is, a bound is the same everywhere, anything else (entries, open sockets) sums.
    ``live``: a dead worker's value leaves the sum."""
    if name.endswith("_up"):
        return "livemin"
    if name.endswith("_max_entries"):
        return "livemax"
    return "livesum"


class ProcessFigures:
    """Copies per-process collectors into this worker's metric files (multiprocess mode)."""

    def __init__(self) -> None:
        self.collectors: list[Any] = []
        self._metrics: dict[str, Any] = {}  # family name -> Counter or Gauge
        self._counted: dict[tuple[str, tuple[str, ...]], float] = {}  # counter series -> value copied
        self._gauged: dict[str, set[tuple[str, ...]]] = {}  # gauge family -> label values set last time
        self._task: asyncio.Task[None] | None = None

    def add(self, collector: Any) -> None:
        self.collectors.append(collector)

    def metric(self, name: str) -> Any:
        """The Counter or Gauge the family ``name`` is copied into (None before its first copy)."""
        return self._metrics.get(name)

    def copy(self) -> None:
        """Bring this worker's files up to its collectors' values now."""
        for collector in self.collectors:
            for family in collector.collect():
                if family.type == "counter":
                    self._copy_counter(family)
                elif family.type == "gauge":
                    self._copy_gauge(family)

    def _metric(self, family: Any, labelnames: tuple[str, ...], kind: str) -> Any:
        metric = self._metrics.get(family.name)
        if metric is None:
            # registry=None: the metric lives in the files only; MultiProcessCollector reads them.
            if kind == "counter":
                metric = Counter(family.name, family.documentation, labelnames, registry=None)
            else:
                metric = Gauge(family.name, family.documentation, labelnames, registry=None,
                               multiprocess_mode=gauge_mode(family.name))
            self._metrics[family.name] = metric
        return metric

    def _series(self, family: Any, suffix: str = "") -> Iterable[tuple[tuple[str, ...], tuple[str, ...], float]]:
        for sample in family.samples:
            if sample.name == family.name + suffix:
                names = tuple(sample.labels)
                yield names, tuple(sample.labels[n] for n in names), float(sample.value)

    def _copy_counter(self, family: Any) -> None:
        for names, values, value in self._series(family, "_total"):
            key = (family.name, values)
            delta = value - self._counted.get(key, 0.0)
            self._counted[key] = value
            if delta > 0:  # a series that restarted (an evicted busiest site) keeps what it had
                metric = self._metric(family, names, "counter")
                (metric.labels(*values) if names else metric).inc(delta)

    def _copy_gauge(self, family: Any) -> None:
        seen: set[tuple[str, ...]] = set()
        names: tuple[str, ...] = ()
        for names, values, value in self._series(family):
            metric = self._metric(family, names, "gauge")
            (metric.labels(*values) if names else metric).set(value)
            seen.add(values)
        metric = self._metrics.get(family.name)
        for gone in self._gauged.get(family.name, set()) - seen:
            metric.labels(*gone).set(0)  # a series this worker no longer has adds nothing
        self._gauged[family.name] = seen

    def start(self, interval: float) -> None:
        """Copy every ``interval`` seconds on the running loop, so other workers' scrapes see
        this worker's figures that recent."""
        if self._task is None and self.collectors:
            self._task = asyncio.get_running_loop().create_task(self._every(max(0.5, interval)))

    async def _every(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                self.copy()
            except Exception:  # noqa: BLE001 - a figure that cannot be read must not stop the others
                log.exception("metrics: could not copy this worker's figures")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            self.copy()  # the last figures of a worker that stops
