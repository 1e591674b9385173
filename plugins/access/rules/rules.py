"""Permission rules of a policy: list, read, create, delete.

A rule is ``{ id, policyId, collection, action, fields, conditions }``. ``collection`` is a
collection name or ``*``; ``action`` one of ``kernel.access.actions``; ``fields`` field
names or ``["*"]``; ``conditions`` a filter tree (see ``conditions.py``) or null. Rules of
one policy may overlap: evaluation ORs them, so a duplicate is harmless and not refused.
The collection need not exist yet; a rule may be written before the schema it governs.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from plugins.access.common import check_body, collection_value, not_found, record_change
from plugins.access.crud.policies import policy_row
from plugins.access.rules.conditions import validate_conditions, validate_fields
from plugins.access.tables import permissions

RULE_FIELDS = frozenset({"collection", "action", "fields", "conditions"})


def rule_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "policyId": row["policy_id"], "collection": row["collection"],
            "action": row["action"], "fields": list(row["fields"] or []), "conditions": row["conditions"] or None}


def action_value(ctx: Any, action: Any) -> str:
    """``action``, one of the actions a rule may name (the kernel's and the enabled plugins',
    ``kernel.access.actions``), else 400."""
    actions = ctx.kernel.access.actions
    if action not in actions:
        raise ApiError.validation(f"'action' must be one of {', '.join(actions)}", path=["action"])
    return action


def parse_rule(ctx: Any, body: Any) -> dict[str, Any]:
    """Column values of a new rule, every part checked (400 with ``path``)."""
    body = check_body(body, RULE_FIELDS)
    if body.get("collection") is None:
        raise ApiError.validation("'collection' is required", path=["collection"])
    action = action_value(ctx, body.get("action"))
    return {"collection": collection_value(body["collection"]), "action": action,
            "fields": validate_fields(body.get("fields")), "conditions": validate_conditions(body.get("conditions"))}


async def list_rules(ctx: Any, policy_id: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        await policy_row(db, policy_id)
        where = permissions.c.policy_id == policy_id
        rows = await db.all(db.select(permissions).where(where)
                            .order_by(permissions.c.created_at, permissions.c.id).limit(limit).offset(offset))
        total = await db.scalar(db.select(permissions, func.count()).where(where))
    return [rule_record(r) for r in rows], total


async def get_rule(ctx: Any, policy_id: str, rule_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        await policy_row(db, policy_id)
        row = await db.one(db.select(permissions).where(permissions.c.id == rule_id,
                                                        permissions.c.policy_id == policy_id))
    if row is None:
        raise not_found("permission rule in this policy")
    return rule_record(row)


async def insert_rule(ctx: Any, uow: Any, policy: Any, values: dict[str, Any]) -> dict[str, Any]:
    """Store a checked rule in ``policy`` and record the change (ids and names only)."""
    row = {"id": uuid7(), "policy_id": policy["id"], "created_at": now_utc(), **values}
    await uow.db.insert(permissions, row)
    await record_change(ctx, uow, "permission.create", "permission", row["id"],
                        {"policyId": policy["id"], "name": policy["name"], "collection": values["collection"],
                         "action": values["action"]})
    return row


async def create_rule(ctx: Any, policy_id: str, body: Any) -> dict[str, Any]:
    values = parse_rule(ctx, body)
    async with ctx.unit_of_work() as uow:
        policy = await policy_row(uow.db, policy_id)
        row = await insert_rule(ctx, uow, policy, values)
    return rule_record(row)


async def delete_rule_row(ctx: Any, uow: Any, policy: Any, row: Any) -> None:
    """Delete one rule row of ``policy`` and record the change."""
    db = uow.db
    await db.execute(db.delete(permissions).where(permissions.c.id == row["id"]))
    await record_change(ctx, uow, "permission.delete", "permission", row["id"],
                        {"policyId": policy["id"], "name": policy["name"], "collection": row["collection"],
                         "action": row["action"]})


async def delete_rule(ctx: Any, policy_id: str, rule_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        db = uow.db
        policy = await policy_row(db, policy_id)
        row = await db.one(db.select(permissions).where(permissions.c.id == rule_id,
                                                        permissions.c.policy_id == policy_id))
        if row is None:
            raise not_found("permission rule in this policy")
        await delete_rule_row(ctx, uow, policy, row)
