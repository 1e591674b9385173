"""Folders of a site's files: ``{ id, name, parent }``, nested (docs/files.md#folders).

Permissions are the media rules (docs/files.md, Permissions): list and read ``media:read``,
create ``media:create``, rename and move ``media:update``, delete ``media:delete``. A rule's
``conditions`` bound files, not folders, so they do not narrow these. A name is unique among
its siblings (409 ``CONFLICT``); a folder cannot move into itself or below itself (400); a
folder holding files or folders is not deleted (409 ``CONFLICT``). A file is put in a folder,
or moved to another, by ``PATCH /files/:id { folderId }`` (``check_folder_id``).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.files import permissions
from plugins.files.errors import not_found
from plugins.files.tables import files, folders

BODY_KEYS = frozenset({"name", "parent"})
MAX_DEPTH = 32
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def record(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "parent": row["parent_id"],
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
    }


def _body(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    reject_unknown(body, BODY_KEYS)
    out: dict[str, Any] = {}
    if creating or "name" in body:
        name = body.get("name")
        if (
            not isinstance(name, str)
            or not 1 <= len(name) <= 255
            or name.strip() != name
            or "/" in name
            or _CONTROL.search(name)
        ):
            raise ApiError.validation(
                "'name' is 1 to 255 characters, without '/', control characters or outer spaces",
                path=["name"],
            )
        out["name"] = name
    if "parent" in body:
        parent = body["parent"]
        if parent is not None and not isinstance(parent, str):
            raise ApiError.validation("'parent' is a folder's id, or null", path=["parent"])
        out["parent_id"] = parent
    return out


async def _row(db: Any, folder_id: Any) -> Any:
    if not isinstance(folder_id, str) or not 1 <= len(folder_id) <= 36:
        raise not_found("folder")
    row = await db.one(db.select(folders).where(folders.c.id == folder_id))
    if row is None:
        raise not_found("folder")
    return row


async def check_folder_id(db: Any, folder_id: Any, path: list[str]) -> None:
    """400 unless ``folder_id`` is null or a folder of the site (another site's is unknown)."""
    if folder_id is None:
        return
    if (
        not isinstance(folder_id, str)
        or not 1 <= len(folder_id) <= 36
        or await db.one(db.select(folders, folders.c.id).where(folders.c.id == folder_id)) is None
    ):
        raise ApiError.validation("No such folder in this site", path=path)


async def _check_parent(db: Any, folder_id: str | None, parent_id: str | None) -> None:
    """The parent exists in the site, and is not ``folder_id`` nor below it."""
    await check_folder_id(db, parent_id, ["parent"])
    seen, current = 0, parent_id
    while current is not None:
        if current == folder_id:
            raise ApiError.validation(
                "A folder cannot move into itself or into a folder below it", path=["parent"]
            )
        seen += 1
        if seen > MAX_DEPTH:
            raise ApiError.validation(f"Folders nest at most {MAX_DEPTH} deep", path=["parent"])
        current = await db.scalar(db.select(folders, folders.c.parent_id).where(folders.c.id == current))


async def _check_unique(db: Any, folder_id: str | None, name: str, parent_id: str | None) -> None:
    stmt = db.select(folders, folders.c.id).where(
        folders.c.name == name,
        folders.c.parent_id.is_(None) if parent_id is None else folders.c.parent_id == parent_id,
    )
    if folder_id is not None:
        stmt = stmt.where(folders.c.id != folder_id)
    if await db.one(stmt) is not None:
        raise ApiError(409, "CONFLICT", "A folder of this name is in the same parent", path=["name"])


async def list_folders(ctx: Any, parent: str | None = None, *, top: bool = False) -> list[dict[str, Any]]:
    """Every folder of the site, by name; only those in ``parent`` (``top``: at the top) when asked."""
    await permissions.require(ctx, "media:read")
    async with ctx.reader() as db:
        stmt = db.select(folders).order_by(folders.c.name, folders.c.id)
        if top:
            stmt = stmt.where(folders.c.parent_id.is_(None))
        elif parent is not None:
            stmt = stmt.where(folders.c.parent_id == parent)
        rows = await db.all(stmt)
    return [record(r) for r in rows]


async def get(ctx: Any, folder_id: str) -> dict[str, Any]:
    await permissions.require(ctx, "media:read")
    async with ctx.reader() as db:
        return record(await _row(db, folder_id))


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    await permissions.require(ctx, "media:create")
    values = _body(body, creating=True)
    values.setdefault("parent_id", None)
    now, folder_id = now_utc(), uuid7()
    async with ctx.unit_of_work() as uow:
        await _check_parent(uow.db, None, values["parent_id"])
        await _check_unique(uow.db, None, values["name"], values["parent_id"])
        await uow.db.insert(folders, {"id": folder_id, **values, "created_at": now, "updated_at": now})
        return record(await _row(uow.db, folder_id))


async def update(ctx: Any, folder_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Rename (``name``) or move (``parent``) a folder, with what it holds."""
    await permissions.require(ctx, "media:update")
    values = _body(body, creating=False)
    async with ctx.unit_of_work() as uow:
        row = await _row(uow.db, folder_id)
        if "parent_id" in values:
            await _check_parent(uow.db, folder_id, values["parent_id"])
        merged = {"name": row["name"], "parent_id": row["parent_id"], **values}
        await _check_unique(uow.db, folder_id, merged["name"], merged["parent_id"])
        if values:
            await uow.db.execute(
                uow.db.update(folders).where(folders.c.id == folder_id).values(**values, updated_at=now_utc())
            )
        return record(await _row(uow.db, folder_id))


async def delete(ctx: Any, folder_id: str) -> None:
    """Delete an empty folder (409 while it holds files or folders)."""
    await permissions.require(ctx, "media:delete")
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await _row(db, folder_id)
        held = await db.scalar(
            db.scope(select(func.count()).select_from(files).where(files.c.folder_id == folder_id), files)
        )
        below = await db.one(db.select(folders, folders.c.id).where(folders.c.parent_id == folder_id))
        if held or below is not None:
            raise ApiError(
                409,
                "CONFLICT",
                "The folder holds files or folders: move or delete them first",
                extensions={"files": int(held or 0), "folders": below is not None},
            )
        await db.execute(db.delete(folders).where(folders.c.id == folder_id))
