"""Figures on ``/metrics`` that live in the database: job queue depths and event consumer lag.

Prometheus collectors are synchronous and the database is not, so the scrape first awaits
``StoredFigures.refresh`` (the utils route does), which runs a handful of bounded queries at
most once every ``SVC_METRICS_REFRESH_SECONDS``, and the collector then reads the snapshot.
Every process sees the same figures (they are the database's, not the process's).

Bounded, so a scrape stays cheap however many sites and jobs there are:

- **Jobs:** per state, at most ``COUNT_CAP`` rows are counted (through the ``(status, due_at)``
  index); a depth at the cap means "at least this many".
- **Event lag:** only the newest ``LAG_WINDOW`` events of the log are compared with the
  checkpoints of their sites. A consumer further behind than the window shows the window's
  figures, which are then lower bounds. Group members (``<group>:<key>``) are summed under
  their group's name, so the label stays bounded too.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from sqlalchemy import and_, case, func, or_, select

from kernel.db.meta import aware, now_utc
from kernel.events.dispatch import _type_matches
from kernel.events.tables import checkpoints, events
from kernel.jobs.tables import jobs

if TYPE_CHECKING:
    from kernel.core.context import Kernel

log = logging.getLogger("svc.metrics")

COUNT_CAP = 100_000
LAG_WINDOW = 10_000
STATES = ("pending", "running", "failed")


def _folded(dialect: str) -> Any:
    """The consumer's name up to its first ``:`` (a group member counts under its group)."""
    name = checkpoints.c.consumer
    if dialect == "postgresql":
        return func.split_part(name, ":", 1)
    colon = func.instr(name, ":")
    return case((colon > 0, func.substr(name, 1, colon - 1)), else_=name)


