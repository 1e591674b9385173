"""``/metrics`` of ``svc serve --workers 2`` adds up both workers and names its node
(kernel/metrics/node.py, issue 36 point 3)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from kernel.metrics.node import ProcessFigures, gauge_mode
from kernel.testing import (
    METRICS_HEADERS,
    METRICS_TOKEN,
    free_port,
    stop_process,
    svc_test_database_url,
    wait_until_answering,
)
from kernel.workers.serve import reuseport_supported

HEALTH = "/api/v1/utils/health"
RETRY = 0.1  # seconds between tries for a worker that has not answered yet


class Figures:
    """A per-process collector as the kernel's are: plain numbers read at collect time."""

    def __init__(self) -> None:
        self.hits = {"sites": 3}
        self.entries = {"sites": 2, "schema": 1}

    def collect(self):
        hits = CounterMetricFamily("t_cache_hits", "hits", labels=["cache"])
        for name, value in self.hits.items():
            hits.add_metric([name], value)
        yield hits
        entries = GaugeMetricFamily("t_cache_entries", "entries", labels=["cache"])
        for name, value in self.entries.items():
            entries.add_metric([name], value)
        yield entries


def copied(figures: ProcessFigures, name: str, sample: str) -> dict[str, float]:
    return {s.labels["cache"]: s.value for family in figures.metric(name).collect()
            for s in family.samples if s.name == sample}


def test_process_figures_copy_counters_by_their_growth_and_gauges_as_they_are():
    source, figures = Figures(), ProcessFigures()
    figures.add(source)
    figures.copy()
    source.hits["sites"] = 5
    figures.copy()
    assert copied(figures, "t_cache_hits", "t_cache_hits_total") == {"sites": 5}
    source.hits["sites"] = 1  # a series that started again (an evicted busiest site) keeps its count
    figures.copy()
    source.hits["sites"] = 4
    figures.copy()
    assert copied(figures, "t_cache_hits", "t_cache_hits_total") == {"sites": 8}
    del source.entries["schema"]  # a series this process no longer has adds nothing to the node
    source.entries["sites"] = 7
    figures.copy()
    assert copied(figures, "t_cache_entries", "t_cache_entries") == {"sites": 7, "schema": 0}
    assert [gauge_mode(n) for n in ("svc_redis_up", "svc_site_cache_max_entries", "svc_topic_subscribers")] == [
        "livemin", "livemax", "livesum"]


def scrape(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)] of a Prometheus text page."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


def health_requests(samples: dict[str, list[tuple[dict[str, str], float]]]) -> float:
    return sum(value for labels, value in samples.get("svc_http_requests_total", [])
               if labels.get("route", "").endswith("/utils/health"))


def pid_and_metrics(base: str) -> tuple[int, str]:
    """The pid of the worker that answers a fresh connection, and that same worker's /metrics
    (one keep-alive connection: the second request goes to the worker that took the first)."""
    with httpx.Client(base_url=base, timeout=10, limits=httpx.Limits(max_connections=1)) as client:
        pid = client.get(HEALTH).json()["data"]["runtime"]["pid"]
        again = client.get(HEALTH).json()["data"]["runtime"]["pid"]
        assert again == pid, "one keep-alive connection was answered by two workers"
        resp = client.get("/metrics", headers=METRICS_HEADERS)
        assert resp.status_code == 200, resp.text
        return pid, resp.text


@pytest.mark.skipif(not reuseport_supported(1, 2), reason="svc serve --workers 2 needs SO_REUSEPORT (Linux)")
@pytest.mark.skipif(bool(svc_test_database_url()), reason="the embedded default: tests/test_nodes.py does PostgreSQL")
def test_metrics_of_either_worker_count_the_requests_of_both(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    data = tmp_path / "data"
    stale = data / "prometheus-multiproc"
    stale.mkdir(parents=True)
    (stale / "counter_99999999.db").write_bytes(b"an earlier start's file")  # emptied at start
    env.update(SVC_DATA_DIR=str(data), SVC_ADMIN_PASSWORD="cli-admin-pass", JWT_SECRET="x" * 40,
               SVC_NODE_ID="node-under-test", SVC_METRICS_TOKEN=METRICS_TOKEN)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port), "--workers", "2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until_answering(proc, base + "/api/v1/utils/version")
        assert not (stale / "counter_99999999.db").exists()
        # Production: the node's metrics go to the scrape token only, never to an anonymous caller.
        anonymous = httpx.get(base + "/metrics", timeout=10)
        assert anonymous.status_code == 401 and anonymous.json()["errors"][0]["code"] == "UNAUTHENTICATED"
        # Fresh connections until both workers have answered (each pid_and_metrics sends two).
        sent, pids = 0, set()
        deadline = time.monotonic() + 60
        while len(pids) < 2:
            assert time.monotonic() < deadline, f"after {sent} requests only workers {pids} answered"
            pid, _ = pid_and_metrics(base)
            if pid in pids:
                time.sleep(RETRY)  # the other worker may still be starting: no busy loop on this one
            pids.add(pid)
            sent += 2
        # Now each worker's /metrics holds at least every health request sent so far, though each
        # worker answered only some of them.
        scraped: dict[int, float] = {}
        deadline = time.monotonic() + 60
        while set(scraped) != pids:
            assert time.monotonic() < deadline, f"scrapes reached only workers {set(scraped)} of {pids}"
            before = sent
            pid, text = pid_and_metrics(base)
            sent += 2
            samples = scrape(text)
            assert health_requests(samples) >= before + 2, (pid, health_requests(samples), before + 2)
            scraped[pid] = health_requests(samples)
            node = [labels for labels, _ in samples.get("svc_node_info", [])]
            assert [n["node"] for n in node] == ["node-under-test"], node
            # A per-process figure copied into the files: both workers' per-site cache bounds
            # agree, so the node shows one bound, not their sum.
            bounds = {labels["cache"]: value for labels, value in samples["svc_site_cache_max_entries"]}
            assert bounds["sites"] == 10_000, bounds
        # A worker that dies keeps its counts in the node's sum (its requests happened); the
        # parent starts another in its place.
        dead = min(pids)
        os.kill(dead, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, f"no worker replaced {dead}: {proc.poll()}"
            try:
                pid, text = pid_and_metrics(base)
            except httpx.HTTPError:
                time.sleep(RETRY)
                continue
            sent += 2
            if pid not in pids:
                break
            # The replacement imports the app before it listens (seconds on a loaded machine): each
            # miss scrapes the living worker, so the next try waits a little instead of spinning.
            time.sleep(RETRY)
        assert health_requests(scrape(text)) >= sent, (health_requests(scrape(text)), sent)
        in_flight = [value for _, value in scrape(text)["svc_http_requests_in_flight"]]
        assert in_flight == [1.0], in_flight  # the scrape itself; the dead worker's gauge left the sum
    finally:
        code = stop_process(proc, timeout=40)
    assert code == 0, proc.stdout.read() if proc.stdout else ""
