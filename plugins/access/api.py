"""What other plugins may use of access (declare ``requires = ("access",)``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, or_, select

from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.policy.access import CHANGED_EVENT
from kernel.tenancy.scope import SiteDB
from kernel.tenancy.tables import sites as _sites
from plugins.access import tables as _t
from plugins.access.guards import all_roles, role_chain

# Tables stay private (``_t``): other plugins call these functions; a plugin that lists a site's
# members joined with rows of its own joins ``members(db)``, a query built here.


async def role_by_system_key(conn: Any, site_id: str, key: str) -> Any:
    """The built-in role ``admin``, ``public`` or ``subscriber`` of a site."""
    db = SiteDB(site_id, conn)
    return await db.one(db.select(_t.roles).where(_t.roles.c.system_key == key))


async def role_in_site(conn: Any, site_id: str, role_id: Any) -> Any:
    """The role ``role_id`` if it belongs to ``site_id`` (never another site's role)."""
    if not isinstance(role_id, str):
        return None
    db = SiteDB(site_id, conn)
    return await db.one(db.select(_t.roles).where(_t.roles.c.id == role_id))


def members(db: SiteDB) -> Any:
    """The members of ``db``'s site as a subquery (``user_id``, ``role_id``, ``created_at``), for a
    plugin that lists them joined with rows of its own (accounts' ``/users``): the join runs in
    SQL, and access's table stays access's."""
    return db.select(_t.memberships, _t.memberships.c.user_id, _t.memberships.c.role_id,
                     _t.memberships.c.created_at).subquery("members")


async def membership(conn: Any, site_id: str, user_id: str) -> Any:
    db = SiteDB(site_id, conn)
    return await db.one(db.select(_t.memberships).where(_t.memberships.c.user_id == user_id))


async def realm(conn: Any, site_id: str | None, user_id: str) -> str:
    """The ``realm`` claim of ``user_id``'s access token in ``site_id`` (docs/decisions/site-bound-tokens.md):
    ``frontend`` when its role there is the built-in ``subscriber``, else ``studio``."""
    if site_id is None:
        return "studio"
    member = await membership(conn, site_id, user_id)
    role = None if member is None else await role_in_site(conn, site_id, member["role_id"])
    return "frontend" if role is not None and role["system_key"] == "subscriber" else "studio"


async def is_frontend(ctx: Any, site_id: str) -> bool:
    """Whether the caller is of the frontend realm in ``site_id``: its token says so (the
    ``realm`` claim), or its role there is the built-in ``subscriber`` (checked now, so a token
    issued before a role change cannot pass for the studio)."""
    principal = ctx.principal
    if principal.claims.get("realm") == "frontend":
        return True
    if principal.role_id is None:
        return False
    async with ctx.kernel.db.connect() as conn:
        subscriber = await role_by_system_key(conn, site_id, "subscriber")
    return subscriber is not None and subscriber["id"] == principal.role_id


async def require_studio(ctx: Any, what: str) -> str:
    """The request's site, for a signed-in studio member of it: 401 ``UNAUTHENTICATED`` when
    anonymous, 403 for the frontend realm or a principal holding no role there. ``what`` names
    the feature in the messages ("Releases")."""
    from kernel import ApiError

    site_id = ctx.require_site()
    principal = ctx.principal
    if not principal.is_authenticated:
        raise ApiError(401, "UNAUTHENTICATED", f"{what}: sign in as a member of the site")
    if not (principal.is_admin or principal.role_id) or await is_frontend(ctx, site_id):
        raise ApiError.forbidden(f"{what}: for members of the site (studio roles; not the frontend realm)")
    return site_id


async def set_membership(conn: Any, site_id: str, user_id: str, role_id: str) -> str | None:
    """Make ``user_id`` a member of the site with ``role_id`` (insert or change the role); the
    role it held before (None for a new member)."""
    db = SiteDB(site_id, conn)
    before = await membership(conn, site_id, user_id)
    if before is None:
        await db.insert(_t.memberships, {"user_id": user_id, "role_id": role_id, "created_at": now_utc()})
        return None
    await db.execute(db.update(_t.memberships).where(_t.memberships.c.user_id == user_id).values(role_id=role_id))
    return str(before["role_id"])


async def remove_membership(conn: Any, site_id: str, user_id: str) -> int:
    """End ``user_id``'s membership of the site, with its team memberships and the policies
    attached to the user there (a returning user starts from nothing). The caller's unit of
    work must call ``changed(uow)``."""
    db = SiteDB(site_id, conn)
    await db.execute(db.delete(_t.team_members).where(_t.team_members.c.user_id == user_id))
    await db.execute(db.delete(_t.attachments).where(_t.attachments.c.user_id == user_id))
    return (await db.execute(db.delete(_t.memberships).where(_t.memberships.c.user_id == user_id))).rowcount


async def forget_user(conn: Any, user_id: str) -> int:
    """Remove every row of access that names ``user_id`` (memberships, team memberships, policy
    attachments), in every site: accounts calls it in the transaction that deletes the identity
    (docs/decisions/accounts-over-access.md). Returns how many memberships went. Deliberately
    across sites, like ``member_elsewhere``; the caller's unit of work calls ``changed(uow)``."""
    for table in (_t.team_members, _t.attachments):
        await conn.execute(delete(table).where(table.c.user_id == user_id))
    return (await conn.execute(delete(_t.memberships).where(_t.memberships.c.user_id == user_id))).rowcount


async def member_elsewhere(conn: Any, site_id: str, user_id: str) -> bool:
    """Whether ``user_id`` is also a member of a site other than ``site_id``.

    Deliberately across sites (not through SiteDB): the one fact returned is whether another
    site also holds this identity; nothing of that site is read or returned.
    """
    stmt = select(func.count()).select_from(_t.memberships).where(
        _t.memberships.c.user_id == user_id, _t.memberships.c.site_id != site_id)
    return bool((await conn.execute(stmt)).scalar())


async def seed_site_roles(conn: Any, site_id: str) -> None:
    """Create the built-in roles of a new site."""
    db = SiteDB(site_id, conn)
    now = now_utc()
    await db.insert(_t.roles, [
        {"id": uuid7(), "name": "Administrator", "parent_id": None, "admin_access": True, "system_key": "admin",
         "created_at": now},
        {"id": uuid7(), "name": "Public", "parent_id": None, "admin_access": False, "system_key": "public",
         "created_at": now},
        {"id": uuid7(), "name": "Subscriber", "parent_id": None, "admin_access": False, "system_key": "subscriber",
         "created_at": now},
    ])


async def copy_public_reads(uow: Any, from_site: str, collections: list[str], name: str) -> int:
    """Give ``uow``'s site's public role the read rules that ``from_site``'s public role holds
    (through the policies attached to it) for ``collections``: one new policy ``name`` holding
    copies of them (fields and conditions as they are). Returns how many rules were copied."""
    source = SiteDB(from_site, uow.conn)
    public = await role_by_system_key(uow.conn, from_site, "public")
    target = await role_by_system_key(uow.conn, uow.site_id, "public")
    if public is None or target is None or not collections:
        return 0
    attached = [r["policy_id"] for r in await source.all(source.select(_t.attachments).where(
        _t.attachments.c.role_id == public["id"]))]
    rules = await source.all(source.select(_t.permissions).where(
        _t.permissions.c.policy_id.in_(attached), _t.permissions.c.action == "read",
        _t.permissions.c.collection.in_(collections))) if attached else []
    if not rules:
        return 0
    now = now_utc()
    policy_id = uuid7()
    await uow.db.insert(_t.policies, {"id": policy_id, "name": name[:200], "admin_access": False,
                                      "system_key": None, "created_at": now})
    await uow.db.insert(_t.permissions, [{"id": uuid7(), "policy_id": policy_id, "collection": r["collection"],
                                          "action": "read", "fields": r["fields"], "conditions": r["conditions"],
                                          "created_at": now} for r in rules])
    await uow.db.insert(_t.attachments, {"id": uuid7(), "policy_id": policy_id, "role_id": target["id"],
                                         "user_id": None, "team_id": None, "created_at": now})
    changed(uow)
    return len(rules)


def changed(uow: Any) -> None:
    """Queue ``access.changed`` for the unit of work's site: every worker drops cached decisions."""
    uow.action(CHANGED_EVENT, {"siteId": uow.site_id})



async def role_names(kernel: Any, principal: Any, site_id: str) -> set[str]:
    """The names of the roles (own, inherited, by team) and policies ``principal`` holds in
    ``site_id``: the agent API reads them as the token's capability set (``review:posts``,
    ``agents:freeze``). Empty for an anonymous principal."""
    if not principal.is_authenticated:
        return set()
    snap = await kernel.access.snapshot(principal, site_id)
    role_ids = {*snap.role_ids, *([snap.role_id] if snap.role_id else [])}
    if not role_ids and not snap.policy_ids:
        return set()
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        names = {r["name"] for r in await db.all(db.select(_t.roles, _t.roles.c.name).where(_t.roles.c.id.in_(role_ids)))}
        names |= {r["name"] for r in await db.all(db.select(_t.policies, _t.policies.c.name).where(
            _t.policies.c.id.in_(list(snap.policy_ids))))}
    return names


async def sites_of_user(conn: Any, user_id: str) -> list[dict[str, Any]]:
    """Every site ``user_id`` is a member of, with the role there: ``[{ id, name, roleId,
    roleName }]`` by site id. Instance-wide on purpose (the user's own memberships, for
    ``GET /me/sites``); it names the sites and the user's role in each, nothing of their content."""
    query = (select(_sites.c.id, _sites.c.name, _t.roles.c.id.label("role_id"), _t.roles.c.name.label("role_name"))
             .select_from(_t.memberships.join(_sites, _sites.c.id == _t.memberships.c.site_id)
                          .join(_t.roles, (_t.roles.c.id == _t.memberships.c.role_id) & (_t.roles.c.site_id == _t.memberships.c.site_id)))
             .where(_t.memberships.c.user_id == user_id).order_by(_sites.c.id))
    rows = (await conn.execute(query)).all()
    return [{"id": r.id, "name": r.name, "roleId": r.role_id, "roleName": r.role_name} for r in rows]


# -- notifications: who a notification meant for people reaches
async def members_named(conn: Any, site_id: str, ids: list[str]) -> list[str]:
    """The site's members named in ``ids`` by user id or by the id of the role they hold (as the
    ``ai.approvers`` setting names them), sorted; a name that is neither is ignored."""
    if not ids:
        return []
    db = SiteDB(site_id, conn)
    rows = await db.all(db.select(_t.memberships, _t.memberships.c.user_id).where(
        or_(_t.memberships.c.user_id.in_(ids), _t.memberships.c.role_id.in_(ids))))
    return sorted({r["user_id"] for r in rows})


async def admin_members(conn: Any, site_id: str) -> list[str]:
    """The users holding admin access in the site, sorted: members of a role whose chain has the
    flag or an admin policy attached, and users given an admin policy directly or by team (the
    loader's rules, docs/access.md). Instance admins who are not members are not listed."""
    db = SiteDB(site_id, conn)
    by_id = await all_roles(db)
    admin_policy = [r["id"] for r in await db.all(db.select(_t.policies, _t.policies.c.id)
                                                  .where(_t.policies.c.admin_access.is_(True)))]
    targets = await db.all(db.select(_t.attachments).where(_t.attachments.c.policy_id.in_(admin_policy))) \
        if admin_policy else []
    admin_roles = {r["role_id"] for r in targets if r["role_id"]}
    admin_roles = {rid for rid in by_id if any(by_id[c]["admin_access"] or c in admin_roles
                                               for c in role_chain(rid, by_id))}
    users = {r["user_id"] for r in targets if r["user_id"]}
    teams = [r["team_id"] for r in targets if r["team_id"]]
    if teams:
        users |= {r["user_id"] for r in await db.all(db.select(_t.team_members, _t.team_members.c.user_id)
                                                      .where(_t.team_members.c.team_id.in_(teams)))}
    if admin_roles:
        users |= {r["user_id"] for r in await db.all(db.select(_t.memberships, _t.memberships.c.user_id)
                                                      .where(_t.memberships.c.role_id.in_(admin_roles)))}
    return sorted(users)
