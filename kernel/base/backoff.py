"""Retry delays: exponential backoff with jitter, for every retry loop of the kernel.

Jobs (``kernel/jobs/worker.py``), event consumers (``kernel/events/dispatch.py``) and the topics
listener's Redis reconnect (``kernel/messaging/topics.py``) all wait ``backoff_delay`` between attempts.
"""

from __future__ import annotations

import random
from collections.abc import Callable

# Seconds between a Redis listener's reconnect attempts (the bus and the topics): 50 ms doubling to 2 s.
REDIS_RECONNECT_BASE, REDIS_RECONNECT_MAX = 0.05, 2.0


def backoff_delay(failures: int, base: float, maximum: float,
                  rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait before the next attempt after ``failures`` failures in a row (1, 2, ...).

    The step doubles per failure from ``base`` and stops growing at ``maximum``; the delay is
    drawn uniformly from the upper half of the step ("equal jitter"), so retries of jobs that
    failed together (a database blip, a provider outage) spread out instead of returning in a
    herd, and a retry never comes sooner than half its step.
    """
    if failures < 1:
        raise ValueError("failures counts from 1")
    if base <= 0 or maximum <= 0:
        return 0.0
    # min() before the power would overflow: 2 ** 1100 is not a float.
    step = min(maximum, base * 2 ** min(failures - 1, 64))
    return step / 2 + rand() * step / 2
