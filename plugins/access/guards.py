"""Invariants of a site's access data, checked inside the transaction that changes it.

- The role tree has no cycle and no chain deeper than the evaluator follows.
- The ``public`` and ``subscriber`` roles never carry admin access, not through their own
  flag, an ancestor's, or an attached policy: anyone can be anonymous or sign up, so admin
  there would be admin for everyone. Checked after every change that could break it.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.access.loader import MAX_ROLE_DEPTH
from plugins.access.tables import attachments, memberships, policies, roles

OPEN_ROLES = ("public", "subscriber")


async def all_roles(db: SiteDB) -> dict[str, dict[str, Any]]:
    """Every role of the site by id (sites hold tens of roles, not millions)."""
    return {r["id"]: dict(r) for r in await db.all(db.select(roles))}


def role_chain(role_id: str | None, by_id: dict[str, dict[str, Any]]) -> list[str]:
    """The role and its ancestors, stopping at a cycle (callers check for one separately)."""
    chain: list[str] = []
    while role_id and role_id in by_id and role_id not in chain:
        chain.append(role_id)
        role_id = by_id[role_id]["parent_id"]
    return chain


def check_parent(role_id: str, parent_id: str | None, by_id: dict[str, dict[str, Any]]) -> None:
    """``parent_id`` as the new parent of ``role_id``: no cycle, no over-deep chain (400)."""
    if parent_id is None:
        return
    if parent_id not in by_id:
        raise ApiError.validation("'parentId' must be a role of this site", path=["parentId"])
    ancestors = role_chain(parent_id, by_id)
    if role_id in ancestors:
        raise ApiError.validation("'parentId' would make the role its own ancestor", path=["parentId"])
    # The deepest descendant of role_id gets len(ancestors) + 1 more levels above it.
    below = _depth_below(role_id, by_id)
    if len(ancestors) + below > MAX_ROLE_DEPTH:
        raise ApiError.validation(f"Role chains may be at most {MAX_ROLE_DEPTH} roles deep", path=["parentId"])


def _depth_below(role_id: str, by_id: dict[str, dict[str, Any]]) -> int:
    """1 + the longest chain of descendants under ``role_id``."""
    children: dict[str, list[str]] = {}
    for rid, row in by_id.items():
        if row["parent_id"]:
            children.setdefault(row["parent_id"], []).append(rid)
    best, stack, seen = 1, [(role_id, 1)], {role_id}
    while stack:
        current, depth = stack.pop()
        best = max(best, depth)
        for child in children.get(current, ()):
            if child not in seen:
                seen.add(child)
                stack.append((child, depth + 1))
    return best


async def assert_open_roles_not_admin(db: SiteDB) -> None:
    """409 when the public or subscriber role would grant admin access (see module doc)."""
    by_id = await all_roles(db)
    for row in by_id.values():
        if row["system_key"] not in OPEN_ROLES:
            continue
        chain = role_chain(row["id"], by_id)
        if any(by_id[r]["admin_access"] for r in chain):
            raise _open_admin(row["system_key"])
        stmt = (db.scope(db.select(attachments, attachments.c.id)
                         .join(policies, policies.c.id == attachments.c.policy_id), policies)
                .where(attachments.c.role_id.in_(chain), policies.c.admin_access.is_(True)).limit(1))
        if chain and await db.one(stmt) is not None:
            raise _open_admin(row["system_key"])


def _open_admin(system_key: str) -> ApiError:
    who = "anonymous requests" if system_key == "public" else "self-registered subscribers"
    return ApiError.conflict(
        f"The {system_key} role applies to {who}; it can never carry admin access "
        "(through its own flag, a parent role, or an attached policy)")


async def user_is_member(db: SiteDB, user_id: str) -> bool:
    """Whether ``user_id`` has a membership (a role) in the site."""
    return await db.one(db.select(memberships, memberships.c.user_id)
                        .where(memberships.c.user_id == user_id)) is not None
