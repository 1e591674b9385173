"""File writes: storing a guarded upload, changing a file's metadata, deleting it.

Storage keys are the server's: ``<site>/files/<file id>/<random>`` for a file's bytes and
``<site>/derivatives/<file id>/...`` for its transforms, so a client's name never becomes a
path and the same name in two sites is two objects. Replacing a file's bytes writes a new
object and drops the old one and every derivative after the commit.

Events: ``files.create|update|delete`` go to the durable event log (``uow.emit``: id and the
changed field names) and to the bus as actions after commit (``{ siteId, id, key, principal }``).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from typing import Any

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.files import permissions
from plugins.files.errors import not_found
from plugins.files.folders import check_folder_id
from plugins.files.records import focal_point_within, record, row_by_id, row_by_key, set_tags
from plugins.files.tables import file_tags, files, folders, presets, uploads
from plugins.files.uploads.catalogue import FileType
from plugins.files.uploads.staging import Staged
from plugins.schema import api as schema

log = logging.getLogger("svc.files")
META_FIELDS = ("title", "description", "folder", "tags")
CONTENT_FIELDS = ["checksum", "filesize", "height", "type", "width"]
API_NAMES = {"folder_id": "folderId"}


def object_key(site_id: str, file_id: str) -> str:
    return f"{site_id}/files/{file_id}/{uuid.uuid4().hex}"


def derivatives_prefix(site_id: str, file_id: str) -> str:
    return f"{site_id}/derivatives/{file_id}/"


async def drop_objects(kernel: Any, site_id: str, file_id: str, storage_key: str | None) -> None:
    """Delete a file's stored object and every derivative (after commit; failures are logged)."""
    try:
        if storage_key:
            await kernel.storage.delete(storage_key)
        for key in await kernel.storage.list(derivatives_prefix(site_id, file_id)):
            await kernel.storage.delete(key)
    except Exception:  # noqa: BLE001 - the record is gone or changed; a stray object is only space
        log.exception("could not delete the stored objects of file %s", file_id)


def _payload(ctx: Any, row_id: str, key: str) -> dict[str, Any]:
    return {"siteId": ctx.site_id, "id": row_id, "key": key, "principal": ctx.principal.summary()}


async def store(
    ctx: Any,
    filename: str,
    filetype: FileType,
    staged: Staged,
    info: dict[str, Any],
    meta: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], bool]:
    """Record a staged upload that passed the guard under the name ``filename``.

    A new name creates a file (``created`` True). An existing name replaces that file's bytes,
    which needs ``media:update`` on it: checked before anything is written, so a caller
    without it changes nothing (403). The staging file becomes a new object (moved into
    local storage, uploaded to S3).
    """
    site_id = ctx.require_site()
    meta = meta or {}
    async with ctx.reader() as db:
        existing = await row_by_key(db, filename)
    if existing is not None:
        condition = await permissions.require(ctx, "media:update")
        async with ctx.reader() as db:
            if await row_by_key(db, filename, condition) is None:
                raise ApiError.forbidden(
                    "Replacing this file needs the media:update permission on it", reason="media:update"
                )
    file_id = existing["id"] if existing is not None else uuid7()
    key = object_key(site_id, file_id)
    await ctx.kernel.storage.put_file(key, staged.path, filetype.mime, move=True)
    now = now_utc()
    values = {
        "type": filetype.mime,
        "filesize": staged.size,
        "checksum": staged.sha256,
        "width": info.get("width"),
        "height": info.get("height"),
        "storage_key": key,
        "updated_at": now,
        "focal_x": None,
        "focal_y": None,
    }  # a focal point was a point of the bytes replaced
    try:
        async with ctx.unit_of_work() as uow:
            db = uow.db
            if existing is None:
                await db.insert(
                    files,
                    {
                        "id": file_id,
                        "key": filename,
                        "title": meta.get("title"),
                        "description": meta.get("description"),
                        "folder": meta.get("folder"),
                        "tags": meta.get("tags", []),
                        "uploaded_by": ctx.principal.user_id or ctx.principal.api_key_id,
                        "created_at": now,
                        **values,
                    },
                )
                await set_tags(db, file_id, meta.get("tags", []))
                uow.emit("files.create", item_id=file_id, fields=["key", *CONTENT_FIELDS, *sorted(meta)])
                uow.action("files.create", _payload(ctx, file_id, filename))
            else:
                changed = {k: meta[k] for k in META_FIELDS if k in meta}
                await db.execute(db.update(files).where(files.c.id == file_id).values(**values, **changed))
                if "tags" in changed:
                    await set_tags(db, file_id, changed["tags"])
                uow.emit(
                    "files.update", item_id=file_id, fields=[*CONTENT_FIELDS, "content", *sorted(changed)]
                )
                uow.action("files.update", _payload(ctx, file_id, filename))
                old_key = existing["storage_key"]
                uow.after_commit(lambda: drop_objects(ctx.kernel, site_id, file_id, old_key))
            row = await row_by_id(db, file_id)
    except BaseException:
        with contextlib.suppress(Exception):
            await ctx.kernel.storage.delete(key)
        raise
    return record(row), existing is None


