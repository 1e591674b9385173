"""Policies: list, read, create, update, delete.

A policy is ``{ id, name, adminAccess, systemKey, attachments }``; ``attachments`` lists
where it applies (``{ id, policyId, roleId, userId, teamId }``, exactly one target set).
Built-in policies (``systemKey`` set, such as ``subscriber_access``) cannot be deleted and
cannot gain admin access; their rules are managed like any other policy's.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.access.common import (
    bool_value,
    check_body,
    check_name_free,
    name_value,
    page_of,
    record_change,
    row_by_id,
)
from plugins.access.guards import assert_open_roles_not_admin
from plugins.access.tables import attachments, permissions, policies

POLICY_FIELDS = frozenset({"name", "adminAccess"})


def attachment_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "policyId": row["policy_id"], "roleId": row["role_id"],
            "userId": row["user_id"], "teamId": row["team_id"]}


def policy_record(row: Any, attached: list[Any]) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "adminAccess": bool(row["admin_access"]),
            "systemKey": row["system_key"], "attachments": [attachment_record(a) for a in attached]}


async def _attachments_of(db: SiteDB, policy_ids: list[str]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {pid: [] for pid in policy_ids}
    if policy_ids:
        stmt = (db.select(attachments).where(attachments.c.policy_id.in_(policy_ids))
                .order_by(attachments.c.created_at, attachments.c.id))
        for row in await db.all(stmt):
            out[row["policy_id"]].append(row)
    return out


async def policy_row(db: SiteDB, policy_id: str) -> Any:
    """The policy row of this site, or 404."""
    return await row_by_id(db, policies, policy_id, "policy")


async def list_policies(ctx: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        rows, total = await page_of(db, policies, limit, offset)
        attached = await _attachments_of(db, [r["id"] for r in rows])
    return [policy_record(r, attached[r["id"]]) for r in rows], total


async def get_policy(ctx: Any, policy_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        row = await policy_row(db, policy_id)
        attached = await _attachments_of(db, [policy_id])
    return policy_record(row, attached[policy_id])


def _parse(body: Any, *, creating: bool) -> dict[str, Any]:
    body = check_body(body, POLICY_FIELDS)
    values: dict[str, Any] = {}
    if creating or "name" in body:
        values["name"] = name_value(body.get("name"))
    if creating or "adminAccess" in body:
        if not creating and body.get("adminAccess") is None:
            raise ApiError.validation("'adminAccess' must be a boolean", path=["adminAccess"])
        values["admin_access"] = bool_value(body, "adminAccess", False)
    return values


async def insert_policy(ctx: Any, uow: Any, name: str, admin_access: bool = False,
                        system_key: str | None = None) -> dict[str, Any]:
    """Insert a policy (name already checked) and record the change."""
    row = {"id": uuid7(), "name": name, "admin_access": admin_access, "system_key": system_key,
           "created_at": now_utc()}
    try:
        await uow.db.insert(policies, row)
    except IntegrityError as exc:
        raise ApiError.conflict(f"A policy named '{name}' already exists in this site") from exc
    await record_change(ctx, uow, "policy.create", "policy", row["id"],
                        {"name": name, "adminAccess": admin_access})
    return row


async def create_policy(ctx: Any, body: Any) -> dict[str, Any]:
    values = _parse(body, creating=True)
    async with ctx.unit_of_work() as uow:
        await check_name_free(uow.db, policies, "policy", values["name"])
        row = await insert_policy(ctx, uow, values["name"], values["admin_access"])
    return policy_record(row, [])


async def update_policies(ctx: Any, policy_ids: list[str], body: Any) -> list[dict[str, Any]]:
    """Apply one patch to each policy, all or nothing (also the Directus bulk form)."""
    values = _parse(body, creating=False)
    out = []
    async with ctx.unit_of_work() as uow:
        db = uow.db
        for policy_id in policy_ids:
            row = dict(await policy_row(db, policy_id))
            changes = {k: v for k, v in values.items() if row[k] != v}
            if "name" in changes:
                await check_name_free(db, policies, "policy", changes["name"], exclude=policy_id)
            if row["system_key"] and changes.get("admin_access"):
                raise ApiError(409, "CONFLICT", "A built-in policy cannot have admin access", path=["adminAccess"])
            if changes:
                try:
                    await db.execute(db.update(policies).where(policies.c.id == policy_id).values(**changes))
                except IntegrityError as exc:
                    raise ApiError.conflict("A policy with that name already exists in this site") from exc
                if changes.get("admin_access"):
                    await assert_open_roles_not_admin(db)
                row.update(changes)
                await record_change(ctx, uow, "policy.update", "policy", policy_id,
                                    {"name": row["name"], "adminAccess": row["admin_access"]})
            attached = await _attachments_of(db, [policy_id])
            out.append(policy_record(row, attached[policy_id]))
    return out


async def delete_policies(ctx: Any, policy_ids: list[str]) -> None:
    """Delete each policy with its rules and attachments, all or nothing."""
    async with ctx.unit_of_work() as uow:
        db = uow.db
        for policy_id in policy_ids:
            row = await policy_row(db, policy_id)
            if row["system_key"]:
                raise ApiError.conflict(f"The built-in policy '{row['system_key']}' cannot be deleted")
            # Explicit deletes rather than trusting ON DELETE CASCADE to be enabled everywhere.
            await db.execute(db.delete(permissions).where(permissions.c.policy_id == policy_id))
            await db.execute(db.delete(attachments).where(attachments.c.policy_id == policy_id))
            await db.execute(db.delete(policies).where(policies.c.id == policy_id))
            await record_change(ctx, uow, "policy.delete", "policy", policy_id, {"name": row["name"]})


