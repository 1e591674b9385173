"""The agent role library (``/agent/roles``, admin): name, description, skills, collections,
autonomy level (the role's grant) and default budget."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.agents.common import (
    CREATE_MAX_LEVEL,
    LEVELS,
    ROLE_NAME,
    invalid,
    level,
    name_param,
    parse_budget,
    require_admin,
    require_member,
    site_db,
)
from plugins.agents.tables import roles

FIELDS = {"name", "description", "skills", "collections", "autonomy", "budget"}


def record(row: Any) -> dict[str, Any]:
    return {"name": row["name"], "description": row["description"], "skills": row["skills"],
            "collections": row["collections"], "autonomy": row["level"], "budget": row["budget"],
            "autonomySince": iso(row["level_changed_at"]), "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"])}


def _names(body: dict[str, Any], key: str) -> list[str] | None:
    if key not in body:
        return None
    value = body[key]
    if not isinstance(value, list) or len(value) > 100 or not all(
            isinstance(v, str) and ROLE_NAME.match(v) for v in value):
        raise invalid(f"'{key}' is a list of at most 100 names (lowercase letters, digits, _ and -)", [key])
    return list(dict.fromkeys(value))


def _description(body: dict[str, Any]) -> str:
    value = body.get("description", "")
    if not isinstance(value, str) or len(value) > 2000:
        raise invalid("'description' is a string of at most 2000 characters", ["description"])
    return value


async def load(conn: Any, site_id: str, name: str) -> Any:
    db = site_db(conn, site_id)
    return await db.one(db.select(roles).where(roles.c.name == name))


async def get_role(kernel: Any, site_id: str, name: str | None) -> Any:
    if name is None:
        return None
    async with kernel.db.connect() as conn:
        return await load(conn, site_id, name)


async def list_roles(ctx: Any) -> list[dict[str, Any]]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        rows = await db.all(db.select(roles).order_by(roles.c.name))
    return [record(r) for r in rows]


async def read(ctx: Any, name: str) -> dict[str, Any]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        row = await load(conn, site_id, name_param(name))
    if row is None:
        raise ApiError.not_found("Agent role not found")
    return record(row)


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    site_id = await require_admin(ctx)
    reject_unknown(body, FIELDS)
    name = body.get("name")
    if not isinstance(name, str) or not ROLE_NAME.match(name):
        raise invalid("'name' is lowercase letters, digits, _ and -, at most 64, starting with a letter", ["name"])
    autonomy = level(body.get("autonomy", "suggest"), ["autonomy"])
    if LEVELS.index(autonomy) > LEVELS.index(CREATE_MAX_LEVEL):
        raise ApiError(403, "PROMOTION_REQUIRED", f"A role starts at most at '{CREATE_MAX_LEVEL}'; "
                       "a higher level needs a decided promotion")
    now = now_utc()
    row = {"id": uuid7(), "name": name, "description": _description(body),
           "skills": _names(body, "skills") or [], "collections": _names(body, "collections") or [],
           "level": autonomy, "level_changed_at": now,
           "budget": parse_budget(body.get("budget", {}), ["budget"], partial=False),
           "created_at": now, "updated_at": now}
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        if await load(uow.conn, site_id, name) is not None:
            raise ApiError.conflict(f"An agent role '{name}' exists", code="RECORD_NOT_UNIQUE")
        await uow.db.insert(roles, row)
    return record({**row, "site_id": site_id})


async def update(ctx: Any, name: str, body: dict[str, Any]) -> dict[str, Any]:
    site_id = await require_admin(ctx)
    name = name_param(name)
    reject_unknown(body, FIELDS - {"name"})
    changes: dict[str, Any] = {}
    if "description" in body:
        changes["description"] = _description(body)
    for key in ("skills", "collections"):
        found = _names(body, key)
        if found is not None:
            changes[key] = found
    if "budget" in body:
        changes["budget"] = parse_budget(body["budget"], ["budget"], partial=False)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await load(uow.conn, site_id, name)
        if row is None:
            raise ApiError.not_found("Agent role not found")
        if "autonomy" in body:
            wanted = level(body["autonomy"], ["autonomy"])
            if LEVELS.index(wanted) > LEVELS.index(row["level"]):
                raise ApiError(403, "PROMOTION_REQUIRED", "Raising a role's autonomy needs a decided promotion "
                               "(POST /agent/autonomy/promotions)")
            if wanted != row["level"]:
                changes.update(level=wanted, level_changed_at=now_utc())
        changes["updated_at"] = now_utc()
        await uow.db.execute(uow.db.update(roles).where(roles.c.id == row["id"]).values(**changes))
    return record({**row, **changes})


async def delete(ctx: Any, name: str) -> None:
    site_id = await require_admin(ctx)
    name = name_param(name)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        done = await uow.db.execute(uow.db.delete(roles).where(roles.c.name == name))
        if done.rowcount != 1:
            raise ApiError.not_found("Agent role not found")

