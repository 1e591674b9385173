"""Roles: list, read, create, update, delete.

A role is ``{ id, name, parentId, adminAccess, systemKey }``. Built-in roles (``systemKey``
``admin``, ``public``, ``subscriber``) may be renamed but not deleted, and the admin role
keeps its admin access. A role with members or child roles is not deleted (409): members
would lose their only role in the site, and children their inherited rules, silently.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from plugins.access.common import (
    bool_value,
    check_body,
    check_name_free,
    name_value,
    not_found,
    page_of,
    record_change,
    ref_id,
    row_by_id,
)
from plugins.access.guards import all_roles, assert_open_roles_not_admin, check_parent
from plugins.access.rules import role_rules
from plugins.access.tables import attachments, memberships, roles

ROLE_FIELDS = frozenset({"name", "parentId", "adminAccess"})


def role_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "parentId": row["parent_id"],
            "adminAccess": bool(row["admin_access"]), "systemKey": row["system_key"]}


async def list_roles(ctx: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """A page of the site's roles in creation order, and the total."""
    async with ctx.reader() as db:
        rows, total = await page_of(db, roles, limit, offset)
    return [role_record(r) for r in rows], total


async def get_role(ctx: Any, role_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        return role_record(await row_by_id(db, roles, role_id, "role"))


def _parse(body: Any, *, creating: bool) -> dict[str, Any]:
    """Column values from a create or patch body (only the keys it names, when patching)."""
    body = check_body(body, ROLE_FIELDS)
    values: dict[str, Any] = {}
    if creating or "name" in body:
        values["name"] = name_value(body.get("name"))
    if "parentId" in body:
        values["parent_id"] = None if body["parentId"] is None else ref_id(body["parentId"], "parentId")
    if "adminAccess" in body or creating:
        if "adminAccess" in body and body["adminAccess"] is None and not creating:
            raise ApiError.validation("'adminAccess' must be a boolean", path=["adminAccess"])
        values["admin_access"] = bool_value(body, "adminAccess", False)
    return values


async def create_role(ctx: Any, body: Any) -> dict[str, Any]:
    values = _parse(body, creating=True)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await check_name_free(db, roles, "role", values["name"])
        role_id = uuid7()
        check_parent(role_id, values.get("parent_id"), await all_roles(db))
        row = {"id": role_id, "parent_id": None, "system_key": None, "created_at": now_utc(), **values}
        try:
            await db.insert(roles, row)
        except IntegrityError as exc:
            raise ApiError.conflict(f"A role named '{values['name']}' already exists in this site") from exc
        await record_change(ctx, uow, "role.create", "role", role_id,
                            {"name": row["name"], "parentId": row["parent_id"], "adminAccess": row["admin_access"]})
    return role_record(row)


async def update_roles(ctx: Any, role_ids: list[str], body: Any) -> list[dict[str, Any]]:
    """Apply one patch to each role, all or nothing (also the Directus bulk form)."""
    values = _parse(body, creating=False)
    out = []
    async with ctx.unit_of_work() as uow:
        for role_id in role_ids:
            out.append(await _update_one(ctx, uow, role_id, values))
    return out


async def _update_one(ctx: Any, uow: Any, role_id: str, values: dict[str, Any]) -> dict[str, Any]:
    db = uow.db
    by_id = await all_roles(db)
    row = by_id.get(role_id)
    if row is None:
        raise not_found("role")
    changes = {k: v for k, v in values.items() if row[k] != v}
    if "name" in changes:
        await check_name_free(db, roles, "role", changes["name"], exclude=role_id)
    if "parent_id" in changes:
        check_parent(role_id, changes["parent_id"], by_id)
    if row["system_key"] == "admin" and changes.get("admin_access") is False:
        raise ApiError(409, "CONFLICT", "The built-in admin role always has admin access",
                       path=["adminAccess"])
    if not changes:
        return role_record(row)
    try:
        await db.execute(db.update(roles).where(roles.c.id == role_id).values(**changes))
    except IntegrityError as exc:
        raise ApiError.conflict("A role with that name already exists in this site") from exc
    if "parent_id" in changes or "admin_access" in changes:
        await assert_open_roles_not_admin(db)
    row = {**row, **changes}
    await record_change(ctx, uow, "role.update", "role", role_id,
                        {"name": row["name"], "changed": sorted(_API_NAMES[k] for k in changes)})
    return role_record(row)


_API_NAMES = {"name": "name", "parent_id": "parentId", "admin_access": "adminAccess"}


async def delete_roles(ctx: Any, role_ids: list[str]) -> None:
    """Delete each role, all or nothing: never a built-in role, one with members, or a parent
    (unless its children go in the same request)."""
    doomed = set(role_ids)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        for role_id in role_ids:
            row = await row_by_id(db, roles, role_id, "role")
            if row["system_key"]:
                raise ApiError.conflict(f"The built-in role '{row['system_key']}' cannot be deleted")
            members = await db.scalar(db.select(memberships, func.count()).where(memberships.c.role_id == role_id))
            if members:
                raise ApiError.conflict(
                    f"The role has {members} member(s); give them another role first", members=members)
            children = [r["id"] for r in await db.all(
                db.select(roles, roles.c.id).where(roles.c.parent_id == role_id))]
            if set(children) - doomed:
                raise ApiError.conflict("Other roles inherit from this role; change their parentId first",
                                        children=len(set(children) - doomed))
            await db.execute(db.delete(attachments).where(attachments.c.role_id == role_id))
            await role_rules.drop_own_policy(uow, row)
            await db.execute(db.delete(roles).where(roles.c.id == role_id))
            await record_change(ctx, uow, "role.delete", "role", role_id, {"name": row["name"]})


