"""Long work of a site, as everyone with admin access in it can follow it: ``GET /work``.

Publishing a release, an envelope migration or key rewrap, a store-sync backfill, a config import:
the plugin that runs such work records it here, with its progress, in short transactions of their
own so that a reader in another request (another tab, another browser, another admin) sees each
step while the work goes on::

    async with kernel.work.tracked(site_id, "publish", release["name"], ctx.principal,
                                   target=("release", release_id), total=len(entries)) as work:
        for n, entry in enumerate(entries, 1):
            ...
            await work.step(n)

The record ends ``done`` when the block ends, ``failed`` (with the error's message) when it
raises. Work spread over several requests (a migration drained batch by batch) uses ``resume``,
which continues the site's running record of that kind and target, or starts one.

A record whose process died does not stay ``running`` (-- more43): while a ``tracked`` block
runs, its process touches the record's ``updatedAt`` every ``HEARTBEAT`` (the process holds it);
a running record that has not moved for ``STALE_AFTER`` (several heartbeats missed) is marked
``failed`` with the reason, when the site's work is listed or started. Not at startup: in a
deployment of several processes, one starting says nothing of another's work. Work spread over
requests (``resume``) is held by nobody between its steps: it too ends ``failed`` when no step
came for ``STALE_AFTER`` (a later step starts a new record).
Finished records older than ``KEEP_DAYS`` are deleted when the site starts new work.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy import (
    Column,
    DateTime,
    Index,
    Integer,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.base.timestamps import iso
from kernel.db.meta import id_column, metadata, now_utc, site_column, timestamp_column
from kernel.hooks.hookspecs import hookimpl
from kernel.http.media import send_data
from kernel.http.middleware import request_context
from kernel.http.params import int_param
from kernel.http.routing import Route

name = "kernel.admin.work"

KINDS = ("publish", "rollback", "migration", "rewrap", "backfill", "import", "replay")
STATUSES = ("running", "done", "failed")
KEEP_DAYS = 7
HEARTBEAT = dt.timedelta(seconds=60)  # -- more43: a tracked block's process touches its record this often
STALE_AFTER = dt.timedelta(minutes=5)  # a running record not touched for this long has lost its process
STALE_REASON = "Stopped: the process running it ended (no progress or heartbeat for {minutes} minutes)"

work = Table(
    "svc_work",
    metadata,
    id_column(),
    site_column(),
    Column("kind", String(32), nullable=False),
    Column("label", String(200), nullable=False),
    Column("target_type", String(40), nullable=True),
    Column("target_id", String(255), nullable=True),
    Column("status", String(16), nullable=False),  # running | done | failed
    Column("done", Integer, nullable=True),
    Column("total", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Column("started_by", String(36), nullable=True),
    Column("started_by_email", String(320), nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=False),
    timestamp_column("updated_at"),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    Index("ix_svc_work_site_started", "site_id", "started_at"),
)


def record(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"], "kind": row["kind"], "label": row["label"],
        "target": {"type": row["target_type"], "id": row["target_id"]} if row["target_type"] else None,
        "status": row["status"], "done": row["done"], "total": row["total"], "error": row["error"],
        "startedBy": {"userId": row["started_by"], "email": row["started_by_email"]} if row["started_by"] else None,
        "startedAt": iso(row["started_at"]), "updatedAt": iso(row["updated_at"]),
        "finishedAt": iso(row["finished_at"]),
    }


class Work:
    """One record being written: ``step(done, total=None)``, ``finish(error=None)``."""

    def __init__(self, kernel: Any, work_id: str) -> None:
        self.kernel = kernel
        self.id = work_id
        self.error: str | None = None  # set in a ``tracked`` block: it ends ``failed`` with it

    async def _set(self, **values: Any) -> None:
        async with self.kernel.db.begin() as conn:
            await conn.execute(update(work).where(work.c.id == self.id).values(updated_at=now_utc(), **values))

    async def step(self, done: int | None = None, total: int | None = None, *, add: int = 0) -> None:
        """``done`` so far (or ``add`` to it) and, if now known, the ``total``."""
        values: dict[str, Any] = {"total": total} if total is not None else {}
        await self._set(done=done if done is not None else func.coalesce(work.c.done, 0) + add, **values)

    async def finish(self, error: str | None = None, *, done: int | None = None, add: int = 0) -> None:
        values: dict[str, Any] = {"status": "failed" if error else "done", "error": (error or None) and error[:2000],
                                  "finished_at": now_utc()}
        if done is not None or add:
            values["done"] = done if done is not None else func.coalesce(work.c.done, 0) + add
        await self._set(**values)


class WorkLog:
    """``kernel.work``: start, resume and list a site's long work."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def sweep(self, site_id: str, now: dt.datetime | None = None) -> int:
        """-- more43: the site's running records untouched for ``STALE_AFTER`` end ``failed``."""
        now = now or now_utc()
        async with self.kernel.db.begin() as conn:
            swept = await conn.execute(update(work).where(
                work.c.site_id == site_id, work.c.status == "running", work.c.updated_at < now - STALE_AFTER).values(
                status="failed", finished_at=now,
                error=STALE_REASON.format(minutes=int(STALE_AFTER.total_seconds() // 60))))
        return int(swept.rowcount or 0)

    async def start(self, site_id: str, kind: str, label: str, principal: Any, *,
                    target: tuple[str, str] | None = None, total: int | None = None) -> Work:
        assert kind in KINDS, kind
        await self.sweep(site_id)
        now = now_utc()
        async with self.kernel.db.begin() as conn:
            await conn.execute(delete(work).where(work.c.site_id == site_id, work.c.status != "running",
                                                  work.c.finished_at < now - dt.timedelta(days=KEEP_DAYS)))
            work_id = uuid7()
            await conn.execute(insert(work).values(
                id=work_id, site_id=site_id, kind=kind, label=label[:200],
                target_type=target[0] if target else None, target_id=target[1] if target else None,
                status="running", done=0 if total is not None else None, total=total, error=None,
                started_by=getattr(principal, "user_id", None), started_by_email=getattr(principal, "email", None),
                started_at=now, updated_at=now, finished_at=None))
        return Work(self.kernel, work_id)

    async def running(self, site_id: str, kind: str, target: tuple[str, str] | None = None) -> Work | None:
        """The site's latest running record of ``kind`` (and ``target``), if any."""
        query = select(work.c.id).where(work.c.site_id == site_id, work.c.kind == kind, work.c.status == "running")
        if target:
            query = query.where(work.c.target_type == target[0], work.c.target_id == target[1])
        async with self.kernel.db.connect() as conn:
            found = (await conn.execute(query.order_by(work.c.started_at.desc()).limit(1))).scalar()
        return Work(self.kernel, found) if found else None

    async def resume(self, site_id: str, kind: str, label: str, principal: Any, *, finished: bool,
                     done: int | None = None, add: int = 0, target: tuple[str, str] | None = None) -> None:
        """One more step of work spread over several requests: the running record of ``kind``
        (and ``target``) moves to ``done`` (or by ``add``); a new one starts if none runs, unless
        the call found the work ``finished`` with nothing to do; it ends when ``finished``."""
        one = await self.running(site_id, kind, target)
        if one is None:
            if finished and not add:
                return
            one = await self.start(site_id, kind, label, principal, target=target)
        await (one.finish(done=done, add=add) if finished else one.step(done, add=add))

    @contextlib.asynccontextmanager
    async def tracked(self, site_id: str, kind: str, label: str, principal: Any, *,
                      target: tuple[str, str] | None = None, total: int | None = None) -> AsyncIterator[Work]:
        """A record for the block: ``done`` when it ends, ``failed`` with the error when it raises."""
        one = await self.start(site_id, kind, label, principal, target=target, total=total)
        beat = asyncio.create_task(self._heartbeat(one))  # -- more43: this process holds the record
        try:
            yield one
        except BaseException as exc:
            beat.cancel()
            await one.finish(getattr(exc, "message", None) or str(exc) or type(exc).__name__)
            raise
        finally:
            beat.cancel()
        await one.finish(one.error)

    @staticmethod
    async def _heartbeat(one: Work) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT.total_seconds())
            with contextlib.suppress(Exception):  # a missed beat is only a later one; staleness allows several
                await one._set()

    async def listing(self, site_id: str, *, status: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        await self.sweep(site_id)
        query = select(work).where(work.c.site_id == site_id)
        if status:
            query = query.where(work.c.status == status)
        async with self.kernel.db.connect() as conn:
            rows = (await conn.execute(query.order_by(work.c.started_at.desc(), work.c.id.desc())
                                       .limit(limit))).mappings().all()
        return [record(r) for r in rows]


WORK_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "kind": {"enum": list(KINDS)}, "label": {"type": "string"},
        "target": {"type": ["object", "null"], "properties": {"type": {"type": "string"}, "id": {"type": "string"}}},
        "status": {"enum": list(STATUSES)}, "done": {"type": ["integer", "null"]},
        "total": {"type": ["integer", "null"]}, "error": {"type": ["string", "null"]},
        "startedBy": {"type": ["object", "null"], "properties": {"userId": {"type": "string"},
                                                                 "email": {"type": ["string", "null"]}}},
        "startedAt": {"type": "string", "format": "date-time"},
        "updatedAt": {"type": "string", "format": "date-time"},
        "finishedAt": {"type": ["string", "null"], "format": "date-time"},
    },
}


class WorkResource:
    """``GET /work[?status=running|done|failed&limit=n]``: the site's running and recent work."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        status = req.get_param("status")
        if status is not None and status not in STATUSES:
            raise ApiError.validation(f"'status' is one of {', '.join(STATUSES)}", path=["query", "status"])
        limit = int_param(req, "limit", 50, minimum=1, maximum=200)
        assert limit is not None
        send_data(resp, await self.kernel.work.listing(request_context(req).site_id, status=status, limit=limit))


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    from kernel.http.openapi import ops

    return [Route("/work", WorkResource(kernel), auth="admin", plugin=name,
                  openapi=ops(get=("The site's running and recent long work (publishing, migrations, backfills, "
                                   "imports) with its progress", None, [WORK_SCHEMA], 200)))]