class StoredFigures:
    """The last snapshot of the database figures, and how to take a new one."""

    def __init__(self, kernel: Kernel, max_age: float) -> None:
        self.kernel = kernel
        self.max_age = max_age
        self.taken: float | None = None  # monotonic time of the last snapshot
        self.jobs: dict[tuple[str, str], int] = {}  # (job name, state) -> rows
        self.oldest_due: float = 0.0  # seconds the longest-waiting due job has waited
        self.head_id = 0
        self.lag: dict[str, tuple[int, float]] = {}  # consumer -> (events, seconds)
        self.retrying: dict[str, int] = {}  # consumer -> (site, consumer) pairs waiting to retry
        self.refresh_failures = 0
        self._lock = asyncio.Lock()

    async def refresh(self) -> None:
        """Take a new snapshot when the last one is older than ``max_age``; a database error
        keeps the previous one (and is counted), so a scrape never fails for it."""
        if self.taken is not None and time.monotonic() - self.taken < self.max_age:
            return
        async with self._lock:
            if self.taken is not None and time.monotonic() - self.taken < self.max_age:
                return
            try:
                await self._take(now_utc())
            except Exception as exc:  # noqa: BLE001 - the scrape still answers with what it had
                self.refresh_failures += 1
                log.warning("metrics: could not read the job queue and event log: %s", exc)
            self.taken = time.monotonic()

    async def _take(self, now: dt.datetime) -> None:
        db = self.kernel.db
        async with db.connect() as conn:
            depths: dict[tuple[str, str], int] = {}
            for state in STATES:
                rows = select(jobs.c.name).where(jobs.c.status == state).limit(COUNT_CAP).subquery()
                for name, count in await conn.execute(select(rows.c.name, func.count()).group_by(rows.c.name)):
                    depths[(name, state)] = int(count)
            due = select(jobs.c.name).where(jobs.c.status == "pending", jobs.c.due_at <= now).limit(COUNT_CAP).subquery()
            for name, count in await conn.execute(select(due.c.name, func.count()).group_by(due.c.name)):
                depths[(name, "due")] = int(count)
            oldest = (await conn.execute(select(func.min(jobs.c.due_at)).where(
                jobs.c.status == "pending", jobs.c.due_at <= now))).scalar()
            head = (await conn.execute(select(func.max(events.c.id)))).scalar()
            lag = await self._lag(conn, db.dialect, now)
            folded = _folded(db.dialect).label("consumer")
            retrying = {name: int(count) for name, count in await conn.execute(
                select(folded, func.count()).where(checkpoints.c.retry_at.is_not(None)).group_by(folded))}
            await conn.rollback()
        self.jobs = depths
        self.oldest_due = max(0.0, (now - aware(oldest)).total_seconds()) if oldest is not None else 0.0
        self.head_id = int(head or 0)
        self.lag = lag
        self.retrying = retrying

    async def _lag(self, conn: Any, dialect: str, now: dt.datetime) -> dict[str, tuple[int, float]]:
        """Per consumer: the events of the newest ``LAG_WINDOW`` after its checkpoints, and the
        age of the oldest of them. A plain consumer's type and collection filters apply."""
        recent = (select(events.c.site_id, events.c.txid, events.c.id, events.c.type, events.c.collection,
                         events.c.occurred_at).order_by(events.c.id.desc()).limit(LAG_WINDOW).subquery())
        folded = _folded(dialect).label("consumer")
        after = or_(recent.c.txid > checkpoints.c.cursor_txid,
                    and_(recent.c.txid == checkpoints.c.cursor_txid, recent.c.id > checkpoints.c.cursor_id))
        query = (select(folded, recent.c.type, recent.c.collection, func.count(), func.min(recent.c.occurred_at))
                 .select_from(recent.join(checkpoints, and_(checkpoints.c.site_id == recent.c.site_id, after)))
                 .group_by(folded, recent.c.type, recent.c.collection))
        plain = self.kernel.events.consumers if self.kernel.events is not None else {}
        out: dict[str, tuple[int, float]] = {}
        for name, type_, collection, count, oldest in await conn.execute(query):
            consumer = plain.get(name)
            if consumer is not None and not (_type_matches(consumer.types, type_) and (
                    not consumer.collections or collection in consumer.collections)):
                continue  # events it does not take: its checkpoint moves past them at its next pass
            seconds = max(0.0, (now - aware(oldest)).total_seconds()) if oldest is not None else 0.0
            events_before, seconds_before = out.get(name, (0, 0.0))
            out[name] = (events_before + int(count), max(seconds_before, seconds))
        return out

    def collect(self) -> Iterator[Any]:
        depth = GaugeMetricFamily("svc_jobs_queued", "Rows of the job queue by job name and state "
                                  f"(pending, due, running, failed; counted up to {COUNT_CAP})",
                                  labels=["job", "state"])
        for (name, state), count in sorted(self.jobs.items()):
            depth.add_metric([name, state], count)
        yield depth
        yield GaugeMetricFamily("svc_jobs_oldest_due_seconds", "How long the longest-waiting due job has waited",
                                value=self.oldest_due)
        yield GaugeMetricFamily("svc_events_head_id", "Id of the newest event in the log", value=self.head_id)
        names = sorted({*self._consumer_names(), *self.lag})
        lag_events = GaugeMetricFamily("svc_event_consumer_lag_events", "Events a durable consumer has still to "
                                       f"take (among the newest {LAG_WINDOW})", labels=["consumer"])
        lag_seconds = GaugeMetricFamily("svc_event_consumer_lag_seconds",
                                        "Age of the oldest event a durable consumer has still to take",
                                        labels=["consumer"])
        retrying = GaugeMetricFamily("svc_event_consumer_retrying", "Sites where a durable consumer waits to "
                                     "retry a failed batch", labels=["consumer"])
        for name in names:
            count, seconds = self.lag.get(name, (0, 0.0))
            lag_events.add_metric([name], count)
            lag_seconds.add_metric([name], seconds)
            retrying.add_metric([name], self.retrying.get(name, 0))
        yield lag_events
        yield lag_seconds
        yield retrying
        yield CounterMetricFamily("svc_metrics_refresh_failures", "Scrapes that could not read the database figures",
                                  value=self.refresh_failures)

    def _consumer_names(self) -> list[str]:
        log_ = self.kernel.events
        if log_ is None:
            return []
        return [*log_.consumers, *log_.groups]


def register_stored_metrics(kernel: Kernel) -> StoredFigures | None:
    """Add the collector to the app's registry (made by the metrics middleware)."""
    metrics = kernel.state.get("metrics")
    if metrics is None:
        return None
    figures = StoredFigures(kernel, float(kernel.settings.metrics_refresh_seconds))
    metrics.registry.register(figures)
    kernel.state["stored_metrics"] = figures
    return figures


async def refresh_stored_metrics(kernel: Kernel) -> None:
    """Bring the database figures up to date before a scrape (at most every max age)."""
    figures = kernel.state.get("stored_metrics")
    if figures is not None:
        await figures.refresh()
