"""Transform presets: ``{ id, key, name, dsl }`` per site; ``dsl`` is a query string of
transform parameters (``width=64&height=64&format=png``), checked like ``/assets``' own.

Permissions (docs/files.md, Permissions): list ``media:read``, create ``media:create``, update
``media:update``, delete ``media:delete``. ``key`` is unique in the site (409 ``CONFLICT``).
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.files import permissions
from plugins.files.assets import transforms
from plugins.files.errors import not_found
from plugins.files.tables import presets

KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
BODY_KEYS = frozenset({"key", "name", "dsl"})


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "key": row["key"], "name": row["name"], "dsl": row["dsl"],
            "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}


def _body(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    reject_unknown(body, BODY_KEYS)
    out: dict[str, Any] = {}
    if creating or "key" in body:
        if not isinstance(body.get("key"), str) or not KEY.match(body["key"]):
            raise ApiError.validation("'key' is 1 to 64 lower-case letters, digits, '_' and '-'", path=["key"])
        out["key"] = body["key"]
    if creating or "name" in body:
        name = body.get("name")
        if not isinstance(name, str) or not 1 <= len(name.strip()) <= 255:
            raise ApiError.validation("'name' is 1 to 255 characters", path=["name"])
        out["name"] = name
    if creating or "dsl" in body:
        transforms.parse_dsl(body.get("dsl"))
        out["dsl"] = body["dsl"].strip().lstrip("?")
    return out


def _conflict() -> ApiError:
    return ApiError(409, "CONFLICT", "A transform preset with this key exists in the site", path=["key"])


async def list_presets(ctx: Any) -> list[dict[str, Any]]:
    await permissions.require(ctx, "media:read")
    async with ctx.reader() as db:
        rows = await db.all(db.select(presets).order_by(presets.c.key))
    return [record(r) for r in rows]


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    await permissions.require(ctx, "media:create")
    values = _body(body, creating=True)
    now = now_utc()
    preset_id = uuid7()
    try:
        async with ctx.unit_of_work() as uow:
            await uow.db.insert(presets, {"id": preset_id, **values, "created_at": now, "updated_at": now})
            row = await uow.db.one(uow.db.select(presets).where(presets.c.id == preset_id))
    except IntegrityError:
        raise _conflict() from None
    return record(row)


async def _row(db: Any, preset_id: str) -> Any:
    if not isinstance(preset_id, str) or len(preset_id) > 36:
        raise not_found("transform preset")
    row = await db.one(db.select(presets).where(presets.c.id == preset_id))
    if row is None:
        raise not_found("transform preset")
    return row


async def update(ctx: Any, preset_id: str, body: dict[str, Any]) -> dict[str, Any]:
    await permissions.require(ctx, "media:update")
    values = _body(body, creating=False)
    try:
        async with ctx.unit_of_work() as uow:
            await _row(uow.db, preset_id)
            if values:
                await uow.db.execute(uow.db.update(presets).where(presets.c.id == preset_id)
                                     .values(**values, updated_at=now_utc()))
            row = await _row(uow.db, preset_id)
    except IntegrityError:
        raise _conflict() from None
    return record(row)


async def delete(ctx: Any, preset_id: str) -> None:
    await permissions.require(ctx, "media:delete")
    async with ctx.unit_of_work() as uow:
        await _row(uow.db, preset_id)
        await uow.db.execute(uow.db.delete(presets).where(presets.c.id == preset_id))