async def update(ctx: Any, row_filter: Any, file_id: str, changes: dict[str, Any]) -> dict[str, Any]:
    """``PATCH /files/{id}``: title, description, tags, folder and focal point (``media:update`` on the file)."""
    changes = dict(changes)
    focal = changes.pop("focalPoint", None)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await row_by_id(db, file_id, row_filter, lock=True)
        if "folder_id" in changes:
            await check_folder_id(db, changes["folder_id"], ["folderId"])
        changed = {k: v for k, v in changes.items() if (list(row[k] or []) if k == "tags" else row[k]) != v}
        columns: dict[str, Any] = {}
        if focal is not None:
            focal_point_within(row, focal)
            if (row["focal_x"], row["focal_y"]) != (focal["focal_x"], focal["focal_y"]):
                columns, changed["focalPoint"] = focal, True
        if changed:
            values = {**{k: v for k, v in changed.items() if k != "focalPoint"}, **columns}
            await db.execute(
                db.update(files).where(files.c.id == file_id).values(**values, updated_at=now_utc())
            )
            if "tags" in changed:
                await set_tags(db, file_id, changed["tags"])
            uow.emit("files.update", item_id=file_id, fields=sorted(API_NAMES.get(k, k) for k in changed))
            uow.action("files.update", _payload(ctx, file_id, row["key"]))
        row = await row_by_id(db, file_id)
    return record(row)


async def delete(ctx: Any, row_filter: Any, *, file_id: str | None = None, key: str | None = None) -> None:
    """Delete a file (``media:delete`` on it): its record now, its object and derivatives after
    the commit."""
    site_id = ctx.require_site()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        if file_id is not None:
            row = await row_by_id(db, file_id, row_filter, lock=True)
        else:
            row = await row_by_key(db, key or "", row_filter)
            if row is None:
                raise not_found()
        await set_tags(db, row["id"], [])
        await db.execute(db.delete(files).where(files.c.id == row["id"]))
        uow.emit("files.delete", item_id=row["id"])
        uow.action("files.delete", _payload(ctx, row["id"], row["key"]))
        found_id, storage_key = row["id"], row["storage_key"]
        uow.after_commit(lambda: drop_objects(ctx.kernel, site_id, found_id, storage_key))


async def delete_site_files(kernel: Any, site_id: str, conn: Any) -> None:
    """A deleted site's rows (in its deletion's transaction) and stored objects. The objects go
    at once: there is no undoing a site's deletion, and leaving them would keep its bytes."""
    db = SiteDB(site_id, conn)
    for table in (file_tags, files, uploads, presets, folders):
        await db.execute(db.delete(table))
    try:
        for key in await kernel.storage.list(f"{site_id}/"):
            await kernel.storage.delete(key)
    except Exception:  # noqa: BLE001 - the rows are gone; stray objects are only space
        log.exception("could not delete the stored objects of site %s", site_id)


async def erase_item_files(event: str, payload: Any, ctx: Any) -> None:
    """Filter of ``items.delete``: when the delete is an erasure (cause ``erasure:<id>``, the
    privacy plugin's ``POST /admin/erasure/:id/execute``), the files the erased item's ``files``
    fields name are erased with it, in the same transaction: their records and tags now, their
    stored objects and every derivative after the commit. A file shared with other items goes
    too: a photo of the subject is the subject's data wherever it is used."""
    if not isinstance(payload, dict) or ctx.conn is None or ctx.site_id is None or ctx.uow is None:
        return
    if not str(payload.get("causedBy") or "").startswith("erasure:"):
        return
    before, collection = payload.get("before"), payload.get("collection")
    coll = (
        (await schema.get_schema(ctx.kernel, ctx.site_id)).collection(collection)
        if isinstance(collection, str)
        else None
    )
    if not isinstance(before, dict) or coll is None:
        return
    wanted = {
        str(i)
        for name, field in coll.fields.items()
        if field.type == "files"
        for i in (before.get(name) or [])
        if isinstance(i, (str, int))
    }
    if not wanted:
        return
    db, site_id, uow = SiteDB(ctx.site_id, ctx.conn), ctx.site_id, ctx.uow
    for row in await db.all(db.select(files).where(files.c.id.in_(sorted(wanted)))):
        await set_tags(db, row["id"], [])
        await db.execute(db.delete(files).where(files.c.id == row["id"]))
        uow.emit("files.delete", item_id=row["id"])
        uow.action(
            "files.delete",
            {
                "siteId": site_id,
                "id": row["id"],
                "key": row["key"],
                "principal": ctx.principal.summary() if ctx.principal else None,
            },
        )
        found_id, storage_key = row["id"], row["storage_key"]
        uow.after_commit(
            lambda found_id=found_id, storage_key=storage_key: drop_objects(
                ctx.kernel, site_id, found_id, storage_key
            )
        )
