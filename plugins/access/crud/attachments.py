"""Attaching a policy to a role, a user or a team of the site, and detaching it.

``POST /policies/{id}/attach`` and ``POST /policies/{id}/detach`` take exactly one of
``{ roleId }``, ``{ userId }``, ``{ teamId }``. The target must belong to the site: a role
or team of it, or a user with a membership in it. Attaching twice is a 409, detaching what
is not attached a 404, so a client learns that its picture of the policy was stale.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.access.common import check_body, not_found, record_change, ref_id
from plugins.access.crud.policies import attachment_record, policy_row
from plugins.access.guards import assert_open_roles_not_admin, user_is_member
from plugins.access.tables import attachments, roles, teams

TARGETS = {"roleId": "role_id", "userId": "user_id", "teamId": "team_id"}


def parse_target(body: Any) -> tuple[str, str]:
    """``(body key, id)`` of the one target named."""
    body = check_body(body, set(TARGETS))
    # A key sent as null still counts: "exactly one" means one key, as the OpenAPI schema says.
    given = [k for k in TARGETS if k in body]
    if len(given) != 1:
        raise ApiError.validation("Send exactly one of 'roleId', 'userId', 'teamId'",
                                  path=[given[1]] if len(given) > 1 else ["body"])
    key = given[0]
    return key, ref_id(body[key], key)


async def _check_target(db: SiteDB, key: str, target_id: str) -> None:
    if key == "roleId":
        found = await db.one(db.select(roles, roles.c.id).where(roles.c.id == target_id)) is not None
        what = "role of this site"
    elif key == "teamId":
        found = await db.one(db.select(teams, teams.c.id).where(teams.c.id == target_id)) is not None
        what = "team of this site"
    else:
        found = await user_is_member(db, target_id)
        what = "user who is a member of this site"
    if not found:
        raise ApiError.validation(f"'{key}' must be a {what}", path=[key])


async def _existing(db: SiteDB, policy_id: str, key: str, target_id: str) -> Any:
    column = attachments.c[TARGETS[key]]
    return await db.one(db.select(attachments).where(attachments.c.policy_id == policy_id, column == target_id))


async def attach(ctx: Any, policy_id: str, body: Any) -> dict[str, Any]:
    key, target_id = parse_target(body)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        policy = await policy_row(db, policy_id)
        await _check_target(db, key, target_id)
        if await _existing(db, policy_id, key, target_id) is not None:
            raise ApiError(409, "CONFLICT", "The policy is already attached there", path=[key])
        row = {"id": uuid7(), "policy_id": policy_id, "role_id": None, "user_id": None, "team_id": None,
               "created_at": now_utc(), TARGETS[key]: target_id}
        await db.insert(attachments, row)
        if policy["admin_access"] and key == "roleId":
            await assert_open_roles_not_admin(db)
        await record_change(ctx, uow, "policy.attach", "policy", policy_id, {"name": policy["name"], key: target_id})
    return attachment_record(row)


async def detach(ctx: Any, policy_id: str, body: Any) -> None:
    key, target_id = parse_target(body)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        policy = await policy_row(db, policy_id)
        row = await _existing(db, policy_id, key, target_id)
        if row is None:
            raise not_found("attachment of this policy to that target")
        await db.execute(db.delete(attachments).where(attachments.c.id == row["id"]))
        await record_change(ctx, uow, "policy.detach", "policy", policy_id, {"name": policy["name"], key: target_id})
