"""Subscriber access: which collections self-registered subscribers may read.

``POST /users/subscriber-access { collection }`` grants, ``GET`` lists ``[{ collection }]``,
``DELETE /users/subscriber-access/{collection}`` revokes. A grant is an unconditional
``read`` rule on all fields in the site's built-in policy ``subscriber_access``, which is
created on first use and attached to the ``subscriber`` role. Being ordinary data, a grant
is evaluated, cached and invalidated like every other rule.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.access import api
from plugins.access.common import check_body, collection_value, is_collection_name, not_found
from plugins.access.rules import role_rules
from plugins.access.rules.rules import delete_rule_row, insert_rule
from plugins.access.tables import permissions, policies

SYSTEM_KEY = role_rules.SUBSCRIBER_KEY


async def _policy(db: SiteDB) -> Any:
    return await db.one(db.select(policies).where(policies.c.system_key == SYSTEM_KEY))


def _grant_filter(policy_id: str, collection: str | None = None) -> list[Any]:
    """Read rules of the built-in policy (on ``collection``)."""
    where = [permissions.c.policy_id == policy_id, permissions.c.action == "read"]
    if collection is not None:
        where.append(permissions.c.collection == collection)
    return where


def _is_grant(row: Any) -> bool:
    """A grant is a read rule on every field without conditions; other rules an admin added to
    the policy through /policies are not grants and are left alone. (Checked here, not in SQL:
    a JSON null is stored as the JSON text 'null', not as SQL NULL.)"""
    return not row["conditions"] and list(row["fields"] or []) == ["*"]


async def list_grants(ctx: Any) -> list[dict[str, str]]:
    async with ctx.reader() as db:
        policy = await _policy(db)
        if policy is None:
            return []
        rows = await db.all(db.select(permissions).where(*_grant_filter(policy["id"])))
    return [{"collection": c} for c in sorted({r["collection"] for r in rows if _is_grant(r)})]


async def _ensure_policy(ctx: Any, uow: Any) -> Any:
    """The built-in policy: the subscriber role's own (``role_rules``), created and attached when missing."""
    role = await api.role_by_system_key(uow.conn, uow.site_id, "subscriber")
    if role is None:
        raise ApiError(409, "CONFLICT", "This site has no subscriber role")
    return await role_rules.ensure_policy(ctx, uow, role)


async def grant(ctx: Any, body: Any) -> tuple[dict[str, str], bool]:
    """Grant read on ``collection``; returns the grant and whether it is new."""
    body = check_body(body, {"collection"})
    if body.get("collection") is None:
        raise ApiError.validation("'collection' is required", path=["collection"])
    collection = collection_value(body["collection"], wildcard=False)
    async with ctx.unit_of_work() as uow:
        policy = await _ensure_policy(ctx, uow)
        db = uow.db
        rows = await db.all(db.select(permissions).where(*_grant_filter(policy["id"], collection)))
        if any(_is_grant(r) for r in rows):
            return {"collection": collection}, False
        await insert_rule(ctx, uow, policy, {"collection": collection, "action": "read", "fields": ["*"],
                                             "conditions": None})
    return {"collection": collection}, True


async def revoke(ctx: Any, collection: str) -> None:
    """Remove every grant on ``collection`` (404 when there is none)."""
    if not is_collection_name(collection):
        raise not_found("subscriber access grant")  # a name that cannot exist was never granted
    async with ctx.unit_of_work() as uow:
        db = uow.db
        policy = await _policy(db)
        rows = [] if policy is None else [r for r in await db.all(
            db.select(permissions).where(*_grant_filter(policy["id"], collection))) if _is_grant(r)]
        if not rows:
            raise not_found("subscriber access grant")
        for row in rows:
            await delete_rule_row(ctx, uow, policy, row)
