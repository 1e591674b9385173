"""A role's own rules: one call gives a role a permission (docs/access.md#one-call-for-a-role).

``POST /roles/{role_id}/permissions { collection, action?, fields?, conditions? }``: ``role_id`` is
a role's id or the key of a built-in role (``public``, ``subscriber``, ``admin``); ``action``
defaults to ``read`` and ``fields`` to ``["*"]``, the rest is checked as on
``/policies/{id}/permissions``. The rule goes into the role's own policy, created and attached to
the role on first use (re-attached if someone detached it): ``systemKey`` ``role_<role id hex>``,
or ``subscriber_access`` for the subscriber role, the policy ``/users/subscriber-access`` grants
into. An identical rule already there answers 200 with it, a new one 201. ``GET`` lists the
rules of that policy. A rule is removed like any other (``DELETE
/policies/{policyId}/permissions/{id}``); deleting a role takes its own policy with it.
"""

from __future__ import annotations

from typing import Any

from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from plugins.access.common import check_body, not_found, record_change
from plugins.access.crud.policies import insert_policy
from plugins.access.rules.rules import RULE_FIELDS, insert_rule, parse_rule, rule_record
from plugins.access.tables import attachments, permissions, policies, roles

BUILT_IN = ("admin", "public", "subscriber")
SUBSCRIBER_KEY = "subscriber_access"
SUBSCRIBER_NAMES = ("Subscriber access", "Subscriber access (built-in)")


def own_key(role: Any) -> str:
    """The system key of a role's own policy (at most 40 characters, like the column)."""
    if role["system_key"] == "subscriber":
        return SUBSCRIBER_KEY
    return f"role_{str(role['id']).replace('-', '')}"[:40]


async def role_of(db: Any, ref: Any) -> Any:
    """The role ``ref`` names in the site: a built-in key or an id (404 otherwise)."""
    if isinstance(ref, str) and ref in BUILT_IN:
        row = await db.one(db.select(roles).where(roles.c.system_key == ref))
    else:
        row = await db.one(db.select(roles).where(roles.c.id == ref)) if isinstance(ref, str) else None
    if row is None:
        raise not_found("role")
    return row


async def ensure_policy(ctx: Any, uow: Any, role: Any) -> Any:
    """The role's own policy, created and attached to the role when missing."""
    db = uow.db
    key = own_key(role)
    policy = await db.one(db.select(policies).where(policies.c.system_key == key))
    if policy is None:
        names = SUBSCRIBER_NAMES if key == SUBSCRIBER_KEY else (f"{role['name']} (role)"[:200],)
        taken = {r["name"] for r in await db.all(db.select(policies, policies.c.name)
                                                 .where(policies.c.name.in_(names)))}
        name = next((n for n in names if n not in taken), f"{names[0][:180]} {uuid7()[-8:]}")
        policy = await insert_policy(ctx, uow, name, system_key=key)
    attached = await db.one(db.select(attachments, attachments.c.id).where(
        attachments.c.policy_id == policy["id"], attachments.c.role_id == role["id"]))
    if attached is None:
        # Created now, or detached by hand since: a grant must take effect, so (re-)attach.
        await db.insert(attachments, {"id": uuid7(), "policy_id": policy["id"], "role_id": role["id"],
                                      "user_id": None, "team_id": None, "created_at": now_utc()})
        await record_change(ctx, uow, "policy.attach", "policy", policy["id"],
                            {"name": policy["name"], "roleId": role["id"]})
    return policy


async def add_rule(ctx: Any, ref: str, body: Any) -> tuple[dict[str, Any], bool]:
    """The rule, and whether it is new (an identical one is not stored twice)."""
    body = dict(check_body(body, RULE_FIELDS))
    body.setdefault("action", "read")
    values = parse_rule(ctx, body)
    async with ctx.unit_of_work() as uow:
        role = await role_of(uow.db, ref)
        policy = await ensure_policy(ctx, uow, role)
        rows = await uow.db.all(uow.db.select(permissions).where(
            permissions.c.policy_id == policy["id"], permissions.c.collection == values["collection"],
            permissions.c.action == values["action"]))
        for row in rows:
            if list(row["fields"] or []) == values["fields"] and (row["conditions"] or None) == values["conditions"]:
                return rule_record(row), False
        return rule_record(await insert_rule(ctx, uow, policy, values)), True


async def list_rules(ctx: Any, ref: str) -> list[dict[str, Any]]:
    """The rules of the role's own policy (none before its first rule)."""
    async with ctx.reader() as db:
        role = await role_of(db, ref)
        policy = await db.one(db.select(policies).where(policies.c.system_key == own_key(role)))
        if policy is None:
            return []
        rows = await db.all(db.select(permissions).where(permissions.c.policy_id == policy["id"])
                            .order_by(permissions.c.created_at, permissions.c.id))
    return [rule_record(r) for r in rows]


async def drop_own_policy(uow: Any, role: Any) -> None:
    """With a deleted role: its own policy and that policy's rules (nothing else holds them)."""
    db = uow.db
    policy = await db.one(db.select(policies).where(policies.c.system_key == own_key(role)))
    if policy is None or role["system_key"]:
        return
    await db.execute(db.delete(permissions).where(permissions.c.policy_id == policy["id"]))
    await db.execute(db.delete(attachments).where(attachments.c.policy_id == policy["id"]))
    await db.execute(db.delete(policies).where(policies.c.id == policy["id"]))
