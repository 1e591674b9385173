"""What ``svc serve --workers N``'s node-wide /metrics costs (issue 36, point 3).

Per request, the metrics middleware counts the request, observes its latency and moves the
in-flight gauge. With one process those are in-memory values; under ``--workers N`` they are
prometheus_client's memory-mapped files (``kernel.metrics.node``). Per scrape, the
answering worker copies its per-process figures and reads every worker's files.

Each mode runs in a child process (prometheus_client picks its value class at import, from
``PROMETHEUS_MULTIPROC_DIR``). Measured with ``time.process_time``: CPU, not wall time.

    .venv/bin/python bench/node_metrics_bench.py [--requests 200000] [--routes 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, os, sys, time
from prometheus_client import generate_latest
from kernel.metrics.requests import Metrics, SharedCacheCollector, JobFailuresCollector
from collections import Counter

requests, routes, workers = (int(x) for x in sys.argv[1:4])
multi = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")

class Cache:  # the shared cache's plain counters
    hits, misses = 10, 2

def make():
    m = Metrics(None, 20, None, multiproc_dir=multi, node="bench")
    m.register_per_process(SharedCacheCollector(Cache()))
    m.register_per_process(JobFailuresCollector(Counter({("a.job", "retry"): 1})))
    return m

m = make()
labels = [("GET", f"/api/v1/route/{i}", "200") for i in range(routes)]
start = time.process_time()
for i in range(requests):
    method, route, status = labels[i % routes]
    m.in_flight.inc()
    m.in_flight.dec()
    m.observe(method, route, status, 0.003)
    m.top_sites.record("site-%d" % (i % 50))
per_request_us = (time.process_time() - start) / requests * 1e6

if multi:  # the other workers' files: the same series written by other pids
    from prometheus_client import values
    real_pid = os.getpid
    for fake in range(1, workers):
        values.ValueClass = values.MultiProcessValue(lambda fake=fake: 10_000_000 + fake)
        other = make()
        for method, route, status in labels:
            other.observe(method, route, status, 0.003)
        other.before_scrape()
n = 50
start = time.process_time()
for _ in range(n):
    m.before_scrape()
    size = len(generate_latest(m.registry))
scrape_ms = (time.process_time() - start) / n * 1e3
print(json.dumps({"per_request_us": round(per_request_us, 2), "scrape_ms": round(scrape_ms, 2), "bytes": size,
                  "files": len(os.listdir(multi)) if multi else 0}))
"""


def run(env: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(args.requests), str(args.routes), str(args.workers)],
                         env=env, check=True, capture_output=True, text=True, cwd=Path(__file__).resolve().parents[1])
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--routes", type=int, default=60)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    base = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    one = run(base, args)
    with tempfile.TemporaryDirectory() as tmp:
        many = run({**base, "PROMETHEUS_MULTIPROC_DIR": tmp}, args)
    print(f"{'mode':<28}{'CPU per request':>18}{'CPU per scrape':>16}{'page bytes':>12}{'files':>7}")
    for name, r in (("one process", one), (f"multiprocess, {args.workers} workers", many)):
        print(f"{name:<28}{r['per_request_us']:>15.2f} us{r['scrape_ms']:>13.2f} ms{r['bytes']:>12}{r['files']:>7}")


if __name__ == "__main__":
    main()
