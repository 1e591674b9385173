"""Store-sync pipelines: records, create, update (credential rotation, pause, resume), delete.

A pipeline starts ``active`` at the tail of the site's event log: it syncs what happens from
now on (``POST .../backfill`` pushes what exists). ``PATCH { status: "paused" }`` stops it, and
``active`` resumes from where it stopped. The record never holds the credentials, only
``hasCredentials``. The items are read as the pipeline's role (``role``: a role id of the site,
or ``public`` (the default), ``subscriber``, ``admin``), so a pipeline pushes no more than that
role may read.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base import outbound
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.events.subscriptions import SubscriptionTable
from kernel.policy import audit
from plugins.access import api as access_api
from plugins.store_sync import bodies
from plugins.store_sync.tables import dead_letters, pipelines, sync_log

GROUP = "store_sync"  # the kernel consumer group: a pipeline's checkpoint is "store_sync:<id>"
SECRET_PURPOSE = "store_sync.credentials"
CHANGED = "store_sync.pipelines.changed"  # drops the site's entry of the members cache everywhere
MAX_PER_SITE = 50
SYSTEM_ROLES = ("public", "subscriber", "admin")


SHAPE = SubscriptionTable(pipelines, plural="store-sync pipelines",
                          missing="No such store-sync pipeline in this site", max_per_site=MAX_PER_SITE, group=GROUP)
checkpoint_name = SHAPE.checkpoint_name
not_found = SHAPE.not_found
row_of = SHAPE.row


def types_of(row: Any) -> tuple[str, ...]:
    """The item event types the pipeline's flags take."""
    flags = (("items.create", "sync_on_create"), ("items.update", "sync_on_update"), ("items.delete", "sync_on_delete"))
    return tuple(kind for kind, column in flags if row[column])


def open_credentials(kernel: Any, row: Any) -> dict[str, Any]:
    return dict(json.loads(kernel.secrets.open(row["site_id"], row["credentials"], purpose=SECRET_PURPOSE)))


def record(row: Any) -> dict[str, Any]:
    """The answer for one pipeline (never its credentials)."""
    return {
        "id": row["id"], "name": row["name"], "target": row["target"], "status": row["status"],
        "projectId": row["project_id"], "collections": list(row["collections"] or []),
        "targetPath": row["target_path"], "syncOnCreate": bool(row["sync_on_create"]),
        "syncOnUpdate": bool(row["sync_on_update"]), "syncOnDelete": bool(row["sync_on_delete"]),
        "role": row["role_id"], "hasCredentials": True,
        "lastSyncAt": iso(row["last_sync_at"]) if row["last_sync_at"] else None,
        "lastSyncItemCount": row["last_sync_item_count"], "lastError": row["last_error"],
        "backfillPending": row["backfill_collection"] is not None,
        "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
    }


async def _role_id(conn: Any, site_id: str, role: str) -> str:
    found = await access_api.role_by_system_key(conn, site_id, role) if role in SYSTEM_ROLES \
        else await access_api.role_in_site(conn, site_id, role)
    if found is None:
        raise bodies.invalid(f"No role '{role}' in this site", ["role"])
    return str(found["id"])


def _seal(kernel: Any, site_id: str, target: str, credentials: Any) -> tuple[str, dict[str, Any]]:
    """Check ``credentials`` against the target, then seal them (400 ``ENCRYPTION_KEY_REQUIRED``
    without a key: they are never stored in the clear)."""
    checked = bodies.credentials_for(target, credentials, outbound.policy(kernel))
    kernel.secrets.require()
    return kernel.secrets.seal(site_id, json.dumps(checked), purpose=SECRET_PURPOSE), checked


# ------------------------------------------------------------------------------- operations


async def list_records(ctx: Any) -> list[dict[str, Any]]:
    async with ctx.reader() as db:
        rows = await SHAPE.rows(db)
    return [record(row) for row in rows]


