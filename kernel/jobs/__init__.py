"""Background jobs: a queue in the kernel's database, run as coroutines on a worker's loop.

- ``tables.py``   ``svc_jobs`` (one row per queued run) and ``svc_job_ticks`` (periodic slots).
- ``store.py``    the SQL: enqueue (with a dedupe key), claim with a lease (``FOR UPDATE SKIP
                  LOCKED`` on PostgreSQL, the write lock on SQLite), finish, retry, fail.
- ``queue.py``    ``JobQueue``: registration (``task``, ``periodic``), ``enqueue`` (in a unit
                  of work, at a time, deduplicated), the consumer, ``run_due``, ``status``.
- ``worker.py``   ``JobWorker``: claims due jobs and runs up to N at once on its event loop,
                  renews its leases, retries with backoff, enqueues periodic ticks.
- ``schedule.py`` periodic timetables (``every_seconds``: 1 s resolution; cron: 1 min, UTC).

Its route (``GET /admin/jobs``) is in ``kernel.admin.jobs`` and ``svc worker``'s own ``/metrics`` in
``kernel.metrics.worker``: both stand above the jobs, which import no HTTP.

Plugins register through the ``register_jobs(jobs, kernel)`` hook::

    async def reindex(kernel, site_id: str, collection: str) -> None: ...
    jobs.task("items.reindex", reindex, retries=5, retry_delay=2, retry_max_delay=300, owner="items")
    jobs.periodic("privacy.retention", purge, cron="0 3 * * *", owner="privacy")

    async with kernel.unit_of_work(site_id) as uow:
        ...  # the write
        await uow.enqueue("items.reindex", site_id=site_id, collection="posts", dedupe_key="posts")

Delivery is at least once: a job whose worker dies is run again once its lease expires, so
jobs must be idempotent.
"""

from kernel.jobs.queue import JobNotBound, JobQueue
from kernel.jobs.worker import JobRun, JobWorker

__all__ = ["JobNotBound", "JobQueue", "JobRun", "JobWorker"]
