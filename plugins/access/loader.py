"""Loading a principal's access snapshot for ``kernel.access`` (the ``load_access`` hook)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_

from kernel.auth.principal import Principal
from kernel.policy.access import AccessSnapshot, Rule
from kernel.tenancy.scope import SiteDB
from plugins.access.tables import attachments, memberships, permissions, policies, roles, team_members

MAX_ROLE_DEPTH = 32


async def load_snapshot(kernel: Any, site_id: str, principal: Principal) -> AccessSnapshot:
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        all_roles = {r["id"]: r for r in await db.all(db.select(roles))}
        role_id = await _role_of(db, principal, all_roles)
        chain = _role_chain(role_id, all_roles)
        team_ids: list[str] = []
        if principal.kind == "user" and principal.user_id:
            team_ids = [r["team_id"] for r in await db.all(
                db.select(team_members, team_members.c.team_id).where(team_members.c.user_id == principal.user_id))]
        targets = []
        if chain:
            targets.append(attachments.c.role_id.in_(chain))
        if principal.user_id and principal.kind in ("user", "external"):
            targets.append(attachments.c.user_id == principal.user_id)
        if team_ids:
            targets.append(attachments.c.team_id.in_(team_ids))
        policy_ids: list[str] = []
        if targets:
            policy_ids = sorted({r["policy_id"] for r in await db.all(
                db.select(attachments, attachments.c.policy_id).where(or_(*targets)))})
        admin = any(all_roles[r]["admin_access"] for r in chain)
        rules: list[Rule] = []
        if policy_ids:
            admin = admin or any(r["admin_access"] for r in await db.all(
                db.select(policies).where(policies.c.id.in_(policy_ids))))
            for r in await db.all(db.select(permissions).where(permissions.c.policy_id.in_(policy_ids))):
                rules.append(Rule(r["collection"], r["action"], tuple(r["fields"] or ()), r["conditions"] or None,
                                  r["policy_id"], r["id"]))
    return AccessSnapshot(site_id=site_id, admin=admin, role_id=role_id, role_ids=tuple(chain),
                          team_ids=tuple(team_ids), policy_ids=tuple(policy_ids), rules=rules)


async def _role_of(db: SiteDB, principal: Principal, all_roles: dict[str, Any]) -> str | None:
    if principal.kind == "anonymous":
        return next((rid for rid, r in all_roles.items() if r["system_key"] == "public"), None)
    if principal.kind == "user" and principal.user_id:
        row = await db.one(db.select(memberships).where(memberships.c.user_id == principal.user_id))
        return row["role_id"] if row else None
    # API keys and external tokens carry their role; it must be a role of this site.
    return principal.role_id if principal.role_id in all_roles else None


def _role_chain(role_id: str | None, all_roles: dict[str, Any]) -> list[str]:
    """The role and its ``parentId`` ancestors (cycle- and depth-guarded)."""
    chain: list[str] = []
    while role_id and role_id in all_roles and role_id not in chain and len(chain) < MAX_ROLE_DEPTH:
        chain.append(role_id)
        role_id = all_roles[role_id]["parent_id"]
    return chain
