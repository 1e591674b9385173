"""Where the suite's time goes: with ``SVC_TEST_COST=DIR`` set, each pytest process (each xdist
worker) appends one JSON line per test to ``DIR/<pass>-<worker>.jsonl`` (``all``, or ``services``
under ``--svc-services-only``): its node id, its wall time, and
its CPU time, the process's own plus that of the child processes it waited for (``svc``
subprocesses, Chromium is not waited for, so a browser test's page work is not in it). Setup and
teardown count towards the test that ran them, so a module's shared app weighs on its first test.

``python scripts/test_cost.py DIR`` sums it by module (docs/testing.md, "What the run costs").
Unset, the plugin does nothing.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    folder = os.environ.get("SVC_TEST_COST", "")
    if not folder:
        yield
        return
    wall, cpu = time.perf_counter(), _cpu()
    yield
    line = {"test": item.nodeid, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu}
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    run = "services" if item.config.getoption("--svc-services-only") else "all"
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"{run}-{worker}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
