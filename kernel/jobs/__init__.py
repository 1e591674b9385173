"""Background jobs: huey underneath, coroutine jobs on the app's event loop on top.

- ``queue.py``     ``JobQueue``: SQLite (``<data dir>/queue.sqlite3``) or Redis (``SVC_REDIS_URL``),
                   registration (``task``, ``periodic``, ``registered``), ``enqueue``,
                   ``enqueue_in``, ``bind``, the consumers, ``check``.
- ``bridge.py``    runs a job coroutine on the bound loop from a huey worker thread.
- ``consumer.py``  huey's Worker/Scheduler threads: in-process (no signal handlers) for
                   ``svc serve``, blocking with signals for ``svc worker``.
- ``schedule.py``  periodic timetables (``every_seconds``: 1 s resolution; cron: 1 min, UTC)
                   and the per-tick claim that keeps several consumers from running a tick twice.

Plugins register through the ``register_jobs(jobs, kernel)`` hook::

    async def reindex(kernel, site_id: str) -> None: ...
    jobs.task("items.reindex", reindex, retries=5, owner="items")
    jobs.periodic("privacy.retention", purge, cron="0 3 * * *", owner="privacy")

    await kernel.jobs.enqueue("items.reindex", site_id=site_id)

Delivery is at least once: a job interrupted by a stop is requeued, so jobs must be
idempotent.
"""

from kernel.jobs.bridge import JobNotBound, JobTimeout
from kernel.jobs.queue import JobQueue

__all__ = ["JobNotBound", "JobQueue", "JobTimeout"]