async def get_record(ctx: Any, pipeline_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        return record(await row_of(db, pipeline_id))


async def create(ctx: Any, body: Any) -> dict[str, Any]:
    kernel, site_id = ctx.kernel, ctx.require_site()
    values = bodies.parse(body, creating=True)
    values["credentials"], checked = _seal(kernel, site_id, values["target"], values["credentials"])
    if values["target"] == "docstore" and values.get("project_id") is None:
        values["project_id"] = checked["project_id"]
    role = values.pop("role", "public")
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        values["role_id"] = await _role_id(uow.conn, site_id, role)
        await _check_room(uow.db, values["name"])
        pipeline_id = uuid7()
        try:
            await uow.db.insert(pipelines, {**values, "id": pipeline_id, "status": "active", "created_at": now,
                                            "updated_at": now})
        except IntegrityError as exc:
            raise ApiError.conflict(f"A pipeline named '{values['name']}' already exists in this site") from exc
        # It starts at the tail: what happens from now on (backfill pushes what exists).
        await SHAPE.start_at_tail(kernel, uow, pipeline_id)
        uow.action(CHANGED, {"siteId": site_id})
        await audit.record(uow.conn, action="store_sync.pipeline.create", site_id=site_id, principal=ctx.principal,
                           target_type="store_sync_pipeline", target_id=pipeline_id,
                           details={"name": values["name"], "target": values["target"]}, request_id=ctx.request_id)
        saved = await row_of(uow.db, pipeline_id)
    return record(saved)


async def _check_room(db: Any, name: str, *, other_than: str | None = None) -> None:
    await SHAPE.check_room(db, {"name": name}, f"A pipeline named '{name}' already exists in this site",
                           other_than=other_than)


async def update(ctx: Any, pipeline_id: str, body: Any) -> dict[str, Any]:
    """Change a pipeline; ``credentials`` replaces them (rotation), checked against its target."""
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await row_of(db, pipeline_id, lock=True)
        values = bodies.parse(body, creating=False, current=row)
        values.pop("target", None)
        if "credentials" in values:
            # A projectId set before stays (a service account may write to another project).
            values["credentials"], _ = _seal(kernel, site_id, row["target"], values["credentials"])
        if "role" in values:
            values["role_id"] = await _role_id(uow.conn, site_id, values.pop("role"))
        if "name" in values and values["name"] != row["name"]:
            await _check_room(db, values["name"], other_than=pipeline_id)
        if values.get("status") == "active" and row["status"] != "active":
            values["last_error"] = None
        if values:
            try:
                await db.execute(db.update(pipelines).where(pipelines.c.id == pipeline_id)
                                 .values(**values, updated_at=now_utc()))
            except IntegrityError as exc:
                raise ApiError.conflict(f"A pipeline named '{values.get('name')}' already exists") from exc
            uow.action(CHANGED, {"siteId": site_id})
            await audit.record(uow.conn, action="store_sync.pipeline.update", site_id=site_id,
                               principal=ctx.principal, target_type="store_sync_pipeline", target_id=pipeline_id,
                               details={"changed": sorted(k for k in values if k != "last_error"),
                                        "status": values.get("status")}, request_id=ctx.request_id)
        saved = await row_of(db, pipeline_id)
    if saved["status"] == "active" and values:
        # Resumed, rotated or refiltered: end a retry's wait and sync now.
        await kernel.events.dispatch_now(site_id, checkpoint_name(pipeline_id))
    return record(saved)


async def delete(ctx: Any, pipeline_id: str) -> None:
    """Delete the pipeline, its log, its dead letters and its checkpoint."""
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.unit_of_work() as uow:
        row = await row_of(uow.db, pipeline_id, lock=True)
        await uow.db.execute(uow.db.delete(sync_log).where(sync_log.c.pipeline_id == pipeline_id))
        await uow.db.execute(uow.db.delete(dead_letters).where(dead_letters.c.pipeline_id == pipeline_id))
        await uow.db.execute(uow.db.delete(pipelines).where(pipelines.c.id == pipeline_id))
        await SHAPE.forget(kernel, uow, pipeline_id)
        uow.action(CHANGED, {"siteId": site_id})
        await audit.record(uow.conn, action="store_sync.pipeline.delete", site_id=site_id, principal=ctx.principal,
                           target_type="store_sync_pipeline", target_id=pipeline_id,
                           details={"name": row["name"], "target": row["target"]}, request_id=ctx.request_id)


async def list_log(ctx: Any, pipeline_id: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        await row_of(db, pipeline_id)
        mine = sync_log.c.pipeline_id == pipeline_id
        total = await db.scalar(db.select(sync_log, func.count()).where(mine))
        rows = await db.all(db.select(sync_log).where(mine).order_by(sync_log.c.id.desc()).limit(limit).offset(offset))
    return [log_record(r) for r in rows], int(total or 0)


def log_record(row: Any) -> dict[str, Any]:
    return {"id": str(row["id"]), "kind": row["kind"], "status": row["status"], "attempt": row["attempt"],
            "pushed": row["pushed"], "failed": row["failed"], "skipped": row["skipped"], "error": row["error"],
            "durationMs": row["duration_ms"], "firstEventId": row["first_event"], "lastEventId": row["last_event"],
            "attemptedAt": iso(row["attempted_at"])}
